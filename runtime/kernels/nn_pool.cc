// Pooling: MaxPool (with Indices), AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool,
// GlobalLpPool and MaxUnpool. Plain loops over precomputed window taps (pooling is memory
// bound; the taps are shared by every [n, c] plane), parallel over planes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/layout_ops.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/float_conv.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {
namespace {

template <typename F>
absl::Status DispatchPoolTypes(v1::DataType dtype, bool integers, F&& f) {
  switch (dtype) {
    case v1::DT_FLOAT32: return f(TypeTag<float>{});
    case v1::DT_FLOAT64: return f(TypeTag<double>{});
    case v1::DT_FLOAT16: return f(TypeTag<Float16>{});
    case v1::DT_BFLOAT16: return f(TypeTag<BFloat16>{});
    case v1::DT_INT8:
      if (integers) return f(TypeTag<int8_t>{});
      break;
    case v1::DT_UINT8:
      if (integers) return f(TypeTag<uint8_t>{});
      break;
    default: break;
  }
  return absl::UnimplementedError(
      absl::StrCat("element type ", DataTypeName(dtype), " is not supported"));
}

absl::Status Unsupported(const KernelContext& ctx, const absl::Status& s) {
  if (s.code() != absl::StatusCode::kUnimplemented) return s;
  return absl::UnimplementedError(
      absl::StrCat(ctx.info().label(), ": ", ctx.info().op_type(), ": ", s.message()));
}

// X [N, C, spatial...] checked; the plane count N * C.
absl::StatusOr<const Tensor*> PoolInput(const KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  if ((*x)->rank() < 3) {
    return ctx.Invalid(absl::StrCat("input X must have rank >= 3 ([N, C, spatial...]), got ",
                                    ShapeString((*x)->shape())));
  }
  return x;
}

enum class PoolKind { kMax, kAverage, kLp };

// The window attributes of a pool (ONNX's pools and their channels-last twins), whose
// 'kernel_shape' is required.
absl::StatusOr<WindowAttrs> ParsePoolWindow(const KernelInfo& info) {
  absl::StatusOr<WindowAttrs> attrs = ParseWindowAttrs(info);
  if (!attrs.ok()) return attrs.status();
  if (attrs->kernel_shape.empty()) return info.Invalid("attribute 'kernel_shape' is required");
  return attrs;
}

class PoolKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info,
                                                          PoolKind kind) {
    absl::StatusOr<WindowAttrs> attrs = ParsePoolWindow(info);
    if (!attrs.ok()) return attrs.status();
    auto k = std::make_unique<PoolKernel>();
    k->kind_ = kind;
    k->attrs_ = *std::move(attrs);
    k->count_include_pad_ = info.GetInt("count_include_pad", 0) != 0;
    k->storage_order_ = info.GetInt("storage_order", 0);
    k->p_ = info.GetInt("p", 2);
    if (kind == PoolKind::kLp && info.opset() != 0 && info.opset() < 2) {
      k->p_ = static_cast<int64_t>(info.GetFloat("p", 2.0f));
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> xs = PoolInput(ctx);
    if (!xs.ok()) return xs.status();
    const Tensor& x = **xs;
    absl::StatusOr<Window> w = ResolveForwardWindow(
        ctx.info(), attrs_, absl::Span<const int64_t>(x.shape().data() + 2, x.rank() - 2),
        attrs_.kernel_shape);
    if (!w.ok()) return w.status();
    Shape out_shape = {x.dim(0), x.dim(1)};
    for (int64_t d : w->out) out_shape.push_back(d);
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), out_shape);
    if (!y.ok()) return y.status();
    Tensor* indices = nullptr;
    if (kind_ == PoolKind::kMax && ctx.output_wanted(1)) {
      absl::StatusOr<Tensor*> ind = ctx.AllocateOutput(1, v1::DT_INT64, out_shape);
      if (!ind.ok()) return ind.status();
      indices = *ind;
    }
    if (kind_ == PoolKind::kMax && indices == nullptr && x.dtype() == v1::DT_FLOAT32 &&
        MaxPoolFits(*w)) {
      MaxPool(ctx, *w, x, **y);
      return absl::OkStatus();
    }
    absl::StatusOr<WindowTaps> computed = ComputeWindowTaps(*w, ctx);
    if (!computed.ok()) return computed.status();
    const WindowTaps& taps = *computed;
    const int64_t planes = x.dim(0) * x.dim(1);
    const int64_t in_size = w->in_size(), out_size = w->out_size();
    // Column-major spatial offsets for storage_order 1.
    std::vector<int64_t> col_major;
    if (indices && storage_order_ == 1) {
      col_major.resize(in_size);
      std::vector<int64_t> pos(w->nd, 0);
      for (int64_t i = 0; i < in_size; ++i) {
        int64_t off = 0;
        for (int d = w->nd - 1; d >= 0; --d) off = off * w->in[d] + pos[d];
        col_major[i] = off;
        for (int d = w->nd - 1; d >= 0; --d) {
          if (++pos[d] < w->in[d]) break;
          pos[d] = 0;
        }
      }
    }
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size));
    absl::Status st = DispatchPoolTypes(x.dtype(), kind_ == PoolKind::kMax, [&](auto tag) {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const T* xp = x.data<T>();
      T* yp = (*y)->data<T>();
      ctx.ParallelFor(planes, grain, [&](int64_t begin, int64_t end) {
        for (int64_t pl = begin; pl < end; ++pl) {
          // A plane visits every tap of the window tables: polled per plane.
          if (ctx.ShouldStop()) return;
          const T* xi = xp + pl * in_size;
          T* yo = yp + pl * out_size;
          for (int64_t o = 0; o < out_size; ++o) {
            const int64_t tb = taps.begin[o], te = taps.begin[o + 1];
            if (kind_ == PoolKind::kMax) {
              C best = std::numeric_limits<C>::lowest();
              if constexpr (std::is_floating_point_v<C>) best = -std::numeric_limits<C>::infinity();
              int64_t arg = -1;
              for (int64_t t = tb; t < te; ++t) {
                const C v = ToCompute(xi[taps.input_offset[t]]);
                if (v > best || arg < 0) {
                  best = v;
                  arg = taps.input_offset[t];
                }
              }
              yo[o] = FromCompute<T>(best);
              if (indices) {
                const int64_t sp = arg < 0 ? 0 : (col_major.empty() ? arg : col_major[arg]);
                indices->data<int64_t>()[pl * out_size + o] = pl * in_size + sp;
              }
            } else if (kind_ == PoolKind::kAverage) {
              C sum = 0;
              for (int64_t t = tb; t < te; ++t) sum += ToCompute(xi[taps.input_offset[t]]);
              const int64_t count = count_include_pad_ ? taps.padded_count[o] : te - tb;
              yo[o] = FromCompute<T>(count > 0 ? sum / static_cast<C>(count) : C(0));
            } else {
              C sum = 0;
              for (int64_t t = tb; t < te; ++t) {
                const C v = std::abs(ToCompute(xi[taps.input_offset[t]]));
                sum += p_ == 1 ? v : p_ == 2 ? v * v : static_cast<C>(std::pow(v, p_));
              }
              yo[o] = FromCompute<T>(p_ == 1 ? sum : p_ == 2 ? std::sqrt(sum)
                                             : static_cast<C>(std::pow(sum, 1.0 / p_)));
            }
          }
        }
      });
      return absl::OkStatus();
    });
    return Unsupported(ctx, st);
  }

 private:
  PoolKind kind_ = PoolKind::kMax;
  WindowAttrs attrs_;
  bool count_include_pad_ = false;
  int64_t storage_order_ = 0;
  int64_t p_ = 2;
};

template <PoolKind kKind>
absl::Status GlobalPoolKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xs = PoolInput(ctx);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  Shape out_shape = {x.dim(0), x.dim(1)};
  int64_t plane = 1;
  for (int i = 2; i < x.rank(); ++i) {
    out_shape.push_back(1);
    plane *= x.dim(i);
  }
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!y.ok()) return y.status();
  const int64_t p = ctx.info().GetInt("p", 2);
  const int64_t planes = x.dim(0) * x.dim(1);
  absl::Status st = DispatchPoolTypes(x.dtype(), false, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xp = x.data<T>();
    T* yp = (*y)->data<T>();
    ctx.ParallelFor(planes, std::max<int64_t>(1, 32768 / std::max<int64_t>(plane, 1)),
                    [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        const T* xi = xp + pl * plane;
        C acc;
        if constexpr (kKind == PoolKind::kMax) {
          acc = -std::numeric_limits<C>::infinity();
          for (int64_t i = 0; i < plane; ++i) acc = std::max<C>(acc, ToCompute(xi[i]));
        } else if constexpr (kKind == PoolKind::kAverage) {
          acc = 0;
          for (int64_t i = 0; i < plane; ++i) acc += ToCompute(xi[i]);
          acc = plane > 0 ? acc / static_cast<C>(plane) : C(0);
        } else {
          acc = 0;
          for (int64_t i = 0; i < plane; ++i) {
            acc += static_cast<C>(std::pow(std::abs(ToCompute(xi[i])), p));
          }
          acc = static_cast<C>(std::pow(acc, 1.0 / p));
        }
        yp[pl] = FromCompute<T>(acc);
      }
    });
    return absl::OkStatus();
  });
  return Unsupported(ctx, st);
}

// The channels-last pools of ops/layout_ops.h (float32): X [N, spatial..., C], Y
// [N, out..., C]. Each output position reduces its taps' rows of C channels, in the taps' order
// (the order PoolKernel and GlobalPoolKernel use, so averages round alike).
absl::StatusOr<const Tensor*> NhwcPoolInput(const KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  if ((*x)->rank() < 3) {
    return ctx.Invalid(absl::StrCat("input X must have rank >= 3 ([N, spatial..., C]), got ",
                                    ShapeString((*x)->shape())));
  }
  if ((*x)->dtype() != v1::DT_FLOAT32) {
    return ctx.Invalid(absl::StrCat("input X must be float32, got ",
                                    DataTypeName((*x)->dtype())));
  }
  return x;
}

// One output row (all columns, all channels) of a 2-D channels-last pool: each output reduces
// the rows of C channels of its taps in row-major kernel order, as ComputeWindowTaps lists
// them. Compiled for AVX-512, AVX2 and baseline x86-64 (the loader picks; the channel loops
// vectorise).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
void NhwcPoolRow(bool max, bool count_include_pad, const Window& w, int64_t c, int64_t oh,
                 const float* x, float* out) {
  const int64_t h = w.in[0], wd = w.in[1];
  const int64_t ih0 = oh * w.stride[0] - w.pad_begin[0];
  int64_t rows_padded = 0;
  for (int64_t i = 0; i < w.kernel[0]; ++i) rows_padded += ih0 + i * w.dilation[0] < h + w.pad_end[0];
  for (int64_t ow = 0; ow < w.out[1]; ++ow, out += c) {
    const int64_t iw0 = ow * w.stride[1] - w.pad_begin[1];
    int64_t taps = 0, cols_padded = 0;
    for (int64_t j = 0; j < w.kernel[1]; ++j) cols_padded += iw0 + j * w.dilation[1] < wd + w.pad_end[1];
    for (int64_t i = 0; i < w.kernel[0]; ++i) {
      const int64_t ih = ih0 + i * w.dilation[0];
      if (ih < 0 || ih >= h) continue;
      for (int64_t j = 0; j < w.kernel[1]; ++j) {
        const int64_t iw = iw0 + j * w.dilation[1];
        if (iw < 0 || iw >= wd) continue;
        const float* row = x + (ih * wd + iw) * c;
        if (taps++ == 0) {
          // The first tap: the maximum so far, or 0 + it (PoolKernel's sum from 0).
          for (int64_t k = 0; k < c; ++k) out[k] = max ? row[k] : 0.0f + row[k];
        } else if (max) {
          for (int64_t k = 0; k < c; ++k) out[k] = row[k] > out[k] ? row[k] : out[k];
        } else {
          for (int64_t k = 0; k < c; ++k) out[k] += row[k];
        }
      }
    }
    if (max) {
      if (taps == 0) {
        for (int64_t k = 0; k < c; ++k) out[k] = -std::numeric_limits<float>::infinity();
      }
      continue;
    }
    const int64_t count = count_include_pad ? rows_padded * cols_padded : taps;
    for (int64_t k = 0; k < c; ++k) {
      out[k] = count > 0 ? (taps > 0 ? out[k] : 0.0f) / static_cast<float>(count) : 0.0f;
    }
  }
}

class NhwcPoolKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info,
                                                          PoolKind kind) {
    absl::StatusOr<WindowAttrs> attrs = ParsePoolWindow(info);
    if (!attrs.ok()) return attrs.status();
    auto k = std::make_unique<NhwcPoolKernel>();
    k->kind_ = kind;
    k->attrs_ = *std::move(attrs);
    k->count_include_pad_ = info.GetInt("count_include_pad", 0) != 0;
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> xs = NhwcPoolInput(ctx);
    if (!xs.ok()) return xs.status();
    const Tensor& x = **xs;
    const int64_t c = x.dim(x.rank() - 1);
    absl::StatusOr<Window> w = ResolveForwardWindow(
        ctx.info(), attrs_, absl::Span<const int64_t>(x.shape().data() + 1, x.rank() - 2),
        attrs_.kernel_shape);
    if (!w.ok()) return w.status();
    Shape out_shape = {x.dim(0)};
    for (int64_t d : w->out) out_shape.push_back(d);
    out_shape.push_back(c);
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), out_shape);
    if (!y.ok()) return y.status();
    if ((*y)->num_elements() == 0) return absl::OkStatus();
    const int64_t in_size = w->in_size(), out_size = w->out_size();
    const float* xp = x.data<float>();
    float* yp = (*y)->data<float>();
    if (w->nd == 2) {
      const int64_t rows = x.dim(0) * w->out[0];
      const int64_t per_row = std::max<int64_t>(1, w->out[1] * c * w->kernel_size());
      ctx.ParallelFor(rows, std::max<int64_t>(1, 16384 / per_row), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t n = r / w->out[0], oh = r % w->out[0];
          NhwcPoolRow(kind_ == PoolKind::kMax, count_include_pad_, *w, c, oh,
                      xp + n * in_size * c, yp + r * w->out[1] * c);
        }
      });
      return absl::OkStatus();
    }
    absl::StatusOr<WindowTaps> computed = ComputeWindowTaps(*w, ctx);
    if (!computed.ok()) return computed.status();
    const WindowTaps& taps = *computed;
    const int64_t per_output = std::max<int64_t>(1, c * (taps.begin.back() / std::max<int64_t>(1, out_size)));
    ctx.ParallelFor(x.dim(0) * out_size, std::max<int64_t>(1, 16384 / per_output),
                    [&](int64_t begin, int64_t end) {
      for (int64_t no = begin; no < end; ++no) {
        const int64_t n = no / out_size, o = no % out_size;
        const float* xi = xp + n * in_size * c;
        float* out = yp + no * c;
        const int64_t tb = taps.begin[o], te = taps.begin[o + 1];
        if (kind_ == PoolKind::kMax) {
          if (tb == te) {
            std::fill(out, out + c, -std::numeric_limits<float>::infinity());
            continue;
          }
          std::copy(xi + taps.input_offset[tb] * c, xi + (taps.input_offset[tb] + 1) * c, out);
          for (int64_t t = tb + 1; t < te; ++t) {
            const float* row = xi + taps.input_offset[t] * c;
            for (int64_t k = 0; k < c; ++k) out[k] = row[k] > out[k] ? row[k] : out[k];
          }
        } else {
          std::fill(out, out + c, 0.0f);
          for (int64_t t = tb; t < te; ++t) {
            const float* row = xi + taps.input_offset[t] * c;
            for (int64_t k = 0; k < c; ++k) out[k] += row[k];
          }
          const int64_t count = count_include_pad_ ? taps.padded_count[o] : te - tb;
          for (int64_t k = 0; k < c; ++k) {
            out[k] = count > 0 ? out[k] / static_cast<float>(count) : 0.0f;
          }
        }
      }
    });
    return absl::OkStatus();
  }

 private:
  PoolKind kind_ = PoolKind::kMax;
  WindowAttrs attrs_;
  bool count_include_pad_ = false;
};

template <PoolKind kKind>
absl::Status NhwcGlobalPoolKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xs = NhwcPoolInput(ctx);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  const int64_t c = x.dim(x.rank() - 1);
  Shape out_shape = {x.dim(0)};
  int64_t plane = 1;
  for (int i = 1; i + 1 < x.rank(); ++i) {
    out_shape.push_back(1);
    plane *= x.dim(i);
  }
  out_shape.push_back(c);
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!y.ok()) return y.status();
  const float* xp = x.data<float>();
  float* yp = (*y)->data<float>();
  // Blocks of 64 channels, so that every block's accumulators stay in registers or L1.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (c + kBlock - 1) / kBlock;
  ctx.ParallelFor(x.dim(0) * blocks, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, plane * kBlock)),
                  [&](int64_t begin, int64_t end) {
    for (int64_t nb = begin; nb < end; ++nb) {
      const int64_t n = nb / blocks, c0 = (nb % blocks) * kBlock, c1 = std::min(c, c0 + kBlock);
      float* out = yp + n * c;
      const float* xi = xp + n * plane * c;
      const float init = kKind == PoolKind::kMax ? -std::numeric_limits<float>::infinity() : 0.0f;
      // Channels [k0, k0 + W) over the whole plane, summed in a local array with a fixed trip
      // count: vector code, where a loop of variable count into `out` (which the compiler must
      // assume may alias `row`) stays scalar and stores every partial sum (squeeze-excite's
      // pools took two to three times ORT's). Same order of additions per channel, so the same
      // bits.
      auto fixed = [&](auto width, int64_t k0) {
        constexpr int64_t W = decltype(width)::value;
        float acc[W];
        for (int64_t k = 0; k < W; ++k) acc[k] = init;
        for (int64_t i = 0; i < plane; ++i) {
          const float* row = xi + i * c + k0;
          for (int64_t k = 0; k < W; ++k) {
            if constexpr (kKind == PoolKind::kMax) {
              acc[k] = std::max<float>(acc[k], row[k]);
            } else {
              acc[k] += row[k];
            }
          }
        }
        for (int64_t k = 0; k < W; ++k) out[k0 + k] = acc[k];
      };
      int64_t k0 = c0;
      if (c1 - c0 == kBlock) {
        fixed(std::integral_constant<int64_t, kBlock>(), k0);
        k0 = c1;
      }
      for (; k0 + 16 <= c1; k0 += 16) fixed(std::integral_constant<int64_t, 16>(), k0);
      for (int64_t k = k0; k < c1; ++k) out[k] = init;
      for (int64_t i = 0; k0 < c1 && i < plane; ++i) {
        const float* row = xi + i * c;
        for (int64_t k = k0; k < c1; ++k) {
          if constexpr (kKind == PoolKind::kMax) {
            out[k] = std::max<float>(out[k], row[k]);
          } else {
            out[k] += row[k];
          }
        }
      }
      if constexpr (kKind == PoolKind::kAverage) {
        for (int64_t k = c0; k < c1; ++k) {
          out[k] = plane > 0 ? out[k] / static_cast<float>(plane) : 0.0f;
        }
      }
    }
  });
  return absl::OkStatus();
}

// MaxUnpool: X, I (flat indices into Y, as MaxPool produces), optional output_shape.
absl::Status MaxUnpoolKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = PoolInput(ctx);
  if (!xs.ok()) return xs.status();
  absl::StatusOr<const Tensor*> is = RequireInput(ctx, 1);
  if (!is.ok()) return is.status();
  const Tensor& x = **xs;
  const Tensor& ind = **is;
  if (ind.dtype() != v1::DT_INT64 || ind.shape() != x.shape()) {
    return ctx.Invalid(absl::StrCat("input I must be int64 of X's shape ", ShapeString(x.shape())));
  }
  const int nd = x.rank() - 2;
  const std::vector<int64_t> kernel = info.GetInts("kernel_shape");
  std::vector<int64_t> strides = info.GetInts("strides");
  std::vector<int64_t> pads = info.GetInts("pads");
  if (static_cast<int>(kernel.size()) != nd) {
    return ctx.Invalid("attribute 'kernel_shape' must have one value per spatial dim");
  }
  if (strides.empty()) strides.assign(nd, 1);
  if (pads.empty()) pads.assign(2 * nd, 0);
  if (static_cast<int>(strides.size()) != nd || static_cast<int>(pads.size()) != 2 * nd) {
    return ctx.Invalid("attributes 'strides' and 'pads' disagree with the rank of X");
  }
  // The indices address the unpooled tensor of the inferred shape; an explicit output_shape
  // (which may be larger) holds it at the same coordinates.
  Shape inferred = {x.dim(0), x.dim(1)};
  for (int i = 0; i < nd; ++i) {
    inferred.push_back((x.dim(2 + i) - 1) * strides[i] + kernel[i] - pads[i] - pads[nd + i]);
  }
  Shape out_shape = inferred;
  if (ctx.input(2) != nullptr) {
    absl::StatusOr<std::vector<int64_t>> v = InputInts(ctx, 2);
    if (!v.ok()) return v.status();
    if (static_cast<int>(v->size()) != x.rank()) {
      return ctx.Invalid("input output_shape must have one value per dim of X");
    }
    out_shape.assign(v->begin(), v->end());
  }
  for (int i = 0; i < x.rank(); ++i) {
    if (inferred[i] < 0 || out_shape[i] < 0) {
      return ctx.Invalid("the output would have a negative dim");
    }
  }
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!y.ok()) return y.status();
  std::memset((*y)->raw_data(), 0, (*y)->byte_size());
  const int64_t inferred_total = ShapeNumElements(inferred);
  const int64_t* ip = ind.data<int64_t>();
  std::vector<int64_t> target(ind.num_elements());
  for (int64_t i = 0; i < ind.num_elements(); ++i) {
    int64_t idx = ip[i];
    if (idx < 0 || idx >= inferred_total) {
      return ctx.Invalid(absl::StrCat("index ", idx, " in I is out of range for the unpooled shape ",
                                      ShapeString(inferred)));
    }
    int64_t off = 0, scale = 1;
    for (int d = x.rank() - 1; d >= 0; --d) {
      const int64_t c = idx % inferred[d];
      idx /= inferred[d];
      if (c >= out_shape[d]) {
        return ctx.Invalid(absl::StrCat("index ", ip[i], " in I falls outside output_shape ",
                                        ShapeString(out_shape)));
      }
      off += c * scale;
      scale *= out_shape[d];
    }
    target[i] = off;
  }
  absl::Status st = DispatchPoolTypes(x.dtype(), true, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* xp = x.data<T>();
    T* yp = (*y)->data<T>();
    for (int64_t i = 0; i < x.num_elements(); ++i) yp[target[i]] = xp[i];
    return absl::OkStatus();
  });
  return Unsupported(ctx, st);
}

}  // namespace

absl::Status RegisterNnPoolKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("MaxPool", KernelFactory([](const KernelInfo& info) {
                               return PoolKernel::Create(info, PoolKind::kMax);
                             })));
  s.Update(registry.Register("AveragePool", KernelFactory([](const KernelInfo& info) {
                               return PoolKernel::Create(info, PoolKind::kAverage);
                             })));
  s.Update(registry.Register("LpPool", KernelFactory([](const KernelInfo& info) {
                               return PoolKernel::Create(info, PoolKind::kLp);
                             })));
  s.Update(registry.Register("GlobalMaxPool", GlobalPoolKernel<PoolKind::kMax>));
  s.Update(registry.Register("GlobalAveragePool", GlobalPoolKernel<PoolKind::kAverage>));
  s.Update(registry.Register("GlobalLpPool", GlobalPoolKernel<PoolKind::kLp>));
  s.Update(registry.Register("MaxUnpool", MaxUnpoolKernel));
  s.Update(registry.Register(KernelRegistry::Key{kLayoutDomain, kNhwcMaxPoolOp},
                             KernelFactory([](const KernelInfo& info) {
                               return NhwcPoolKernel::Create(info, PoolKind::kMax);
                             })));
  s.Update(registry.Register(KernelRegistry::Key{kLayoutDomain, kNhwcAveragePoolOp},
                             KernelFactory([](const KernelInfo& info) {
                               return NhwcPoolKernel::Create(info, PoolKind::kAverage);
                             })));
  s.Update(registry.Register(KernelRegistry::Key{kLayoutDomain, kNhwcGlobalMaxPoolOp},
                             NhwcGlobalPoolKernel<PoolKind::kMax>));
  s.Update(registry.Register(KernelRegistry::Key{kLayoutDomain, kNhwcGlobalAveragePoolOp},
                             NhwcGlobalPoolKernel<PoolKind::kAverage>));
  return s;
}

}  // namespace graphopt::runtime
