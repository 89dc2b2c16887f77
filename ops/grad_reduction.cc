// Gradients of the reduction ops (ops/reduction.cc): the Reduce* ops, Softmax, LogSoftmax,
// Hardmax, Einsum and graphopt::SumToShape. Each is written in differentiable ops (Mul, Sub,
// ReduceSum, Expand, Unsqueeze, Softmax, Einsum, ...), so that it can be differentiated again.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "graph/gradient.h"
#include "ops/grad_table.h"
#include "ops/grad_util.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Expand(v, Shape(like)), with a constant shape when `like`'s dims are all known.
absl::StatusOr<ValueId> ExpandLike(GradientContext& ctx, ValueId v, ValueId like) {
  if (std::optional<std::vector<int64_t>> dims = KnownDims(ctx, like)) {
    if (ctx.shape(v) && ctx.shape(v) == ctx.shape(like)) return v;
    return ctx.Emit1("Expand", {v, Int64Constant(ctx, *dims)});
  }
  GRAD_ASSIGN_OR_RETURN(ValueId shape, ShapeOf(ctx, like));
  return ctx.Emit1("Expand", {v, shape});
}

// --- Reduce* ----------------------------------------------------------------------------------

enum class Reduce { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kSumSquare, kLogSum, kLogSumExp };

// The axes a Reduce* node reduces (normalized, sorted; empty when it reduces none, which
// noop_with_empty_axes allows) and whether they are kept as 1. `runtime_axes` is the axes input
// when it is not a constant (`axes` is then empty).
struct ReduceAxesInfo {
  std::vector<int64_t> axes;
  bool keepdims = true;
  ValueId runtime_axes;
};

absl::StatusOr<ReduceAxesInfo> ReducedAxes(const GradientContext& ctx) {
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, ctx.input(0), "input 0"));
  GRAD_ASSIGN_OR_RETURN(const GradInts axes, IntsAttrOrInput(ctx, "axes", 1));
  GRAD_ASSIGN_OR_RETURN(const int64_t keepdims, ctx.GetInt("keepdims", 1));
  GRAD_ASSIGN_OR_RETURN(const int64_t noop, ctx.GetInt("noop_with_empty_axes", 0));
  ReduceAxesInfo info;
  info.keepdims = keepdims != 0;
  if (axes.given && !axes.values) {
    info.runtime_axes = ctx.input(1);
    return info;
  }
  std::vector<int64_t> list = axes.values ? *axes.values : std::vector<int64_t>();
  if (list.empty()) {
    if (noop != 0) return info;
    for (int i = 0; i < rank; ++i) list.push_back(i);
  }
  GRAD_ASSIGN_OR_RETURN(info.axes, NormalizedAxes(ctx, std::move(list), rank));
  return info;
}

// `v` (the output or its gradient) in the keepdims form, which broadcasts against the input.
// With axes known only at run time, that form is Shape(x) with 1 at each axis (a scatter of
// ones into the shape). A run-time axes list that turns out empty without
// noop_with_empty_axes (all axes) makes that Reshape fail at run time, not compute wrongly.
absl::StatusOr<ValueId> Unreduce(GradientContext& ctx, ValueId v, const ReduceAxesInfo& info) {
  if (info.keepdims) return v;
  if (info.runtime_axes.valid()) {
    GRAD_ASSIGN_OR_RETURN(ValueId shape, ShapeOf(ctx, ctx.input(0)));
    GRAD_ASSIGN_OR_RETURN(ValueId axes_shape, ShapeOf(ctx, info.runtime_axes));
    GRAD_ASSIGN_OR_RETURN(
        ValueId ones, ctx.Emit1("Expand", {ScalarConstant(ctx, 1, v1::DT_INT64), axes_shape}));
    GRAD_ASSIGN_OR_RETURN(ValueId kept,
                          ctx.Emit1("ScatterElements", {shape, info.runtime_axes, ones}));
    return ctx.Emit1("Reshape", {v, kept});
  }
  if (info.axes.empty()) return v;
  return UnsqueezeAxes(ctx, v, info.axes);
}

// ReduceSum(x) over the node's axes, kept as 1.
absl::StatusOr<ValueId> SumOverReduced(GradientContext& ctx, ValueId x,
                                       const ReduceAxesInfo& info) {
  if (!info.runtime_axes.valid()) return ReduceSumAxes(ctx, x, info.axes, true);
  AttributeMap attrs;
  attrs["keepdims"] = IntAttr(1);
  GRAD_ASSIGN_OR_RETURN(const int64_t noop, ctx.GetInt("noop_with_empty_axes", 0));
  attrs["noop_with_empty_axes"] = IntAttr(noop);
  return ctx.Emit1("ReduceSum", {x, info.runtime_axes}, std::move(attrs));
}

// 1 / (the number of elements each output element reduces), as a scalar of x's type. A
// product, not a quotient, so that differentiating the gradient again needs only Mul's.
absl::StatusOr<ValueId> InverseCount(GradientContext& ctx, ValueId x, ValueId y,
                                     const ReduceAxesInfo& info) {
  const v1::DataType dtype = ctx.dtype(x);
  std::optional<std::vector<int64_t>> dims = KnownDims(ctx, x);
  if (dims && !info.runtime_axes.valid()) {
    double count = 1;
    for (int64_t a : info.axes) count *= static_cast<double>((*dims)[a]);
    return ScalarConstant(ctx, 1.0 / count, dtype);
  }
  AttributeMap to;
  to["to"] = IntAttr(dtype);
  GRAD_ASSIGN_OR_RETURN(ValueId nx, ctx.Emit1("Size", {x}));
  GRAD_ASSIGN_OR_RETURN(ValueId ny, ctx.Emit1("Size", {y}));
  GRAD_ASSIGN_OR_RETURN(ValueId fx, ctx.Emit1("Cast", {nx}, to));
  GRAD_ASSIGN_OR_RETURN(ValueId fy, ctx.Emit1("Cast", {ny}, to));
  return ctx.Emit1("Div", {fy, fx});
}

absl::Status ReduceGradient(GradientContext& ctx, Reduce kind) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  const ValueId x = ctx.input(0);
  const ValueId y = ctx.output(0);
  GRAD_ASSIGN_OR_RETURN(const ReduceAxesInfo info, ReducedAxes(ctx));
  const bool linear_identity = kind == Reduce::kSum || kind == Reduce::kMean ||
                               kind == Reduce::kMax || kind == Reduce::kMin ||
                               kind == Reduce::kProd;
  if (info.axes.empty() && !info.runtime_axes.valid() && linear_identity) {
    return ctx.AddInputGrad(0, dy);  // y = x
  }
  GRAD_ASSIGN_OR_RETURN(ValueId dyb, Unreduce(ctx, dy, info));
  ValueId dx;
  switch (kind) {
    case Reduce::kSum: {
      GRAD_ASSIGN_OR_RETURN(dx, ExpandLike(ctx, dyb, x));
      break;
    }
    case Reduce::kMean: {
      GRAD_ASSIGN_OR_RETURN(ValueId scale, InverseCount(ctx, x, y, info));
      GRAD_ASSIGN_OR_RETURN(ValueId scaled, ctx.Emit1("Mul", {dyb, scale}));
      GRAD_ASSIGN_OR_RETURN(dx, ExpandLike(ctx, scaled, x));
      break;
    }
    case Reduce::kMax:
    case Reduce::kMin: {
      // The gradient goes to the extreme elements, shared equally among ties (the mask and
      // its count depend on x only through a comparison: piecewise constant).
      GRAD_ASSIGN_OR_RETURN(ValueId yb, Unreduce(ctx, y, info));
      GRAD_ASSIGN_OR_RETURN(ValueId mask, ctx.Emit1("Equal", {x, yb}));
      AttributeMap to;
      to["to"] = IntAttr(ctx.dtype(x));
      GRAD_ASSIGN_OR_RETURN(ValueId maskf, ctx.Emit1("Cast", {mask}, to));
      GRAD_ASSIGN_OR_RETURN(ValueId ties, SumOverReduced(ctx, maskf, info));
      GRAD_ASSIGN_OR_RETURN(ValueId share, ctx.Emit1("Div", {maskf, ties}));
      GRAD_ASSIGN_OR_RETURN(dx, ctx.Emit1("Mul", {dyb, share}));
      break;
    }
    case Reduce::kProd: {
      // d prod / d x_i = prod / x_i: undefined (inf or NaN) where x_i is 0.
      GRAD_ASSIGN_OR_RETURN(ValueId yb, Unreduce(ctx, y, info));
      GRAD_ASSIGN_OR_RETURN(ValueId ratio, ctx.Emit1("Div", {yb, x}));
      GRAD_ASSIGN_OR_RETURN(dx, ctx.Emit1("Mul", {dyb, ratio}));
      break;
    }
    case Reduce::kL1: {
      GRAD_ASSIGN_OR_RETURN(ValueId sign, ctx.Emit1("Sign", {x}));
      GRAD_ASSIGN_OR_RETURN(dx, ctx.Emit1("Mul", {dyb, sign}));
      break;
    }
    case Reduce::kL2: {
      // x / ||x||: undefined where the norm is 0.
      GRAD_ASSIGN_OR_RETURN(ValueId yb, Unreduce(ctx, y, info));
      GRAD_ASSIGN_OR_RETURN(ValueId unit, ctx.Emit1("Div", {x, yb}));
      GRAD_ASSIGN_OR_RETURN(dx, ctx.Emit1("Mul", {dyb, unit}));
      break;
    }
    case Reduce::kSumSquare: {
      GRAD_ASSIGN_OR_RETURN(ValueId twice, ctx.Emit1("Mul", {x, ScalarConstant(ctx, 2.0, ctx.dtype(x))}));
      GRAD_ASSIGN_OR_RETURN(dx, ctx.Emit1("Mul", {dyb, twice}));
      break;
    }
    case Reduce::kLogSum: {
      // d log(sum x) / d x_i = 1 / sum x = 1 / exp(y).
      GRAD_ASSIGN_OR_RETURN(ValueId yb, Unreduce(ctx, y, info));
      GRAD_ASSIGN_OR_RETURN(ValueId sum, ctx.Emit1("Exp", {yb}));
      GRAD_ASSIGN_OR_RETURN(ValueId g, ctx.Emit1("Div", {dyb, sum}));
      GRAD_ASSIGN_OR_RETURN(dx, ExpandLike(ctx, g, x));
      break;
    }
    case Reduce::kLogSumExp: {
      // d lse / d x_i = exp(x_i - lse): the softmax over the reduced axes.
      GRAD_ASSIGN_OR_RETURN(ValueId yb, Unreduce(ctx, y, info));
      GRAD_ASSIGN_OR_RETURN(ValueId shifted, ctx.Emit1("Sub", {x, yb}));
      GRAD_ASSIGN_OR_RETURN(ValueId p, ctx.Emit1("Exp", {shifted}));
      GRAD_ASSIGN_OR_RETURN(dx, ctx.Emit1("Mul", {dyb, p}));
      break;
    }
  }
  return ctx.AddInputGrad(0, dx);
}

// --- LpNormalization, MeanVarianceNormalization -----------------------------------------------

// `op`(x) over `axes` kept as 1, in the graph's opset's form (axes an input from opset 18, 13
// for ReduceSum).
absl::StatusOr<ValueId> ReduceKeep(GradientContext& ctx, absl::string_view op, ValueId x,
                                   const std::vector<int64_t>& axes) {
  AttributeMap attrs;
  attrs["keepdims"] = IntAttr(1);
  return EmitWithInts(ctx, op, {x}, "axes", axes, op == "ReduceSum" ? 13 : 18, std::move(attrs));
}

// y = x / n, n = ||x||_p along 'axis': dx = (dy - dn/dx * sum(dy * y)) / n, where dn/dx is y
// for p = 2 and sign(x) for p = 1.
absl::Status LpNormalizationGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  const ValueId x = ctx.input(0);
  const ValueId y = ctx.output(0);
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, x, "input 0"));
  GRAD_ASSIGN_OR_RETURN(const int64_t axis, ctx.GetInt("axis", -1));
  GRAD_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, NormalizedAxes(ctx, {axis}, rank));
  GRAD_ASSIGN_OR_RETURN(const int64_t p, ctx.GetInt("p", 2));
  if (p != 1 && p != 2) return ctx.Error("'p' must be 1 or 2, got ", p);
  GRAD_ASSIGN_OR_RETURN(ValueId n, ReduceKeep(ctx, p == 1 ? "ReduceL1" : "ReduceL2", x, axes));
  GRAD_ASSIGN_OR_RETURN(ValueId dyy, ctx.Emit1("Mul", {dy, y}));
  GRAD_ASSIGN_OR_RETURN(ValueId s, ReduceSumAxes(ctx, dyy, axes, true));
  ValueId dn = y;
  if (p == 1) {
    GRAD_ASSIGN_OR_RETURN(dn, ctx.Emit1("Sign", {x}));
  }
  GRAD_ASSIGN_OR_RETURN(ValueId along, ctx.Emit1("Mul", {dn, s}));
  GRAD_ASSIGN_OR_RETURN(ValueId num, ctx.Emit1("Sub", {dy, along}));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Div", {num, n}));
  return ctx.AddInputGrad(0, dx);
}

// y = (x - mean) / (std + 1e-9) over 'axes': dx = (dy - mean(dy) - y * mean(dy * y)) / (std +
// 1e-9), the exact gradient up to a relative 1e-9 / std.
absl::Status MeanVarianceNormalizationGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  const ValueId x = ctx.input(0);
  const ValueId y = ctx.output(0);
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, x, "input 0"));
  GRAD_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx.GetInts("axes", {0, 2, 3}));
  GRAD_ASSIGN_OR_RETURN(axes, NormalizedAxes(ctx, std::move(axes), rank));
  const v1::DataType dtype = ctx.dtype(x);
  GRAD_ASSIGN_OR_RETURN(ValueId mean, ReduceKeep(ctx, "ReduceMean", x, axes));
  GRAD_ASSIGN_OR_RETURN(ValueId centered, ctx.Emit1("Sub", {x, mean}));
  GRAD_ASSIGN_OR_RETURN(ValueId sq, ctx.Emit1("Mul", {centered, centered}));
  GRAD_ASSIGN_OR_RETURN(ValueId var, ReduceKeep(ctx, "ReduceMean", sq, axes));
  GRAD_ASSIGN_OR_RETURN(ValueId sd, ctx.Emit1("Sqrt", {var}));
  GRAD_ASSIGN_OR_RETURN(ValueId scale, ctx.Emit1("Add", {sd, ScalarConstant(ctx, 1e-9, dtype)}));
  GRAD_ASSIGN_OR_RETURN(ValueId mean_dy, ReduceKeep(ctx, "ReduceMean", dy, axes));
  GRAD_ASSIGN_OR_RETURN(ValueId dyy, ctx.Emit1("Mul", {dy, y}));
  GRAD_ASSIGN_OR_RETURN(ValueId mean_dyy, ReduceKeep(ctx, "ReduceMean", dyy, axes));
  GRAD_ASSIGN_OR_RETURN(ValueId a, ctx.Emit1("Sub", {dy, mean_dy}));
  GRAD_ASSIGN_OR_RETURN(ValueId b, ctx.Emit1("Mul", {y, mean_dyy}));
  GRAD_ASSIGN_OR_RETURN(ValueId num, ctx.Emit1("Sub", {a, b}));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Div", {num, scale}));
  return ctx.AddInputGrad(0, dx);
}

// --- Softmax, LogSoftmax ----------------------------------------------------------------------

// The axes Softmax normalizes over: 'axis' from opset 13; before, the input is coerced to 2-D
// at 'axis' (default 1 there), so every axis from 'axis' on.
absl::StatusOr<std::vector<int64_t>> SoftmaxAxes(const GradientContext& ctx) {
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, ctx.input(0), "input 0"));
  if (!OpsetBefore(ctx, 13)) {
    GRAD_ASSIGN_OR_RETURN(const int64_t axis, ctx.GetInt("axis", -1));
    return NormalizedAxes(ctx, {axis}, rank);
  }
  int64_t axis = 1;
  if (ctx.node().attributes.contains("axis")) {
    GRAD_ASSIGN_OR_RETURN(axis, ctx.GetInt("axis", 1));
  }
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return ctx.Error("'axis' is out of range for rank ", rank);
  std::vector<int64_t> axes;
  for (int64_t a = axis; a < rank; ++a) axes.push_back(a);
  return axes;
}

// y = softmax(x): dx = y * (dy - sum(dy * y)) over the normalized axes.
absl::Status SoftmaxGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  const ValueId y = ctx.output(0);
  GRAD_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, SoftmaxAxes(ctx));
  if (axes.empty()) return absl::OkStatus();  // softmax over one element: constant 1
  GRAD_ASSIGN_OR_RETURN(ValueId dyy, ctx.Emit1("Mul", {dy, y}));
  GRAD_ASSIGN_OR_RETURN(ValueId s, ReduceSumAxes(ctx, dyy, axes, true));
  GRAD_ASSIGN_OR_RETURN(ValueId centered, ctx.Emit1("Sub", {dy, s}));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Mul", {y, centered}));
  return ctx.AddInputGrad(0, dx);
}

// y = log_softmax(x): dx = dy - softmax(x) * sum(dy). softmax(x) is recomputed with Softmax
// (same 'axis' semantics) rather than Exp(y), so that the gradient's own gradient needs no op
// outside this family.
absl::Status LogSoftmaxGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const std::vector<int64_t> axes, SoftmaxAxes(ctx));
  if (axes.empty()) return absl::OkStatus();  // log softmax over one element: x - x = 0
  AttributeMap attrs;
  if (auto it = ctx.node().attributes.find("axis"); it != ctx.node().attributes.end()) {
    attrs["axis"] = it->second;
  }
  GRAD_ASSIGN_OR_RETURN(ValueId p, ctx.Emit1("Softmax", {ctx.input(0)}, attrs));
  GRAD_ASSIGN_OR_RETURN(ValueId s, ReduceSumAxes(ctx, dy, axes, true));
  GRAD_ASSIGN_OR_RETURN(ValueId ps, ctx.Emit1("Mul", {p, s}));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Sub", {dy, ps}));
  return ctx.AddInputGrad(0, dx);
}

// Hardmax's output is piecewise constant in x: no gradient flows (zero, never materialized).
absl::Status ZeroGradient(GradientContext&) { return absl::OkStatus(); }

// --- NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss -----------------------------------------

absl::StatusOr<ValueId> CastTo(GradientContext& ctx, ValueId v, v1::DataType to) {
  if (ctx.dtype(v) == to) return v;
  AttributeMap attrs;
  attrs["to"] = IntAttr(to);
  return ctx.Emit1("Cast", {v}, std::move(attrs));
}

// The gradient, with respect to the log-probabilities `like` ([N, C, d...]), of the NLL loss of
// this node (its 'reduction', 'ignore_index', target input 1 and optional weight input 2) whose
// output gradient is dy: -coef[n, d...] at class target[n, d...], 0 elsewhere, where coef is dy
// times the sample's weight (0 for an ignored sample), divided by the total weight for 'mean'.
// It does not depend on the log-probabilities, only on dy (linear).
absl::StatusOr<ValueId> NllGradient(GradientContext& ctx, ValueId like, ValueId dy) {
  const v1::DataType dtype = ctx.dtype(like);
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, like, "input 0"));
  if (rank < 2) return ctx.Error("input 0 must have rank >= 2");
  GRAD_ASSIGN_OR_RETURN(const std::string reduction, ctx.GetString("reduction", "mean"));
  GRAD_ASSIGN_OR_RETURN(ValueId target, CastTo(ctx, ctx.input(1), v1::DT_INT64));
  // Per-sample factor: the class weight and the ignore mask (invalid: 1 everywhere).
  ValueId factor;
  if (ctx.attr("ignore_index") != nullptr) {
    GRAD_ASSIGN_OR_RETURN(const int64_t ignore, ctx.GetInt("ignore_index", 0));
    const ValueId ignore_value = ScalarConstant(ctx, static_cast<double>(ignore), v1::DT_INT64);
    GRAD_ASSIGN_OR_RETURN(ValueId ignored, ctx.Emit1("Equal", {target, ignore_value}));
    // An ignored sample's target may be out of range: class 0 stands in for it (weight 0).
    GRAD_ASSIGN_OR_RETURN(target, ctx.Emit1("Where", {ignored, ScalarConstant(ctx, 0, v1::DT_INT64),
                                                      target}));
    GRAD_ASSIGN_OR_RETURN(factor, ctx.Emit1("Where", {ignored, ScalarConstant(ctx, 0, dtype),
                                                      ScalarConstant(ctx, 1, dtype)}));
  }
  if (ctx.has_input(2)) {
    GRAD_ASSIGN_OR_RETURN(ValueId w, ctx.Emit1("Gather", {ctx.input(2), target}));
    if (factor.valid()) {
      GRAD_ASSIGN_OR_RETURN(factor, ctx.Emit1("Mul", {factor, w}));
    } else {
      factor = w;
    }
  }
  ValueId coef = dy;
  if (reduction == "mean") {
    ValueId total;
    if (factor.valid()) {
      AttributeMap attrs;
      attrs["keepdims"] = IntAttr(0);
      GRAD_ASSIGN_OR_RETURN(ValueId f, ExpandLike(ctx, factor, target));
      GRAD_ASSIGN_OR_RETURN(total, ctx.Emit1("ReduceSum", {f}, std::move(attrs)));
    } else {
      GRAD_ASSIGN_OR_RETURN(ValueId n, ctx.Emit1("Size", {target}));
      GRAD_ASSIGN_OR_RETURN(total, CastTo(ctx, n, dtype));
    }
    GRAD_ASSIGN_OR_RETURN(coef, ctx.Emit1("Div", {coef, total}));
  } else if (reduction != "sum" && reduction != "none") {
    return ctx.Error("'reduction' must be none, sum or mean, got '", reduction, "'");
  }
  if (factor.valid()) {
    GRAD_ASSIGN_OR_RETURN(coef, ctx.Emit1("Mul", {coef, factor}));
  }
  GRAD_ASSIGN_OR_RETURN(coef, ctx.Emit1("Mul", {coef, ScalarConstant(ctx, -1.0, dtype)}));
  if (reduction == "none" || factor.valid()) {
    // Per sample [N, d...]: broadcast against the classes at axis 1.
    GRAD_ASSIGN_OR_RETURN(coef, UnsqueezeAxes(ctx, coef, {1}));
  }
  // One-hot of the targets: Unsqueeze(target, 1) == Range(C) shaped [1, C, 1, ...].
  GRAD_ASSIGN_OR_RETURN(ValueId shape, ShapeOf(ctx, like));
  GRAD_ASSIGN_OR_RETURN(ValueId classes,
                        ctx.Emit1("Gather", {shape, ScalarConstant(ctx, 1, v1::DT_INT64)}));
  GRAD_ASSIGN_OR_RETURN(ValueId range,
                        ctx.Emit1("Range", {ScalarConstant(ctx, 0, v1::DT_INT64), classes,
                                            ScalarConstant(ctx, 1, v1::DT_INT64)}));
  std::vector<int64_t> view(rank, 1);
  view[1] = -1;
  GRAD_ASSIGN_OR_RETURN(ValueId range_view, ctx.Emit1("Reshape", {range, Int64Constant(ctx, view)}));
  GRAD_ASSIGN_OR_RETURN(ValueId target_view, UnsqueezeAxes(ctx, target, {1}));
  GRAD_ASSIGN_OR_RETURN(ValueId hit, ctx.Emit1("Equal", {target_view, range_view}));
  GRAD_ASSIGN_OR_RETURN(ValueId onehot, CastTo(ctx, hit, dtype));
  GRAD_ASSIGN_OR_RETURN(ValueId g, ctx.Emit1("Mul", {onehot, coef}));
  return ExpandLike(ctx, g, like);
}

absl::Status NllLossGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(ValueId dx, NllGradient(ctx, ctx.input(0), dy));
  return ctx.AddInputGrad(0, dx);
}

// SoftmaxCrossEntropyLoss = NLL(LogSoftmax(scores) along axis 1): the log-probabilities'
// gradient g (from the loss, plus log_prob's own), then d scores = g - softmax * sum(g, axis 1).
absl::Status SoftmaxCrossEntropyGradient(GradientContext& ctx) {
  if (!ctx.needs_input_grad(0)) return absl::OkStatus();
  const ValueId scores = ctx.input(0);
  ValueId g;
  if (ctx.output_grad(0).valid()) {
    GRAD_ASSIGN_OR_RETURN(g, NllGradient(ctx, scores, ctx.output_grad(0)));
  }
  if (ctx.output_grad(1).valid()) {
    if (g.valid()) {
      GRAD_ASSIGN_OR_RETURN(g, ctx.Emit1("Add", {g, ctx.output_grad(1)}));
    } else {
      g = ctx.output_grad(1);
    }
  }
  if (!g.valid()) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, scores, "input 0"));
  ValueId p;
  if (!OpsetBefore(ctx, 13) || rank == 2) {
    AttributeMap attrs;
    attrs["axis"] = IntAttr(1);
    GRAD_ASSIGN_OR_RETURN(p, ctx.Emit1("Softmax", {scores}, std::move(attrs)));
  } else {
    // Softmax coerces to 2-D before opset 13: exp(x - logsumexp(x)) along axis 1 instead.
    AttributeMap attrs;
    attrs["axes"] = IntsAttr({1});
    attrs["keepdims"] = IntAttr(1);
    GRAD_ASSIGN_OR_RETURN(ValueId lse, ctx.Emit1("ReduceLogSumExp", {scores}, std::move(attrs)));
    GRAD_ASSIGN_OR_RETURN(ValueId shifted, ctx.Emit1("Sub", {scores, lse}));
    GRAD_ASSIGN_OR_RETURN(p, ctx.Emit1("Exp", {shifted}));
  }
  GRAD_ASSIGN_OR_RETURN(ValueId s, ReduceSumAxes(ctx, g, {1}, true));
  GRAD_ASSIGN_OR_RETURN(ValueId ps, ctx.Emit1("Mul", {p, s}));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Sub", {g, ps}));
  return ctx.AddInputGrad(0, dx);
}

// --- Einsum -------------------------------------------------------------------------------------

// An einsum term with "..." written as the one character '.'.
absl::StatusOr<std::string> EinsumTermOf(const GradientContext& ctx, absl::string_view t) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.substr(i, 3) == "...") {
      out.push_back('.');
      i += 2;
    } else {
      out.push_back(t[i]);
    }
  }
  return out;
}

std::string EinsumTermText(const std::string& term) {
  std::string out;
  for (char c : term) {
    if (c == '.') {
      out += "...";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// Each operand's gradient is an Einsum of the output gradient with the other operands, written
// into the operand's term: "out,others->term". Labels only the operand has were summed in the
// forward direction: the result is broadcast back over them (Unsqueeze, Expand). Dims that
// broadcast in the forward direction are summed back (SumToShape). Equations with a label
// repeated inside one term (diagonals, traces) are refused, naming the equation.
absl::Status EinsumGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const std::string raw, ctx.GetString("equation", ""));
  std::string eq;
  for (char c : raw) {
    if (c != ' ') eq.push_back(c);
  }
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  for (absl::string_view t : absl::StrSplit(eq.substr(0, arrow), ',')) {
    GRAD_ASSIGN_OR_RETURN(std::string term, EinsumTermOf(ctx, t));
    terms.push_back(std::move(term));
  }
  const int n = ctx.num_inputs();
  if (static_cast<int>(terms.size()) != n) {
    return ctx.Error("equation '", raw, "' has ", terms.size(), " operands for ", n, " inputs");
  }
  std::string out;
  bool any_ellipsis = false;
  for (const std::string& t : terms) any_ellipsis |= t.find('.') != std::string::npos;
  if (arrow != std::string::npos) {
    GRAD_ASSIGN_OR_RETURN(out, EinsumTermOf(ctx, eq.substr(arrow + 2)));
  } else {
    std::vector<int> count(128, 0);
    for (const std::string& t : terms) {
      for (char c : t) {
        if (c != '.') ++count[static_cast<unsigned char>(c)];
      }
    }
    if (any_ellipsis) out.push_back('.');
    for (int c = 0; c < 128; ++c) {
      if (count[c] == 1) out.push_back(static_cast<char>(c));
    }
  }
  for (const std::string& t : terms) {
    std::string sorted = t;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      return ctx.Error("equation '", raw,
                       "': a label repeated within one term (a diagonal or trace) is not "
                       "differentiated");
    }
  }
  for (int k = 0; k < n; ++k) {
    if (!ctx.needs_input_grad(k)) continue;
    const std::string& term = terms[k];
    std::string available = out;
    std::vector<ValueId> operands = {dy};
    std::string lhs = EinsumTermText(out);
    for (int j = 0; j < n; ++j) {
      if (j == k) continue;
      available += terms[j];
      operands.push_back(ctx.input(j));
      absl::StrAppend(&lhs, ",", EinsumTermText(terms[j]));
    }
    const bool has_ellipsis = term.find('.') != std::string::npos;
    if (any_ellipsis && out.find('.') == std::string::npos) {
      return ctx.Error("equation '", raw, "': the gradient of operand ", k,
                       " needs '...' in the output");
    }
    // An operand without "..." (as "jk" in "...ij,jk->...ik") was broadcast over the "..."
    // dims: its gradient keeps them in front, and SumToShape sums them away.
    const bool summed_ellipsis = any_ellipsis && !has_ellipsis;
    std::string kept = summed_ellipsis ? "." : "";
    std::vector<int> missing;  // positions in the operand's term
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '.' || available.find(term[i]) != std::string::npos) {
        kept.push_back(term[i]);
      } else {
        missing.push_back(static_cast<int>(i));
      }
    }
    const ValueId x = ctx.input(k);
    AttributeMap attrs;
    attrs["equation"] = StringAttr(absl::StrCat(lhs, "->", EinsumTermText(kept)));
    GRAD_ASSIGN_OR_RETURN(ValueId g, ctx.Emit1("Einsum", operands, attrs));
    if (!missing.empty()) {
      if (summed_ellipsis) {
        return ctx.Error("equation '", raw, "': operand ", k,
                         " has labels of its own and no '...' while others have one");
      }
      GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, x, absl::StrCat("input ", k)));
      const int ellipsis_rank = rank - static_cast<int>(term.size()) + (has_ellipsis ? 1 : 0);
      std::vector<int64_t> axes;
      const size_t dot = term.find('.');
      for (int i : missing) {
        const bool after = has_ellipsis && static_cast<size_t>(i) > dot;
        axes.push_back(after ? i - 1 + ellipsis_rank : i);
      }
      GRAD_ASSIGN_OR_RETURN(g, UnsqueezeAxes(ctx, g, axes));
      GRAD_ASSIGN_OR_RETURN(g, ExpandLike(ctx, g, x));
    }
    GRAD_ASSIGN_OR_RETURN(g, SumToShape(ctx, g, x));
    GRAD_RETURN_IF_ERROR(ctx.AddInputGrad(k, g));
  }
  return absl::OkStatus();
}

// --- graphopt::SumToShape ---------------------------------------------------------------------

// out = sum of grad over its broadcast axes: d grad = Expand(d out, Shape(grad)).
absl::Status SumToShapeGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ExpandLike(ctx, dy, ctx.input(0)));
  return ctx.AddInputGrad(0, dx);
}

}  // namespace

void AddReductionGradients(GradientTable* table) {
  const std::pair<const char*, Reduce> reductions[] = {
      {"ReduceSum", Reduce::kSum},          {"ReduceMean", Reduce::kMean},
      {"ReduceMax", Reduce::kMax},          {"ReduceMin", Reduce::kMin},
      {"ReduceProd", Reduce::kProd},        {"ReduceL1", Reduce::kL1},
      {"ReduceL2", Reduce::kL2},            {"ReduceSumSquare", Reduce::kSumSquare},
      {"ReduceLogSum", Reduce::kLogSum},    {"ReduceLogSumExp", Reduce::kLogSumExp}};
  for (const auto& [name, kind] : reductions) {
    const Reduce k = kind;
    (*table)[name] = {[k](GradientContext& ctx) { return ReduceGradient(ctx, k); }, {1}};
  }
  (*table)["Softmax"] = {SoftmaxGradient, {}};
  (*table)["LogSoftmax"] = {LogSoftmaxGradient, {}};
  (*table)["Hardmax"] = {ZeroGradient, {}};
  (*table)["Einsum"] = {EinsumGradient, {}};
  (*table)["LpNormalization"] = {LpNormalizationGradient, {}};
  (*table)["MeanVarianceNormalization"] = {MeanVarianceNormalizationGradient, {}};
  (*table)["NegativeLogLikelihoodLoss"] = {NllLossGradient, {1, 2}};
  (*table)["SoftmaxCrossEntropyLoss"] = {SoftmaxCrossEntropyGradient, {1, 2}};
  (*table)[absl::StrCat(kGraphoptDomain, "::SumToShape")] = {SumToShapeGradient, {1}};
}

}  // namespace builtin_internal
}  // namespace graphopt
