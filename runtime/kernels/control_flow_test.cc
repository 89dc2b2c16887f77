#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor Bool(bool v) { return Tensor::FromVector<bool>(v1::DT_BOOL, {v}, {}); }

// Loop body: carries v unchanged, scans the outer value 'in2' (a capture) and the iteration
// number.
constexpr char kLoopBody[] = R"(name: "body" g {
  inputs { name: "i" } inputs { name: "c" } inputs { name: "v" }
  nodes { op_type: "Identity" inputs: "c" outputs: "c_out" }
  nodes { op_type: "Identity" inputs: "v" outputs: "v_out" }
  nodes { op_type: "Identity" inputs: "in2" outputs: "captured" }
  nodes { op_type: "Identity" inputs: "i" outputs: "iter" }
  outputs { name: "c_out" } outputs { name: "v_out" } outputs { name: "captured" }
  outputs { name: "iter" }
})";

TEST(LoopTest, CarriesScansAndCaptures) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Loop", {kLoopBody}, {I64({3}, {}), Tensor(), F32({1, 2}, {2})}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2));
  EXPECT_EQ((*out)[1].shape(), Shape({3, 2}));
  EXPECT_THAT(ToFloats((*out)[1]), ElementsAre(1, 2, 1, 2, 1, 2));
  EXPECT_THAT(ToInts((*out)[2]), ElementsAre(0, 1, 2));
}

TEST(LoopTest, FalseConditionRunsNoIteration) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Loop", {kLoopBody}, {I64({3}, {}), Bool(false), F32({1, 2}, {2})}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2));
  EXPECT_EQ((*out)[2].num_elements(), 0);
}

TEST(LoopTest, ZeroTripCount) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Loop", {kLoopBody}, {I64({0}, {}), Tensor(), F32({1, 2}, {2})}, 3);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2));
  EXPECT_EQ((*out)[1].num_elements(), 0);
}

TEST(LoopTest, CondOutputIgnoredWithoutCondInput) {
  // The body flips cond every iteration; without a cond input only M counts.
  const std::string body = R"(name: "body" g {
    inputs { name: "i" } inputs { name: "c" }
    nodes { op_type: "Not" inputs: "c" outputs: "c_out" }
    nodes { op_type: "Identity" inputs: "i" outputs: "iter" }
    outputs { name: "c_out" } outputs { name: "iter" } })";
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Loop", {body}, {I64({3}, {}), Tensor()}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(0, 1, 2));
  out = RunNode("Loop", {body}, {I64({3}, {}), Bool(true)}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(0));
}

TEST(LoopTest, RejectsBadTripCount) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Loop", {kLoopBody}, {F32({3}, {}), Tensor(), F32({1, 2}, {2})}, 3);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("M must be one integer"));
}

TEST(LoopTest, RejectsBodyOfWrongArity) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Loop", {kLoopBody}, {I64({3}, {}), Tensor()}, 1);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

constexpr char kThen[] = R"(name: "then_branch" g {
  nodes { op_type: "Identity" inputs: "in1" outputs: "t" } outputs { name: "t" } })";
constexpr char kElse[] = R"(name: "else_branch" g {
  nodes { op_type: "Identity" inputs: "in2" outputs: "e" } outputs { name: "e" } })";

TEST(IfTest, PicksTheBranch) {
  for (bool c : {true, false}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunNode("If", {kThen, kElse}, {Bool(c), F32({1}, {1}), F32({2}, {1})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(c ? 1 : 2));
  }
}

TEST(IfTest, RejectsNonScalarCondition) {
  Tensor cond = Tensor::FromVector<bool>(v1::DT_BOOL, {true, false}, {2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("If", {kThen, kElse}, {cond, F32({1}, {1}), F32({2}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("cond"));
}

TEST(IfTest, NestedInLoopReadsTheOutermostGraph) {
  // The Loop body holds an If whose branches read 'in2' of the top graph, two levels out.
  const std::string body = R"(name: "body" g {
    inputs { name: "i" } inputs { name: "c" } inputs { name: "v" }
    nodes { op_type: "Identity" inputs: "c" outputs: "c_out" }
    nodes { op_type: "Identity" inputs: "v" outputs: "v_out" }
    nodes { op_type: "If" inputs: "c" outputs: "picked"
      attributes { name: "then_branch" g {
        nodes { op_type: "Identity" inputs: "in2" outputs: "t" } outputs { name: "t" } } }
      attributes { name: "else_branch" g {
        nodes { op_type: "Identity" inputs: "in1" outputs: "e" } outputs { name: "e" } } } }
    outputs { name: "c_out" } outputs { name: "v_out" } outputs { name: "picked" }
  })";
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Loop", {body}, {I64({2}, {}), Bool(true), F32({7, 8}, {2})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[1]), ElementsAre(7, 8, 7, 8));
}

constexpr char kScanBody[] = R"(name: "body" g {
  inputs { name: "sum_in" } inputs { name: "next" }
  nodes { op_type: "Add" inputs: "sum_in" inputs: "next" outputs: "sum_out" }
  nodes { op_type: "Identity" inputs: "sum_out" outputs: "scan_out" }
  outputs { name: "sum_out" } outputs { name: "scan_out" }
})";

TEST(ScanTest, RunningSum) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Scan", {kScanBody, "name: \"num_scan_inputs\" i: 1"},
              {F32({0, 0}, {2}), F32({1, 2, 3, 4, 5, 6}, {3, 2})}, 2, 11);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(9, 12));
  EXPECT_THAT(ToFloats((*out)[1]), ElementsAre(1, 2, 4, 6, 9, 12));
}

TEST(ScanTest, ReverseAndAxes) {
  // Scan the columns of x (axis 1) backwards; stack the scan output along axis 1.
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Scan",
              {kScanBody, "name: \"num_scan_inputs\" i: 1",
               "name: \"scan_input_axes\" ints { values: 1 }",
               "name: \"scan_input_directions\" ints { values: 1 }",
               "name: \"scan_output_axes\" ints { values: 1 }"},
              {F32({0, 0}, {2}), F32({1, 2, 3, 4, 5, 6}, {2, 3})}, 2, 11);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(6, 15));
  EXPECT_THAT(ToFloats((*out)[1]), ElementsAre(3, 5, 6, 6, 11, 15));
}

TEST(ScanTest, Opset8Batched) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Scan", {kScanBody, "name: \"num_scan_inputs\" i: 1"},
              {Tensor(), F32({0, 0}, {1, 2}), F32({1, 2, 3, 4, 5, 6}, {1, 3, 2})}, 2, 8);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[1].shape(), Shape({1, 3, 2}));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(9, 12));
}

TEST(ScanTest, RejectsMismatchedSequenceLengths) {
  const std::string body = R"(name: "body" g {
    inputs { name: "a" } inputs { name: "b" }
    nodes { op_type: "Identity" inputs: "a" outputs: "x" }
    nodes { op_type: "Identity" inputs: "b" outputs: "y" }
    outputs { name: "x" } outputs { name: "y" } })";
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Scan", {body, "name: \"num_scan_inputs\" i: 2"},
              {F32({1, 2, 3}, {3}), F32({1, 2}, {2})}, 2, 11);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("sequence lengths"));
}

}  // namespace
}  // namespace graphopt::runtime
