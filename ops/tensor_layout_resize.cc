// Resize, Upsample and Pad with ONNX semantics; kernels in
// runtime/kernels/tensor_layout_resize.cc.

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

// Contents of a constant float32 input of at most 64 elements, or nullopt.
std::optional<std::vector<float>> InputFloats(const InferenceContext& ctx, int i) {
  const v1::Tensor* t = ctx.input_constant(i);
  if (t == nullptr || t->dtype() != v1::DT_FLOAT32) return std::nullopt;
  std::optional<int64_t> n = NumElements(ShapeFromDimsList(*t));
  if (!n || *n > kMaxDimsValueElements || t->raw_data().size() != static_cast<size_t>(*n) * 4) {
    return std::nullopt;
  }
  std::vector<float> out(*n);
  if (*n > 0) std::memcpy(out.data(), t->raw_data().data(), t->raw_data().size());
  return out;
}

// What is known of Resize's scales or sizes input i: absent (or an empty tensor, which counts
// as absent), present with elements, or present of unknown length.
enum class Operand { kAbsent, kGiven, kUnknown };

Operand ResizeOperand(const InferenceContext& ctx, int i) {
  if (!ctx.has_input(i)) return Operand::kAbsent;
  const std::optional<Dims> s = InputShape(ctx, i);
  if (!s || s->size() != 1 || !(*s)[0].is_known()) return Operand::kUnknown;
  return (*s)[0].size() == 0 ? Operand::kAbsent : Operand::kGiven;
}

// floor(in * scale); a dim scaled by 1 stays as it is.
absl::StatusOr<Dim> ScaledDim(const InferenceContext& ctx, const Dim& in, float scale) {
  if (!(scale > 0) || !std::isfinite(scale)) {
    return ctx.Error("scale ", scale, " must be positive and finite");
  }
  if (scale == 1.0f) return in;
  if (!in.is_known()) return Dim::Unknown();
  const double d = std::floor(static_cast<double>(scale) * static_cast<double>(in.size()));
  if (d > 9.0e18) return Dim::Unknown();
  return Dim::Known(static_cast<int64_t>(d));
}

// Output of X ([rank] dims) resized along `axes` by constant `scales` (one per axis), or with
// the sizes of those axes unknown when the scales are not known.
absl::Status ScaledShape(InferenceContext& ctx, const Dims& x, const std::vector<int64_t>& axes,
                         const std::optional<std::vector<float>>& scales) {
  if (scales && scales->size() != axes.size()) {
    return ctx.Error("'scales' has ", scales->size(), " entries for ", axes.size(), " axes of ",
                     ShapeToString(x));
  }
  Dims out = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!scales) {
      out[axes[i]] = Dim::Unknown();
      continue;
    }
    absl::StatusOr<Dim> d = ScaledDim(ctx, x[axes[i]], (*scales)[i]);
    if (!d.ok()) return d.status();
    out[axes[i]] = *std::move(d);
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// Resize: opset 10 takes (X, scales); later opsets (X, roi, scales, sizes), exactly one of
// scales and sizes given (an empty tensor counts as not given); opset 18 may name the axes.
absl::Status ResizeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const bool v10 = OpsetBefore(ctx, 11);
  const int scales_input = v10 ? 1 : 2;
  const int sizes_input = v10 ? -1 : 3;
  const Operand scales = ResizeOperand(ctx, scales_input);
  const Operand sizes = sizes_input >= 0 ? ResizeOperand(ctx, sizes_input) : Operand::kAbsent;
  if (scales == Operand::kGiven && sizes == Operand::kGiven) {
    return ctx.Error("only one of 'scales' and 'sizes' may be given");
  }
  if (scales == Operand::kAbsent && sizes == Operand::kAbsent) {
    return ctx.Error("one of 'scales' and 'sizes' must be given");
  }
  absl::StatusOr<std::string> policy = ctx.GetString("keep_aspect_ratio_policy");
  if (!policy.ok()) return policy.status();
  if (*policy != "stretch" && *policy != "not_larger" && *policy != "not_smaller") {
    return ctx.Error("attribute 'keep_aspect_ratio_policy' has unknown value '", *policy, "'");
  }
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  std::vector<int64_t> axes;
  if (ctx.has_attr("axes")) {
    absl::StatusOr<std::vector<int64_t>> a = ctx.GetInts("axes");
    if (!a.ok()) return a.status();
    absl::StatusOr<std::vector<int64_t>> n =
        NormalizeAxes(*a, static_cast<int64_t>(x->size()), "attribute 'axes'");
    if (!n.ok()) return NodeError(ctx, n.status());
    axes = *std::move(n);
  } else {
    for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (scales == Operand::kAbsent) {
    std::optional<Dims> target = sizes == Operand::kGiven ? ShapeOperand(ctx, sizes_input)
                                                          : std::nullopt;
    if (target && target->size() != axes.size()) {
      return ctx.Error("'sizes' has ", target->size(), " entries for ", axes.size(),
                       " axes of ", ShapeToString(x));
    }
    Dims out = *x;
    for (size_t i = 0; i < axes.size(); ++i) {
      // The other policies scale every axis by one common factor: not worked out here.
      out[axes[i]] = target && *policy == "stretch" ? (*target)[i] : Dim::Unknown();
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  return ScaledShape(ctx, *x, axes,
                     sizes == Operand::kAbsent ? InputFloats(ctx, scales_input) : std::nullopt);
}

// Upsample: 'height_scale'/'width_scale' of a 4-D input (opset 1), the 'scales' attribute
// (opset 7) or input (opset 9).
absl::Status UpsampleShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "nearest" && *mode != "linear" && *mode != "bilinear") {
    return ctx.Error("attribute 'mode' must be nearest, linear or bilinear, got '", *mode, "'");
  }
  std::optional<std::vector<float>> scales;
  if (ctx.has_input(1)) {
    scales = InputFloats(ctx, 1);
  } else if (ctx.has_attr("scales")) {
    const v1::Attribute* a = ctx.attr("scales");
    if (a->value_case() != v1::Attribute::kFloats) {
      return ctx.Error("attribute 'scales' must be a list of floats");
    }
    scales.emplace(a->floats().values().begin(), a->floats().values().end());
  } else if (ctx.has_attr("height_scale") && ctx.has_attr("width_scale")) {
    absl::StatusOr<float> h = ctx.GetFloat("height_scale");
    if (!h.ok()) return h.status();
    absl::StatusOr<float> w = ctx.GetFloat("width_scale");
    if (!w.ok()) return w.status();
    if (x && x->size() != 4) return ctx.Error("input must be 4-D, got ", ShapeToString(x));
    scales = std::vector<float>{1.0f, 1.0f, *h, *w};
  } else {
    return ctx.Error("'scales' is required (input 1 from opset 9, attribute before)");
  }
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  std::vector<int64_t> axes;
  for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  return ScaledShape(ctx, *x, axes, scales);
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

}  // namespace

void AddTensorLayoutResizeOps(std::vector<OpDef>* ops) {
  const DTypes all = AllTypes();
  const DTypes index_types = {v1::DT_INT32, v1::DT_INT64};
  ops->push_back(OpBuilder("Resize", "Resizes X by 'scales' (floor(scale * dim)) or to 'sizes'; "
                                     "opset 10 takes (X, scales).")
                     .Input("X", "T1")
                     .OptionalInput("roi", "T2", "Opset 10: the scales.")
                     .OptionalInput("scales", "T3")
                     .OptionalInput("sizes", "T4")
                     .Output("Y", "T1")
                     .StringAttr("mode", "nearest", "nearest, linear or cubic.")
                     .StringAttr("coordinate_transformation_mode", "half_pixel")
                     .FloatAttr("cubic_coeff_a", -0.75f)
                     .IntAttr("exclude_outside", 0)
                     .FloatAttr("extrapolation_value", 0.0f)
                     .StringAttr("nearest_mode", "round_prefer_floor")
                     .IntAttr("antialias", 0, "Opset 18+.")
                     .Attr("axes", v1::ATTR_INTS, "Opset 18+.")
                     .StringAttr("keep_aspect_ratio_policy", "stretch", "Opset 18+.")
                     .Constraint("T1", all)
                     .Constraint("T2", HalfSingleDouble())
                     .Constraint("T3", {v1::DT_FLOAT32})
                     .Constraint("T4", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ResizeShape)
                     .Build());
  ops->push_back(OpBuilder("Upsample", "Deprecated Resize: floor(scale * dim) per axis.")
                     .Input("X", "T")
                     .OptionalInput("scales", "T1", "Opset 9+.")
                     .Output("Y", "T")
                     .StringAttr("mode", "nearest")
                     .Attr("scales", v1::ATTR_FLOATS, "Opsets 7 and 8.")
                     .Attr("height_scale", v1::ATTR_FLOAT, "Opset 1.")
                     .Attr("width_scale", v1::ATTR_FLOAT, "Opset 1.")
                     .Constraint("T", all)
                     .Constraint("T1", {v1::DT_FLOAT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(UpsampleShape)
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
}

}  // namespace builtin_internal
}  // namespace graphopt
