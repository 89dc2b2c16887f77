#include "passes/pipeline.h"

#include <cstdio>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "passes/effects.h"
#include "passes/pass_test_util.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::TypeOf;
using ::testing::HasSubstr;

constexpr char kSmall[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 3 } } } }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "a" }
  nodes { name: "r1" op_type: "Relu" inputs: "a" outputs: "b" }
  nodes { name: "r2" op_type: "Relu" inputs: "a" outputs: "c" }
  nodes { name: "add" op_type: "Add" inputs: "b" inputs: "c" outputs: "y" }
  nodes { name: "dead" op_type: "Exp" inputs: "b" outputs: "unused" }
  outputs { name: "y" }
)pb";

TEST(PipelineTest, LevelOnePipelineOptimizesAndAnnotates) {
  PassTestEnv env;
  absl::StatusOr<Graph> g = env.Parse(kSmall);
  ASSERT_TRUE(g.ok());
  auto specs = PipelineForLevel(env.passes(), 1);
  ASSERT_TRUE(specs.ok());
  auto result = RunPipeline(*g, *specs, env.passes(), env.ops(), {});
  ASSERT_TRUE(result.ok()) << result.status();
  v1::Graph out = GraphToProto(*g);
  // Identity gone, the two Relus merged, the dead Exp removed.
  ASSERT_EQ(out.nodes_size(), 2);
  EXPECT_EQ(out.nodes(0).op_type(), "Relu");
  EXPECT_EQ(out.nodes(1).op_type(), "Add");
  EXPECT_EQ(TypeOf(out, "y"), "float32[batch,3]");
  std::vector<std::string> names;
  for (const PassRun& run : result->runs) names.push_back(run.name);
  EXPECT_THAT(names, ::testing::ElementsAre("inline_functions", "infer_type", "infer_shape",
                                            "gradient", "eliminate_identity",
                                            "common_subexpression_elimination",
                                            "dead_code_elimination"));
  for (const PassRun& run : result->runs) EXPECT_EQ(run.added_for, "");
  EXPECT_FALSE(result->runs.front().changed);  // No op with a body here.
  EXPECT_EQ(result->runs.back().nodes_after, 2);
}

TEST(PipelineTest, LevelOneInlinesBodiesBeforeInference) {
  PassTestEnv env;
  // my.ops::Swish(x) = x * Sigmoid(x), with a shape rule too; inference runs on the primitives.
  OpDef swish = testing::MakeTestOp("Swish", {"x"}, {"y"});
  swish.descriptor.set_domain("my.ops");
  v1::Graph& body = *swish.descriptor.mutable_body();
  body.add_inputs()->set_name("x");
  v1::Node* sig = body.add_nodes();
  sig->set_op_type("Sigmoid");
  sig->add_inputs("x");
  sig->add_outputs("s");
  v1::Node* mul = body.add_nodes();
  mul->set_op_type("Mul");
  mul->add_inputs("x");
  mul->add_inputs("s");
  mul->add_outputs("y");
  body.add_outputs()->set_name("y");
  ASSERT_TRUE(env.AddOp(std::move(swish)).ok());
  absl::StatusOr<Graph> g = env.Parse(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } } } }
    nodes { name: "sw" op_type: "Swish" domain: "my.ops" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb");
  ASSERT_TRUE(g.ok());
  auto result = RunPipeline(*g, *PipelineForLevel(env.passes(), 1), env.passes(), env.ops(), {});
  ASSERT_TRUE(result.ok()) << result.status();
  v1::Graph out = GraphToProto(*g);
  EXPECT_THAT(testing::OpTypes(out), ::testing::ElementsAre("Sigmoid", "Mul"));
  EXPECT_EQ(TypeOf(out, "sw/s"), "float32[batch]");
  EXPECT_EQ(TypeOf(out, "y"), "float32[batch]");
  EXPECT_TRUE(result->runs.front().changed);
}

TEST(PipelineTest, LevelZeroRunsNothing) {
  PassTestEnv env;
  auto specs = PipelineForLevel(env.passes(), 0);
  ASSERT_TRUE(specs.ok());
  EXPECT_TRUE(specs->empty());
  EXPECT_EQ(PipelineForLevel(env.passes(), 7).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PipelineTest, LevelTwoFoldsSimplifiesAndCleansUp) {
  PassTestEnv env;
  v1::Graph proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 2 }
                                                         dims { size: 4 } dims { size: 4 } } } }
    nodes { name: "conv" op_type: "Conv" inputs: "x" inputs: "w" outputs: "c" }
    nodes { name: "bn" op_type: "BatchNormalization" inputs: "c" inputs: "one2" inputs: "zero2"
            inputs: "zero2" inputs: "one2" outputs: "b" }
    nodes { op_type: "Mul" inputs: "b" inputs: "one" outputs: "m" }
    nodes { op_type: "Shape" inputs: "m" outputs: "s" }
    nodes { op_type: "Reshape" inputs: "m" inputs: "s" outputs: "y" }
    nodes { op_type: "Neg" inputs: "s" outputs: "ns" }
    outputs { name: "y" } outputs { name: "ns" })pb", &proto));
  auto floats = [](const char* name, std::vector<int64_t> dims, int n, float v) {
    v1::Tensor t;
    t.set_name(name);
    t.set_dtype(v1::DT_FLOAT32);
    for (int64_t d : dims) t.add_dims(d);
    std::vector<float> values(n, v);
    t.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), n * sizeof(float)));
    return t;
  };
  *proto.add_initializers() = floats("w", {2, 2, 1, 1}, 4, 0.5f);
  *proto.add_initializers() = floats("one2", {2}, 2, 1.0f);
  *proto.add_initializers() = floats("zero2", {2}, 2, 0.0f);
  *proto.add_initializers() = floats("one", {}, 1, 1.0f);
  absl::StatusOr<Graph> g = GraphFromProto(proto);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  options.verify_each_pass = true;
  auto result = RunPipeline(*g, *PipelineForLevel(env.passes(), 2),
                            env.passes(), env.ops(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  // Round 1 rewrites; round 2, on fresh types and shapes, changes nothing and ends the group.
  std::vector<std::string> names;
  for (const PassRun& run : result->runs) {
    names.push_back(absl::StrCat(run.name, run.round > 0 ? absl::StrCat(" ", run.round) : "",
                                 run.added_for.empty() ? "" : " +"));
  }
  const std::vector<std::string> group = {"eliminate_identity", "fold_batchnorm", "simplify",
                                          "fold_shapes", "constant_fold", "fuse_matmul_add",
                                          "common_subexpression_elimination",
                                          "dead_code_elimination"};
  std::vector<std::string> expected = {"inline_functions", "infer_type", "infer_shape",
                                       "gradient"};
  for (const std::string& name : group) expected.push_back(name + " 1");
  // eliminate_identity needs no analyses; fold_batchnorm has its providers run again.
  expected.push_back("eliminate_identity 2");
  expected.push_back("infer_type 2 +");
  expected.push_back("infer_shape 2 +");
  for (size_t i = 1; i < group.size(); ++i) expected.push_back(group[i] + " 2");
  EXPECT_THAT(names, ::testing::ElementsAreArray(expected));
  EXPECT_EQ(result->fixpoint_rounds, 2);
  EXPECT_TRUE(result->fixpoint_reached);
  for (const PassRun& run : result->runs) {
    if (run.round == 2) EXPECT_FALSE(run.changed) << run.name;
  }
  // BatchNormalization folded into the Conv, x * 1 gone, the Reshape to the same shape gone,
  // Shape of the static shape a constant that constant_fold carried through the Neg.
  v1::Graph out = GraphToProto(*std::move(g));
  EXPECT_THAT(testing::OpTypes(out), ::testing::ElementsAre("Conv"));
  EXPECT_EQ(out.nodes(0).outputs(0), "y");
  ASSERT_EQ(out.initializers_size(), 3);  // w, the Conv's new bias, ns
  EXPECT_EQ(out.initializers(2).name(), "ns");
}

// Removes one Identity per run (the first in node order): a pass that needs as many rounds as
// the graph has Identity nodes, plus one that changes nothing.
class RemoveOneIdentityPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    const HiddenAccess hidden(graph, *context.ops);
    for (int i = 0; i < graph.num_node_slots(); ++i) {
      const NodeId id(i);
      const Node& n = graph.node(id);
      if (n.alive && n.op_type == "Identity" &&
          ReplaceNodeByValue(graph, id, n.inputs[0], hidden)) {
        return true;
      }
    }
    return false;
  }
};

// x -> Identity x5 -> Relu -> y.
constexpr char kIdentityChain[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
  nodes { op_type: "Identity" inputs: "x" outputs: "a1" }
  nodes { op_type: "Identity" inputs: "a1" outputs: "a2" }
  nodes { op_type: "Identity" inputs: "a2" outputs: "a3" }
  nodes { op_type: "Identity" inputs: "a3" outputs: "a4" }
  nodes { op_type: "Identity" inputs: "a4" outputs: "a5" }
  nodes { op_type: "Relu" inputs: "a5" outputs: "y" }
  outputs { name: "y" })pb";

struct FixpointRun {
  absl::StatusOr<PipelineResult> result;
  std::vector<std::string> ops;
};

// Runs [remove_one_identity (repeat), dead_code_elimination] over kIdentityChain with at most
// `max_rounds` rounds.
FixpointRun RunIdentityChain(int max_rounds) {
  PassTestEnv env;
  PassRegistry registry = env.passes();
  PassInfo info;
  info.name = "remove_one_identity";
  info.factory = OptionlessFactory<RemoveOneIdentityPass>();
  EXPECT_TRUE(registry.Register(std::move(info)).ok());
  absl::StatusOr<Graph> g = env.Parse(kIdentityChain);
  EXPECT_TRUE(g.ok()) << g.status();
  PipelineOptions options;
  options.max_fixpoint_rounds = max_rounds;
  options.verify_each_pass = true;
  PassSpec repeated{"remove_one_identity", {}};
  repeated.repeat = true;
  FixpointRun run;
  run.result = RunPipeline(*g, {repeated, {"dead_code_elimination", {}}}, registry, env.ops(),
                           options);
  run.ops = testing::OpTypes(GraphToProto(*std::move(g)));
  return run;
}

TEST(PipelineTest, FixpointGroupRepeatsUntilARoundChangesNothing) {
  FixpointRun run = RunIdentityChain(kDefaultMaxFixpointRounds);
  ASSERT_TRUE(run.result.ok()) << run.result.status();
  EXPECT_THAT(run.ops, ::testing::ElementsAre("Relu"));
  // Five rounds removing one Identity each, a sixth that changes nothing.
  EXPECT_EQ(run.result->fixpoint_rounds, 6);
  EXPECT_TRUE(run.result->fixpoint_reached);
  ASSERT_EQ(run.result->runs.size(), 7u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(run.result->runs[i].name, "remove_one_identity");
    EXPECT_EQ(run.result->runs[i].round, i + 1);
    EXPECT_EQ(run.result->runs[i].changed, i < 5);
  }
  EXPECT_EQ(run.result->runs[6].name, "dead_code_elimination");
  EXPECT_EQ(run.result->runs[6].round, 0);
}

TEST(PipelineTest, FixpointGroupStopsAtItsBound) {
  FixpointRun run = RunIdentityChain(3);
  ASSERT_TRUE(run.result.ok()) << run.result.status();
  EXPECT_THAT(run.ops, ::testing::ElementsAre("Identity", "Identity", "Relu"));
  EXPECT_EQ(run.result->fixpoint_rounds, 3);
  EXPECT_FALSE(run.result->fixpoint_reached);
  ASSERT_EQ(run.result->runs.size(), 4u);
  EXPECT_EQ(run.result->runs[2].round, 3);
  EXPECT_THAT(run.result->runs[2].messages,
              ::testing::Contains(HasSubstr("stopped at its bound of 3 rounds")));
  // A bound below 1 runs one round.
  FixpointRun once = RunIdentityChain(0);
  ASSERT_TRUE(once.result.ok()) << once.result.status();
  EXPECT_EQ(once.result->fixpoint_rounds, 1);
  EXPECT_EQ(once.ops.size(), 5u);
}

TEST(PipelineTest, OnlyLevelsFromTwoRepeat) {
  PassTestEnv env;
  const std::vector<PassSpec> o1 = *PipelineForLevel(env.passes(), 1);
  for (const PassSpec& spec : o1) EXPECT_FALSE(spec.repeat);
  const std::vector<PassSpec> o3 = *PipelineForLevel(env.passes(), 3);
  std::vector<std::string> repeated;
  for (const PassSpec& spec : o3) {
    if (spec.repeat) repeated.push_back(spec.name);
  }
  EXPECT_THAT(repeated, ::testing::ElementsAre("eliminate_identity", "fold_batchnorm", "simplify",
                                               "fold_shapes", "constant_fold",
                                               "fuse_matmul_add",
                                               "common_subexpression_elimination",
                                               "dead_code_elimination"));
}

std::vector<std::string> Names(const absl::StatusOr<std::vector<PassSpec>>& specs) {
  std::vector<std::string> names;
  if (specs.ok()) {
    for (const PassSpec& spec : *specs) names.push_back(spec.name);
  }
  return names;
}

// The builtin levels, spelled out: README.md and docs/architecture.md list them.
TEST(PipelineTest, BuiltinLevels) {
  PassTestEnv env;
  const std::vector<std::string> o1 = {
      "inline_functions", "infer_type", "infer_shape", "gradient", "eliminate_identity",
      "common_subexpression_elimination", "dead_code_elimination"};
  const std::vector<std::string> o2 = {
      "inline_functions", "infer_type", "infer_shape", "gradient", "eliminate_identity",
      "fold_batchnorm", "simplify", "fold_shapes", "constant_fold", "fuse_matmul_add",
      "common_subexpression_elimination", "dead_code_elimination"};
  std::vector<std::string> o3 = o2;
  for (const char* name : {"channels_last", "fuse_ops", "schedule", "plan_memory"}) {
    o3.push_back(name);
  }
  EXPECT_THAT(Names(PipelineForLevel(env.passes(), 1)), ::testing::ElementsAreArray(o1));
  EXPECT_THAT(Names(PipelineForLevel(env.passes(), 2)), ::testing::ElementsAreArray(o2));
  EXPECT_THAT(Names(PipelineForLevel(env.passes(), 3)), ::testing::ElementsAreArray(o3));
  EXPECT_EQ(PipelineForLevel(env.passes(), kMaxOptLevel + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_LE(kDefaultOptLevel, kMaxOptLevel);
}

TEST(PipelineTest, LevelsComeFromMinOptLevelInRegistrationOrder) {
  PassRegistry registry;
  for (auto [name, level] : std::vector<std::pair<const char*, int>>{
           {"late", 3}, {"early", 1}, {"never", 0}, {"middle", 2}}) {
    PassInfo info;
    info.name = name;
    info.min_opt_level = level;
    info.factory = [](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
      return absl::UnimplementedError("not run");
    };
    ASSERT_TRUE(registry.Register(std::move(info)).ok());
  }
  EXPECT_THAT(Names(PipelineForLevel(registry, 0)), ::testing::IsEmpty());
  EXPECT_THAT(Names(PipelineForLevel(registry, 1)), ::testing::ElementsAre("early"));
  EXPECT_THAT(Names(PipelineForLevel(registry, 2)),
              ::testing::ElementsAre("early", "middle"));
  EXPECT_THAT(Names(PipelineForLevel(registry, 3)),
              ::testing::ElementsAre("late", "early", "middle"));
}

TEST(PipelineTest, UnknownPassIsNotFoundBeforeAnyWork) {
  PassTestEnv env;
  absl::StatusOr<Graph> g = env.Parse(kSmall);
  ASSERT_TRUE(g.ok());
  auto result = RunPipeline(*g, {{"dead_code_elimination", {}}, {"make_it_fast", {}}},
                            env.passes(), env.ops(), {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.status().message(), HasSubstr("unknown pass 'make_it_fast'"));
  EXPECT_THAT(result.status().message(), HasSubstr("infer_shape"));
  EXPECT_EQ(g->num_live_nodes(), 5);  // Untouched.
}

TEST(PipelineTest, UnknownOptionIsInvalidArgument) {
  PassTestEnv env;
  absl::StatusOr<Graph> g = env.Parse(kSmall);
  ASSERT_TRUE(g.ok());
  auto result =
      RunPipeline(*g, {{"infer_shape", {{"aggressive", "1"}}}}, env.passes(), env.ops(), {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("pass 'infer_shape': unknown option 'aggressive'"));
}

TEST(PipelineTest, InputIsVerifiedFirst) {
  PassTestEnv env;
  absl::StatusOr<Graph> g = env.Parse(R"pb(
    inputs { name: "x" }
    nodes { name: "broken" op_type: "Relu" inputs: "x" inputs: "x" outputs: "y" }
    outputs { name: "y" })pb");
  ASSERT_TRUE(g.ok());
  auto result = RunPipeline(*g, {}, env.passes(), env.ops(), {});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("node 'broken' (Relu): has 2 inputs"));
}

TEST(PipelineTest, DimBindingsSubstituteSymbols) {
  PassTestEnv env;
  absl::StatusOr<Graph> g = env.Parse(kSmall);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  options.dim_bindings["batch"] = 8;
  auto result = RunPipeline(*g, {{"infer_shape", {}}}, env.passes(), env.ops(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(TypeOf(GraphToProto(*g), "y"), "float32[8,3]");

  options.dim_bindings["batch"] = -1;
  absl::StatusOr<Graph> g2 = env.Parse(kSmall);
  auto bad = RunPipeline(*g2, {}, env.passes(), env.ops(), options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'batch' = -1 is negative"));
}

TEST(PipelineTest, ProvidersAreReAddedOnlyWhenInvalidated) {
  PassTestEnv env;
  PipelineResult result;
  auto out = env.Run(kSmall, {"infer_shape", "dead_code_elimination", "infer_shape"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  // infer_type once (for the first infer_shape); DCE preserves types, so no second one.
  std::vector<std::string> names;
  for (const PassRun& r : result.runs) names.push_back(r.name);
  EXPECT_THAT(names, ::testing::ElementsAre("infer_type", "infer_shape", "dead_code_elimination",
                                            "infer_shape"));
}

TEST(PipelineTest, SameInputGivesByteIdenticalOutput) {
  PassTestEnv env;
  auto a = env.Run(kSmall, {"infer_shape", "eliminate_identity", "common_subexpression_elimination",
                            "dead_code_elimination"});
  auto b = env.Run(kSmall, {"infer_shape", "eliminate_identity", "common_subexpression_elimination",
                            "dead_code_elimination"});
  ASSERT_TRUE(a.ok() && b.ok());
  std::string sa, sb;
  ASSERT_TRUE(a->SerializeToString(&sa));
  ASSERT_TRUE(b->SerializeToString(&sb));
  EXPECT_EQ(sa, sb);
}

TEST(PipelineTest, MillionNodeChainOptimizes) {
  PassTestEnv env;
  // Built directly in the IR: text format would dominate the test's time.
  constexpr int kNodes = 1000000;
  Graph g;
  ValueId prev = *g.AddValue("v0");
  g.mutable_value(prev).type.dtype = v1::DT_FLOAT32;
  g.AddGraphInput(prev);
  for (int i = 0; i < kNodes; ++i) {
    ValueId next = *g.AddValue(absl::StrCat("v", i + 1));
    ASSERT_TRUE(g.AddNode("", i % 2 ? "Identity" : "Relu", "", {prev}, {next}).ok());
    prev = next;
  }
  g.AddGraphOutput(prev);
  auto specs = PipelineForLevel(env.passes(), 1);
  PipelineOptions options;
  options.verify_each_pass = true;
  auto result = RunPipeline(g, *specs, env.passes(), env.ops(), options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(g.num_live_nodes(), kNodes / 2);
  EXPECT_EQ(g.value(g.outputs()[0]).name, absl::StrCat("v", kNodes));
}

TEST(PipelineTest, LevelTwoScalesLinearly) {
  PassTestEnv env;
  // 100,000 blocks of Relu -> Transpose -> Transpose -> Mul by one (simplify's work), and a
  // 40,000-node chain of Negs and Adds of constants (constant_fold's; the Adds all read one
  // shared constant): built directly in the IR.
  constexpr int kBlocks = 100000;
  constexpr int kConstantChain = 20000;
  Graph g;
  ValueId prev = *g.AddValue("x");
  g.mutable_value(prev).type = TensorType{v1::DT_FLOAT32, Dims{Dim::Known(2), Dim::Known(3)}};
  g.AddGraphInput(prev);
  const ValueId one = *g.AddValue("one");
  v1::Tensor one_tensor;
  one_tensor.set_dtype(v1::DT_FLOAT32);
  const float one_value = 1.0f;
  one_tensor.set_raw_data(std::string(reinterpret_cast<const char*>(&one_value), 4));
  g.SetInitializer(one, one_tensor);
  g.mutable_value(one).type = TensorType{v1::DT_FLOAT32, Dims{}};
  v1::Attribute perm;
  perm.mutable_ints()->add_values(1);
  perm.mutable_ints()->add_values(0);
  int n = 0;
  auto next = [&]() { return *g.AddValue(absl::StrCat("v", n++)); };
  for (int i = 0; i < kBlocks; ++i) {
    ValueId r = next(), t1 = next(), t2 = next(), m = next();
    ASSERT_TRUE(g.AddNode("", "Relu", "", {prev}, {r}).ok());
    ASSERT_TRUE(g.AddNode("", "Transpose", "", {r}, {t1}, {{"perm", perm}}).ok());
    ASSERT_TRUE(g.AddNode("", "Transpose", "", {t1}, {t2}, {{"perm", perm}}).ok());
    ASSERT_TRUE(g.AddNode("", "Mul", "", {t2, one}, {m}).ok());
    prev = m;
  }
  g.AddGraphOutput(prev);
  ValueId c = *g.AddValue("c");
  g.SetInitializer(c, one_tensor);
  g.mutable_value(c).type = TensorType{v1::DT_FLOAT32, Dims{}};
  for (int i = 0; i < kConstantChain; ++i) {
    // Each Neg also reads `one`, which every one of them shares.
    ValueId v = next(), w = next();
    ASSERT_TRUE(g.AddNode("", "Neg", "", {c}, {v}).ok());
    ASSERT_TRUE(g.AddNode("", "Add", "", {v, one}, {w}).ok());
    c = w;
  }
  g.AddGraphOutput(c);
  auto result = RunPipeline(g, *PipelineForLevel(env.passes(), 2), env.passes(), env.ops(), {});
  ASSERT_TRUE(result.ok()) << result.status();
  // Only the Relus are left; the constant chain is one initializer.
  EXPECT_EQ(g.num_live_nodes(), kBlocks);
  for (const PassRun& run : result->runs) {
    std::printf("%-34s %8.1f ms  %s\n", run.name.c_str(), run.wall_time_us / 1000.0,
                run.messages.empty() ? "" : run.messages[0].c_str());
  }
}

// A pass for the guard tests: cancels `token` when it runs, or throws.
class TestPass : public Pass {
 public:
  TestPass(StopToken* token, std::string mode) : token_(token), mode_(std::move(mode)) {}
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    if (mode_ == "cancel") token_->Cancel("the client cancelled the call");
    if (mode_ == "bad_alloc") throw std::bad_alloc();
    if (mode_ == "range") throw std::out_of_range("map::at");
    return false;
  }

 private:
  StopToken* token_;
  std::string mode_;
};

PassInfo TestPassInfo(const std::string& name, StopToken* token, const std::string& mode) {
  PassInfo info;
  info.name = name;
  info.options = {{"budget", "a budget for the ceiling tests"}};
  info.budget_options["budget"] = {1000, nullptr};
  info.factory = [token, mode](const PassOptions&) -> absl::StatusOr<std::unique_ptr<Pass>> {
    if (mode == "factory") throw std::length_error("vector::reserve");
    return std::unique_ptr<Pass>(std::make_unique<TestPass>(token, mode));
  };
  return info;
}

TEST(PipelineGuardTest, StopTokenIsCheckedBeforeEveryPass) {
  PassTestEnv env;
  PassRegistry passes;
  StopToken token;
  ASSERT_TRUE(passes.Register(TestPassInfo("canceller", &token, "cancel")).ok());
  ASSERT_TRUE(passes.Register(TestPassInfo("next", &token, "")).ok());
  absl::StatusOr<Graph> g = env.Parse(kSmall);
  ASSERT_TRUE(g.ok());
  PipelineOptions options;
  options.stop = &token;
  absl::StatusOr<PipelineResult> r =
      RunPipeline(*g, {{"canceller", {}}, {"next", {}}}, passes, env.ops(), options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(r.status().message(), HasSubstr("the client cancelled the call"));
  EXPECT_THAT(r.status().message(), HasSubstr("pass 'next'"));
}

TEST(PipelineGuardTest, DeadlineInThePastStopsBeforeAnyPass) {
  PassTestEnv env;
  absl::StatusOr<Graph> g = env.Parse(kSmall);
  ASSERT_TRUE(g.ok());
  StopToken token(absl::InfinitePast());
  PipelineOptions options;
  options.stop = &token;
  absl::StatusOr<PipelineResult> r =
      RunPipeline(*g, *PipelineForLevel(env.passes(), 2), env.passes(), env.ops(), options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(PipelineGuardTest, PassExceptionsBecomeStatusesNamingThePass) {
  PassTestEnv env;
  PassRegistry passes;
  ASSERT_TRUE(passes.Register(TestPassInfo("oom", nullptr, "bad_alloc")).ok());
  ASSERT_TRUE(passes.Register(TestPassInfo("range", nullptr, "range")).ok());
  ASSERT_TRUE(passes.Register(TestPassInfo("factory", nullptr, "factory")).ok());
  struct Case {
    const char* pass;
    absl::StatusCode code;
    const char* text;
  };
  for (const Case& c : {Case{"oom", absl::StatusCode::kResourceExhausted, "out of memory"},
                        Case{"range", absl::StatusCode::kInternal, "map::at"},
                        Case{"factory", absl::StatusCode::kResourceExhausted, "vector::reserve"}}) {
    absl::StatusOr<Graph> g = env.Parse(kSmall);
    ASSERT_TRUE(g.ok());
    absl::StatusOr<PipelineResult> r = RunPipeline(*g, {{c.pass, {}}}, passes, env.ops(), {});
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(absl::StrCat("pass '", c.pass, "'")));
    EXPECT_THAT(r.status().message(), HasSubstr(c.text));
  }
}

TEST(PipelineGuardTest, BudgetOptionsAreHeldUnderTheCeilings) {
  PassTestEnv env;
  PassRegistry passes;
  ASSERT_TRUE(passes.Register(TestPassInfo("t", nullptr, "")).ok());
  auto run = [&](PassOptions pass_options, OptionCeilings ceilings) {
    absl::StatusOr<Graph> g = env.Parse(kSmall);
    EXPECT_TRUE(g.ok());
    PipelineOptions options;
    options.option_ceilings = std::move(ceilings);
    return RunPipeline(*g, {{"t", std::move(pass_options)}}, passes, env.ops(), options)
        .status();
  };
  absl::Status s = run({{"budget", "5000"}}, {{"t.budget", 4096}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("pass 't': option 'budget' = 5000 is over the server's ceiling of 4096"));
  EXPECT_TRUE(run({{"budget", "4096"}}, {{"t.budget", 4096}}).ok());
  EXPECT_TRUE(run({{"budget", "5000"}}, {}).ok());  // no ceiling
  EXPECT_TRUE(run({}, {{"t.budget", 10}}).ok());     // the default is lowered to the ceiling
}

TEST(PipelineGuardTest, BuiltinCeilingsHoldRequestsAndLowerDefaults) {
  PassTestEnv env;
  absl::StatusOr<Graph> g = env.Parse(kSmall);
  ASSERT_TRUE(g.ok());
  // The issue's request: a fold budget of 1 GiB.
  absl::StatusOr<PipelineResult> r = RunPipeline(
      *g, {{"constant_fold", {{"max_folded_bytes", "1073741824"}}}}, env.passes(), env.ops(), {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("pass 'constant_fold': option 'max_folded_bytes' = 1073741824 is over "
                        "the server's ceiling of 67108864"));
  r = RunPipeline(*g, {{"plan_memory", {{"dim_bounds", "batch:8,seq:100000000"}}}},
                  env.passes(), env.ops(), {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("option 'dim_bounds'"));
  r = RunPipeline(*g, {{"plan_memory", {{"dim_bounds", "batch:8,seq"}}}}, env.passes(),
                  env.ops(), {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  // A server ceiling under the pass's default: the default is lowered to it.
  absl::StatusOr<Graph> big = env.Parse(R"pb(
    nodes { name: "big" op_type: "ConstantOfShape" inputs: "shape" outputs: "c" }
    outputs { name: "c" }
    initializers { name: "shape" dtype: DT_INT64 dims: 1 raw_data: "\x00\x04\0\0\0\0\0\0" })pb");
  ASSERT_TRUE(big.ok()) << big.status();
  PipelineOptions options;
  options.option_ceilings["constant_fold.max_folded_bytes"] = 1000;
  r = RunPipeline(*big, {{"constant_fold", {}}}, env.passes(), env.ops(), options);
  ASSERT_TRUE(r.ok()) << r.status();
  std::string messages;
  for (const PassRun& run : r->runs) {
    for (const std::string& m : run.messages) messages += m;
  }
  EXPECT_THAT(messages, HasSubstr("node 'big' (ConstantOfShape) would compute 4096 bytes "
                                  "(max_folded_bytes 1000)"));
}

TEST(PipelineGuardTest, EveryBuiltinBudgetOptionHasADefaultCeiling) {
  PassTestEnv env;
  const OptionCeilings ceilings = DefaultOptionCeilings();
  int budgets = 0;
  for (const PassInfo* info : env.passes().List()) {
    for (const auto& [key, budget] : info->budget_options) {
      ++budgets;
      EXPECT_TRUE(info->options.count(key)) << info->name << "." << key;
      auto it = ceilings.find(absl::StrCat(info->name, ".", key));
      ASSERT_NE(it, ceilings.end()) << info->name << "." << key << " has no default ceiling";
    }
  }
  EXPECT_EQ(budgets, static_cast<int>(ceilings.size()));
}

}  // namespace
}  // namespace graphopt
