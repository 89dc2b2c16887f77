#include "runtime/kernels/fast_math.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
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

// Every version this CPU runs (the detected one and those below it).
std::vector<FastMathIsa> Versions() {
  std::vector<FastMathIsa> out;
  for (FastMathIsa isa :
       {FastMathIsa::kX86_64_V4, FastMathIsa::kX86_64_V3, FastMathIsa::kX86_64}) {
    if (FastMathIsaSupported(isa)) out.push_back(isa);
  }
  return out;
}

double RelativeError(double got, double want) {
  if (got == want) return 0;
  return std::fabs(got - want) / std::max(std::fabs(want), 1e-30);
}

TEST(FastMathTest, ExpWithinTwoUlpsWhereNormal) {
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    std::vector<float> x = Sweep();
    std::vector<float> y = x;
    ExpF32(isa, y.data(), static_cast<int64_t>(y.size()));
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
}

TEST(FastMathTest, SigmoidAndTanhAccurate) {
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    std::vector<float> x = Sweep();
    std::vector<float> s = x, t = x;
    SigmoidF32(isa, s.data(), static_cast<int64_t>(s.size()));
    TanhF32(isa, t.data(), static_cast<int64_t>(t.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i];
      EXPECT_LT(RelativeError(s[i], 1.0 / (1.0 + std::exp(-v))), 1e-6) << "sigmoid(" << v << ")";
      EXPECT_LT(RelativeError(t[i], std::tanh(v)), 1e-6) << "tanh(" << v << ")";
    }
  }
}

// erf within 2e-7 everywhere and within 3e-7 relative below 1 (tiny inputs included), on the
// sweep and on a fine grid across both pieces and the points where they meet; GELU, made of it,
// within a few float roundings of the formula in double.
TEST(FastMathTest, ErfAndGeluAccurate) {
  std::vector<float> x = Sweep();
  for (float v = -5.0f; v <= 5.0f; v += 0.000731f) x.push_back(v);
  for (float v : {1.0f, -1.0f, std::nextafter(1.0f, 0.0f), 3.925f, std::nextafter(3.925f, 0.0f),
                  -3.925f, 1e-38f, -2e-20f, 3e-5f}) {
    x.push_back(v);
  }
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    std::vector<float> e = x, g = x;
    ErfF32(isa, e.data(), static_cast<int64_t>(e.size()));
    GeluF32(isa, g.data(), static_cast<int64_t>(g.size()));
    double worst_abs = 0, worst_rel = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double v = x[i], want = std::erf(v);
      const double abs_err = std::fabs(e[i] - want);
      worst_abs = std::max(worst_abs, abs_err);
      ASSERT_LE(abs_err, 2e-7) << "erf(" << v << ") = " << e[i] << ", want " << want;
      if (std::fabs(v) < 1) {
        worst_rel = std::max(worst_rel, RelativeError(e[i], want));
        ASSERT_LE(RelativeError(e[i], want), 3e-7) << "erf(" << v << ") = " << e[i];
      }
      ASSERT_EQ(std::signbit(e[i]), std::signbit(x[i])) << "erf(" << v << ")";
      const double gelu = v * 0.5 * (1.0 + std::erf(v / std::sqrt(2.0)));
      ASSERT_LE(std::fabs(g[i] - gelu), 2e-7 * std::fabs(v) + 1e-7 * std::fabs(gelu))
          << "gelu(" << v << ") = " << g[i] << ", want " << gelu;
    }
    std::printf("%s: erf worst absolute error %.3g, relative below 1 %.3g\n",
                FastMathIsaName(isa), worst_abs, worst_rel);
  }
}

TEST(FastMathTest, NanStaysNanAndInfinitiesSaturate) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    std::vector<float> e = {nan, -inf}, s = {nan, inf, -inf}, t = {nan, inf, -inf},
                       r = {nan, inf, -inf}, g = {nan, inf};
    ExpF32(isa, e.data(), 2);
    SigmoidF32(isa, s.data(), 3);
    TanhF32(isa, t.data(), 3);
    ErfF32(isa, r.data(), 3);
    GeluF32(isa, g.data(), 2);
    EXPECT_TRUE(std::isnan(r[0]));
    EXPECT_EQ(r[1], 1.0f);
    EXPECT_EQ(r[2], -1.0f);
    EXPECT_TRUE(std::isnan(g[0]));
    EXPECT_EQ(g[1], inf);
    EXPECT_TRUE(std::isnan(e[0]));
    EXPECT_LE(e[1], 1.2e-38f);
    EXPECT_TRUE(std::isnan(s[0]));
    EXPECT_FLOAT_EQ(s[1], 1.0f);
    EXPECT_LE(s[2], 1.2e-38f);
    EXPECT_TRUE(std::isnan(t[0]));
    EXPECT_FLOAT_EQ(t[1], 1.0f);
    EXPECT_FLOAT_EQ(t[2], -1.0f);
  }
}

TEST(FastMathTest, GemvAccumulatesEveryColumnBlock) {
  // n = 77: in the AVX2 version a 64-wide block, an 8-wide one and a 5-column scalar tail; in
  // the AVX-512 one a 64-wide block and a 13-column tail. ldb > n.
  const int64_t k = 5, n = 77, ldb = 80;
  std::vector<float> a(k), b(k * ldb), y(n);
  for (int64_t p = 0; p < k; ++p) a[p] = static_cast<float>(p + 1);
  for (int64_t i = 0; i < k * ldb; ++i) b[i] = static_cast<float>(i % 7) - 3.0f;
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    for (int64_t j = 0; j < n; ++j) y[j] = static_cast<float>(j);
    GemvAccumulateF32(isa, k, n, a.data(), b.data(), ldb, y.data());
    for (int64_t j = 0; j < n; ++j) {
      float want = static_cast<float>(j);
      for (int64_t p = 0; p < k; ++p) want += a[p] * b[p * ldb + j];
      EXPECT_EQ(y[j], want) << j;  // small integers: exact either way
    }
  }
}

TEST(FastMathTest, DotRowsCoversEveryRowAndTheTailOfEachRow) {
  // n = 13 rows: a group of 8 (AVX-512), of 4 (AVX2) or of 2 (baseline), then single rows;
  // k = 37: two 16-element blocks and a 5-element tail; ldb > k.
  const int64_t k = 37, n = 13, ldb = 40;
  std::vector<float> a(k), b(n * ldb, 1e9f), y(n);
  for (int64_t p = 0; p < k; ++p) a[p] = static_cast<float>(p % 5) - 2.0f;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < k; ++p) b[i * ldb + p] = static_cast<float>((i + 3 * p) % 7) - 3.0f;
  }
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    std::fill(y.begin(), y.end(), -1.0f);
    DotRowsF32(isa, k, n, a.data(), b.data(), ldb, y.data());
    for (int64_t i = 0; i < n; ++i) {
      float want = 0.0f;
      for (int64_t p = 0; p < k; ++p) want += a[p] * b[i * ldb + p];
      EXPECT_EQ(y[i], want) << "row " << i;  // small integers: exact (the padding is not read)
    }
  }
}

TEST(FastMathTest, DotRowsGivesEachRowTheSameBitsInAnySplitAndVectorVersion) {
  const int64_t k = 300, n = 37;
  std::vector<float> a(k), b(n * k);
  for (int64_t p = 0; p < k; ++p) a[p] = std::sin(0.31f * static_cast<float>(p));
  for (int64_t i = 0; i < n * k; ++i) b[i] = std::cos(0.17f * static_cast<float>(i));
  std::vector<float> whole(n), first;
  DotRowsF32(Versions().front(), k, n, a.data(), b.data(), k, whole.data());
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    for (int64_t split : {int64_t{1}, int64_t{5}, int64_t{9}, n}) {
      std::vector<float> y(n);
      for (int64_t i = 0; i < n; i += split) {
        DotRowsF32(isa, k, std::min(split, n - i), a.data(), b.data() + i * k, k, y.data() + i);
      }
      for (int64_t i = 0; i < n; ++i) {
        double want = 0;
        for (int64_t p = 0; p < k; ++p) want += double{a[p]} * b[i * k + p];
        ASSERT_NEAR(y[i], want, 1e-4) << "row " << i << ", split " << split;
        // The AVX-512 and AVX2 versions agree to the bit; the baseline has no fused multiply-add.
        if (isa != FastMathIsa::kX86_64) {
          ASSERT_EQ(y[i], whole[i]) << "row " << i << ", split " << split;
        }
      }
    }
  }
}

TEST(FastMathTest, Interleave3PutsEachPlaneEveryThirdElementInEveryVersion) {
  for (FastMathIsa isa : Versions()) {
    for (int64_t n : {0, 1, 5, 15, 16, 17, 47, 48, 100, 1000}) {
      std::vector<uint32_t> planes(3 * n);
      for (int64_t i = 0; i < 3 * n; ++i) planes[i] = static_cast<uint32_t>(i * 2654435761u);
      std::vector<uint32_t> out(3 * n + 1, 7u);  // one guard element past the end
      Interleave3x32(isa, planes.data(), planes.data() + n, planes.data() + 2 * n, n, out.data());
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t k = 0; k < 3; ++k) {
          ASSERT_EQ(out[3 * i + k], planes[k * n + i])
              << FastMathIsaName(isa) << " n=" << n << " pixel " << i << " plane " << k;
        }
      }
      EXPECT_EQ(out[3 * n], 7u) << FastMathIsaName(isa) << " wrote past the end, n=" << n;
    }
  }
}

// Each width with its own blocking (8, 16, 24, 40) and one without (32: the plain loop), pixel
// counts that leave tails after every version's blocks, with and without a bias, against a
// double-precision reference; and every split of the pixels gives the same bits.
TEST(FastMathTest, PointwiseRowsMatchReferenceInEverySplitAndVersion) {
  EXPECT_TRUE(PointwiseRowsWidthSupported(24));
  EXPECT_FALSE(PointwiseRowsWidthSupported(32));
  for (int64_t m : {8, 16, 24, 40, 32}) {
    for (int64_t k : {1, 3, 96, 144}) {
      const int64_t pixels = 53;
      std::vector<float> x(pixels * k), w(k * m), bias(m);
      for (int64_t i = 0; i < pixels * k; ++i) x[i] = std::sin(0.37f * i + 0.1f * m);
      for (int64_t i = 0; i < k * m; ++i) w[i] = std::cos(0.23f * i) / std::sqrt(float(k));
      for (int64_t j = 0; j < m; ++j) bias[j] = 0.5f - 0.03f * j;
      std::vector<float> first;
      for (FastMathIsa isa : Versions()) {
        for (const float* b : {static_cast<const float*>(bias.data()), static_cast<const float*>(nullptr)}) {
          SCOPED_TRACE(testing::Message() << FastMathIsaName(isa) << " m=" << m << " k=" << k
                                          << (b ? " bias" : " no bias"));
          std::vector<float> whole(pixels * m + 1, 7.0f);  // one guard element past the end
          PointwiseRowsF32(isa, pixels, k, m, x.data(), w.data(), b, whole.data());
          EXPECT_EQ(whole[pixels * m], 7.0f) << "wrote past the end";
          for (int64_t p = 0; p < pixels; ++p) {
            for (int64_t j = 0; j < m; ++j) {
              double want = b ? b[j] : 0.0;
              for (int64_t c = 0; c < k; ++c) want += double{x[p * k + c]} * w[c * m + j];
              ASSERT_NEAR(whole[p * m + j], want, 1e-5 * (1 + std::fabs(want)))
                  << "pixel " << p << " channel " << j;
            }
          }
          for (int64_t split : {1, 5, 13}) {
            std::vector<float> y(pixels * m);
            for (int64_t p = 0; p < pixels; p += split) {
              PointwiseRowsF32(isa, std::min(split, pixels - p), k, m, x.data() + p * k,
                               w.data(), b, y.data() + p * m);
            }
            ASSERT_EQ(y, std::vector<float>(whole.begin(), whole.end() - 1)) << "split " << split;
          }
          // The AVX-512 and AVX2 versions agree to the bit (the baseline has no fused
          // multiply-add); the first run is the best version's, with the bias.
          if (b == bias.data() && isa != FastMathIsa::kX86_64) {
            if (first.empty()) first = whole;
            else ASSERT_EQ(whole, first);
          }
        }
      }
    }
  }
}

// The AVX-512 and AVX2 versions do the same arithmetic per lane: bit-identical results, so a
// model's numbers do not depend on which of the two machines runs it.
TEST(FastMathTest, WideVersionsAgreeToTheBit) {
  if (!FastMathIsaSupported(FastMathIsa::kX86_64_V4)) {
    GTEST_SKIP() << "this CPU has no AVX-512: only " << FastMathIsaName(DetectedFastMathIsa());
  }
  const FastMathIsa v4 = FastMathIsa::kX86_64_V4, v3 = FastMathIsa::kX86_64_V3;
  const std::vector<float> x = Sweep();
  const int64_t n = static_cast<int64_t>(x.size());
  for (auto* f : {static_cast<void (*)(FastMathIsa, float*, int64_t)>(ExpF32),
                  static_cast<void (*)(FastMathIsa, float*, int64_t)>(SigmoidF32),
                  static_cast<void (*)(FastMathIsa, float*, int64_t)>(TanhF32),
                  static_cast<void (*)(FastMathIsa, float*, int64_t)>(ErfF32),
                  static_cast<void (*)(FastMathIsa, float*, int64_t)>(GeluF32)}) {
    std::vector<float> a = x, b = x;
    f(v4, a.data(), n);
    f(v3, b.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i]) << "x = " << x[i];
  }
  // Non-integer products, so rounding (and fusing) shows: 300 columns take every tier.
  const int64_t k = 37, cols = 300;
  std::vector<float> a(k), b(k * cols), y4(cols, 0.25f), y3(cols, 0.25f);
  for (int64_t p = 0; p < k; ++p) a[p] = std::sin(0.7f * p);
  for (int64_t i = 0; i < k * cols; ++i) b[i] = std::cos(0.3f * i);
  GemvAccumulateF32(v4, k, cols, a.data(), b.data(), cols, y4.data());
  GemvAccumulateF32(v3, k, cols, a.data(), b.data(), cols, y3.data());
  for (int64_t j = 0; j < cols; ++j) ASSERT_EQ(y4[j], y3[j]) << "column " << j;
  // Layer normalisation: its sums run in the same 16 partial sums in both.
  for (int64_t c : {5, 12, 16, 20, 64, 77, 768}) {
    SCOPED_TRACE(c);
    std::vector<float> xs(3 * c), scale(c), bias(c), n4(3 * c), n3(3 * c), m4(3), m3(3), i4(3),
        i3(3);
    for (int64_t i = 0; i < 3 * c; ++i) xs[i] = 3.0f * std::sin(0.37f * i) + 0.5f;
    for (int64_t i = 0; i < c; ++i) {
      scale[i] = std::cos(0.11f * i);
      bias[i] = 0.1f * std::sin(0.23f * i);
    }
    LayerNormRowsF32(v4, 3, c, xs.data(), scale.data(), 1, bias.data(), 1, 1e-5f, n4.data(),
                     m4.data(), i4.data());
    LayerNormRowsF32(v3, 3, c, xs.data(), scale.data(), 1, bias.data(), 1, 1e-5f, n3.data(),
                     m3.data(), i3.data());
    ASSERT_EQ(m4, m3);
    ASSERT_EQ(i4, i3);
    for (int64_t i = 0; i < 3 * c; ++i) ASSERT_EQ(n4[i], n3[i]) << "element " << i;
  }
}

// Every version against a double-precision reference: rows of every length class (none, under
// one vector, whole vectors, vectors and a tail), scale and bias per column, broadcast or absent.
TEST(FastMathTest, LayerNormMatchesDoubleReference) {
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    for (int64_t cols : {0, 1, 3, 8, 16, 17, 33, 64, 100, 1000}) {
      for (int variant = 0; variant < 3; ++variant) {
        SCOPED_TRACE(testing::Message() << cols << " columns, variant " << variant);
        const int64_t rows = 4;
        std::vector<float> x(rows * cols), scale(std::max<int64_t>(cols, 1)),
            bias(std::max<int64_t>(cols, 1)), y(rows * cols, -7.0f), mean(rows), inv(rows);
        // Rows with an offset far from zero, so a one-pass variance would lose digits.
        for (int64_t i = 0; i < rows * cols; ++i) x[i] = 100.0f + 2.0f * std::sin(0.91f * i);
        for (size_t i = 0; i < scale.size(); ++i) {
          scale[i] = 0.5f + 0.01f * static_cast<float>(i % 13);
          bias[i] = -0.25f + 0.02f * static_cast<float>(i % 7);
        }
        const int64_t step = variant == 0 ? 1 : 0;
        const float* s = variant == 2 ? nullptr : scale.data();
        const float* b = variant == 2 ? nullptr : bias.data();
        const float eps = 1e-5f;
        LayerNormRowsF32(isa, rows, cols, x.data(), s, step, b, step, eps, y.data(), mean.data(),
                         inv.data());
        for (int64_t r = 0; r < rows; ++r) {
          double sum = 0, sq = 0;
          for (int64_t i = 0; i < cols; ++i) sum += x[r * cols + i];
          const double m = cols > 0 ? sum / cols : 0;
          for (int64_t i = 0; i < cols; ++i) sq += (x[r * cols + i] - m) * (x[r * cols + i] - m);
          const double iv = 1.0 / std::sqrt((cols > 0 ? sq / cols : 0) + eps);
          EXPECT_LT(RelativeError(mean[r], m), 1e-6) << "row " << r;
          EXPECT_LT(RelativeError(inv[r], iv), 2e-4) << "row " << r;
          for (int64_t i = 0; i < cols; ++i) {
            double want = (x[r * cols + i] - m) * iv;
            if (s != nullptr) want *= s[i * step];
            if (b != nullptr) want += b[i * step];
            ASSERT_NEAR(y[r * cols + i], want, 2e-4 * (1 + std::fabs(want)))
                << "row " << r << " column " << i;
          }
        }
      }
    }
  }
}

// Each parameterised activation against the formula in double, on the sweep, a fine grid
// around 0 (where exp(x) - 1 and log(1 + exp(x)) cancel) and subnormal, huge and special inputs.
TEST(FastMathTest, ActivationsAccurate) {
  std::vector<float> x = Sweep();
  for (float v = -2.0f; v <= 2.0f; v += 0.000917f) x.push_back(v);
  for (float v : {1e-20f, -1e-20f, 3e-39f, -3e-39f, 1e-7f, -1e-7f, 87.0f, 89.0f, -89.0f, 1e30f}) {
    x.push_back(v);
  }
  struct Case {
    Activation act;
    float alpha, beta;
    double (*want)(double, double, double);
    double rel;  // relative error allowed
    double abs;  // absolute error allowed as well (near zeros of the function)
  };
  const Case cases[] = {
      {Activation::kLog, 0, 0, [](double v, double, double) { return v < 0 ? NAN : std::log(v); },
       3e-7, 0},
      {Activation::kSoftplus, 0, 0,
       [](double v, double, double) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); },
       1e-6, 1.2e-38},
      {Activation::kExpm1, 0, 0, [](double v, double, double) { return std::expm1(v); }, 1e-6, 0},
      {Activation::kElu, 0.7f, 0,
       [](double v, double a, double) { return v < 0 ? a * std::expm1(v) : v; }, 1e-6, 0},
      {Activation::kSelu, 1.6732632f, 1.0507010f,
       [](double v, double a, double g) { return v <= 0 ? g * a * std::expm1(v) : g * v; }, 1e-6, 0},
      {Activation::kCelu, 1.5f, 0,
       [](double v, double a, double) { return std::max(0.0, v) + std::min(0.0, a * std::expm1(v / a)); },
       1e-6, 0},
      {Activation::kHardSwish, 0, 0,
       // x / 6 + 1/2 cancels near x = -3, as it does in the ONNX formula the kernels follow.
       // (an error of half an ulp of 1/2, times x).
       [](double v, double, double) { return v * std::clamp(v / 6 + 0.5, 0.0, 1.0); }, 3e-7, 5e-7},
      {Activation::kSoftsign, 0, 0, [](double v, double, double) { return v / (1 + std::fabs(v)); },
       3e-7, 0},
      {Activation::kSilu, 0, 0, [](double v, double, double) { return v / (1 + std::exp(-v)); },
       1e-6, 2e-36},
      {Activation::kMish, 0, 0,
       [](double v, double, double) {
         const double sp = v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
         return v * std::tanh(sp);
       },
       2e-6, 2e-36},
  };
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    for (const Case& c : cases) {
      SCOPED_TRACE(static_cast<int>(c.act));
      std::vector<float> y = x;
      ActivationF32(isa, c.act, c.alpha, c.beta, y.data(), static_cast<int64_t>(y.size()));
      for (size_t i = 0; i < x.size(); ++i) {
        // exp clamps its input at 88.37 (ExpWithinTwoUlpsWhereNormal).
        if (c.act == Activation::kExpm1 && x[i] > 88.37f) continue;
        const double want = c.want(x[i], c.alpha, c.beta);
        if (std::isnan(want)) {
          EXPECT_TRUE(std::isnan(y[i])) << x[i];
          continue;
        }
        // Beyond float's range (exp clamps its input there): finite or not, only the sign.
        if (std::fabs(want) > 3e38) {
          EXPECT_EQ(y[i] > 0, want > 0) << x[i];
          continue;
        }
        const double err = std::fabs(y[i] - want);
        EXPECT_TRUE(err <= c.abs || err <= c.rel * std::fabs(want))
            << "x = " << x[i] << ": got " << y[i] << ", want " << want;
      }
    }
    std::vector<float> special = {std::numeric_limits<float>::quiet_NaN(), 0.0f,
                                  std::numeric_limits<float>::infinity()};
    ActivationF32(isa, Activation::kLog, 0, 0, special.data(), 3);
    EXPECT_TRUE(std::isnan(special[0]));
    EXPECT_EQ(special[1], -std::numeric_limits<float>::infinity());
    EXPECT_EQ(special[2], std::numeric_limits<float>::infinity());
  }
}

// Rows of a matrix product four at a time give GemvAccumulateF32's bits row by row (so threads
// may split the rows anywhere), on odd sizes that leave every tier and the tail some columns.
TEST(FastMathTest, GemmRowsMatchGemv) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    for (int64_t m : {1, 4, 7, 9}) {
      for (int64_t n : {5, 16, 53, 100}) {
        const int64_t k = 37, lda = k + 3, ldb = n + 2, ldy = n + 1;
        std::vector<float> a(m * lda), b(k * ldb), y(m * ldy);
        for (float& v : a) v = dist(rng);
        for (float& v : b) v = dist(rng);
        for (float& v : y) v = dist(rng);
        std::vector<float> want = y;
        for (int64_t i = 0; i < m; ++i) {
          GemvAccumulateF32(isa, k, n, a.data() + i * lda, b.data(), ldb, want.data() + i * ldy);
        }
        GemmAccumulateF32(isa, m, k, n, a.data(), lda, b.data(), ldb, y.data(), ldy);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            ASSERT_EQ(y[i * ldy + j], want[i * ldy + j]) << "m " << m << " n " << n << " at "
                                                         << i << ", " << j;
          }
        }
      }
    }
  }
}

// Softmax rows in every version against double: every length class, masked entries (-inf,
// 90 and 1e4 below the row's max, as attention masks add) giving exactly 0,
// a row of one value, and a NaN making its row NaN; the AVX-512 and AVX2 versions agree to the
// bit, and y may be x.
TEST(FastMathTest, SoftmaxRowsMatchDoubleInEveryVersion) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> first;
  for (FastMathIsa isa : Versions()) {
    SCOPED_TRACE(FastMathIsaName(isa));
    std::vector<float> all;
    for (int64_t cols : {1, 3, 8, 16, 17, 49, 64, 100}) {
      SCOPED_TRACE(testing::Message() << cols << " columns");
      const int64_t rows = 5;
      std::vector<float> x(rows * cols);
      for (int64_t i = 0; i < rows * cols; ++i) x[i] = 3.0f * std::sin(0.37f * i);
      if (cols > 2) {
        x[cols] = -inf;             // row 1
        x[cols + 2] = 3.0f;  // the row's max
        x[cols + 1] = 3.0f - 90.0f;
        x[2 * cols + 1] = -1e4f;    // row 2
        for (int64_t i = 0; i < cols; ++i) x[3 * cols + i] = 0.5f;  // row 3: uniform
      }
      std::vector<float> y(rows * cols, -7.0f);
      SoftmaxRowsF32(isa, rows, cols, x.data(), y.data());
      for (int64_t r = 0; r < rows; ++r) {
        double m = -inf, sum = 0;
        for (int64_t i = 0; i < cols; ++i) m = std::max<double>(m, x[r * cols + i]);
        for (int64_t i = 0; i < cols; ++i) sum += std::exp(static_cast<double>(x[r * cols + i]) - m);
        for (int64_t i = 0; i < cols; ++i) {
          const double want = std::exp(static_cast<double>(x[r * cols + i]) - m) / sum;
          if (want < 1e-30) {
            // Entries 87.3 and more below the max: 0 where expf gives a subnormal or 0.
            EXPECT_NEAR(y[r * cols + i], want, 1.2e-38) << "row " << r << " col " << i;
          } else {
            EXPECT_LT(RelativeError(y[r * cols + i], want), 1e-6) << "row " << r << " col " << i;
          }
        }
      }
      if (cols > 2) {
        EXPECT_EQ(y[cols], 0.0f);
        EXPECT_EQ(y[cols + 1], 0.0f);  // not exp(-90), a subnormal, nor the clamp's 1.2e-38
        EXPECT_EQ(y[2 * cols + 1], 0.0f);
      }
      // In place: the same bits.
      std::vector<float> z = x;
      SoftmaxRowsF32(isa, rows, cols, z.data(), z.data());
      for (size_t i = 0; i < z.size(); ++i) ASSERT_EQ(z[i], y[i]) << "element " << i;
      all.insert(all.end(), y.begin(), y.end());
    }
    std::vector<float> nan_row = {1.0f, std::nanf(""), 2.0f};
    SoftmaxRowsF32(isa, 1, 3, nan_row.data(), nan_row.data());
    for (float v : nan_row) EXPECT_TRUE(std::isnan(v));
    if (isa == FastMathIsa::kX86_64_V4) first = all;
    if (isa == FastMathIsa::kX86_64_V3 && !first.empty()) {
      ASSERT_EQ(first.size(), all.size());
      for (size_t i = 0; i < all.size(); ++i) ASSERT_EQ(first[i], all[i]) << "element " << i;
    }
  }
}

}  // namespace
}  // namespace graphopt::runtime
