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
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/float_conv.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {
namespace {

// Compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2, FMA) and baseline x86-64; the loader picks
// the CPU's best (GCC's target_clones).
#define GRAPHOPT_MULTIVERSION __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
// Helpers of the multiversioned functions, inlined into each clone.
#define GRAPHOPT_INLINE_PLANE inline __attribute__((always_inline))

// Columns of one sgemm block: the block's output rows stay in cache for the epilogue.
constexpr int64_t kColumnBlock = 1024;
// Output channels of one pointwise sgemm block, at most.
constexpr int64_t kRowBlock = 128;

// The padded plane of one channel: `rows` rows of `width` floats, the input placed at (top, left)
// and `fill` around it; for stride 2 the even and odd columns of a row are stored apart (two
// halves of `width / 2`), so that every tap of an output row reads consecutive floats.
struct PlaneGeometry {
  int64_t h = 0, w = 0;          // input
  int64_t ho = 0, wo = 0;        // output
  int64_t kh = 0, kw = 0;        // kernel
  int64_t stride = 1, top = 0, left = 0;
  int64_t rows = 0, width = 0;   // padded plane
};

PlaneGeometry Geometry(const Window& w) {
  PlaneGeometry g;
  g.h = w.in[0];
  g.w = w.in[1];
  g.ho = w.out[0];
  g.wo = w.out[1];
  g.kh = w.kernel[0];
  g.kw = w.kernel[1];
  g.stride = w.stride[0];
  g.top = w.pad_begin[0];
  g.left = w.pad_begin[1];
  // Every tap of every output lies inside: rows up to (out-1)*s + k, columns likewise.
  g.rows = std::max(g.h + g.top, (g.ho - 1) * g.stride + g.kh);
  g.width = std::max(g.w + g.left, (g.wo - 1) * g.stride + g.kw);
  if (g.stride == 2) g.width += g.width % 2;
  return g;
}

// Everything for one plane is compiled as one function (for x86-64-v3 and baseline), so the
// tap loops inline and vectorise along the output row.
GRAPHOPT_INLINE_PLANE void FillPlane(const PlaneGeometry& g, const float* x, float fill,
                                     float* plane) {
  std::fill(plane, plane + g.rows * g.width, fill);
  const int64_t half = g.width / 2;
  for (int64_t r = 0; r < g.h; ++r) {
    float* row = plane + (r + g.top) * g.width;
    const float* in = x + r * g.w;
    if (g.stride == 2) {
      // Input column c lands on padded column c + left: even ones in the first half.
      const int64_t first_even = g.left % 2;
      for (int64_t c = first_even, d = (first_even + g.left) / 2; c < g.w; c += 2, ++d) row[d] = in[c];
      for (int64_t c = 1 - first_even, d = (1 - first_even + g.left) / 2; c < g.w; c += 2, ++d) {
        row[half + d] = in[c];
      }
    } else {
      std::memcpy(row + g.left, in, g.w * sizeof(float));
    }
  }
}

// The floats tap (i, j) reads for output row r.
GRAPHOPT_INLINE_PLANE const float* Tap(const PlaneGeometry& g, const float* plane, int64_t r,
                                       int64_t i, int64_t j) {
  const float* row = plane + (r * g.stride + i) * g.width;
  return g.stride == 2 ? row + (j % 2) * (g.width / 2) + j / 2 : row + j;
}

// Output rows of a plane: y = bias + sum of the taps (kSum) or the largest tap (kMax). For a
// kernel size known at compile time (KH, KW > 0) each output is accumulated in a register over
// all taps, whose row pointers are set up once per output row; otherwise tap by tap over the row.
enum class Reduce { kSum, kMax };

template <Reduce R, int KH, int KW>
GRAPHOPT_INLINE_PLANE void PlaneRows(const PlaneGeometry& g, const float* plane, const float* k,
                                     float init, float* y) {
  if constexpr (KH > 0 && KW > 0) {
    float kv[KH * KW];
    for (int t = 0; t < KH * KW; ++t) kv[t] = R == Reduce::kSum ? k[t] : 0.0f;
    for (int64_t r = 0; r < g.ho; ++r) {
      const float* src[KH * KW];
      for (int i = 0; i < KH; ++i) {
        for (int j = 0; j < KW; ++j) src[i * KW + j] = Tap(g, plane, r, i, j);
      }
      float* out = y + r * g.wo;
      for (int64_t o = 0; o < g.wo; ++o) {
        float a = init;
        for (int t = 0; t < KH * KW; ++t) {
          if constexpr (R == Reduce::kSum) {
            a += kv[t] * src[t][o];
          } else {
            a = src[t][o] > a ? src[t][o] : a;
          }
        }
        out[o] = a;
      }
    }
  } else {
    for (int64_t r = 0; r < g.ho; ++r) {
      float* acc = y + r * g.wo;
      for (int64_t o = 0; o < g.wo; ++o) acc[o] = init;
      for (int64_t i = 0; i < g.kh; ++i) {
        for (int64_t j = 0; j < g.kw; ++j) {
          const float* src = Tap(g, plane, r, i, j);
          if constexpr (R == Reduce::kSum) {
            const float v = k[i * g.kw + j];
            for (int64_t o = 0; o < g.wo; ++o) acc[o] += v * src[o];
          } else {
            for (int64_t o = 0; o < g.wo; ++o) acc[o] = src[o] > acc[o] ? src[o] : acc[o];
          }
        }
      }
    }
  }
}

GRAPHOPT_MULTIVERSION void DepthwisePlane(const PlaneGeometry& g, const float* x, const float* k,
                                          float bias, float* plane, float* y) {
  FillPlane(g, x, 0.0f, plane);
  if (g.kh == 3 && g.kw == 3) {
    PlaneRows<Reduce::kSum, 3, 3>(g, plane, k, bias, y);
  } else if (g.kh == 5 && g.kw == 5) {
    PlaneRows<Reduce::kSum, 5, 5>(g, plane, k, bias, y);
  } else {
    PlaneRows<Reduce::kSum, 0, 0>(g, plane, k, bias, y);
  }
}

GRAPHOPT_MULTIVERSION void MaxPoolPlane(const PlaneGeometry& g, const float* x, float* plane,
                                        float* y) {
  const float lowest = -std::numeric_limits<float>::infinity();
  FillPlane(g, x, lowest, plane);
  if (g.kh == 3 && g.kw == 3) {
    PlaneRows<Reduce::kMax, 3, 3>(g, plane, nullptr, lowest, y);
  } else if (g.kh == 2 && g.kw == 2) {
    PlaneRows<Reduce::kMax, 2, 2>(g, plane, nullptr, lowest, y);
  } else {
    PlaneRows<Reduce::kMax, 0, 0>(g, plane, nullptr, lowest, y);
  }
}

bool PlaneFits(const Window& w) {
  if (w.nd != 2 || (w.stride[0] != w.stride[1]) || w.stride[0] > 2) return false;
  return w.dilation[0] == 1 && w.dilation[1] == 1;
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
      case dnnl::algorithm::eltwise_exp:
      case dnnl::algorithm::eltwise_log:
      case dnnl::algorithm::eltwise_sqrt:
      case dnnl::algorithm::eltwise_abs:
      case dnnl::algorithm::eltwise_soft_relu:
      case dnnl::algorithm::eltwise_hardswish:
      case dnnl::algorithm::eltwise_elu:
        break;
      case dnnl::algorithm::eltwise_swish:
        if (op.alpha != 1.0f) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

namespace {

// ApplyPostOps on one chunk small enough for L1, each op a loop the compiler vectorises. With
// m > 0 the chunk is whole channels-last pixels of m channels (ApplyPostOpsChannelsLast) and
// `channel` is unused.
GRAPHOPT_MULTIVERSION void PostOpsChunk(const ConvPostOp* ops, size_t count, int64_t channel,
                                        int64_t m, int64_t offset, float bias, float* y,
                                        int64_t n) {
  if (bias != 0.0f) {
    for (int64_t i = 0; i < n; ++i) y[i] += bias;
  }
  for (size_t k = 0; k < count; ++k) {
    const ConvPostOp& op = ops[k];
    switch (op.kind) {
      case ConvPostOp::Kind::kSum: {
        const float* r = op.operand->data<float>() + offset;
        for (int64_t i = 0; i < n; ++i) y[i] += r[i];
        break;
      }
      case ConvPostOp::Kind::kBinaryAdd: {
        const float* v = op.operand->data<float>();
        if (m > 0) {
          for (int64_t p = 0; p < n; p += m) {
            for (int64_t j = 0; j < m; ++j) y[p + j] += v[j];
          }
        } else {
          const float c = v[channel];
          for (int64_t i = 0; i < n; ++i) y[i] += c;
        }
        break;
      }
      case ConvPostOp::Kind::kBinaryMul: {
        const float* v = op.operand->data<float>();
        if (m > 0) {
          for (int64_t p = 0; p < n; p += m) {
            for (int64_t j = 0; j < m; ++j) y[p + j] *= v[j];
          }
        } else {
          const float c = v[channel];
          for (int64_t i = 0; i < n; ++i) y[i] *= c;
        }
        break;
      }
      case ConvPostOp::Kind::kEltwise: {
        // Written with min/max (no conditional stores) so that they vectorise; NaN stays NaN.
        const float a = op.alpha, b = op.beta;
        switch (op.alg) {
          case dnnl::algorithm::eltwise_relu:
            if (a == 0.0f) {
              for (int64_t i = 0; i < n; ++i) y[i] = std::max(y[i], 0.0f);
            } else {
              for (int64_t i = 0; i < n; ++i) {
                y[i] = std::max(y[i], 0.0f) + a * std::min(y[i], 0.0f);
              }
            }
            break;
          case dnnl::algorithm::eltwise_clip:
            for (int64_t i = 0; i < n; ++i) y[i] = std::min(std::max(y[i], a), b);
            break;
          case dnnl::algorithm::eltwise_linear:
            for (int64_t i = 0; i < n; ++i) y[i] = a * y[i] + b;
            break;
          // The transcendental ones on fast_math's vector loops (which pick their own ISA).
          case dnnl::algorithm::eltwise_logistic: SigmoidF32(y, n); break;
          case dnnl::algorithm::eltwise_tanh: TanhF32(y, n); break;
          case dnnl::algorithm::eltwise_exp: ExpF32(y, n); break;
          case dnnl::algorithm::eltwise_log: ActivationF32(Activation::kLog, 0, 0, y, n); break;
          case dnnl::algorithm::eltwise_soft_relu:
            ActivationF32(Activation::kSoftplus, 0, 0, y, n);
            break;
          case dnnl::algorithm::eltwise_hardswish:
            ActivationF32(Activation::kHardSwish, 0, 0, y, n);
            break;
          case dnnl::algorithm::eltwise_elu: ActivationF32(Activation::kElu, a, 0, y, n); break;
          case dnnl::algorithm::eltwise_swish: ActivationF32(Activation::kSilu, 0, 0, y, n); break;
          case dnnl::algorithm::eltwise_sqrt:
            for (int64_t i = 0; i < n; ++i) y[i] = std::sqrt(y[i]);
            break;
          case dnnl::algorithm::eltwise_abs:
            for (int64_t i = 0; i < n; ++i) y[i] = std::fabs(y[i]);
            break;
          default:
            break;  // PostOpsSupported rules these out
        }
        break;
      }
    }
  }
}

}  // namespace

void ApplyPostOps(absl::Span<const ConvPostOp> ops, int64_t channel, int64_t offset, float* y,
                  int64_t n, float bias) {
  constexpr int64_t kChunk = 512;
  for (int64_t i = 0; i < n; i += kChunk) {
    PostOpsChunk(ops.data(), ops.size(), channel, 0, offset + i, bias, y + i,
                 std::min(kChunk, n - i));
  }
}

void ApplyPostOpsChannelsLast(absl::Span<const ConvPostOp> ops, int64_t m, int64_t offset,
                              float* y, int64_t n) {
  if (ops.empty() || m <= 0) return;
  const int64_t chunk = std::max<int64_t>(1, 512 / m) * m;  // whole pixels
  for (int64_t i = 0; i < n; i += chunk) {
    PostOpsChunk(ops.data(), ops.size(), 0, m, offset + i, 0.0f, y + i, std::min(chunk, n - i));
  }
}

bool PointwiseFits(const ConvShape& s) {
  // Below 28x28 outputs (and with strides) oneDNN's blocked 1x1 kernels win, reorders included.
  if (s.group != 1 || s.window.out_size() < 28 * 28) return false;
  for (int i = 0; i < s.window.nd; ++i) {
    if (s.window.kernel[i] != 1 || s.window.pad_begin[i] != 0 || s.window.pad_end[i] != 0 ||
        s.window.stride[i] != 1) {
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
  // Blocks of output rows (channels) and columns of all images are the units of work, spread
  // over the threads; each block's sgemm runs in its thread (oneDNN does not nest), its epilogue
  // right after while the block is in cache. Row blocks hold at most kRowBlock channels, split
  // evenly, so that the smallest planes still give the threads work. The blocking depends on
  // the shapes only, not on the thread count: neither do the results.
  const int64_t col_blocks = (out_plane + kColumnBlock - 1) / kColumnBlock;
  const int64_t row_blocks = (s.m + kRowBlock - 1) / kRowBlock;
  const int64_t rows_per_block = ((s.m + row_blocks - 1) / row_blocks + 7) / 8 * 8;
  const int64_t units = s.n * col_blocks * row_blocks;
  std::vector<absl::Status> errors(static_cast<size_t>(units));
  ctx.ParallelFor(units, 1, [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      const int64_t n = unit / (col_blocks * row_blocks);
      const int64_t j0 = (unit / row_blocks % col_blocks) * kColumnBlock;
      const int64_t m0 = unit % row_blocks * rows_per_block;
      const int64_t cols = std::min(kColumnBlock, out_plane - j0);
      const int64_t rows = std::min(rows_per_block, s.m - m0);
      if (rows <= 0) continue;
      const float* xn = x.data<float>() + n * s.c * in_plane;
      float* yn = y.data<float>() + n * s.m * out_plane;
      errors[unit] = Sgemm(ctx, false, false, rows, cols, s.c, 1.0f, w.data<float>() + m0 * s.c,
                           s.c, xn + j0, out_plane, 0.0f, yn + m0 * out_plane + j0, out_plane);
      if (!errors[unit].ok()) continue;
      for (int64_t m = m0; m < m0 + rows; ++m) {
        ApplyPostOps(ops, m, (n * s.m + m) * out_plane + j0, yn + m * out_plane + j0, cols,
                     b != nullptr ? b->data<float>()[m] : 0.0f);
      }
    }
  });
  for (const absl::Status& st : errors) {
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

bool DepthwiseFits(const ConvShape& s) {
  // On smaller planes oneDNN's kernels, vectorised across channels, win.
  return s.group == s.c && s.m == s.c && PlaneFits(s.window) && s.window.out_size() >= 28 * 28;
}

absl::Status DepthwiseConv(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                           const Tensor& w, const Tensor* b, absl::Span<const ConvPostOp> ops,
                           Tensor& y) {
  const Window& win = s.window;
  const int64_t kh = win.kernel[0], kw = win.kernel[1];
  const int64_t in_plane = win.in_size(), out_plane = win.out_size();
  if (!PostOpsSupported(ops)) return absl::UnimplementedError("post-op without a direct loop");
  const PlaneGeometry g = Geometry(win);
  ctx.ParallelFor(s.n * s.c, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> plane(static_cast<size_t>(g.rows * g.width));
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t c = nc % s.c;
      float* out = y.data<float>() + nc * out_plane;
      DepthwisePlane(g, x.data<float>() + nc * in_plane, w.data<float>() + c * kh * kw,
                     b != nullptr ? b->data<float>()[c] : 0.0f, plane.data(), out);
      ApplyPostOps(ops, c, nc * out_plane, out, out_plane);
    }
  });
  return absl::OkStatus();
}

bool MaxPoolFits(const Window& w) { return PlaneFits(w); }

void MaxPool(const KernelContext& ctx, const Window& win, const Tensor& x, Tensor& y) {
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t in_plane = win.in_size(), out_plane = win.out_size();
  const PlaneGeometry g = Geometry(win);
  ctx.ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> plane(static_cast<size_t>(g.rows * g.width));
    for (int64_t p = begin; p < end; ++p) {
      MaxPoolPlane(g, x.data<float>() + p * in_plane, plane.data(), y.data<float>() + p * out_plane);
    }
  });
}

}  // namespace graphopt::runtime
