#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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

Tensor Bools(std::vector<bool> values, Shape shape) {
  Tensor t = Tensor::Allocate(v1::DT_BOOL, std::move(shape)).value();
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  return t;
}

std::string IntAttr(const std::string& name, int64_t v) {
  return absl::StrCat("name: \"", name, "\" i: ", v);
}

// --- Gather ---------------------------------------------------------------------------------

TEST(GatherTest, Axis0RowsWithNegativeIndex) {
  auto out = RunNode("Gather", {}, {F32({1, 2, 3, 4, 5, 6}, {3, 2}), I64({2, -3, 1, 1}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 2, 2));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(5, 6, 1, 2, 3, 4, 3, 4));
}

TEST(GatherTest, Axis1ScalarIndexDropsTheDim) {
  auto out = RunNode("Gather", {IntAttr("axis", 1)},
                     {F32({1, 2, 3, 4, 5, 6}, {2, 3}), I32({2}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(3, 6));
}

TEST(GatherTest, OutOfRangeIndexIsRejectedWithItsValue) {
  auto out = RunNode("Gather", {}, {F32({1, 2, 3}, {3}), I64({0, 3}, {2})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("element 1 is 3, out of range"));
}

TEST(GatherTest, FloatIndicesAreRejected) {
  auto out = RunNode("Gather", {}, {F32({1, 2, 3}, {3}), F32({0}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("must be int32 or int64"));
}

// --- GatherElements -------------------------------------------------------------------------

TEST(GatherElementsTest, Axis1) {
  auto out = RunNode("GatherElements", {IntAttr("axis", 1)},
                     {F32({1, 2, 3, 4}, {2, 2}), I64({0, 0, 1, 0}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 1, 4, 3));
}

TEST(GatherElementsTest, SmallerIndicesAndNegativeValues) {
  // data 3x3, indices 2x3 along axis 0.
  auto out = RunNode("GatherElements", {},
                     {F32({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3}), I64({-1, -2, 0, 2, 0, 0}, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(7, 5, 3, 7, 2, 3));
}

TEST(GatherElementsTest, RankMismatchIsRejected) {
  auto out = RunNode("GatherElements", {}, {F32({1, 2, 3, 4}, {2, 2}), I64({0, 1}, {2})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("must be equal"));
}

// --- GatherND -------------------------------------------------------------------------------

TEST(GatherNdTest, FullTuplesAndSlices) {
  const Tensor data = F32({0, 1, 2, 3}, {2, 2});
  auto elems = RunNode("GatherND", {}, {data, I64({0, 0, 1, 1}, {2, 2})});
  ASSERT_TRUE(elems.ok()) << elems.status();
  EXPECT_THAT(ToFloats((*elems)[0]), ElementsAre(0, 3));
  auto rows = RunNode("GatherND", {}, {data, I64({1, 0}, {2, 1})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT((*rows)[0].shape(), ElementsAre(2, 2));
  EXPECT_THAT(ToFloats((*rows)[0]), ElementsAre(2, 3, 0, 1));
}

TEST(GatherNdTest, BatchDims) {
  // data [2,2,2], indices [2,1] with batch_dims 1: one row per batch.
  auto out = RunNode("GatherND", {IntAttr("batch_dims", 1)},
                     {F32({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2}), I64({1, 0}, {2, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 2));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(2, 3, 4, 5));
}

TEST(GatherNdTest, TupleLongerThanRankIsRejected) {
  auto out = RunNode("GatherND", {}, {F32({0, 1}, {2}), I64({0, 0}, {1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("last dim of input 1"));
}

// --- Scatter --------------------------------------------------------------------------------

TEST(ScatterElementsTest, Axis1WithDuplicatesAdd) {
  auto out = RunNode("ScatterElements",
                     {IntAttr("axis", 1), "name: \"reduction\" s: \"add\""},
                     {F32({1, 2, 3, 4, 5}, {1, 5}), I64({1, 1}, {1, 2}), F32({1.1f, 2.1f}, {1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> v = ToFloats((*out)[0]);
  EXPECT_FLOAT_EQ(v[1], 2 + 1.1f + 2.1f);
  EXPECT_FLOAT_EQ(v[0], 1);
}

TEST(ScatterElementsTest, NoneOverwritesAndLeavesInputAlone) {
  const Tensor data = F32({0, 0, 0, 0}, {2, 2});
  auto out = RunNode("ScatterElements", {}, {data, I64({1, 0}, {1, 2}), F32({5, 6}, {1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 6, 5, 0));
  EXPECT_THAT(ToFloats(data), ElementsAre(0, 0, 0, 0));
}

TEST(ScatterElementsTest, IntegerReductionsWrapAround) {
  // Two's complement, as numpy's add.at and multiply.at give; the int64 sum and product
  // overflowed (undefined behaviour) before.
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto add = RunNode("ScatterElements", {"name: \"reduction\" s: \"add\""},
                     {I64({kMax, 0}, {2}), I64({0, 0}, {2}), I64({1, 1}, {2})});
  ASSERT_TRUE(add.ok()) << add.status();
  EXPECT_THAT(ToInts((*add)[0]), ElementsAre(kMin + 1, 0));
  auto mul = RunNode("ScatterND", {"name: \"reduction\" s: \"mul\""},
                     {I64({int64_t{1} << 62, 3}, {2}), I64({0}, {1, 1}), I64({4}, {1})});
  ASSERT_TRUE(mul.ok()) << mul.status();
  EXPECT_THAT(ToInts((*mul)[0]), ElementsAre(0, 3));
}

TEST(ScatterElementsTest, UnknownReductionIsRejected) {
  auto out = RunNode("ScatterElements", {"name: \"reduction\" s: \"avg\""},
                     {F32({0, 0}, {2}), I64({1}, {1}), F32({5}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("'reduction' is 'avg'"));
}

TEST(ScatterNdTest, SlicesWithMulReduction) {
  auto out = RunNode("ScatterND", {"name: \"reduction\" s: \"mul\""},
                     {F32({1, 2, 3, 4}, {2, 2}), I64({1, 1}, {2, 1}), F32({2, 2, 3, 3}, {2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2, 18, 24));
}

TEST(ScatterNdTest, WrongUpdatesShapeIsRejected) {
  auto out = RunNode("ScatterND", {}, {F32({1, 2, 3, 4}, {2, 2}), I64({1}, {1, 1}), F32({2}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("expected [1,2]"));
}

// --- Compress, NonZero ----------------------------------------------------------------------

TEST(CompressTest, AxisAndFlattened) {
  const Tensor x = F32({1, 2, 3, 4, 5, 6}, {3, 2});
  auto rows = RunNode("Compress", {IntAttr("axis", 0)}, {x, Bools({false, true}, {2})});
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_THAT((*rows)[0].shape(), ElementsAre(1, 2));
  EXPECT_THAT(ToFloats((*rows)[0]), ElementsAre(3, 4));
  auto flat = RunNode("Compress", {}, {x, Bools({false, true, false, true, true}, {5})});
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_THAT(ToFloats((*flat)[0]), ElementsAre(2, 4, 5));
}

TEST(NonZeroTest, CoordinatesInRowMajorOrder) {
  auto out = RunNode("NonZero", {}, {F32({1, 0, 0, 2, 3, 0}, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(0, 1, 1, 0, 0, 1));
}

// --- TopK, Unique ---------------------------------------------------------------------------

TEST(TopKTest, LargestAndSmallestWithTies) {
  const Tensor x = F32({3, 1, 3, 2, 5, 0}, {2, 3});
  auto big = RunNode("TopK", {}, {x, I64({2}, {1})}, 2);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_THAT(ToFloats((*big)[0]), ElementsAre(3, 3, 5, 2));
  EXPECT_THAT(ToInts((*big)[1]), ElementsAre(0, 2, 1, 0));
  auto small = RunNode("TopK", {IntAttr("largest", 0), IntAttr("axis", 0)}, {x, I64({1}, {1})}, 2);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_THAT(ToFloats((*small)[0]), ElementsAre(2, 1, 0));
  EXPECT_THAT(ToInts((*small)[1]), ElementsAre(1, 0, 1));
}

TEST(TopKTest, KLargerThanAxisIsRejected) {
  auto out = RunNode("TopK", {}, {F32({1, 2}, {2}), I64({3}, {1})}, 2);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("K is 3"));
}

TEST(UniqueTest, SortedAndUnsorted) {
  const Tensor x = F32({2, 1, 1, 3, 4, 3}, {6});
  auto s = RunNode("Unique", {}, {x}, 4);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(ToFloats((*s)[0]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(ToInts((*s)[1]), ElementsAre(1, 0, 3, 4));
  EXPECT_THAT(ToInts((*s)[2]), ElementsAre(1, 0, 0, 2, 3, 2));
  EXPECT_THAT(ToInts((*s)[3]), ElementsAre(2, 1, 2, 1));
  auto u = RunNode("Unique", {IntAttr("sorted", 0)}, {x}, 4);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_THAT(ToFloats((*u)[0]), ElementsAre(2, 1, 3, 4));
  EXPECT_THAT(ToInts((*u)[1]), ElementsAre(0, 1, 3, 4));
  EXPECT_THAT(ToInts((*u)[2]), ElementsAre(0, 1, 1, 2, 3, 2));
  EXPECT_THAT(ToInts((*u)[3]), ElementsAre(1, 2, 2, 1));
}

TEST(UniqueTest, RowsAlongAxis0) {
  auto out = RunNode("Unique", {IntAttr("axis", 0)}, {F32({1, 0, 0, 1, 1, 0}, {3, 2})}, 4);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 2));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 1, 1, 0));
  EXPECT_THAT(ToInts((*out)[2]), ElementsAre(1, 0, 1));
  EXPECT_THAT(ToInts((*out)[3]), ElementsAre(1, 2));
}

}  // namespace
}  // namespace graphopt::runtime
