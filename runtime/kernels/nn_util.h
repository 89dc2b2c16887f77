#ifndef GRAPHOPT_RUNTIME_KERNELS_NN_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_NN_UTIL_H_

// Helpers shared by the NN kernel files (nn_*.cc): sliding-window geometry for Conv,
// ConvTranspose and the pools, the per-family registration functions, and a guard that turns
// oneDNN's C++ exceptions into Status at the boundary (oneDNN's C++ API reports errors by
// throwing; nothing of ours throws).

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "runtime/kernel.h"

namespace graphopt::runtime {

// Registration of each NN file (called by RegisterNnKernels in nn.cc).
absl::Status RegisterNnConvKernels(KernelRegistry& registry);    // nn_conv.cc
absl::Status RegisterNnMatMulKernels(KernelRegistry& registry);  // nn_matmul.cc
absl::Status RegisterNnPoolKernels(KernelRegistry& registry);    // nn_pool.cc
absl::Status RegisterNnNormKernels(KernelRegistry& registry);    // nn_norm.cc
absl::Status RegisterNnGradKernels(KernelRegistry& registry);    // nn_grad.cc

// The window attributes of Conv/ConvTranspose/pool nodes as written (empty when absent).
struct WindowAttrs {
  std::string auto_pad = "NOTSET";  // NOTSET, SAME_UPPER, SAME_LOWER or VALID
  std::vector<int64_t> kernel_shape;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // [begin_1..begin_n, end_1..end_n]
  bool ceil_mode = false;
};

// Reads the attributes; INVALID_ARGUMENT naming the attribute for an unknown auto_pad or a
// non-positive stride/dilation/kernel dim or a negative pad.
absl::StatusOr<WindowAttrs> ParseWindowAttrs(const KernelInfo& info);

// A resolved sliding window over `nd` spatial dims. Inline storage for up to three dims:
// a convolution resolves its window on every run, and this keeps that free of allocations.
using WindowDims = absl::InlinedVector<int64_t, 3>;
struct Window {
  int nd = 0;
  WindowDims in, kernel, stride, dilation, pad_begin, pad_end, out;
  int64_t in_size() const;
  int64_t out_size() const;
  int64_t kernel_size() const;
};

// The window of a forward op (Conv, pools) over input spatial dims `in` with kernel dims
// `kernel`: pads from auto_pad or the attribute, output dims (floor or, for pools, ceil_mode).
// INVALID_ARGUMENT naming the attribute when the lengths disagree with the rank or the output
// would be empty.
absl::StatusOr<Window> ResolveForwardWindow(const KernelInfo& info, const WindowAttrs& attrs,
                                            absl::Span<const int64_t> in,
                                            absl::Span<const int64_t> kernel);

// The taps of a forward window in CSR form: for output position o (row-major over the output
// spatial dims), entries [begin[o], begin[o+1]) list the kernel index (row-major over the
// kernel dims) and the input offset (row-major over the input spatial dims) of every tap that
// lands inside the input; `padded_count[o]` counts the taps inside the padded input (for
// AveragePool's count_include_pad).
struct WindowTaps {
  std::vector<int64_t> begin;
  std::vector<int32_t> kernel_index;
  std::vector<int64_t> input_offset;
  std::vector<int32_t> padded_count;
  // The tables' charge to the run's memory budget.
  MemoryReservation charge;
};
// The tables for `w`, charged to the run's memory budget first (they hold an entry per output
// position and kernel tap: far more than input and output when the kernel is large), the stop
// token polled while they are filled (then the token's status).
absl::StatusOr<WindowTaps> ComputeWindowTaps(const Window& w, const KernelContext& ctx);

// Row-major offset of spatial position `pos` into dims.
inline int64_t SpatialOffset(absl::Span<const int64_t> pos, absl::Span<const int64_t> dims) {
  int64_t off = 0;
  for (size_t i = 0; i < dims.size(); ++i) off = off * dims[i] + pos[i];
  return off;
}

// Runs fn (which may call oneDNN's C++ API) and converts a dnnl::error into INTERNAL naming
// `what`. Defined in nn_conv.cc.
absl::Status GuardDnnl(const KernelInfo& info, const char* what,
                       absl::FunctionRef<absl::Status()> fn);

// C = alpha * op(A) * op(B) + beta * C, row-major, on oneDNN's sgemm; INTERNAL naming the node
// when oneDNN fails. With the run's stop token, large products run in blocks with the token
// polled between them (the token's status once it fires). Defined in nn_matmul.cc.
absl::Status Sgemm(const KernelContext& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                   float beta, float* c, int64_t ldc);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_NN_UTIL_H_
