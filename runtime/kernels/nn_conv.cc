// Convolutions: Conv (float32 on oneDNN, 1-3 spatial dims; double and higher ranks on direct
// loops), ConvTranspose (direct loops), ConvInteger and QLinearConv (direct loops in int32).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include "absl/base/casts.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "ops/layout_ops.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/float_conv.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {

namespace {

// CheckConv on X's shape `xs` given channels-first; `shown` is X's shape as errors show it.
absl::StatusOr<ConvShape> CheckConvShapes(const KernelContext& ctx, const WindowAttrs& attrs,
                                          int64_t group, const Shape& xs, const Shape& shown,
                                          const Tensor& w, const Tensor* b) {
  const int rank = static_cast<int>(xs.size());
  if (w.rank() != rank) {
    return ctx.Invalid(absl::StrCat("input W ", ShapeString(w.shape()),
                                    " must have the rank of X ", ShapeString(shown)));
  }
  ConvShape s;
  s.n = xs[0];
  s.c = xs[1];
  s.m = w.dim(0);
  s.group = group;
  if (group <= 0 || s.c % group != 0 || s.m % group != 0 || w.dim(1) * group != s.c) {
    return ctx.Invalid(absl::StrCat("W ", ShapeString(w.shape()), " does not fit X ",
                                    ShapeString(shown), " with group ", group));
  }
  absl::Span<const int64_t> kernel(w.shape().data() + 2, w.rank() - 2);
  if (!attrs.kernel_shape.empty() &&
      !std::equal(attrs.kernel_shape.begin(), attrs.kernel_shape.end(), kernel.begin(),
                  kernel.end())) {
    return ctx.Invalid(absl::StrCat("attribute 'kernel_shape' disagrees with W ",
                                    ShapeString(w.shape())));
  }
  if (b != nullptr && (b->rank() != 1 || b->dim(0) != s.m)) {
    return ctx.Invalid(absl::StrCat("input B ", ShapeString(b->shape()), " must be [", s.m, "]"));
  }
  absl::StatusOr<Window> win = ResolveForwardWindow(
      ctx.info(), attrs, absl::Span<const int64_t>(xs.data() + 2, rank - 2), kernel);
  if (!win.ok()) return win.status();
  s.window = *std::move(win);
  s.out_shape = {s.n, s.m};
  for (int64_t d : s.window.out) s.out_shape.push_back(d);
  return s;
}

}  // namespace

absl::StatusOr<ConvShape> CheckConv(const KernelContext& ctx, const WindowAttrs& attrs,
                                    int64_t group, const Tensor& x, const Tensor& w,
                                    const Tensor* b) {
  if (x.rank() < 3) {
    return ctx.Invalid(absl::StrCat("input X must have rank >= 3 ([N, C, spatial...]), got ",
                                    ShapeString(x.shape())));
  }
  return CheckConvShapes(ctx, attrs, group, x.shape(), x.shape(), w, b);
}

absl::StatusOr<ConvShape> CheckConvChannelsLast(const KernelContext& ctx,
                                                const WindowAttrs& attrs, int64_t group,
                                                const Tensor& x, const Tensor& w,
                                                const Tensor* b) {
  if (x.rank() < 3) {
    return ctx.Invalid(absl::StrCat("input X must have rank >= 3 ([N, spatial..., C]), got ",
                                    ShapeString(x.shape())));
  }
  Shape first = {x.dim(0), x.dim(x.rank() - 1)};
  first.insert(first.end(), x.shape().begin() + 1, x.shape().end() - 1);
  absl::StatusOr<ConvShape> s = CheckConvShapes(ctx, attrs, group, first, x.shape(), w, b);
  if (!s.ok()) return s.status();
  s->channels_last = true;
  s->out_shape = {s->n};
  for (int64_t d : s->window.out) s->out_shape.push_back(d);
  s->out_shape.push_back(s->m);
  return s;
}

namespace {

// Direct convolution: y[n, m, o] = bias[m] + sum over the group's channels c and the taps of o
// of (x[n, c, i] - x_zero) * (w[m, c, k] - w_zero[m]); padded taps contribute nothing (the
// padding is x_zero for quantized inputs). Acc is the accumulator and output type.
// A unit of work (an output plane) can be long with a large kernel: the stop token is polled
// per input channel.
template <typename X, typename W, typename Acc>
absl::Status DirectConv(const ConvShape& s, const X* x, Acc x_zero, const W* w,
                        const Acc* w_zero, const Acc* bias, Acc* y, const KernelContext& ctx) {
  absl::StatusOr<WindowTaps> computed = ComputeWindowTaps(s.window, ctx);
  if (!computed.ok()) return computed.status();
  const WindowTaps& taps = *computed;
  const int64_t in_size = s.window.in_size();
  const int64_t out_size = s.window.out_size();
  const int64_t k_size = s.window.kernel_size();
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  ctx.ParallelFor(s.n * s.m, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size * k_size * cg)),
                  [&](int64_t begin, int64_t end) {
    for (int64_t nm = begin; nm < end; ++nm) {
      const int64_t n = nm / s.m, m = nm % s.m, g = m / mg;
      Acc* yp = y + nm * out_size;
      const Acc b = bias ? bias[m] : Acc(0);
      const Acc wz = w_zero ? w_zero[m] : Acc(0);
      for (int64_t o = 0; o < out_size; ++o) yp[o] = b;
      for (int64_t c = 0; c < cg; ++c) {
        if (ctx.ShouldStop()) return;
        const X* xp = x + (n * s.c + g * cg + c) * in_size;
        const W* wp = w + (m * cg + c) * k_size;
        for (int64_t o = 0; o < out_size; ++o) {
          Acc acc = 0;
          // int32 sums (a large bias, a long kernel) wrap around as ONNX Runtime's do.
          for (int64_t t = taps.begin[o]; t < taps.begin[o + 1]; ++t) {
            const Acc xv = WrapSub(static_cast<Acc>(xp[taps.input_offset[t]]), x_zero);
            const Acc wv = WrapSub(static_cast<Acc>(wp[taps.kernel_index[t]]), wz);
            acc = WrapAdd(acc, WrapMul(xv, wv));
          }
          yp[o] = WrapAdd(yp[o], acc);
        }
      }
    }
  });
  return absl::OkStatus();
}

// What Conv and NhwcConv share: the window and group attributes, the convolution on oneDNN,
// and their inputs X, W and the optional B.
class ConvKernelBase : public OpKernel {
 protected:
  // Reads the attributes and creates the oneDNN side.
  absl::Status Init(const KernelInfo& info) {
    absl::StatusOr<WindowAttrs> attrs = ParseWindowAttrs(info);
    if (!attrs.ok()) return attrs.status();
    attrs_ = *std::move(attrs);
    group_ = info.GetInt("group", 1);
    if (group_ <= 0) return info.Invalid("attribute 'group' must be positive");
    absl::StatusOr<std::unique_ptr<FloatConvolution>> dnnl = FloatConvolution::Create(info);
    if (!dnnl.ok()) return dnnl.status();
    dnnl_ = *std::move(dnnl);
    return absl::OkStatus();
  }

  // X and W (required) and B (null when absent).
  struct Inputs {
    const Tensor* x;
    const Tensor* w;
    const Tensor* b;
  };
  static absl::StatusOr<Inputs> RequireInputs(const KernelContext& ctx) {
    absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
    if (!x.ok()) return x.status();
    absl::StatusOr<const Tensor*> w = RequireInput(ctx, 1);
    if (!w.ok()) return w.status();
    return Inputs{*x, *w, ctx.input(2)};
  }

  WindowAttrs attrs_;
  int64_t group_ = 1;
  std::unique_ptr<FloatConvolution> dnnl_;
};

class ConvKernel : public ConvKernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::make_unique<ConvKernel>();
    if (absl::Status st = k->Init(info); !st.ok()) return st;
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<Inputs> in = RequireInputs(ctx);
    if (!in.ok()) return in.status();
    const Tensor *x = in->x, *w = in->w, *b = in->b;
    if (w->dtype() != x->dtype() || (b && b->dtype() != x->dtype())) {
      return ctx.Invalid("inputs X, W and B must have the same element type");
    }
    absl::StatusOr<ConvShape> s = CheckConv(ctx, attrs_, group_, *x, *w, b);
    if (!s.ok()) return s.status();
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x->dtype(), s->out_shape);
    if (!y.ok()) return y.status();
    if ((*y)->num_elements() == 0) return absl::OkStatus();
    if (x->num_elements() == 0 || w->num_elements() == 0) {
      // Empty reduction: the bias alone (or zero).
      return DispatchFloat(x->dtype(), [&](auto tag) -> absl::Status {
        using T = typename decltype(tag)::type;
        T* yp = (*y)->data<T>();
        const int64_t plane = s->window.out_size();
        for (int64_t i = 0; i < (*y)->num_elements(); ++i) {
          yp[i] = b ? b->data<T>()[(i / plane) % s->m] : FromCompute<T>(0.0f);
        }
        return absl::OkStatus();
      });
    }
    if (x->dtype() == v1::DT_FLOAT32 && s->window.nd <= 3) {
      absl::Status st = dnnl_->Run(ctx, *s, *x, *w, b, {}, **y);
      if (st.code() != absl::StatusCode::kUnimplemented) return st;
    }
    if (x->dtype() == v1::DT_FLOAT32) {
      return DirectConv<float, float, float>(*s, x->data<float>(), 0.0f, w->data<float>(),
                                             nullptr, b ? b->data<float>() : nullptr,
                                             (*y)->data<float>(), ctx);
    }
    if (x->dtype() == v1::DT_FLOAT64) {
      return DirectConv<double, double, double>(*s, x->data<double>(), 0.0, w->data<double>(),
                                                nullptr, b ? b->data<double>() : nullptr,
                                                (*y)->data<double>(), ctx);
    }
    return absl::UnimplementedError(absl::StrCat(ctx.info().label(), ": Conv of element type ",
                                                 DataTypeName(x->dtype()),
                                                 " is not supported"));
  }
};

// NhwcConv (ops/layout_ops.h): float32 on oneDNN in the tensors' own channels-last layout;
// direct loops over channels-first copies where oneDNN has no primitive.
class NhwcConvKernel : public ConvKernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::make_unique<NhwcConvKernel>();
    if (absl::Status st = k->Init(info); !st.ok()) return st;
    k->winograd_ = info.GetInt("winograd", 0) != 0;
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<Inputs> in = RequireInputs(ctx);
    if (!in.ok()) return in.status();
    const Tensor *x = in->x, *w = in->w, *b = in->b;
    if (x->dtype() != v1::DT_FLOAT32 || w->dtype() != v1::DT_FLOAT32 ||
        (b && b->dtype() != v1::DT_FLOAT32)) {
      return ctx.Invalid("inputs X, W and B must be float32");
    }
    absl::StatusOr<ConvShape> s = CheckConvChannelsLast(ctx, attrs_, group_, *x, *w, b);
    if (!s.ok()) return s.status();
    s->winograd = winograd_;
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, v1::DT_FLOAT32, s->out_shape);
    if (!y.ok()) return y.status();
    float* yp = (*y)->data<float>();
    if ((*y)->num_elements() == 0) return absl::OkStatus();
    if (x->num_elements() == 0 || w->num_elements() == 0) {
      // Empty reduction: the bias alone (or zero); channels are the last axis.
      for (int64_t i = 0; i < (*y)->num_elements(); ++i) yp[i] = b ? b->data<float>()[i % s->m] : 0.0f;
      return absl::OkStatus();
    }
    if (s->window.nd <= 3) {
      absl::Status st = dnnl_->Run(ctx, *s, *x, *w, b, {}, **y);
      if (st.code() != absl::StatusCode::kUnimplemented) return st;
    }
    // Channels-first copies of X and Y around the direct loops.
    const int64_t in_plane = s->window.in_size(), out_plane = s->window.out_size();
    std::vector<float> xf(static_cast<size_t>(x->num_elements()));
    std::vector<float> yf(static_cast<size_t>((*y)->num_elements()));
    const float* xp = x->data<float>();
    for (int64_t n = 0; n < s->n; ++n) {
      for (int64_t p = 0; p < in_plane; ++p) {
        for (int64_t c = 0; c < s->c; ++c) {
          xf[(n * s->c + c) * in_plane + p] = xp[(n * in_plane + p) * s->c + c];
        }
      }
    }
    ConvShape first = *s;
    first.channels_last = false;
    if (absl::Status st = DirectConv<float, float, float>(first, xf.data(), 0.0f,
                                                          w->data<float>(), nullptr,
                                                          b ? b->data<float>() : nullptr,
                                                          yf.data(), ctx);
        !st.ok()) {
      return st;
    }
    for (int64_t n = 0; n < s->n; ++n) {
      for (int64_t p = 0; p < out_plane; ++p) {
        for (int64_t m = 0; m < s->m; ++m) {
          yp[(n * out_plane + p) * s->m + m] = yf[(n * s->m + m) * out_plane + p];
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  bool winograd_ = false;
};

// ConvTranspose: X [N, C, in...], W [C, M/group, k...], Y [N, M, out...];
// y[n, m, i*s - pad + k*d] += x[n, c, i] * w[c, m % (M/group), k].
class ConvTransposeKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    absl::StatusOr<WindowAttrs> attrs = ParseWindowAttrs(info);
    if (!attrs.ok()) return attrs.status();
    auto k = std::make_unique<ConvTransposeKernel>();
    k->attrs_ = *std::move(attrs);
    k->group_ = info.GetInt("group", 1);
    if (k->group_ <= 0) return info.Invalid("attribute 'group' must be positive");
    k->output_padding_ = info.GetInts("output_padding");
    k->output_shape_ = info.GetInts("output_shape");
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
    if (!xs.ok()) return xs.status();
    absl::StatusOr<const Tensor*> ws = RequireInput(ctx, 1);
    if (!ws.ok()) return ws.status();
    const Tensor& x = **xs;
    const Tensor& w = **ws;
    const Tensor* b = ctx.input(2);
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype())) {
      return ctx.Invalid("inputs X, W and B must have the same element type");
    }
    if (x.rank() < 3 || w.rank() != x.rank()) {
      return ctx.Invalid(absl::StrCat("X ", ShapeString(x.shape()), " and W ",
                                      ShapeString(w.shape()),
                                      " must have the same rank >= 3"));
    }
    const int nd = x.rank() - 2;
    const int64_t n = x.dim(0), c = x.dim(1);
    if (w.dim(0) != c || c % group_ != 0) {
      return ctx.Invalid(absl::StrCat("W ", ShapeString(w.shape()), " does not fit X ",
                                      ShapeString(x.shape()), " with group ", group_));
    }
    const int64_t mg = w.dim(1), m = mg * group_, cg = c / group_;
    if (b && (b->rank() != 1 || b->dim(0) != m)) {
      return ctx.Invalid(absl::StrCat("input B ", ShapeString(b->shape()), " must be [", m, "]"));
    }
    auto per_dim = [&](const std::vector<int64_t>& v, int64_t def, const char* name,
                       std::vector<int64_t>* out) -> absl::Status {
      if (v.empty()) {
        out->assign(nd, def);
        return absl::OkStatus();
      }
      if (static_cast<int>(v.size()) != nd) {
        return ctx.Invalid(absl::StrCat("attribute '", name, "' has ", v.size(), " values for ",
                                        nd, " spatial dims"));
      }
      *out = v;
      return absl::OkStatus();
    };
    std::vector<int64_t> stride, dil, opad, pads;
    absl::Status st = per_dim(attrs_.strides, 1, "strides", &stride);
    st.Update(per_dim(attrs_.dilations, 1, "dilations", &dil));
    st.Update(per_dim(output_padding_, 0, "output_padding", &opad));
    if (!st.ok()) return st;
    std::vector<int64_t> kernel(w.shape().begin() + 2, w.shape().end());
    std::vector<int64_t> in(x.shape().begin() + 2, x.shape().end());
    if (!attrs_.kernel_shape.empty() && attrs_.kernel_shape != kernel) {
      return ctx.Invalid("attribute 'kernel_shape' disagrees with W");
    }
    std::vector<int64_t> pb(nd, 0), pe(nd, 0), out(nd, 0);
    std::vector<int64_t> target;
    if (!output_shape_.empty()) {
      if (static_cast<int>(output_shape_.size()) < nd) {
        return ctx.Invalid("attribute 'output_shape' has fewer values than spatial dims");
      }
      target.assign(output_shape_.end() - nd, output_shape_.end());
    } else if (attrs_.auto_pad == "SAME_UPPER" || attrs_.auto_pad == "SAME_LOWER") {
      for (int i = 0; i < nd; ++i) target.push_back(in[i] * stride[i]);
    }
    for (int i = 0; i < nd; ++i) {
      const int64_t full = stride[i] * (in[i] - 1) + opad[i] + (kernel[i] - 1) * dil[i] + 1;
      if (!target.empty()) {
        const int64_t total = full - target[i];
        if (total < 0) {
          // A larger output than the full one: the extra positions (at the end) stay zero.
          pb[i] = 0;
          pe[i] = total;
        } else if (attrs_.auto_pad == "SAME_UPPER") {
          pb[i] = total / 2;
          pe[i] = total - total / 2;
        } else {
          pb[i] = total - total / 2;
          pe[i] = total / 2;
        }
        out[i] = target[i];
      } else {
        if (attrs_.auto_pad == "NOTSET" && !attrs_.pads.empty()) {
          if (static_cast<int>(attrs_.pads.size()) != 2 * nd) {
            return ctx.Invalid("attribute 'pads' must have 2 values per spatial dim");
          }
          pb[i] = attrs_.pads[i];
          pe[i] = attrs_.pads[nd + i];
        }
        out[i] = full - pb[i] - pe[i];
      }
      if (out[i] < 0) return ctx.Invalid("the output would have a negative dim");
    }
    Shape out_shape = {n, m};
    for (int64_t d : out) out_shape.push_back(d);
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), out_shape);
    if (!y.ok()) return y.status();
    int64_t in_size = 1, out_size = 1, k_size = 1;
    for (int i = 0; i < nd; ++i) {
      in_size *= in[i];
      out_size *= out[i];
      k_size *= kernel[i];
    }
    // Taps per input position: (kernel index, output offset) inside the output.
    std::vector<int64_t> tap_begin(1, 0), tap_out;
    std::vector<int32_t> tap_k;
    std::vector<int64_t> ip(nd, 0), kp(nd, 0);
    for (int64_t i = 0; i < in_size; ++i) {
      std::fill(kp.begin(), kp.end(), 0);
      for (int64_t k = 0; k < k_size; ++k) {
        int64_t off = 0;
        bool inside = true;
        for (int d = 0; d < nd; ++d) {
          const int64_t o = ip[d] * stride[d] - pb[d] + kp[d] * dil[d];
          if (o < 0 || o >= out[d]) inside = false;
          off = off * out[d] + o;
        }
        if (inside) {
          tap_k.push_back(static_cast<int32_t>(k));
          tap_out.push_back(off);
        }
        for (int d = nd - 1; d >= 0; --d) {
          if (++kp[d] < kernel[d]) break;
          kp[d] = 0;
        }
      }
      tap_begin.push_back(static_cast<int64_t>(tap_out.size()));
      for (int d = nd - 1; d >= 0; --d) {
        if (++ip[d] < in[d]) break;
        ip[d] = 0;
      }
    }
    return DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      using C = ComputeType<T>;
      const T* xp = x.data<T>();
      const T* wp = w.data<T>();
      T* yp = (*y)->data<T>();
      ctx.ParallelFor(n * m, 1, [&](int64_t begin, int64_t end) {
        std::vector<C> acc(out_size);
        for (int64_t nm = begin; nm < end; ++nm) {
          const int64_t ni = nm / m, mi = nm % m, g = mi / mg, mo = mi % mg;
          std::fill(acc.begin(), acc.end(), b ? ToCompute(b->data<T>()[mi]) : C(0));
          for (int64_t ci = g * cg; ci < (g + 1) * cg; ++ci) {
            const T* xc = xp + (ni * c + ci) * in_size;
            const T* wc = wp + (ci * mg + mo) * k_size;
            for (int64_t i = 0; i < in_size; ++i) {
              const C xv = ToCompute(xc[i]);
              for (int64_t t = tap_begin[i]; t < tap_begin[i + 1]; ++t) {
                acc[tap_out[t]] += xv * ToCompute(wc[tap_k[t]]);
              }
            }
          }
          T* yo = yp + nm * out_size;
          for (int64_t o = 0; o < out_size; ++o) yo[o] = FromCompute<T>(acc[o]);
        }
      });
      return absl::OkStatus();
    });
  }

 private:
  WindowAttrs attrs_;
  int64_t group_ = 1;
  std::vector<int64_t> output_padding_, output_shape_;
};

// A scalar or per-channel zero point as int32 values (size 1 or `channels`).
absl::StatusOr<std::vector<int32_t>> ZeroPoints(const KernelContext& ctx, int input,
                                                int64_t channels, v1::DataType expected) {
  const Tensor* t = ctx.input(input);
  if (t == nullptr) return std::vector<int32_t>(1, 0);
  if (t->dtype() != expected) {
    return ctx.Invalid(absl::StrCat("input ", input, " (zero point) must be ",
                                    DataTypeName(expected), ", got ", DataTypeName(t->dtype())));
  }
  if (t->num_elements() != 1 && t->num_elements() != channels) {
    return ctx.Invalid(absl::StrCat("input ", input, " (zero point) must have 1 or ", channels,
                                    " elements, got ", ShapeString(t->shape())));
  }
  std::vector<int32_t> v(t->num_elements());
  for (int64_t i = 0; i < t->num_elements(); ++i) {
    v[i] = static_cast<int32_t>(t->ElementAsInt64(i));
  }
  return v;
}

template <typename F>
absl::Status Dispatch8Bit(v1::DataType dtype, F&& f) {
  switch (dtype) {
    case v1::DT_UINT8: return f(TypeTag<uint8_t>{});
    case v1::DT_INT8: return f(TypeTag<int8_t>{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("element type ", DataTypeName(dtype), " is not supported (int8/uint8 only)"));
  }
}

// Integer convolution into int32 shared by ConvInteger and QLinearConv. Inputs: x at 0, its
// zero point at xz, w at wi, its zero point at wz; bias (int32) optional.
absl::Status IntegerConv(KernelContext& ctx, const WindowAttrs& attrs, int64_t group, int wi,
                         int xz, int wz, const Tensor* bias, ConvShape* shape, Tensor* acc) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const Tensor*> w = RequireInput(ctx, wi);
  if (!w.ok()) return w.status();
  absl::StatusOr<ConvShape> s = CheckConv(ctx, attrs, group, **x, **w, nullptr);
  if (!s.ok()) return s.status();
  if (bias && (bias->dtype() != v1::DT_INT32 || bias->num_elements() != s->m)) {
    return ctx.Invalid(absl::StrCat("bias must be int32[", s->m, "]"));
  }
  *shape = *s;
  absl::StatusOr<std::vector<int32_t>> xzp = ZeroPoints(ctx, xz, 1, (*x)->dtype());
  if (!xzp.ok()) return xzp.status();
  absl::StatusOr<std::vector<int32_t>> wzp = ZeroPoints(ctx, wz, s->m, (*w)->dtype());
  if (!wzp.ok()) return wzp.status();
  std::vector<int32_t> wz_m(s->m);
  for (int64_t i = 0; i < s->m; ++i) wz_m[i] = (*wzp)[wzp->size() == 1 ? 0 : i];
  absl::StatusOr<Tensor> a = ctx.AllocateTemp(v1::DT_INT32, s->out_shape, "int32 accumulator");
  if (!a.ok()) return a.status();
  *acc = *std::move(a);
  return Dispatch8Bit((*x)->dtype(), [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    return Dispatch8Bit((*w)->dtype(), [&](auto wtag) {
      using W = typename decltype(wtag)::type;
      return DirectConv<X, W, int32_t>(*s, (*x)->data<X>(), (*xzp)[0], (*w)->data<W>(),
                                       wz_m.data(), bias ? bias->data<int32_t>() : nullptr,
                                       acc->data<int32_t>(), ctx);
    });
  });
}

class ConvIntegerKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    absl::StatusOr<WindowAttrs> attrs = ParseWindowAttrs(info);
    if (!attrs.ok()) return attrs.status();
    auto k = std::make_unique<ConvIntegerKernel>();
    k->attrs_ = *std::move(attrs);
    k->group_ = info.GetInt("group", 1);
    return std::unique_ptr<OpKernel>(std::move(k));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ConvShape s;
    Tensor acc;
    absl::Status st = IntegerConv(ctx, attrs_, group_, 1, 2, 3, nullptr, &s, &acc);
    if (!st.ok()) return st;
    ctx.SetOutput(0, std::move(acc));
    return absl::OkStatus();
  }

 private:
  WindowAttrs attrs_;
  int64_t group_ = 1;
};

// QLinearConv inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B.
class QLinearConvKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    absl::StatusOr<WindowAttrs> attrs = ParseWindowAttrs(info);
    if (!attrs.ok()) return attrs.status();
    auto k = std::make_unique<QLinearConvKernel>();
    k->attrs_ = *std::move(attrs);
    k->group_ = info.GetInt("group", 1);
    return std::unique_ptr<OpKernel>(std::move(k));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    for (int i : {1, 4, 6}) {
      const Tensor* t = ctx.input(i);
      if (t == nullptr || t->dtype() != v1::DT_FLOAT32) {
        return ctx.Invalid(absl::StrCat("input ", i, " (scale) must be a float32 tensor"));
      }
    }
    const Tensor* yz = ctx.input(7);
    const v1::DataType out_type = yz ? yz->dtype() : v1::DT_UINT8;
    if (yz && yz->num_elements() != 1) return ctx.Invalid("y_zero_point must be a scalar");
    ConvShape s;
    Tensor acc;
    absl::Status st = IntegerConv(ctx, attrs_, group_, 3, 2, 5, ctx.input(8), &s, &acc);
    if (!st.ok()) return st;
    const Tensor& xs = *ctx.input(1);
    const Tensor& ws = *ctx.input(4);
    const Tensor& ys = *ctx.input(6);
    if (xs.num_elements() != 1 || ys.num_elements() != 1 ||
        (ws.num_elements() != 1 && ws.num_elements() != s.m)) {
      return ctx.Invalid("scales must be scalars (w_scale: scalar or per output channel)");
    }
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, out_type, s.out_shape);
    if (!y.ok()) return y.status();
    const int64_t plane = s.window.out_size();
    const float y_zero = yz ? static_cast<float>(yz->ElementAsInt64(0)) : 0.0f;
    return Dispatch8Bit(out_type, [&](auto tag) {
      using Q = typename decltype(tag)::type;
      const int32_t* a = acc.data<int32_t>();
      Q* out = (*y)->data<Q>();
      for (int64_t i = 0; i < acc.num_elements(); ++i) {
        const int64_t m = (i / plane) % s.m;
        const float scale = xs.data<float>()[0] *
                            ws.data<float>()[ws.num_elements() == 1 ? 0 : m] / ys.data<float>()[0];
        out[i] = SaturateQuantized<Q>(std::nearbyint(static_cast<float>(a[i]) * scale) + y_zero);
      }
      return absl::OkStatus();
    });
  }

 private:
  WindowAttrs attrs_;
  int64_t group_ = 1;
};

}  // namespace

// A oneDNN convolution for one set of shapes and post-ops.
struct FloatConvolution::Primitive {
  dnnl::convolution_forward prim;
  dnnl::memory::desc user_src, user_wei, user_dst, bias, channel;  // plain layouts
  dnnl::memory::desc src, wei, dst;                                // the primitive's layouts
  dnnl::reorder src_in, dst_out, wei_in, dst_in;                   // set where needed
  bool reorder_src = false, reorder_dst = false, reorder_wei = false;
  int sum = -1;  // index of the sum post-op

  // The weights in the primitive's layout, made from the weight tensor `ref` (held, so that
  // its buffer, hence its address, cannot be reused by another tensor while a copy made from
  // it lives): `storage` is a Buffer (huge pages for large weights) that `memory` views.
  struct WeightsCopy {
    Tensor ref;
    dnnl::memory memory;
    std::shared_ptr<Buffer> storage;
  };
  mutable absl::Mutex mu;
  mutable std::shared_ptr<const WeightsCopy> weights ABSL_GUARDED_BY(mu);  // the latest
  // Every primitive here runs in oneDNN's user scratchpad mode: oneDNN's own scratchpad is
  // shared between primitives (Debian builds it without concurrent execution), so concurrent
  // runs of a plan would corrupt each other's temporaries. Each call brings its own, sized for
  // the largest of the primitives it executes; each primitive's descriptor views it.
  dnnl::memory::desc pad_conv, pad_src_in, pad_dst_out, pad_dst_in, pad_wei_in;
  dnnl::memory::desc pad;  // bytes: the largest of the above
  // A oneDNN memory object viewing a caller's buffer, re-pointed only when the buffer moves
  // (a planned graph hands a node the same arena addresses on every run).
  struct View {
    dnnl::memory memory;
    void* bound = nullptr;
    void Point(void* p) {
      if (p != bound) {
        memory.set_data_handle(p);
        bound = p;
      }
    }
  };
  // Per concurrent call, kept between calls so that a run allocates nothing: activations in
  // the primitive's layouts (src, dst), a scratchpad, the stream, views of the caller's
  // tensors and each primitive's argument map (built once: their keys never change, the
  // views they hold are re-pointed in place).
  struct Scratch {
    dnnl::memory src, dst, pad;
    std::shared_ptr<Buffer> storage[3];  // of src, dst and pad (huge pages when large)
    // The weight copy this call used last (kept alive by it: a call whose weight tensor is
    // the copy's `ref` uses it without taking `mu`).
    std::shared_ptr<const WeightsCopy> weights;
    bool bound = false;  // the members below are set
    dnnl::stream stream;
    View user_src, user_dst, user_wei, bias, residual;
    std::vector<View> operands;  // by post-op index: a binary post-op's operand
    std::unordered_map<int, dnnl::memory> conv_args, src_in_args, dst_out_args, dst_in_args;
  };
  // Idle scratches: one in `idle` (taken and given back without a lock: the common case of
  // one caller at a time), the rest in `scratch`.
  mutable std::atomic<Scratch*> idle{nullptr};
  mutable std::vector<std::unique_ptr<Scratch>> scratch ABSL_GUARDED_BY(mu);

  ~Primitive() { delete idle.load(); }
};

FloatConvolution::~FloatConvolution() { delete memo_.load(); }

absl::StatusOr<std::unique_ptr<FloatConvolution>> FloatConvolution::Create(const KernelInfo& info) {
  auto conv = std::make_unique<FloatConvolution>();
  absl::Status st = GuardDnnl(info, "engine creation", [&] {
    conv->engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return conv;
}

absl::StatusOr<std::shared_ptr<const FloatConvolution::Primitive>> FloatConvolution::GetPrimitive(
    const KernelContext& ctx, const ConvShape& s, bool has_bias,
    absl::Span<const ConvPostOp> post_ops) const {
  PrimitiveKey key = {s.n, s.c, s.m, s.group, has_bias, s.channels_last, s.winograd};
  for (const WindowDims* v : {&s.window.in, &s.window.kernel, &s.window.stride,
                              &s.window.dilation, &s.window.pad_begin, &s.window.pad_end}) {
    key.insert(key.end(), v->begin(), v->end());
  }
  for (const ConvPostOp& op : post_ops) {
    key.push_back(static_cast<int64_t>(op.kind));
    key.push_back(static_cast<int64_t>(op.alg));
    key.push_back(absl::bit_cast<int32_t>(op.alpha));
    key.push_back(absl::bit_cast<int32_t>(op.beta));
  }
  // A node's convolution sees the same shapes run after run: its first primitive answers
  // without a lock.
  if (const Memo* m = memo_.load(std::memory_order_acquire); m != nullptr && m->key == key) {
    return m->primitive;
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  using dims = dnnl::memory::dims;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const int nd = s.window.nd;
  const tag act_tag = s.channels_last ? (nd == 1 ? tag::nwc : nd == 2 ? tag::nhwc : tag::ndhwc)
                                      : (nd == 1 ? tag::ncw : nd == 2 ? tag::nchw : tag::ncdhw);
  const tag w_tag = s.group > 1 ? (nd == 1 ? tag::goiw : nd == 2 ? tag::goihw : tag::goidhw)
                                : (nd == 1 ? tag::oiw : nd == 2 ? tag::oihw : tag::oidhw);
  dims src_dims = {s.n, s.c};
  for (int64_t d : s.window.in) src_dims.push_back(d);
  // oneDNN's dims are channels-first whatever the layout (the tag says where channels are).
  dims dst_dims = {s.n, s.m};
  for (int64_t d : s.window.out) dst_dims.push_back(d);
  dims w_dims;
  if (s.group > 1) w_dims = {s.group, s.m / s.group, s.c / s.group};
  else w_dims = {s.m, s.c};
  for (int i = 0; i < nd; ++i) w_dims.push_back(s.window.kernel[i]);
  dims channel_dims(nd + 2, 1);
  channel_dims[1] = s.m;
  dims strides(s.window.stride.begin(), s.window.stride.end());
  dims dil;
  for (int64_t d : s.window.dilation) dil.push_back(d - 1);
  dims pl(s.window.pad_begin.begin(), s.window.pad_begin.end());
  dims pr(s.window.pad_end.begin(), s.window.pad_end.end());
  auto conv = std::make_shared<Primitive>();
  absl::Status st = GuardDnnl(ctx.info(), "convolution setup", [&]() -> absl::Status {
    conv->user_src = dnnl::memory::desc(src_dims, dt::f32, act_tag);
    conv->user_dst = dnnl::memory::desc(dst_dims, dt::f32, act_tag);
    conv->user_wei = dnnl::memory::desc(w_dims, dt::f32, w_tag);
    conv->bias = dnnl::memory::desc({s.m}, dt::f32, tag::x);
    conv->channel = dnnl::memory::desc(channel_dims, dt::f32, act_tag);
    // A few input channels (an image): the plain layout, read directly, beats a reorder.
    // Channels-last activations are what oneDNN's fast kernels take: used as they are.
    const dnnl::memory::desc any_src = s.c <= 4 || s.channels_last
                                           ? conv->user_src
                                           : dnnl::memory::desc(src_dims, dt::f32, tag::any);
    const dnnl::memory::desc any_dst =
        s.channels_last ? conv->user_dst : dnnl::memory::desc(dst_dims, dt::f32, tag::any);
    const dnnl::memory::desc any_wei(w_dims, dt::f32, tag::any);
    auto describe = [&](dnnl::algorithm alg, const dnnl::memory::desc& src,
                        const dnnl::memory::desc& dst) {
      if (has_bias) {
        return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src,
                                               any_wei, conv->bias, dst, strides, dil, pl, pr);
      }
      return dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, alg, src,
                                             any_wei, dst, strides, dil, pl, pr);
    };
    dnnl::post_ops ops;
    for (size_t i = 0; i < post_ops.size(); ++i) {
      const ConvPostOp& op = post_ops[i];
      switch (op.kind) {
        case ConvPostOp::Kind::kEltwise: ops.append_eltwise(1.0f, op.alg, op.alpha, op.beta); break;
        case ConvPostOp::Kind::kSum:
          if (conv->sum >= 0) return absl::UnimplementedError("more than one sum post-op");
          conv->sum = static_cast<int>(i);
          ops.append_sum(1.0f);
          break;
        case ConvPostOp::Kind::kBinaryAdd: ops.append_binary(dnnl::algorithm::binary_add, conv->channel); break;
        case ConvPostOp::Kind::kBinaryMul: ops.append_binary(dnnl::algorithm::binary_mul, conv->channel); break;
      }
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::primitive_attr reorder_attr;
    reorder_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::convolution_forward::primitive_desc pd;
    if (s.winograd) {
      // Winograd's kernels take oneDNN's blocked layout: reordered in and out like any other.
      const dnnl::memory::desc blocked_src(src_dims, dt::f32, tag::any);
      const dnnl::memory::desc blocked_dst(dst_dims, dt::f32, tag::any);
      pd = dnnl::convolution_forward::primitive_desc(
          describe(dnnl::algorithm::convolution_winograd, blocked_src, blocked_dst), attr,
          engine_, /*allow_empty=*/true);
    }
    if (!pd) {
      pd = dnnl::convolution_forward::primitive_desc(
          describe(dnnl::algorithm::convolution_direct, any_src, any_dst), attr, engine_,
          /*allow_empty=*/true);
    }
    if (!pd) return absl::UnimplementedError("no oneDNN convolution for these shapes and post-ops");
    conv->prim = dnnl::convolution_forward(pd);
    conv->pad_conv = pd.scratchpad_desc();
    conv->src = pd.src_desc();
    conv->dst = pd.dst_desc();
    conv->wei = pd.weights_desc();
    conv->reorder_src = conv->src != conv->user_src;
    conv->reorder_dst = conv->dst != conv->user_dst;
    conv->reorder_wei = conv->wei != conv->user_wei;
    // A reorder from `from` to `to` in user scratchpad mode; its scratchpad desc to `pad`.
    auto make_reorder = [&](const dnnl::memory::desc& from, const dnnl::memory::desc& to,
                            dnnl::memory::desc* pad) {
      dnnl::reorder::primitive_desc rpd(engine_, from, engine_, to, reorder_attr);
      *pad = rpd.scratchpad_desc();
      return dnnl::reorder(rpd);
    };
    if (conv->reorder_src) conv->src_in = make_reorder(conv->user_src, conv->src, &conv->pad_src_in);
    if (conv->reorder_dst) {
      conv->dst_out = make_reorder(conv->dst, conv->user_dst, &conv->pad_dst_out);
      if (conv->sum >= 0) {
        conv->dst_in = make_reorder(conv->user_dst, conv->dst, &conv->pad_dst_in);
      }
    }
    if (conv->reorder_wei) conv->wei_in = make_reorder(conv->user_wei, conv->wei, &conv->pad_wei_in);
    size_t pad_bytes = 1;
    for (const dnnl::memory::desc* p : {&conv->pad_conv, &conv->pad_src_in, &conv->pad_dst_out,
                                        &conv->pad_dst_in, &conv->pad_wei_in}) {
      pad_bytes = std::max(pad_bytes, p->get_size());
    }
    conv->pad = dnnl::memory::desc({static_cast<dnnl::memory::dim>(pad_bytes)}, dt::u8, tag::x);
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  absl::MutexLock lock(&mu_);
  // Bounded: a node sees few distinct shapes; start over rather than grow without limit.
  if (cache_.size() >= 64) cache_.clear();
  cache_[key] = conv;
  if (memo_.load(std::memory_order_relaxed) == nullptr) {
    memo_.store(new Memo{key, conv}, std::memory_order_release);
  }
  return std::shared_ptr<const Primitive>(conv);
}

std::shared_ptr<const FloatConvolution::PackedPointwise> FloatConvolution::PointwiseWeights(
    const KernelContext& ctx, const ConvShape& s, const Tensor& w) const {
  // Kept only for a constant of the plan: weights the graph computes change from run to run,
  // and holding them (as `ref` does, so that no other tensor takes their address) would keep
  // their buffer from being reused.
  const Tensor* constant = ctx.info().constant_input(1);
  const bool keep = constant != nullptr && constant->raw_data() == w.raw_data();
  if (keep) {
    absl::MutexLock lock(&mu_);
    if (pointwise_ != nullptr && pointwise_->ref.raw_data() == w.raw_data() &&
        pointwise_->w.size() == static_cast<size_t>(s.c * s.m)) {
      return pointwise_;
    }
  }
  auto packed = std::make_shared<PackedPointwise>();
  packed->w = PackPointwiseWeights(s, w);
  if (keep) {
    packed->ref = w;
    absl::MutexLock lock(&mu_);
    pointwise_ = packed;
  }
  return packed;
}

absl::Status FloatConvolution::Run(const KernelContext& ctx, const ConvShape& s, const Tensor& x,
                                  const Tensor& w, const Tensor* b,
                                  absl::Span<const ConvPostOp> post_ops, Tensor& y) const {
  for (const ConvPostOp& op : post_ops) {
    const int64_t want = op.kind == ConvPostOp::Kind::kSum ? y.num_elements() : s.m;
    if (op.kind != ConvPostOp::Kind::kEltwise &&
        (op.operand == nullptr || op.operand->dtype() != v1::DT_FLOAT32 ||
         op.operand->num_elements() != want)) {
      return ctx.Invalid("a convolution post-op operand does not fit the output");
    }
  }
  // The direct loops write y before they add a kSum operand: not for one stored in y itself.
  bool sums_in_place = false;
  for (const ConvPostOp& op : post_ops) {
    sums_in_place |= op.kind == ConvPostOp::Kind::kSum && op.operand->raw_data() == y.raw_data();
  }
  if (!s.channels_last && !sums_in_place && s.n * s.c > 0 && PostOpsSupported(post_ops)) {
    if (PointwiseFits(s)) return PointwiseConv(ctx, s, x, w, b, post_ops, y);
    if (DepthwiseFits(s)) return DepthwiseConv(ctx, s, x, w, b, post_ops, y);
  }
  if (s.n * s.c > 0 && NarrowPointwiseFits(s) && PostOpsSupported(post_ops)) {
    NarrowPointwiseConv(ctx, s, x, PointwiseWeights(ctx, s, w)->w.data(), b, post_ops, y);
    return absl::OkStatus();
  }
  // A swish (SiLU) post-op and what follows it run on the direct loops after oneDNN's
  // convolution, in a second pass over y: oneDNN 2.6's swish (its own exp and a division in
  // the JIT code) took longer than that pass with fast_math's SiLU on EfficientNet's layers, and
  // fast_math's SiLU gives the bits of the unfused x * Sigmoid(x) nodes. Not when a residual
  // follows that is summed into y in place (y holds the convolution by then).
  for (size_t i = 0; i < post_ops.size(); ++i) {
    if (post_ops[i].kind != ConvPostOp::Kind::kEltwise ||
        post_ops[i].alg != dnnl::algorithm::eltwise_swish) {
      continue;
    }
    const absl::Span<const ConvPostOp> rest = post_ops.subspan(i);
    if (!PostOpsSupported(rest) || sums_in_place) break;
    if (absl::Status st = Run(ctx, s, x, w, b, post_ops.subspan(0, i), y); !st.ok()) return st;
    float* yp = y.data<float>();
    if (s.channels_last) {
      constexpr int64_t kPixels = 64;  // per unit of work
      const int64_t pixels = y.num_elements() / s.m;
      ctx.ParallelFor((pixels + kPixels - 1) / kPixels, 1, [&](int64_t u0, int64_t u1) {
        const int64_t p0 = u0 * kPixels, p1 = std::min(pixels, u1 * kPixels);
        ApplyPostOpsChannelsLast(rest, s.m, p0 * s.m, yp + p0 * s.m, (p1 - p0) * s.m);
      });
    } else {
      const int64_t plane = s.window.out_size();
      ctx.ParallelFor(s.n * s.m, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) ApplyPostOps(rest, c % s.m, c * plane, yp + c * plane, plane);
      });
    }
    return absl::OkStatus();
  }
  // oneDNN 2.6 applies an eltwise algorithm that appears twice among the post-ops with the
  // first one's parameters both times (conv -> Add 0.25 -> Mul 0.5 computed x + 0.5): such
  // lists are left to the caller's loop.
  for (size_t i = 0; i < post_ops.size(); ++i) {
    for (size_t j = i + 1; j < post_ops.size(); ++j) {
      const ConvPostOp& p = post_ops[i];
      const ConvPostOp& q = post_ops[j];
      if (p.kind == ConvPostOp::Kind::kEltwise && q.kind == ConvPostOp::Kind::kEltwise &&
          p.alg == q.alg && (p.alpha != q.alpha || p.beta != q.beta)) {
        return absl::UnimplementedError("an eltwise post-op twice with different parameters");
      }
    }
  }
  absl::StatusOr<std::shared_ptr<const Primitive>> conv = GetPrimitive(ctx, s, b != nullptr, post_ops);
  if (!conv.ok()) return conv.status();
  const Primitive& c = **conv;
  return GuardDnnl(ctx.info(), "convolution", [&]() -> absl::Status {
    std::unique_ptr<Primitive::Scratch> taken(c.idle.exchange(nullptr, std::memory_order_acquire));
    if (taken == nullptr) {
      absl::MutexLock lock(&c.mu);
      if (!c.scratch.empty()) {
        taken = std::move(c.scratch.back());
        c.scratch.pop_back();
      }
    }
    if (taken == nullptr) taken = std::make_unique<Primitive::Scratch>();
    Primitive::Scratch& scratch = *taken;
    // The call's memory in a Buffer of ours, viewed by oneDNN: huge pages when large for the
    // activations (touched whole on every run), not for the scratchpad (sized for the worst
    // case and touched in part: a huge page would make all of it resident).
    auto own = [&](const dnnl::memory::desc& desc, int slot, dnnl::memory* m) -> absl::Status {
      absl::StatusOr<std::shared_ptr<Buffer>> b = Buffer::AllocateCpu(
          desc.get_size(), slot == 2 ? Buffer::Pages::kDefault : Buffer::Pages::kHugeWhenLarge);
      if (!b.ok()) return b.status();
      *m = dnnl::memory(desc, engine_, (*b)->data());
      scratch.storage[slot] = *std::move(b);
      return absl::OkStatus();
    };
    if (!scratch.pad) {
      if (absl::Status st = own(c.pad, 2, &scratch.pad); !st.ok()) return st;
    }
    if (c.reorder_src && !scratch.src) {
      if (absl::Status st = own(c.src, 0, &scratch.src); !st.ok()) return st;
    }
    if (c.reorder_dst && !scratch.dst) {
      if (absl::Status st = own(c.dst, 1, &scratch.dst); !st.ok()) return st;
    }
    void* const pad = scratch.pad.get_data_handle();
    auto pad_view = [&](const dnnl::memory::desc& desc) { return dnnl::memory(desc, engine_, pad); };
    if (!scratch.bound) {
      // What every later call with this scratch reuses: views (pointed at the caller's tensors
      // below, on each call) and the argument maps. The keys follow from the primitive's key
      // (bias or not, the post-ops' kinds), so they are the same on every call.
      scratch.stream = dnnl::stream(engine_);
      auto view = [&](const dnnl::memory::desc& desc) {
        Primitive::View v;
        v.memory = dnnl::memory(desc, engine_, nullptr);
        return v;
      };
      scratch.user_src = view(c.user_src);
      scratch.user_dst = view(c.user_dst);
      scratch.user_wei = view(c.user_wei);
      const dnnl::memory src = c.reorder_src ? scratch.src : scratch.user_src.memory;
      const dnnl::memory dst = c.reorder_dst ? scratch.dst : scratch.user_dst.memory;
      scratch.conv_args = {{DNNL_ARG_SRC, src},
                           {DNNL_ARG_WEIGHTS, scratch.user_wei.memory},
                           {DNNL_ARG_DST, dst},
                           {DNNL_ARG_SCRATCHPAD, pad_view(c.pad_conv)}};
      if (b != nullptr) {
        scratch.bias = view(c.bias);
        scratch.conv_args[DNNL_ARG_BIAS] = scratch.bias.memory;
      }
      scratch.operands.resize(post_ops.size());
      for (size_t i = 0; i < post_ops.size(); ++i) {
        const ConvPostOp::Kind kind = post_ops[i].kind;
        if (kind == ConvPostOp::Kind::kBinaryAdd || kind == ConvPostOp::Kind::kBinaryMul) {
          scratch.operands[i] = view(c.channel);
          scratch.conv_args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) |
                            DNNL_ARG_SRC_1] = scratch.operands[i].memory;
        }
      }
      if (c.reorder_src) {
        scratch.src_in_args = {{DNNL_ARG_FROM, scratch.user_src.memory},
                               {DNNL_ARG_TO, scratch.src},
                               {DNNL_ARG_SCRATCHPAD, pad_view(c.pad_src_in)}};
      }
      if (c.reorder_dst) {
        scratch.dst_out_args = {{DNNL_ARG_FROM, scratch.dst},
                                {DNNL_ARG_TO, scratch.user_dst.memory},
                                {DNNL_ARG_SCRATCHPAD, pad_view(c.pad_dst_out)}};
        if (c.sum >= 0) {
          scratch.residual = view(c.user_dst);
          scratch.dst_in_args = {{DNNL_ARG_FROM, scratch.residual.memory},
                                 {DNNL_ARG_TO, scratch.dst},
                                 {DNNL_ARG_SCRATCHPAD, pad_view(c.pad_dst_in)}};
        }
      }
      scratch.bound = true;
    }
    dnnl::stream& stream = scratch.stream;
    if (c.reorder_wei) {
      if (scratch.weights == nullptr || scratch.weights->ref.raw_data() != w.raw_data()) {
        absl::MutexLock lock(&c.mu);
        if (c.weights == nullptr || c.weights->ref.raw_data() != w.raw_data()) {
          auto copy = std::make_shared<Primitive::WeightsCopy>();
          dnnl::memory user_wei(c.user_wei, engine_, const_cast<float*>(w.data<float>()));
          absl::StatusOr<std::shared_ptr<Buffer>> storage =
              Buffer::AllocateCpu(c.wei.get_size(), Buffer::Pages::kHugeWhenLarge);
          if (!storage.ok()) return storage.status();
          copy->memory = dnnl::memory(c.wei, engine_, (*storage)->data());
          copy->storage = *std::move(storage);
          copy->ref = w;
          c.wei_in.execute(stream, {{DNNL_ARG_FROM, user_wei},
                                    {DNNL_ARG_TO, copy->memory},
                                    {DNNL_ARG_SCRATCHPAD, pad_view(c.pad_wei_in)}});
          stream.wait();
          c.weights = std::move(copy);
        }
        scratch.weights = c.weights;
        scratch.conv_args[DNNL_ARG_WEIGHTS] = scratch.weights->memory;
      }
    } else {
      scratch.user_wei.Point(const_cast<float*>(w.data<float>()));
    }
    scratch.user_src.Point(const_cast<float*>(x.data<float>()));
    scratch.user_dst.Point(y.data<float>());
    if (b != nullptr) scratch.bias.Point(const_cast<float*>(b->data<float>()));
    for (size_t i = 0; i < post_ops.size(); ++i) {
      const ConvPostOp& op = post_ops[i];
      if (op.kind == ConvPostOp::Kind::kBinaryAdd || op.kind == ConvPostOp::Kind::kBinaryMul) {
        scratch.operands[i].Point(const_cast<float*>(op.operand->data<float>()));
      }
    }
    if (c.reorder_src) c.src_in.execute(stream, scratch.src_in_args);
    for (const ConvPostOp& op : post_ops) {
      if (op.kind != ConvPostOp::Kind::kSum) continue;
      // The sum adds what dst holds when the convolution starts.
      const float* operand = op.operand->data<float>();
      if (c.reorder_dst) {
        scratch.residual.Point(const_cast<float*>(operand));
        c.dst_in.execute(stream, scratch.dst_in_args);
      } else if (operand != y.data<float>()) {
        std::memcpy(y.data<float>(), operand, y.byte_size());
      }
    }
    c.prim.execute(stream, scratch.conv_args);
    if (c.reorder_dst) c.dst_out.execute(stream, scratch.dst_out_args);
    stream.wait();
    Primitive::Scratch* none = nullptr;
    if (c.idle.compare_exchange_strong(none, taken.get(), std::memory_order_release)) {
      taken.release();
    } else {
      absl::MutexLock lock(&c.mu);
      c.scratch.push_back(std::move(taken));
    }
    return absl::OkStatus();
  });
}

absl::Status RegisterNnConvKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Conv", KernelFactory(ConvKernel::Create)));
  s.Update(registry.Register(KernelRegistry::Key{kLayoutDomain, kNhwcConvOp},
                             KernelFactory(NhwcConvKernel::Create)));
  s.Update(registry.Register("ConvTranspose", KernelFactory(ConvTransposeKernel::Create)));
  s.Update(registry.Register("ConvInteger", KernelFactory(ConvIntegerKernel::Create)));
  s.Update(registry.Register("QLinearConv", KernelFactory(QLinearConvKernel::Create)));
  return s;
}

}  // namespace graphopt::runtime
