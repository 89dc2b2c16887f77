#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

Tensor I32(std::vector<int32_t> values, Shape shape) {
  return Tensor::FromVector<int32_t>(v1::DT_INT32, values, std::move(shape));
}

Tensor Bool(bool v) { return Tensor::FromVector<bool>(v1::DT_BOOL, {v}, {}); }

// --- Constant -------------------------------------------------------------------------------

TEST(ConstantTest, TensorValue) {
  // int64 [2] = {1, 2} as raw little-endian bytes.
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "Constant",
      {R"(name: "value" t { dtype: DT_INT64 dims: 2
          raw_data: "\001\000\000\000\000\000\000\000\002\000\000\000\000\000\000\000" })"},
      {});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2}));
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(1, 2));
}

TEST(ConstantTest, ScalarAndListForms) {
  absl::StatusOr<std::vector<Tensor>> f = RunNode("Constant", {R"(name: "value_float" f: 2.5)"}, {});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)[0].rank(), 0);
  EXPECT_THAT(ToFloats((*f)[0]), ElementsAre(2.5f));

  absl::StatusOr<std::vector<Tensor>> fs =
      RunNode("Constant", {R"(name: "value_floats" floats { values: 1 values: 2 })"}, {});
  ASSERT_TRUE(fs.ok()) << fs.status();
  EXPECT_EQ((*fs)[0].shape(), Shape({2}));

  absl::StatusOr<std::vector<Tensor>> i = RunNode("Constant", {R"(name: "value_int" i: 7)"}, {});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_EQ((*i)[0].dtype(), v1::DT_INT64);
  EXPECT_THAT(ToInts((*i)[0]), ElementsAre(7));

  absl::StatusOr<std::vector<Tensor>> is =
      RunNode("Constant", {R"(name: "value_ints" ints { values: 3 values: 4 values: 5 })"}, {});
  ASSERT_TRUE(is.ok()) << is.status();
  EXPECT_THAT(ToInts((*is)[0]), ElementsAre(3, 4, 5));

  absl::StatusOr<std::vector<Tensor>> ss =
      RunNode("Constant", {R"(name: "value_strings" strings { values: "a" values: "bc" })"}, {});
  ASSERT_TRUE(ss.ok()) << ss.status();
  ASSERT_EQ((*ss)[0].dtype(), v1::DT_STRING);
  EXPECT_EQ((*ss)[0].strings()[1], "bc");

  absl::StatusOr<std::vector<Tensor>> s = RunNode("Constant", {R"(name: "value_string" s: "x")"}, {});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0].rank(), 0);
  EXPECT_EQ((*s)[0].strings()[0], "x");
}

TEST(ConstantTest, RejectsNoneOrSeveralValues) {
  absl::StatusOr<std::vector<Tensor>> none = RunNode("Constant", {}, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<Tensor>> two =
      RunNode("Constant", {R"(name: "value_int" i: 1)", R"(name: "value_float" f: 1)"}, {});
  ASSERT_FALSE(two.ok());
  EXPECT_THAT(two.status().message(), HasSubstr("value_float"));
  absl::StatusOr<std::vector<Tensor>> kind = RunNode("Constant", {R"(name: "value" i: 1)"}, {});
  ASSERT_FALSE(kind.ok());
  EXPECT_EQ(kind.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<Tensor>> sparse = RunNode(
      "Constant", {R"(name: "sparse_value" opaque { kind: "onnx.SparseTensorProto" })"}, {});
  ASSERT_FALSE(sparse.ok());
  EXPECT_EQ(sparse.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(sparse.status().message(), HasSubstr("Constant"));
}

// --- Shape, Size ----------------------------------------------------------------------------

TEST(ShapeTest, StartEnd) {
  Tensor x = F32(std::vector<float>(24, 0), {2, 3, 4});
  absl::StatusOr<std::vector<Tensor>> all = RunNode("Shape", {}, {x});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(ToInts((*all)[0]), ElementsAre(2, 3, 4));
  absl::StatusOr<std::vector<Tensor>> part =
      RunNode("Shape", {R"(name: "start" i: -2)", R"(name: "end" i: 10)"}, {x});
  ASSERT_TRUE(part.ok()) << part.status();
  EXPECT_THAT(ToInts((*part)[0]), ElementsAre(3, 4));
  absl::StatusOr<std::vector<Tensor>> empty =
      RunNode("Shape", {R"(name: "start" i: 2)", R"(name: "end" i: 1)"}, {x});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].num_elements(), 0);
}

TEST(SizeTest, CountsElements) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Size", {}, {F32({1, 2, 3, 4, 5, 6}, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].rank(), 0);
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(6));
}

// --- Reshape and friends --------------------------------------------------------------------

TEST(ReshapeTest, ZeroCopiesAndMinusOneInfers) {
  Tensor x = F32(std::vector<float>(24, 1), {2, 3, 4});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Reshape", {}, {x, I64({0, -1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 12}));
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());  // a view
}

TEST(ReshapeTest, AllowZeroKeepsZero) {
  Tensor x = F32({}, {0, 3});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Reshape", {R"(name: "allowzero" i: 1)"}, {x, I64({3, 0}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3, 0}));
}

TEST(ReshapeTest, OldOpsetUsesAttribute) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {6});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Reshape", {R"(name: "shape" ints { values: 3 values: 2 })"}, {x}, 1, 4);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3, 2}));
}

TEST(ReshapeTest, RejectsBadShapes) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {6});
  for (const std::vector<int64_t>& spec :
       std::vector<std::vector<int64_t>>{{4, 2}, {-1, -1}, {-2, 3}, {1, 0}, {5, -1}}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunNode("Reshape", {}, {x, I64(spec, {static_cast<int64_t>(spec.size())})});
    ASSERT_FALSE(out.ok()) << ShapeString(spec);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_FALSE(RunNode("Reshape", {}, {x}).ok());
}

TEST(FlattenTest, Axes) {
  Tensor x = F32(std::vector<float>(24, 1), {2, 3, 4});
  absl::StatusOr<std::vector<Tensor>> a0 = RunNode("Flatten", {R"(name: "axis" i: 0)"}, {x});
  ASSERT_TRUE(a0.ok()) << a0.status();
  EXPECT_EQ((*a0)[0].shape(), Shape({1, 24}));
  absl::StatusOr<std::vector<Tensor>> a3 = RunNode("Flatten", {R"(name: "axis" i: 3)"}, {x});
  ASSERT_TRUE(a3.ok()) << a3.status();
  EXPECT_EQ((*a3)[0].shape(), Shape({24, 1}));
  absl::StatusOr<std::vector<Tensor>> neg = RunNode("Flatten", {R"(name: "axis" i: -1)"}, {x});
  ASSERT_TRUE(neg.ok()) << neg.status();
  EXPECT_EQ((*neg)[0].shape(), Shape({6, 4}));
  EXPECT_FALSE(RunNode("Flatten", {R"(name: "axis" i: 4)"}, {x}).ok());
}

TEST(SqueezeTest, AxesInputAndAttribute) {
  Tensor x = F32({1, 2, 3}, {1, 3, 1});
  absl::StatusOr<std::vector<Tensor>> all = RunNode("Squeeze", {}, {x});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)[0].shape(), Shape({3}));
  absl::StatusOr<std::vector<Tensor>> one = RunNode("Squeeze", {}, {x, I64({-1}, {1})});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)[0].shape(), Shape({1, 3}));
  absl::StatusOr<std::vector<Tensor>> old =
      RunNode("Squeeze", {R"(name: "axes" ints { values: 0 })"}, {x}, 1, 11);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ((*old)[0].shape(), Shape({3, 1}));
  absl::StatusOr<std::vector<Tensor>> bad = RunNode("Squeeze", {}, {x, I64({1}, {1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("not 1"));
  EXPECT_FALSE(RunNode("Squeeze", {}, {x, I64({3}, {1})}).ok());
}

TEST(UnsqueezeTest, NegativeAxesCountInTheOutput) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Unsqueeze", {}, {x, I64({-1, 0}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 2, 3, 1}));
  absl::StatusOr<std::vector<Tensor>> old =
      RunNode("Unsqueeze", {R"(name: "axes" ints { values: 1 })"}, {x}, 1, 11);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ((*old)[0].shape(), Shape({2, 1, 3}));
  EXPECT_FALSE(RunNode("Unsqueeze", {}, {x, I64({0, 0}, {2})}).ok());
  EXPECT_FALSE(RunNode("Unsqueeze", {}, {x, I64({3}, {1})}).ok());
  EXPECT_FALSE(RunNode("Unsqueeze", {}, {x}).ok());
}

// --- Expand, Dropout, ConstantOfShape -------------------------------------------------------

TEST(ExpandTest, BroadcastsBothWays) {
  Tensor x = F32({1, 2, 3}, {3, 1});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Expand", {}, {x, I64({2, 1, 2}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 3, 2}));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3));
  absl::StatusOr<std::vector<Tensor>> same = RunNode("Expand", {}, {x, I64({1}, {1})});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ((*same)[0].shape(), Shape({3, 1}));
  absl::StatusOr<std::vector<Tensor>> bad = RunNode("Expand", {}, {x, I64({2, 2}, {2})});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(RunNode("Expand", {}, {x, I64({-1}, {1})}).ok());
}

TEST(DropoutTest, InferenceIsIdentityWithTrueMask) {
  Tensor x = F32({1, 2, 3}, {3});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Dropout", {}, {x}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].raw_data(), x.raw_data());
  ASSERT_EQ((*out)[1].dtype(), v1::DT_BOOL);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE((*out)[1].data<bool>()[i]);
}

TEST(DropoutTest, TrainingDropsAndScales) {
  Tensor x = F32(std::vector<float>(1000, 1.0f), {1000});
  Tensor r = F32({0.5f}, {});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Dropout", {R"(name: "seed" i: 0)"}, {x, r, Bool(true)}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  int kept = 0;
  const std::vector<float> y = ToFloats((*out)[0]);
  for (int i = 0; i < 1000; ++i) {
    const bool m = (*out)[1].data<bool>()[i];
    kept += m;
    EXPECT_EQ(y[i], m ? 2.0f : 0.0f);
  }
  EXPECT_GT(kept, 400);
  EXPECT_LT(kept, 600);
  EXPECT_FALSE(RunNode("Dropout", {}, {x, F32({1.5f}, {}), Bool(true)}).ok());
  EXPECT_FALSE(RunNode("Dropout", {}, {x, r, F32({1}, {})}).ok());
}

TEST(ConstantOfShapeTest, ValueAndDefault) {
  absl::StatusOr<std::vector<Tensor>> def = RunNode("ConstantOfShape", {}, {I64({2, 3}, {2})});
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ((*def)[0].dtype(), v1::DT_FLOAT32);
  EXPECT_THAT(ToFloats((*def)[0]), ElementsAre(0, 0, 0, 0, 0, 0));
  absl::StatusOr<std::vector<Tensor>> v = RunNode(
      "ConstantOfShape",
      {R"(name: "value" t { dtype: DT_INT64 dims: 1 raw_data: "\007\000\000\000\000\000\000\000" })"},
      {I64({2}, {1})});
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_THAT(ToInts((*v)[0]), ElementsAre(7, 7));
  absl::StatusOr<std::vector<Tensor>> scalar = RunNode("ConstantOfShape", {}, {I64({}, {0})});
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ((*scalar)[0].rank(), 0);
  EXPECT_FALSE(RunNode("ConstantOfShape", {}, {I64({-2}, {1})}).ok());
}

// --- Range, EyeLike, Tile, Trilu, CumSum, OneHot --------------------------------------------

TEST(RangeTest, IntAndFloat) {
  absl::StatusOr<std::vector<Tensor>> i =
      RunNode("Range", {}, {I32({10}, {}), I32({4}, {}), I32({-3}, {})});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_THAT(ToInts((*i)[0]), ElementsAre(10, 7));
  absl::StatusOr<std::vector<Tensor>> f =
      RunNode("Range", {}, {F32({1}, {}), F32({2}, {}), F32({0.25f}, {})});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_THAT(ToFloats((*f)[0]), ElementsAre(1, 1.25f, 1.5f, 1.75f));
  absl::StatusOr<std::vector<Tensor>> empty =
      RunNode("Range", {}, {I64({5}, {}), I64({1}, {}), I64({1}, {})});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ((*empty)[0].num_elements(), 0);
  absl::StatusOr<std::vector<Tensor>> wide = RunNode(
      "Range", {}, {I32({INT32_MIN}, {}), I32({INT32_MAX}, {}), I32({1 << 30}, {})});
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_THAT(ToInts((*wide)[0]), ElementsAre(INT32_MIN, -(1 << 30), 0, 1 << 30));
  EXPECT_FALSE(RunNode("Range", {}, {I64({0}, {}), I64({1}, {}), I64({0}, {})}).ok());
  EXPECT_FALSE(RunNode("Range", {}, {I64({0}, {}), I32({1}, {}), I64({1}, {})}).ok());
}

TEST(EyeLikeTest, OffDiagonalAndDtype) {
  Tensor x = F32(std::vector<float>(6, 0), {2, 3});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("EyeLike", {R"(name: "k" i: 1)", R"(name: "dtype" i: 7)"}, {x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), v1::DT_INT64);
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(0, 1, 0, 0, 0, 1));
  EXPECT_FALSE(RunNode("EyeLike", {}, {F32({1, 2}, {2})}).ok());
}

TEST(EyeLikeTest, ExtremeKIsOffTheMatrix) {
  // i + k overflowed (undefined behaviour) for k near the int64 limits.
  Tensor x = F32(std::vector<float>(6, 0), {2, 3});
  for (const char* k : {R"(name: "k" i: 9223372036854775807)",
                        R"(name: "k" i: -9223372036854775808)"}) {
    absl::StatusOr<std::vector<Tensor>> out = RunNode("EyeLike", {k}, {x});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 0, 0, 0, 0, 0)) << k;
  }
}

TEST(TileTest, RepeatsEachDim) {
  Tensor x = F32({1, 2, 3, 4}, {2, 2});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Tile", {}, {x, I64({2, 2}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({4, 4}));
  EXPECT_THAT(ToFloats((*out)[0]),
              ElementsAre(1, 2, 1, 2, 3, 4, 3, 4, 1, 2, 1, 2, 3, 4, 3, 4));
  EXPECT_FALSE(RunNode("Tile", {}, {x, I64({2}, {1})}).ok());
  EXPECT_FALSE(RunNode("Tile", {}, {x, I64({2, -1}, {2})}).ok());
}

TEST(TriluTest, UpperLowerAndK) {
  Tensor x = F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  absl::StatusOr<std::vector<Tensor>> up = RunNode("Trilu", {}, {x});
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_THAT(ToFloats((*up)[0]), ElementsAre(1, 2, 3, 0, 5, 6, 0, 0, 9));
  absl::StatusOr<std::vector<Tensor>> low =
      RunNode("Trilu", {R"(name: "upper" i: 0)"}, {x, I64({-1}, {})});
  ASSERT_TRUE(low.ok()) << low.status();
  EXPECT_THAT(ToFloats((*low)[0]), ElementsAre(0, 0, 0, 4, 0, 0, 7, 8, 0));
  absl::StatusOr<std::vector<Tensor>> far = RunNode("Trilu", {}, {x, I64({5}, {})});
  ASSERT_TRUE(far.ok()) << far.status();
  EXPECT_THAT(ToFloats((*far)[0]), ElementsAre(0, 0, 0, 0, 0, 0, 0, 0, 0));
  EXPECT_FALSE(RunNode("Trilu", {}, {F32({1, 2}, {2})}).ok());
}

TEST(TriluTest, ExtremeK) {
  // i + k overflowed (undefined behaviour) for k near the int64 limits; numpy's triu/tril with
  // such k keep everything or nothing.
  Tensor x = F32({1, 2, 3, 4}, {2, 2});
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Trilu", {}, {x, I64({kMax}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 0, 0, 0));
  out = RunNode("Trilu", {}, {x, I64({kMin}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2, 3, 4));
  out = RunNode("Trilu", {R"(name: "upper" i: 0)"}, {x, I64({kMax}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2, 3, 4));
  out = RunNode("Trilu", {R"(name: "upper" i: 0)"}, {x, I64({kMin}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 0, 0, 0));
}

TEST(CumSumTest, ExclusiveReverseAxis) {
  Tensor x = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  absl::StatusOr<std::vector<Tensor>> a1 = RunNode("CumSum", {}, {x, I32({1}, {})});
  ASSERT_TRUE(a1.ok()) << a1.status();
  EXPECT_THAT(ToFloats((*a1)[0]), ElementsAre(1, 3, 6, 4, 9, 15));
  absl::StatusOr<std::vector<Tensor>> a0 = RunNode(
      "CumSum", {R"(name: "exclusive" i: 1)", R"(name: "reverse" i: 1)"}, {x, I64({-2}, {})});
  ASSERT_TRUE(a0.ok()) << a0.status();
  EXPECT_THAT(ToFloats((*a0)[0]), ElementsAre(4, 5, 6, 0, 0, 0));
  EXPECT_FALSE(RunNode("CumSum", {}, {x, I64({2}, {})}).ok());
  EXPECT_FALSE(RunNode("CumSum", {}, {x}).ok());
}

TEST(CumSumTest, IntegerSumsWrapAround) {
  // Two's complement, as numpy's cumsum gives; signed overflow (undefined behaviour) before.
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("CumSum", {}, {I64({kMax, 1, kMin}, {3}), I64({0}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(kMax, kMin, 0));
  out = RunNode("CumSum", {R"(name: "exclusive" i: 1)", R"(name: "reverse" i: 1)"},
                {I32({1, INT32_MAX, INT32_MAX}, {3}), I64({0}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(-2, INT32_MAX, 0));
}

TEST(OneHotTest, AxisAndNegativeIndices) {
  Tensor indices = I64({0, -1, 5}, {3});
  Tensor values = F32({0, 1}, {2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("OneHot", {}, {indices, F32({3}, {}), values});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({3, 3}));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 0, 0, 0, 0, 1, 0, 0, 0));
  absl::StatusOr<std::vector<Tensor>> ax0 =
      RunNode("OneHot", {R"(name: "axis" i: 0)"}, {indices, I64({3}, {}), values});
  ASSERT_TRUE(ax0.ok()) << ax0.status();
  EXPECT_THAT(ToFloats((*ax0)[0]), ElementsAre(1, 0, 0, 0, 0, 0, 0, 1, 0));
  EXPECT_FALSE(RunNode("OneHot", {}, {indices, I64({0}, {}), values}).ok());
  EXPECT_FALSE(RunNode("OneHot", {}, {indices, I64({3}, {}), F32({1}, {1})}).ok());
  EXPECT_FALSE(RunNode("OneHot", {R"(name: "axis" i: 2)"}, {indices, I64({3}, {}), values}).ok());
}

}  // namespace
}  // namespace graphopt::runtime
