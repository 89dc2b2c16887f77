#ifndef GRAPHOPT_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_

// Helpers private to the elementwise family (elementwise*.cc).

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/kernel.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// The sub-families, each registered by its own file.
absl::Status RegisterArithmeticKernels(KernelRegistry& registry);  // elementwise.cc
absl::Status RegisterLogicKernels(KernelRegistry& registry);       // elementwise_logic.cc
absl::Status RegisterUnaryKernels(KernelRegistry& registry);       // elementwise_unary.cc
absl::Status RegisterCastKernels(KernelRegistry& registry);        // elementwise_cast.cc

// A status from a dtype dispatch with the node label put in front of an UNIMPLEMENTED.
absl::Status Labeled(const KernelContext& ctx, absl::Status status);

// The broadcast shape of inputs `first`..`first + count - 1` (all required, all of one dtype
// when `same_dtype`); INVALID_ARGUMENT naming the node otherwise.
absl::StatusOr<Shape> BroadcastInputs(const KernelContext& ctx, int first, int count,
                                      bool same_dtype);

// The two operands of a binary op and their broadcast shape. Before opset 7, an op with
// attribute broadcast = 1 and an axis aligns b's dims with a's starting at that axis; b is
// then viewed with the dims around it padded to 1 so numpy broadcasting applies.
struct BinaryOperands {
  Tensor a;
  Tensor b;
  Shape out;
};
absl::StatusOr<BinaryOperands> PrepareBinary(const KernelContext& ctx, bool same_dtype);

// Elements of a tensor of element type T (strings for std::string).
template <typename T>
const T* Elements(const Tensor& t) {
  if constexpr (std::is_same_v<T, std::string>) {
    return t.strings();
  } else {
    return t.data<T>();
  }
}
template <typename T>
T* MutableElements(Tensor& t) {
  if constexpr (std::is_same_v<T, std::string>) {
    return t.strings();
  } else {
    return t.data<T>();
  }
}

// Elements per ParallelFor chunk for cheap elementwise loops.
inline constexpr int64_t kElementwiseGrain = 32768;

// y[i] = fn(x[i]) for stored types X -> Y over n elements, in parallel chunks.
template <typename X, typename Y, typename Fn>
void MapElements(const KernelContext& ctx, const X* x, Y* y, int64_t n, Fn fn) {
  ctx.ParallelFor(n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) y[i] = fn(x[i]);
  });
}

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_ELEMENTWISE_UTIL_H_
