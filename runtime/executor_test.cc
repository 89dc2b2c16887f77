#include "runtime/executor.h"

#include <cstring>
#include <vector>

#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt::runtime {
namespace {

Graph ParseGraph(const std::string& text) {
  v1::Graph proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto));
  absl::StatusOr<Graph> g = GraphFromProto(proto);
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

KernelRegistry& Registry() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    EXPECT_TRUE(RegisterCpuKernels(*r).ok());
    return r;
  }();
  return *registry;
}

TEST(ExecutorTest, RunsIdentityChainAndReleasesNothingItReturns) {
  Graph g = ParseGraph(R"pb(
    nodes { op_type: "Identity" inputs: "x" outputs: "a" }
    nodes { op_type: "Identity" inputs: "a" outputs: "y" }
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
    outputs { name: "y" }
  )pb");
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(std::move(g), Registry(), {});
  ASSERT_TRUE(ex.ok()) << ex.status();
  Tensor x = Tensor::FromVector<float>(v1::DT_FLOAT32, {1.5f, -2}, {2});
  absl::StatusOr<RunResult> r = (*ex)->Run({{"x", x}}, {.profile = true});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outputs.size(), 1u);
  EXPECT_EQ(r->outputs[0].data<float>()[1], -2);
  EXPECT_EQ(r->timings.size(), 2u);
}

TEST(ExecutorTest, UnknownOpIsUnimplementedNamingNodeAndOp) {
  Graph g = ParseGraph(R"pb(
    nodes { name: "n1" op_type: "NoSuchOp" inputs: "x" outputs: "y" }
    inputs { name: "x" }
    outputs { name: "y" }
  )pb");
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(std::move(g), Registry(), {});
  ASSERT_FALSE(ex.ok());
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(ex.status().message().find("n1"), absl::string_view::npos);
  EXPECT_NE(ex.status().message().find("NoSuchOp"), absl::string_view::npos);
}

TEST(ExecutorTest, WrongInputTypeAndMissingInputAreInvalid) {
  Graph g = ParseGraph(R"pb(
    nodes { op_type: "Identity" inputs: "x" outputs: "y" }
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
    outputs { name: "y" }
  )pb");
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(std::move(g), Registry(), {});
  ASSERT_TRUE(ex.ok());
  Tensor wrong = Tensor::FromVector<int32_t>(v1::DT_INT32, {1, 2}, {2});
  absl::StatusOr<RunResult> r = (*ex)->Run({{"x", wrong}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'x'"), absl::string_view::npos);
  Tensor bad_shape = Tensor::FromVector<float>(v1::DT_FLOAT32, {1, 2, 3}, {3});
  EXPECT_FALSE((*ex)->Run({{"x", bad_shape}}).ok());
  EXPECT_FALSE((*ex)->Run({}).ok());
  EXPECT_FALSE((*ex)->Run({{"nope", bad_shape}}).ok());
}

TEST(ExecutorTest, MoreOutputsThanTheKernelProducesAreInvalid) {
  // A plan from the wire, checked by no op descriptor on the worker: Relu has one output.
  Graph g = ParseGraph(R"pb(
    nodes { name: "r" op_type: "Relu" inputs: "x" outputs: "y" outputs: "extra" }
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
    outputs { name: "y" }
    outputs { name: "extra" }
  )pb");
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(std::move(g), Registry(), {});
  ASSERT_TRUE(ex.ok()) << ex.status();
  Tensor x = Tensor::FromVector<float>(v1::DT_FLOAT32, {1.5f, -2}, {2});
  absl::StatusOr<RunResult> r = (*ex)->Run({{"x", x}});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_NE(r.status().message().find("node 'r' (Relu): output 1 is not produced"),
            absl::string_view::npos)
      << r.status();
}

TEST(ExecutorTest, InitializerFeedsAndCanBeOverridden) {
  Graph g = ParseGraph(R"pb(
    nodes { op_type: "Identity" inputs: "w" outputs: "y" }
    inputs { name: "w" }
    initializers { name: "w" dtype: DT_INT64 dims: 1 raw_data: "\x05\0\0\0\0\0\0\0" }
    outputs { name: "y" }
  )pb");
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(std::move(g), Registry(), {});
  ASSERT_TRUE(ex.ok()) << ex.status();
  EXPECT_TRUE((*ex)->required_inputs().empty());
  absl::StatusOr<RunResult> r = (*ex)->Run({});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].data<int64_t>()[0], 5);
  r = (*ex)->Run({{"w", Tensor::FromVector<int64_t>(v1::DT_INT64, {9}, {1})}});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->outputs[0].data<int64_t>()[0], 9);
}

// A Gemm whose transposed weight is an Identity copy of an initializer (torch's exports alias
// shared weights this way) computes the same bits as one reading the initializer itself, as
// eliminate_identity leaves it: both run on the weights prepacked once. At 2 to 15 rows
// oneDNN's prepacked product and sgemm sum in different orders.
TEST(ExecutorTest, IdentityOfAWeightRunsLikeTheWeight) {
  constexpr int64_t kK = 64, kN = 64;
  std::vector<float> w(kK * kN);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 997) / 997 - 0.5f;
  auto build = [&](bool through_identity) {
    v1::Graph proto;
    Tensor::FromVector<float>(v1::DT_FLOAT32, w, {kN, kK}).ToProto(proto.add_initializers());
    proto.mutable_initializers(0)->set_name("w");
    if (through_identity) {
      v1::Node* id = proto.add_nodes();
      id->set_op_type("Identity");
      id->add_inputs("w");
      id->add_outputs("w_alias");
    }
    v1::Node* gemm = proto.add_nodes();
    gemm->set_op_type("Gemm");
    gemm->add_inputs("x");
    gemm->add_inputs(through_identity ? "w_alias" : "w");
    gemm->add_outputs("y");
    v1::Attribute* trans_b = gemm->add_attributes();
    trans_b->set_name("transB");
    trans_b->set_i(1);
    proto.add_inputs()->set_name("x");
    proto.add_outputs()->set_name("y");
    absl::StatusOr<Graph> g = GraphFromProto(proto);
    EXPECT_TRUE(g.ok()) << g.status();
    absl::StatusOr<std::unique_ptr<Executor>> ex =
        Executor::Create(*std::move(g), Registry(), {});
    EXPECT_TRUE(ex.ok()) << ex.status();
    return *std::move(ex);
  };
  std::unique_ptr<Executor> direct = build(false), aliased = build(true);
  for (int64_t m : {1, 2, 3, 7, 15, 16, 33}) {
    std::vector<float> x(m * kK);
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>((i * 104729) % 991) / 991 - 0.5f;
    }
    const Tensor input = Tensor::FromVector<float>(v1::DT_FLOAT32, x, {m, kK});
    absl::StatusOr<RunResult> a = direct->Run({{"x", input}});
    absl::StatusOr<RunResult> b = aliased->Run({{"x", input}});
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(std::memcmp(a->outputs[0].raw_data(), b->outputs[0].raw_data(),
                          m * kN * sizeof(float)),
              0)
        << m << " rows";
  }
}

}  // namespace
}  // namespace graphopt::runtime

namespace graphopt::runtime {
namespace {

// Sequence values travel through the executor like tensors; the declared kind of an input is
// checked against what is fed.
TEST(ExecutorTest, SequenceInputsAreCheckedAndPassedOn) {
  Graph g = ParseGraph(R"pb(
    nodes { op_type: "SequenceLength" inputs: "s" outputs: "n" }
    nodes { op_type: "Identity" inputs: "s" outputs: "same" }
    inputs { name: "s" type { dtype: DT_FLOAT32 kind: VALUE_SEQUENCE } }
    outputs { name: "n" }
    outputs { name: "same" }
  )pb");
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(std::move(g), Registry(), {});
  ASSERT_TRUE(ex.ok()) << ex.status();
  Tensor item = Tensor::FromVector<float>(v1::DT_FLOAT32, {1}, {1});
  Tensor seq = Tensor::Sequence(v1::DT_FLOAT32, {item, item});
  absl::StatusOr<RunResult> r = (*ex)->Run({{"s", seq}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outputs[0].data<int64_t>()[0], 2);
  EXPECT_EQ(r->outputs[1].kind(), v1::VALUE_SEQUENCE);
  EXPECT_EQ(r->outputs[1].items().size(), 2u);

  absl::StatusOr<RunResult> tensor = (*ex)->Run({{"s", item}});
  ASSERT_FALSE(tensor.ok());
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tensor.status().message().find("sequence(float32"), absl::string_view::npos)
      << tensor.status();
  absl::StatusOr<RunResult> ints =
      (*ex)->Run({{"s", Tensor::Sequence(v1::DT_INT64, {})}});
  ASSERT_FALSE(ints.ok());
}

}  // namespace
}  // namespace graphopt::runtime
