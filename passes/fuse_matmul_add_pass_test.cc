#include "passes/fuse_matmul_add_pass.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::FloatTensorProto;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::TypeOf;
using ::graphopt::testing::WithInitializers;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

std::string Input(const std::string& name, const std::string& dims) {
  return absl::StrCat("inputs { name: \"", name, "\" type { dtype: DT_FLOAT32 shape { ", dims,
                      " } } }");
}

// Runs fuse_matmul_add and checks the result against the original within float rounding.
v1::Graph FuseAndCompare(const std::string& text, const Inputs& inputs,
                         std::string* messages = nullptr) {
  PassTestEnv env;
  PipelineResult result;
  auto out = testing::OptimizeAndCompare(env, text, {{"fuse_matmul_add", {}}}, inputs,
                                         /*bit_exact=*/false, 1e-6, &result);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return v1::Graph();
  if (messages != nullptr) {
    for (const PassRun& run : result.runs) {
      for (const std::string& m : run.messages) absl::StrAppend(messages, m, "\n");
    }
  }
  return *std::move(out);
}

constexpr char kMatMulAdd[] = R"pb(
  nodes { name: "mm" op_type: "MatMul" inputs: "a" inputs: "w" outputs: "p" }
  nodes { name: "add" op_type: "Add" inputs: "bias" inputs: "p" outputs: "y" }
  outputs { name: "y" }
)pb";

TEST(FuseMatMulAddPassTest, MatrixProductWithBiasBecomesGemm) {
  // M is symbolic unless C has a dim of M's own.
  for (const std::vector<int64_t>& bias_dims :
       std::vector<std::vector<int64_t>>{{4}, {1, 4}, {3, 4}, {3, 1}, {}}) {
    int64_t count = 1;
    for (int64_t d : bias_dims) count *= d;
    const bool static_m = bias_dims.size() == 2 && bias_dims[0] == 3;
    const std::string text = WithInitializers(
        Input("a", static_m ? "dims { size: 3 } dims { size: 5 }"
                            : "dims { symbol: \"m\" } dims { size: 5 }") +
            kMatMulAdd,
        {FloatTensorProto("w", {5, 4}, SeededFloats(20, 1)),
         FloatTensorProto("bias", bias_dims, SeededFloats(count, 2))});
    std::string messages;
    v1::Graph out = FuseAndCompare(text, {{"a", FloatTensor({3, 5}, SeededFloats(15, 3))}},
                                   &messages);
    EXPECT_THAT(OpTypes(out), ElementsAre("Gemm")) << bias_dims.size();
    if (out.nodes_size() != 1) continue;
    EXPECT_THAT(out.nodes(0).inputs(), ElementsAre("a", "w", "bias"));
    EXPECT_EQ(out.nodes(0).name(), "mm");
    EXPECT_EQ(TypeOf(out, "y"), static_m ? "float32[3,4]" : "float32[m,4]");
    EXPECT_THAT(messages, HasSubstr("matmul_add_to_gemm 1"));
  }
}

TEST(FuseMatMulAddPassTest, BiasOfMRowsNeedsAKnownM) {
  // With M symbolic, a [3, 4] bias may broadcast the product (M = 1): Gemm's C cannot.
  const std::string text = WithInitializers(
      Input("a", "dims { symbol: \"m\" } dims { size: 5 }") + kMatMulAdd,
      {FloatTensorProto("w", {5, 4}, SeededFloats(20, 1)),
       FloatTensorProto("bias", {3, 4}, SeededFloats(12, 2))});
  v1::Graph out = FuseAndCompare(text, {{"a", FloatTensor({1, 5}, SeededFloats(5, 3))}});
  EXPECT_THAT(OpTypes(out), ElementsAre("MatMul", "Add"));
}

TEST(FuseMatMulAddPassTest, LeavesWhatGemmCannotExpress) {
  // A of rank 3; a bias that broadcasts the product to a larger shape; a product read twice.
  const std::string text = WithInitializers(
      Input("a3", "dims { size: 2 } dims { size: 3 } dims { size: 5 }") +
          Input("a", "dims { size: 3 } dims { size: 5 }") + R"pb(
        nodes { op_type: "MatMul" inputs: "a3" inputs: "w" outputs: "p3" }
        nodes { op_type: "Add" inputs: "p3" inputs: "bias" outputs: "y3" }
        nodes { op_type: "MatMul" inputs: "a" inputs: "w" outputs: "p" }
        nodes { op_type: "Add" inputs: "p" inputs: "big" outputs: "y_big" }
        nodes { op_type: "MatMul" inputs: "a" inputs: "w2" outputs: "q" }
        nodes { op_type: "Add" inputs: "q" inputs: "bias" outputs: "y_q" }
        nodes { op_type: "Relu" inputs: "q" outputs: "r" }
        outputs { name: "y3" } outputs { name: "y_big" } outputs { name: "y_q" }
        outputs { name: "r" })pb",
      {FloatTensorProto("w", {5, 4}, SeededFloats(20, 1)),
       FloatTensorProto("w2", {5, 4}, SeededFloats(20, 4)),
       FloatTensorProto("bias", {4}, SeededFloats(4, 2)),
       FloatTensorProto("big", {2, 3, 4}, SeededFloats(24, 5))});
  v1::Graph out = FuseAndCompare(text, {{"a3", FloatTensor({2, 3, 5}, SeededFloats(30, 3))},
                                        {"a", FloatTensor({3, 5}, SeededFloats(15, 6))}});
  EXPECT_THAT(OpTypes(out),
              ElementsAre("MatMul", "Add", "MatMul", "Add", "MatMul", "Add", "Relu"));
}

}  // namespace
}  // namespace graphopt
