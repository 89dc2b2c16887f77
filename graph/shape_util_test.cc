#include "graph/shape_util.h"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

Dim K(int64_t n) { return Dim::Known(n); }
Dim S(const char* s) { return Dim::Symbol(s); }
Dim U() { return Dim::Unknown(); }

std::string Str(const absl::StatusOr<std::optional<Dims>>& s) {
  if (!s.ok()) return std::string(s.status().message());
  return ShapeToString(*s);
}

std::string Str(const absl::StatusOr<Dims>& s) {
  if (!s.ok()) return std::string(s.status().message());
  return ShapeToString(*s);
}

TEST(CheckedArithmeticTest, DetectsOverflow) {
  EXPECT_EQ(CheckedMul(3, 4), 12);
  EXPECT_EQ(CheckedMul(kMax, 2), std::nullopt);
  EXPECT_EQ(CheckedAdd(kMax, 1), std::nullopt);
  EXPECT_EQ(CheckedSub(kMin, 1), std::nullopt);
  EXPECT_EQ(CheckedSub(5, 7), -2);
}

TEST(BroadcastDimTest, KnownSizes) {
  EXPECT_EQ(BroadcastDim(K(3), K(3)), K(3));
  EXPECT_EQ(BroadcastDim(K(1), K(5)), K(5));
  EXPECT_EQ(BroadcastDim(K(5), K(1)), K(5));
  EXPECT_EQ(BroadcastDim(K(0), K(1)), K(0));
  EXPECT_EQ(BroadcastDim(K(2), K(3)), std::nullopt);
  EXPECT_EQ(BroadcastDim(K(0), K(3)), std::nullopt);
}

TEST(BroadcastDimTest, SymbolsAndUnknowns) {
  EXPECT_EQ(BroadcastDim(S("b"), S("b")), S("b"));
  EXPECT_EQ(BroadcastDim(S("b"), K(1)), S("b"));
  EXPECT_EQ(BroadcastDim(K(1), S("b")), S("b"));
  EXPECT_EQ(BroadcastDim(S("b"), K(4)), K(4));
  EXPECT_EQ(BroadcastDim(K(4), S("b")), K(4));
  EXPECT_EQ(BroadcastDim(S("a"), S("b")), U());
  EXPECT_EQ(BroadcastDim(U(), K(1)), U());
  EXPECT_EQ(BroadcastDim(U(), K(7)), K(7));
  EXPECT_EQ(BroadcastDim(U(), S("b")), U());
  EXPECT_EQ(BroadcastDim(U(), U()), U());
}

TEST(BroadcastShapesTest, RightAlignsRanks) {
  EXPECT_EQ(Str(BroadcastShapes({Dims{S("batch"), K(1), K(4)}, Dims{K(3), K(1)}})),
            "[batch,3,4]");
  EXPECT_EQ(Str(BroadcastShapes({Dims{}, Dims{K(2), K(3)}})), "[2,3]");
  EXPECT_EQ(Str(BroadcastShapes({Dims{K(2)}, Dims{K(1)}, Dims{K(1), K(2)}})), "[1,2]");
}

TEST(BroadcastShapesTest, UnknownRankGivesUnknownRank) {
  EXPECT_EQ(Str(BroadcastShapes({Dims{K(2)}, std::nullopt})), "[?..]");
}

TEST(BroadcastShapesTest, MismatchNamesBothShapes) {
  absl::StatusOr<std::optional<Dims>> r =
      BroadcastShapes({Dims{K(2), K(3)}, Dims{K(1)}, Dims{K(4)}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string msg(r.status().message());
  EXPECT_NE(msg.find("[2,3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[4]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("operand 2"), std::string::npos) << msg;
}

TEST(UnidirectionalBroadcastTest, Checks) {
  EXPECT_TRUE(CheckUnidirectionalBroadcast({K(4)}, {K(2), K(4)}).ok());
  EXPECT_TRUE(CheckUnidirectionalBroadcast({K(1), K(4)}, {K(2), K(4)}).ok());
  EXPECT_TRUE(CheckUnidirectionalBroadcast({S("n")}, {K(2), K(4)}).ok());
  EXPECT_FALSE(CheckUnidirectionalBroadcast({K(3)}, {K(2), K(4)}).ok());
  EXPECT_FALSE(CheckUnidirectionalBroadcast({K(1), K(2), K(4)}, {K(2), K(4)}).ok());
}

TEST(MergeEqualDimsTest, PrefersMostInformative) {
  EXPECT_EQ(*MergeEqualDims(S("b"), K(3)), K(3));
  EXPECT_EQ(*MergeEqualDims(U(), S("b")), S("b"));
  EXPECT_EQ(*MergeEqualDims(S("a"), S("b")), U());
  EXPECT_FALSE(MergeEqualDims(K(2), K(3)).ok());
}

TEST(NormalizeAxisTest, RangeAndMessage) {
  EXPECT_EQ(*NormalizeAxis(-1, 3, "attribute 'axis'"), 2);
  EXPECT_EQ(*NormalizeAxis(0, 3, "attribute 'axis'"), 0);
  absl::StatusOr<int64_t> r = NormalizeAxis(3, 3, "attribute 'axis'");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "attribute 'axis' value 3 is out of range for rank 3 (expected [-3, 2])");
  EXPECT_FALSE(NormalizeAxis(-4, 3, "x").ok());
  EXPECT_FALSE(NormalizeAxis(0, 0, "x").ok());
}

TEST(NormalizeAxesTest, RejectsRepeats) {
  EXPECT_EQ(*NormalizeAxes({0, -1}, 3, "a"), (std::vector<int64_t>{0, 2}));
  absl::StatusOr<std::vector<int64_t>> r = NormalizeAxes({2, -1}, 3, "input 'axes'");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("input 'axes'"), std::string::npos);
}

TEST(DimProductTest, KnownSymbolAndUnknown) {
  const Dims d = {S("batch"), K(3), K(4)};
  EXPECT_EQ(DimProduct(d, 1, 3), K(12));
  EXPECT_EQ(DimProduct(d, 0, 1), S("batch"));
  EXPECT_EQ(DimProduct(d, 0, 2), U());
  EXPECT_EQ(DimProduct(d, 3, 3), K(1));
  EXPECT_EQ(DimProduct({S("batch"), K(1)}, 0, 2), S("batch"));
  EXPECT_EQ(DimProduct({K(kMax), K(2)}, 0, 2), U());
}

TEST(ConvOutputDimTest, NotSetWithPadsStridesDilations) {
  // 224 + 3 + 3 - 7 = 223, / 2 = 111, + 1 = 112.
  EXPECT_EQ(*ConvOutputDim(K(224), 7, 2, 1, 3, 3, AutoPad::kNotSet, false), K(112));
  // dilated kernel 5: (10 - 5) / 1 + 1 = 6.
  EXPECT_EQ(*ConvOutputDim(K(10), 3, 1, 2, 0, 0, AutoPad::kNotSet, false), K(6));
  EXPECT_EQ(*ConvOutputDim(K(5), 2, 2, 1, 0, 0, AutoPad::kNotSet, false), K(2));
  EXPECT_EQ(*ConvOutputDim(K(5), 2, 2, 1, 0, 0, AutoPad::kNotSet, true), K(3));
}

TEST(ConvOutputDimTest, CeilModeDropsWindowStartingInPadding) {
  // in 6, k 2, s 2, pads 0/1: span 5 -> ceil(5/2)+1 = 4, but the 4th window starts at 6 >= 6.
  EXPECT_EQ(*ConvOutputDim(K(6), 2, 2, 1, 0, 1, AutoPad::kNotSet, true), K(3));
}

TEST(ConvOutputDimTest, AutoPad) {
  EXPECT_EQ(*ConvOutputDim(K(7), 3, 2, 1, 0, 0, AutoPad::kSameUpper, false), K(4));
  EXPECT_EQ(*ConvOutputDim(K(7), 3, 2, 1, 0, 0, AutoPad::kSameLower, false), K(4));
  EXPECT_EQ(*ConvOutputDim(K(7), 3, 2, 1, 0, 0, AutoPad::kValid, false), K(3));
  EXPECT_FALSE(ConvOutputDim(K(2), 3, 1, 1, 0, 0, AutoPad::kValid, false).ok());
}

TEST(ConvOutputDimTest, SymbolsKeptOnlyWhenSizePreserving) {
  EXPECT_EQ(*ConvOutputDim(S("h"), 3, 1, 1, 1, 1, AutoPad::kNotSet, false), S("h"));
  EXPECT_EQ(*ConvOutputDim(S("h"), 3, 1, 1, 0, 0, AutoPad::kSameUpper, false), S("h"));
  EXPECT_EQ(*ConvOutputDim(S("h"), 3, 2, 1, 1, 1, AutoPad::kNotSet, false), U());
  EXPECT_EQ(*ConvOutputDim(S("h"), 3, 1, 1, 0, 0, AutoPad::kNotSet, false), U());
  EXPECT_EQ(*ConvOutputDim(U(), 1, 1, 1, 0, 0, AutoPad::kNotSet, false), U());
}

TEST(ConvOutputDimTest, RejectsBadParameters) {
  EXPECT_FALSE(ConvOutputDim(K(8), 0, 1, 1, 0, 0, AutoPad::kNotSet, false).ok());
  EXPECT_FALSE(ConvOutputDim(K(8), 3, 0, 1, 0, 0, AutoPad::kNotSet, false).ok());
  EXPECT_FALSE(ConvOutputDim(K(8), 3, 1, 0, 0, 0, AutoPad::kNotSet, false).ok());
  EXPECT_FALSE(ConvOutputDim(K(8), 3, 1, 1, -1, 0, AutoPad::kNotSet, false).ok());
  EXPECT_FALSE(ConvOutputDim(K(1), 5, 1, 1, 0, 0, AutoPad::kNotSet, false).ok());
  // Overflowing window arithmetic is unknown, not a crash.
  EXPECT_EQ(*ConvOutputDim(K(8), kMax, 1, kMax, 0, 0, AutoPad::kNotSet, false), U());
  EXPECT_EQ(*ConvOutputDim(K(8), 2, 1, kMax, 0, 0, AutoPad::kNotSet, false), U());
  EXPECT_EQ(*ConvOutputDim(K(8), 1, 1, 1, kMax, 1, AutoPad::kNotSet, false), U());
}

TEST(ParseAutoPadTest, Values) {
  EXPECT_EQ(*ParseAutoPad(""), AutoPad::kNotSet);
  EXPECT_EQ(*ParseAutoPad("SAME_LOWER"), AutoPad::kSameLower);
  EXPECT_FALSE(ParseAutoPad("SAME").ok());
}

TEST(MatMulShapeTest, Promotion) {
  EXPECT_EQ(Str(MatMulShape(Dims{K(3)}, Dims{K(3)})), "[]");
  EXPECT_EQ(Str(MatMulShape(Dims{K(3)}, Dims{K(3), K(5)})), "[5]");
  EXPECT_EQ(Str(MatMulShape(Dims{K(2), K(3)}, Dims{K(3)})), "[2]");
  EXPECT_EQ(Str(MatMulShape(Dims{S("b"), K(7), K(2), K(3)}, Dims{K(3), K(5)})), "[b,7,2,5]");
  EXPECT_EQ(Str(MatMulShape(Dims{K(4), K(1), K(2), K(3)}, Dims{K(6), K(3), K(5)})),
            "[4,6,2,5]");
  EXPECT_EQ(Str(MatMulShape(Dims{K(2), K(3)}, std::nullopt)), "[?..]");
}

TEST(MatMulShapeTest, Errors) {
  EXPECT_FALSE(MatMulShape(Dims{K(2), K(3)}, Dims{K(4), K(5)}).ok());
  EXPECT_FALSE(MatMulShape(Dims{}, Dims{K(4), K(5)}).ok());
  EXPECT_FALSE(MatMulShape(Dims{K(2), K(2), K(3)}, Dims{K(3), K(3), K(5)}).ok());
  // Symbolic inner dims are accepted.
  EXPECT_TRUE(MatMulShape(Dims{K(2), S("k")}, Dims{K(4), K(5)}).ok());
}

TEST(ReshapeOutputDimsTest, ZeroAndMinusOne) {
  EXPECT_EQ(Str(ReshapeOutputDims(Dims{K(2), K(3), K(4)}, {K(0), K(-1)}, false)), "[2,12]");
  EXPECT_EQ(Str(ReshapeOutputDims(Dims{S("batch"), K(3), K(4)}, {S("batch"), K(-1)}, false)),
            "[batch,12]");
  EXPECT_EQ(Str(ReshapeOutputDims(Dims{S("batch"), K(3), K(4)}, {K(0), K(-1)}, false)),
            "[batch,12]");
  EXPECT_EQ(Str(ReshapeOutputDims(Dims{S("batch"), K(12)}, {K(-1), K(3), K(4)}, false)),
            "[batch,3,4]");
  EXPECT_EQ(Str(ReshapeOutputDims(Dims{S("batch"), K(12)}, {K(-1), K(4)}, false)), "[?,4]");
  EXPECT_EQ(Str(ReshapeOutputDims(Dims{U(), K(12)}, {K(-1)}, false)), "[?]");
  EXPECT_EQ(Str(ReshapeOutputDims(std::nullopt, {K(2), K(-1)}, false)), "[2,?]");
}

TEST(ReshapeOutputDimsTest, AllowZero) {
  EXPECT_EQ(Str(ReshapeOutputDims(Dims{K(0), K(3)}, {K(3), K(0)}, true)), "[3,0]");
  EXPECT_FALSE(ReshapeOutputDims(Dims{K(0), K(3)}, {K(0), K(-1)}, true).ok());
}

TEST(ReshapeOutputDimsTest, Errors) {
  EXPECT_FALSE(ReshapeOutputDims(Dims{K(2), K(3)}, {K(-1), K(-1)}, false).ok());
  EXPECT_FALSE(ReshapeOutputDims(Dims{K(2), K(3)}, {K(4), K(2)}, false).ok());
  EXPECT_FALSE(ReshapeOutputDims(Dims{K(2), K(3)}, {K(4), K(-1)}, false).ok());
  EXPECT_FALSE(ReshapeOutputDims(Dims{K(6)}, {K(1), K(0)}, false).ok());
  EXPECT_FALSE(ReshapeOutputDims(Dims{K(6)}, {K(-2), K(3)}, false).ok());
  EXPECT_FALSE(ReshapeOutputDims(Dims{S("b"), K(2)}, {S("b"), K(3)}, false).ok());
  // Symbols that do not cancel cannot be judged.
  EXPECT_TRUE(ReshapeOutputDims(Dims{S("b"), K(2)}, {S("c"), K(3)}, false).ok());
}

TEST(SliceTest, KnownRanges) {
  EXPECT_EQ(SliceDim(K(10), 2, 5, 1), K(3));
  EXPECT_EQ(SliceDim(K(10), -3, kMax, 1), K(3));
  EXPECT_EQ(SliceDim(K(10), 0, 10, 3), K(4));
  EXPECT_EQ(SliceDim(K(10), -1, kMin, -1), K(10));
  EXPECT_EQ(SliceDim(K(10), 8, 2, -2), K(3));
  EXPECT_EQ(SliceDim(K(10), 5, 2, 1), K(0));
  EXPECT_EQ(SliceDim(K(10), 0, 10, kMax), K(1));
  EXPECT_EQ(SliceDim(K(10), 9, -11, kMin), K(1));
  SliceRange r = ComputeSliceRange(5, -1, kMin, -2);
  EXPECT_EQ(r.first, 4);
  EXPECT_EQ(r.count, 3);
}

TEST(SliceTest, Symbols) {
  EXPECT_EQ(SliceDim(S("n"), 0, kMax, 1), S("n"));
  EXPECT_EQ(SliceDim(S("n"), -1, kMin, -1), S("n"));
  EXPECT_EQ(SliceDim(S("n"), 1, kMax, 1), U());
  EXPECT_EQ(SliceDim(S("n"), 0, kMax, 2), U());
  EXPECT_EQ(SliceDim(U(), 0, kMax, 1), U());
}

}  // namespace
}  // namespace graphopt
