// The elementwise family, with ONNX semantics; kernels in runtime/kernels/elementwise*.cc:
// binary arithmetic with broadcasting (Add, Sub, Mul, Div, Pow, Mod, BitShift); type conversions
// (Cast, CastLike and the linear (de)quantizations); logical and comparison binaries, Where and
// the variadic Min, Max, Sum and Mean; the unary math, trigonometric and activation functions,
// Clip, IsNaN/IsInf and PRelu (Not is listed with the unary ops; its kernel is in
// elementwise_logic.cc). Also the unary and broadcasting helpers that other families share.

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

// --- Binary arithmetic (kernels in elementwise.cc) -------------------------------------------

enum class Arith { kAdd, kSub, kMul, kDiv };

// One element of a folded Add/Sub/Mul/Div of dims values. Only known integers are computed;
// the identities x+0, x-0, x*1 and x/1 keep a symbol; everything else is unknown.
Dim FoldDim(Arith op, const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) {
    std::optional<int64_t> r;
    switch (op) {
      case Arith::kAdd:
        r = CheckedAdd(a.size(), b.size());
        break;
      case Arith::kSub:
        r = CheckedSub(a.size(), b.size());
        break;
      case Arith::kMul:
        r = CheckedMul(a.size(), b.size());
        break;
      case Arith::kDiv:
        if (b.size() != 0 && !(b.size() == -1 && a.size() == INT64_MIN)) {
          r = a.size() / b.size();
        }
        break;
    }
    return r ? Dim::Known(*r) : Dim::Unknown();
  }
  const bool b_is = b.is_known();
  const int64_t bv = b_is ? b.size() : 0;
  switch (op) {
    case Arith::kAdd:
      if (b_is && bv == 0) return a;
      if (a.is_known() && a.size() == 0) return b;
      break;
    case Arith::kSub:
      if (b_is && bv == 0) return a;
      break;
    case Arith::kMul:
      if (b_is && bv == 1) return a;
      if (a.is_known() && a.size() == 1) return b;
      break;
    case Arith::kDiv:
      if (b_is && bv == 1) return a;
      break;
  }
  return Dim::Unknown();
}

// Opsets < 7 of the binary arithmetic ops, Pow and the comparisons broadcast the old way: the
// result has A's shape. Without 'broadcast' B must have A's shape; with broadcast=1 B holds one
// element or matches a contiguous run of A's dims starting at 'axis' (the trailing dims when
// 'axis' is absent), a B dim of size 1 matching any size.
absl::Status LegacyBroadcastShape(InferenceContext& ctx) {
  const std::optional<Dims> a = InputShape(ctx, 0);
  const std::optional<Dims> b = InputShape(ctx, 1);
  absl::StatusOr<int64_t> broadcast = ctx.GetInt("broadcast", 0);
  if (!broadcast.ok()) return broadcast.status();
  ctx.set_output_shape(0, a);
  if (!a || !b) return absl::OkStatus();
  auto mismatch = [&](absl::string_view why) {
    return ctx.Error("input B ", ShapeToString(b), " ", why, " A ", ShapeToString(a),
                     " (opset ", ctx.opset_version(), " broadcasting, broadcast=", *broadcast,
                     ")");
  };
  if (*broadcast == 0) {
    if (a->size() != b->size()) return mismatch("must have the shape of");
    for (size_t i = 0; i < a->size(); ++i) {
      if (!MergeEqualDims((*a)[i], (*b)[i]).ok()) return mismatch("must have the shape of");
    }
    return absl::OkStatus();
  }
  if (std::optional<int64_t> n = NumElements(*b); n && *n == 1) return absl::OkStatus();
  if (b->size() > a->size()) return mismatch("has a higher rank than");
  int64_t start = static_cast<int64_t>(a->size() - b->size());
  if (ctx.has_attr("axis")) {
    absl::StatusOr<int64_t> axis = ctx.GetInt("axis");
    if (!axis.ok()) return axis.status();
    absl::StatusOr<int64_t> n =
        NormalizeAxis(*axis, static_cast<int64_t>(a->size()), "attribute 'axis'");
    if (!n.ok()) return NodeError(ctx, n.status());
    start = *n;
    if (start + static_cast<int64_t>(b->size()) > static_cast<int64_t>(a->size())) {
      return mismatch(absl::StrCat("does not fit from axis ", start, " of"));
    }
  }
  for (size_t i = 0; i < b->size(); ++i) {
    const Dim& db = (*b)[i];
    const Dim& da = (*a)[start + i];
    if (db.is_known() && db.size() == 1) continue;
    if (db.is_known() && da.is_known() && db.size() != da.size()) {
      return mismatch(absl::StrCat("does not match from axis ", start, " of"));
    }
  }
  return absl::OkStatus();
}

// A unary elementwise op: X -> Y of one type constraint.
struct UnaryOp {
  const char* name;
  const char* doc;
  DTypes types;
  bool consumed_inputs = false;  // opset 1 declares 'consumed_inputs'
};

// Output 0 of a binary op with broadcasting: opsets < 7 give the result A's shape, B matching
// it (broadcast=1: B holds one element or matches a run of A's dims from 'axis'); later opsets
// broadcast the numpy way.
absl::Status BinaryBroadcastShape(InferenceContext& ctx) {
  if (OpsetBefore(ctx, 7)) return LegacyBroadcastShape(ctx);
  return BroadcastAllInputs(ctx);
}

// Min, Max, Sum and Mean: opsets < 8 require equal shapes and ONNX gives the result the first
// input's shape; later ones broadcast.
absl::Status MinMaxShape(InferenceContext& ctx) {
  if (!OpsetBefore(ctx, 8)) return BroadcastAllInputs(ctx);
  const std::optional<Dims> first = InputShape(ctx, 0);
  for (int i = 1; i < ctx.num_inputs() && first; ++i) {
    const std::optional<Dims> s = InputShape(ctx, i);
    if (!s) continue;
    bool same = s->size() == first->size();
    for (size_t k = 0; same && k < s->size(); ++k) {
      same = MergeEqualDims((*first)[k], (*s)[k]).ok();
    }
    if (!same) {
      return ctx.Error("input ", i, " ", ShapeToString(s), " differs from input 0 ",
                       ShapeToString(first), " (opsets < 8 do not broadcast)");
    }
  }
  ctx.set_output_shape(0, first);
  return absl::OkStatus();
}

// The attributes of opsets < 7 broadcasting (see BinaryBroadcastShape).
OpBuilder& LegacyBroadcastAttrs(OpBuilder& b) {
  return b.Attr("broadcast", v1::ATTR_INT, "Opsets < 7: 1 lets B broadcast to A's shape.")
      .Attr("axis", v1::ATTR_INT, "Opsets < 7: the axis of A where B's dims start.");
}

// Adds `u` built on `b` (which may carry extra attributes): X -> Y of type T (u.types), the
// output in place of the input, elementwise fusion, Y of X's shape.
void AddUnary(std::vector<OpDef>* ops, const UnaryOp& u, OpBuilder b) {
  if (u.consumed_inputs) ConsumedInputs(b);
  ops->push_back(b.Input("X", "T")
                     .Output("Y", "T")
                     .Constraint("T", u.types)
                     .Fusion(v1::FUSION_ELEMWISE)
                     .InPlace(0, 0)
                     .ShapeFn(SameShapeAsInput0)
                     .Build());
}

// Broadcast shape, plus folding of small integer dims values (shape arithmetic such as
// Shape -> Gather -> Mul -> Reshape).
ShapeInferenceFn ArithShapeFn(Arith op) {
  return [op](InferenceContext& ctx) -> absl::Status {
    if (absl::Status s = BinaryBroadcastShape(ctx); !s.ok()) return s;
    std::optional<Dims> a = InputDimsValue(ctx, 0);
    std::optional<Dims> b = InputDimsValue(ctx, 1);
    std::optional<Dims> sa = InputShape(ctx, 0);
    std::optional<Dims> sb = InputShape(ctx, 1);
    if (!a || !b || a->empty() || b->empty()) return absl::OkStatus();
    // Only rank <= 1 operands are dims values; both must be of a known rank to be safe.
    if (!sa || !sb || sa->size() > 1 || sb->size() > 1) return absl::OkStatus();
    if (a->size() != b->size() && a->size() != 1 && b->size() != 1) return absl::OkStatus();
    const size_t n = std::max(a->size(), b->size());
    Dims out;
    out.reserve(n);
    for (size_t k = 0; k < n; ++k) {
      out.push_back(FoldDim(op, (*a)[a->size() == 1 ? 0 : k], (*b)[b->size() == 1 ? 0 : k]));
    }
    SetDimsValue(ctx, 0, std::move(out));
    return absl::OkStatus();
  };
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

void AddArithmeticOps(std::vector<OpDef>* ops) {
  const DTypes numeric = NumericTypes();
  const std::pair<const char*, Arith> arith[] = {
      {"Add", Arith::kAdd}, {"Sub", Arith::kSub}, {"Mul", Arith::kMul}, {"Div", Arith::kDiv}};
  for (const auto& [name, op] : arith) {
    OpBuilder b(name, "Elementwise arithmetic with multidirectional broadcasting (opsets < 7: "
                      "B broadcasts to A's shape).");
    ConsumedInputs(LegacyBroadcastAttrs(b));
    ops->push_back(b.Input("A", "T")
                       .Input("B", "T")
                       .Output("C", "T")
                       .Constraint("T", numeric)
                       .Fusion(v1::FUSION_BROADCAST)
                       .InPlace(0, 0)
                       .InPlace(1, 0)
                       .ShapeFn(ArithShapeFn(op))
                       .Build());
  }
  OpBuilder pow("Pow", "X to the power Y, with multidirectional broadcasting (opsets < 7: Y "
                      "broadcasts to X's shape).");
  ops->push_back(LegacyBroadcastAttrs(pow)
                     .Input("X", "T")
                     .Input("Y", "T1")
                     .Output("Z", "T")
                     .Constraint("T", {v1::DT_INT32, v1::DT_INT64, v1::DT_FLOAT16,
                                       v1::DT_FLOAT32, v1::DT_FLOAT64, v1::DT_BFLOAT16})
                     .Constraint("T1", numeric)
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(BinaryBroadcastShape)
                     .Build());
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
}

// --- Casts and quantization (kernels in elementwise_cast.cc) ---------------------------------

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

// A scale or zero point: a scalar (per tensor), or from opset 13 a 1-D tensor of the size of
// X's 'axis' (per axis).
absl::Status CheckQuantParam(const InferenceContext& ctx, int i, absl::string_view what,
                             const std::optional<Dims>& x) {
  const std::optional<Dims> s = InputShape(ctx, i);
  if (!s || s->empty()) return absl::OkStatus();
  if (s->size() == 1 && (*s)[0].is_known() && (*s)[0].size() == 1) return absl::OkStatus();
  if (s->size() == 1 && !OpsetBefore(ctx, 13)) {
    if (!x) return absl::OkStatus();
    absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
    if (!axis.ok()) return axis.status();
    if (MergeEqualDims((*s)[0], (*x)[*axis]).ok()) return absl::OkStatus();
  }
  return ctx.Error("input ", i, " (", what, ") ", ShapeToString(s), " must be a scalar",
                   OpsetBefore(ctx, 13) ? "" : " or 1-D of the size of X's 'axis'",
                   " for X ", ShapeToString(x));
}

// Quantize/DequantizeLinear: X's shape; scale (input 1) and zero point (input 2) checked.
absl::Status LinearQuantShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (absl::Status s = CheckQuantParam(ctx, 1, "scale", x); !s.ok()) return s;
  if (absl::Status s = CheckQuantParam(ctx, 2, "zero point", x); !s.ok()) return s;
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// QuantizeLinear gives the zero point's type, uint8 without one.
absl::Status QuantizeLinearType(InferenceContext& ctx) {
  if (!ctx.has_input(2)) ctx.set_output_dtype(0, v1::DT_UINT8);
  return absl::OkStatus();
}

absl::Status DynamicQuantizeLinearShape(InferenceContext& ctx) {
  ctx.set_output_shape(0, InputShape(ctx, 0));
  ctx.set_output_shape(1, Dims{});
  ctx.set_output_shape(2, Dims{});
  return absl::OkStatus();
}

absl::Status CastShape(InferenceContext& ctx) {
  if (absl::Status s = SameShapeAsInput0(ctx); !s.ok()) return s;
  absl::StatusOr<int64_t> to = ctx.GetInt("to");
  if (!to.ok()) return to.status();
  if (IsInteger(static_cast<v1::DataType>(*to)) && IsInteger(ctx.input_type(0).dtype)) {
    ForwardDimsValue(ctx);
  }
  return absl::OkStatus();
}

void AddCastOps(std::vector<OpDef>* ops) {
  const DTypes int8s = {v1::DT_INT8, v1::DT_UINT8};
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
  ops->push_back(OpBuilder("QuantizeLinear", "saturate(round(x / y_scale) + y_zero_point), per "
                                             "tensor or (opset 13) per 'axis'.")
                     .Input("x", "T1")
                     .Input("y_scale", "S")
                     .OptionalInput("y_zero_point", "T2")
                     .Output("y", "T2")
                     .IntAttr("axis", 1, "Opset 13+.")
                     .Constraint("T1", {v1::DT_FLOAT32, v1::DT_INT32})
                     .Constraint("S", {v1::DT_FLOAT32})
                     .Constraint("T2", int8s)
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(LinearQuantShape)
                     .TypeFn(QuantizeLinearType)
                     .Build());
  ops->push_back(OpBuilder("DequantizeLinear", "(x - x_zero_point) * x_scale as float32, per "
                                               "tensor or (opset 13) per 'axis'.")
                     .Input("x", "T")
                     .Input("x_scale", "S")
                     .OptionalInput("x_zero_point", "T")
                     .Output("y", "S")
                     .IntAttr("axis", 1, "Opset 13+.")
                     .Constraint("T", {v1::DT_INT8, v1::DT_UINT8, v1::DT_INT32})
                     .Constraint("S", {v1::DT_FLOAT32})
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(LinearQuantShape)
                     .Build());
  ops->push_back(OpBuilder("DynamicQuantizeLinear", "Quantizes x to uint8 with the scale and "
                                                    "zero point of its range.")
                     .Input("x", "T1")
                     .Output("y", "T2")
                     .Output("y_scale", "S")
                     .Output("y_zero_point", "T2")
                     .Constraint("T1", {v1::DT_FLOAT32})
                     .Constraint("S", {v1::DT_FLOAT32})
                     .Constraint("T2", {v1::DT_UINT8})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(DynamicQuantizeLinearShape)
                     .Build());
  ops->push_back(OpBuilder("Cast", "Converts elements to the data type given by 'to'.")
                     .Input("input", "T1")
                     .OutputFromAttribute("output", "to")
                     .RequiredAttr("to", v1::ATTR_INT, "Target DataType number.")
                     .IntAttr("saturate", 1, "Float8 saturation (opset 19).")
                     .Constraint("T1", AllTypes())
                     .Fusion(v1::FUSION_ELEMWISE)
                     .ShapeFn(CastShape)
                     .Build());
}

// --- Logic, comparisons, Where, Min/Max/Sum/Mean (kernels in elementwise_logic.cc) -----------

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

void AddLogicOps(std::vector<OpDef>* ops) {
  const DTypes numeric = NumericTypes();
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
  for (const char* name : {"Min", "Max"}) {
    OpBuilder b(name, "Elementwise min/max of all inputs, with broadcasting (opsets < 8: "
                      "equal shapes).");
    ops->push_back(ConsumedInputs(b)
                       .VariadicInput("data_0", "T", 1)
                       .Output(name == std::string("Min") ? "min" : "max", "T")
                       .Constraint("T", numeric)
                       .Fusion(v1::FUSION_BROADCAST)
                       .ShapeFn(MinMaxShape)
                       .Build());
  }
  const std::pair<const char*, DTypes> compare[] = {
      {"Equal", Join(numeric, {v1::DT_BOOL, v1::DT_STRING})},
      {"Less", numeric},
      {"Greater", numeric}};
  for (const auto& [name, types] : compare) {
    OpBuilder b(name, "Elementwise comparison with broadcasting (opsets < 7: B broadcasts to "
                      "A's shape); bool result.");
    ops->push_back(LegacyBroadcastAttrs(b)
                       .Input("A", "T")
                       .Input("B", "T")
                       .Output("C", "T1")
                       .Constraint("T", types)
                       .Constraint("T1", {v1::DT_BOOL})
                       .Fusion(v1::FUSION_BROADCAST)
                       .ShapeFn(BinaryBroadcastShape)
                       .Build());
  }
  ops->push_back(OpBuilder("Where", "X where condition is true, else Y; the three broadcast.")
                     .Input("condition", "B")
                     .Input("X", "T")
                     .Input("Y", "T")
                     .Output("output", "T")
                     .Constraint("B", {v1::DT_BOOL})
                     .Constraint("T", AllTypes())
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(BroadcastAllInputs)
                     .Build());
}

// --- Unary ops (kernels in elementwise_unary.cc) ---------------------------------------------

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

void AddUnaryOps(std::vector<OpDef>* ops) {
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

}  // namespace

OpBuilder& ConsumedInputs(OpBuilder& b) {
  return b.Attr("consumed_inputs", v1::ATTR_INTS, "Opset 1 only; ignored.");
}

void AddElementwiseOps(std::vector<OpDef>* ops) {
  AddArithmeticOps(ops);
  AddCastOps(ops);
  AddLogicOps(ops);
  AddUnaryOps(ops);
}

}  // namespace builtin_internal
}  // namespace graphopt
