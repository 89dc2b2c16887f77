// Direct float32 kernels on channels-last tensors, for the shapes where they beat oneDNN's own
// (see float_conv.h): 1x1 convolutions of narrow output widths (MobileNet-v2's projections to
// 16 and 24 channels), 8, 24 or 40 of which oneDNN computes with a masked full AVX-512 vector
// for the last 8 channels. Here those take a half vector (PointwiseRowsF32); the post-ops follow
// on each block of pixels while it is in cache.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/float_conv.h"

namespace graphopt::runtime {

bool NarrowPointwiseFits(const ConvShape& s) {
  // On AVX2 machines oneDNN's 8-lane kernels waste nothing at these widths (not measured there).
  if (!s.channels_last || s.group != 1 || !PointwiseRowsWidthSupported(s.m) ||
      DetectedFastMathIsa() != FastMathIsa::kX86_64_V4) {
    return false;
  }
  for (int i = 0; i < s.window.nd; ++i) {
    if (s.window.kernel[i] != 1 || s.window.stride[i] != 1 || s.window.dilation[i] != 1 ||
        s.window.pad_begin[i] != 0 || s.window.pad_end[i] != 0) {
      return false;
    }
  }
  return true;
}

std::vector<float> PackPointwiseWeights(const ConvShape& s, const Tensor& w) {
  // W [M, C, 1...] -> [C, M].
  std::vector<float> packed(static_cast<size_t>(s.c * s.m));
  const float* wp = w.data<float>();
  for (int64_t j = 0; j < s.m; ++j) {
    for (int64_t c = 0; c < s.c; ++c) packed[c * s.m + j] = wp[j * s.c + c];
  }
  return packed;
}

void NarrowPointwiseConv(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                         const float* packed, const Tensor* b, absl::Span<const ConvPostOp> ops,
                         Tensor& y) {
  const int64_t pixels = s.n * s.window.out_size();
  // A residual summed into y in place (the memory plan's choice) must be read before the block
  // is written: such blocks are computed aside and copied over.
  bool in_place = false;
  for (const ConvPostOp& op : ops) {
    in_place |= op.kind == ConvPostOp::Kind::kSum && op.operand->raw_data() == y.raw_data();
  }
  // Pixels per unit of work: a multiple of every version's block, small enough for L1.
  constexpr int64_t kBlock = 96;
  constexpr int64_t kMaxWidth = 40;  // PointwiseRowsWidthSupported's widest
  const int64_t units = (pixels + kBlock - 1) / kBlock;
  const float* xp = x.data<float>();
  const float* bias = b != nullptr ? b->data<float>() : nullptr;
  float* yp = y.data<float>();
  ctx.ParallelFor(units, 1, [&](int64_t u0, int64_t u1) {
    float aside[kBlock * kMaxWidth];
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t p0 = u * kBlock, n = std::min(kBlock, pixels - p0);
      float* out = in_place ? aside : yp + p0 * s.m;
      PointwiseRowsF32(n, s.c, s.m, xp + p0 * s.c, packed, bias, out);
      ApplyPostOpsChannelsLast(ops, s.m, p0 * s.m, out, n * s.m);
      if (in_place) std::memcpy(yp + p0 * s.m, aside, sizeof(float) * n * s.m);
    }
  });
}

}  // namespace graphopt::runtime
