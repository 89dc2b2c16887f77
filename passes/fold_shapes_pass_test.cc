#include "passes/fold_shapes_pass.h"

#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::Int64TensorProto;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::TypeOf;
using ::graphopt::testing::WithInitializers;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

// An input "x" of float32[batch, <dims>...].
std::string BatchInput(const std::vector<int64_t>& dims) {
  std::string shape = "dims { symbol: \"batch\" } ";
  for (int64_t d : dims) absl::StrAppend(&shape, "dims { size: ", d, " } ");
  return absl::StrCat("inputs { name: \"x\" type { dtype: DT_FLOAT32 shape { ", shape, "} } }");
}

// Runs `passes` over `text` and checks that the result computes what the original computes
// on `inputs`; returns the result and the passes' messages.
v1::Graph FoldAndCompare(const std::string& text, const std::vector<std::string>& passes,
                         const Inputs& inputs, std::string* messages = nullptr) {
  PassTestEnv env;
  std::vector<PassSpec> specs;
  for (const std::string& p : passes) specs.push_back({p, {}});
  PipelineResult result;
  auto out = testing::OptimizeAndCompare(env, text, specs, inputs, /*bit_exact=*/true, 0,
                                         &result);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return v1::Graph();
  if (messages != nullptr) {
    for (const PassRun& run : result.runs) {
      for (const std::string& m : run.messages) absl::StrAppend(messages, m, "\n");
    }
  }
  return *std::move(out);
}

Inputs X(int64_t batch, const std::vector<int64_t>& dims) {
  std::vector<int64_t> all = {batch};
  all.insert(all.end(), dims.begin(), dims.end());
  int64_t n = 1;
  for (int64_t d : all) n *= d;
  return {{"x", FloatTensor(all, SeededFloats(n, 3))}};
}

// Expand(y, Concat(Unsqueeze(Gather(Shape(x), 0)), Unsqueeze(Gather(Shape(x), 1)))): the known
// dim folds, the batch stays a computation.
constexpr char kExpandByShape[] = R"pb(
  nodes { op_type: "Shape" inputs: "x" outputs: "s" }
  nodes { op_type: "Gather" inputs: "s" inputs: "i0" outputs: "g0" attributes { name: "axis" i: 0 } }
  nodes { op_type: "Gather" inputs: "s" inputs: "i1" outputs: "g1" attributes { name: "axis" i: 0 } }
  nodes { op_type: "Unsqueeze" inputs: "g0" inputs: "axes" outputs: "u0" }
  nodes { op_type: "Unsqueeze" inputs: "g1" inputs: "axes" outputs: "u1" }
  nodes { op_type: "Concat" inputs: "u0" inputs: "u1" outputs: "target" attributes { name: "axis" i: 0 } }
  nodes { op_type: "Expand" inputs: "y" inputs: "target" outputs: "out" }
  outputs { name: "out" }
  opset_imports { domain: "" version: 17 }
)pb";

TEST(FoldShapesPassTest, KnownDimsFoldWhileTheBatchStaysSymbolic) {
  const std::string text = WithInitializers(
      BatchInput({3}) + R"pb(inputs { name: "y" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 1 } } } })pb" +
          kExpandByShape,
      {Int64TensorProto("i0", {}, {0}), Int64TensorProto("i1", {}, {1}),
       Int64TensorProto("axes", {1}, {0})});
  Inputs inputs = X(2, {3});
  inputs.push_back({"y", FloatTensor({1, 1}, {0.5f})});
  std::string messages;
  v1::Graph out = FoldAndCompare(text, {"fold_shapes", "constant_fold", "dead_code_elimination"},
                                 inputs, &messages);
  // Gather(s, 1) became 3 and its Unsqueeze a constant; the batch's chain stays.
  EXPECT_THAT(OpTypes(out), ElementsAre("Shape", "Gather", "Unsqueeze", "Concat", "Expand"));
  EXPECT_THAT(messages, HasSubstr("folded 1 shape computations"));
  EXPECT_EQ(TypeOf(out, "out"), "float32[batch,3]");
}

TEST(FoldShapesPassTest, StaticShapeFoldsWhole) {
  const std::string text = WithInitializers(
      R"pb(inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } dims { size: 3 } } } }
           inputs { name: "y" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 1 } } } })pb" +
          std::string(kExpandByShape),
      {Int64TensorProto("i0", {}, {0}), Int64TensorProto("i1", {}, {1}),
       Int64TensorProto("axes", {1}, {0})});
  Inputs inputs = {{"x", FloatTensor({2, 3}, SeededFloats(6, 1))},
                   {"y", FloatTensor({1, 1}, {0.5f})}};
  v1::Graph out =
      FoldAndCompare(text, {"fold_shapes", "constant_fold", "dead_code_elimination"}, inputs);
  EXPECT_THAT(OpTypes(out), ElementsAre("Expand"));
}

// Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), <middle>, [-1])).
std::string ReshapeByShape(const std::string& middle_nodes) {
  return R"pb(
    nodes { op_type: "Shape" inputs: "x" outputs: "s" }
    nodes { op_type: "Gather" inputs: "s" inputs: "i0" outputs: "g0" attributes { name: "axis" i: 0 } }
    nodes { op_type: "Unsqueeze" inputs: "g0" inputs: "axes" outputs: "u0" }
  )pb" + middle_nodes + R"pb(
    nodes { op_type: "Concat" inputs: "u0" inputs: "mid" inputs: "minus_one" outputs: "target" attributes { name: "axis" i: 0 } }
    nodes { op_type: "Reshape" inputs: "x" inputs: "target" outputs: "out" }
    outputs { name: "out" }
    opset_imports { domain: "" version: 17 }
  )pb";
}

std::vector<v1::Tensor> ReshapeConstants() {
  return {Int64TensorProto("i0", {}, {0}), Int64TensorProto("i1", {}, {1}),
          Int64TensorProto("axes", {1}, {0}), Int64TensorProto("minus_one", {1}, {-1}),
          Int64TensorProto("four", {}, {4})};
}

TEST(FoldShapesPassTest, ReshapeTargetBecomesConstantWithTheBatchCopied) {
  // [batch, 3, 8] -> [batch, 3, -1]: the batch entry copies x's dim 0.
  const std::string text = WithInitializers(
      BatchInput({3, 8}) + ReshapeByShape(R"pb(
        nodes { op_type: "Gather" inputs: "s" inputs: "i1" outputs: "g1" attributes { name: "axis" i: 0 } }
        nodes { op_type: "Unsqueeze" inputs: "g1" inputs: "axes" outputs: "mid" })pb"),
      ReshapeConstants());
  std::string messages;
  v1::Graph out = FoldAndCompare(text, {"fold_shapes", "constant_fold", "dead_code_elimination"},
                                 X(2, {3, 8}), &messages);
  EXPECT_THAT(OpTypes(out), ElementsAre("Reshape"));
  EXPECT_THAT(messages, HasSubstr("1 Reshape targets made constant"));
  EXPECT_EQ(TypeOf(out, "out"), "float32[batch,3,8]");
}

TEST(FoldShapesPassTest, OneUnknownEntryBecomesMinusOne) {
  // [batch, 4 * 2, -1]... here: [batch, 2 * batch?] is unknown to inference: Mul(batch, 4).
  const std::string text = WithInitializers(
      BatchInput({8, 2}) + R"pb(
        nodes { op_type: "Shape" inputs: "x" outputs: "s" }
        nodes { op_type: "Gather" inputs: "s" inputs: "i0" outputs: "g0" attributes { name: "axis" i: 0 } }
        nodes { op_type: "Mul" inputs: "g0" inputs: "four" outputs: "m" }
        nodes { op_type: "Unsqueeze" inputs: "m" inputs: "axes" outputs: "u0" }
        nodes { op_type: "Concat" inputs: "u0" inputs: "four1" outputs: "target" attributes { name: "axis" i: 0 } }
        nodes { op_type: "Reshape" inputs: "x" inputs: "target" outputs: "out" }
        outputs { name: "out" }
        opset_imports { domain: "" version: 17 })pb",
      {Int64TensorProto("i0", {}, {0}), Int64TensorProto("axes", {1}, {0}),
       Int64TensorProto("four", {}, {4}), Int64TensorProto("four1", {1}, {4})});
  v1::Graph out = FoldAndCompare(text, {"fold_shapes", "constant_fold", "dead_code_elimination"},
                                 X(3, {8, 2}));
  EXPECT_THAT(OpTypes(out), ElementsAre("Reshape"));
  bool found = false;
  for (const v1::Tensor& t : out.initializers()) {
    if (t.name() == out.nodes(0).inputs(1)) {
      found = true;
      EXPECT_EQ(t.raw_data().size(), 2 * sizeof(int64_t));
      int64_t v[2];
      std::memcpy(v, t.raw_data().data(), sizeof(v));
      EXPECT_EQ(v[0], -1);
      EXPECT_EQ(v[1], 4);
    }
  }
  EXPECT_TRUE(found);
}

TEST(FoldShapesPassTest, ReshapeKeepingTheShapeIsRemoved) {
  // Reshape(x, [batch, 3, 8]) computed from x's own shape.
  const std::string text = WithInitializers(
      BatchInput({3, 8}) + R"pb(
        nodes { op_type: "Shape" inputs: "x" outputs: "s" }
        nodes { op_type: "Relu" inputs: "x" outputs: "r" }
        nodes { op_type: "Reshape" inputs: "r" inputs: "s" outputs: "out" }
        outputs { name: "out" }
        opset_imports { domain: "" version: 17 })pb",
      {});
  std::string messages;
  v1::Graph out =
      FoldAndCompare(text, {"fold_shapes", "dead_code_elimination"}, X(2, {3, 8}), &messages);
  EXPECT_THAT(OpTypes(out), ElementsAre("Relu"));
  EXPECT_THAT(messages, HasSubstr("1 Reshapes that keep the shape removed"));
  EXPECT_EQ(out.outputs(0).name(), "out");
}

TEST(FoldShapesPassTest, SymbolsOutOfPlaceStay) {
  // [batch, seq] -> [seq, batch]: neither entry is x's dim in place, and neither is free.
  const std::string text = WithInitializers(
      R"pb(inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { symbol: "seq" } } } }
        nodes { op_type: "Shape" inputs: "x" outputs: "s" }
        nodes { op_type: "Gather" inputs: "s" inputs: "perm" outputs: "target" attributes { name: "axis" i: 0 } }
        nodes { op_type: "Reshape" inputs: "x" inputs: "target" outputs: "out" }
        outputs { name: "out" }
        opset_imports { domain: "" version: 17 })pb",
      {Int64TensorProto("perm", {2}, {1, 0})});
  v1::Graph out = FoldAndCompare(text, {"fold_shapes"}, {{"x", FloatTensor({2, 3}, SeededFloats(6, 2))}});
  EXPECT_THAT(OpTypes(out), ElementsAre("Shape", "Gather", "Reshape"));
}

}  // namespace
}  // namespace graphopt
