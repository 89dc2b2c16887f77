#include "runtime/kernels/fast_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace graphopt::runtime {
namespace {

// Every loop here is written on GCC's vector extensions, N float lanes, so it is vectorised
// whatever the optimiser decides. Each public function has three versions, picked once by the
// CPU it runs on: AVX-512 (x86-64-v4) with 16 lanes, AVX2+FMA (x86-64-v3) with 8, and baseline
// x86-64 with 8 lowered to SSE pairs. Lane i of every computation is the same arithmetic in each
// (products summed in the same order, the same polynomials), so the AVX-512 and AVX2 versions
// agree to the bit; the baseline one rounds each multiply-add twice.

// Helpers are forced inline so that they are compiled for each version's instruction set.
#define GRAPHOPT_INLINE inline __attribute__((always_inline))
#define GRAPHOPT_V4 __attribute__((target("arch=x86-64-v4")))
#define GRAPHOPT_V3 __attribute__((target("arch=x86-64-v3")))

template <int N>
struct Lanes {
  typedef float F __attribute__((vector_size(N * sizeof(float))));
  typedef int32_t I __attribute__((vector_size(N * sizeof(int32_t))));
};

template <int N>
using F = typename Lanes<N>::F;
template <int N>
using I = typename Lanes<N>::I;
template <int N>
struct DoubleLanes {
  typedef double D __attribute__((vector_size(N * sizeof(double))));
};
template <int N>
using Dv = typename DoubleLanes<N>::D;

template <int N>
GRAPHOPT_INLINE F<N> Load(const float* p) {
  F<N> v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
template <int N>
GRAPHOPT_INLINE void Store(float* p, F<N> v) {
  std::memcpy(p, &v, sizeof(v));
}
template <int N>
GRAPHOPT_INLINE F<N> Splat(float x) {
  return F<N>{} + x;
}

// exp(x) for x = n*ln2 + r, |r| <= ln2/2: exp(r) by a degree-6 polynomial (Cephes expf), 2^n by
// building the exponent bits. Inputs are clamped to [kExpLow, kExpHigh] first. n is x/ln2
// rounded to nearest by adding and subtracting 1.5 * 2^23 (the sum's low mantissa bits are n,
// which gives the exponent bits with one integer add): four vector operations fewer than a
// floor through two conversions, which made SiLU (exp, a division and a product) a quarter
// slower on AVX-512. Only a tie of x/ln2 between two integers picks the other n, with an r
// still inside the polynomial's range.
constexpr float kExpLow = -87.3365447506f;  // exp(kExpLow) is the smallest normal float
constexpr float kExpHigh = 88.3762626647f;

template <int N>
GRAPHOPT_INLINE F<N> Exp(F<N> x) {
  x = x < kExpLow ? Splat<N>(kExpLow) : x;
  x = x > kExpHigh ? Splat<N>(kExpHigh) : x;
  const F<N> sum = x * 1.44269504088896341f + 12582912.0f;
  const F<N> t = sum - 12582912.0f;
  const F<N> r = x - t * 0.693359375f - t * -2.12194440e-4f;
  const F<N> z = r * r;
  F<N> y = Splat<N>(1.9875691500e-4f);
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  // sum's bits are those of 1.5 * 2^23 (0x4B400000) plus n; 0x4B400000 << 23 wraps to 0.
  const I<N> bits = ((I<N>)sum + 127) << 23;
  return y * (F<N>)bits;  // the same bytes seen as floats
}

template <int N>
GRAPHOPT_INLINE F<N> KeepNan(F<N> v, F<N> result) {
  return v != v ? v : result;
}

template <int N>
GRAPHOPT_INLINE F<N> Sigmoid(F<N> v) {
  return KeepNan<N>(v, 1.0f / (1.0f + Exp<N>(-v)));
}

template <int N>
GRAPHOPT_INLINE F<N> Tanh(F<N> v) {
  const F<N> a = v < 0.0f ? -v : v;
  // Near 0: tanh(v) = v + v^3 * p(v^2) (Cephes tanhf), exact to float rounding.
  const F<N> z = v * v;
  F<N> p = Splat<N>(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const F<N> small = v + v * z * p;
  // Elsewhere: 1 - 2 / (exp(2|v|) + 1), with v's sign.
  const F<N> large_abs = 1.0f - 2.0f / (Exp<N>(2.0f * a) + 1.0f);
  const F<N> large = v < 0.0f ? -large_abs : large_abs;
  return a < 0.625f ? small : KeepNan<N>(v, large);
}

// erf(v): for |v| < 1, v * P(v^2) with P of degree 6; for 1 <= |v| < 3.925, 1 - exp(R(|v|))
// with R of degree 8 (fitted to log erfc), v's sign; from 3.925 on, +-1 (erf rounds to 1 in
// float there). Both fitted for near-minimax error on Chebyshev nodes (P relative to erf(v)/v,
// R absolute on log erfc): within 1.4e-7 of erf, and 1.7e-7 relative below 1 (fast_math_test).
template <int N>
GRAPHOPT_INLINE F<N> Erf(F<N> v) {
  const F<N> a = v < 0.0f ? -v : v;
  const F<N> z = v * v;
  F<N> p = Splat<N>(7.853857824e-05f);
  p = p * z - 8.010192541e-04f;
  p = p * z + 5.188327748e-03f;
  p = p * z - 2.685381100e-02f;
  p = p * z + 1.128358543e-01f;
  p = p * z - 3.761262596e-01f;
  p = p * z + 1.128379107e+00f;
  const F<N> small = v * p;
  F<N> r = Splat<N>(1.630008001e-06f);
  r = r * a - 4.588012234e-05f;
  r = r * a + 5.949903862e-04f;
  r = r * a - 4.749588203e-03f;
  r = r * a + 2.638836205e-02f;
  r = r * a - 1.100146472e-01f;
  r = r * a - 6.319038868e-01f;
  r = r * a - 1.130182981e+00f;
  r = r * a + 3.064542252e-04f;
  F<N> large_abs = 1.0f - Exp<N>(r);
  large_abs = a >= 3.925f ? Splat<N>(1.0f) : large_abs;
  const F<N> large = v < 0.0f ? -large_abs : large_abs;
  return a < 1.0f ? small : KeepNan<N>(v, large);
}

// x * 0.5 * (1 + erf(x / sqrt(2))): GELU, as the exported five-node pattern computes it.
template <int N>
GRAPHOPT_INLINE F<N> Gelu(F<N> v) {
  return v * 0.5f * (1.0f + Erf<N>(v * 0.70710678118654752f));
}

// x[0, n) = f(x) in N-lane steps; the tail goes through a zero-padded block.
template <int N, typename Fn>
GRAPHOPT_INLINE void Map(float* x, int64_t n, Fn f) {
  int64_t i = 0;
  for (; i + N <= n; i += N) Store<N>(x + i, f(Load<N>(x + i)));
  if (i < n) {
    float tail[N] = {};
    std::memcpy(tail, x + i, sizeof(float) * (n - i));
    Store<N>(tail, f(Load<N>(tail)));
    std::memcpy(x + i, tail, sizeof(float) * (n - i));
  }
}

// Q * N columns at a time in Q accumulators: b is read once, y written once. Eight independent
// chains hide the multiply-add latency; narrower tiers take what is left.
template <int N, int Q>
GRAPHOPT_INLINE int64_t GemvColumns(int64_t j, int64_t k, int64_t n, const float* a,
                                    const float* b, int64_t ldb, float* y) {
  for (; j + Q * N <= n; j += Q * N) {
    F<N> acc[Q];
    for (int q = 0; q < Q; ++q) acc[q] = Load<N>(y + j + q * N);
    const float* row = b + j;
    for (int64_t p = 0; p < k; ++p, row += ldb) {
      const F<N> s = Splat<N>(a[p]);
      for (int q = 0; q < Q; ++q) acc[q] += s * Load<N>(row + q * N);
    }
    for (int q = 0; q < Q; ++q) Store<N>(y + j + q * N, acc[q]);
  }
  return j;
}

template <int N>
GRAPHOPT_INLINE void Gemv(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                          float* y) {
  int64_t j = GemvColumns<N, 8>(0, k, n, a, b, ldb, y);
  j = GemvColumns<N, 4>(j, k, n, a, b, ldb, y);
  j = GemvColumns<N, 1>(j, k, n, a, b, ldb, y);
  // The last columns one by one, each product fused into the sum as the vector lanes do (so a
  // column gives the same bits whichever tier of whichever version computes it).
  for (; j < n; ++j) {
    float acc = y[j];
    for (int64_t p = 0; p < k; ++p) acc = std::fma(a[p], b[p * ldb + j], acc);
    y[j] = acc;
  }
}

// --- A few rows of A times a row-major block ---------------------------------------------------

// R rows of A against Q * N columns of b at a time, R * Q accumulators: each row of b's block is
// loaded once for the R rows. An element's arithmetic is Gemv's (its products summed in order of
// p, fused as the vector lanes do), so a row gives the same bits here and in GemvAccumulateF32.
template <int N, int Q, int R>
GRAPHOPT_INLINE int64_t GemmColumns(int64_t j, int64_t k, int64_t n, const float* a, int64_t lda,
                                    const float* b, int64_t ldb, float* y, int64_t ldy) {
  for (; j + Q * N <= n; j += Q * N) {
    F<N> acc[R][Q];
    for (int r = 0; r < R; ++r) {
      for (int q = 0; q < Q; ++q) acc[r][q] = Load<N>(y + r * ldy + j + q * N);
    }
    const float* row = b + j;
    for (int64_t p = 0; p < k; ++p, row += ldb) {
      F<N> bv[Q];
      for (int q = 0; q < Q; ++q) bv[q] = Load<N>(row + q * N);
      for (int r = 0; r < R; ++r) {
        const F<N> s = Splat<N>(a[r * lda + p]);
        for (int q = 0; q < Q; ++q) acc[r][q] += s * bv[q];
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int q = 0; q < Q; ++q) Store<N>(y + r * ldy + j + q * N, acc[r][q]);
    }
  }
  return j;
}

// Column blocks outermost: one block of b (k rows of 2N columns) stays in L1 while every row of
// A goes past it, so that b is read from memory once whatever m is.
template <int N>
GRAPHOPT_INLINE void Gemm(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float* y, int64_t ldy) {
  constexpr int64_t kCols = 2 * N;
  int64_t j = 0;
  for (; j + kCols <= n; j += kCols) {
    int64_t i = 0;
    for (; i + 4 <= m; i += 4) {
      GemmColumns<N, 2, 4>(j, k, j + kCols, a + i * lda, lda, b, ldb, y + i * ldy, ldy);
    }
    for (; i < m; ++i) {
      GemmColumns<N, 2, 1>(j, k, j + kCols, a + i * lda, lda, b, ldb, y + i * ldy, ldy);
    }
  }
  if (j == n) return;
  // The last columns: one vector block of four rows at a time, then as Gemv's last columns.
  int64_t i = 0;
  for (; i + 4 <= m; i += 4) {
    const float* ai = a + i * lda;
    float* yi = y + i * ldy;
    int64_t jj = GemmColumns<N, 1, 4>(j, k, n, ai, lda, b, ldb, yi, ldy);
    for (; jj < n; ++jj) {
      for (int r = 0; r < 4; ++r) {
        float acc = yi[r * ldy + jj];
        for (int64_t p = 0; p < k; ++p) acc = std::fma(ai[r * lda + p], b[p * ldb + jj], acc);
        yi[r * ldy + jj] = acc;
      }
    }
  }
  for (; i < m; ++i) Gemv<N>(k, n - j, a + i * lda, b + j, ldb, y + i * ldy + j);
}

GRAPHOPT_V4 void GemmV4(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float* y, int64_t ldy) {
  Gemm<16>(m, k, n, a, lda, b, ldb, y, ldy);
}
GRAPHOPT_V3 void GemmV3(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float* y, int64_t ldy) {
  Gemm<8>(m, k, n, a, lda, b, ldb, y, ldy);
}
void GemmBase(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda, const float* b,
              int64_t ldb, float* y, int64_t ldy) {
  Gemm<8>(m, k, n, a, lda, b, ldb, y, ldy);
}

// --- Rows of a matrix dotted with one vector -------------------------------------------------

// The 16-lane accumulator of one row: lane j sums a[p] * row[p] for p = j mod 16 (one vector of
// 16 or two of 8, the same fused multiply-adds per lane either way), the last partial block
// zero-padded, then the lanes added pairwise (8 + 8, 4 + 4, 2 + 2, 1 + 1). Every row gets the same
// arithmetic whichever version, and whichever group of rows, computes it.
template <int N>
struct Acc16 {
  static constexpr int kVectors = 16 / N;
  F<N> v[kVectors];
};

template <int N>
GRAPHOPT_INLINE float Reduce16(const Acc16<N>& acc) {
  float lanes[16];
  for (int q = 0; q < Acc16<N>::kVectors; ++q) Store<N>(lanes + q * N, acc.v[q]);
  for (int w = 8; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  }
  return lanes[0];
}

// y[i] = row_i . a for R rows at once (R * 16 / N independent chains), k in 16-element blocks.
template <int N, int R>
GRAPHOPT_INLINE int64_t DotRowsBlock(int64_t i, int64_t k, int64_t n, const float* a,
                                     const float* b, int64_t ldb, float* y) {
  constexpr int kV = Acc16<N>::kVectors;
  const int64_t full = k / 16 * 16;
  float a_tail[16] = {};
  std::memcpy(a_tail, a + full, sizeof(float) * (k - full));
  for (; i + R <= n; i += R) {
    Acc16<N> acc[R];
    for (int r = 0; r < R; ++r) {
      for (int q = 0; q < kV; ++q) acc[r].v[q] = F<N>{};
    }
    const float* row = b + i * ldb;
    for (int64_t p = 0; p < full; p += 16) {
      for (int q = 0; q < kV; ++q) {
        const F<N> x = Load<N>(a + p + q * N);
        for (int r = 0; r < R; ++r) acc[r].v[q] += x * Load<N>(row + r * ldb + p + q * N);
      }
    }
    if (full < k) {
      for (int r = 0; r < R; ++r) {
        float b_tail[16] = {};
        std::memcpy(b_tail, row + r * ldb + full, sizeof(float) * (k - full));
        for (int q = 0; q < kV; ++q) {
          acc[r].v[q] += Load<N>(a_tail + q * N) * Load<N>(b_tail + q * N);
        }
      }
    }
    for (int r = 0; r < R; ++r) y[i + r] = Reduce16<N>(acc[r]);
  }
  return i;
}

template <int N, int R>
GRAPHOPT_INLINE void DotRows(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                             float* y) {
  DotRowsBlock<N, 1>(DotRowsBlock<N, R>(0, k, n, a, b, ldb, y), k, n, a, b, ldb, y);
}

// The three versions of each public function.
GRAPHOPT_V4 void GemvV4(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                        float* y) {
  Gemv<16>(k, n, a, b, ldb, y);
}
GRAPHOPT_V3 void GemvV3(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                        float* y) {
  Gemv<8>(k, n, a, b, ldb, y);
}
void GemvBase(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb, float* y) {
  Gemv<8>(k, n, a, b, ldb, y);
}

// Eight chains: eight rows of one vector (AVX-512), four of two (AVX2, 16 registers).
GRAPHOPT_V4 void DotRowsV4(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                           float* y) {
  DotRows<16, 8>(k, n, a, b, ldb, y);
}
GRAPHOPT_V3 void DotRowsV3(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                           float* y) {
  DotRows<8, 4>(k, n, a, b, ldb, y);
}
void DotRowsBase(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb, float* y) {
  DotRows<8, 2>(k, n, a, b, ldb, y);
}

#define GRAPHOPT_MAP_VERSIONS(name, expr)                                             \
  GRAPHOPT_V4 void name##V4(float* x, int64_t n) {                                     \
    Map<16>(x, n, [](F<16> v) __attribute__((always_inline)) { return expr<16>(v); }); \
  }                                                                                    \
  GRAPHOPT_V3 void name##V3(float* x, int64_t n) {                                     \
    Map<8>(x, n, [](F<8> v) __attribute__((always_inline)) { return expr<8>(v); });    \
  }                                                                                    \
  void name##Base(float* x, int64_t n) {                                               \
    Map<8>(x, n, [](F<8> v) __attribute__((always_inline)) { return expr<8>(v); });    \
  }

template <int N>
GRAPHOPT_INLINE F<N> ExpKeepNan(F<N> v) {
  return KeepNan<N>(v, Exp<N>(v));
}

GRAPHOPT_MAP_VERSIONS(Exp, ExpKeepNan)
GRAPHOPT_MAP_VERSIONS(Sigmoid, Sigmoid)
GRAPHOPT_MAP_VERSIONS(Tanh, Tanh)
GRAPHOPT_MAP_VERSIONS(Erf, Erf)
GRAPHOPT_MAP_VERSIONS(Gelu, Gelu)
#undef GRAPHOPT_MAP_VERSIONS

// --- Parameterised activations ----------------------------------------------------------------

// log(x) (Cephes logf): x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(1 + (m - 1)) by a
// degree-8 polynomial, e * ln2 in two parts. Subnormals are scaled into range first; 0, negative,
// infinite and NaN inputs give -inf, NaN, inf and NaN.
template <int N>
GRAPHOPT_INLINE F<N> Log(F<N> v) {
  const I<N> tiny = v < 1.17549435e-38f;
  const F<N> x = tiny ? v * 8388608.0f : v;
  const I<N> bits = (I<N>)x;
  I<N> e = ((bits >> 23) & 0xff) - 126;
  e = tiny ? e - 23 : e;
  F<N> m = (F<N>)((bits & 0x807fffff) | 0x3f000000);  // [0.5, 1)
  const I<N> low = m < 0.707106781186547524f;
  const F<N> ef = __builtin_convertvector(low ? e - 1 : e, F<N>);
  m = low ? m + m - 1.0f : m - 1.0f;
  const F<N> z = m * m;
  F<N> y = Splat<N>(7.0376836292e-2f);
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  F<N> r = m + y + ef * 0.693359375f;
  const float inf = __builtin_inff();
  r = v == 0.0f ? Splat<N>(-inf) : r;
  r = v < 0.0f ? Splat<N>(__builtin_nanf("")) : r;
  r = v == inf ? Splat<N>(inf) : r;
  return KeepNan<N>(v, r);
}

// log(1 + t) for t > -1: w = 1 + t rounded, then log(w) scaled by t / (w - 1), which cancels
// the rounding of w (Goldberg's correction); t itself where w rounds to 1.
template <int N>
GRAPHOPT_INLINE F<N> Log1p(F<N> t) {
  const F<N> w = 1.0f + t;
  const F<N> d = w - 1.0f;
  const F<N> safe = d == 0.0f ? Splat<N>(1.0f) : d;
  return d == 0.0f ? t : Log<N>(w) * (t / safe);
}

// exp(x) - 1 by Kahan's correction: u = exp(x), then (u - 1) * x / log(u), which cancels the
// rounding of u; x itself where u rounds to 1, -1 where u - 1 does.
template <int N>
GRAPHOPT_INLINE F<N> Expm1(F<N> x) {
  const F<N> u = Exp<N>(x);
  const F<N> d = u - 1.0f;
  const F<N> lu = Log<N>(u);
  const F<N> safe = lu == 0.0f ? Splat<N>(1.0f) : lu;
  F<N> r = d * (x / safe);
  r = d == -1.0f ? d : r;
  r = x > 88.0f ? d : r;  // exp clamps there: the ratio would no longer hold
  r = u == 1.0f ? x : r;
  return KeepNan<N>(x, r);
}

template <int N>
GRAPHOPT_INLINE F<N> Softplus(F<N> v) {
  const F<N> a = v < 0.0f ? -v : v;
  const F<N> pos = v > 0.0f ? v : Splat<N>(0.0f);
  return KeepNan<N>(v, pos + Log1p<N>(Exp<N>(-a)));
}

template <int N>
GRAPHOPT_INLINE F<N> Clamp01(F<N> r) {
  r = r < 0.0f ? Splat<N>(0.0f) : r;
  return r > 1.0f ? Splat<N>(1.0f) : r;
}

template <int N>
GRAPHOPT_INLINE void Activate(Activation act, float alpha, float beta, float* x, int64_t n) {
  switch (act) {
    case Activation::kLog:
      return Map<N>(x, n, [](F<N> v) __attribute__((always_inline)) { return Log<N>(v); });
    case Activation::kSoftplus:
      return Map<N>(x, n, [](F<N> v) __attribute__((always_inline)) { return Softplus<N>(v); });
    case Activation::kExpm1:
      return Map<N>(x, n, [](F<N> v) __attribute__((always_inline)) { return Expm1<N>(v); });
    case Activation::kElu:
      return Map<N>(x, n, [alpha](F<N> v) __attribute__((always_inline)) {
        return v < 0.0f ? alpha * Expm1<N>(v) : v;
      });
    case Activation::kSelu:
      return Map<N>(x, n, [alpha, beta](F<N> v) __attribute__((always_inline)) {
        return v <= 0.0f ? beta * (alpha * Expm1<N>(v)) : beta * v;
      });
    case Activation::kCelu:
      return Map<N>(x, n, [alpha](F<N> v) __attribute__((always_inline)) {
        const F<N> neg = alpha * Expm1<N>(v / alpha);
        const F<N> r = (v > 0.0f ? v : Splat<N>(0.0f)) + (neg < 0.0f ? neg : Splat<N>(0.0f));
        return KeepNan<N>(v, r);
      });
    case Activation::kHardSwish:
      return Map<N>(x, n, [](F<N> v) __attribute__((always_inline)) {
        return v * Clamp01<N>(v / 6.0f + 0.5f);
      });
    case Activation::kSoftsign:
      return Map<N>(x, n, [](F<N> v) __attribute__((always_inline)) {
        return v / (1.0f + (v < 0.0f ? -v : v));
      });
    case Activation::kSilu:
      return Map<N>(x, n, [](F<N> v) __attribute__((always_inline)) { return v * Sigmoid<N>(v); });
    case Activation::kMish:
      return Map<N>(x, n, [](F<N> v) __attribute__((always_inline)) {
        return v * Tanh<N>(Softplus<N>(v));
      });
  }
}

GRAPHOPT_V4 void ActivateV4(Activation act, float alpha, float beta, float* x, int64_t n) {
  Activate<16>(act, alpha, beta, x, n);
}
GRAPHOPT_V3 void ActivateV3(Activation act, float alpha, float beta, float* x, int64_t n) {
  Activate<8>(act, alpha, beta, x, n);
}
void ActivateBase(Activation act, float alpha, float beta, float* x, int64_t n) {
  Activate<8>(act, alpha, beta, x, n);
}

// --- Layer normalisation ----------------------------------------------------------------------

// No fused multiply-adds here: GCC contracts the AVX-512 and AVX2 loops differently (one vector
// of 16 against two of 8), and the two versions must agree to the bit.
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")

// The sum of p[0, n) (of (p[i] - center)^2 when kSquares): 16 partial sums, lane j taking the
// elements i = j mod 16 (the last partial block padded with values that add nothing), added
// pairwise (8 + 8, 4 + 4, ...). N = 16 (one vector) or 8 (two): the same arithmetic per element
// either way.
template <int N, bool kSquares>
GRAPHOPT_INLINE float RowSum(const float* p, int64_t n, float center) {
  constexpr int kVectors = 16 / N;
  F<N> acc[kVectors] = {};
  auto add = [&](const float* block) __attribute__((always_inline)) {
    for (int k = 0; k < kVectors; ++k) {
      F<N> v = Load<N>(block + k * N);
      if constexpr (kSquares) {
        v -= center;
        acc[k] += v * v;
      } else {
        acc[k] += v;
      }
    }
  };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) add(p + i);
  if (i < n) {
    float block[16];
    std::fill(block, block + 16, kSquares ? center : 0.0f);
    std::copy(p + i, p + n, block);
    add(block);
  }
  float lanes[16];
  for (int k = 0; k < kVectors; ++k) std::memcpy(lanes + k * N, &acc[k], sizeof(F<N>));
  for (int width = 8; width >= 1; width /= 2) {
    for (int j = 0; j < width; ++j) lanes[j] += lanes[j + width];
  }
  return lanes[0];
}

template <int N>
GRAPHOPT_INLINE void LayerNormRows(int64_t rows, int64_t cols, const float* x,
                                   const float* scale, int64_t scale_step, const float* bias,
                                   int64_t bias_step, float eps, float* y, float* mean_out,
                                   float* inv_out) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * cols;
    float* q = y + r * cols;
    const float mean = cols > 0 ? RowSum<N, false>(p, cols, 0.0f) / static_cast<float>(cols) : 0.0f;
    const float var = cols > 0 ? RowSum<N, true>(p, cols, mean) / static_cast<float>(cols) : 0.0f;
    const float inv = static_cast<float>(1.0 / std::sqrt(static_cast<double>(var) + eps));
    if (mean_out != nullptr) mean_out[r] = mean;
    if (inv_out != nullptr) inv_out[r] = inv;
    // Blocks of 16 in both widths, a partial last block through a padded copy: the same
    // vector arithmetic for every element in either version.
    auto normalize = [&](const float* in, const float* s, const float* b, float* out)
                         __attribute__((always_inline)) {
      for (int j = 0; j < 16; j += N) {
        F<N> v = (Load<N>(in + j) - mean) * inv;
        if (scale != nullptr) v *= scale_step != 0 ? Load<N>(s + j) : Splat<N>(scale[0]);
        if (bias != nullptr) v += bias_step != 0 ? Load<N>(b + j) : Splat<N>(bias[0]);
        Store<N>(out + j, v);
      }
    };
    int64_t i = 0;
    for (; i + 16 <= cols; i += 16) {
      normalize(p + i, scale == nullptr ? nullptr : scale + i * scale_step,
                bias == nullptr ? nullptr : bias + i * bias_step, q + i);
    }
    if (i < cols) {
      const int64_t rest = cols - i;
      float in[16] = {}, s[16] = {}, b[16] = {}, out[16];
      std::copy(p + i, p + cols, in);
      if (scale != nullptr && scale_step != 0) std::copy(scale + i, scale + cols, s);
      if (bias != nullptr && bias_step != 0) std::copy(bias + i, bias + cols, b);
      normalize(in, s, b, out);
      std::copy(out, out + rest, q + i);
    }
  }
}

#define GRAPHOPT_LAYER_NORM_ARGS                                                           \
  int64_t rows, int64_t cols, const float *x, const float *scale, int64_t scale_step,     \
      const float *bias, int64_t bias_step, float eps, float *y, float *mean, float *inv_std
GRAPHOPT_V4 void LayerNormV4(GRAPHOPT_LAYER_NORM_ARGS) {
  LayerNormRows<16>(rows, cols, x, scale, scale_step, bias, bias_step, eps, y, mean, inv_std);
}
GRAPHOPT_V3 void LayerNormV3(GRAPHOPT_LAYER_NORM_ARGS) {
  LayerNormRows<8>(rows, cols, x, scale, scale_step, bias, bias_step, eps, y, mean, inv_std);
}
void LayerNormBase(GRAPHOPT_LAYER_NORM_ARGS) {
  LayerNormRows<8>(rows, cols, x, scale, scale_step, bias, bias_step, eps, y, mean, inv_std);
}

#pragma GCC pop_options

// --- Softmax rows ----------------------------------------------------------------------------

// exp(d) for d <= 0 (d - max of a softmax row); 0 where d < kExpLow, where expf's result is a
// subnormal below 1.2e-38 or 0: such an entry is a masked one (-inf, -1e4, -100 added by an
// attention mask), and computing the subnormal would cost a microcode assist per vector on x86
// (as would multiplying it by the row's 1 / sum afterwards) for a difference of under 1.2e-38.
template <int N>
GRAPHOPT_INLINE F<N> ExpNonPositive(F<N> d) {
  return KeepNan<N>(d, d < kExpLow ? Splat<N>(0.0f) : Exp<N>(d));
}

// The 16 lanes of a block held as one vector of 16 or two of 8 (lane j at j mod 16), folded
// pairwise in registers (lanes j and j + 8, then j and j + 4, ...): the same operations on the
// same lanes in both widths. A fold through memory stalls on store forwarding of the partial
// reloads, which cost more than the row's arithmetic for rows of a few dozen.
template <int N>
GRAPHOPT_INLINE float FoldMax16(const F<N>* v) {
  F<8> m8;
  if constexpr (N == 16) {
    const F<8> lo = __builtin_shufflevector(v[0], v[0], 0, 1, 2, 3, 4, 5, 6, 7);
    const F<8> hi = __builtin_shufflevector(v[0], v[0], 8, 9, 10, 11, 12, 13, 14, 15);
    m8 = hi > lo ? hi : lo;
  } else {
    m8 = v[1] > v[0] ? v[1] : v[0];
  }
  const F<4> lo4 = __builtin_shufflevector(m8, m8, 0, 1, 2, 3);
  const F<4> hi4 = __builtin_shufflevector(m8, m8, 4, 5, 6, 7);
  const F<4> m4 = hi4 > lo4 ? hi4 : lo4;
  const F<2> lo2 = __builtin_shufflevector(m4, m4, 0, 1);
  const F<2> hi2 = __builtin_shufflevector(m4, m4, 2, 3);
  const F<2> m2 = hi2 > lo2 ? hi2 : lo2;
  return m2[1] > m2[0] ? m2[1] : m2[0];
}

template <int N>
GRAPHOPT_INLINE double FoldSum16(const Dv<N>* v) {
  Dv<8> s8;
  if constexpr (N == 16) {
    s8 = __builtin_shufflevector(v[0], v[0], 0, 1, 2, 3, 4, 5, 6, 7) +
         __builtin_shufflevector(v[0], v[0], 8, 9, 10, 11, 12, 13, 14, 15);
  } else {
    s8 = v[0] + v[1];
  }
  const Dv<4> s4 = __builtin_shufflevector(s8, s8, 0, 1, 2, 3) +
                   __builtin_shufflevector(s8, s8, 4, 5, 6, 7);
  const Dv<2> s2 = __builtin_shufflevector(s4, s4, 0, 1) + __builtin_shufflevector(s4, s4, 2, 3);
  return s2[0] + s2[1];
}

// Each row of cols floats: y = exp(x - max) / sum, the sum of the exps in double. Three passes:
// every row's max and x - max (into y); exp over all the rows at once (so that short rows,
// attention's at batch 1, do not each pay for a padded vector); every row's sum and scaling.
// The max and the sum take a row's whole blocks of 16 in 16 lanes (lane j: elements j mod 16)
// folded pairwise, then its last elements one by one: the same arithmetic per element in every
// version. y may be x.
template <int N>
GRAPHOPT_INLINE void SoftmaxRows(int64_t rows, int64_t cols, const float* x, float* y) {
  constexpr int kVectors = 16 / N;
  const float ninf = -__builtin_inff();
  const int64_t full = cols / 16 * 16;
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = x + r * cols;
    float* q = y + r * cols;
    // The max ignores NaN (a NaN entry makes the sum, so the whole row, NaN).
    float m = ninf;
    if (full > 0) {
      F<N> vmax[kVectors];
      for (int k = 0; k < kVectors; ++k) vmax[k] = Splat<N>(ninf);
      for (int64_t i = 0; i < full; i += 16) {
        for (int k = 0; k < kVectors; ++k) {
          const F<N> v = Load<N>(p + i + k * N);
          vmax[k] = v > vmax[k] ? v : vmax[k];
        }
      }
      m = FoldMax16<N>(vmax);
    }
    for (int64_t i = full; i < cols; ++i) m = p[i] > m ? p[i] : m;
    int64_t i = 0;
    for (; i + N <= cols; i += N) Store<N>(q + i, Load<N>(p + i) - m);
    for (; i < cols; ++i) q[i] = p[i] - m;
  }
  const int64_t total = rows * cols;
  int64_t i = 0;
  for (; i + N <= total; i += N) Store<N>(y + i, ExpNonPositive<N>(Load<N>(y + i)));
  if (i < total) {
    float block[N];
    std::fill(block, block + N, ninf);
    std::copy(y + i, y + total, block);
    Store<N>(block, ExpNonPositive<N>(Load<N>(block)));
    std::copy(block, block + (total - i), y + i);
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* q = y + r * cols;
    double sum = 0;
    if (full > 0) {
      Dv<N> acc[kVectors] = {};
      for (int64_t j = 0; j < full; j += 16) {
        for (int k = 0; k < kVectors; ++k) {
          acc[k] += __builtin_convertvector(Load<N>(q + j + k * N), Dv<N>);
        }
      }
      sum = FoldSum16<N>(acc);
    }
    for (int64_t j = full; j < cols; ++j) sum += static_cast<double>(q[j]);
    const float inv = static_cast<float>(1.0 / sum);
    int64_t j = 0;
    for (; j + N <= cols; j += N) Store<N>(q + j, Load<N>(q + j) * inv);
    for (; j < cols; ++j) q[j] *= inv;
  }
}

GRAPHOPT_V4 void SoftmaxRowsV4(int64_t rows, int64_t cols, const float* x, float* y) {
  SoftmaxRows<16>(rows, cols, x, y);
}
GRAPHOPT_V3 void SoftmaxRowsV3(int64_t rows, int64_t cols, const float* x, float* y) {
  SoftmaxRows<8>(rows, cols, x, y);
}
void SoftmaxRowsBase(int64_t rows, int64_t cols, const float* x, float* y) {
  SoftmaxRows<8>(rows, cols, x, y);
}

// --- Interleaving three planes -------------------------------------------------------------

void Interleave3Base(const uint32_t* p0, const uint32_t* p1, const uint32_t* p2, int64_t n,
                     uint32_t* out) {
  for (int64_t i = 0; i < n; ++i) {
    out[3 * i] = p0[i];
    out[3 * i + 1] = p1[i];
    out[3 * i + 2] = p2[i];
  }
}

// Shuffle masks for 16 pixels of three planes (a, b, c) into three vectors of 16 elements:
// element e of output vector k is element (16k + e) of the interleaved run, which is pixel
// (16k + e) / 3 of plane (16k + e) % 3. The first shuffle takes a and b (indices 16+ are b's),
// the second keeps that or takes c.
struct Interleave3Masks {
  int32_t ab[3][16];
  int32_t c[3][16];
};
constexpr Interleave3Masks MakeInterleave3Masks() {
  Interleave3Masks m{};
  for (int k = 0; k < 3; ++k) {
    for (int e = 0; e < 16; ++e) {
      const int g = 16 * k + e, pixel = g / 3, plane = g % 3;
      m.ab[k][e] = plane == 0 ? pixel : plane == 1 ? 16 + pixel : 0;
      m.c[k][e] = plane == 2 ? 16 + pixel : e;
    }
  }
  return m;
}
constexpr Interleave3Masks kInterleave3Masks = MakeInterleave3Masks();

GRAPHOPT_V4 void Interleave3V4(const uint32_t* p0, const uint32_t* p1, const uint32_t* p2,
                               int64_t n, uint32_t* out) {
  using V = I<16>;
  V ab[3], c[3];
  for (int k = 0; k < 3; ++k) {
    std::memcpy(&ab[k], kInterleave3Masks.ab[k], sizeof(V));
    std::memcpy(&c[k], kInterleave3Masks.c[k], sizeof(V));
  }
  int64_t i = 0;
#if !defined(__clang__)  // clang has no __builtin_shuffle: its builds (fuzz, tsan) copy lanes
  for (; i + 16 <= n; i += 16) {
    V a, b, z;
    std::memcpy(&a, p0 + i, sizeof(V));
    std::memcpy(&b, p1 + i, sizeof(V));
    std::memcpy(&z, p2 + i, sizeof(V));
    for (int k = 0; k < 3; ++k) {
      const V v = __builtin_shuffle(__builtin_shuffle(a, b, ab[k]), z, c[k]);
      std::memcpy(out + 3 * i + 16 * k, &v, sizeof(V));
    }
  }
#endif
  Interleave3Base(p0 + i, p1 + i, p2 + i, n - i, out + 3 * i);
}

// --- Pointwise convolution rows ---------------------------------------------------------------

// P pixels of a channels-last 1x1 convolution, M = 16 Z + 8 Y output channels held in Z vectors
// of 16 lanes and Y of 8 (AVX-512: Z zmm and one ymm, so that a width of 24 costs one and a half
// vector multiply-adds per input channel, not two): every accumulator starts at the bias and
// adds x * w for each input channel in order, so lane j of every version computes the same.
template <int Z, int Y, int P>
GRAPHOPT_INLINE void PointwiseBlock(int64_t k, const float* x, const float* w, const float* bias,
                                    float* y) {
  constexpr int M = 16 * Z + 8 * Y;
  constexpr int kZ = Z > 0 ? Z : 1, kY = Y > 0 ? Y : 1;
  F<16> a[P][kZ];
  F<8> b[P][kY];
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) {
    for (int z = 0; z < Z; ++z) a[p][z] = bias != nullptr ? Load<16>(bias + 16 * z) : F<16>{};
    for (int q = 0; q < Y; ++q) b[p][q] = bias != nullptr ? Load<8>(bias + 16 * Z + 8 * q) : F<8>{};
  }
  for (int64_t c = 0; c < k; ++c) {
    F<16> wz[kZ];
    F<8> wy[kY];
    for (int z = 0; z < Z; ++z) wz[z] = Load<16>(w + c * M + 16 * z);
    for (int q = 0; q < Y; ++q) wy[q] = Load<8>(w + c * M + 16 * Z + 8 * q);
#pragma GCC unroll 32
    for (int p = 0; p < P; ++p) {
      const float v = x[p * k + c];
      for (int z = 0; z < Z; ++z) a[p][z] += v * wz[z];
      for (int q = 0; q < Y; ++q) b[p][q] += v * wy[q];
    }
  }
#pragma GCC unroll 32
  for (int p = 0; p < P; ++p) {
    for (int z = 0; z < Z; ++z) Store<16>(y + p * M + 16 * z, a[p][z]);
    for (int q = 0; q < Y; ++q) Store<8>(y + p * M + 16 * Z + 8 * q, b[p][q]);
  }
}

template <int Z, int Y, int P>
GRAPHOPT_INLINE void PointwiseRows(int64_t pixels, int64_t k, const float* x, const float* w,
                                   const float* bias, float* y) {
  constexpr int M = 16 * Z + 8 * Y;
  int64_t p = 0;
  for (; p + P <= pixels; p += P) PointwiseBlock<Z, Y, P>(k, x + p * k, w, bias, y + p * M);
  for (; p < pixels; ++p) PointwiseBlock<Z, Y, 1>(k, x + p * k, w, bias, y + p * M);
}

#define GRAPHOPT_POINTWISE_ARGS                                                            \
  int64_t pixels, int64_t k, int64_t m, const float *x, const float *w, const float *bias, \
      float *y
// Pixels per block: as many as the accumulators and the weight vectors leave registers for (32
// vector registers with AVX-512, 16 with AVX2).
GRAPHOPT_V4 void PointwiseRowsV4(GRAPHOPT_POINTWISE_ARGS) {
  switch (m) {
    case 8: return PointwiseRows<0, 1, 24>(pixels, k, x, w, bias, y);
    case 16: return PointwiseRows<1, 0, 24>(pixels, k, x, w, bias, y);
    case 24: return PointwiseRows<1, 1, 12>(pixels, k, x, w, bias, y);
    case 40: return PointwiseRows<2, 1, 8>(pixels, k, x, w, bias, y);
  }
}
GRAPHOPT_V3 void PointwiseRowsV3(GRAPHOPT_POINTWISE_ARGS) {
  switch (m) {
    case 8: return PointwiseRows<0, 1, 12>(pixels, k, x, w, bias, y);
    case 16: return PointwiseRows<0, 2, 6>(pixels, k, x, w, bias, y);
    case 24: return PointwiseRows<0, 3, 4>(pixels, k, x, w, bias, y);
    case 40: return PointwiseRows<0, 5, 2>(pixels, k, x, w, bias, y);
  }
}
void PointwiseRowsBase(GRAPHOPT_POINTWISE_ARGS) {
  switch (m) {
    case 8: return PointwiseRows<0, 1, 12>(pixels, k, x, w, bias, y);
    case 16: return PointwiseRows<0, 2, 6>(pixels, k, x, w, bias, y);
    case 24: return PointwiseRows<0, 3, 4>(pixels, k, x, w, bias, y);
    case 40: return PointwiseRows<0, 5, 2>(pixels, k, x, w, bias, y);
  }
}

}  // namespace

FastMathIsa DetectedFastMathIsa() {
#if defined(__clang__)
  // clang 14's __builtin_cpu_supports knows features, not the x86-64-vN levels.
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512cd") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vl");
  static const FastMathIsa isa = v4   ? FastMathIsa::kX86_64_V4
                                 : v3 ? FastMathIsa::kX86_64_V3
                                      : FastMathIsa::kX86_64;
#else
  static const FastMathIsa isa = __builtin_cpu_supports("x86-64-v4")   ? FastMathIsa::kX86_64_V4
                                 : __builtin_cpu_supports("x86-64-v3") ? FastMathIsa::kX86_64_V3
                                                                       : FastMathIsa::kX86_64;
#endif
  return isa;
}

const char* FastMathIsaName(FastMathIsa isa) {
  switch (isa) {
    case FastMathIsa::kX86_64_V4: return "x86-64-v4 (AVX-512, 16 lanes)";
    case FastMathIsa::kX86_64_V3: return "x86-64-v3 (AVX2+FMA, 8 lanes)";
    case FastMathIsa::kX86_64: return "x86-64 (SSE2, 8 lanes in pairs)";
  }
  return "?";
}

bool FastMathIsaSupported(FastMathIsa isa) {
  return static_cast<int>(isa) >= static_cast<int>(DetectedFastMathIsa());
}

void GemvAccumulateF32(FastMathIsa isa, int64_t k, int64_t n, const float* a, const float* b,
                       int64_t ldb, float* y) {
  switch (isa) {
    case FastMathIsa::kX86_64_V4: return GemvV4(k, n, a, b, ldb, y);
    case FastMathIsa::kX86_64_V3: return GemvV3(k, n, a, b, ldb, y);
    case FastMathIsa::kX86_64: return GemvBase(k, n, a, b, ldb, y);
  }
}

void DotRowsF32(FastMathIsa isa, int64_t k, int64_t n, const float* a, const float* b,
                int64_t ldb, float* y) {
  switch (isa) {
    case FastMathIsa::kX86_64_V4: return DotRowsV4(k, n, a, b, ldb, y);
    case FastMathIsa::kX86_64_V3: return DotRowsV3(k, n, a, b, ldb, y);
    case FastMathIsa::kX86_64: return DotRowsBase(k, n, a, b, ldb, y);
  }
}

void GemmAccumulateF32(FastMathIsa isa, int64_t m, int64_t k, int64_t n, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* y, int64_t ldy) {
  switch (isa) {
    case FastMathIsa::kX86_64_V4: return GemmV4(m, k, n, a, lda, b, ldb, y, ldy);
    case FastMathIsa::kX86_64_V3: return GemmV3(m, k, n, a, lda, b, ldb, y, ldy);
    case FastMathIsa::kX86_64: return GemmBase(m, k, n, a, lda, b, ldb, y, ldy);
  }
}

void GemmAccumulateF32(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float* y, int64_t ldy) {
  GemmAccumulateF32(DetectedFastMathIsa(), m, k, n, a, lda, b, ldb, y, ldy);
}

void DotRowsF32(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb, float* y) {
  DotRowsF32(DetectedFastMathIsa(), k, n, a, b, ldb, y);
}

#define GRAPHOPT_MAP_DISPATCH(name)                               \
  void name##F32(FastMathIsa isa, float* x, int64_t n) {          \
    switch (isa) {                                                \
      case FastMathIsa::kX86_64_V4: return name##V4(x, n);        \
      case FastMathIsa::kX86_64_V3: return name##V3(x, n);        \
      case FastMathIsa::kX86_64: return name##Base(x, n);         \
    }                                                             \
  }                                                               \
  void name##F32(float* x, int64_t n) { name##F32(DetectedFastMathIsa(), x, n); }

GRAPHOPT_MAP_DISPATCH(Exp)
GRAPHOPT_MAP_DISPATCH(Sigmoid)
GRAPHOPT_MAP_DISPATCH(Tanh)
GRAPHOPT_MAP_DISPATCH(Erf)
GRAPHOPT_MAP_DISPATCH(Gelu)
#undef GRAPHOPT_MAP_DISPATCH

void ActivationF32(FastMathIsa isa, Activation act, float alpha, float beta, float* x,
                   int64_t n) {
  switch (isa) {
    case FastMathIsa::kX86_64_V4: return ActivateV4(act, alpha, beta, x, n);
    case FastMathIsa::kX86_64_V3: return ActivateV3(act, alpha, beta, x, n);
    case FastMathIsa::kX86_64: return ActivateBase(act, alpha, beta, x, n);
  }
}

void ActivationF32(Activation act, float alpha, float beta, float* x, int64_t n) {
  ActivationF32(DetectedFastMathIsa(), act, alpha, beta, x, n);
}

void GemvAccumulateF32(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                       float* y) {
  GemvAccumulateF32(DetectedFastMathIsa(), k, n, a, b, ldb, y);
}

void LayerNormRowsF32(FastMathIsa isa, GRAPHOPT_LAYER_NORM_ARGS) {
  switch (isa) {
    case FastMathIsa::kX86_64_V4:
      return LayerNormV4(rows, cols, x, scale, scale_step, bias, bias_step, eps, y, mean, inv_std);
    case FastMathIsa::kX86_64_V3:
      return LayerNormV3(rows, cols, x, scale, scale_step, bias, bias_step, eps, y, mean, inv_std);
    case FastMathIsa::kX86_64:
      return LayerNormBase(rows, cols, x, scale, scale_step, bias, bias_step, eps, y, mean,
                           inv_std);
  }
}

void LayerNormRowsF32(GRAPHOPT_LAYER_NORM_ARGS) {
  LayerNormRowsF32(DetectedFastMathIsa(), rows, cols, x, scale, scale_step, bias, bias_step, eps,
                   y, mean, inv_std);
}
#undef GRAPHOPT_LAYER_NORM_ARGS

void SoftmaxRowsF32(FastMathIsa isa, int64_t rows, int64_t cols, const float* x, float* y) {
  switch (isa) {
    case FastMathIsa::kX86_64_V4: return SoftmaxRowsV4(rows, cols, x, y);
    case FastMathIsa::kX86_64_V3: return SoftmaxRowsV3(rows, cols, x, y);
    case FastMathIsa::kX86_64: return SoftmaxRowsBase(rows, cols, x, y);
  }
}

void SoftmaxRowsF32(int64_t rows, int64_t cols, const float* x, float* y) {
  SoftmaxRowsF32(DetectedFastMathIsa(), rows, cols, x, y);
}

void Interleave3x32(FastMathIsa isa, const uint32_t* p0, const uint32_t* p1, const uint32_t* p2,
                    int64_t n, uint32_t* out) {
  // Only AVX-512 has a two-source shuffle of 16 lanes (vpermt2d); the others copy per element.
  if (isa == FastMathIsa::kX86_64_V4) return Interleave3V4(p0, p1, p2, n, out);
  Interleave3Base(p0, p1, p2, n, out);
}

void Interleave3x32(const uint32_t* p0, const uint32_t* p1, const uint32_t* p2, int64_t n,
                    uint32_t* out) {
  Interleave3x32(DetectedFastMathIsa(), p0, p1, p2, n, out);
}

bool PointwiseRowsWidthSupported(int64_t m) { return m == 8 || m == 16 || m == 24 || m == 40; }

void PointwiseRowsF32(FastMathIsa isa, GRAPHOPT_POINTWISE_ARGS) {
  if (!PointwiseRowsWidthSupported(m)) {  // correct for any width, not fast
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t j = 0; j < m; ++j) {
        float acc = bias != nullptr ? bias[j] : 0.0f;
        for (int64_t c = 0; c < k; ++c) acc += x[p * k + c] * w[c * m + j];
        y[p * m + j] = acc;
      }
    }
    return;
  }
  switch (isa) {
    case FastMathIsa::kX86_64_V4: return PointwiseRowsV4(pixels, k, m, x, w, bias, y);
    case FastMathIsa::kX86_64_V3: return PointwiseRowsV3(pixels, k, m, x, w, bias, y);
    case FastMathIsa::kX86_64: return PointwiseRowsBase(pixels, k, m, x, w, bias, y);
  }
}

void PointwiseRowsF32(GRAPHOPT_POINTWISE_ARGS) {
  PointwiseRowsF32(DetectedFastMathIsa(), pixels, k, m, x, w, bias, y);
}
#undef GRAPHOPT_POINTWISE_ARGS

}  // namespace graphopt::runtime
