// Shape-producing and shape-changing builtin operators with ONNX semantics: Shape, Size,
// Constant, ConstantOfShape, Range, Expand, Tile, Flatten, Reshape, Squeeze, Unsqueeze, EyeLike,
// OneHot, Trilu, CumSum and Dropout; kernels in runtime/kernels/tensor_shape.cc and
// tensor_shape_gen.cc.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
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

absl::Status FlattenShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> axis = ctx.GetInt("axis");
  if (!axis.ok()) return axis.status();
  if (!x) {
    ctx.set_output_shape(0, UnknownDims(2));
    return absl::OkStatus();
  }
  const int64_t r = static_cast<int64_t>(x->size());
  if (*axis < -r || *axis > r) {
    return ctx.Error("attribute 'axis' value ", *axis, " is out of range for rank ", r,
                     " (expected [", -r, ", ", r, "])");
  }
  const size_t a = static_cast<size_t>(*axis < 0 ? *axis + r : *axis);
  ctx.set_output_shape(0, Dims{DimProduct(*x, 0, a), DimProduct(*x, a, x->size())});
  return absl::OkStatus();
}

absl::Status ReshapeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> allowzero = ctx.GetInt("allowzero");
  if (!allowzero.ok()) return allowzero.status();
  std::optional<Dims> target;
  if (ctx.has_input(1)) {
    target = ShapeOperand(ctx, 1);
  } else if (ctx.has_attr("shape")) {  // opset < 5
    absl::StatusOr<std::vector<int64_t>> v = ctx.GetInts("shape");
    if (!v.ok()) return v.status();
    target.emplace();
    for (int64_t d : *v) target->push_back(Dim::Known(d));
  } else {
    return ctx.Error("the target shape is missing (input 'shape')");
  }
  if (!target) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  absl::StatusOr<Dims> out = ReshapeOutputDims(x, *target, *allowzero != 0);
  if (!out.ok()) return NodeError(ctx, out.status());
  ctx.set_output_shape(0, *std::move(out));
  ForwardDimsValue(ctx);
  return absl::OkStatus();
}

absl::Status SqueezeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<IntsOperand> axes = IntsFromAttrOrInput(ctx, "axes", 1);
  if (!axes.ok()) return axes.status();
  const char* what = ctx.has_input(1) ? "input 'axes'" : "attribute 'axes'";
  if (!x || (axes->given && !axes->values)) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  Dims out;
  if (axes->given && !axes->values->empty()) {
    absl::StatusOr<std::vector<int64_t>> n =
        NormalizeAxes(*axes->values, static_cast<int64_t>(x->size()), what);
    if (!n.ok()) return NodeError(ctx, n.status());
    std::vector<bool> remove(x->size(), false);
    for (int64_t a : *n) {
      const Dim& d = (*x)[a];
      if (d.is_known() && d.size() != 1) {
        return ctx.Error("cannot squeeze axis ", a, " of size ", d.size(), " in ",
                         ShapeToString(x));
      }
      remove[a] = true;
    }
    for (size_t i = 0; i < x->size(); ++i) {
      if (!remove[i]) out.push_back((*x)[i]);
    }
  } else {
    for (const Dim& d : *x) {
      if (!d.is_known()) {  // may or may not be 1
        ctx.set_output_shape(0, std::nullopt);
        return absl::OkStatus();
      }
      if (d.size() != 1) out.push_back(d);
    }
  }
  ctx.set_output_shape(0, std::move(out));
  ForwardDimsValue(ctx);
  return absl::OkStatus();
}

absl::Status UnsqueezeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<IntsOperand> axes = IntsFromAttrOrInput(ctx, "axes", 1);
  if (!axes.ok()) return axes.status();
  if (!axes->given) return ctx.Error("'axes' is required (input 1, or attribute before opset 13)");
  const char* what = ctx.has_input(1) ? "input 'axes'" : "attribute 'axes'";
  if (!x || !axes->values) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const int64_t out_rank = static_cast<int64_t>(x->size() + axes->values->size());
  absl::StatusOr<std::vector<int64_t>> n = NormalizeAxes(*axes->values, out_rank, what);
  if (!n.ok()) return NodeError(ctx, n.status());
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : *n) inserted[a] = true;
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    out.push_back(inserted[i] ? Dim::Known(1) : (*x)[next++]);
  }
  ctx.set_output_shape(0, std::move(out));
  ForwardDimsValue(ctx);
  return absl::OkStatus();
}

// OneHot: the indices' shape with a 'depth'-sized axis inserted at 'axis'.
absl::Status OneHotShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScalarInput(ctx, 1, "depth", true); !s.ok()) return s;
  if (std::optional<Dims> values = InputShape(ctx, 2)) {
    if (values->size() != 1 || !MergeEqualDims((*values)[0], Dim::Known(2)).ok()) {
      return ctx.Error("input values must hold [off_value, on_value], got shape ",
                       ShapeToString(values));
    }
  }
  const std::optional<Dims> indices = InputShape(ctx, 0);
  absl::StatusOr<int64_t> axis_attr = ctx.GetInt("axis");
  if (!axis_attr.ok()) return axis_attr.status();
  if (!indices) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const int64_t out_rank = static_cast<int64_t>(indices->size()) + 1;
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, out_rank, "attribute 'axis'");
  if (!axis.ok()) return NodeError(ctx, axis.status());
  Dim depth = Dim::Unknown();
  if (std::optional<int64_t> d = ScalarInputInt(ctx, 1)) {
    if (*d < 1) return ctx.Error("input depth must be positive, got ", *d);
    depth = Dim::Known(*d);
  }
  Dims out = *indices;
  out.insert(out.begin() + *axis, depth);
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status TriluShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() < 2) return ctx.Error("input must have rank >= 2, got ", ShapeToString(x));
  if (absl::Status s = CheckScalarInput(ctx, 1, "k", false); !s.ok()) return s;
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// Size: a scalar holding the element count (kept as the output's contents).
absl::Status SizeShape(InferenceContext& ctx) {
  ctx.set_output_shape(0, Dims{});
  if (std::optional<Dims> x = InputShape(ctx, 0)) {
    SetDimsValue(ctx, 0, Dims{DimProduct(*x, 0, x->size())});
  }
  return absl::OkStatus();
}

absl::Status EyeLikeType(InferenceContext& ctx) {
  return OutputDTypeFromAttribute(ctx, 0, "dtype", ctx.input_type(0).dtype);
}

absl::Status EyeLikeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() != 2) return ctx.Error("input must be 2-D, got ", ShapeToString(x));
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// Opsets < 10 give Dropout's mask the data's element type; later ones make it bool.
absl::Status DropoutType(InferenceContext& ctx) {
  if (OpsetBefore(ctx, 10)) ctx.set_output_dtype(1, ctx.input_type(0).dtype);
  return absl::OkStatus();
}

}  // namespace

void AddTensorShapeOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes all = AllTypes();
  const DTypes numeric_no_bf16 = Join(IntTypes(), HalfSingleDouble());
  const DTypes eye_types = Join(Join(IntTypes(), HalfSingleDouble()), {v1::DT_BOOL});
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
  ops->push_back(OpBuilder("Flatten", "Reshapes to 2-D: [prod(dims[:axis]), prod(dims[axis:])].")
                     .Input("input", "T")
                     .Output("output", "T")
                     .IntAttr("axis", 1)
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .InPlace(0, 0)
                     .ShapeFn(FlattenShape)
                     .Build());
  ops->push_back(OpBuilder("Reshape", "Reshape; 0 copies the input dim (unless allowzero), -1 "
                                      "is inferred.")
                     .Input("data", "T")
                     .OptionalInput("shape", "Tshape", "1-D int64 (required from opset 5).")
                     .Output("reshaped", "T")
                     .IntAttr("allowzero", 0)
                     .Attr("shape", v1::ATTR_INTS, "Opset < 5 only.")
                     .Attr("consumed_inputs", v1::ATTR_INTS, "Opset 1 only; ignored.")
                     .Constraint("T", all)
                     .Constraint("Tshape", {v1::DT_INT64})
                     .Fusion(v1::FUSION_INJECTIVE)
                     .InPlace(0, 0)
                     .ShapeFn(ReshapeShape)
                     .Build());
  ops->push_back(OpBuilder("Squeeze", "Removes size-1 axes ('axes': attribute before opset "
                                      "13, input after; all size-1 axes when absent).")
                     .Input("data", "T")
                     .OptionalInput("axes", "Taxes")
                     .Output("squeezed", "T")
                     .Attr("axes", v1::ATTR_INTS, "Opset < 13 only.")
                     .Constraint("T", all)
                     .Constraint("Taxes", {v1::DT_INT64})
                     .Fusion(v1::FUSION_INJECTIVE)
                     .InPlace(0, 0)
                     .ShapeFn(SqueezeShape)
                     .Build());
  ops->push_back(OpBuilder("Unsqueeze", "Inserts size-1 axes at 'axes' (of the output).")
                     .Input("data", "T")
                     .OptionalInput("axes", "Taxes", "Required from opset 13.")
                     .Output("expanded", "T")
                     .Attr("axes", v1::ATTR_INTS, "Opset < 13 only.")
                     .Constraint("T", all)
                     .Constraint("Taxes", {v1::DT_INT64})
                     .Fusion(v1::FUSION_INJECTIVE)
                     .InPlace(0, 0)
                     .ShapeFn(UnsqueezeShape)
                     .Build());
  ops->push_back(OpBuilder("OneHot", "One-hot encoding of indices with 'depth' classes inserted "
                                     "at 'axis'; values = [off, on].")
                     .Input("indices", "T1")
                     .Input("depth", "T2")
                     .Input("values", "T3")
                     .Output("output", "T3")
                     .IntAttr("axis", -1)
                     .Constraint("T1", numeric_no_bf16)
                     .Constraint("T2", numeric_no_bf16)
                     .Constraint("T3", all)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(OneHotShape)
                     .Build());
  ops->push_back(OpBuilder("Trilu", "Upper (or lower) triangle of the last two dims from "
                                    "diagonal k.")
                     .Input("input", "T")
                     .OptionalInput("k", "I")
                     .Output("output", "T")
                     .IntAttr("upper", 1)
                     .Constraint("T", all)
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(TriluShape)
                     .Build());
  ops->push_back(OpBuilder("Size", "The input's element count as an int64 scalar.")
                     .Input("data", "T")
                     .Output("size", "T1")
                     .Constraint("T", all)
                     .Constraint("T1", {v1::DT_INT64})
                     .IgnoredInput(0)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SizeShape)
                     .Build());
  ops->push_back(OpBuilder("EyeLike", "A 2-D tensor of the input's shape with ones on diagonal "
                                      "k; element type 'dtype' or the input's.")
                     .Input("input", "T1")
                     .Output("output", "T2")
                     .Attr("dtype", v1::ATTR_INT)
                     .IntAttr("k", 0)
                     .Constraint("T1", eye_types)
                     .Constraint("T2", eye_types)
                     .IgnoredInput(0)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(EyeLikeShape)
                     .TypeFn(EyeLikeType)
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
}

}  // namespace builtin_internal
}  // namespace graphopt
