#include "runtime/kernels/fast_math.h"

#include <cstdint>
#include <cstring>

namespace graphopt::runtime {
namespace {

// Every loop here is written on GCC's vector extensions (8 float lanes), so it is vectorised
// whatever the optimiser decides; the default clone lowers the lanes to SSE pairs.
#define GRAPHOPT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))

// Helpers are forced inline so that they are compiled for each clone's instruction set.
#define GRAPHOPT_INLINE inline __attribute__((always_inline))

typedef float F8 __attribute__((vector_size(32)));
typedef int32_t I8 __attribute__((vector_size(32)));
constexpr int kLanes = 8;

GRAPHOPT_INLINE F8 Load(const float* p) {
  F8 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
GRAPHOPT_INLINE void Store(float* p, F8 v) { std::memcpy(p, &v, sizeof(v)); }
GRAPHOPT_INLINE F8 Splat(float x) { return F8{} + x; }

// exp(x) for x = n*ln2 + r, |r| <= ln2/2: exp(r) by a degree-6 polynomial (Cephes expf), 2^n by
// building the exponent bits. Inputs are clamped to [kExpLow, kExpHigh] first.
constexpr float kExpLow = -87.3365447506f;  // exp(kExpLow) is the smallest normal float
constexpr float kExpHigh = 88.3762626647f;

GRAPHOPT_INLINE F8 Exp(F8 x) {
  x = x < kExpLow ? Splat(kExpLow) : x;
  x = x > kExpHigh ? Splat(kExpHigh) : x;
  const F8 fx = x * 1.44269504088896341f + 0.5f;
  // floor(fx): truncate toward zero, then step down where that rounded up.
  F8 t = __builtin_convertvector(__builtin_convertvector(fx, I8), F8);
  t = t > fx ? t - 1.0f : t;
  const F8 r = x - t * 0.693359375f - t * -2.12194440e-4f;
  const F8 z = r * r;
  F8 y = Splat(1.9875691500e-4f);
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * z + r + 1.0f;
  const I8 bits = (__builtin_convertvector(t, I8) + 127) << 23;
  return y * (F8)bits;  // the same 32 bytes seen as floats
}

GRAPHOPT_INLINE F8 KeepNan(F8 v, F8 result) { return v != v ? v : result; }

GRAPHOPT_INLINE F8 Sigmoid(F8 v) { return KeepNan(v, 1.0f / (1.0f + Exp(-v))); }

GRAPHOPT_INLINE F8 Tanh(F8 v) {
  const F8 a = v < 0.0f ? -v : v;
  // Near 0: tanh(v) = v + v^3 * p(v^2) (Cephes tanhf), exact to float rounding.
  const F8 z = v * v;
  F8 p = Splat(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const F8 small = v + v * z * p;
  // Elsewhere: 1 - 2 / (exp(2|v|) + 1), with v's sign.
  const F8 large_abs = 1.0f - 2.0f / (Exp(2.0f * a) + 1.0f);
  const F8 large = v < 0.0f ? -large_abs : large_abs;
  return a < 0.625f ? small : KeepNan(v, large);
}

// x[0, n) = f(x) in 8-lane steps; the tail goes through a zero-padded block.
template <typename F>
GRAPHOPT_INLINE void Map(float* x, int64_t n, F f) {
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) Store(x + i, f(Load(x + i)));
  if (i < n) {
    float tail[kLanes] = {};
    std::memcpy(tail, x + i, sizeof(float) * (n - i));
    Store(tail, f(Load(tail)));
    std::memcpy(x + i, tail, sizeof(float) * (n - i));
  }
}

}  // namespace

GRAPHOPT_MULTIVERSION
void GemvAccumulateF32(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                       float* y) {
  int64_t j = 0;
  // 64 columns at a time in eight accumulators (enough independent chains to hide the FMA
  // latency): b is read once, y written once.
  for (; j + 8 * kLanes <= n; j += 8 * kLanes) {
    F8 acc[8];
    for (int q = 0; q < 8; ++q) acc[q] = Load(y + j + q * kLanes);
    const float* row = b + j;
    for (int64_t p = 0; p < k; ++p, row += ldb) {
      const F8 s = Splat(a[p]);
      for (int q = 0; q < 8; ++q) acc[q] += s * Load(row + q * kLanes);
    }
    for (int q = 0; q < 8; ++q) Store(y + j + q * kLanes, acc[q]);
  }
  for (; j + kLanes <= n; j += kLanes) {
    F8 acc = Load(y + j);
    const float* row = b + j;
    for (int64_t p = 0; p < k; ++p, row += ldb) acc += Splat(a[p]) * Load(row);
    Store(y + j, acc);
  }
  for (; j < n; ++j) {
    float acc = y[j];
    for (int64_t p = 0; p < k; ++p) acc += a[p] * b[p * ldb + j];
    y[j] = acc;
  }
}

GRAPHOPT_MULTIVERSION
void ExpF32(float* x, int64_t n) {
  Map(x, n, [](F8 v) __attribute__((always_inline)) { return KeepNan(v, Exp(v)); });
}

GRAPHOPT_MULTIVERSION
void SigmoidF32(float* x, int64_t n) {
  Map(x, n, [](F8 v) __attribute__((always_inline)) { return Sigmoid(v); });
}

GRAPHOPT_MULTIVERSION
void TanhF32(float* x, int64_t n) {
  Map(x, n, [](F8 v) __attribute__((always_inline)) { return Tanh(v); });
}

}  // namespace graphopt::runtime
