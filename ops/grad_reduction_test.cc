// Builtin gradients of the reduction ops against finite differences (passes/gradient_check.h).

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::CheckGradients;
using ::graphopt::testing::InputText;
using ::graphopt::testing::IntsText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::RandomTensor;
using ::testing::Contains;
using ::testing::HasSubstr;

runtime::Tensor Rand(const std::vector<int64_t>& dims, uint32_t seed) {
  return RandomTensor(v1::DT_FLOAT64, dims, seed);
}

std::string Input(const std::string& name, const std::vector<int>& dims) {
  return InputText(name, dims, "DT_FLOAT64");
}

// A graph input whose dims are sizes ("3") or symbols ("n").
std::string SymbolicInput(const std::string& name, const std::vector<std::string>& dims) {
  std::string shape;
  for (const std::string& d : dims) {
    const bool number = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
    absl::StrAppend(&shape, number ? absl::StrCat(" dims { size: ", d, " }")
                                   : absl::StrCat(" dims { symbol: \"", d, "\" }"));
  }
  return absl::StrCat("inputs { name: \"", name, "\" type { dtype: DT_FLOAT64 shape {", shape,
                      " } } }\n");
}

// An int64 initializer.
std::string Int64Init(const std::string& name, const std::vector<int64_t>& values) {
  std::string raw;
  for (int64_t v : values) {
    for (int b = 0; b < 8; ++b) {
      absl::StrAppend(&raw, "\\", absl::StrFormat("%03o", (static_cast<uint64_t>(v) >> (8 * b)) & 0xff));
    }
  }
  return absl::StrCat("initializers { name: \"", name, "\" dtype: DT_INT64 dims: ", values.size(),
                      " raw_data: \"", raw, "\" }\n");
}

std::string Opset(int version) {
  return absl::StrCat("opset_imports { domain: \"\" version: ", version, " }\n");
}

std::string IntText(const std::string& name, int64_t v) {
  return absl::StrCat("attributes { name: \"", name, "\" i: ", v, " }");
}

// --- graphopt::SumToShape ---------------------------------------------------------------------

TEST(GradReductionTest, SumToShapeOwnGradient) {
  PassTestEnv env;
  const std::string text =
      Input("x", {2, 3, 4}) + Int64Init("s", {3, 1}) +
      "nodes { op_type: \"SumToShape\" domain: \"graphopt\" name: \"y_node\" inputs: \"x\" "
      "inputs: \"s\" outputs: \"y\" }\n" +
      OutputText("y");
  absl::Status s = CheckGradients(env, text, {{"x", Rand({2, 3, 4}, 1)}});
  EXPECT_TRUE(s.ok()) << s;
}

// An Add of operands whose broadcast is decided at run time: the Add's gradient emits the
// SumToShape op (graph/gradient.h), whose kernel un-broadcasts.
TEST(GradReductionTest, SumToShapeEmittedForSymbolicBroadcast) {
  PassTestEnv env;
  const std::string text = SymbolicInput("a", {"n", "3"}) + SymbolicInput("b", {"m", "3"}) +
                           NodeText("Add", {"a", "b"}, "y") + OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "a;b"}}}});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(OpTypes(*out), Contains("SumToShape"));
  absl::Status s = CheckGradients(env, text, {{"a", Rand({4, 3}, 1)}, {"b", Rand({1, 3}, 2)}});
  EXPECT_TRUE(s.ok()) << s;
  s = CheckGradients(env, text, {{"a", Rand({1, 3}, 3)}, {"b", Rand({5, 3}, 4)}});
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace graphopt
