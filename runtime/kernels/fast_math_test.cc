#include "runtime/kernels/fast_math.h"

#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace graphopt::runtime {
namespace {

// Inputs from -100 to 100 in small steps, plus the special values.
std::vector<float> Sweep() {
  std::vector<float> v;
  for (float x = -100.0f; x <= 100.0f; x += 0.01337f) v.push_back(x);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-6f, 0.6249f, 0.6251f, -0.625f}) v.push_back(x);
  return v;
}

double RelativeError(double got, double want) {
  if (got == want) return 0;
  return std::fabs(got - want) / std::max(std::fabs(want), 1e-30);
}

TEST(FastMathTest, ExpWithinTwoUlpsWhereNormal) {
  std::vector<float> x = Sweep();
  std::vector<float> y = x;
  ExpF32(y.data(), static_cast<int64_t>(y.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = std::exp(static_cast<double>(x[i]));
    if (x[i] < -87.34f) {
      EXPECT_LE(y[i], 1.2e-38f) << x[i];  // clamped to the smallest normal
    } else if (x[i] > 88.37f) {
      EXPECT_TRUE(std::isfinite(y[i])) << x[i];
    } else {
      EXPECT_LT(RelativeError(y[i], want), 3e-7) << "exp(" << x[i] << ") = " << y[i];
    }
  }
}

TEST(FastMathTest, SigmoidAndTanhAccurate) {
  std::vector<float> x = Sweep();
  std::vector<float> s = x, t = x;
  SigmoidF32(s.data(), static_cast<int64_t>(s.size()));
  TanhF32(t.data(), static_cast<int64_t>(t.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    EXPECT_LT(RelativeError(s[i], 1.0 / (1.0 + std::exp(-v))), 1e-6) << "sigmoid(" << v << ")";
    EXPECT_LT(RelativeError(t[i], std::tanh(v)), 1e-6) << "tanh(" << v << ")";
  }
}

TEST(FastMathTest, NanStaysNanAndInfinitiesSaturate) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> e = {nan, -inf}, s = {nan, inf, -inf}, t = {nan, inf, -inf};
  ExpF32(e.data(), 2);
  SigmoidF32(s.data(), 3);
  TanhF32(t.data(), 3);
  EXPECT_TRUE(std::isnan(e[0]));
  EXPECT_LE(e[1], 1.2e-38f);
  EXPECT_TRUE(std::isnan(s[0]));
  EXPECT_FLOAT_EQ(s[1], 1.0f);
  EXPECT_LE(s[2], 1.2e-38f);
  EXPECT_TRUE(std::isnan(t[0]));
  EXPECT_FLOAT_EQ(t[1], 1.0f);
  EXPECT_FLOAT_EQ(t[2], -1.0f);
}

TEST(FastMathTest, GemvAccumulatesEveryColumnBlock) {
  // n = 77: a 64-wide block, an 8-wide block and a 5-column scalar tail; ldb > n.
  const int64_t k = 5, n = 77, ldb = 80;
  std::vector<float> a(k), b(k * ldb), y(n);
  for (int64_t p = 0; p < k; ++p) a[p] = static_cast<float>(p + 1);
  for (int64_t i = 0; i < k * ldb; ++i) b[i] = static_cast<float>(i % 7) - 3.0f;
  for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(j);
  GemvAccumulateF32(k, n, a.data(), b.data(), ldb, y.data());
  for (int64_t j = 0; j < n; ++j) {
    float want = static_cast<float>(j);
    for (int64_t p = 0; p < k; ++p) want += a[p] * b[p * ldb + j];
    EXPECT_EQ(y[j], want) << j;  // small integers: exact either way
  }
}

}  // namespace
}  // namespace graphopt::runtime
