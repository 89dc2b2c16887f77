#ifndef GRAPHOPT_RUNTIME_KERNELS_CONV_DNNL_H_
#define GRAPHOPT_RUNTIME_KERNELS_CONV_DNNL_H_

// Float32 convolution on oneDNN, shared by Conv (nn_conv.cc) and the FusedGroup kernel
// (fused.cc), which hands its elementwise epilogue to oneDNN as post-ops. Defined in nn_conv.cc.

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/kernel.h"
#include "runtime/kernels/nn_util.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// The shapes of one convolution: X [N, C, in...], W [M, C/group, k...], Y [N, M, out...].
struct ConvShape {
  int64_t n = 0, c = 0, m = 0, group = 1;
  Window window;
  Shape out_shape;
};

// Checks X, W and B of a (forward) convolution and resolves its window.
absl::StatusOr<ConvShape> CheckConv(const KernelContext& ctx, const WindowAttrs& attrs,
                                    int64_t group, const Tensor& x, const Tensor& w,
                                    const Tensor* b);

// One step applied to a convolution's result, in order (a oneDNN post-op).
struct ConvPostOp {
  enum class Kind : uint8_t {
    kEltwise,    // y = alg(y; alpha, beta)
    kSum,        // y += operand (a tensor of y's shape), at most once
    kBinaryAdd,  // y += operand (one value per output channel, [M] elements)
    kBinaryMul,  // y *= operand (likewise)
  };
  Kind kind = Kind::kEltwise;
  dnnl::algorithm alg = dnnl::algorithm::eltwise_relu;
  float alpha = 0;
  float beta = 0;
  const Tensor* operand = nullptr;
};

// A float32 convolution of one node (1 to 3 spatial dims) on oneDNN, in the layouts oneDNN
// prefers for the primitive: plain (ONNX) activations are reordered in and out around it
// through scratch buffers kept between calls; weights are reordered once per weight tensor and
// kept. Primitives are cached per shapes and post-ops. Thread-safe.
class DnnlConvolution {
 public:
  // INTERNAL naming the node when oneDNN has no CPU engine.
  static absl::StatusOr<std::unique_ptr<DnnlConvolution>> Create(const KernelInfo& info);

  // y = conv(x, w) + b, then `post_ops` in order. y is float32 of s.out_shape, allocated by the
  // caller (a kSum operand may be y itself). UNIMPLEMENTED when oneDNN has no primitive for
  // these shapes and post-ops: the caller computes them another way.
  absl::Status Run(const KernelContext& ctx, const ConvShape& s, const Tensor& x, const Tensor& w,
                   const Tensor* b, absl::Span<const ConvPostOp> post_ops, Tensor& y) const;

  struct Primitive;

 private:
  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(
      const KernelContext& ctx, const ConvShape& s, bool has_bias,
      absl::Span<const ConvPostOp> post_ops) const;

  dnnl::engine engine_;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::vector<int64_t>, std::shared_ptr<const Primitive>> cache_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_CONV_DNNL_H_
