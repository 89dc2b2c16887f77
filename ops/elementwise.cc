// Binary arithmetic with broadcasting (Add, Sub, Mul, Div, Pow, Mod, BitShift), with ONNX
// semantics, and the unary and broadcasting helpers the elementwise_*.cc files share; kernels in
// runtime/kernels/elementwise.cc.

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

}  // namespace builtin_internal
}  // namespace graphopt
