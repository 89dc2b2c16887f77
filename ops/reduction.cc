// The reduction family, with ONNX semantics; kernels in runtime/kernels/reduction*.cc: the
// Reduce* ops, ArgMax/ArgMin, MeanVarianceNormalization and LpNormalization; Einsum (numpy.einsum
// semantics); Softmax, LogSoftmax, Hardmax and the losses (NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "graph/gradient.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// --- Reduce*, ArgMax/ArgMin, normalizations (kernels in reduction.cc) ------------------------

absl::Status ArgReduceShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> keepdims = ctx.GetInt("keepdims");
  if (!keepdims.ok()) return keepdims.status();
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  Dims out = *x;
  if (*keepdims) {
    out[*axis] = Dim::Known(1);
  } else {
    out.erase(out.begin() + *axis);
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status MeanVarianceNormShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<std::vector<int64_t>> axes = ctx.GetInts("axes");
  if (!axes.ok()) return axes.status();
  if (x) {
    absl::StatusOr<std::vector<int64_t>> n =
        NormalizeAxes(*axes, static_cast<int64_t>(x->size()), "attribute 'axes'");
    if (!n.ok()) return NodeError(ctx, n.status());
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// Input 0's shape after checking 'axis' (LpNormalization).
absl::Status AxisCheckedSameShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x); !axis.ok()) return axis.status();
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// The Reduce* ops: 'axes' (attribute, or input 1) reduced, kept as 1 with keepdims.
absl::Status ReduceShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> keepdims = ctx.GetInt("keepdims");
  if (!keepdims.ok()) return keepdims.status();
  absl::StatusOr<int64_t> noop = ctx.GetInt("noop_with_empty_axes");
  if (!noop.ok()) return noop.status();
  absl::StatusOr<IntsOperand> axes = IntsFromAttrOrInput(ctx, "axes", 1);
  if (!axes.ok()) return axes.status();
  const char* what = ctx.has_input(1) ? "input 'axes'" : "attribute 'axes'";
  if (axes->given && !axes->values) {
    // Which axes are reduced is unknown: with keepdims each dim either stays or becomes 1.
    if (!x || !*keepdims) {
      ctx.set_output_shape(0, std::nullopt);
      return absl::OkStatus();
    }
    Dims out = *x;
    for (Dim& d : out) {
      if (!(d.is_known() && d.size() == 1)) d = Dim::Unknown();
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const std::vector<int64_t> list = axes->values ? *axes->values : std::vector<int64_t>();
  if (list.empty() && *noop) {
    ctx.set_output_shape(0, x);
    return absl::OkStatus();
  }
  if (!x) {
    // Reducing everything without keepdims gives a scalar whatever the rank.
    ctx.set_output_shape(0, list.empty() && !*keepdims ? std::optional<Dims>(Dims{})
                                                       : std::nullopt);
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x->size());
  std::vector<bool> reduced(x->size(), list.empty());
  for (int64_t a : list) {
    absl::StatusOr<int64_t> n = NormalizeAxis(a, rank, what);
    if (!n.ok()) return NodeError(ctx, n.status());
    reduced[*n] = true;
  }
  Dims out;
  for (size_t i = 0; i < x->size(); ++i) {
    if (!reduced[i]) {
      out.push_back((*x)[i]);
    } else if (*keepdims) {
      out.push_back(Dim::Known(1));
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// A Reduce* descriptor: data (T of `types`), optional int64 axes input, attributes axes,
// keepdims and noop_with_empty_axes, reduction fusion, ReduceShapeFn.
OpDef ReduceOpDef(absl::string_view name, absl::string_view doc, const DTypes& types) {
  return OpBuilder(name, doc)
      .Input("data", "T")
      .OptionalInput("axes", "Taxes")
      .Output("reduced", "T")
      .Attr("axes", v1::ATTR_INTS)
      .IntAttr("keepdims", 1)
      .IntAttr("noop_with_empty_axes", 0)
      .Constraint("T", types)
      .Constraint("Taxes", {v1::DT_INT64})
      .Fusion(v1::FUSION_REDUCTION)
      .ShapeFn(ReduceShapeFn)
      .Build();
}

void AddReduceOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  const DTypes reduce_types = Join(floats, {v1::DT_INT32, v1::DT_INT64, v1::DT_UINT32,
                                            v1::DT_UINT64, v1::DT_INT8, v1::DT_UINT8});
  const DTypes arg_types = Join(reduce_types, {v1::DT_INT16, v1::DT_UINT16});
  const DTypes reduce_types_32_64 = Join(FloatTypes(), {v1::DT_UINT32, v1::DT_UINT64, v1::DT_INT32,
                                                        v1::DT_INT64});
  for (const char* name : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    ops->push_back(ReduceOpDef(name, "Reduction over 'axes' (attribute, or input from opset 13 "
                                     "for ReduceSum and 18 for the others); all axes when empty.",
                               reduce_types));
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    ops->push_back(OpBuilder(name, "Index of the extreme element along 'axis' (int64).")
                       .Input("data", "T")
                       .Output("reduced", "I")
                       .IntAttr("axis", 0)
                       .IntAttr("keepdims", 1)
                       .IntAttr("select_last_index", 0)
                       .Constraint("T", arg_types)
                       .Constraint("I", {v1::DT_INT64})
                       .Fusion(v1::FUSION_REDUCTION)
                       .ShapeFn(ArgReduceShapeFn)
                       .Build());
  }
  ops->push_back(OpBuilder("MeanVarianceNormalization", "(x - mean) / sqrt(var) over 'axes'.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .IntsAttr("axes", {0, 2, 3})
                     .Constraint("T", FloatTypes())
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MeanVarianceNormShape)
                     .Build());
  ops->push_back(OpBuilder("LpNormalization", "Normalises to unit Lp norm along 'axis'.")
                     .Input("input", "T")
                     .Output("output", "T")
                     .IntAttr("axis", -1)
                     .IntAttr("p", 2, "1 or 2.")
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(AxisCheckedSameShape)
                     .Build());
  for (const char* name : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                           "ReduceProd", "ReduceSumSquare"}) {
    ops->push_back(ReduceOpDef(name, "Reduction over 'axes' (attribute, or input from opset "
                                     "18); all axes when empty.",
                               reduce_types_32_64));
  }
}

// --- Einsum (kernel in reduction_einsum.cc) --------------------------------------------------

// One operand (or the result) of an einsum equation: its labels, and where "..." stands among
// them (-1 when it does not).
struct EinsumTerm {
  std::string labels;
  int ellipsis = -1;
};

absl::StatusOr<EinsumTerm> ParseEinsumTerm(const InferenceContext& ctx, absl::string_view t) {
  EinsumTerm term;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.substr(i, 3) == "...") {
      if (term.ellipsis >= 0) {
        return ctx.Error("attribute 'equation': term '", t, "' has two '...'");
      }
      term.ellipsis = static_cast<int>(term.labels.size());
      i += 2;
    } else if (absl::ascii_isalpha(t[i])) {
      term.labels.push_back(t[i]);
    } else {
      return ctx.Error("attribute 'equation': unexpected character '", std::string(1, t[i]),
                       "' in term '", t, "'");
    }
  }
  return term;
}

// numpy.einsum's result shape: each label's dims broadcast over the operands, the "..." dims
// broadcast right-aligned; an implicit result lists "..." and then the labels seen once, in
// alphabetical order.
absl::Status EinsumShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> eq = ctx.GetString("equation");
  if (!eq.ok()) return eq.status();
  std::string equation;
  for (char c : *eq) {
    if (c != ' ') equation.push_back(c);
  }
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<EinsumTerm> terms;
  for (absl::string_view t : absl::StrSplit(lhs, ',')) {
    absl::StatusOr<EinsumTerm> term = ParseEinsumTerm(ctx, t);
    if (!term.ok()) return term.status();
    terms.push_back(*std::move(term));
  }
  if (static_cast<int>(terms.size()) != ctx.num_inputs()) {
    return ctx.Error("attribute 'equation' '", *eq, "' has ", terms.size(),
                     " operands but the node has ", ctx.num_inputs(), " inputs");
  }
  // Label -> (dim, seen count); "..." dims of every operand.
  std::vector<std::optional<Dim>> label_dim(128);
  std::vector<int> label_count(128, 0);
  std::vector<std::optional<Dims>> ellipsis_shapes;
  bool ellipsis_rank_known = true;
  for (size_t k = 0; k < terms.size(); ++k) {
    const EinsumTerm& term = terms[k];
    for (char c : term.labels) ++label_count[static_cast<unsigned char>(c)];
    const std::optional<Dims> s = InputShape(ctx, static_cast<int>(k));
    if (!s) {
      if (term.ellipsis >= 0) ellipsis_rank_known = false;
      continue;
    }
    const size_t n = term.labels.size();
    if (term.ellipsis < 0 ? s->size() != n : s->size() < n) {
      return ctx.Error("input ", k, " ", ShapeToString(s), " does not fit the term '",
                       term.labels, term.ellipsis >= 0 ? "' with '...'" : "'",
                       " of attribute 'equation'");
    }
    const size_t ell = s->size() - n;
    if (term.ellipsis >= 0) {
      ellipsis_shapes.push_back(Dims(s->begin() + term.ellipsis,
                                     s->begin() + term.ellipsis + ell));
    }
    for (size_t i = 0; i < n; ++i) {
      const size_t pos = term.ellipsis >= 0 && static_cast<int>(i) >= term.ellipsis ? i + ell : i;
      std::optional<Dim>& d = label_dim[static_cast<unsigned char>(term.labels[i])];
      if (!d) {
        d = (*s)[pos];
        continue;
      }
      std::optional<Dim> merged = BroadcastDim(*d, (*s)[pos]);
      if (!merged) {
        return ctx.Error("label '", std::string(1, term.labels[i]), "' has sizes ",
                         d->ToString(), " and ", (*s)[pos].ToString(), " in attribute 'equation' '",
                         *eq, "'");
      }
      d = *std::move(merged);
    }
  }
  EinsumTerm out;
  if (arrow != std::string::npos) {
    absl::StatusOr<EinsumTerm> t = ParseEinsumTerm(ctx, equation.substr(arrow + 2));
    if (!t.ok()) return t.status();
    out = *std::move(t);
    std::vector<bool> seen(128, false);
    for (char c : out.labels) {
      const unsigned char u = static_cast<unsigned char>(c);
      if (label_count[u] == 0 || seen[u]) {
        return ctx.Error("attribute 'equation' '", *eq, "': output label '", std::string(1, c),
                         label_count[u] == 0 ? "' is not an input label" : "' is repeated");
      }
      seen[u] = true;
    }
  } else {
    bool any_ellipsis = false;
    for (const EinsumTerm& t : terms) any_ellipsis |= t.ellipsis >= 0;
    out.ellipsis = any_ellipsis ? 0 : -1;
    for (int c = 0; c < 128; ++c) {
      if (label_count[c] == 1) out.labels.push_back(static_cast<char>(c));
    }
  }
  Dims ellipsis_dims;
  if (out.ellipsis >= 0) {
    if (!ellipsis_rank_known) {
      ctx.set_output_shape(0, std::nullopt);
      return absl::OkStatus();
    }
    if (!ellipsis_shapes.empty()) {
      absl::StatusOr<std::optional<Dims>> b = BroadcastShapes(ellipsis_shapes);
      if (!b.ok()) return NodeError(ctx, b.status(), "the '...' dims do not broadcast: ");
      ellipsis_dims = **b;
    }
  }
  Dims result;
  for (size_t i = 0; i <= out.labels.size(); ++i) {
    if (static_cast<int>(i) == out.ellipsis) {
      result.insert(result.end(), ellipsis_dims.begin(), ellipsis_dims.end());
    }
    if (i == out.labels.size()) break;
    const std::optional<Dim>& d = label_dim[static_cast<unsigned char>(out.labels[i])];
    result.push_back(d ? *d : Dim::Unknown());
  }
  ctx.set_output_shape(0, std::move(result));
  return absl::OkStatus();
}

void AddEinsumOps(std::vector<OpDef>* ops) {
  ops->push_back(OpBuilder("Einsum", "Einstein summation over the inputs, as numpy.einsum.")
                     .VariadicInput("Inputs", "T", 1)
                     .Output("Output", "T")
                     .RequiredAttr("equation", v1::ATTR_STRING)
                     .Constraint("T", NumericNoBfloat16())
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(EinsumShape)
                     .Build());
}

// --- Softmax and the losses (kernels in reduction_softmax.cc) --------------------------------

absl::StatusOr<std::string> Reduction(const InferenceContext& ctx) {
  absl::StatusOr<std::string> r = ctx.GetString("reduction");
  if (!r.ok()) return r.status();
  if (*r != "none" && *r != "mean" && *r != "sum") {
    return ctx.Error("attribute 'reduction' must be none, mean or sum, got '", *r, "'");
  }
  return r;
}

// The per-sample shape [N, d1, ...] of a loss over scores/log-probabilities [N, C, d1, ...] and
// targets [N, d1, ...] (merged dim by dim); the class count C comes back in `classes`.
absl::StatusOr<std::optional<Dims>> LossSampleShape(const InferenceContext& ctx, Dim* classes) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> t = InputShape(ctx, 1);
  if (x && x->size() < 2) return ctx.Error("input 0 must have rank >= 2, got ", ShapeToString(x));
  if (x && t && t->size() + 1 != x->size()) {
    return ctx.Error("input 1 ", ShapeToString(t), " must have rank ", x->size() - 1,
                     " for input 0 ", ShapeToString(x));
  }
  *classes = x ? (*x)[1] : Dim::Unknown();
  if (!x) return t;
  Dims out = {(*x)[0]};
  out.insert(out.end(), x->begin() + 2, x->end());
  for (size_t i = 0; t && i < out.size(); ++i) {
    absl::StatusOr<Dim> merged = MergeEqualDims(out[i], (*t)[i]);
    if (!merged.ok()) {
      return ctx.Error("input 1 ", ShapeToString(t), " does not match input 0 ",
                       ShapeToString(x), " (expected [N, d1, ...] of [N, C, d1, ...])");
    }
    out[i] = *std::move(merged);
  }
  return std::optional<Dims>(std::move(out));
}

// Losses: the per-sample shape with reduction 'none', a scalar otherwise; the optional
// class weights (input 2) are [C]; a second output (log_prob) has the scores' shape.
absl::Status LossShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> reduction = Reduction(ctx);
  if (!reduction.ok()) return reduction.status();
  Dim classes;
  absl::StatusOr<std::optional<Dims>> sample = LossSampleShape(ctx, &classes);
  if (!sample.ok()) return sample.status();
  if (std::optional<Dims> wt = InputShape(ctx, 2)) {
    if (wt->size() != 1 || !MergeEqualDims(classes, (*wt)[0]).ok()) {
      return ctx.Error("input 2 (weights) ", ShapeToString(wt), " must be 1-D of the ",
                       classes.ToString(), " classes");
    }
  }
  ctx.set_output_shape(0, *reduction == "none" ? *sample : std::optional<Dims>(Dims{}));
  if (ctx.num_outputs() > 1) ctx.set_output_shape(1, InputShape(ctx, 0));
  return absl::OkStatus();
}

// Softmax, LogSoftmax and Hardmax: input 0's shape, 'axis' checked (opsets < 13: the input
// coerced to 2-D at 'axis', default 1).
absl::Status SoftmaxShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!OpsetBefore(ctx, 13)) {
    if (absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x); !axis.ok()) return axis.status();
    ctx.set_output_shape(0, x);
    return absl::OkStatus();
  }
  // Opsets < 13 coerce the input to 2-D at 'axis', which defaults to 1 there (the descriptor's
  // default is the newer -1); before opset 11 'axis' may also equal the rank, as in Flatten.
  int64_t axis = 1;
  if (ctx.node().attributes.contains("axis")) {
    absl::StatusOr<int64_t> a = ctx.GetInt("axis");
    if (!a.ok()) return a.status();
    axis = *a;
  }
  if (x) {
    const int64_t r = static_cast<int64_t>(x->size());
    const int64_t last = OpsetBefore(ctx, 11) ? r : r - 1;
    if (axis < -r || axis > last) {
      return ctx.Error("'axis' value ", axis, " is out of range for rank ", r, " (expected [",
                       -r, ", ", last, "] at opset ", ctx.opset_version(), ")");
    }
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

void AddSoftmaxOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(OpBuilder("Softmax", "Softmax along 'axis' (opsets < 13: of the input coerced "
                                      "to 2-D at 'axis', default 1).")
                     .Input("input", "T")
                     .Output("output", "T")
                     .IntAttr("axis", -1)
                     .Constraint("T", floats)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SoftmaxShapeFn)
                     .Build());
  for (const char* name : {"LogSoftmax", "Hardmax"}) {
    ops->push_back(OpBuilder(name, "Along 'axis' (opsets < 13: of the input coerced to 2-D at "
                                   "'axis', default 1).")
                       .Input("input", "T")
                       .Output("output", "T")
                       .IntAttr("axis", -1)
                       .Constraint("T", FloatTypes())
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(SoftmaxShapeFn)
                       .Build());
  }
  ops->push_back(OpBuilder("NegativeLogLikelihoodLoss",
                           "-input[n, target[n, d...], d...] (times the class weight), reduced "
                           "by 'reduction'.")
                     .Input("input", "T")
                     .Input("target", "Tind")
                     .OptionalInput("weight", "T")
                     .Output("loss", "T")
                     .Attr("ignore_index", v1::ATTR_INT)
                     .StringAttr("reduction", "mean", "none, mean or sum.")
                     .Constraint("T", hsd)
                     .Constraint("Tind", {v1::DT_INT32, v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(LossShape)
                     .Build());
  ops->push_back(OpBuilder("SoftmaxCrossEntropyLoss",
                           "Cross entropy of softmax(scores) against the labels; optional "
                           "log_prob output.")
                     .Input("scores", "T")
                     .Input("labels", "Tind")
                     .OptionalInput("weights", "T")
                     .Output("output", "T")
                     .OptionalOutput("log_prob", "T")
                     .Attr("ignore_index", v1::ATTR_INT)
                     .StringAttr("reduction", "mean", "none, mean or sum.")
                     .Constraint("T", FloatTypes())
                     .Constraint("Tind", {v1::DT_INT32, v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(LossShape)
                     .Build());
}


// --- graphopt::SumToShape (kernel in reduction.cc) -------------------------------------------

// The shape operand itself (numpy broadcasting reversed: grad must be a broadcast of it).
absl::Status SumToShapeShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> grad = InputShape(ctx, 0);
  const std::optional<Dims> target = ShapeOperand(ctx, 1);
  if (!target) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (grad) {
    if (target->size() > grad->size()) {
      return ctx.Error("input 1 (shape) has ", target->size(), " dims, more than input 0 (grad) ",
                       ShapeToString(grad));
    }
    const size_t lead = grad->size() - target->size();
    for (size_t i = 0; i < target->size(); ++i) {
      const Dim& t = (*target)[i];
      const Dim& g = (*grad)[lead + i];
      if (t.is_known() && t.size() < 0) {
        return ctx.Error("input 1 (shape) holds a negative size ", t.size());
      }
      if (t.is_known() && g.is_known() && t.size() != 1 && t.size() != g.size()) {
        return ctx.Error("input 0 (grad) ", ShapeToString(grad),
                         " is not a broadcast of input 1 (shape) ", ShapeToString(target));
      }
    }
  }
  ctx.set_output_shape(0, *target);
  return absl::OkStatus();
}

void AddSumToShapeOp(std::vector<OpDef>* ops) {
  OpDef def = OpBuilder("SumToShape",
                        "grad summed over the axes along which a tensor of 'shape' was broadcast "
                        "(numpy rules) to grad's shape: leading extra axes summed away, axes "
                        "where 'shape' holds 1 summed and kept. The gradient of a broadcast "
                        "whose axes are known only at run time.")
                  .Input("grad", "T")
                  .Input("shape", "Tshape")
                  .Output("output", "T")
                  .Constraint("T", FloatTypes())
                  .Constraint("Tshape", {v1::DT_INT64})
                  .Fusion(v1::FUSION_REDUCTION)
                  .ShapeFn(SumToShapeShapeFn)
                  .Build();
  def.descriptor.set_domain(kGraphoptDomain);
  ops->push_back(std::move(def));
}

}  // namespace

absl::StatusOr<int64_t> CheckedAxis(const InferenceContext& ctx, const std::optional<Dims>& x) {
  absl::StatusOr<int64_t> axis = ctx.GetInt("axis");
  if (!axis.ok()) return axis.status();
  if (!x) return -1;
  absl::StatusOr<int64_t> n = NormalizeAxis(*axis, static_cast<int64_t>(x->size()),
                                            "attribute 'axis'");
  if (!n.ok()) return NodeError(ctx, n.status());
  return n;
}

void AddReductionOps(std::vector<OpDef>* ops) {
  AddReduceOps(ops);
  AddEinsumOps(ops);
  AddSoftmaxOps(ops);
  AddSumToShapeOp(ops);
}

}  // namespace builtin_internal
}  // namespace graphopt
