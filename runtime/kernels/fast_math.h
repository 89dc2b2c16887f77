#ifndef GRAPHOPT_RUNTIME_KERNELS_FAST_MATH_H_
#define GRAPHOPT_RUNTIME_KERNELS_FAST_MATH_H_

// Vectorised float32 loops for the kernels' inner steps. Each has three versions, the CPU's
// best picked once (DetectedFastMathIsa): AVX-512 (x86-64-v4, 16 lanes), AVX2+FMA (x86-64-v3,
// 8 lanes) and baseline x86-64 (SSE2), so the default build needs nothing of the machine. The
// AVX-512 and AVX2 versions agree to the bit (the same arithmetic per lane, fused
// multiply-adds but in the layer normalisation, which has none in any version); the baseline
// one may differ from them in the last bits (no FMA). Results never differ between runs on one
// machine.
//
// Accuracy: exp is a degree-6 polynomial after range reduction (within 2 ulp of expf over
// [-87, 88]; inputs are clamped there, so results are finite); sigmoid and tanh derive from it,
// tanh with a polynomial near 0 to keep its relative error small (under 1e-6 everywhere); erf is
// a polynomial below 1 and 1 - exp(polynomial) above (within 1.4e-7 of erf, and 1.7e-7 relative
// below 1).

#include <cstdint>

namespace graphopt::runtime {

// y[j] += sum_p a[p] * b[p * ldb + j] for j in [0, n), p in [0, k): a row vector times a
// row-major [k, n] block (leading dimension ldb), accumulated into y.
void GemvAccumulateF32(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                       float* y);
// y[i * ldy + j] += sum_p a[i * lda + p] * b[p * ldb + j] for rows i < m: GemvAccumulateF32 for
// m rows of a, four at a time (each block row of b loaded once for the four). Every row gives
// GemvAccumulateF32's bits, whichever rows a call covers, so threads may share out the rows.
// No code is generated at run time (oneDNN's sgemm generates all its kernels on its first call).
void GemmAccumulateF32(int64_t m, int64_t k, int64_t n, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float* y, int64_t ldy);
// y[i] = sum_p a[p] * b[i * ldb + p] for i in [0, n), p in [0, k): the rows of a row-major
// [n, k] matrix (leading dimension ldb) dotted with a vector, written to y. Each row's sum has
// the same arithmetic in every split of the rows (16 partial sums added pairwise; the AVX-512
// and AVX2 versions agree to the bit), so threads may share out the rows as they like.
void DotRowsF32(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb, float* y);
// x[i] = exp(x[i]), 1 / (1 + exp(-x[i])), tanh(x[i]), erf(x[i]), and GELU: x[i] * 0.5 * (1 +
// erf(x[i] / sqrt(2))).
void ExpF32(float* x, int64_t n);
void SigmoidF32(float* x, int64_t n);
void TanhF32(float* x, int64_t n);
void ErfF32(float* x, int64_t n);
void GeluF32(float* x, int64_t n);

// Activations with up to two parameters, in place, for float32 elementwise loops (the fused
// groups' programs, conv epilogues and the unfused kernels) so that no ONNX activation runs
// element by element through libm. Accuracy against the exact function: log within 1 ulp-ish
// (Cephes logf: 1e-7 relative); expm1 (exp(x) - 1 by Kahan's log-ratio correction, exact near
// 0 where exp(x) - 1 cancels) and what is made of it within 1e-6 relative; softplus uses the
// same correction for log1p, so it stays accurate where exp(x) is far below 1. NaN stays NaN.
enum class Activation : uint8_t {
  kLog,        // log(x)
  kSoftplus,   // log(1 + exp(x))
  kExpm1,      // exp(x) - 1
  kElu,        // x < 0 ? alpha * (exp(x) - 1) : x
  kSelu,       // beta * (x <= 0 ? alpha * (exp(x) - 1) : x)   (ONNX's gamma is beta)
  kCelu,       // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
  kHardSwish,  // x * clamp(x / 6 + 1/2, 0, 1)
  kSoftsign,   // x / (1 + |x|)
  kSilu,       // x / (1 + exp(-x)): x * Sigmoid(x)
  kMish,       // x * tanh(softplus(x))
};
void ActivationF32(Activation act, float alpha, float beta, float* x, int64_t n);

// The instruction sets of the versions, best first.
enum class FastMathIsa { kX86_64_V4 = 0, kX86_64_V3 = 1, kX86_64 = 2 };
// The version the functions above use on this CPU (detected once).
FastMathIsa DetectedFastMathIsa();
// Whether this CPU runs `isa`'s version; its name, for logs and benchmark reports.
bool FastMathIsaSupported(FastMathIsa isa);
const char* FastMathIsaName(FastMathIsa isa);
// The same functions in the version of a given (supported) instruction set: the tests compare
// the versions with each other.
void GemvAccumulateF32(FastMathIsa isa, int64_t k, int64_t n, const float* a, const float* b,
                       int64_t ldb, float* y);
void DotRowsF32(FastMathIsa isa, int64_t k, int64_t n, const float* a, const float* b,
                int64_t ldb, float* y);
void GemmAccumulateF32(FastMathIsa isa, int64_t m, int64_t k, int64_t n, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* y, int64_t ldy);
void ExpF32(FastMathIsa isa, float* x, int64_t n);
void SigmoidF32(FastMathIsa isa, float* x, int64_t n);
void TanhF32(FastMathIsa isa, float* x, int64_t n);
void ErfF32(FastMathIsa isa, float* x, int64_t n);
void GeluF32(FastMathIsa isa, float* x, int64_t n);
void ActivationF32(FastMathIsa isa, Activation act, float alpha, float beta, float* x,
                   int64_t n);

// Layer normalisation of `rows` rows of `cols` floats each: y = (x - mean) * inv_std * scale +
// bias, with the row's mean and inv_std = 1 / sqrt(variance + eps) (two passes: the mean, then
// the mean squared deviation). `scale` and `bias` hold `cols` values (step 1) or one (step 0),
// or are null (1 and 0). `mean` and `inv_std`, when not null, receive each row's. The sums run
// in 16 partial sums added pairwise, in the same order in every version, so the AVX-512 and
// AVX2 versions agree to the bit here too.
void LayerNormRowsF32(int64_t rows, int64_t cols, const float* x, const float* scale,
                      int64_t scale_step, const float* bias, int64_t bias_step, float eps,
                      float* y, float* mean, float* inv_std);
void LayerNormRowsF32(FastMathIsa isa, int64_t rows, int64_t cols, const float* x,
                      const float* scale, int64_t scale_step, const float* bias,
                      int64_t bias_step, float eps, float* y, float* mean, float* inv_std);

// Softmax of `rows` rows of `cols` floats each (y may be x): y = exp(x - max) / sum, the max
// and the sum (in double) over each row's blocks of 16 in 16 lanes folded pairwise, then its
// last elements in order: the same in every version, so the AVX-512 and AVX2 versions agree to
// the bit. exp within 2 ulp of expf, but entries more
// than 87.3 below the row's max (masked ones) give exactly 0 where expf gives a subnormal under
// 1.2e-38; a row holding NaN is NaN.
void SoftmaxRowsF32(int64_t rows, int64_t cols, const float* x, float* y);
void SoftmaxRowsF32(FastMathIsa isa, int64_t rows, int64_t cols, const float* x, float* y);

// Data movement in the same versions: out[3 * i + k] = p_k[i] for i < n, three planes of 32-bit
// elements interleaved (an image's channels going last: the input Transpose of a channels-last
// CNN). Bit-exact in every version.
void Interleave3x32(const uint32_t* p0, const uint32_t* p1, const uint32_t* p2, int64_t n,
                    uint32_t* out);
void Interleave3x32(FastMathIsa isa, const uint32_t* p0, const uint32_t* p1, const uint32_t* p2,
                    int64_t n, uint32_t* out);

// A 1x1 convolution over channels-last rows: y[p * m + j] = bias[j] + sum over c of
// x[p * k + c] * w[c * m + j], for pixels p < `pixels` and output channels j < m, the sum taken
// in order of c (bias null: 0). w holds the weights input channel by input channel ([k, m], the
// transpose of ONNX's [m, k]). Blocked for the narrow widths PointwiseRowsWidthSupported
// accepts, m = 8, 16, 24 or 40: at 8, 24 and 40 oneDNN computes the last 8 channels as a masked
// full AVX-512 vector (a third of the work wasted at 24) while this holds them in a half vector;
// at 16 this keeps 24 pixels in flight, slightly ahead of oneDNN alone and more so within a
// network.
// Every pixel's result is the same whichever rows a call covers, so threads may share them out;
// the AVX-512 and AVX2 versions agree to the bit. Other widths take a plain loop.
bool PointwiseRowsWidthSupported(int64_t m);
void PointwiseRowsF32(int64_t pixels, int64_t k, int64_t m, const float* x, const float* w,
                      const float* bias, float* y);
void PointwiseRowsF32(FastMathIsa isa, int64_t pixels, int64_t k, int64_t m, const float* x,
                      const float* w, const float* bias, float* y);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_FAST_MATH_H_
