#include "passes/infer_type_pass.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::TypeOf;
using ::testing::HasSubstr;

TEST(InferTypePassTest, PropagatesThroughConstraintsAndCast) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    inputs { name: "y" type { dtype: DT_FLOAT32 } }
    nodes { name: "add" op_type: "Add" inputs: "x" inputs: "y" outputs: "s" }
    nodes { name: "less" op_type: "Less" inputs: "s" inputs: "y" outputs: "b" }
    nodes { name: "cast" op_type: "Cast" inputs: "s" outputs: "c" attributes { name: "to" i: 7 } }
    nodes { name: "shape" op_type: "Shape" inputs: "x" outputs: "sh" }
    outputs { name: "b" } outputs { name: "c" } outputs { name: "sh" })pb",
                     {"infer_type"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(TypeOf(*out, "s").substr(0, 7), "float32");
  EXPECT_EQ(TypeOf(*out, "b").substr(0, 4), "bool");
  EXPECT_EQ(TypeOf(*out, "c").substr(0, 5), "int64");
  EXPECT_EQ(TypeOf(*out, "sh").substr(0, 5), "int64");
}

TEST(InferTypePassTest, RejectsMismatchedInputsNamingTheNode) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    inputs { name: "i" type { dtype: DT_INT64 } }
    nodes { name: "bad_add" op_type: "Add" inputs: "x" inputs: "i" outputs: "s" }
    outputs { name: "s" })pb",
                     {"infer_type"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("node 'bad_add' (Add)"));
  EXPECT_THAT(out.status().message(), HasSubstr("input 1 (B) 'i' has type int64"));
}

TEST(InferTypePassTest, RejectsTypeOutsideConstraint) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "s" type { dtype: DT_STRING } }
    nodes { name: "r" op_type: "Relu" inputs: "s" outputs: "y" }
    outputs { name: "y" })pb",
                     {"infer_type"});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("node 'r' (Relu): input 0 (X) 's' has type string"));
}

TEST(InferTypePassTest, UnknownInputTypeStaysUnknown) {
  PassTestEnv env;
  auto out = env.Run(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Relu" inputs: "x" outputs: "y" }
    nodes { op_type: "Relu" inputs: "y" outputs: "z" }
    outputs { name: "z" })pb",
                     {"infer_type"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(TypeOf(*out, "z"), "<none>");
}

}  // namespace
}  // namespace graphopt
