#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

Tensor Iota(Shape shape) {
  std::vector<float> v(ShapeNumElements(shape));
  std::iota(v.begin(), v.end(), 0.0f);
  return F32(v, std::move(shape));
}

std::string IntsAttr(const std::string& name, const std::vector<int64_t>& v) {
  std::string s = absl::StrCat("name: \"", name, "\" ints { ");
  for (int64_t x : v) absl::StrAppend(&s, "values: ", x, " ");
  return s + "}";
}

// --- Transpose ------------------------------------------------------------------------------

// out[i] = in[permuted i], computed naively.
std::vector<float> NaiveTranspose(const std::vector<float>& in, const Shape& shape,
                                  const std::vector<int64_t>& perm) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int64_t> in_strides(rank, 1);
  for (int k = rank - 2; k >= 0; --k) in_strides[k] = in_strides[k + 1] * shape[k + 1];
  Shape out_shape(rank);
  for (int k = 0; k < rank; ++k) out_shape[k] = shape[perm[k]];
  std::vector<float> out(in.size());
  std::vector<int64_t> idx(rank, 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t off = 0;
    for (int k = 0; k < rank; ++k) off += idx[k] * in_strides[perm[k]];
    out[o] = in[off];
    for (int k = rank - 1; k >= 0; --k) {
      if (++idx[k] < out_shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

TEST(TransposeTest, DefaultReversesDims) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Transpose", {}, {Iota({2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(3, 2));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 3, 1, 4, 2, 5));
}

TEST(TransposeTest, MatchesNaiveForManyPermsAndShapes) {
  // {1, 3, 20, 17} and {5, 300} reach the interleaving loop (an inner run of 3 or 5 after the
  // move); {1, 4, 3, 2, 29} its per-pixel form (perm 0, 1, 2, 4, 3: a channels-last shuffle).
  const std::vector<Shape> shapes = {{5, 37, 41},     {2, 3, 70, 33}, {64, 64},
                                     {3, 1, 40, 1, 50}, {1, 3, 20, 17}, {5, 300},
                                     {1, 4, 3, 2, 29}};
  for (const Shape& shape : shapes) {
    Tensor x = Iota(shape);
    std::vector<float> in = ToFloats(x);
    std::vector<int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    do {
      absl::StatusOr<std::vector<Tensor>> out =
          RunNode("Transpose", {IntsAttr("perm", perm)}, {x}, 1, 0, 2);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_EQ(ToFloats((*out)[0]), NaiveTranspose(in, shape, perm))
          << ShapeString(shape) << " perm " << absl::StrJoin(perm, ",");
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(TransposeTest, MovingUnitDimsIsAView) {
  Tensor x = Iota({1, 4, 6});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Transpose", {IntsAttr("perm", {1, 0, 2})}, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(4, 1, 6));
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
}

TEST(TransposeTest, StringsAndBadPerm) {
  Tensor s = Tensor::Allocate(v1::DT_STRING, {2, 2}).value();
  s.strings()[0] = "a";
  s.strings()[1] = "b";
  s.strings()[2] = "c";
  s.strings()[3] = "d";
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Transpose", {}, {s});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].strings()[1], "c");
  out = RunNode("Transpose", {IntsAttr("perm", {0, 0})}, {Iota({2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("perm"));
  out = RunNode("Transpose", {IntsAttr("perm", {0, 1, 2})}, {Iota({2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Concat / Split -------------------------------------------------------------------------

TEST(ConcatTest, NegativeAxisAndEmptyInputs) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "Concat", {"name: \"axis\" i: -1"}, {Iota({2, 1}), F32({}, {2, 0}), Iota({2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 0, 1, 1, 2, 3));
  // Shape vectors: an empty 1-D int64 input is skipped.
  out = RunNode("Concat", {"name: \"axis\" i: 0"}, {I64({}, {0}), I64({4, 5}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(4, 5));
}

TEST(ConcatTest, RejectsMismatchedShapesAndDtypes) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Concat", {"name: \"axis\" i: 0"}, {Iota({2, 2}), Iota({2, 3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Concat", {"name: \"axis\" i: 0"}, {Iota({2}), I64({1}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Concat", {"name: \"axis\" i: 2"}, {Iota({2}), Iota({2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SplitTest, InputAttributeAndNumOutputs) {
  Tensor x = Iota({2, 5});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Split", {"name: \"axis\" i: 1"}, {x, I64({2, 3}, {2})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 1, 5, 6));
  EXPECT_THAT(ToFloats((*out)[1]), ElementsAre(2, 3, 4, 7, 8, 9));
  // Opset 11: split is an attribute.
  out = RunNode("Split", {"name: \"axis\" i: 1", IntsAttr("split", {4, 1})}, {x}, 2, 11);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[1]), ElementsAre(4, 9));
  // Opset 18: num_outputs, the last chunk smaller.
  out = RunNode("Split", {"name: \"axis\" i: 1", "name: \"num_outputs\" i: 2"}, {x}, 2, 18);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT((*out)[1].shape(), ElementsAre(2, 2));
  // Equal split must divide.
  out = RunNode("Split", {"name: \"axis\" i: 1"}, {x}, 2);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Split", {"name: \"axis\" i: 1"}, {x, I64({2, 2}, {2})}, 2);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Slice ----------------------------------------------------------------------------------

TEST(SliceTest, StepsClampingAndNegativeSteps) {
  Tensor x = Iota({3, 4});
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Slice", {}, {x, I64({1, 0}, {2}), I64({kMax, 4}, {2}), Tensor(), I64({1, 2}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 2));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(4, 6, 8, 10));
  // Reverse the last axis entirely.
  out = RunNode("Slice", {}, {x, I64({-1}, {1}), I64({kMin}, {1}), I64({-1}, {1}), I64({-1}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8));
  // Out-of-range start gives an empty slice.
  out = RunNode("Slice", {}, {x, I64({10}, {1}), I64({20}, {1}), I64({1}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(3, 0));
  // Opset 1: attributes.
  out = RunNode("Slice", {IntsAttr("starts", {1}), IntsAttr("ends", {3}), IntsAttr("axes", {1})},
                {x}, 1, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2, 5, 6, 9, 10));
}

TEST(SliceTest, ExtremeNegativeStepAndEmptyAxis) {
  // numpy: np.arange(4)[3::-2**63] is [3]; -step overflowed (undefined behaviour) before.
  Tensor x = Iota({3, 4});
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Slice", {}, {x, I64({-1}, {1}), I64({kMin}, {1}), I64({1}, {1}), I64({kMin}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(3, 1));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(3, 7, 11));
  // A negative step over an empty axis takes nothing (np.zeros(0)[-5:-10:-1] is empty); it
  // took one element out of the empty input before.
  out = RunNode("Slice", {}, {F32({}, {0}), I64({-5}, {1}), I64({-10}, {1}), I64({0}, {1}),
                              I64({-1}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(0));
}

TEST(SliceTest, RejectsBadAxesAndSteps) {
  Tensor x = Iota({3, 4});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Slice", {}, {x, I64({0}, {1}), I64({1}, {1}), I64({2}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Slice", {}, {x, I64({0}, {1}), I64({1}, {1}), I64({0}, {1}), I64({0}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Slice", {}, {x, I64({0, 0}, {2}), I64({1}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Slice", {}, {x, I64({0, 0}, {2}), I64({1, 1}, {2}), I64({1, -1}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- DepthToSpace / SpaceToDepth / ReverseSequence ------------------------------------------

TEST(DepthToSpaceTest, RoundTripsWithSpaceToDepth) {
  Tensor x = Iota({1, 8, 2, 3});
  absl::StatusOr<std::vector<Tensor>> d2s = RunNode("DepthToSpace", {"name: \"blocksize\" i: 2"}, {x});
  ASSERT_TRUE(d2s.ok()) << d2s.status();
  EXPECT_THAT((*d2s)[0].shape(), ElementsAre(1, 2, 4, 6));
  absl::StatusOr<std::vector<Tensor>> back =
      RunNode("SpaceToDepth", {"name: \"blocksize\" i: 2"}, {(*d2s)[0]});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(ToFloats((*back)[0]), ToFloats(x));
  absl::StatusOr<std::vector<Tensor>> bad =
      RunNode("DepthToSpace", {"name: \"blocksize\" i: 3"}, {x});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  bad = RunNode("SpaceToDepth", {"name: \"blocksize\" i: 2"}, {Iota({1, 1, 3, 2})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReverseSequenceTest, ReversesPerBatchAndChecksLengths) {
  Tensor x = Iota({3, 2});  // [time, batch]
  absl::StatusOr<std::vector<Tensor>> out = RunNode("ReverseSequence", {}, {x, I64({3, 1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(4, 1, 2, 3, 0, 5));
  out = RunNode("ReverseSequence", {}, {x, I64({4, 1}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Pad ------------------------------------------------------------------------------------

TEST(PadTest, ModesAndCrop) {
  Tensor x = F32({1, 2, 3}, {3});
  auto run = [&](const std::string& mode, std::vector<int64_t> pads) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunNode("Pad", {absl::StrCat("name: \"mode\" s: \"", mode, "\"")},
                {x, I64(pads, {2}), F32({9}, {})});
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? ToFloats((*out)[0]) : std::vector<float>{};
  };
  EXPECT_THAT(run("constant", {2, 1}), ElementsAre(9, 9, 1, 2, 3, 9));
  EXPECT_THAT(run("reflect", {2, 2}), ElementsAre(3, 2, 1, 2, 3, 2, 1));
  EXPECT_THAT(run("edge", {2, 1}), ElementsAre(1, 1, 1, 2, 3, 3));
  EXPECT_THAT(run("wrap", {2, 1}), ElementsAre(2, 3, 1, 2, 3, 1));
  EXPECT_THAT(run("constant", {-1, 1}), ElementsAre(2, 3, 9));
}

TEST(PadTest, TwoDimsOldOpsetAndErrors) {
  Tensor x = Iota({2, 2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Pad", {IntsAttr("pads", {1, 0, 0, 1}), "name: \"value\" f: 7"}, {x}, 1, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(3, 3));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(7, 7, 7, 0, 1, 7, 2, 3, 7));
  out = RunNode("Pad", {}, {x, I64({1, 1}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Pad", {}, {x, I64({-3, 0, 0, 0}, {4})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Pad", {"name: \"mode\" s: \"mirror\""}, {x, I64({0, 0, 0, 0}, {4})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Resize / Upsample ----------------------------------------------------------------------

TEST(ResizeTest, NearestAndLinearUpsample) {
  Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Resize", {"name: \"mode\" s: \"nearest\""},
              {x, Tensor(), F32({1, 1, 2, 2}, {4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(1, 1, 4, 4));
  EXPECT_THAT(ToFloats((*out)[0]),
              ElementsAre(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4));
  out = RunNode("Resize",
                {"name: \"mode\" s: \"linear\"",
                 "name: \"coordinate_transformation_mode\" s: \"align_corners\""},
                {x, Tensor(), Tensor(), I64({1, 1, 3, 3}, {4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4));
}

TEST(ResizeTest, AntialiasAxesAndAspectRatio) {
  Tensor x = F32({1, 2, 3, 4}, {1, 1, 4});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Resize", {"name: \"mode\" s: \"linear\"", "name: \"antialias\" i: 1"},
              {x, Tensor(), F32({1, 1, 0.5}, {3})}, 1, 18);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1.625, 3.375));
  // Sizes for the last two axes only, scaled uniformly so that neither is exceeded.
  out = RunNode("Resize", {IntsAttr("axes", {2, 3}),
                           "name: \"keep_aspect_ratio_policy\" s: \"not_larger\""},
                {Iota({1, 1, 2, 4}), Tensor(), Tensor(), I64({4, 4}, {2})}, 1, 18);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(1, 1, 2, 4));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  // tf_crop_and_resize outside the input takes the extrapolation value.
  out = RunNode("Resize",
                {"name: \"mode\" s: \"linear\"",
                 "name: \"coordinate_transformation_mode\" s: \"tf_crop_and_resize\"",
                 "name: \"extrapolation_value\" f: 9"},
                {F32({1, 2}, {2}), F32({0.5, 1.5}, {2}), Tensor(), I64({3}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1.5, 2, 9));
}

TEST(ResizeTest, AspectRatioPolicyBoundsTheOtherAxes) {
  // not_smaller scales every axis by the largest ratio: 2^62 on a 1-long axis makes the
  // 16-long one 2^66, past int64 (undefined to convert): INVALID_ARGUMENT naming the axis.
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Resize", {IntsAttr("axes", {2, 3}),
                         "name: \"keep_aspect_ratio_policy\" s: \"not_smaller\""},
              {Iota({1, 1, 16, 1}), Tensor(), Tensor(), I64({1, int64_t{1} << 62}, {2})}, 1, 18);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("make axis 2"));
}

TEST(ResizeTest, UpsampleAndErrors) {
  Tensor x = F32({1, 2}, {1, 2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Upsample", {"name: \"mode\" s: \"nearest\""}, {x, F32({1, 2}, {2})}, 1, 9);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 1, 2, 2));
  // Both scales and sizes.
  out = RunNode("Resize", {}, {x, Tensor(), F32({1, 2}, {2}), I64({1, 4}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Wrong number of scales, non-positive scales, unknown mode.
  out = RunNode("Resize", {}, {x, Tensor(), F32({2}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Resize", {}, {x, Tensor(), F32({1, -2}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("Resize", {"name: \"mode\" s: \"area\""}, {x, Tensor(), F32({1, 2}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Strings cannot be interpolated: UNIMPLEMENTED naming the node.
  Tensor s = Tensor::Allocate(v1::DT_STRING, {2}).value();
  out = RunNode("Resize", {}, {s, Tensor(), F32({2}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(out.status().message(), HasSubstr("Resize"));
}

}  // namespace
}  // namespace graphopt::runtime
