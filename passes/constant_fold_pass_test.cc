#include "passes/constant_fold_pass.h"

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "graph/test_ops.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::FloatTensorProto;
using ::graphopt::testing::Int64TensorProto;
using ::graphopt::testing::MakeTestOp;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::TestRuntime;
using ::graphopt::testing::WithInitializers;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::AllOf;
using ::testing::IsEmpty;

std::vector<std::string> InitializerNames(const v1::Graph& g) {
  std::vector<std::string> names;
  for (const v1::Tensor& t : g.initializers()) names.push_back(t.name());
  return names;
}

std::string AllMessages(const PipelineResult& result) {
  std::string all;
  for (const PassRun& run : result.runs) {
    for (const std::string& m : run.messages) absl::StrAppend(&all, run.name, ": ", m, "\n");
  }
  return all;
}

TEST(ConstantFoldPassTest, FoldsConstantSubgraphBitIdenticallyToTheRuntime) {
  PassTestEnv env;
  const std::string text = WithInitializers(
      R"pb(
        inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 4 } dims { size: 3 } } } }
        nodes { op_type: "Exp" inputs: "a" outputs: "ea" }
        nodes { op_type: "Add" inputs: "ea" inputs: "b" outputs: "c" }
        nodes { op_type: "Sqrt" inputs: "c" outputs: "s" }
        nodes { op_type: "Transpose" inputs: "w" outputs: "wt" }
        nodes { op_type: "MatMul" inputs: "x" inputs: "wt" outputs: "m" }
        nodes { op_type: "Mul" inputs: "m" inputs: "s" outputs: "y" }
        outputs { name: "y" })pb",
      {FloatTensorProto("a", {2}, SeededFloats(2, 1)),
       FloatTensorProto("b", {2}, {1.5f, 2.25f}),
       FloatTensorProto("w", {2, 3}, SeededFloats(6, 2))});
  PipelineResult result;
  auto folded = testing::OptimizeAndCompare(env, text, {{"constant_fold", {}}},
                                            {{"x", FloatTensor({4, 3}, SeededFloats(12, 3))}},
                                            /*bit_exact=*/true, 0, &result);
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_THAT(OpTypes(*folded), ElementsAre("MatMul", "Mul"));
  EXPECT_THAT(InitializerNames(*folded), ElementsAre("s", "wt"));
  EXPECT_THAT(AllMessages(result), HasSubstr("folded 4 nodes into initializers"));
}

TEST(ConstantFoldPassTest, ConstantNodesBecomeInitializersAndOutputsKeepNames) {
  PassTestEnv env;
  v1::Graph g;
  auto text = WithInitializers(R"pb(
    nodes { op_type: "Constant" outputs: "k" attributes { name: "value" t { dtype: DT_INT64 } } }
    nodes { op_type: "Neg" inputs: "a" outputs: "y" }
    nodes { op_type: "Abs" inputs: "k" outputs: "z" }
    outputs { name: "y" }
    outputs { name: "z" })pb",
                               {FloatTensorProto("a", {2}, {1.0f, -2.0f})});
  // The Constant holds the int64 scalar 5.
  v1::Graph parsed;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &parsed));
  *parsed.mutable_nodes(0)->mutable_attributes(0)->mutable_t() = Int64TensorProto("", {}, {5});
  google::protobuf::TextFormat::PrintToString(parsed, &text);
  PipelineResult result;
  auto out = env.Run(text, {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), IsEmpty());
  EXPECT_THAT(InitializerNames(*out), ElementsAre("y", "z"));
  EXPECT_EQ(out->outputs(0).name(), "y");
  EXPECT_EQ(out->outputs(1).name(), "z");
  EXPECT_THAT(AllMessages(result), HasSubstr("1 Constant nodes became initializers"));
  EXPECT_TRUE(result.runs.back().changed);
  TestRuntime runtime;
  auto values = runtime.Run(*out, {});
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0].ElementAsDouble(1), 2.0);
  EXPECT_EQ((*values)[1].ElementAsInt64(0), 5);
}

TEST(ConstantFoldPassTest, IdentitiesOfConstantsAreForwardedNotCopied) {
  PassTestEnv env;
  // torch exports shared weights as Identity nodes of one initializer.
  const std::string text = WithInitializers(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
    nodes { op_type: "Identity" inputs: "w" outputs: "w2" }
    nodes { op_type: "Mul" inputs: "x" inputs: "w" outputs: "a" }
    nodes { op_type: "Mul" inputs: "a" inputs: "w2" outputs: "y" }
    nodes { op_type: "Identity" inputs: "w" outputs: "alias" }
    outputs { name: "y" } outputs { name: "alias" })pb",
                                            {FloatTensorProto("w", {2}, {3, 4})});
  PipelineResult result;
  auto out = env.Run(text, {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Mul", "Mul"));
  EXPECT_EQ(out->nodes(1).inputs(1), "w");
  // The graph output 'alias' keeps its name: the copy is folded into an initializer of its own.
  EXPECT_THAT(InitializerNames(*out), ElementsAre("w", "alias"));
  EXPECT_THAT(AllMessages(result), HasSubstr("folded 1 nodes into initializers (+8 bytes"));
  EXPECT_THAT(AllMessages(result), HasSubstr("1 Identity nodes of constants forwarded"));
}

// ConstantOfShape of [1024, 512] float32 is 2 MiB of new initializer.
constexpr char kBigConstant[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 1024 } dims { size: 512 } } } }
  nodes { name: "big" op_type: "ConstantOfShape" inputs: "shape" outputs: "c" }
  nodes { op_type: "Add" inputs: "x" inputs: "c" outputs: "y" }
  outputs { name: "y" })pb";

TEST(ConstantFoldPassTest, RefusesGrowthOverTheBudgetAndSaysSo) {
  PassTestEnv env;
  const std::string text =
      WithInitializers(kBigConstant, {Int64TensorProto("shape", {2}, {1024, 512})});
  PipelineResult result;
  auto out = env.Run(text, {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("ConstantOfShape", "Add"));
  EXPECT_THAT(AllMessages(result),
              HasSubstr("refused 1 folds over the size budget: node 'big' (ConstantOfShape) "
                        "would add 2097136 bytes"));
  EXPECT_FALSE(result.runs.back().changed);

  // A larger growth budget lets it through.
  auto allowed = env.RunSpecs(text, {{"constant_fold", {{"max_growth_bytes", "4000000"}}}},
                              &result);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_THAT(OpTypes(*allowed), ElementsAre("Add"));
  EXPECT_THAT(AllMessages(result), HasSubstr("+2097152 bytes, -16 bytes"));
}

TEST(ConstantFoldPassTest, RefusesToComputeTensorsOverMaxFoldedBytes) {
  PassTestEnv env;
  const std::string text =
      WithInitializers(kBigConstant, {Int64TensorProto("shape", {2}, {1024, 512})});
  PipelineResult result;
  auto out = env.RunSpecs(text,
                          {{"constant_fold",
                            {{"max_folded_bytes", "1000"}, {"max_growth_bytes", "10000000"}}}},
                          &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("ConstantOfShape", "Add"));
  EXPECT_THAT(AllMessages(result),
              HasSubstr("node 'big' (ConstantOfShape) would compute 2097152 bytes "
                        "(max_folded_bytes 1000)"));
}

// A 40-character string tiled `reps` times (the issue's 67-byte model, give or take).
std::string StringTileGraph(int64_t reps) {
  v1::Tensor s;
  s.set_name("s");
  s.set_dtype(v1::DT_STRING);
  s.add_dims(1);
  s.add_string_data("0123456789012345678901234567890123456789");
  return WithInitializers(R"pb(
    nodes { name: "big" op_type: "Tile" inputs: "s" inputs: "reps" outputs: "y" }
    outputs { name: "y" })pb",
                          {s, Int64TensorProto("reps", {1}, {reps})});
}

TEST(ConstantFoldPassTest, StringFoldsCountTheirObjectsBeforeComputing) {
  PassTestEnv env;
  for (int64_t reps : {int64_t{1} << 26, int64_t{1} << 40}) {
    PipelineResult result;
    auto out = env.Run(StringTileGraph(reps), {"constant_fold"}, &result);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(OpTypes(*out), ElementsAre("Tile"));
    EXPECT_THAT(AllMessages(result),
                HasSubstr(absl::StrCat("node 'big' (Tile) would compute ",
                                       reps * static_cast<int64_t>(sizeof(std::string)),
                                       " bytes")));
  }
}

TEST(ConstantFoldPassTest, StringFoldsOverTheBudgetByTheirCharactersAreRefusedNotErrors) {
  PassTestEnv env;
  // 2^20 strings: 32 MiB of objects (under the 64 MiB estimate) and 41 MiB of characters,
  // which the kernels' memory budget of max_folded_bytes counts.
  PipelineResult result;
  auto out = env.Run(StringTileGraph(int64_t{1} << 20), {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Tile"));
  EXPECT_THAT(AllMessages(result),
              AllOf(HasSubstr("refused 1 folds over the size budget: node 'big' (Tile) output 0"),
                    HasSubstr("over the execution's memory budget")));
  // A small one folds, its characters counted in the growth.
  out = env.Run(StringTileGraph(100), {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), IsEmpty());
  ASSERT_EQ(out->initializers_size(), 1);
  EXPECT_EQ(out->initializers(0).string_data_size(), 100);
}

TEST(ConstantFoldPassTest, StopsWhenTheTokenFiresNamingThePass) {
  PassTestEnv env;
  absl::StatusOr<Graph> g =
      env.Parse(WithInitializers(kBigConstant, {Int64TensorProto("shape", {2}, {1024, 512})}));
  ASSERT_TRUE(g.ok());
  StopToken token;
  token.Cancel("the client cancelled the call");
  PipelineOptions options;
  options.stop = &token;
  absl::StatusOr<PipelineResult> r =
      RunPipeline(*g, {{"constant_fold", {}}}, env.passes(), env.ops(), options);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  // The pass itself, run without the pipeline's check before it.
  absl::StatusOr<Graph> h =
      env.Parse(WithInitializers(kBigConstant, {Int64TensorProto("shape", {2}, {1024, 512})}));
  ASSERT_TRUE(h.ok());
  const PassInfo* info = env.passes().Find("constant_fold");
  ASSERT_NE(info, nullptr);
  absl::StatusOr<std::unique_ptr<Pass>> pass = info->factory({});
  ASSERT_TRUE(pass.ok());
  PassContext context{&env.ops(), nullptr, &token, "constant_fold"};
  absl::StatusOr<bool> changed = (*pass)->Run(*h, context);
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(changed.status().message(), AllOf(HasSubstr("the client cancelled the call"),
                                                HasSubstr("pass 'constant_fold'")));
}

TEST(ConstantFoldPassTest, DeadlineStopsAFoldMidKernel) {
  PassTestEnv env;
  // ConstantOfShape of 8M floats then Adds of it: each fold 32 MiB, seconds in all.
  std::string text = R"pb(
    nodes { name: "big" op_type: "ConstantOfShape" inputs: "shape" outputs: "c0" })pb";
  for (int i = 0; i < 40; ++i) {
    absl::StrAppend(&text, " nodes { op_type: \"Add\" inputs: \"c", i, "\" inputs: \"c", i,
                    "\" outputs: \"c", i + 1, "\" }");
  }
  absl::StrAppend(&text, " outputs { name: \"c40\" }");
  absl::StatusOr<Graph> g =
      env.Parse(WithInitializers(text, {Int64TensorProto("shape", {1}, {int64_t{8} << 20})}));
  ASSERT_TRUE(g.ok()) << g.status();
  StopToken token(absl::Now() + absl::Milliseconds(150));
  PipelineOptions options;
  options.stop = &token;
  options.option_ceilings.clear();  // a test of the deadline, not of the budgets
  const absl::Time start = absl::Now();
  absl::StatusOr<PipelineResult> r = RunPipeline(
      *g, {{"constant_fold", {{"max_growth_bytes", "100000000000"}}}}, env.passes(), env.ops(),
      options);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(took, absl::Milliseconds(400));
}

TEST(ConstantFoldPassTest, FoldsThatReplaceWhatTheyReadAddNothingToTheBudget) {
  PassTestEnv env;
  // Transposing 2 MiB of weights read nowhere else: the model does not grow.
  const std::string text = WithInitializers(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 1024 } } } }
    nodes { op_type: "Transpose" inputs: "w" outputs: "wt" }
    nodes { op_type: "MatMul" inputs: "x" inputs: "wt" outputs: "y" }
    outputs { name: "y" })pb",
                                            {FloatTensorProto("w", {512, 1024},
                                                              SeededFloats(512 * 1024, 4))});
  PipelineResult result;
  auto out = env.Run(text, {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("MatMul"));
  EXPECT_THAT(InitializerNames(*out), ElementsAre("wt"));
  EXPECT_THAT(AllMessages(result), HasSubstr("+2097152 bytes, -2097152 bytes"));
  EXPECT_THAT(AllMessages(result), HasSubstr("net +0"));
}

TEST(ConstantFoldPassTest, LeavesNonConstantAndOverridableInputsAlone) {
  PassTestEnv env;
  // `b` is an initializer that is also a graph input: a caller may override it.
  const std::string text = WithInitializers(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
    inputs { name: "b" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
    nodes { op_type: "Neg" inputs: "b" outputs: "nb" }
    nodes { op_type: "Add" inputs: "x" inputs: "nb" outputs: "y" }
    outputs { name: "y" })pb",
                                            {FloatTensorProto("b", {2}, {1, 2})});
  PipelineResult result;
  auto out = env.Run(text, {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Neg", "Add"));
  EXPECT_FALSE(result.runs.back().changed);
}

TEST(ConstantFoldPassTest, ReportsNodesWithoutAKernel) {
  PassTestEnv env;
  OpDef twice = MakeTestOp("Twice", {"x"}, {"y"});
  twice.descriptor.set_domain("my.ops");
  ASSERT_TRUE(env.AddOp(std::move(twice)).ok());
  const std::string text = WithInitializers(R"pb(
    nodes { op_type: "Twice" domain: "my.ops" inputs: "a" outputs: "y" }
    outputs { name: "y" })pb",
                                            {FloatTensorProto("a", {2}, {1, 2})});
  PipelineResult result;
  auto out = env.Run(text, {"constant_fold"}, &result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("Twice"));
  EXPECT_THAT(AllMessages(result),
              HasSubstr("left 1 nodes with constant inputs that have no CPU kernel: "
                        "my.ops::Twice (1)"));
}

// Copies input 0 to output 0: a kernel for the test ops below.
class CopyKernel : public runtime::OpKernel {
 public:
  absl::Status Compute(runtime::KernelContext& ctx) const override {
    ctx.SetOutput(0, *ctx.input(0));
    return absl::OkStatus();
  }
};

TEST(ConstantFoldPassTest, NeverFoldsSideEffectsOrRandomnessEvenWithKernels) {
  PassTestEnv env;
  OpDef print = MakeTestOp("Print", {"x"}, {"y"});
  print.descriptor.set_domain("my.ops");
  print.descriptor.set_has_side_effects(true);
  OpDef sample = MakeTestOp("Sample", {"x"}, {"y"});
  sample.descriptor.set_domain("my.ops");
  (*sample.descriptor.mutable_extensions())[kNondeterministicExtension].set_i(1);
  OpDef same = MakeTestOp("Same", {"x"}, {"y"});
  same.descriptor.set_domain("my.ops");
  for (OpDef* def : {&print, &sample, &same}) ASSERT_TRUE(env.AddOp(*def).ok());
  // An ONNX random op, registered here without the 'nondeterministic' extension unless the
  // builtins have it.
  if (env.ops().Find("", "RandomNormalLike") == nullptr) {
    ASSERT_TRUE(env.AddOp(MakeTestOp("RandomNormalLike", {"x"}, {"y"})).ok());
  }

  auto kernels = std::make_shared<runtime::KernelRegistry>();
  for (const char* op : {"Print", "Sample", "Same"}) {
    ASSERT_TRUE(kernels
                    ->Register({"my.ops", op},
                               [](const runtime::KernelInfo&)
                                   -> absl::StatusOr<std::unique_ptr<runtime::OpKernel>> {
                                 return std::unique_ptr<runtime::OpKernel>(
                                     std::make_unique<CopyKernel>());
                               })
                    .ok());
  }
  ASSERT_TRUE(kernels
                  ->Register({"", "RandomNormalLike"},
                             [](const runtime::KernelInfo&)
                                 -> absl::StatusOr<std::unique_ptr<runtime::OpKernel>> {
                               return std::unique_ptr<runtime::OpKernel>(
                                   std::make_unique<CopyKernel>());
                             })
                  .ok());

  auto graph = env.Parse(WithInitializers(R"pb(
    nodes { op_type: "Print" domain: "my.ops" inputs: "a" outputs: "p" }
    nodes { op_type: "Sample" domain: "my.ops" inputs: "a" outputs: "s" }
    nodes { op_type: "RandomNormalLike" inputs: "a" outputs: "r" }
    nodes { op_type: "Same" domain: "my.ops" inputs: "a" outputs: "c" }
    outputs { name: "p" } outputs { name: "s" } outputs { name: "r" } outputs { name: "c" })pb",
                                          {FloatTensorProto("a", {2}, {1, 2})}));
  ASSERT_TRUE(graph.ok()) << graph.status();
  auto inferred = RunPipeline(*graph, {{"infer_type", {}}, {"infer_shape", {}}}, env.passes(),
                              env.ops());
  ASSERT_TRUE(inferred.ok()) << inferred.status();
  auto pass = ConstantFoldPassInfo(kernels).factory({});
  ASSERT_TRUE(pass.ok());
  std::vector<std::string> messages;
  auto changed = (*pass)->Run(*graph, PassContext{&env.ops(), &messages});
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);  // Same is folded
  const v1::Graph out = GraphToProto(*std::move(graph));
  EXPECT_THAT(OpTypes(out), ElementsAre("Print", "Sample", "RandomNormalLike"));
  EXPECT_THAT(messages[0], HasSubstr("folded 1 nodes"));
  EXPECT_THAT(messages[1],
              HasSubstr("left 3 nodes of unknown ops or with side effects, mutated inputs or "
                        "randomness"));
}

TEST(ConstantFoldPassTest, RejectsMalformedOptions) {
  PassTestEnv env;
  auto out = env.RunSpecs(R"pb(outputs { name: "x" } inputs { name: "x" })pb",
                          {{"constant_fold", {{"max_growth_bytes", "-1"}}}});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("max_growth_bytes"));
}

// A subgraph reads 'a' and 'alias' by name: 'a' stays although no node reads it after the fold,
// and the Identity producing 'alias' is folded into a copy, not forwarded away.
TEST(ConstantFoldPassTest, KeepsWhatASubgraphReadsByName) {
  PassTestEnv env;
  const std::string text = WithInitializers(R"pb(
    inputs { name: "c" type { dtype: DT_BOOL shape {} } }
    nodes { op_type: "Neg" inputs: "a" outputs: "n" }
    nodes { op_type: "Identity" inputs: "n" outputs: "alias" }
    nodes {
      op_type: "If" inputs: "c" outputs: "o"
      attributes { name: "then_branch" g {
        nodes { op_type: "Add" inputs: "a" inputs: "alias" outputs: "t" }
        outputs { name: "t" type { dtype: DT_FLOAT32 } } } }
      attributes { name: "else_branch" g {
        nodes { op_type: "Neg" inputs: "alias" outputs: "e" }
        outputs { name: "e" type { dtype: DT_FLOAT32 } } } }
    }
    outputs { name: "o" })pb",
                                            {FloatTensorProto("a", {2}, {1, 2})});
  auto out = testing::OptimizeAndCompare(
      env, text, {{"constant_fold", {}}},
      {{"c", runtime::Tensor::FromVector<uint8_t>(v1::DT_BOOL, {1}, {})}}, /*bit_exact=*/true);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), ElementsAre("If"));
  EXPECT_THAT(InitializerNames(*out), ElementsAre("a", "alias"));
}

}  // namespace
}  // namespace graphopt

namespace graphopt {
namespace {

// No initializer can hold a sequence: a SequenceConstruct of a constant (its type fully static
// once inferred) stays computed, types inferred or not, and what reads it still runs; dead
// sequence nodes still go.
TEST(ConstantFoldPassTest, LeavesSequencesComputed) {
  testing::PassTestEnv env;
  const std::string text = testing::WithInitializers(
      R"pb(
        nodes { op_type: "SequenceConstruct" inputs: "a" outputs: "s" }
        nodes { op_type: "SequenceLength" inputs: "s" outputs: "n" }
        nodes { op_type: "SequenceEmpty" outputs: "dead" }
        outputs { name: "n" })pb",
      {testing::FloatTensorProto("a", {2}, {1.0f, 2.0f})});
  for (const std::vector<std::string>& passes :
       std::vector<std::vector<std::string>>{{"constant_fold"},
                                             {"infer_type", "infer_shape", "constant_fold"}}) {
    PipelineResult result;
    absl::StatusOr<v1::Graph> g = env.Run(text, passes, &result);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_THAT(testing::OpTypes(*g),
                ::testing::IsSupersetOf({"SequenceConstruct", "SequenceLength"}));
    EXPECT_THAT(AllMessages(result), HasSubstr("producing sequences or optionals"));
  }
  absl::StatusOr<v1::Graph> dce = env.Run(text, {"dead_code_elimination"});
  ASSERT_TRUE(dce.ok()) << dce.status();
  EXPECT_THAT(testing::OpTypes(*dce), ElementsAre("SequenceConstruct", "SequenceLength"));
}

}  // namespace
}  // namespace graphopt
