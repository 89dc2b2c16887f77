// Gradients of the nn family's pools and normalisations (ops/nn.cc) and of the pools' backward
// ops (ops/nn_grad.cc).
//
// Second order: MaxPoolGrad and AveragePoolGrad are linear in dY (their gradients are a Gather
// at MaxPool's Indices and AveragePool); the normalisations' gradients are elementwise ops and
// reductions, differentiable wherever those are.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/gradient.h"
#include "ops/grad_nn_internal.h"
#include "ops/grad_table.h"
#include "ops/nn_grad_ops.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// --- Pools --------------------------------------------------------------------------------------

AttributeMap PoolAttrs(const GradEmitter& e) {
  return e.CopyAttrs({"auto_pad", "pads", "strides", "dilations", "kernel_shape", "ceil_mode"});
}

// MaxPool(X) -> Y, Indices: dX = MaxPoolGrad(dY, X). Indices are integers: no gradient.
absl::Status MaxPoolGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  return e.Give(0, e.Op(kMaxPoolGradOp, {dy, ctx.input(0)}, PoolAttrs(e), kNnGradDomain));
}

// AveragePool(X): dX = AveragePoolGrad(dY, Shape(X)).
absl::Status AveragePoolGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  AttributeMap attrs = PoolAttrs(e);
  for (auto& [k, v] : e.CopyAttrs({"count_include_pad"})) attrs[k] = v;
  return e.Give(0, e.Op(kAveragePoolGradOp, {dy, e.ShapeValue(ctx.input(0))}, std::move(attrs),
                        kNnGradDomain));
}

// LpPool(X) = (sum over the window of |x|^p)^(1/p), p 1 or 2:
//   dX = sign(x) S(dY)          (p = 1)
//   dX = x S(dY / Y)            (p = 2)
// where S is the window sum's adjoint: AveragePoolGrad with count_include_pad (every tap of a
// window counted) times the window's size.
absl::Status LpPoolGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  absl::StatusOr<int64_t> p = ctx.GetInt("p", 2);
  if (!p.ok()) return p.status();
  if (*p != 1 && *p != 2) return ctx.Error("LpPool is differentiated for p = 1 or 2, got ", *p);
  absl::StatusOr<std::vector<int64_t>> kernel = ctx.GetInts("kernel_shape", {});
  if (!kernel.ok()) return kernel.status();
  if (kernel->empty()) return ctx.Error("LpPool's gradient needs 'kernel_shape'");
  int64_t window = 1;
  for (int64_t k : *kernel) window *= k;
  const ValueId x = ctx.input(0);
  AttributeMap attrs = PoolAttrs(e);
  attrs["count_include_pad"] = IntAttr(1);
  const ValueId z = *p == 1 ? dy : e.Op("Div", {dy, ctx.output(0)});
  ValueId summed = e.Op(kAveragePoolGradOp, {z, e.ShapeValue(x)}, std::move(attrs), kNnGradDomain);
  summed = e.Op("Mul", {summed, e.Scalar(static_cast<double>(window), x)});
  const ValueId factor = *p == 1 ? e.Op("Sign", {x}) : x;
  return e.Give(0, e.Op("Mul", {factor, summed}));
}

// GlobalAveragePool: dX = Expand(dY, Shape(X)) / (spatial size).
absl::Status GlobalAveragePoolGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0);
  const ValueId spread = e.Op("Expand", {dy, e.ShapeValue(x)});
  const ValueId count = e.CountRatio(x, ctx.output(0), x);
  return e.Give(0, e.Op("Div", {spread, count}));
}

// GlobalMaxPool: dX = dY where x equals its plane's maximum, else 0 (every tied maximum gets
// dY: ties are a measure-zero set where the gradient is not defined).
absl::Status GlobalMaxPoolGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0);
  AttributeMap to;
  to["to"] = IntAttr(ctx.dtype(x));
  const ValueId mask = e.Op("Cast", {e.Op("Equal", {x, ctx.output(0)})}, std::move(to));
  return e.Give(0, e.Op("Mul", {mask, dy}));
}

// MaxPoolGrad(dY, X) is linear in dY (X only picks the windows' maxima, a piecewise constant
// choice: no gradient): with ddX the gradient of dX, d dY = ddX at MaxPool's Indices.
absl::Status MaxPoolGradGradient(GradientContext& ctx) {
  const ValueId ddx = ctx.output_grad(0);
  if (!ddx.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  const std::vector<ValueId> pooled = e.OpN("MaxPool", {ctx.input(1)}, 2, PoolAttrs(e));
  if (!e.ok()) return e.status();
  const ValueId flat = e.Op("Reshape", {ddx, e.Ints({-1})});
  return e.Give(0, e.Op("Gather", {flat, pooled[1]}));
}

// AveragePoolGrad(dY, X_shape) is AveragePool's adjoint: d dY = AveragePool(ddX).
absl::Status AveragePoolGradGradient(GradientContext& ctx) {
  const ValueId ddx = ctx.output_grad(0);
  if (!ddx.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  AttributeMap attrs = PoolAttrs(e);
  for (auto& [k, v] : e.CopyAttrs({"count_include_pad"})) attrs[k] = v;
  return e.Give(0, e.Op("AveragePool", {ddx}, std::move(attrs)));
}

// --- Normalisations -----------------------------------------------------------------------------

// x normalised over `axes`: xhat = (x - mean) * inv, inv = 1 / sqrt(var + eps) (keepdims).
struct Normalized {
  ValueId xhat, inv;
};
Normalized Normalize(GradEmitter& e, ValueId x, const std::vector<int64_t>& axes, float eps) {
  const ValueId xc = e.Op("Sub", {x, e.ReduceMean(x, axes, true)});
  const ValueId var = e.ReduceMean(e.Op("Mul", {xc, xc}), axes, true);
  const ValueId inv = e.Op("Reciprocal", {e.Op("Sqrt", {e.Op("Add", {var, e.Scalar(eps, x)})})});
  return {e.Op("Mul", {xc, inv}), inv};
}

// The gradient through a normalisation over `axes` of the normalised value's gradient g:
//   dx = inv * (g - mean(g) - xhat * mean(g * xhat)).
ValueId ThroughNormalize(GradEmitter& e, ValueId g, const Normalized& n,
                         const std::vector<int64_t>& axes) {
  const ValueId mg = e.ReduceMean(g, axes, true);
  const ValueId mgx = e.ReduceMean(e.Op("Mul", {g, n.xhat}), axes, true);
  const ValueId centered = e.Op("Sub", {e.Op("Sub", {g, mg}), e.Op("Mul", {n.xhat, mgx})});
  return e.Op("Mul", {n.inv, centered});
}

// [C] as [C, 1, ...] against an input of `rank` (channels at axis 1).
ValueId PerChannel(GradEmitter& e, ValueId v, int rank) {
  std::vector<int64_t> axes;
  for (int i = 1; i < rank - 1; ++i) axes.push_back(i);
  return axes.empty() ? v : e.Unsqueeze(v, axes);
}

std::vector<int64_t> AllButChannels(int rank) {
  std::vector<int64_t> axes = {0};
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return axes;
}

// BatchNormalization(X, scale, B, mean, var). Inference: y = scale (x - mean) inv + B with
// inv = 1 / sqrt(var + eps), linear in x:
//   dX = dY scale inv, dscale = sum(dY xhat), dB = sum(dY), dmean = -dB scale inv,
//   dvar = -dscale scale inv^2 / 2.
// training_mode (opset 14+): the batch's statistics replace mean and var (which then only feed
// the running statistics, non-differentiable outputs: no gradient); dX goes through them.
// Sums are over N and the spatial axes. Opset < 14 training outputs (saved_mean, saved_var)
// and the running statistics get no gradient.
absl::Status BatchNormGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0), scale = ctx.input(1);
  const int rank = e.Rank(x);
  if (rank < 2) return ctx.Error("BatchNormalization needs X of known rank >= 2");
  if (e.Rank(scale) != 1) {
    return ctx.Error("BatchNormalization is differentiated with per-channel (1-D) parameters");
  }
  absl::StatusOr<float> eps = ctx.GetFloat("epsilon", 1e-5f);
  if (!eps.ok()) return eps.status();
  absl::StatusOr<int64_t> mode = ctx.GetInt("training_mode", 0);
  if (!mode.ok()) return mode.status();
  const int64_t opset = ctx.opset_version();
  const bool training = *mode != 0 && (opset == 0 || opset >= 14);
  const std::vector<int64_t> axes = AllButChannels(rank);
  if (training) {
    const Normalized n = Normalize(e, x, axes, *eps);
    if (ctx.needs_input_grad(0)) {
      const ValueId g = e.Op("Mul", {dy, PerChannel(e, scale, rank)});
      if (absl::Status s = e.Give(0, ThroughNormalize(e, g, n, axes)); !s.ok()) return s;
    }
    if (ctx.needs_input_grad(1)) {
      const ValueId ds = e.ReduceSum(e.Op("Mul", {dy, n.xhat}), axes, false);
      if (absl::Status s = e.Give(1, ds); !s.ok()) return s;
    }
    if (ctx.needs_input_grad(2)) return e.Give(2, e.ReduceSum(dy, axes, false));
    return absl::OkStatus();
  }
  const ValueId mean = ctx.input(3), var = ctx.input(4);
  const ValueId inv =
      e.Op("Reciprocal", {e.Op("Sqrt", {e.Op("Add", {var, e.Scalar(*eps, var)})})});
  const ValueId scaled_inv = e.Op("Mul", {scale, inv});
  if (ctx.needs_input_grad(0)) {
    const ValueId dx = e.Op("Mul", {dy, PerChannel(e, scaled_inv, rank)});
    if (absl::Status s = e.Give(0, dx); !s.ok()) return s;
  }
  const bool want_dscale = ctx.needs_input_grad(1) || ctx.needs_input_grad(4);
  ValueId dscale;
  if (want_dscale) {
    const ValueId xhat = e.Op("Mul", {e.Op("Sub", {x, PerChannel(e, mean, rank)}),
                                      PerChannel(e, inv, rank)});
    dscale = e.ReduceSum(e.Op("Mul", {dy, xhat}), axes, false);
  }
  ValueId dbias;
  if (ctx.needs_input_grad(2) || ctx.needs_input_grad(3)) dbias = e.ReduceSum(dy, axes, false);
  if (ctx.needs_input_grad(1)) {
    if (absl::Status s = e.Give(1, dscale); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(2)) {
    if (absl::Status s = e.Give(2, dbias); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(3)) {
    if (absl::Status s = e.Give(3, e.Op("Neg", {e.Op("Mul", {dbias, scaled_inv})})); !s.ok()) {
      return s;
    }
  }
  if (ctx.needs_input_grad(4)) {
    const ValueId half = e.Op("Mul", {scaled_inv, e.Op("Mul", {inv, e.Scalar(-0.5, var)})});
    return e.Give(4, e.Op("Mul", {dscale, half}));
  }
  return absl::OkStatus();
}

// LayerNormalization(X, Scale, B) over the axes from 'axis' on: y = xhat Scale + B.
//   dX = ThroughNormalize(dY Scale), dScale = SumToShape(dY xhat), dB = SumToShape(dY).
// The optional outputs Mean and InvStdDev (= inv) add, per normalised element,
//   (dMean - dInvStdDev inv^2 xhat) / count.
absl::Status LayerNormGradient(GradientContext& ctx) {
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0);
  const int rank = e.Rank(x);
  if (rank < 1) return ctx.Error("LayerNormalization needs X of known rank");
  absl::StatusOr<int64_t> axis = ctx.GetInt("axis", -1);
  if (!axis.ok()) return axis.status();
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (a < 0 || a >= rank) return ctx.Error("attribute 'axis' ", *axis, " is out of range");
  absl::StatusOr<float> eps = ctx.GetFloat("epsilon", 1e-5f);
  if (!eps.ok()) return eps.status();
  std::vector<int64_t> axes;
  for (int64_t i = a; i < rank; ++i) axes.push_back(i);
  const ValueId dy = ctx.output_grad(0);
  const ValueId dmean = ctx.output_grad(1), dinv = ctx.output_grad(2);
  const Normalized n = Normalize(e, x, axes, *eps);
  if (ctx.needs_input_grad(0)) {
    ValueId dx;
    if (dy.valid()) {
      dx = ThroughNormalize(e, e.Op("Mul", {dy, ctx.input(1)}), n, axes);
    }
    if (dmean.valid() || dinv.valid()) {
      // The statistics have the stash type: in x's for the sum.
      AttributeMap to;
      to["to"] = IntAttr(ctx.dtype(x));
      auto as_x = [&](ValueId v) {
        return ctx.dtype(v) == ctx.dtype(x) ? v : e.Op("Cast", {v}, to);
      };
      ValueId extra;
      if (dmean.valid()) extra = as_x(dmean);
      if (dinv.valid()) {
        const ValueId t = e.Op("Mul", {e.Op("Mul", {as_x(dinv), e.Op("Mul", {n.inv, n.inv})}),
                                       n.xhat});
        extra = extra.valid() ? e.Op("Sub", {extra, t}) : e.Op("Neg", {t});
      }
      // inv keeps the statistics' shape: x's with the normalised dims 1.
      extra = e.Op("Div", {extra, e.CountRatio(x, n.inv, x)});
      dx = dx.valid() ? e.Op("Add", {dx, extra}) : extra;
    }
    if (dx.valid()) {
      if (absl::Status s = e.Give(0, dx); !s.ok()) return s;
    }
    if (!e.ok()) return e.status();
  }
  if (!dy.valid()) return e.status();
  if (ctx.needs_input_grad(1)) {
    const ValueId ds = e.Take(SumToShape(ctx, e.Op("Mul", {dy, n.xhat}), ctx.input(1)));
    if (absl::Status s = e.Give(1, ds); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(2)) return e.Give(2, e.Take(SumToShape(ctx, dy, ctx.input(2))));
  return e.status();
}

// InstanceNormalization(x, scale, B): each [n, c] plane normalised over the spatial axes;
//   dX = ThroughNormalize(dY scale), dscale = sum(dY xhat), dB = sum(dY) over N and space.
absl::Status InstanceNormGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0);
  const int rank = e.Rank(x);
  if (rank < 3) return ctx.Error("InstanceNormalization needs X of known rank >= 3");
  absl::StatusOr<float> eps = ctx.GetFloat("epsilon", 1e-5f);
  if (!eps.ok()) return eps.status();
  std::vector<int64_t> spatial;
  for (int i = 2; i < rank; ++i) spatial.push_back(i);
  const Normalized n = Normalize(e, x, spatial, *eps);
  if (ctx.needs_input_grad(0)) {
    const ValueId g = e.Op("Mul", {dy, PerChannel(e, ctx.input(1), rank)});
    if (absl::Status s = e.Give(0, ThroughNormalize(e, g, n, spatial)); !s.ok()) return s;
  }
  const std::vector<int64_t> axes = AllButChannels(rank);
  if (ctx.needs_input_grad(1)) {
    const ValueId ds = e.ReduceSum(e.Op("Mul", {dy, n.xhat}), axes, false);
    if (absl::Status s = e.Give(1, ds); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(2)) return e.Give(2, e.ReduceSum(dy, axes, false));
  return absl::OkStatus();
}

// LRN(X) = x d^-beta, d = bias + alpha / size * S, S[c] = sum of x^2 over the channels
// [c - lo, c + hi] (lo = (size - 1) / 2, hi = size - 1 - lo):
//   dX = dY d^-beta - 2 alpha beta / size * x * T,  T[c'] = sum of dY y / d over [c' - hi, c' + lo]
// (the channels whose window holds c'). A window sum over channels is an AveragePool of
// [N, 1, C, rest] with a [size, 1] kernel, the pads at either end, every tap counted, times size.
absl::Status LrnGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0), y = ctx.output(0);
  absl::StatusOr<int64_t> size = ctx.GetInt("size", 0);
  if (!size.ok()) return size.status();
  if (*size <= 0) return ctx.Error("attribute 'size' must be positive");
  absl::StatusOr<float> alpha = ctx.GetFloat("alpha", 1e-4f);
  if (!alpha.ok()) return alpha.status();
  absl::StatusOr<float> beta = ctx.GetFloat("beta", 0.75f);
  if (!beta.ok()) return beta.status();
  absl::StatusOr<float> bias = ctx.GetFloat("bias", 1.0f);
  if (!bias.ok()) return bias.status();
  const std::optional<Dims>& shape = ctx.shape(x);
  if (!shape || shape->size() < 2 || !(*shape)[1].is_known()) {
    return ctx.Error("LRN is differentiated with a known channel count");
  }
  const int64_t channels = (*shape)[1].size();
  const int64_t lo = (*size - 1) / 2, hi = *size - 1 - lo;
  const ValueId x_shape = e.ShapeValue(x);
  const ValueId planes = e.Ints({0, 1, channels, -1});
  auto window_sum = [&](ValueId v, int64_t begin, int64_t end) {
    AttributeMap attrs;
    attrs["kernel_shape"] = IntsAttr({*size, 1});
    attrs["pads"] = IntsAttr({begin, 0, end, 0});
    attrs["count_include_pad"] = IntAttr(1);
    const ValueId mean = e.Op("AveragePool", {e.Op("Reshape", {v, planes})}, std::move(attrs));
    return e.Op("Reshape", {e.Op("Mul", {mean, e.Scalar(static_cast<double>(*size), x)}), x_shape});
  };
  const ValueId sum_sq = window_sum(e.Op("Mul", {x, x}), lo, hi);
  const ValueId d = e.Op("Add", {e.Scalar(*bias, x),
                                 e.Op("Mul", {sum_sq, e.Scalar(*alpha / *size, x)})});
  const ValueId direct = e.Op("Mul", {dy, e.Op("Pow", {d, e.Scalar(-*beta, x)})});
  const ValueId through = window_sum(e.Op("Div", {e.Op("Mul", {dy, y}), d}), hi, lo);
  const ValueId scaled = e.Op("Mul", {e.Op("Mul", {x, through}),
                                      e.Scalar(2.0 * *alpha * *beta / *size, x)});
  return e.Give(0, e.Op("Sub", {direct, scaled}));
}

std::string GraphoptKey(absl::string_view op) { return absl::StrCat(kNnGradDomain, "::", op); }

}  // namespace

void AddNnPoolNormGradients(GradientTable* table) {
  (*table)["MaxPool"] = {MaxPoolGradient, {}};
  (*table)["AveragePool"] = {AveragePoolGradient, {}};
  (*table)["LpPool"] = {LpPoolGradient, {}};
  (*table)["GlobalAveragePool"] = {GlobalAveragePoolGradient, {}};
  (*table)["GlobalMaxPool"] = {GlobalMaxPoolGradient, {}};
  (*table)["BatchNormalization"] = {BatchNormGradient, {}};
  (*table)["LayerNormalization"] = {LayerNormGradient, {}};
  (*table)["InstanceNormalization"] = {InstanceNormGradient, {}};
  (*table)["LRN"] = {LrnGradient, {}};
  (*table)[GraphoptKey(kMaxPoolGradOp)] = {MaxPoolGradGradient, {1}};
  (*table)[GraphoptKey(kAveragePoolGradOp)] = {AveragePoolGradGradient, {1}};
}

}  // namespace builtin_internal
}  // namespace graphopt
