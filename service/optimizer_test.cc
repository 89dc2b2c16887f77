#include "service/optimizer.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "ops/builtin_ops.h"
#include "gtest/gtest.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "onnx/onnx_pb.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

class OptimizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
  }

  v1::OptimizeRequest Request(const std::string& graph_text) {
    v1::OptimizeRequest r;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(graph_text, r.mutable_graph()));
    return r;
  }

  OpRegistry ops_;
  PassRegistry passes_;
};

constexpr char kGraph[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 3 } } } }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "a" }
  nodes { name: "r" op_type: "Relu" inputs: "a" outputs: "y" }
  outputs { name: "y" }
)pb";

TEST_F(OptimizerTest, DefaultsToLevelTwo) {
  Optimizer optimizer(&ops_, &passes_);
  auto response = optimizer.Optimize(Request(kGraph));
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->graph().nodes_size(), 1);
  absl::StatusOr<std::vector<PassSpec>> level = PipelineForLevel(passes_, kDefaultOptLevel);
  ASSERT_TRUE(level.ok());
  ASSERT_EQ(kDefaultOptLevel, 2);
  // The fixpoint group repeats its passes: its later rounds are reported after the first.
  std::vector<std::string> first_round;
  for (const v1::PassReport& r : response->reports()) {
    if (r.round() <= 1) first_round.push_back(r.name());
  }
  ASSERT_EQ(first_round.size(), level->size());
  for (size_t i = 0; i < first_round.size(); ++i) EXPECT_EQ(first_round[i], (*level)[i].name);
  EXPECT_EQ(response->reports(0).name(), "inline_functions");
}

TEST_F(OptimizerTest, ExplicitPassesWithOptionsAndLevelConflict) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request(kGraph);
  r.mutable_pipeline()->add_passes()->set_name("eliminate_identity");
  r.mutable_pipeline()->set_opt_level(1);
  auto response = optimizer.Optimize(r);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(response.status().message(), HasSubstr("either passes or opt_level"));

  r.mutable_pipeline()->clear_opt_level();
  response = optimizer.Optimize(r);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->reports_size(), 1);
  EXPECT_TRUE(response->reports(0).changed());
}

TEST_F(OptimizerTest, LevelZeroOnlyVerifies) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request(kGraph);
  r.mutable_pipeline()->set_opt_level(0);
  auto response = optimizer.Optimize(r);
  ASSERT_TRUE(response.ok());
  EXPECT_EQ(response->reports_size(), 0);
  EXPECT_EQ(response->graph().nodes_size(), 2);
}

TEST_F(OptimizerTest, StripValueInfo) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Relu" inputs: "a" outputs: "y" }
    outputs { name: "y" })pb");
  auto with = optimizer.Optimize(r);
  ASSERT_TRUE(with.ok());
  EXPECT_EQ(with->graph().value_info_size(), 1);
  r.mutable_options()->set_strip_value_info(true);
  auto without = optimizer.Optimize(r);
  ASSERT_TRUE(without.ok());
  EXPECT_EQ(without->graph().value_info_size(), 0);
}

// -O3 fuses the elementwise chain into a graphopt FusedGroup: portable ONNX by default (a
// model-local function), graphopt's own node with native_ops.
TEST_F(OptimizerTest, OnnxResultIsPortableUnlessNativeOps) {
  Optimizer optimizer(&ops_, &passes_);
  v1::OptimizeRequest r = Request(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } dims { size: 8 } } } }
    nodes { op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { op_type: "Sigmoid" inputs: "a" outputs: "b" }
    nodes { op_type: "Tanh" inputs: "b" outputs: "y" }
    outputs { name: "y" })pb");
  r.mutable_pipeline()->set_opt_level(3);
  r.set_result_format(v1::MODEL_FORMAT_ONNX);
  auto count = [](const onnx::ModelProto& m) {
    int graphopt_nodes = 0;
    for (const onnx::NodeProto& n : m.graph().node()) graphopt_nodes += n.domain() == "graphopt";
    return graphopt_nodes;
  };
  for (bool strip : {false, true}) {
    r.mutable_options()->set_strip_value_info(strip);
    r.mutable_options()->set_native_ops(false);
    auto portable = optimizer.Optimize(r);
    ASSERT_TRUE(portable.ok()) << portable.status();
    onnx::ModelProto p;
    ASSERT_TRUE(p.ParseFromString(portable->onnx_model()));
    EXPECT_EQ(count(p), 1);
    ASSERT_EQ(p.functions_size(), 1);
    EXPECT_EQ(p.graph().node(0).op_type(), p.functions(0).name());
    if (strip) EXPECT_EQ(p.graph().value_info_size(), 0);

    r.mutable_options()->set_native_ops(true);
    auto native = optimizer.Optimize(r);
    ASSERT_TRUE(native.ok()) << native.status();
    onnx::ModelProto n;
    ASSERT_TRUE(n.ParseFromString(native->onnx_model()));
    EXPECT_EQ(count(n), 1);
    EXPECT_EQ(n.functions_size(), 0);
    EXPECT_EQ(n.graph().node(0).op_type(), "FusedGroup");
  }
}

TEST_F(OptimizerTest, ListsPassesAndOps) {
  Optimizer optimizer(&ops_, &passes_);
  v1::ListPassesResponse passes = optimizer.ListPasses();
  ASSERT_EQ(passes.passes_size(), static_cast<int>(passes_.List().size()));
  bool found_shape = false;
  for (const v1::PassInfo& p : passes.passes()) {
    if (p.name() == "constant_fold" || p.name() == "simplify" || p.name() == "fold_batchnorm") {
      EXPECT_EQ(p.min_opt_level(), 2) << p.name();
    }
    if (p.name() == "infer_shape") {
      found_shape = true;
      ASSERT_EQ(p.requires_size(), 1);
      EXPECT_EQ(p.requires(0), "types");
      EXPECT_EQ(p.provides(0), "shapes");
    }
  }
  EXPECT_TRUE(found_shape);
  v1::ListOpsRequest all;
  EXPECT_GE(optimizer.ListOps(all).ops_size(), 48);
  v1::ListOpsRequest conv;
  conv.set_name("Conv");
  v1::ListOpsResponse one = optimizer.ListOps(conv);
  ASSERT_EQ(one.ops_size(), 1);
  EXPECT_EQ(one.ops(0).fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE);
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

// my.ops::Twist: shapes as Relu's.
constexpr char kTwist[] = R"pb(
  name: "Twist"
  domain: "my.ops"
  version: 1
  inputs { name: "x" type_constraint: "T" }
  outputs { name: "y" type_constraint: "T" }
  type_constraints { name: "T" allowed: DT_FLOAT32 }
  shape_rule { builtin: "Relu" }
)pb";

constexpr char kTwistGraph[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "n" } dims { size: 3 } } } }
  nodes { name: "t" op_type: "Twist" domain: "my.ops" inputs: "x" outputs: "y" }
  outputs { name: "y" }
)pb";

class OptimizerOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&builtins_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    store_ = std::make_unique<OpStore>(&builtins_);
    optimizer_ = std::make_unique<Optimizer>(store_.get(), &passes_);
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kTwist, &twist_));
  }

  v1::OptimizeRequest TwistRequest() {
    v1::OptimizeRequest r;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kTwistGraph, r.mutable_graph()));
    return r;
  }

  OpRegistry builtins_;
  PassRegistry passes_;
  std::unique_ptr<OpStore> store_;
  std::unique_ptr<Optimizer> optimizer_;
  v1::OpDescriptor twist_;
};

TEST_F(OptimizerOpsTest, RegisteredOpsArePerTenant) {
  v1::RegisterOpsRequest reg;
  *reg.add_ops() = twist_;
  auto registered = optimizer_->RegisterOps(reg, "team-a");
  ASSERT_TRUE(registered.ok()) << registered.status();
  EXPECT_EQ(registered->tenant(), "team-a");
  ASSERT_EQ(registered->results_size(), 1);
  EXPECT_EQ(registered->results(0), "registered my.ops::Twist v1");

  auto optimized = optimizer_->Optimize(TwistRequest(), "team-a");
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  ASSERT_EQ(optimized->graph().nodes_size(), 1);
  // The output's shape came from the builtin Relu rule.
  bool found = false;
  for (const v1::ValueInfo& v : optimized->graph().outputs()) {
    if (v.name() != "y") continue;
    found = true;
    ASSERT_EQ(v.type().shape().dims_size(), 2);
    EXPECT_EQ(v.type().shape().dims(0).symbol(), "n");
    EXPECT_EQ(v.type().shape().dims(1).size(), 3);
  }
  EXPECT_TRUE(found);

  auto other = optimizer_->Optimize(TwistRequest(), "team-b");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("unknown op 'my.ops::Twist'"));
  EXPECT_EQ(optimizer_->Optimize(TwistRequest(), "Bad Tenant").status().code(),
            absl::StatusCode::kInvalidArgument);

  v1::ListOpsRequest mine;
  mine.set_registered_only(true);
  v1::ListOpsResponse listed = optimizer_->ListOps(mine, "team-a");
  EXPECT_EQ(listed.tenant(), "team-a");
  ASSERT_EQ(listed.ops_size(), 1);
  EXPECT_EQ(listed.ops(0).name(), "Twist");
  EXPECT_EQ(optimizer_->ListOps(mine, "team-b").ops_size(), 0);
  v1::ListOpsRequest by_domain;
  by_domain.set_domain("my.ops");
  EXPECT_EQ(optimizer_->ListOps(by_domain, "team-a").ops_size(), 1);
  EXPECT_EQ(optimizer_->ListOps(v1::ListOpsRequest(), "team-a").ops_size(),
            static_cast<int>(builtins_.size()) + 1);

  v1::UnregisterOpsRequest unreg;
  unreg.add_ops()->set_domain("my.ops");
  unreg.mutable_ops(0)->set_name("Twist");
  auto removed = optimizer_->UnregisterOps(unreg, "team-a");
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->unregistered(0), "unregistered my.ops::Twist v1");
  EXPECT_EQ(removed->tenant(), "team-a");
  EXPECT_EQ(optimizer_->UnregisterOps(unreg, "team-a").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(OptimizerOpsTest, RequestOpsAreForThatRequestOnly) {
  v1::OptimizeRequest r = TwistRequest();
  *r.add_ops() = twist_;
  auto optimized = optimizer_->Optimize(r);
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  EXPECT_EQ(optimizer_->Optimize(TwistRequest()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(optimizer_->ListOps(v1::ListOpsRequest()).ops_size(),
            static_cast<int>(builtins_.size()));

  r.mutable_ops(0)->mutable_shape_rule()->set_builtin("NoSuchRule");
  auto refused = optimizer_->Optimize(r);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("ops[0]: op my.ops::Twist: shape_rule: there is no builtin shape rule 'NoSuchRule'"));
}

TEST_F(OptimizerOpsTest, RegistryConstructorHasItsOwnStore) {
  Optimizer optimizer(&builtins_, &passes_);
  v1::RegisterOpsRequest reg;
  *reg.add_ops() = twist_;
  ASSERT_TRUE(optimizer.RegisterOps(reg).ok());
  EXPECT_TRUE(optimizer.Optimize(TwistRequest()).ok());
  EXPECT_EQ(optimizer.ListOps(v1::ListOpsRequest()).tenant(), "default");
}

}  // namespace
}  // namespace graphopt
