// Shape-producing and shape-driven builtin operators: Shape, Constant, ConstantOfShape, Range,
// Expand, Tile, Pad and CumSum.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

absl::Status ShapeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> start = ctx.GetInt("start");
  if (!start.ok()) return start.status();
  if (!x) {
    ctx.set_output_shape(0, UnknownDims(1));
    return absl::OkStatus();
  }
  const int64_t r = static_cast<int64_t>(x->size());
  absl::StatusOr<int64_t> end = ctx.GetInt("end", r);
  if (!end.ok()) return end.status();
  auto clamp = [r](int64_t v) {
    if (v < 0) v += r;
    return std::clamp<int64_t>(v, 0, r);
  };
  const int64_t s = clamp(*start);
  const int64_t e = std::max(s, clamp(*end));
  ctx.set_output_shape(0, Dims{Dim::Known(e - s)});
  SetDimsValue(ctx, 0, Dims(x->begin() + s, x->begin() + e));
  return absl::OkStatus();
}

// The Constant attributes; exactly one is given on a node.
constexpr const char* kConstantAttrs[] = {"value",     "value_float",  "value_floats",
                                          "value_int", "value_ints",   "value_string",
                                          "value_strings"};

absl::StatusOr<const v1::Attribute*> ConstantAttr(const InferenceContext& ctx,
                                                  std::string* name) {
  const v1::Attribute* found = nullptr;
  for (const char* a : kConstantAttrs) {
    const v1::Attribute* v = ctx.attr(a);
    if (v == nullptr) continue;
    if (found != nullptr) {
      return ctx.Error("exactly one value attribute may be given, got '", *name, "' and '", a,
                       "'");
    }
    found = v;
    *name = a;
  }
  if (found == nullptr) {
    return ctx.Error("one of the attributes value, value_float(s), value_int(s), "
                     "value_string(s) is required");
  }
  return found;
}

absl::Status ConstantType(InferenceContext& ctx) {
  std::string name;
  absl::StatusOr<const v1::Attribute*> a = ConstantAttr(ctx, &name);
  if (!a.ok()) return a.status();
  v1::DataType dt = v1::DT_UNDEFINED;
  if (name == "value") {
    if ((*a)->value_case() != v1::Attribute::kT) {
      return ctx.Error("attribute 'value' must be a tensor");
    }
    dt = (*a)->t().dtype();
  } else if (name == "value_float" || name == "value_floats") {
    dt = v1::DT_FLOAT32;
  } else if (name == "value_int" || name == "value_ints") {
    dt = v1::DT_INT64;
  } else {
    dt = v1::DT_STRING;
  }
  ctx.set_output_dtype(0, dt);
  return absl::OkStatus();
}

absl::Status ConstantShape(InferenceContext& ctx) {
  std::string name;
  absl::StatusOr<const v1::Attribute*> found = ConstantAttr(ctx, &name);
  if (!found.ok()) return found.status();
  const v1::Attribute& a = **found;
  if (name == "value") {
    if (a.value_case() != v1::Attribute::kT) return ctx.Error("attribute 'value' must be a tensor");
    const v1::Tensor& t = a.t();
    for (int64_t d : t.dims()) {
      if (d < 0) return ctx.Error("attribute 'value' has a negative dim ", d);
    }
    ctx.set_output_shape(0, ShapeFromDimsList(t));
    if (t.dims_size() <= 1) {
      absl::StatusOr<std::vector<int64_t>> v = TensorToInts(t, kMaxDimsValueElements);
      if (v.ok()) {
        Dims value;
        for (int64_t x : *v) value.push_back(Dim::Known(x));
        SetDimsValue(ctx, 0, std::move(value));
      }
    }
    return absl::OkStatus();
  }
  switch (a.value_case()) {
    case v1::Attribute::kF:
    case v1::Attribute::kS:
      ctx.set_output_shape(0, Dims{});
      return absl::OkStatus();
    case v1::Attribute::kI:
      ctx.set_output_shape(0, Dims{});
      SetDimsValue(ctx, 0, Dims{Dim::Known(a.i())});
      return absl::OkStatus();
    case v1::Attribute::kFloats:
      ctx.set_output_shape(0, Dims{Dim::Known(a.floats().values_size())});
      return absl::OkStatus();
    case v1::Attribute::kStrings:
      ctx.set_output_shape(0, Dims{Dim::Known(a.strings().values_size())});
      return absl::OkStatus();
    case v1::Attribute::kInts: {
      ctx.set_output_shape(0, Dims{Dim::Known(a.ints().values_size())});
      Dims value;
      for (int64_t x : a.ints().values()) value.push_back(Dim::Known(x));
      SetDimsValue(ctx, 0, std::move(value));
      return absl::OkStatus();
    }
    default:
      return ctx.Error("attribute '", name, "' holds a value of the wrong kind");
  }
}

absl::Status ConstantOfShapeType(InferenceContext& ctx) {
  const v1::Attribute* value = ctx.attr("value");
  if (value == nullptr) {
    ctx.set_output_dtype(0, v1::DT_FLOAT32);
    return absl::OkStatus();
  }
  if (value->value_case() != v1::Attribute::kT) {
    return ctx.Error("attribute 'value' must be a tensor");
  }
  ctx.set_output_dtype(0, value->t().dtype());
  return absl::OkStatus();
}

absl::Status ConstantOfShapeShape(InferenceContext& ctx) {
  const v1::Attribute* value = ctx.attr("value");
  std::optional<std::vector<int64_t>> fill;
  if (value != nullptr && value->value_case() == v1::Attribute::kT) {
    std::optional<int64_t> n = NumElements(ShapeFromDimsList(value->t()));
    if (!n || *n != 1) {
      return ctx.Error("attribute 'value' must hold exactly one element, got dims [",
                       absl::StrJoin(value->t().dims(), ","), "]");
    }
    absl::StatusOr<std::vector<int64_t>> v = TensorToInts(value->t(), 1);
    if (v.ok()) fill = *std::move(v);
  }
  std::optional<Dims> target = ShapeOperand(ctx, 0);
  if (!target) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  for (const Dim& d : *target) {
    if (d.is_known() && d.size() < 0) {
      return ctx.Error("input 'input' holds a negative size ", d.size());
    }
  }
  // Small integer fills are shape material too (e.g. ConstantOfShape -> Mul -> Reshape).
  if (fill && target->size() <= 1) {
    std::optional<int64_t> n = NumElements(*target);
    if (n && *n <= kMaxDimsValueElements) SetDimsValue(ctx, 0, Dims(*n, Dim::Known((*fill)[0])));
  }
  ctx.set_output_shape(0, *std::move(target));
  return absl::OkStatus();
}

// A scalar (or one-element) numeric constant as a double, or nullopt.
std::optional<double> ScalarValue(const InferenceContext& ctx, int i) {
  if (std::optional<std::vector<int64_t>> v = InputInts(ctx, i)) {
    if (v->size() == 1) return static_cast<double>((*v)[0]);
    return std::nullopt;
  }
  const v1::Tensor* t = ctx.input_constant(i);
  if (t == nullptr) return std::nullopt;
  const std::string& raw = t->raw_data();
  if (t->dtype() == v1::DT_FLOAT32 && raw.size() == 4) {
    float f;
    std::memcpy(&f, raw.data(), 4);
    return f;
  }
  if (t->dtype() == v1::DT_FLOAT64 && raw.size() == 8) {
    double d;
    std::memcpy(&d, raw.data(), 8);
    return d;
  }
  return std::nullopt;
}

absl::Status RangeShape(InferenceContext& ctx) {
  for (int i = 0; i < 3; ++i) {
    std::optional<Dims> s = InputShape(ctx, i);
    if (s && !s->empty()) {
      return ctx.Error("input ", i, " must be a scalar, got ", ShapeToString(s));
    }
  }
  std::optional<std::vector<int64_t>> start = InputInts(ctx, 0);
  std::optional<std::vector<int64_t>> limit = InputInts(ctx, 1);
  std::optional<std::vector<int64_t>> delta = InputInts(ctx, 2);
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 &&
      delta->size() == 1) {
    const int64_t s = (*start)[0], l = (*limit)[0], d = (*delta)[0];
    if (d == 0) return ctx.Error("input 'delta' is 0");
    std::optional<int64_t> span = CheckedSub(l, s);
    if (!span) {
      ctx.set_output_shape(0, UnknownDims(1));
      return absl::OkStatus();
    }
    int64_t n = 0;
    if ((*span > 0 && d > 0) || (*span < 0 && d < 0)) {
      // ceil(span / d) with span and d of the same sign.
      n = *span / d + (*span % d != 0 ? 1 : 0);
    }
    ctx.set_output_shape(0, Dims{Dim::Known(n)});
    if (n <= kMaxDimsValueElements) {
      Dims value;
      for (int64_t k = 0; k < n; ++k) value.push_back(Dim::Known(s + k * d));
      SetDimsValue(ctx, 0, std::move(value));
    }
    return absl::OkStatus();
  }
  std::optional<double> fs = ScalarValue(ctx, 0);
  std::optional<double> fl = ScalarValue(ctx, 1);
  std::optional<double> fd = ScalarValue(ctx, 2);
  if (fs && fl && fd) {
    if (*fd == 0) return ctx.Error("input 'delta' is 0");
    const double n = std::ceil((*fl - *fs) / *fd);
    if (std::isfinite(n) && n < 9.0e18) {
      ctx.set_output_shape(0, Dims{Dim::Known(n > 0 ? static_cast<int64_t>(n) : 0)});
      return absl::OkStatus();
    }
  }
  ctx.set_output_shape(0, UnknownDims(1));
  return absl::OkStatus();
}

absl::Status ExpandShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> target = ShapeOperand(ctx, 1);
  if (!target) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  for (const Dim& d : *target) {
    if (d.is_known() && d.size() < 0) {
      return ctx.Error("input 'shape' holds a negative size ", d.size());
    }
  }
  absl::StatusOr<std::optional<Dims>> out = BroadcastShapes({x, target});
  if (!out.ok()) return NodeError(ctx, out.status(), "cannot expand: ");
  ctx.set_output_shape(0, *std::move(out));
  return absl::OkStatus();
}

absl::Status TileShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<std::vector<int64_t>> repeats = InputInts(ctx, 1);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (!repeats) {
    ctx.set_output_shape(0, UnknownDims(x->size()));
    return absl::OkStatus();
  }
  if (repeats->size() != x->size()) {
    return ctx.Error("'repeats' ", IntsToString(*repeats), " has ", repeats->size(),
                     " entries but the input ", ShapeToString(x), " has rank ", x->size());
  }
  Dims out;
  for (size_t i = 0; i < x->size(); ++i) {
    const int64_t r = (*repeats)[i];
    const Dim& d = (*x)[i];
    if (r < 0) return ctx.Error("'repeats' entry ", i, " is negative: ", r);
    if (r == 1) {
      out.push_back(d);
    } else if (r == 0) {
      out.push_back(Dim::Known(0));
    } else if (d.is_known()) {
      std::optional<int64_t> p = CheckedMul(d.size(), r);
      out.push_back(p ? Dim::Known(*p) : Dim::Unknown());
    } else {
      out.push_back(Dim::Unknown());
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status PadShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge" && *mode != "wrap") {
    return ctx.Error("attribute 'mode' has unknown value '", *mode, "'");
  }
  // Opset 1 names the attribute 'paddings'.
  absl::StatusOr<IntsOperand> pads =
      IntsFromAttrOrInput(ctx, OpsetBefore(ctx, 2) ? "paddings" : "pads", 1);
  if (!pads.ok()) return pads.status();
  if (!pads->given) return ctx.Error("'pads' is required (input 1, or attribute before opset 11)");
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x->size());
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    std::optional<std::vector<int64_t>> a = InputInts(ctx, 3);
    if (!a) {
      ctx.set_output_shape(0, UnknownDims(x->size()));
      return absl::OkStatus();
    }
    absl::StatusOr<std::vector<int64_t>> n = NormalizeAxes(*a, rank, "input 'axes'");
    if (!n.ok()) return NodeError(ctx, n.status());
    axes = *std::move(n);
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  Dims out = *x;
  if (!pads->values) {
    for (int64_t a : axes) out[a] = Dim::Unknown();
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const std::vector<int64_t>& p = *pads->values;
  if (p.size() != 2 * axes.size()) {
    return ctx.Error("'pads' ", IntsToString(p), " has ", p.size(), " entries, expected ",
                     2 * axes.size());
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    const int64_t begin = p[i];
    const int64_t end = p[i + axes.size()];
    const Dim& d = (*x)[a];
    if (begin == 0 && end == 0) continue;
    if (!d.is_known()) {
      out[a] = Dim::Unknown();
      continue;
    }
    std::optional<int64_t> s = CheckedAdd(d.size(), begin);
    if (s) s = CheckedAdd(*s, end);
    if (!s) {
      out[a] = Dim::Unknown();
    } else if (*s < 0) {
      return ctx.Error("padding axis ", a, " of size ", d.size(), " by ", begin, ", ", end,
                       " gives a negative size");
    } else {
      out[a] = Dim::Known(*s);
    }
  }
  ctx.set_output_shape(0, std::move(out));
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

}  // namespace

void AddShapeOps(std::vector<OpDef>* ops) {
  const DTypes all = AllTypes();
  ops->push_back(OpBuilder("Shape", "The input's shape as a 1-D int64 tensor; opset 15 "
                                    "selects dims [start, end).")
                     .Input("data", "T")
                     .Output("shape", "T1")
                     .IntAttr("start", 0)
                     .Attr("end", v1::ATTR_INT)
                     .Constraint("T", all)
                     .Constraint("T1", {v1::DT_INT64})
                     .IgnoredInput(0)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ShapeShape)
                     .Build());
  ops->push_back(OpBuilder("Constant", "A constant from exactly one of its value attributes.")
                     .Output("output", "T")
                     .Attr("value", v1::ATTR_TENSOR)
                     .Attr("value_float", v1::ATTR_FLOAT)
                     .Attr("value_floats", v1::ATTR_FLOATS)
                     .Attr("value_int", v1::ATTR_INT)
                     .Attr("value_ints", v1::ATTR_INTS)
                     .Attr("value_string", v1::ATTR_STRING)
                     .Attr("value_strings", v1::ATTR_STRINGS)
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ConstantShape)
                     .TypeFn(ConstantType)
                     .Build());
  ops->push_back(OpBuilder("ConstantOfShape", "A tensor of the given shape filled with 'value' "
                                              "(default float32 0).")
                     .Input("input", "T1")
                     .Output("output", "T2")
                     .Attr("value", v1::ATTR_TENSOR, "One-element tensor.")
                     .Constraint("T1", {v1::DT_INT64})
                     .Constraint("T2", Join(NumericTypes(), {v1::DT_BOOL}))
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ConstantOfShapeShape)
                     .TypeFn(ConstantOfShapeType)
                     .Build());
  ops->push_back(OpBuilder("Range", "[start, start + delta, ...) up to limit (exclusive).")
                     .Input("start", "T")
                     .Input("limit", "T")
                     .Input("delta", "T")
                     .Output("output", "T")
                     .Constraint("T", {v1::DT_FLOAT32, v1::DT_FLOAT64, v1::DT_INT16,
                                       v1::DT_INT32, v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(RangeShape)
                     .Build());
  const DTypes index_types = {v1::DT_INT32, v1::DT_INT64};
  ops->push_back(OpBuilder("Expand", "Broadcasts the input with the given shape.")
                     .Input("input", "T")
                     .Input("shape", "Tshape")
                     .Output("output", "T")
                     .Constraint("T", all)
                     .Constraint("Tshape", {v1::DT_INT64})
                     .Fusion(v1::FUSION_BROADCAST)
                     .ShapeFn(ExpandShape)
                     .Build());
  ops->push_back(OpBuilder("Tile", "Repeats the input 'repeats[i]' times along axis i.")
                     .Input("input", "T")
                     .Input("repeats", "T1")
                     .Output("output", "T")
                     .Constraint("T", all)
                     .Constraint("T1", {v1::DT_INT64})
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(TileShape)
                     .Build());
  ops->push_back(OpBuilder("Pad", "Pads each axis by pads[i] before and pads[i + n] after.")
                     .Input("data", "T")
                     .OptionalInput("pads", "Tpads", "Required from opset 11.")
                     .OptionalInput("constant_value", "T")
                     .OptionalInput("axes", "Tind", "Opset 18+.")
                     .Output("output", "T")
                     .StringAttr("mode", "constant", "constant, reflect, edge or wrap.")
                     .Attr("pads", v1::ATTR_INTS, "Opsets 2 to 10 only.")
                     .Attr("paddings", v1::ATTR_INTS, "Opset 1's name for 'pads'.")
                     .Attr("value", v1::ATTR_FLOAT, "Opset < 11 only.")
                     .Constraint("T", Join(NumericTypes(), {v1::DT_BOOL, v1::DT_STRING,
                                                            v1::DT_COMPLEX64,
                                                            v1::DT_COMPLEX128}))
                     .Constraint("Tpads", {v1::DT_INT64})
                     .Constraint("Tind", index_types)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(PadShape)
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
}

}  // namespace builtin_internal
}  // namespace graphopt
