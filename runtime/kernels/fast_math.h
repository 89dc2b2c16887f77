#ifndef GRAPHOPT_RUNTIME_KERNELS_FAST_MATH_H_
#define GRAPHOPT_RUNTIME_KERNELS_FAST_MATH_H_

// Vectorised float32 loops for the kernels' inner steps. Each is compiled twice (x86-64-v3, i.e.
// AVX2+FMA, and baseline x86-64) and the loader picks the one the CPU runs (GCC's
// target_clones), so the default build needs nothing of the machine. Results may differ in the
// last bits between the two (FMA), never between runs on one machine.
//
// Accuracy: exp is a degree-6 polynomial after range reduction (within 2 ulp of expf over
// [-87, 88]; inputs are clamped there, so results are finite); sigmoid and tanh derive from it,
// tanh with a polynomial near 0 to keep its relative error small (under 1e-6 everywhere).

#include <cstdint>

namespace graphopt::runtime {

// y[j] += sum_p a[p] * b[p * ldb + j] for j in [0, n), p in [0, k): a row vector times a
// row-major [k, n] block (leading dimension ldb), accumulated into y.
void GemvAccumulateF32(int64_t k, int64_t n, const float* a, const float* b, int64_t ldb,
                       float* y);
// x[i] = exp(x[i]), 1 / (1 + exp(-x[i])), tanh(x[i]).
void ExpF32(float* x, int64_t n);
void SigmoidF32(float* x, int64_t n);
void TanhF32(float* x, int64_t n);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_FAST_MATH_H_
