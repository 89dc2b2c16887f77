// The nn family's backward ops (ops/nn_grad_ops.h): ConvGradData and ConvGradWeight (float32
// with 1-3 spatial dims on oneDNN's convolution_backward_data / backward_weights primitives,
// everything else on direct loops over the window taps), MaxPoolGrad and AveragePoolGrad
// (loops over the window taps, as the forward pools in nn_pool.cc).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "ops/nn_grad_ops.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/float_conv.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {
namespace {

// The shape held by the 1-D int64 input i.
absl::StatusOr<Shape> ShapeInput(const KernelContext& ctx, int i, const char* name) {
  absl::StatusOr<const Tensor*> t = RequireInput(ctx, i);
  if (!t.ok()) return t.status();
  if ((*t)->dtype() != v1::DT_INT64 || (*t)->rank() != 1) {
    return ctx.Invalid(absl::StrCat("input ", name, " must be a 1-D int64 shape"));
  }
  Shape s((*t)->data<int64_t>(), (*t)->data<int64_t>() + (*t)->num_elements());
  for (int64_t d : s) {
    if (d < 0) return ctx.Invalid(absl::StrCat("input ", name, " holds a negative dim"));
  }
  return s;
}

// The forward convolution X [xs] * W [ws] -> Y [ys] whose gradient is taken: checked and its
// window resolved on X's spatial dims, as Conv resolves it.
absl::StatusOr<ConvShape> ConvGradShape(const KernelContext& ctx, const WindowAttrs& attrs,
                                        int64_t group, const Shape& xs, const Shape& ws,
                                        const Shape& ys) {
  const size_t rank = xs.size();
  if (rank < 3 || ws.size() != rank || ys.size() != rank) {
    return ctx.Invalid(absl::StrCat("X ", ShapeString(xs), ", W ", ShapeString(ws), " and dY ",
                                    ShapeString(ys), " must have one rank >= 3"));
  }
  ConvShape s;
  s.n = xs[0];
  s.c = xs[1];
  s.m = ws[0];
  s.group = group;
  if (group <= 0 || s.m % group != 0 || ws[1] * group != s.c || ys[0] != s.n || ys[1] != s.m) {
    return ctx.Invalid(absl::StrCat("X ", ShapeString(xs), ", W ", ShapeString(ws), " and dY ",
                                    ShapeString(ys), " do not fit a convolution with group ",
                                    group));
  }
  absl::Span<const int64_t> kernel(ws.data() + 2, rank - 2);
  if (!attrs.kernel_shape.empty() &&
      !std::equal(attrs.kernel_shape.begin(), attrs.kernel_shape.end(), kernel.begin(),
                  kernel.end())) {
    return ctx.Invalid(absl::StrCat("attribute 'kernel_shape' disagrees with W ",
                                    ShapeString(ws)));
  }
  absl::StatusOr<Window> win =
      ResolveForwardWindow(ctx.info(), attrs, absl::Span<const int64_t>(xs.data() + 2, rank - 2),
                           kernel);
  if (!win.ok()) return win.status();
  s.window = *std::move(win);
  s.out_shape = {s.n, s.m};
  for (int64_t d : s.window.out) s.out_shape.push_back(d);
  if (!std::equal(s.out_shape.begin(), s.out_shape.end(), ys.begin(), ys.end())) {
    return ctx.Invalid(absl::StrCat("dY ", ShapeString(ys), " is not the shape ",
                                    ShapeString(s.out_shape), " of the convolution of X ",
                                    ShapeString(xs), " with W ", ShapeString(ws)));
  }
  return s;
}

// Direct loops: dX[n, c, i] = sum over the m of c's group and the taps (o, k) that read i of
// dY[n, m, o] W[m, c', k], parallel over [n, c] planes; dW[m, c', k] = sum over n and the taps
// of X[n, c, i] dY[n, m, o], parallel over [m, c'] pairs. Each writes only its own rows.
template <typename T>
absl::Status DirectConvGradData(const KernelContext& ctx, const ConvShape& s, const T* dy,
                                const T* w, T* dx) {
  absl::StatusOr<WindowTaps> computed = ComputeWindowTaps(s.window, ctx);
  if (!computed.ok()) return computed.status();
  const WindowTaps& taps = *computed;
  const int64_t in_size = s.window.in_size(), out_size = s.window.out_size();
  const int64_t k_size = s.window.kernel_size();
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  ctx.ParallelFor(s.n * s.c, 1, [&](int64_t begin, int64_t end) {
    for (int64_t nc = begin; nc < end; ++nc) {
      const int64_t n = nc / s.c, c = nc % s.c, g = c / cg, cl = c % cg;
      T* out = dx + nc * in_size;
      std::fill(out, out + in_size, T(0));
      for (int64_t m = g * mg; m < (g + 1) * mg; ++m) {
        if (ctx.ShouldStop()) return;
        const T* dyp = dy + (n * s.m + m) * out_size;
        const T* wp = w + (m * cg + cl) * k_size;
        for (int64_t o = 0; o < out_size; ++o) {
          const T v = dyp[o];
          for (int64_t t = taps.begin[o]; t < taps.begin[o + 1]; ++t) {
            out[taps.input_offset[t]] += v * wp[taps.kernel_index[t]];
          }
        }
      }
    }
  });
  if (ctx.stop_seen()) return ctx.StopStatus(ctx.info().label());
  return absl::OkStatus();
}

template <typename T>
absl::Status DirectConvGradWeight(const KernelContext& ctx, const ConvShape& s, const T* x,
                                  const T* dy, T* dw) {
  absl::StatusOr<WindowTaps> computed = ComputeWindowTaps(s.window, ctx);
  if (!computed.ok()) return computed.status();
  const WindowTaps& taps = *computed;
  const int64_t in_size = s.window.in_size(), out_size = s.window.out_size();
  const int64_t k_size = s.window.kernel_size();
  const int64_t cg = s.c / s.group, mg = s.m / s.group;
  ctx.ParallelFor(s.m * cg, 1, [&](int64_t begin, int64_t end) {
    for (int64_t mc = begin; mc < end; ++mc) {
      const int64_t m = mc / cg, cl = mc % cg, c = (m / mg) * cg + cl;
      T* out = dw + mc * k_size;
      std::fill(out, out + k_size, T(0));
      for (int64_t n = 0; n < s.n; ++n) {
        if (ctx.ShouldStop()) return;
        const T* xp = x + (n * s.c + c) * in_size;
        const T* dyp = dy + (n * s.m + m) * out_size;
        for (int64_t o = 0; o < out_size; ++o) {
          const T v = dyp[o];
          for (int64_t t = taps.begin[o]; t < taps.begin[o + 1]; ++t) {
            out[taps.kernel_index[t]] += v * xp[taps.input_offset[t]];
          }
        }
      }
    }
  });
  if (ctx.stop_seen()) return ctx.StopStatus(ctx.info().label());
  return absl::OkStatus();
}

// --- oneDNN ---------------------------------------------------------------------------------

// oneDNN's backward convolutions for one node, float32, 1-3 spatial dims. Each primitive takes
// its operands in the layouts it prefers ('any'): the plain NCHW tensors are reordered in and
// the result out through buffers kept with the primitive between calls. Primitives are cached
// per shapes. Thread-safe.
class DnnlConvBackward {
 public:
  enum class Kind { kData, kWeights };

  static absl::StatusOr<std::unique_ptr<DnnlConvBackward>> Create(const KernelInfo& info,
                                                                  Kind kind) {
    auto b = std::make_unique<DnnlConvBackward>();
    b->kind_ = kind;
    absl::Status st = GuardDnnl(info, "engine creation", [&] {
      b->engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
      return absl::OkStatus();
    });
    if (!st.ok()) return st;
    return b;
  }

  // kData: out (dX) from a = dY, b = W; kWeights: out (dW) from a = X, b = dY. UNIMPLEMENTED
  // when oneDNN has no primitive for the shapes.
  absl::Status Run(const KernelContext& ctx, const ConvShape& s, const float* a, const float* b,
                   float* out) const {
    absl::StatusOr<std::shared_ptr<Primitive>> p = Get(ctx, s);
    if (!p.ok()) return p.status();
    Primitive& prim = **p;
    return GuardDnnl(ctx.info(), "backward convolution", [&]() -> absl::Status {
      std::unique_ptr<Scratch> scratch;
      {
        absl::MutexLock lock(&prim.mu);
        if (!prim.idle.empty()) {
          scratch = std::move(prim.idle.back());
          prim.idle.pop_back();
        }
      }
      if (scratch == nullptr) {
        absl::StatusOr<std::unique_ptr<Scratch>> made = MakeScratch(prim);
        if (!made.ok()) return made.status();
        scratch = *std::move(made);
      }
      dnnl::stream stream(engine_);
      dnnl::memory pad(prim.pad, engine_, scratch->pad->data());
      // Operand i in the primitive's layout: the caller's memory, or reordered into scratch.
      auto operand = [&](int i, const float* user) {
        dnnl::memory u(prim.user[i], engine_, const_cast<float*>(user));
        if (!prim.reorder[i]) return u;
        dnnl::memory m(prim.prim_md[i], engine_, scratch->buf[i]->data());
        prim.reorders[i].execute(stream, {{DNNL_ARG_FROM, u}, {DNNL_ARG_TO, m},
                                          {DNNL_ARG_SCRATCHPAD, pad}});
        return m;
      };
      const dnnl::memory ma = operand(0, a);
      const dnnl::memory mb = operand(1, b);
      dnnl::memory user_out(prim.user[2], engine_, out);
      dnnl::memory mo = prim.reorder[2]
                            ? dnnl::memory(prim.prim_md[2], engine_, scratch->buf[2]->data())
                            : user_out;
      if (kind_ == Kind::kData) {
        prim.prim.execute(stream, {{DNNL_ARG_DIFF_DST, ma}, {DNNL_ARG_WEIGHTS, mb},
                                   {DNNL_ARG_DIFF_SRC, mo}, {DNNL_ARG_SCRATCHPAD, pad}});
      } else {
        prim.prim.execute(stream, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_DIFF_DST, mb},
                                   {DNNL_ARG_DIFF_WEIGHTS, mo}, {DNNL_ARG_SCRATCHPAD, pad}});
      }
      if (prim.reorder[2]) {
        prim.reorders[2].execute(stream, {{DNNL_ARG_FROM, mo}, {DNNL_ARG_TO, user_out},
                                          {DNNL_ARG_SCRATCHPAD, pad}});
      }
      stream.wait();
      absl::MutexLock lock(&prim.mu);
      // Bounded by the calls running at once.
      prim.idle.push_back(std::move(scratch));
      return absl::OkStatus();
    });
  }

 private:
  // Buffers of one call: operands 0, 1 and the result in the primitive's layouts, a scratchpad.
  struct Scratch {
    std::shared_ptr<Buffer> buf[3];
    std::shared_ptr<Buffer> pad;
  };
  // Slots 0, 1: the operands (kData: dY, W; kWeights: X, dY); 2: the result.
  struct Primitive {
    dnnl::primitive prim;
    dnnl::memory::desc user[3], prim_md[3];
    bool reorder[3] = {false, false, false};
    dnnl::reorder reorders[3];
    dnnl::memory::desc pad;  // bytes: the largest scratchpad of the primitive and reorders
    absl::Mutex mu;
    std::vector<std::unique_ptr<Scratch>> idle ABSL_GUARDED_BY(mu);
  };

  absl::StatusOr<std::unique_ptr<Scratch>> MakeScratch(const Primitive& p) const {
    auto s = std::make_unique<Scratch>();
    for (int i = 0; i < 3; ++i) {
      if (!p.reorder[i]) continue;
      absl::StatusOr<std::shared_ptr<Buffer>> b =
          Buffer::AllocateCpu(p.prim_md[i].get_size(), Buffer::Pages::kHugeWhenLarge);
      if (!b.ok()) return b.status();
      s->buf[i] = *std::move(b);
    }
    absl::StatusOr<std::shared_ptr<Buffer>> pad = Buffer::AllocateCpu(p.pad.get_size());
    if (!pad.ok()) return pad.status();
    s->pad = *std::move(pad);
    return s;
  }

  absl::StatusOr<std::shared_ptr<Primitive>> Get(const KernelContext& ctx,
                                                 const ConvShape& s) const {
    absl::InlinedVector<int64_t, 32> key = {s.n, s.c, s.m, s.group};
    for (const WindowDims* v : {&s.window.in, &s.window.kernel, &s.window.stride,
                                &s.window.dilation, &s.window.pad_begin, &s.window.pad_end}) {
      key.insert(key.end(), v->begin(), v->end());
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
    const tag act = nd == 1 ? tag::ncw : nd == 2 ? tag::nchw : tag::ncdhw;
    const tag wtag = s.group > 1 ? (nd == 1 ? tag::goiw : nd == 2 ? tag::goihw : tag::goidhw)
                                 : (nd == 1 ? tag::oiw : nd == 2 ? tag::oihw : tag::oidhw);
    dims src_dims = {s.n, s.c}, dst_dims = {s.n, s.m}, w_dims;
    for (int64_t d : s.window.in) src_dims.push_back(d);
    for (int64_t d : s.window.out) dst_dims.push_back(d);
    if (s.group > 1) w_dims = {s.group, s.m / s.group, s.c / s.group};
    else w_dims = {s.m, s.c};
    for (int64_t d : s.window.kernel) w_dims.push_back(d);
    dims strides(s.window.stride.begin(), s.window.stride.end());
    dims dil;
    for (int64_t d : s.window.dilation) dil.push_back(d - 1);
    dims pl(s.window.pad_begin.begin(), s.window.pad_begin.end());
    dims pr(s.window.pad_end.begin(), s.window.pad_end.end());
    auto p = std::make_shared<Primitive>();
    absl::Status st = GuardDnnl(ctx.info(), "backward convolution setup", [&]() -> absl::Status {
      const dnnl::memory::desc src_user(src_dims, dt::f32, act), dst_user(dst_dims, dt::f32, act);
      const dnnl::memory::desc w_user(w_dims, dt::f32, wtag);
      const dnnl::memory::desc src_any(src_dims, dt::f32, tag::any);
      const dnnl::memory::desc dst_any(dst_dims, dt::f32, tag::any);
      const dnnl::memory::desc w_any(w_dims, dt::f32, tag::any);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      const dnnl::convolution_forward::primitive_desc hint(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                          dnnl::algorithm::convolution_direct, src_any, w_any,
                                          dst_any, strides, dil, pl, pr),
          engine_, /*allow_empty=*/true);
      if (!hint) return absl::UnimplementedError("no oneDNN convolution for these shapes");
      dnnl::memory::desc pad_prim;
      if (kind_ == Kind::kData) {
        dnnl::convolution_backward_data::primitive_desc pd(
            dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, src_any,
                                                  w_any, dst_any, strides, dil, pl, pr),
            attr, engine_, hint, /*allow_empty=*/true);
        if (!pd) return absl::UnimplementedError("no oneDNN backward-data convolution");
        p->prim = dnnl::convolution_backward_data(pd);
        p->user[0] = dst_user;
        p->user[1] = w_user;
        p->user[2] = src_user;
        p->prim_md[0] = pd.diff_dst_desc();
        p->prim_md[1] = pd.weights_desc();
        p->prim_md[2] = pd.diff_src_desc();
        pad_prim = pd.scratchpad_desc();
      } else {
        dnnl::convolution_backward_weights::primitive_desc pd(
            dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct,
                                                     src_any, w_any, dst_any, strides, dil, pl,
                                                     pr),
            attr, engine_, hint, /*allow_empty=*/true);
        if (!pd) return absl::UnimplementedError("no oneDNN backward-weights convolution");
        p->prim = dnnl::convolution_backward_weights(pd);
        p->user[0] = src_user;
        p->user[1] = dst_user;
        p->user[2] = w_user;
        p->prim_md[0] = pd.src_desc();
        p->prim_md[1] = pd.diff_dst_desc();
        p->prim_md[2] = pd.diff_weights_desc();
        pad_prim = pd.scratchpad_desc();
      }
      dnnl::primitive_attr reorder_attr;
      reorder_attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      size_t pad_bytes = std::max<size_t>(1, pad_prim.get_size());
      for (int i = 0; i < 3; ++i) {
        p->reorder[i] = p->prim_md[i] != p->user[i];
        if (!p->reorder[i]) continue;
        const dnnl::memory::desc& from = i == 2 ? p->prim_md[i] : p->user[i];
        const dnnl::memory::desc& to = i == 2 ? p->user[i] : p->prim_md[i];
        dnnl::reorder::primitive_desc rpd(engine_, from, engine_, to, reorder_attr);
        pad_bytes = std::max(pad_bytes, rpd.scratchpad_desc().get_size());
        p->reorders[i] = dnnl::reorder(rpd);
      }
      p->pad = dnnl::memory::desc({static_cast<dnnl::memory::dim>(pad_bytes)}, dt::u8, tag::x);
      return absl::OkStatus();
    });
    if (!st.ok()) return st;
    absl::MutexLock lock(&mu_);
    // Bounded: a node sees few distinct shapes; start over rather than grow without limit.
    if (cache_.size() >= 16) cache_.clear();
    cache_[key] = p;
    return p;
  }

  Kind kind_ = Kind::kData;
  dnnl::engine engine_;
  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<absl::InlinedVector<int64_t, 32>, std::shared_ptr<Primitive>>
      cache_ ABSL_GUARDED_BY(mu_);
};

// ConvGradData(dY, W, X_shape) and ConvGradWeight(X, dY, W_shape).
class ConvGradKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info,
                                                          DnnlConvBackward::Kind kind) {
    absl::StatusOr<WindowAttrs> attrs = ParseWindowAttrs(info);
    if (!attrs.ok()) return attrs.status();
    auto k = std::make_unique<ConvGradKernel>();
    k->attrs_ = *std::move(attrs);
    k->attrs_.ceil_mode = false;
    k->group_ = info.GetInt("group", 1);
    if (k->group_ <= 0) return info.Invalid("attribute 'group' must be positive");
    k->kind_ = kind;
    absl::StatusOr<std::unique_ptr<DnnlConvBackward>> dnnl = DnnlConvBackward::Create(info, kind);
    if (!dnnl.ok()) return dnnl.status();
    k->dnnl_ = *std::move(dnnl);
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const bool data = kind_ == DnnlConvBackward::Kind::kData;
    absl::StatusOr<const Tensor*> a = RequireInput(ctx, 0);
    if (!a.ok()) return a.status();
    absl::StatusOr<const Tensor*> b = RequireInput(ctx, 1);
    if (!b.ok()) return b.status();
    absl::StatusOr<Shape> target = ShapeInput(ctx, 2, data ? "X_shape" : "W_shape");
    if (!target.ok()) return target.status();
    if ((*a)->dtype() != (*b)->dtype()) {
      return ctx.Invalid("inputs 0 and 1 must have the same element type");
    }
    // kData: a = dY, b = W; kWeights: a = X, b = dY.
    const Shape& xs = data ? *target : (*a)->shape();
    const Shape& ws = data ? (*b)->shape() : *target;
    const Shape& ys = data ? (*a)->shape() : (*b)->shape();
    absl::StatusOr<ConvShape> s = ConvGradShape(ctx, attrs_, group_, xs, ws, ys);
    if (!s.ok()) return s.status();
    const v1::DataType dtype = (*a)->dtype();
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, dtype, *target);
    if (!out.ok()) return out.status();
    Tensor& o = **out;
    if (o.num_elements() == 0) return absl::OkStatus();
    if ((*a)->num_elements() == 0 || (*b)->num_elements() == 0) {
      std::memset(o.raw_data(), 0, o.byte_size());
      return absl::OkStatus();
    }
    if (dtype == v1::DT_FLOAT32 && s->window.nd <= 3) {
      absl::Status st =
          dnnl_->Run(ctx, *s, (*a)->data<float>(), (*b)->data<float>(), o.data<float>());
      if (st.code() != absl::StatusCode::kUnimplemented) return st;
    }
    auto run = [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      if (data) {
        return DirectConvGradData<T>(ctx, *s, (*a)->data<T>(), (*b)->data<T>(), o.data<T>());
      }
      return DirectConvGradWeight<T>(ctx, *s, (*a)->data<T>(), (*b)->data<T>(), o.data<T>());
    };
    if (dtype == v1::DT_FLOAT32) return run(TypeTag<float>{});
    if (dtype == v1::DT_FLOAT64) return run(TypeTag<double>{});
    return absl::UnimplementedError(absl::StrCat(ctx.info().label(), ": ", ctx.info().op_type(),
                                                 " of element type ", DataTypeName(dtype),
                                                 " is not supported"));
  }

 private:
  WindowAttrs attrs_;
  int64_t group_ = 1;
  DnnlConvBackward::Kind kind_ = DnnlConvBackward::Kind::kData;
  std::unique_ptr<DnnlConvBackward> dnnl_;
};

// --- Pools ------------------------------------------------------------------------------------

// MaxPoolGrad(dY, X) and AveragePoolGrad(dY, X_shape): dX, zero, plus each dY element at its
// window's first maximum (MaxPool's order and Indices) or spread over its counted taps.
class PoolGradKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info, bool max) {
    absl::StatusOr<WindowAttrs> attrs = ParseWindowAttrs(info);
    if (!attrs.ok()) return attrs.status();
    if (attrs->kernel_shape.empty()) return info.Invalid("attribute 'kernel_shape' is required");
    auto k = std::make_unique<PoolGradKernel>();
    k->attrs_ = *std::move(attrs);
    k->max_ = max;
    k->count_include_pad_ = info.GetInt("count_include_pad", 0) != 0;
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> dys = RequireInput(ctx, 0);
    if (!dys.ok()) return dys.status();
    const Tensor& dy = **dys;
    const Tensor* x = nullptr;
    Shape xs;
    if (max_) {
      absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 1);
      if (!xt.ok()) return xt.status();
      x = *xt;
      xs = x->shape();
      if (x->dtype() != dy.dtype()) return ctx.Invalid("inputs dY and X must have one type");
    } else {
      absl::StatusOr<Shape> s = ShapeInput(ctx, 1, "X_shape");
      if (!s.ok()) return s.status();
      xs = *std::move(s);
    }
    if (xs.size() < 3 || dy.rank() != static_cast<int>(xs.size())) {
      return ctx.Invalid(absl::StrCat("X ", ShapeString(xs), " and dY ", ShapeString(dy.shape()),
                                      " must have one rank >= 3"));
    }
    absl::StatusOr<Window> w = ResolveForwardWindow(
        ctx.info(), attrs_, absl::Span<const int64_t>(xs.data() + 2, xs.size() - 2),
        attrs_.kernel_shape);
    if (!w.ok()) return w.status();
    Shape ys = {xs[0], xs[1]};
    for (int64_t d : w->out) ys.push_back(d);
    if (!std::equal(ys.begin(), ys.end(), dy.shape().begin(), dy.shape().end())) {
      return ctx.Invalid(absl::StrCat("dY ", ShapeString(dy.shape()), " is not the pool's output ",
                                      ShapeString(ys), " for X ", ShapeString(xs)));
    }
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, dy.dtype(), xs);
    if (!out.ok()) return out.status();
    Tensor& dx = **out;
    if (dx.num_elements() == 0) return absl::OkStatus();
    std::memset(dx.raw_data(), 0, dx.byte_size());
    if (dy.num_elements() == 0) return absl::OkStatus();
    absl::StatusOr<WindowTaps> computed = ComputeWindowTaps(*w, ctx);
    if (!computed.ok()) return computed.status();
    const WindowTaps& taps = *computed;
    const int64_t planes = xs[0] * xs[1];
    const int64_t in_size = w->in_size(), out_size = w->out_size();
    auto run = [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T* dyp = dy.data<T>();
      const T* xp = x ? x->data<T>() : nullptr;
      T* dxp = dx.data<T>();
      ctx.ParallelFor(planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, out_size)),
                      [&](int64_t begin, int64_t end) {
        for (int64_t pl = begin; pl < end; ++pl) {
          if (ctx.ShouldStop()) return;
          const T* g = dyp + pl * out_size;
          T* d = dxp + pl * in_size;
          for (int64_t o = 0; o < out_size; ++o) {
            const int64_t tb = taps.begin[o], te = taps.begin[o + 1];
            if (max_) {
              const T* xi = xp + pl * in_size;
              T best = -std::numeric_limits<T>::infinity();
              int64_t arg = -1;
              for (int64_t t = tb; t < te; ++t) {
                const T v = xi[taps.input_offset[t]];
                if (v > best || arg < 0) {
                  best = v;
                  arg = taps.input_offset[t];
                }
              }
              if (arg >= 0) d[arg] += g[o];
            } else {
              const int64_t count = count_include_pad_ ? taps.padded_count[o] : te - tb;
              if (count <= 0) continue;
              const T v = g[o] / static_cast<T>(count);
              for (int64_t t = tb; t < te; ++t) d[taps.input_offset[t]] += v;
            }
          }
        }
      });
      if (ctx.stop_seen()) return ctx.StopStatus(ctx.info().label());
      return absl::OkStatus();
    };
    if (dy.dtype() == v1::DT_FLOAT32) return run(TypeTag<float>{});
    if (dy.dtype() == v1::DT_FLOAT64) return run(TypeTag<double>{});
    return absl::UnimplementedError(absl::StrCat(ctx.info().label(), ": ", ctx.info().op_type(),
                                                 " of element type ", DataTypeName(dy.dtype()),
                                                 " is not supported"));
  }

 private:
  WindowAttrs attrs_;
  bool max_ = false;
  bool count_include_pad_ = false;
};

}  // namespace

absl::Status RegisterNnGradKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register(
      KernelRegistry::Key{kNnGradDomain, kConvGradDataOp},
      KernelFactory([](const KernelInfo& info) {
        return ConvGradKernel::Create(info, DnnlConvBackward::Kind::kData);
      })));
  s.Update(registry.Register(
      KernelRegistry::Key{kNnGradDomain, kConvGradWeightOp},
      KernelFactory([](const KernelInfo& info) {
        return ConvGradKernel::Create(info, DnnlConvBackward::Kind::kWeights);
      })));
  s.Update(registry.Register(KernelRegistry::Key{kNnGradDomain, kMaxPoolGradOp},
                             KernelFactory([](const KernelInfo& info) {
                               return PoolGradKernel::Create(info, true);
                             })));
  s.Update(registry.Register(KernelRegistry::Key{kNnGradDomain, kAveragePoolGradOp},
                             KernelFactory([](const KernelInfo& info) {
                               return PoolGradKernel::Create(info, false);
                             })));
  return s;
}

}  // namespace graphopt::runtime
