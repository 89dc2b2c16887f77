#ifndef GRAPHOPT_RUNTIME_KERNELS_TENSOR_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_TENSOR_UTIL_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernel.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

// The parts of the tensor family, one file each; RegisterTensorKernels calls them all.
absl::Status RegisterTensorShapeKernels(KernelRegistry& registry);   // tensor_shape.cc
absl::Status RegisterTensorLayoutKernels(KernelRegistry& registry);  // tensor_layout.cc
absl::Status RegisterTensorIndexKernels(KernelRegistry& registry);   // tensor_index.cc

// Calls f(TypeTag<U>) with U an unsigned integer of the element width of `t`, or
// std::string for DT_STRING; UNIMPLEMENTED naming the node otherwise.
template <typename F>
absl::Status DispatchByWidth(const KernelContext& ctx, const Tensor& t, F&& f) {
  if (t.dtype() == v1::DT_STRING) return f(TypeTag<std::string>{});
  switch (t.element_size()) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: break;
  }
  return ctx.info().Unimplemented(
      absl::StrCat("element type ", DataTypeName(t.dtype()), " is not supported"));
}

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

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_TENSOR_UTIL_H_
