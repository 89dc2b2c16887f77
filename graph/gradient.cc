#include "graph/gradient.h"

#include <cstring>
#include <utility>

#include "graph/inference.h"

namespace graphopt {

const v1::Attribute* GradientContext::attr(absl::string_view name) const {
  auto it = node().attributes.find(std::string(name));
  if (it != node().attributes.end()) return &it->second;
  const v1::AttributeSpec* spec = op().attribute_spec(name);
  if (spec != nullptr && spec->has_default_value()) return &spec->default_value();
  return nullptr;
}

namespace {

absl::Status KindError(const GradientContext& ctx, absl::string_view name,
                       const v1::Attribute& a, absl::string_view want) {
  return ctx.Error("attribute '", name, "' holds ", AttributeKindName(a), ", expected ", want);
}

}  // namespace

absl::StatusOr<int64_t> GradientContext::GetInt(absl::string_view name, int64_t fallback) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return fallback;
  if (a->value_case() == v1::Attribute::kI) return a->i();
  if (a->value_case() == v1::Attribute::kDtype) return static_cast<int64_t>(a->dtype());
  return KindError(*this, name, *a, "int");
}

absl::StatusOr<float> GradientContext::GetFloat(absl::string_view name, float fallback) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return fallback;
  if (a->value_case() == v1::Attribute::kF) return a->f();
  return KindError(*this, name, *a, "float");
}

absl::StatusOr<std::string> GradientContext::GetString(absl::string_view name,
                                                       absl::string_view fallback) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return std::string(fallback);
  if (a->value_case() == v1::Attribute::kS) return a->s();
  return KindError(*this, name, *a, "string");
}

absl::StatusOr<std::vector<int64_t>> GradientContext::GetInts(
    absl::string_view name, std::vector<int64_t> fallback) const {
  const v1::Attribute* a = attr(name);
  if (a == nullptr) return fallback;
  if (a->value_case() == v1::Attribute::kInts) {
    return std::vector<int64_t>(a->ints().values().begin(), a->ints().values().end());
  }
  return KindError(*this, name, *a, "ints");
}

absl::StatusOr<ValueId> GradientContext::Emit1(absl::string_view op_type,
                                               absl::Span<const ValueId> inputs,
                                               AttributeMap attributes,
                                               absl::string_view domain) {
  absl::StatusOr<std::vector<ValueId>> out = Emit(op_type, inputs, std::move(attributes), 1,
                                                  domain);
  if (!out.ok()) return out.status();
  return (*out)[0];
}

v1::Attribute IntAttr(int64_t value) {
  v1::Attribute a;
  a.set_i(value);
  return a;
}

v1::Attribute FloatAttr(float value) {
  v1::Attribute a;
  a.set_f(value);
  return a;
}

v1::Attribute StringAttr(absl::string_view value) {
  v1::Attribute a;
  a.set_s(std::string(value));
  return a;
}

v1::Attribute IntsAttr(absl::Span<const int64_t> values) {
  v1::Attribute a;
  for (int64_t v : values) a.mutable_ints()->add_values(v);
  return a;
}

namespace {

template <typename T>
void AppendRaw(std::string* raw, T value) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  raw->append(bytes, sizeof(T));
}

// IEEE half and bfloat16 from a float, rounding to nearest even (0, 1, -1 and small integers,
// the values gradients use, are exact).
uint16_t ToBfloat16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

uint16_t ToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const int32_t exponent = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000;
    const int shift = 14 - exponent;
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t mid = 1u << (shift - 1);
    if (rest > mid || (rest == mid && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return static_cast<uint16_t>(half);
}

}  // namespace

ValueId ScalarConstant(GradientContext& ctx, double value, v1::DataType dtype) {
  v1::Tensor t;
  t.set_dtype(dtype);
  std::string raw;
  switch (dtype) {
    case v1::DT_FLOAT32: AppendRaw(&raw, static_cast<float>(value)); break;
    case v1::DT_FLOAT64: AppendRaw(&raw, value); break;
    case v1::DT_FLOAT16: AppendRaw(&raw, ToHalf(static_cast<float>(value))); break;
    case v1::DT_BFLOAT16: AppendRaw(&raw, ToBfloat16(static_cast<float>(value))); break;
    case v1::DT_INT8: AppendRaw(&raw, static_cast<int8_t>(value)); break;
    case v1::DT_UINT8: AppendRaw(&raw, static_cast<uint8_t>(value)); break;
    case v1::DT_INT16: AppendRaw(&raw, static_cast<int16_t>(value)); break;
    case v1::DT_UINT16: AppendRaw(&raw, static_cast<uint16_t>(value)); break;
    case v1::DT_INT32: AppendRaw(&raw, static_cast<int32_t>(value)); break;
    case v1::DT_UINT32: AppendRaw(&raw, static_cast<uint32_t>(value)); break;
    case v1::DT_UINT64: AppendRaw(&raw, static_cast<uint64_t>(value)); break;
    case v1::DT_BOOL: AppendRaw(&raw, static_cast<uint8_t>(value != 0)); break;
    default:
      t.set_dtype(v1::DT_INT64);
      AppendRaw(&raw, static_cast<int64_t>(value));
      if (dtype == v1::DT_INT64) break;
      // Callers pass the element type of a value they differentiate; the pass only
      // differentiates floating-point values, so another type here is a caller's bug. An int64
      // constant then makes the next Emit fail with a type error naming the node.
      break;
  }
  t.set_raw_data(std::move(raw));
  return ctx.AddConstant(std::move(t));
}

ValueId Int64Constant(GradientContext& ctx, absl::Span<const int64_t> values) {
  v1::Tensor t;
  t.set_dtype(v1::DT_INT64);
  t.add_dims(static_cast<int64_t>(values.size()));
  std::string raw;
  raw.reserve(values.size() * 8);
  for (int64_t v : values) AppendRaw(&raw, v);
  t.set_raw_data(std::move(raw));
  return ctx.AddConstant(std::move(t));
}

absl::StatusOr<ValueId> ShapeOf(GradientContext& ctx, ValueId x) {
  return ctx.Emit1("Shape", {x});
}

absl::StatusOr<ValueId> FilledLike(GradientContext& ctx, ValueId like, double value) {
  const ValueId scalar = ScalarConstant(ctx, value, ctx.dtype(like));
  const std::optional<Dims>& shape = ctx.shape(like);
  if (shape && shape->empty()) return scalar;
  std::vector<int64_t> known;
  bool all_known = shape.has_value();
  if (all_known) {
    for (const Dim& d : *shape) {
      if (!d.is_known()) {
        all_known = false;
        break;
      }
      known.push_back(d.size());
    }
  }
  const ValueId dims = all_known ? Int64Constant(ctx, known) : ValueId();
  if (all_known) return ctx.Emit1("Expand", {scalar, dims});
  absl::StatusOr<ValueId> s = ShapeOf(ctx, like);
  if (!s.ok()) return s.status();
  return ctx.Emit1("Expand", {scalar, *s});
}

absl::StatusOr<ValueId> ReduceSumAxes(GradientContext& ctx, ValueId x,
                                      absl::Span<const int64_t> axes, bool keepdims) {
  AttributeMap attrs;
  attrs["keepdims"] = IntAttr(keepdims ? 1 : 0);
  const int64_t opset = ctx.opset_version();
  if (opset != 0 && opset < 13) {
    attrs["axes"] = IntsAttr(axes);
    return ctx.Emit1("ReduceSum", {x}, std::move(attrs));
  }
  return ctx.Emit1("ReduceSum", {x, Int64Constant(ctx, axes)}, std::move(attrs));
}

absl::StatusOr<ValueId> UnsqueezeAxes(GradientContext& ctx, ValueId x,
                                      absl::Span<const int64_t> axes) {
  const int64_t opset = ctx.opset_version();
  if (opset != 0 && opset < 13) {
    AttributeMap attrs;
    attrs["axes"] = IntsAttr(axes);
    return ctx.Emit1("Unsqueeze", {x}, std::move(attrs));
  }
  return ctx.Emit1("Unsqueeze", {x, Int64Constant(ctx, axes)});
}

absl::StatusOr<ValueId> SqueezeAxes(GradientContext& ctx, ValueId x,
                                    absl::Span<const int64_t> axes) {
  const int64_t opset = ctx.opset_version();
  if (opset != 0 && opset < 13) {
    AttributeMap attrs;
    attrs["axes"] = IntsAttr(axes);
    return ctx.Emit1("Squeeze", {x}, std::move(attrs));
  }
  return ctx.Emit1("Squeeze", {x, Int64Constant(ctx, axes)});
}

absl::StatusOr<ValueId> ReshapeLike(GradientContext& ctx, ValueId x, ValueId like) {
  const std::optional<Dims>& shape = ctx.shape(like);
  if (shape) {
    std::vector<int64_t> known;
    for (const Dim& d : *shape) {
      if (!d.is_known()) break;
      known.push_back(d.size());
    }
    if (known.size() == shape->size()) return ctx.Emit1("Reshape", {x, Int64Constant(ctx, known)});
  }
  absl::StatusOr<ValueId> s = ShapeOf(ctx, like);
  if (!s.ok()) return s.status();
  return ctx.Emit1("Reshape", {x, *s});
}

absl::StatusOr<ValueId> SumToShape(GradientContext& ctx, ValueId grad, ValueId like) {
  const std::optional<Dims>& from = ctx.shape(grad);
  const std::optional<Dims>& to = ctx.shape(like);
  if (from && to && from->size() >= to->size()) {
    const size_t lead = from->size() - to->size();
    std::vector<int64_t> axes;
    bool static_axes = true;
    for (size_t i = 0; i < from->size(); ++i) {
      if (i < lead) {
        axes.push_back(static_cast<int64_t>(i));
        continue;
      }
      const Dim& f = (*from)[i];
      const Dim& t = (*to)[i - lead];
      if (Dim::SameSize(f, t)) continue;
      if (t.is_known() && t.size() == 1) {
        axes.push_back(static_cast<int64_t>(i));
        continue;
      }
      static_axes = false;  // an unknown dim: broadcast or not is decided at run time
      break;
    }
    if (static_axes) {
      if (axes.empty()) return grad;
      // Reducing the leading axes without keepdims and the others with it would need two ops;
      // one ReduceSum with keepdims and a Reshape to `like` gives the same elements.
      absl::StatusOr<ValueId> sum = ReduceSumAxes(ctx, grad, axes, /*keepdims=*/true);
      if (!sum.ok()) return sum.status();
      if (lead == 0) return *sum;
      return ReshapeLike(ctx, *sum, like);
    }
  }
  absl::StatusOr<ValueId> s = ShapeOf(ctx, like);
  if (!s.ok()) return s.status();
  return ctx.Emit1("SumToShape", {grad, *s}, {}, kGraphoptDomain);
}

}  // namespace graphopt
