// Softmax, LogSoftmax, Hardmax, and the losses over log-probabilities built on them:
// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/reduction_util.h"

namespace graphopt::runtime {
namespace {

enum class SoftmaxMode { kSoftmax, kLogSoftmax, kHardmax };

constexpr int64_t kGrain = 16384;

template <typename Out, typename C>
inline Out Store(C v) {
  if constexpr (std::is_same_v<Out, Float16> || std::is_same_v<Out, BFloat16>) {
    return Out(static_cast<float>(v));
  } else {
    return static_cast<Out>(v);
  }
}

// y = mode(x) along the middle dim of layout l ([outer, axis, inner]). x holds T, y holds Out
// (T, or T's compute type for the losses' scratch).
template <SoftmaxMode M, typename T, typename Out>
void SoftmaxOverLayout(const T* x, Out* y, const AxisLayout& l, const KernelContext& ctx) {
  using C = ComputeType<T>;
  const int64_t R = l.axis, I = l.inner;
  if (R == 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(R * I, 1));
  if constexpr (M == SoftmaxMode::kSoftmax && std::is_same_v<T, float> &&
                std::is_same_v<Out, float>) {
    if (I == 1) {
      // Contiguous rows of float32: fast_math's row softmax (vector max, exp and sum; the sum
      // in double; within 2 ulp of expf, entries far below the max as expf gives them).
      ctx.ParallelFor(l.outer, grain, [&](int64_t b, int64_t e) {
        SoftmaxRowsF32(e - b, R, x + b * R, y + b * R);
      });
      return;
    }
  }
  if (I == 1) {
    ctx.ParallelFor(l.outer, grain, [&](int64_t b, int64_t e) {
      std::vector<C> buf;
      for (int64_t o = b; o < e; ++o) {
        const T* xr = x + o * R;
        Out* yr = y + o * R;
        C m = ToCompute(xr[0]);
        int64_t am = 0;
        for (int64_t r = 1; r < R; ++r) {
          const C v = ToCompute(xr[r]);
          if (v > m) {
            m = v;
            am = r;
          }
        }
        if constexpr (M == SoftmaxMode::kHardmax) {
          for (int64_t r = 0; r < R; ++r) yr[r] = Store<Out>(C(r == am ? 1 : 0));
          continue;
        }
        buf.resize(R);
        double s = 0;
        for (int64_t r = 0; r < R; ++r) {
          const C ev = std::exp(ToCompute(xr[r]) - m);
          buf[r] = ev;
          s += static_cast<double>(ev);
        }
        if constexpr (M == SoftmaxMode::kSoftmax) {
          const C inv = static_cast<C>(1.0 / s);
          for (int64_t r = 0; r < R; ++r) yr[r] = Store<Out>(buf[r] * inv);
        } else {
          // (x - m) - log(s), not x - (m + log(s)): m + log(s) would round at m's scale.
          const C ls = static_cast<C>(std::log(s));
          for (int64_t r = 0; r < R; ++r) yr[r] = Store<Out>((ToCompute(xr[r]) - m) - ls);
        }
      }
    });
    return;
  }
  ctx.ParallelFor(l.outer, grain, [&](int64_t b, int64_t e) {
    std::vector<C> m(I);
    std::vector<int64_t> am(I);
    std::vector<double> s(I);
    for (int64_t o = b; o < e; ++o) {
      const T* xo = x + o * R * I;
      Out* yo = y + o * R * I;
      for (int64_t i = 0; i < I; ++i) {
        m[i] = ToCompute(xo[i]);
        am[i] = 0;
      }
      for (int64_t r = 1; r < R; ++r) {
        for (int64_t i = 0; i < I; ++i) {
          const C v = ToCompute(xo[r * I + i]);
          if (v > m[i]) {
            m[i] = v;
            am[i] = r;
          }
        }
      }
      if constexpr (M == SoftmaxMode::kHardmax) {
        for (int64_t r = 0; r < R; ++r) {
          for (int64_t i = 0; i < I; ++i) yo[r * I + i] = Store<Out>(C(am[i] == r ? 1 : 0));
        }
        continue;
      }
      std::fill(s.begin(), s.end(), 0.0);
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t i = 0; i < I; ++i) s[i] += std::exp(ToCompute(xo[r * I + i]) - m[i]);
      }
      for (int64_t r = 0; r < R; ++r) {
        for (int64_t i = 0; i < I; ++i) {
          const C v = ToCompute(xo[r * I + i]) - m[i];
          if constexpr (M == SoftmaxMode::kSoftmax) {
            yo[r * I + i] = Store<Out>(static_cast<C>(std::exp(v) / s[i]));
          } else {
            yo[r * I + i] = Store<Out>(static_cast<C>(v - std::log(s[i])));
          }
        }
      }
    }
  });
}

// Softmax / LogSoftmax / Hardmax. Before opset 13 the input is flattened to 2-D at `axis`
// (default 1) and normalised over the second dim; from 13 along the one `axis` (default -1).
template <SoftmaxMode M>
absl::Status SoftmaxKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  if (x.rank() == 0) return ctx.Invalid("input 0 must have rank >= 1");
  const bool legacy = info.opset() != 0 && info.opset() < 13;
  absl::StatusOr<int> axis = NormalizeAxis(info.GetInt("axis", legacy ? 1 : -1), x.rank(), info);
  if (!axis.ok()) return axis.status();
  const AxisLayout l = LayoutAround(x.shape(), *axis, legacy ? x.rank() : *axis + 1);
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!out.ok()) return out.status();
  absl::Status s = DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    SoftmaxOverLayout<M, T, T>(x.data<T>(), (*out)->template data<T>(), l, ctx);
    return absl::OkStatus();
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}

// The negative log-likelihood of `target` under the log-probabilities `logp` ([N, C, d...] as
// `in_shape` says), weighted by `weight` ([C], optional), with the node's `reduction` and
// `ignore_index`; written to output `out_index` in dtype `dtype`.
template <typename P>
absl::Status NllLoss(KernelContext& ctx, const P* logp, const Shape& in_shape, v1::DataType dtype,
                     const Tensor& target, const Tensor* weight, int out_index) {
  const KernelInfo& info = ctx.info();
  const std::string reduction = info.GetString("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") {
    return ctx.Invalid(absl::StrCat("attribute 'reduction' must be none, sum or mean, not '",
                                    reduction, "'"));
  }
  const bool has_ii = info.has_attr("ignore_index");
  const int64_t ii = info.GetInt("ignore_index", 0);
  const int rank = static_cast<int>(in_shape.size());
  if (rank < 2) return ctx.Invalid(absl::StrCat("input 0 must have rank >= 2, not ", rank));
  bool shape_ok = target.rank() == rank - 1 && target.dim(0) == in_shape[0];
  for (int i = 2; shape_ok && i < rank; ++i) shape_ok = target.dim(i - 1) == in_shape[i];
  if (!shape_ok) {
    return ctx.Invalid(absl::StrCat("target shape ", ShapeString(target.shape()),
                                    " does not match input shape ", ShapeString(in_shape)));
  }
  if (target.dtype() != v1::DT_INT32 && target.dtype() != v1::DT_INT64) {
    return ctx.Invalid(absl::StrCat("target must be int32 or int64, not ",
                                    DataTypeName(target.dtype())));
  }
  const int64_t N = in_shape[0], C = in_shape[1];
  const int64_t D = N == 0 ? 0 : target.num_elements() / N;
  if (weight != nullptr) {
    if (weight->rank() != 1 || weight->dim(0) != C || weight->dtype() != dtype) {
      return ctx.Invalid(absl::StrCat("weight must be ", DataTypeName(dtype), "[", C, "], not ",
                                      weight->DebugString()));
    }
  }
  absl::StatusOr<std::vector<int64_t>> t = target.ToInt64Vector();
  if (!t.ok()) return ctx.Invalid(absl::StrCat("target: ", t.status().message()));
  std::vector<double> w;
  if (weight != nullptr) {
    w.resize(C);
    for (int64_t c = 0; c < C; ++c) w[c] = weight->ElementAsDouble(c);
  }
  std::vector<double> loss(t->size());
  double wsum = 0, lsum = 0;
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t d = 0; d < D; ++d) {
      const int64_t k = n * D + d;
      const int64_t c = (*t)[k];
      if (has_ii && c == ii) {
        loss[k] = 0;
        continue;
      }
      if (c < 0 || c >= C) {
        return ctx.Invalid(
            absl::StrCat("target value ", c, " at ", k, " is out of range [0, ", C, ")"));
      }
      const double wc = weight != nullptr ? w[c] : 1.0;
      loss[k] = -wc * static_cast<double>(ToCompute(logp[(n * C + c) * D + d]));
      wsum += wc;
      lsum += loss[k];
    }
  }
  Shape out_shape;
  if (reduction == "none") out_shape = target.shape();
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(out_index, dtype, out_shape);
  if (!out.ok()) return out.status();
  return DispatchFloat(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T* y = (*out)->template data<T>();
    if (reduction == "none") {
      for (size_t k = 0; k < loss.size(); ++k) y[k] = Store<T>(loss[k]);
    } else if (reduction == "sum") {
      y[0] = Store<T>(lsum);
    } else {
      y[0] = Store<T>(lsum / wsum);
    }
    return absl::OkStatus();
  });
}

// NegativeLogLikelihoodLoss(input [N, C, d...], target [N, d...], weight [C]?).
absl::Status NllKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<const Tensor*> target = RequireInput(ctx, 1);
  if (!target.ok()) return target.status();
  absl::Status s = DispatchFloat((*x)->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    return NllLoss(ctx, (*x)->template data<T>(), (*x)->shape(), (*x)->dtype(), **target,
                   ctx.input(2), 0);
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}

// SoftmaxCrossEntropyLoss(scores [N, C, d...], labels [N, d...], weights [C]?) -> loss,
// log_prob? (the log-softmax of scores over C).
absl::Status SceKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  absl::StatusOr<const Tensor*> target = RequireInput(ctx, 1);
  if (!target.ok()) return target.status();
  const Tensor& x = **xs;
  if (x.rank() < 2) return ctx.Invalid(absl::StrCat("input 0 must have rank >= 2, not ", x.rank()));
  const AxisLayout l = LayoutAround(x.shape(), 1, 2);
  absl::Status s = DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
      absl::StatusOr<Tensor*> lp = ctx.AllocateOutput(1, x.dtype(), x.shape());
      if (!lp.ok()) return lp.status();
      T* p = (*lp)->template data<T>();
      SoftmaxOverLayout<SoftmaxMode::kLogSoftmax, T, T>(x.data<T>(), p, l, ctx);
      return NllLoss(ctx, static_cast<const T*>(p), x.shape(), x.dtype(), **target, ctx.input(2),
                     0);
    }
    std::vector<C> p(x.num_elements());
    SoftmaxOverLayout<SoftmaxMode::kLogSoftmax, T, C>(x.data<T>(), p.data(), l, ctx);
    return NllLoss(ctx, static_cast<const C*>(p.data()), x.shape(), x.dtype(), **target,
                   ctx.input(2), 0);
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}

}  // namespace

absl::Status RegisterSoftmaxKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Softmax", SoftmaxKernel<SoftmaxMode::kSoftmax>));
  s.Update(registry.Register("LogSoftmax", SoftmaxKernel<SoftmaxMode::kLogSoftmax>));
  s.Update(registry.Register("Hardmax", SoftmaxKernel<SoftmaxMode::kHardmax>));
  s.Update(registry.Register("NegativeLogLikelihoodLoss", NllKernel));
  s.Update(registry.Register("SoftmaxCrossEntropyLoss", SceKernel));
  return s;
}

}  // namespace graphopt::runtime
