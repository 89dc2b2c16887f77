#ifndef GRAPHOPT_RUNTIME_KERNELS_FLOAT_CONV_H_
#define GRAPHOPT_RUNTIME_KERNELS_FLOAT_CONV_H_

// Float32 convolution with post-ops, shared by Conv (nn_conv.cc) and the FusedGroup kernel
// (fused.cc), which hands its elementwise epilogue over as post-ops: on direct NCHW loops where
// those win at small batches (1x1 convolutions on sgemm, depthwise convolutions; conv_nchw.cc),
// on direct channels-last rows for 1x1 convolutions of widths oneDNN pads (conv_nhwc.cc), else
// on oneDNN (nn_conv.cc). conv_nchw.cc also has the max pooling loop of MaxPool.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/kernel.h"
#include "runtime/kernels/nn_util.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

// The shapes of one convolution: X [N, C, in...], W [M, C/group, k...], Y [N, M, out...]; or,
// when channels_last (NhwcConv), X [N, in..., C] and Y [N, out..., M].
struct ConvShape {
  int64_t n = 0, c = 0, m = 0, group = 1;
  bool channels_last = false;
  // Winograd's algorithm (F(2x2, 3x3)) where oneDNN has it for these shapes (NhwcConv's
  // 'winograd' attribute); else direct.
  bool winograd = false;
  Window window;
  Shape out_shape;  // Y's shape in its own layout
};

// Checks X, W and B of a (forward) convolution and resolves its window.
absl::StatusOr<ConvShape> CheckConv(const KernelContext& ctx, const WindowAttrs& attrs,
                                    int64_t group, const Tensor& x, const Tensor& w,
                                    const Tensor* b);
// The same for NhwcConv: X [N, in..., C]; the result has channels_last set.
absl::StatusOr<ConvShape> CheckConvChannelsLast(const KernelContext& ctx,
                                                const WindowAttrs& attrs, int64_t group,
                                                const Tensor& x, const Tensor& w,
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

// A float32 convolution of one node (1 to 3 spatial dims). On channels-first (ONNX) tensors,
// 1x1 convolutions without padding run as sgemm, 2-D depthwise ones (group = C = M, stride 1
// or 2) as row loops; everything else on oneDNN, in the layouts oneDNN prefers for the
// primitive: the activations are reordered in and out around it through scratch buffers kept
// between calls. Channels-last tensors (ConvShape::channels_last) are oneDNN's own layout for
// its fast kernels and go to oneDNN as they are, without reorders, but for the narrow 1x1
// convolutions NarrowPointwiseFits takes (conv_nhwc.cc). Weights are reordered once
// per weight tensor and kept. oneDNN primitives are cached per shapes and post-ops.
// Thread-safe.
class FloatConvolution {
 public:
  // INTERNAL naming the node when oneDNN has no CPU engine.
  static absl::StatusOr<std::unique_ptr<FloatConvolution>> Create(const KernelInfo& info);
  ~FloatConvolution();

  // y = conv(x, w) + b, then `post_ops` in order. y is float32 of s.out_shape, allocated by the
  // caller (a kSum operand may be y itself); x, y and a kSum operand are in s's layout. UNIMPLEMENTED when oneDNN has no primitive for
  // these shapes and post-ops: the caller computes them another way.
  absl::Status Run(const KernelContext& ctx, const ConvShape& s, const Tensor& x, const Tensor& w,
                   const Tensor* b, absl::Span<const ConvPostOp> post_ops, Tensor& y) const;

  struct Primitive;

 private:
  absl::StatusOr<std::shared_ptr<const Primitive>> GetPrimitive(
      const KernelContext& ctx, const ConvShape& s, bool has_bias,
      absl::Span<const ConvPostOp> post_ops) const;

  // A primitive's shapes, algorithm and post-ops (inline: built on every run).
  using PrimitiveKey = absl::InlinedVector<int64_t, 40>;

  // Weights packed for NarrowPointwiseConv, made once from a constant weight tensor `ref`
  // (held, as Primitive::WeightsCopy holds its own).
  struct PackedPointwise {
    Tensor ref;
    std::vector<float> w;
  };
  std::shared_ptr<const PackedPointwise> PointwiseWeights(const KernelContext& ctx,
                                                          const ConvShape& s,
                                                          const Tensor& w) const;

  dnnl::engine engine_;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<PrimitiveKey, std::shared_ptr<const Primitive>> cache_
      ABSL_GUARDED_BY(mu_);
  // The first primitive made, with its key: set once (under mu_), read without a lock, freed
  // with this object.
  struct Memo {
    PrimitiveKey key;
    std::shared_ptr<const Primitive> primitive;
  };
  mutable std::atomic<const Memo*> memo_{nullptr};
  mutable std::shared_ptr<const PackedPointwise> pointwise_ ABSL_GUARDED_BY(mu_);
};

// --- Direct NCHW loops (conv_nchw.cc) ----------------------------------------------------------

// True when every post-op has a direct implementation (ApplyPostOps).
bool PostOpsSupported(absl::Span<const ConvPostOp> ops);
// Adds `bias`, then applies `ops` to y[0..n), n consecutive outputs of output channel
// `channel` starting at element `offset` of the output tensor (where a kSum operand is read).
void ApplyPostOps(absl::Span<const ConvPostOp> ops, int64_t channel, int64_t offset, float* y,
                  int64_t n, float bias = 0.0f);

// ApplyPostOps for channels-last outputs: y[0..n) are whole pixels of m channels (binary
// operands per channel), starting at element `offset` of the output tensor; no bias.
void ApplyPostOpsChannelsLast(absl::Span<const ConvPostOp> ops, int64_t m, int64_t offset,
                              float* y, int64_t n);

// 1x1 kernels, stride 1, no padding, group 1, at least 28x28 outputs (below that oneDNN wins):
// Y[M, out] = W[M, C] X[C, out] per image.
bool PointwiseFits(const ConvShape& s);
absl::Status PointwiseConv(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                           const Tensor& w, const Tensor* b, absl::Span<const ConvPostOp> ops,
                           Tensor& y);

// 2-D, group = C = M, stride 1 or 2 (both axes alike), no dilation, at least 28x28 outputs.
bool DepthwiseFits(const ConvShape& s);
absl::Status DepthwiseConv(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                           const Tensor& w, const Tensor* b, absl::Span<const ConvPostOp> ops,
                           Tensor& y);

// --- Direct channels-last loops (conv_nhwc.cc) --------------------------------------------------

// Channels-last 1x1 convolutions (stride 1, no padding, group 1) of the narrow output widths
// PointwiseRowsF32 blocks for (8, 16, 24, 40 channels), on CPUs with AVX-512, where oneDNN
// computes the last 8 channels as a masked full vector (or, at 16, runs slower).
bool NarrowPointwiseFits(const ConvShape& s);
// W [M, C, 1...] as PointwiseRowsF32 takes it: [C, M].
std::vector<float> PackPointwiseWeights(const ConvShape& s, const Tensor& w);
// y = conv(x, w) + b, then `ops` (PostOpsSupported), with w packed by PackPointwiseWeights. A
// kSum operand may be y itself.
void NarrowPointwiseConv(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                         const float* packed, const Tensor* b, absl::Span<const ConvPostOp> ops,
                         Tensor& y);

// Float32 2-D max pooling of x into y (allocated, NCHW of the window's output) where the window
// has stride 1 or 2 and no dilation.
bool MaxPoolFits(const Window& w);
void MaxPool(const KernelContext& ctx, const Window& w, const Tensor& x, Tensor& y);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_FLOAT_CONV_H_
