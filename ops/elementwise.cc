// Elementwise and broadcasting builtin operators: the basic unary ops, binary arithmetic (Add,
// Sub, Mul, Div, Pow, Mod, BitShift), Min/Max, comparisons, Clip, Where, Cast, Identity and
// Dropout, and the unary and broadcasting helpers the elementwise_*.cc files share.

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Identity and Cast between integer types: same shape, same contents.
absl::Status ShapeAndValueOfInput0(InferenceContext& ctx) {
  if (absl::Status s = SameShapeAsInput0(ctx); !s.ok()) return s;
  if (std::optional<Dims> v = InputDimsValue(ctx, 0)) SetDimsValue(ctx, 0, *std::move(v));
  return absl::OkStatus();
}

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

}  // namespace

absl::Status BinaryBroadcastShape(InferenceContext& ctx) {
  if (OpsetBefore(ctx, 7)) return LegacyBroadcastShape(ctx);
  return BroadcastAllInputs(ctx);
}

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

namespace {

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

}  // namespace

OpBuilder& ConsumedInputs(OpBuilder& b) {
  return b.Attr("consumed_inputs", v1::ATTR_INTS, "Opset 1 only; ignored.");
}

OpBuilder& LegacyBroadcastAttrs(OpBuilder& b) {
  return b.Attr("broadcast", v1::ATTR_INT, "Opsets < 7: 1 lets B broadcast to A's shape.")
      .Attr("axis", v1::ATTR_INT, "Opsets < 7: the axis of A where B's dims start.");
}

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

namespace {

absl::Status CastShape(InferenceContext& ctx) {
  if (absl::Status s = SameShapeAsInput0(ctx); !s.ok()) return s;
  absl::StatusOr<int64_t> to = ctx.GetInt("to");
  if (!to.ok()) return to.status();
  if (IsInteger(static_cast<v1::DataType>(*to)) && IsInteger(ctx.input_type(0).dtype)) {
    if (std::optional<Dims> v = InputDimsValue(ctx, 0)) SetDimsValue(ctx, 0, *std::move(v));
  }
  return absl::OkStatus();
}

// Opsets < 10 give Dropout's mask the data's element type; later ones make it bool.
absl::Status DropoutType(InferenceContext& ctx) {
  if (OpsetBefore(ctx, 10)) ctx.set_output_dtype(1, ctx.input_type(0).dtype);
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

}  // namespace

void AddElementwiseOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes numeric = NumericTypes();
  const DTypes signed_numeric = Join(SignedIntTypes(), floats);
  const std::vector<UnaryOp> unary = {
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
  for (const UnaryOp& u : unary) AddUnary(ops, u, OpBuilder(u.name, u.doc));
  AddUnary(ops, {"LeakyRelu", "", floats, true},
           std::move(OpBuilder("LeakyRelu", "x if x >= 0 else alpha * x, elementwise.")
                         .FloatAttr("alpha", 0.01f, "Slope for x < 0.")));
  AddUnary(ops, {"HardSigmoid", "", floats, true},
           std::move(OpBuilder("HardSigmoid", "max(0, min(1, alpha * x + beta)), elementwise.")
                         .FloatAttr("alpha", 0.2f)
                         .FloatAttr("beta", 0.5f)));

  ops->push_back(OpBuilder("Identity", "Returns its input.")
                     .Input("input", "T")
                     .Output("output", "T")
                     .Constraint("T", AllTypes())
                     .Fusion(v1::FUSION_ELEMWISE)
                     .InPlace(0, 0)
                     .ShapeFn(ShapeAndValueOfInput0)
                     .Build());

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
  ops->push_back(OpBuilder("Cast", "Converts elements to the data type given by 'to'.")
                     .Input("input", "T1")
                     .OutputFromAttribute("output", "to")
                     .RequiredAttr("to", v1::ATTR_INT, "Target DataType number.")
                     .IntAttr("saturate", 1, "Float8 saturation (opset 19).")
                     .Constraint("T1", AllTypes())
                     .Fusion(v1::FUSION_ELEMWISE)
                     .ShapeFn(CastShape)
                     .Build());
  v1::Attribute nondeterministic;
  nondeterministic.set_i(1);
  ops->push_back(OpBuilder("Dropout", "Random dropout with training_mode; identity otherwise.")
                     .Input("data", "T")
                     .OptionalInput("ratio", "T1", "Drop probability (scalar, opset 12+).")
                     .OptionalInput("training_mode", "T2", "Bool scalar (opset 12+).")
                     .Output("output", "T")
                     .OptionalOutput("mask", "T2", "Of type T before opset 10.")
                     .Attr("seed", v1::ATTR_INT, "Random seed.")
                     .Attr("ratio", v1::ATTR_FLOAT, "Drop probability (opset < 12).")
                     .Attr("is_test", v1::ATTR_INT, "Opsets < 7: 0 drops (training).")
                     .Attr("consumed_inputs", v1::ATTR_INTS, "Opset 1 only; ignored.")
                     .Constraint("T", floats)
                     .Constraint("T1", floats)
                     .Constraint("T2", {v1::DT_BOOL})
                     .Fusion(v1::FUSION_OPAQUE)
                     .Extension(kNondeterministicExtension, nondeterministic)
                     .ShapeFn(SameShapeAsInput0)
                     .TypeFn(DropoutType)
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

}  // namespace builtin_internal
}  // namespace graphopt
