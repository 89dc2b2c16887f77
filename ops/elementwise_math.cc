// Elementwise math beyond the basics (trigonometric and activation functions, IsNaN/IsInf,
// logical and bitwise binaries, Mod, PRelu, Sum/Mean, CastLike), CumSum, Det and Einsum, with
// ONNX semantics.

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
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Integers and float16/32/64 (ONNX's all_numeric_types, no bfloat16).
DTypes NumericNoBfloat16() { return Join(IntTypes(), HalfSingleDouble()); }

// Every type but complex (Cast's and CastLike's).
DTypes CastTypes() {
  return Join(NumericTypes(), {v1::DT_BOOL, v1::DT_STRING});
}

// Same shape as the input, carrying integer contents across integer types (as Cast).
absl::Status CastLikeShape(InferenceContext& ctx) {
  if (absl::Status s = SameShapeAsInput0(ctx); !s.ok()) return s;
  if (IsInteger(ctx.input_type(0).dtype) && IsInteger(ctx.input_type(1).dtype)) {
    ForwardDimsValue(ctx);
  }
  return absl::OkStatus();
}

absl::Status BitShiftShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> direction = ctx.GetString("direction");
  if (!direction.ok()) return direction.status();
  if (*direction != "LEFT" && *direction != "RIGHT") {
    return ctx.Error("attribute 'direction' must be LEFT or RIGHT, got '", *direction, "'");
  }
  return BroadcastAllInputs(ctx);
}

absl::Status ModShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> fmod = ctx.GetInt("fmod");
  if (!fmod.ok()) return fmod.status();
  if (*fmod != 0 && *fmod != 1) return ctx.Error("attribute 'fmod' must be 0 or 1, got ", *fmod);
  if (*fmod == 0 && IsFloatingPoint(ctx.input_type(0).dtype)) {
    return ctx.Error("attribute 'fmod' must be 1 for floating-point inputs (",
                     DataTypeName(ctx.input_type(0).dtype), ")");
  }
  return BroadcastAllInputs(ctx);
}

// X's shape; from opset 7 the slope must broadcast to X (unidirectionally).
absl::Status PReluShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> slope = InputShape(ctx, 1);
  if (x && slope && !OpsetBefore(ctx, 7)) {
    if (absl::Status s = CheckUnidirectionalBroadcast(*slope, *x); !s.ok()) {
      return NodeError(ctx, s, "input slope: ");
    }
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

absl::Status CumSumShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScalarInput(ctx, 1, "axis", true); !s.ok()) return s;
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (std::optional<int64_t> axis = ScalarInputInt(ctx, 1); axis && x) {
    absl::StatusOr<int64_t> n = NormalizeAxis(*axis, static_cast<int64_t>(x->size()),
                                              "input 'axis'");
    if (!n.ok()) return NodeError(ctx, n.status());
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// [*, M, M] -> [*].
absl::Status DetShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (x->size() < 2) return ctx.Error("input X must have rank >= 2, got ", ShapeToString(x));
  if (!MergeEqualDims(x->back(), (*x)[x->size() - 2]).ok()) {
    return ctx.Error("input X ", ShapeToString(x), " does not hold square matrices");
  }
  ctx.set_output_shape(0, Dims(x->begin(), x->end() - 2));
  return absl::OkStatus();
}

// --- Einsum -----------------------------------------------------------------------------------

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

// A binary op with broadcasting and a bool result.
OpDef BoolResultBinary(absl::string_view name, absl::string_view doc, const DTypes& types,
                       bool legacy_broadcast) {
  OpBuilder b(name, doc);
  if (legacy_broadcast) LegacyBroadcastAttrs(b);
  return b.Input("A", "T")
      .Input("B", "T")
      .Output("C", "T1")
      .Constraint("T", types)
      .Constraint("T1", {v1::DT_BOOL})
      .Fusion(v1::FUSION_BROADCAST)
      .ShapeFn(legacy_broadcast ? BinaryBroadcastShape : BroadcastAllInputs)
      .Build();
}

}  // namespace

void AddMathOps(std::vector<OpDef>* ops) {
  const DTypes hsd = HalfSingleDouble();
  const std::vector<UnaryOp> unary = {
      {"Sin", "Sine, elementwise.", hsd},
      {"Cos", "Cosine, elementwise.", hsd},
      {"Tan", "Tangent, elementwise.", hsd},
      {"Asin", "Arcsine, elementwise.", hsd},
      {"Acos", "Arccosine, elementwise.", hsd},
      {"Atan", "Arctangent, elementwise.", hsd},
      {"Sinh", "Hyperbolic sine, elementwise.", hsd},
      {"Cosh", "Hyperbolic cosine, elementwise.", hsd},
      {"Asinh", "Inverse hyperbolic sine, elementwise.", hsd},
      {"Acosh", "Inverse hyperbolic cosine, elementwise.", hsd},
      {"Atanh", "Inverse hyperbolic tangent, elementwise.", hsd},
      {"Softsign", "x / (1 + |x|), elementwise.", hsd},
      {"Round", "Rounds half to even, elementwise.", hsd},
      {"HardSwish", "x * max(0, min(1, x / 6 + 1 / 2)), elementwise.", hsd},
  };
  for (const UnaryOp& u : unary) AddUnary(ops, u, OpBuilder(u.name, u.doc));
  AddUnary(ops, {"Elu", "", hsd, true},
           std::move(OpBuilder("Elu", "x if x >= 0 else alpha * (exp(x) - 1), elementwise.")
                         .FloatAttr("alpha", 1.0f)));
  AddUnary(ops, {"Selu", "", hsd, true},
           std::move(OpBuilder("Selu", "gamma * (x if x > 0 else alpha * (exp(x) - 1)), "
                                       "elementwise.")
                         .FloatAttr("alpha", 1.67326319217681884765625f)
                         .FloatAttr("gamma", 1.05070102214813232421875f)));
  AddUnary(ops, {"Celu", "", {v1::DT_FLOAT32}},
           std::move(OpBuilder("Celu", "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), "
                                       "elementwise.")
                         .FloatAttr("alpha", 1.0f)));
  AddUnary(ops, {"ThresholdedRelu", "", hsd},
           std::move(OpBuilder("ThresholdedRelu", "x if x > alpha else 0, elementwise.")
                         .FloatAttr("alpha", 1.0f)));
  AddUnary(ops, {"Shrink", "", NumericNoBfloat16()},
           std::move(OpBuilder("Shrink", "x + bias if x < -lambd, x - bias if x > lambd, else "
                                         "0; elementwise.")
                         .FloatAttr("bias", 0.0f)
                         .FloatAttr("lambd", 0.5f)));

  ops->push_back(OpBuilder("IsNaN", "True where x is NaN, elementwise.")
                     .Input("X", "T1")
                     .Output("Y", "T2")
                     .Constraint("T1", FloatTypes())
                     .Constraint("T2", {v1::DT_BOOL})
                     .Fusion(v1::FUSION_ELEMWISE)
                     .ShapeFn(SameShapeAsInput0)
                     .Build());
  ops->push_back(OpBuilder("IsInf", "True where x is an infinity of a detected sign, "
                                    "elementwise.")
                     .Input("X", "T1")
                     .Output("Y", "T2")
                     .IntAttr("detect_negative", 1)
                     .IntAttr("detect_positive", 1)
                     .Constraint("T1", {v1::DT_FLOAT32, v1::DT_FLOAT64})
                     .Constraint("T2", {v1::DT_BOOL})
                     .Fusion(v1::FUSION_ELEMWISE)
                     .ShapeFn(SameShapeAsInput0)
                     .Build());

  for (const char* name : {"And", "Or", "Xor"}) {
    ops->push_back(BoolResultBinary(name, "Logical operation, elementwise, with broadcasting "
                                          "(opsets < 7: B broadcasts to A's shape).",
                                    {v1::DT_BOOL}, true));
  }
  for (const char* name : {"GreaterOrEqual", "LessOrEqual"}) {
    ops->push_back(BoolResultBinary(name, "Elementwise comparison with broadcasting; bool "
                                          "result.",
                                    NumericTypes(), false));
  }
  ops->push_back(OpBuilder("BitShift", "Shifts X's bits by Y (LEFT or RIGHT), with "
                                       "broadcasting.")
                     .Input("X", "T")
                     .Input("Y", "T")
                     .Output("Z", "T")
                     .RequiredAttr("direction", v1::ATTR_STRING, "LEFT or RIGHT.")
                     .Constraint("T", {v1::DT_UINT8, v1::DT_UINT16, v1::DT_UINT32,
                                       v1::DT_UINT64})
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(BitShiftShape)
                     .Build());
  ops->push_back(OpBuilder("Mod", "Remainder with broadcasting; the divisor's sign (fmod=0, "
                                  "integers) or the dividend's (fmod=1).")
                     .Input("A", "T")
                     .Input("B", "T")
                     .Output("C", "T")
                     .IntAttr("fmod", 0)
                     .Constraint("T", NumericTypes())
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(ModShape)
                     .Build());
  OpBuilder prelu("PRelu", "x if x >= 0 else slope * x; the slope broadcasts to X.");
  ops->push_back(ConsumedInputs(prelu)
                     .Input("X", "T")
                     .Input("slope", "T")
                     .Output("Y", "T")
                     .Constraint("T", Join(FloatTypes(), {v1::DT_UINT32, v1::DT_UINT64,
                                                          v1::DT_INT32, v1::DT_INT64}))
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(PReluShape)
                     .Build());
  for (const char* name : {"Sum", "Mean"}) {
    OpBuilder b(name, "Elementwise sum/mean of all inputs, with broadcasting (opsets < 8: "
                      "equal shapes).");
    ops->push_back(ConsumedInputs(b)
                       .VariadicInput("data_0", "T", 1)
                       .Output(name == std::string("Sum") ? "sum" : "mean", "T")
                       .Constraint("T", FloatTypes())
                       .Fusion(v1::FUSION_BROADCAST)
                       .ShapeFn(MinMaxShape)
                       .Build());
  }
  ops->push_back(OpBuilder("CastLike", "Converts 'input' to the element type of 'target_type'.")
                     .Input("input", "T1")
                     .Input("target_type", "T2")
                     .Output("output", "T2")
                     .Constraint("T1", CastTypes())
                     .Constraint("T2", CastTypes())
                     .IgnoredInput(1)
                     .Fusion(v1::FUSION_ELEMWISE)
                     .ShapeFn(CastLikeShape)
                     .Build());
  ops->push_back(OpBuilder("CumSum", "Cumulative sum along the scalar 'axis' (exclusive, "
                                     "reverse).")
                     .Input("x", "T")
                     .Input("axis", "T2")
                     .Output("y", "T")
                     .IntAttr("exclusive", 0)
                     .IntAttr("reverse", 0)
                     .Constraint("T", Join(FloatTypes(), {v1::DT_UINT32, v1::DT_UINT64,
                                                          v1::DT_INT32, v1::DT_INT64}))
                     .Constraint("T2", {v1::DT_INT32, v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(CumSumShape)
                     .Build());
  ops->push_back(OpBuilder("Det", "Determinants of the square matrices in the last two dims.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(DetShape)
                     .Build());
  ops->push_back(OpBuilder("Einsum", "Einstein summation over the inputs, as numpy.einsum.")
                     .VariadicInput("Inputs", "T", 1)
                     .Output("Output", "T")
                     .RequiredAttr("equation", v1::ATTR_STRING)
                     .Constraint("T", NumericNoBfloat16())
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(EinsumShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
