#ifndef GRAPHOPT_RUNTIME_KERNELS_TENSOR_SHAPE_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_TENSOR_SHAPE_UTIL_H_

// Helpers shared by tensor_shape.cc and tensor_shape_gen.cc.

#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt::runtime::shape_internal {

// `s` with the node label in front (unchanged when OK or already labelled).
absl::Status LabelStatus(const KernelInfo& info, const absl::Status& s);

// The elements of `t` as T (std::string for DT_STRING tensors).
template <typename T>
T* TypedData(Tensor& t) {
  if constexpr (std::is_same_v<T, std::string>) {
    return t.strings();
  } else {
    return t.data<T>();
  }
}
template <typename T>
const T* TypedData(const Tensor& t) {
  if constexpr (std::is_same_v<T, std::string>) {
    return t.strings();
  } else {
    return t.data<T>();
  }
}

// Copies x broadcast to out's shape (which must be a broadcast of x's) into out, of x's dtype.
absl::Status BroadcastCopy(const KernelContext& ctx, const Tensor& x, Tensor& out);

// Range, EyeLike, Tile, Trilu, CumSum, OneHot (tensor_shape_gen.cc).
absl::Status RegisterTensorShapeGenKernels(KernelRegistry& registry);

}  // namespace graphopt::runtime::shape_internal

#endif  // GRAPHOPT_RUNTIME_KERNELS_TENSOR_SHAPE_UTIL_H_
