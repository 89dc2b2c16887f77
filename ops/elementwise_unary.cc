// Unary elementwise builtin operators (math, trigonometric and activation functions, Clip,
// IsNaN/IsInf, PRelu), with ONNX semantics; kernels in runtime/kernels/elementwise_unary.cc. Not
// is listed with the basic unary ops here; its kernel is in elementwise_logic.cc.

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

absl::Status ClipShape(InferenceContext& ctx) {
  for (int i = 1; i <= 2; ++i) {
    std::optional<Dims> s = InputShape(ctx, i);
    if (s && !s->empty() && !(s->size() == 1 && (*s)[0].is_known() && (*s)[0].size() == 1)) {
      return ctx.Error("input ", i, " (", i == 1 ? "min" : "max", ") must be a scalar, got ",
                       ShapeToString(s));
    }
  }
  return SameShapeAsInput0(ctx);
}

}  // namespace

void AddElementwiseUnaryOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes numeric = NumericTypes();
  const DTypes signed_numeric = Join(SignedIntTypes(), floats);
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
  const std::vector<UnaryOp> basic_unary = {
      {"Sqrt", "Square root, elementwise.", floats, true},
      {"Exp", "Exponential, elementwise.", floats, true},
      {"Log", "Natural logarithm, elementwise.", floats, true},
      {"Neg", "Negation, elementwise.", signed_numeric, true},
      {"Abs", "Absolute value, elementwise.", numeric, true},
      {"Relu", "max(x, 0), elementwise.", signed_numeric, true},
      {"Sigmoid", "1 / (1 + exp(-x)), elementwise.", floats, true},
      {"Tanh", "Hyperbolic tangent, elementwise.", floats, true},
      {"Erf", "Gauss error function, elementwise.", numeric},
      {"Softplus", "log(exp(x) + 1), elementwise.", floats},
      {"Sign", "Sign of x (-1, 0 or 1), elementwise.", numeric},
      {"Floor", "Floor, elementwise.", floats, true},
      {"Ceil", "Ceiling, elementwise.", floats, true},
      {"Reciprocal", "1 / x, elementwise.", floats, true},
      {"Not", "Logical not, elementwise.", {v1::DT_BOOL}},
  };
  for (const UnaryOp& u : basic_unary) AddUnary(ops, u, OpBuilder(u.name, u.doc));
  AddUnary(ops, {"LeakyRelu", "", floats, true},
           std::move(OpBuilder("LeakyRelu", "x if x >= 0 else alpha * x, elementwise.")
                         .FloatAttr("alpha", 0.01f, "Slope for x < 0.")));
  AddUnary(ops, {"HardSigmoid", "", floats, true},
           std::move(OpBuilder("HardSigmoid", "max(0, min(1, alpha * x + beta)), elementwise.")
                         .FloatAttr("alpha", 0.2f)
                         .FloatAttr("beta", 0.5f)));
  ops->push_back(OpBuilder("Clip", "Clamps to [min, max]; opsets < 11 give the bounds as "
                                   "attributes, later ones as optional scalar inputs.")
                     .Input("input", "T")
                     .OptionalInput("min", "T", "Lower bound (scalar).")
                     .OptionalInput("max", "T", "Upper bound (scalar).")
                     .Output("output", "T")
                     .Attr("min", v1::ATTR_FLOAT, "Lower bound (opset < 11).")
                     .Attr("max", v1::ATTR_FLOAT, "Upper bound (opset < 11).")
                     .Attr("consumed_inputs", v1::ATTR_INTS, "Opset 1 only; ignored.")
                     .Constraint("T", numeric)
                     .Fusion(v1::FUSION_ELEMWISE)
                     .InPlace(0, 0)
                     .ShapeFn(ClipShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
