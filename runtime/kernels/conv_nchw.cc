// Direct float32 kernels on plain NCHW tensors, for the shapes where they beat oneDNN's blocked
// layouts plus the reorders into and out of them at batch 1 (see float_conv.h): 1x1
// convolutions on sgemm, depthwise convolutions and max pooling as row loops over a padded
// plane. Each applies a convolution's post-ops per output channel while the rows are in cache.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/float_conv.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {
namespace {

// Compiled for x86-64-v3 (AVX2, FMA) and baseline x86-64; the loader picks (as fast_math.cc).
#define GRAPHOPT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v3", "default")))

// Columns of one sgemm block: the block's output rows stay in cache for the epilogue.
constexpr int64_t kColumnBlock = 1024;

// acc[i] += v * src[i].
GRAPHOPT_MULTIVERSION void MulAdd(float* acc, const float* src, float v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += v * src[i];
}

// acc[i] = max(acc[i], src[i]).
GRAPHOPT_MULTIVERSION void MaxInto(float* acc, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = src[i] > acc[i] ? src[i] : acc[i];
}

// The padded plane of one channel: rows of `width` floats, the input placed at (top, left),
// `fill` around it; for stride 2, even and odd columns stored apart (two half planes), so that
// every tap of a row reads consecutive floats.
struct PaddedPlane {
  int64_t rows = 0, width = 0, top = 0, left = 0, stride = 1;
  std::vector<float> data;

  // Columns as stored: column c of a stride-2 plane is at (c % 2) * half + c / 2.
  int64_t half() const { return (width + 1) / 2; }

  void Fill(const float* x, int64_t h, int64_t w, float fill) {
    data.assign(static_cast<size_t>(rows * width), fill);
    for (int64_t r = 0; r < h; ++r) {
      float* row = data.data() + (r + top) * width;
      const float* in = x + r * w;
      if (stride == 2) {
        for (int64_t c = 0; c < w; ++c) {
          const int64_t p = c + left;
          row[(p % 2) * half() + p / 2] = in[c];
        }
      } else {
        std::memcpy(row + left, in, w * sizeof(float));
      }
    }
  }

  // The floats tap kw reads for output columns 0.. of row r.
  const float* Tap(int64_t r, int64_t kw) const {
    const float* row = data.data() + r * width;
    return stride == 2 ? row + (kw % 2) * half() + kw / 2 : row + kw;
  }
};

bool PlaneFits(const Window& w) {
  if (w.nd != 2 || (w.stride[0] != w.stride[1]) || w.stride[0] > 2) return false;
  return w.dilation[0] == 1 && w.dilation[1] == 1;
}

PaddedPlane MakePlane(const Window& w) {
  PaddedPlane p;
  p.stride = w.stride[0];
  p.top = w.pad_begin[0];
  p.left = w.pad_begin[1];
  // Every tap of every output lies inside: rows up to (out-1)*s + k, columns likewise.
  p.rows = std::max(w.in[0] + p.top, (w.out[0] - 1) * p.stride + w.kernel[0]);
  p.width = std::max(w.in[1] + p.left, (w.out[1] - 1) * p.stride + w.kernel[1]);
  if (p.stride == 2) p.width += p.width % 2;
  return p;
}

}  // namespace

bool PostOpsSupported(absl::Span<const ConvPostOp> ops) {
  for (const ConvPostOp& op : ops) {
    if (op.kind != ConvPostOp::Kind::kEltwise) continue;
    switch (op.alg) {
      case dnnl::algorithm::eltwise_relu:
      case dnnl::algorithm::eltwise_clip:
      case dnnl::algorithm::eltwise_linear:
      case dnnl::algorithm::eltwise_logistic:
      case dnnl::algorithm::eltwise_tanh:
        break;
      default:
        return false;
    }
  }
  return true;
}

void ApplyPostOps(absl::Span<const ConvPostOp> ops, int64_t channel, int64_t offset, float* y,
                  int64_t n) {
  for (const ConvPostOp& op : ops) {
    switch (op.kind) {
      case ConvPostOp::Kind::kSum: {
        const float* r = op.operand->data<float>() + offset;
        for (int64_t i = 0; i < n; ++i) y[i] += r[i];
        break;
      }
      case ConvPostOp::Kind::kBinaryAdd: {
        const float v = op.operand->data<float>()[channel];
        for (int64_t i = 0; i < n; ++i) y[i] += v;
        break;
      }
      case ConvPostOp::Kind::kBinaryMul: {
        const float v = op.operand->data<float>()[channel];
        for (int64_t i = 0; i < n; ++i) y[i] *= v;
        break;
      }
      case ConvPostOp::Kind::kEltwise: {
        const float a = op.alpha, b = op.beta;
        switch (op.alg) {
          case dnnl::algorithm::eltwise_relu:
            for (int64_t i = 0; i < n; ++i) y[i] = y[i] < 0.0f ? a * y[i] : y[i];
            break;
          case dnnl::algorithm::eltwise_clip:
            for (int64_t i = 0; i < n; ++i) y[i] = y[i] < a ? a : (y[i] > b ? b : y[i]);
            break;
          case dnnl::algorithm::eltwise_linear:
            for (int64_t i = 0; i < n; ++i) y[i] = a * y[i] + b;
            break;
          case dnnl::algorithm::eltwise_logistic:
            for (int64_t i = 0; i < n; ++i) y[i] = 1.0f / (1.0f + std::exp(-y[i]));
            break;
          case dnnl::algorithm::eltwise_tanh:
            for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(y[i]);
            break;
          default:
            break;  // PostOpsSupported rules these out
        }
        break;
      }
    }
  }
}

bool PointwiseFits(const ConvShape& s) {
  if (s.group != 1) return false;
  for (int i = 0; i < s.window.nd; ++i) {
    if (s.window.kernel[i] != 1 || s.window.pad_begin[i] != 0 || s.window.pad_end[i] != 0) {
      return false;
    }
  }
  return true;
}

absl::Status PointwiseConv(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                           const Tensor& w, const Tensor* b, absl::Span<const ConvPostOp> ops,
                           Tensor& y) {
  const Window& win = s.window;
  const int64_t in_plane = win.in_size(), out_plane = win.out_size();
  if (!PostOpsSupported(ops)) return absl::UnimplementedError("post-op without a direct loop");
  bool strided = false;
  for (int i = 0; i < win.nd; ++i) strided |= win.stride[i] != 1 || win.out[i] != win.in[i];
  std::vector<float> gathered(strided ? static_cast<size_t>(s.c * out_plane) : 0);
  for (int64_t n = 0; n < s.n; ++n) {
    const float* xn = x.data<float>() + n * s.c * in_plane;
    if (strided) {
      // The input positions the 1x1 kernel visits, as a dense [C, out] matrix.
      std::vector<int64_t> pos(win.nd, 0);
      for (int64_t o = 0; o < out_plane; ++o) {
        int64_t off = 0;
        for (int i = 0; i < win.nd; ++i) off = off * win.in[i] + pos[i] * win.stride[i];
        for (int64_t c = 0; c < s.c; ++c) gathered[c * out_plane + o] = xn[c * in_plane + off];
        for (int i = win.nd - 1; i >= 0; --i) {
          if (++pos[i] < win.out[i]) break;
          pos[i] = 0;
        }
      }
      xn = gathered.data();
    }
    float* yn = y.data<float>() + n * s.m * out_plane;
    for (int64_t j0 = 0; j0 < out_plane; j0 += kColumnBlock) {
      const int64_t cols = std::min(kColumnBlock, out_plane - j0);
      absl::Status st = Sgemm(ctx, false, false, s.m, cols, s.c, 1.0f, w.data<float>(), s.c,
                              xn + j0, out_plane, 0.0f, yn + j0, out_plane);
      if (!st.ok()) return st;
      for (int64_t m = 0; m < s.m; ++m) {
        float* row = yn + m * out_plane + j0;
        if (b != nullptr) {
          const float bias = b->data<float>()[m];
          for (int64_t i = 0; i < cols; ++i) row[i] += bias;
        }
        ApplyPostOps(ops, m, (n * s.m + m) * out_plane + j0, row, cols);
      }
    }
  }
  return absl::OkStatus();
}

bool DepthwiseFits(const ConvShape& s) {
  return s.group == s.c && s.m == s.c && PlaneFits(s.window);
}

absl::Status DepthwiseConv(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                           const Tensor& w, const Tensor* b, absl::Span<const ConvPostOp> ops,
                           Tensor& y) {
  const Window& win = s.window;
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  const int64_t ho = win.out[0], wo = win.out[1];
  const int64_t in_plane = win.in_size(), out_plane = win.out_size();
  if (!PostOpsSupported(ops)) return absl::UnimplementedError("post-op without a direct loop");
  ctx.ParallelFor(s.n * s.c, 1, [&](int64_t begin, int64_t end) {
    PaddedPlane plane = MakePlane(win);
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t c = nc % s.c;
      plane.Fill(x.data<float>() + nc * in_plane, win.in[0], win.in[1], 0.0f);
      const float* k = w.data<float>() + c * kh * kw;
      const float bias = b != nullptr ? b->data<float>()[c] : 0.0f;
      float* out = y.data<float>() + nc * out_plane;
      for (int64_t r = 0; r < ho; ++r) {
        float* acc = out + r * wo;
        std::fill(acc, acc + wo, bias);
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) {
            MulAdd(acc, plane.Tap(r * plane.stride + i, j), k[i * kw + j], wo);
          }
        }
      }
      ApplyPostOps(ops, c, nc * out_plane, out, out_plane);
    }
  });
  return absl::OkStatus();
}

bool MaxPoolFits(const Window& w) { return PlaneFits(w); }

void MaxPool(const KernelContext& ctx, const Window& win, const Tensor& x, Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  const int64_t ho = win.out[0], wo = win.out[1];
  const int64_t in_plane = win.in_size(), out_plane = win.out_size();
  ctx.ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
    PaddedPlane plane = MakePlane(win);
    for (int64_t p = begin; p < end; ++p) {
      plane.Fill(x.data<float>() + p * in_plane, win.in[0], win.in[1],
                 -std::numeric_limits<float>::infinity());
      float* out = y.data<float>() + p * out_plane;
      for (int64_t r = 0; r < ho; ++r) {
        float* acc = out + r * wo;
        std::fill(acc, acc + wo, -std::numeric_limits<float>::infinity());
        for (int64_t i = 0; i < kh; ++i) {
          for (int64_t j = 0; j < kw; ++j) MaxInto(acc, plane.Tap(r * plane.stride + i, j), wo);
        }
      }
    }
  });
}

}  // namespace graphopt::runtime
