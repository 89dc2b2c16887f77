#ifndef GRAPHOPT_RUNTIME_KERNELS_TENSOR_SHAPE_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_TENSOR_SHAPE_UTIL_H_

// Helpers shared by tensor_shape.cc and tensor_shape_gen.cc.

#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"
#include "runtime/kernels/tensor_util.h"

namespace graphopt::runtime::shape_internal {

// `s` with the node label in front (unchanged when OK or already labelled).
absl::Status LabelStatus(const KernelInfo& info, const absl::Status& s);

using ::graphopt::runtime::TypedData;

// Copies x broadcast to out's shape (which must be a broadcast of x's) into out, of x's dtype.
absl::Status BroadcastCopy(const KernelContext& ctx, const Tensor& x, Tensor& out);

// Range, EyeLike, Tile, Trilu, CumSum, OneHot (tensor_shape_gen.cc).
absl::Status RegisterTensorShapeGenKernels(KernelRegistry& registry);

}  // namespace graphopt::runtime::shape_internal

#endif  // GRAPHOPT_RUNTIME_KERNELS_TENSOR_SHAPE_UTIL_H_
