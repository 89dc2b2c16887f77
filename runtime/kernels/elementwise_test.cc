#include <cmath>
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
using ::testing::FloatNear;
using ::testing::Pointwise;
using ::testing::HasSubstr;

template <typename T>
Tensor Make(v1::DataType dtype, std::vector<T> values, Shape shape) {
  return Tensor::FromVector<T>(dtype, values, std::move(shape));
}

Tensor Bools(std::vector<bool> values, Shape shape) {
  Tensor t = Tensor::Allocate(v1::DT_BOOL, std::move(shape)).value();
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  return t;
}

Tensor Strings(std::vector<std::string> values, Shape shape) {
  Tensor t = Tensor::Allocate(v1::DT_STRING, std::move(shape)).value();
  for (size_t i = 0; i < values.size(); ++i) t.strings()[i] = values[i];
  return t;
}

std::vector<bool> ToBools(const Tensor& t) {
  std::vector<bool> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.data<bool>()[i]);
  return out;
}

// --- Binary arithmetic --------------------------------------------------------------------

TEST(ArithmeticTest, AddBroadcastsARow) {
  auto r = RunNode("Add", {}, {F32({1, 2, 3, 4, 5, 6}, {2, 3}), F32({10, 20, 30}, {3})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(ToFloats((*r)[0]), ElementsAre(11, 22, 33, 14, 25, 36));
}

TEST(ArithmeticTest, SubMulDivBroadcastAColumn) {
  const Tensor a = F32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor b = F32({2, 4}, {2, 1});
  auto sub = RunNode("Sub", {}, {a, b});
  auto mul = RunNode("Mul", {}, {a, b});
  auto div = RunNode("Div", {}, {a, b});
  ASSERT_TRUE(sub.ok() && mul.ok() && div.ok());
  EXPECT_THAT(ToFloats((*sub)[0]), ElementsAre(-1, 0, 1, 0, 1, 2));
  EXPECT_THAT(ToFloats((*mul)[0]), ElementsAre(2, 4, 6, 16, 20, 24));
  EXPECT_THAT(ToFloats((*div)[0]), ElementsAre(0.5, 1, 1.5, 1, 1.25, 1.5));
}

TEST(ArithmeticTest, LargeAddUsesThreads) {
  const int64_t n = 1 << 18;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  auto r = RunNode("Add", {}, {F32(x, {n}), F32(y, {n})}, 1, 0, /*num_threads=*/4);
  ASSERT_TRUE(r.ok()) << r.status();
  const float* p = (*r)[0].data<float>();
  for (int64_t i = 0; i < n; i += 4099) ASSERT_EQ(p[i], static_cast<float>(i + 1));
}

TEST(ArithmeticTest, IntegerDivisionTruncatesAndNeverTraps) {
  const int32_t min = std::numeric_limits<int32_t>::min();
  auto r = RunNode("Div", {},
                   {Make<int32_t>(v1::DT_INT32, {7, -7, 5, min}, {4}),
                    Make<int32_t>(v1::DT_INT32, {2, 2, 0, -1}, {4})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ToInts((*r)[0]), ElementsAre(3, -3, 0, min));
}

TEST(ArithmeticTest, IntegerAddWraps) {
  auto r = RunNode("Add", {}, {Make<uint8_t>(v1::DT_UINT8, {250, 1}, {2}),
                               Make<uint8_t>(v1::DT_UINT8, {10, 2}, {2})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ToInts((*r)[0]), ElementsAre(4, 3));
}

TEST(ArithmeticTest, ModFollowsTheDivisorSignUnlessFmod) {
  const Tensor x = I64({-4, 4, -4, 4, 5}, {5});
  const Tensor y = I64({3, -3, -3, 3, 0}, {5});
  auto mod = RunNode("Mod", {}, {x, y});
  auto fmod = RunNode("Mod", {"name: \"fmod\" i: 1"}, {x, y});
  ASSERT_TRUE(mod.ok() && fmod.ok());
  EXPECT_THAT(ToInts((*mod)[0]), ElementsAre(2, -2, -1, 1, 0));
  EXPECT_THAT(ToInts((*fmod)[0]), ElementsAre(-1, 1, -1, 1, 0));
  auto f = RunNode("Mod", {"name: \"fmod\" i: 1"}, {F32({-4.5f, 4.5f}, {2}), F32({2, -2}, {2})});
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(ToFloats((*f)[0]), ElementsAre(-0.5, 0.5));
}

TEST(ArithmeticTest, FloatModWithoutFmodIsInvalid) {
  auto r = RunNode("Mod", {}, {F32({1}, {1}), F32({2}, {1})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("fmod"));
}

TEST(ArithmeticTest, PowTakesAnExponentOfAnotherType) {
  auto r = RunNode("Pow", {}, {F32({2, 3, 4}, {3}), I64({3, 2, -1}, {3})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].dtype(), v1::DT_FLOAT32);
  EXPECT_THAT(ToFloats((*r)[0]), ElementsAre(8, 9, 0.25));
  auto i = RunNode("Pow", {}, {I64({2, 3}, {2}), F32({10, 0.5f}, {2})});
  ASSERT_TRUE(i.ok()) << i.status();
  EXPECT_THAT(ToInts((*i)[0]), ElementsAre(1024, 1));
}

TEST(ArithmeticTest, PowSquareMatchesPowf) {
  const std::vector<float> x = {-3.5f, 0.0f, 1e-20f, 1.7e19f, 1e20f, 2.25f};
  auto r = RunNode("Pow", {}, {F32(x, {6}), F32({2.0f}, {})});
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<float> got = ToFloats((*r)[0]);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], std::pow(x[i], 2.0f)) << x[i];
}

TEST(ArithmeticTest, BitShift) {
  const Tensor x = Make<uint8_t>(v1::DT_UINT8, {16, 4, 1}, {3});
  const Tensor s = Make<uint8_t>(v1::DT_UINT8, {1, 2, 9}, {3});
  auto left = RunNode("BitShift", {"name: \"direction\" s: \"LEFT\""}, {x, s});
  auto right = RunNode("BitShift", {"name: \"direction\" s: \"RIGHT\""}, {x, s});
  ASSERT_TRUE(left.ok() && right.ok());
  EXPECT_THAT(ToInts((*left)[0]), ElementsAre(32, 16, 0));
  EXPECT_THAT(ToInts((*right)[0]), ElementsAre(8, 1, 0));
  auto bad = RunNode("BitShift", {"name: \"direction\" s: \"UP\""}, {x, s});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ArithmeticTest, LegacyBroadcastAlignsAtAxis) {
  std::vector<float> x(24, 1.0f);
  auto r = RunNode("Add", {"name: \"broadcast\" i: 1", "name: \"axis\" i: 1"},
                   {F32(x, {2, 3, 4}), F32({10, 20, 30}, {3})}, 1, /*opset=*/6);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), Shape({2, 3, 4}));
  EXPECT_EQ((*r)[0].data<float>()[4], 21.0f);
  EXPECT_EQ((*r)[0].data<float>()[23], 31.0f);
}

TEST(ArithmeticTest, BadInputsAreInvalid) {
  auto shapes = RunNode("Add", {}, {F32({1, 2, 3}, {3}), F32({1, 2}, {2})});
  EXPECT_EQ(shapes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shapes.status().message(), HasSubstr("broadcast"));
  auto types = RunNode("Mul", {}, {F32({1}, {1}), I64({1}, {1})});
  EXPECT_EQ(types.status().code(), absl::StatusCode::kInvalidArgument);
  auto missing = RunNode("Sub", {}, {F32({1}, {1}), Tensor()});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  auto strings = RunNode("Add", {}, {Strings({"a"}, {1}), Strings({"b"}, {1})});
  EXPECT_EQ(strings.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(strings.status().message(), HasSubstr("Add"));
}

// --- Comparisons, logic, Where, variadic --------------------------------------------------

TEST(LogicTest, ComparisonsGiveBool) {
  const Tensor a = F32({1, 2, 3}, {3});
  const Tensor b = F32({2}, {1});
  auto less = RunNode("Less", {}, {a, b});
  auto ge = RunNode("GreaterOrEqual", {}, {a, b});
  auto eq = RunNode("Equal", {}, {I64({1, 2}, {2}), I64({2, 2}, {2})});
  ASSERT_TRUE(less.ok() && ge.ok() && eq.ok());
  EXPECT_EQ((*less)[0].dtype(), v1::DT_BOOL);
  EXPECT_THAT(ToBools((*less)[0]), ElementsAre(true, false, false));
  EXPECT_THAT(ToBools((*ge)[0]), ElementsAre(false, true, true));
  EXPECT_THAT(ToBools((*eq)[0]), ElementsAre(false, true));
  auto str = RunNode("Equal", {}, {Strings({"a", "b"}, {2}), Strings({"b"}, {1})});
  ASSERT_TRUE(str.ok()) << str.status();
  EXPECT_THAT(ToBools((*str)[0]), ElementsAre(false, true));
}

TEST(LogicTest, AndOrXorNot) {
  const Tensor a = Bools({true, true, false, false}, {2, 2});
  const Tensor b = Bools({true, false}, {2});
  auto and_ = RunNode("And", {}, {a, b});
  auto or_ = RunNode("Or", {}, {a, b});
  auto xor_ = RunNode("Xor", {}, {a, b});
  auto not_ = RunNode("Not", {}, {a});
  ASSERT_TRUE(and_.ok() && or_.ok() && xor_.ok() && not_.ok());
  EXPECT_THAT(ToBools((*and_)[0]), ElementsAre(true, false, false, false));
  EXPECT_THAT(ToBools((*or_)[0]), ElementsAre(true, true, true, false));
  EXPECT_THAT(ToBools((*xor_)[0]), ElementsAre(false, true, true, false));
  EXPECT_THAT(ToBools((*not_)[0]), ElementsAre(false, false, true, true));
  auto bad = RunNode("And", {}, {F32({1}, {1}), F32({1}, {1})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(LogicTest, WhereBroadcastsThreeWays) {
  auto r = RunNode("Where", {},
                   {Bools({true, false}, {2}), F32({1, 2, 3, 4}, {2, 2}), F32({-1}, {1})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ToFloats((*r)[0]), ElementsAre(1, -1, 3, -1));
  auto s = RunNode("Where", {}, {Bools({false, true}, {2}), Strings({"x", "y"}, {2}),
                                 Strings({"z"}, {1})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0].strings()[0], "z");
  EXPECT_EQ((*s)[0].strings()[1], "y");
  auto bad = RunNode("Where", {}, {F32({1}, {1}), F32({1}, {1}), F32({1}, {1})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LogicTest, VariadicOpsBroadcastAllInputs) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor a = F32({1, 5, nan}, {3});
  const Tensor b = F32({3}, {1});
  const Tensor c = F32({0, 4, 2, 6, 1, 1}, {2, 3});
  auto max = RunNode("Max", {}, {a, b, c});
  auto min = RunNode("Min", {}, {a, b, c});
  auto sum = RunNode("Sum", {}, {F32({1, 2}, {2}), F32({3}, {1}), F32({5, 5}, {2})});
  auto mean = RunNode("Mean", {}, {F32({1, 2}, {2}), F32({3, 4}, {2})});
  auto one = RunNode("Max", {}, {a});
  ASSERT_TRUE(max.ok() && min.ok() && sum.ok() && mean.ok() && one.ok());
  EXPECT_EQ((*max)[0].shape(), Shape({2, 3}));
  std::vector<float> m = ToFloats((*max)[0]);
  EXPECT_EQ(m[0], 3);
  EXPECT_EQ(m[1], 5);
  EXPECT_TRUE(std::isnan(m[2]));
  EXPECT_EQ(m[3], 6);
  EXPECT_EQ(ToFloats((*min)[0])[1], 3);
  EXPECT_THAT(ToFloats((*sum)[0]), ElementsAre(9, 10));
  EXPECT_THAT(ToFloats((*mean)[0]), ElementsAre(2, 3));
  EXPECT_EQ((*one)[0].num_elements(), 3);
  auto ints = RunNode("Max", {}, {I64({1, 9}, {2}), I64({4, 2}, {2})});
  ASSERT_TRUE(ints.ok());
  EXPECT_THAT(ToInts((*ints)[0]), ElementsAre(4, 9));
  auto bad = RunNode("Sum", {}, {F32({1, 2}, {2}), F32({1, 2, 3}, {3})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Unary ----------------------------------------------------------------------------------

TEST(UnaryTest, MathOps) {
  auto sqrt = RunNode("Sqrt", {}, {F32({4, 9}, {2})});
  auto exp = RunNode("Exp", {}, {F32({0}, {1})});
  auto neg = RunNode("Neg", {}, {I64({3, -2}, {2})});
  auto abs = RunNode("Abs", {}, {Make<int8_t>(v1::DT_INT8, {-3, 2}, {2})});
  auto sign = RunNode("Sign", {}, {F32({-2, 0, 5}, {3})});
  auto recip = RunNode("Reciprocal", {}, {F32({4}, {1})});
  ASSERT_TRUE(sqrt.ok() && exp.ok() && neg.ok() && abs.ok() && sign.ok() && recip.ok());
  EXPECT_THAT(ToFloats((*sqrt)[0]), ElementsAre(2, 3));
  EXPECT_THAT(ToFloats((*exp)[0]), ElementsAre(1));
  EXPECT_THAT(ToInts((*neg)[0]), ElementsAre(-3, 2));
  EXPECT_THAT(ToInts((*abs)[0]), ElementsAre(3, 2));
  EXPECT_THAT(ToFloats((*sign)[0]), ElementsAre(-1, 0, 1));
  EXPECT_THAT(ToFloats((*recip)[0]), ElementsAre(0.25));
}

TEST(UnaryTest, RoundIsHalfToEven) {
  auto r = RunNode("Round", {}, {F32({0.5f, 1.5f, 2.5f, -2.5f, 2.6f}, {5})});
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(ToFloats((*r)[0]), ElementsAre(0, 2, 2, -2, 3));
}

TEST(UnaryTest, Float16IsComputedInFloat) {
  Tensor x = Tensor::Allocate(v1::DT_FLOAT16, {2}).value();
  x.data<Float16>()[0] = Float16(4.0f);
  x.data<Float16>()[1] = Float16(0.25f);
  auto r = RunNode("Sqrt", {}, {x});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].dtype(), v1::DT_FLOAT16);
  EXPECT_THAT(ToFloats((*r)[0]), ElementsAre(2, 0.5));
}

TEST(UnaryTest, Activations) {
  const Tensor x = F32({-2, 0.5f, 3}, {3});
  auto relu = RunNode("Relu", {}, {x});
  auto leaky = RunNode("LeakyRelu", {"name: \"alpha\" f: 0.5"}, {x});
  auto hs = RunNode("HardSigmoid", {}, {x});
  auto thr = RunNode("ThresholdedRelu", {}, {x});
  auto shrink = RunNode("Shrink", {"name: \"bias\" f: 1", "name: \"lambd\" f: 1"}, {x});
  auto sig = RunNode("Sigmoid", {}, {F32({0}, {1})});
  ASSERT_TRUE(relu.ok() && leaky.ok() && hs.ok() && thr.ok() && shrink.ok() && sig.ok());
  EXPECT_THAT(ToFloats((*relu)[0]), ElementsAre(0, 0.5, 3));
  EXPECT_THAT(ToFloats((*leaky)[0]), ElementsAre(-1, 0.5, 3));
  EXPECT_THAT(ToFloats((*hs)[0]), Pointwise(FloatNear(1e-6), {0.1f, 0.6f, 1.0f}));
  EXPECT_THAT(ToFloats((*thr)[0]), ElementsAre(0, 0, 3));
  EXPECT_THAT(ToFloats((*shrink)[0]), ElementsAre(-1, 0, 2));
  EXPECT_THAT(ToFloats((*sig)[0]), ElementsAre(0.5));
}

TEST(UnaryTest, FloatOnlyOpsRejectIntegers) {
  auto r = RunNode("Sqrt", {}, {I64({4}, {1})});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.status().message(), HasSubstr("Sqrt"));
  EXPECT_THAT(r.status().message(), HasSubstr("int64"));
  auto neg = RunNode("Neg", {}, {Make<uint8_t>(v1::DT_UINT8, {1}, {1})});
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(UnaryTest, ClipBoundsAreAttributesBeforeOpset11) {
  const Tensor x = F32({-5, 0, 5}, {3});
  auto old = RunNode("Clip", {"name: \"min\" f: -1", "name: \"max\" f: 1"}, {x}, 1, 6);
  auto now = RunNode("Clip", {}, {x, F32({-2}, {}), Tensor()}, 1, 13);
  auto ints = RunNode("Clip", {}, {I64({-5, 5}, {2}), Tensor(), I64({2}, {})}, 1, 13);
  ASSERT_TRUE(old.ok() && now.ok() && ints.ok()) << now.status();
  EXPECT_THAT(ToFloats((*old)[0]), ElementsAre(-1, 0, 1));
  EXPECT_THAT(ToFloats((*now)[0]), ElementsAre(-2, 0, 5));
  EXPECT_THAT(ToInts((*ints)[0]), ElementsAre(-5, 2));
  auto bad = RunNode("Clip", {}, {x, F32({-2, 2}, {2})}, 1, 13);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("scalar"));
}

TEST(UnaryTest, PReluBroadcastsTheSlope) {
  std::vector<float> x(12, -1.0f);
  auto r = RunNode("PRelu", {}, {F32(x, {2, 3, 2}), F32({1, 2}, {2})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(ToFloats((*r)[0]), ElementsAre(-1, -2, -1, -2, -1, -2, -1, -2, -1, -2, -1, -2));
  // Opset 6: a [C] slope applies along the channel axis.
  auto old = RunNode("PRelu", {}, {F32(x, {2, 3, 2}), F32({1, 2, 3}, {3})}, 1, 6);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_THAT(ToFloats((*old)[0]), ElementsAre(-1, -1, -2, -2, -3, -3, -1, -1, -2, -2, -3, -3));
  auto bad = RunNode("PRelu", {}, {F32({1, 2}, {2}), F32({1, 2, 3}, {3})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(UnaryTest, IntegerPReluWrapsAndShrinkSaturates) {
  // PRelu: x * slope wraps around (two's complement) as numpy's product does; it overflowed
  // (undefined behaviour) before. -2^62 * 4 = -2^64 = 0 and -3 * (2^63 - 1) = INT64_MIN + 3.
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  auto prelu = RunNode("PRelu", {}, {I64({-(int64_t{1} << 62), -3, 5}, {3}), I64({4, kMax, 7}, {3})});
  ASSERT_TRUE(prelu.ok()) << prelu.status();
  EXPECT_THAT(ToInts((*prelu)[0]), ElementsAre(0, kMin + 3, 5));
  // Shrink computes in double: int64's largest value is 2^63 there, whose conversion back was
  // undefined; it saturates as FromCompute does (the exact answer here), as does a huge bias.
  auto shrink = RunNode("Shrink", {}, {I64({kMax, kMin, 0}, {3})});
  ASSERT_TRUE(shrink.ok()) << shrink.status();
  EXPECT_THAT(ToInts((*shrink)[0]), ElementsAre(kMax, kMin, 0));
  auto biased = RunNode("Shrink", {"name: \"bias\" f: 1e10"},
                        {Make<int32_t>(v1::DT_INT32, {5, -5}, {2})});
  ASSERT_TRUE(biased.ok()) << biased.status();
  EXPECT_THAT(ToInts((*biased)[0]), ElementsAre(INT32_MIN, INT32_MAX));
}

TEST(UnaryTest, IsNaNAndIsInf) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = F32({1, std::nanf(""), inf, -inf}, {4});
  auto nan = RunNode("IsNaN", {}, {x});
  auto both = RunNode("IsInf", {}, {x});
  auto neg = RunNode("IsInf", {"name: \"detect_positive\" i: 0"}, {x});
  ASSERT_TRUE(nan.ok() && both.ok() && neg.ok());
  EXPECT_THAT(ToBools((*nan)[0]), ElementsAre(false, true, false, false));
  EXPECT_THAT(ToBools((*both)[0]), ElementsAre(false, false, true, true));
  EXPECT_THAT(ToBools((*neg)[0]), ElementsAre(false, false, false, true));
}

// --- Cast and quantization ------------------------------------------------------------------

TEST(CastTest, NumericCasts) {
  auto i = RunNode("Cast", {"name: \"to\" i: 6"}, {F32({1.9f, -1.9f, 300}, {3})});
  auto b = RunNode("Cast", {"name: \"to\" i: 9"}, {F32({0, 2}, {2})});
  auto h = RunNode("Cast", {"name: \"to\" i: 10"}, {F32({0.5f, 65504}, {2})});
  auto u = RunNode("Cast", {"name: \"to\" i: 2"}, {I64({300, -1}, {2})});
  ASSERT_TRUE(i.ok() && b.ok() && h.ok() && u.ok());
  EXPECT_EQ((*i)[0].dtype(), v1::DT_INT32);
  EXPECT_THAT(ToInts((*i)[0]), ElementsAre(1, -1, 300));
  EXPECT_THAT(ToBools((*b)[0]), ElementsAre(false, true));
  EXPECT_THAT(ToFloats((*h)[0]), ElementsAre(0.5, 65504));
  EXPECT_THAT(ToInts((*u)[0]), ElementsAre(44, 255));
}

TEST(CastTest, StringsBothWays) {
  auto s = RunNode("Cast", {"name: \"to\" i: 8"}, {F32({0.1f, 2, -1.5f}, {3})});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*s)[0].strings()[0], "0.1");
  EXPECT_EQ((*s)[0].strings()[1], "2.0");
  EXPECT_EQ((*s)[0].strings()[2], "-1.5");
  auto big = RunNode("Cast", {"name: \"to\" i: 8"}, {F32({1e7f, 1e-5f, 1e20f}, {3})});
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ((*big)[0].strings()[0], "10000000.0");
  EXPECT_EQ((*big)[0].strings()[1], "1e-05");
  EXPECT_EQ((*big)[0].strings()[2], "1e+20");
  Tensor half = Tensor::Allocate(v1::DT_FLOAT16, {1}).value();
  half.data<Float16>()[0] = Float16(0.1f);
  auto hs = RunNode("Cast", {"name: \"to\" i: 8"}, {half});
  ASSERT_TRUE(hs.ok()) << hs.status();
  EXPECT_EQ((*hs)[0].strings()[0], "0.1");
  auto f = RunNode("Cast", {"name: \"to\" i: 1"}, {Strings({"0.25", "NaN", "-INF", "+INF"}, {4})});
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<float> v = ToFloats((*f)[0]);
  EXPECT_EQ(v[0], 0.25f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[3], std::numeric_limits<float>::infinity());
  auto bad = RunNode("Cast", {"name: \"to\" i: 1"}, {Strings({"zebra"}, {1})});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("zebra"));
}

TEST(CastTest, CastLikeTakesTheSecondInputsType) {
  auto r = RunNode("CastLike", {}, {F32({1.5f}, {1}), I64({0}, {1})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].dtype(), v1::DT_INT64);
  EXPECT_THAT(ToInts((*r)[0]), ElementsAre(1));
}

TEST(CastTest, BadTargetTypes) {
  auto missing = RunNode("Cast", {}, {F32({1}, {1})});
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  auto bogus = RunNode("Cast", {"name: \"to\" i: 99"}, {F32({1}, {1})});
  EXPECT_EQ(bogus.status().code(), absl::StatusCode::kInvalidArgument);
  auto complex = RunNode("Cast", {"name: \"to\" i: 14"}, {F32({1}, {1})});
  EXPECT_EQ(complex.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(complex.status().message(), HasSubstr("Cast"));
}

TEST(QuantizeTest, PerTensorAndPerAxis) {
  auto q = RunNode("QuantizeLinear", {},
                   {F32({0, 3, 5, 1000, -1000}, {5}), F32({2}, {}),
                    Make<uint8_t>(v1::DT_UINT8, {128}, {})});
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ((*q)[0].dtype(), v1::DT_UINT8);
  EXPECT_THAT(ToInts((*q)[0]), ElementsAre(128, 130, 130, 255, 0));  // 1.5 -> 2, 2.5 -> 2
  auto axis = RunNode("QuantizeLinear", {},
                      {F32({2, 4, 10, 20}, {2, 2}), F32({2, 10}, {2}),
                       Make<int8_t>(v1::DT_INT8, {0, -1}, {2})},
                      1, 13);
  ASSERT_TRUE(axis.ok()) << axis.status();
  EXPECT_THAT(ToInts((*axis)[0]), ElementsAre(1, -1, 5, 1));
  auto dq = RunNode("DequantizeLinear", {},
                    {Make<uint8_t>(v1::DT_UINT8, {0, 128, 255}, {3}), F32({2}, {}),
                     Make<uint8_t>(v1::DT_UINT8, {128}, {})});
  ASSERT_TRUE(dq.ok()) << dq.status();
  EXPECT_THAT(ToFloats((*dq)[0]), ElementsAre(-256, 0, 254));
  auto bad = RunNode("DequantizeLinear", {},
                     {Make<uint8_t>(v1::DT_UINT8, {0, 1, 2, 3}, {2, 2}), F32({1, 2, 3}, {3})},
                     1, 13);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(QuantizeTest, DynamicQuantizeLinear) {
  auto r = RunNode("DynamicQuantizeLinear", {}, {F32({0, 2, -3, -2.5f, 1.34f, 0.5f}, {6})}, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(ToFloats((*r)[1])[0], 0.0196078438f, 1e-7);
  EXPECT_THAT(ToInts((*r)[2]), ElementsAre(153));
  EXPECT_THAT(ToInts((*r)[0]), ElementsAre(153, 255, 0, 26, 221, 179));
  // -inf makes the scale inf and the zero point -(-inf) / inf = NaN, whose conversion to uint8
  // was undefined: it is 0 (SaturateQuantized), as is every element.
  const float inf = std::numeric_limits<float>::infinity();
  auto wide = RunNode("DynamicQuantizeLinear", {}, {F32({-inf, 1}, {2})}, 3);
  ASSERT_TRUE(wide.ok()) << wide.status();
  EXPECT_THAT(ToInts((*wide)[2]), ElementsAre(0));
  EXPECT_THAT(ToInts((*wide)[0]), ElementsAre(0, 0));
  auto bad = RunNode("DynamicQuantizeLinear", {}, {I64({1}, {1})}, 3);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace graphopt::runtime
