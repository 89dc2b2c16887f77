// Indexing and layout builtin operators with ONNX semantics: GatherElements, GatherND, Scatter,
// ScatterElements, ScatterND, Compress, NonZero, Unique, OneHot, Trilu, ReverseSequence,
// DepthToSpace, SpaceToDepth, Size, EyeLike, Resize, Upsample and TopK. Sizes that depend on the data
// (NonZero, Unique, Compress without a constant condition) are unknown.

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Normalised 'axis' attribute against `rank`.
absl::StatusOr<int64_t> AxisAttr(const InferenceContext& ctx, int64_t rank) {
  absl::StatusOr<int64_t> axis = ctx.GetInt("axis");
  if (!axis.ok()) return axis.status();
  absl::StatusOr<int64_t> n = NormalizeAxis(*axis, rank, "attribute 'axis'");
  if (!n.ok()) return NodeError(ctx, n.status());
  return n;
}

// INVALID_ARGUMENT unless 'reduction' is one of ScatterElements' and ScatterND's.
absl::Status CheckScatterReduction(const InferenceContext& ctx) {
  if (!ctx.has_attr("reduction")) return absl::OkStatus();
  absl::StatusOr<std::string> r = ctx.GetString("reduction");
  if (!r.ok()) return r.status();
  if (*r != "none" && *r != "add" && *r != "mul" && *r != "max" && *r != "min") {
    return ctx.Error("attribute 'reduction' must be none, add, mul, max or min, got '", *r, "'");
  }
  return absl::OkStatus();
}

// GatherElements: the indices' shape; data and indices have one rank.
absl::Status GatherElementsShape(InferenceContext& ctx) {
  const std::optional<Dims> data = InputShape(ctx, 0);
  const std::optional<Dims> indices = InputShape(ctx, 1);
  const std::optional<Dims>& ranked = data ? data : indices;
  if (ranked) {
    if (ranked->empty()) return ctx.Error("inputs must have rank >= 1");
    if (absl::StatusOr<int64_t> a = AxisAttr(ctx, ranked->size()); !a.ok()) return a.status();
  }
  if (data && indices && data->size() != indices->size()) {
    return ctx.Error("input indices ", ShapeToString(indices), " must have the rank of data ",
                     ShapeToString(data));
  }
  ctx.set_output_shape(0, indices);
  return absl::OkStatus();
}

// Scatter and ScatterElements: data's shape; indices and updates of one shape and data's rank.
absl::Status ScatterElementsShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScatterReduction(ctx); !s.ok()) return s;
  const std::optional<Dims> data = InputShape(ctx, 0);
  const std::optional<Dims> indices = InputShape(ctx, 1);
  const std::optional<Dims> updates = InputShape(ctx, 2);
  if (data) {
    if (data->empty()) return ctx.Error("input data must have rank >= 1");
    if (absl::StatusOr<int64_t> a = AxisAttr(ctx, data->size()); !a.ok()) return a.status();
  }
  for (const std::optional<Dims>* s : {&indices, &updates}) {
    if (data && *s && (*s)->size() != data->size()) {
      return ctx.Error("inputs indices ", ShapeToString(indices), " and updates ",
                       ShapeToString(updates), " must have the rank of data ",
                       ShapeToString(data));
    }
  }
  bool same = !indices || !updates || indices->size() == updates->size();
  for (size_t i = 0; same && indices && updates && i < indices->size(); ++i) {
    same = MergeEqualDims((*indices)[i], (*updates)[i]).ok();
  }
  if (!same) {
    return ctx.Error("inputs indices ", ShapeToString(indices), " and updates ",
                     ShapeToString(updates), " must have one shape");
  }
  ctx.set_output_shape(0, data);
  return absl::OkStatus();
}

// GatherND: indices[:-1] + data[batch_dims + indices[-1]:].
absl::Status GatherNdShape(InferenceContext& ctx) {
  const std::optional<Dims> data = InputShape(ctx, 0);
  const std::optional<Dims> indices = InputShape(ctx, 1);
  absl::StatusOr<int64_t> batch_dims = ctx.GetInt("batch_dims");
  if (!batch_dims.ok()) return batch_dims.status();
  if (data && data->empty()) return ctx.Error("input data must have rank >= 1");
  if (indices && indices->empty()) return ctx.Error("input indices must have rank >= 1");
  const int64_t b = *batch_dims;
  if (b < 0 || (data && b >= static_cast<int64_t>(data->size())) ||
      (indices && b >= static_cast<int64_t>(indices->size()))) {
    return ctx.Error("attribute 'batch_dims' ", b, " must be in [0, min(rank(data), "
                     "rank(indices)))");
  }
  if (!data || !indices || !indices->back().is_known()) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const int64_t last = indices->back().size();
  if (last < 1 || last > static_cast<int64_t>(data->size()) - b) {
    return ctx.Error("input indices ", ShapeToString(indices), " index ", last,
                     " dims, but data ", ShapeToString(data), " has ", data->size() - b,
                     " after the ", b, " batch dims");
  }
  Dims out(indices->begin(), indices->end() - 1);
  for (int64_t i = 0; i < b; ++i) {
    absl::StatusOr<Dim> merged = MergeEqualDims((*data)[i], (*indices)[i]);
    if (!merged.ok()) {
      return ctx.Error("batch dim ", i, " differs between data ", ShapeToString(data),
                       " and indices ", ShapeToString(indices));
    }
    out[i] = *std::move(merged);
  }
  out.insert(out.end(), data->begin() + b + last, data->end());
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// ScatterND: data's shape; updates are indices[:-1] + data[indices[-1]:].
absl::Status ScatterNdShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScatterReduction(ctx); !s.ok()) return s;
  const std::optional<Dims> data = InputShape(ctx, 0);
  const std::optional<Dims> indices = InputShape(ctx, 1);
  const std::optional<Dims> updates = InputShape(ctx, 2);
  if (indices && indices->empty()) return ctx.Error("input indices must have rank >= 1");
  if (data && indices && updates && indices->back().is_known()) {
    const int64_t last = indices->back().size();
    const size_t expected_rank = indices->size() - 1 + data->size() - last;
    bool ok = last >= 0 && last <= static_cast<int64_t>(data->size()) &&
              updates->size() == expected_rank;
    for (size_t i = 0; ok && i < updates->size(); ++i) {
      const Dim& want = i + 1 < indices->size() ? (*indices)[i]
                                                : (*data)[last + i - (indices->size() - 1)];
      ok = MergeEqualDims(want, (*updates)[i]).ok();
    }
    if (!ok) {
      return ctx.Error("input updates ", ShapeToString(updates), " does not fit data ",
                       ShapeToString(data), " and indices ", ShapeToString(indices),
                       " (expected indices[:-1] + data[indices[-1]:])");
    }
  }
  ctx.set_output_shape(0, data);
  return absl::OkStatus();
}

// The number of true elements of a constant bool tensor of at most `limit` elements.
std::optional<int64_t> CountTrue(const v1::Tensor* t, int64_t limit) {
  if (t == nullptr || t->dtype() != v1::DT_BOOL) return std::nullopt;
  std::optional<int64_t> n = NumElements(ShapeFromDimsList(*t));
  if (!n || *n > limit || static_cast<int64_t>(t->raw_data().size()) != *n) return std::nullopt;
  int64_t count = 0;
  for (char c : t->raw_data()) count += c != 0;
  return count;
}

// Compress: the slices (or, without 'axis', flattened elements) where the 1-D condition holds;
// the count is known only for a constant condition.
absl::Status CompressShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> cond = InputShape(ctx, 1);
  if (cond && cond->size() != 1) {
    return ctx.Error("input condition must be 1-D, got ", ShapeToString(cond));
  }
  const bool has_axis = ctx.node().attributes.contains("axis");
  Dim length = has_axis || !x ? Dim::Unknown() : DimProduct(*x, 0, x->size());
  int64_t axis = 0;
  if (has_axis && x) {
    if (x->empty()) return ctx.Error("input must have rank >= 1 with 'axis'");
    absl::StatusOr<int64_t> a = AxisAttr(ctx, x->size());
    if (!a.ok()) return a.status();
    axis = *a;
    length = (*x)[axis];
  }
  Dim selected = Dim::Unknown();
  // A condition longer than the axis selects from the axis only where the runtime allows it;
  // count only when it is not longer.
  if (cond && (*cond)[0].is_known() && length.is_known() && (*cond)[0].size() <= length.size()) {
    if (std::optional<int64_t> n = CountTrue(ctx.input_constant(1), 1 << 20)) {
      selected = Dim::Known(*n);
    }
  }
  if (!has_axis) {
    ctx.set_output_shape(0, Dims{selected});
  } else if (!x) {
    ctx.set_output_shape(0, std::nullopt);
  } else {
    Dims out = *x;
    out[axis] = selected;
    ctx.set_output_shape(0, std::move(out));
  }
  return absl::OkStatus();
}

// NonZero: [rank, number of non-zero elements (unknown)].
absl::Status NonZeroShape(InferenceContext& ctx) {
  const std::optional<int> rank = ctx.input_rank(0);
  ctx.set_output_shape(0, Dims{rank ? Dim::Known(*rank) : Dim::Unknown(), Dim::Unknown()});
  return absl::OkStatus();
}

// Unique: how many distinct values (or slices along 'axis') there are is unknown; the inverse
// indices have one entry per element (or slice) of X.
absl::Status UniqueShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> sorted = ctx.GetInt("sorted");
  if (!sorted.ok()) return sorted.status();
  if (*sorted != 0 && *sorted != 1) {
    return ctx.Error("attribute 'sorted' must be 0 or 1, got ", *sorted);
  }
  Dim per_input = Dim::Unknown();
  if (!ctx.node().attributes.contains("axis")) {
    ctx.set_output_shape(0, UnknownDims(1));
    if (x) per_input = DimProduct(*x, 0, x->size());
  } else if (x) {
    if (x->empty()) return ctx.Error("input X must have rank >= 1 with 'axis'");
    absl::StatusOr<int64_t> axis = AxisAttr(ctx, x->size());
    if (!axis.ok()) return axis.status();
    Dims y = *x;
    y[*axis] = Dim::Unknown();
    per_input = (*x)[*axis];
    ctx.set_output_shape(0, std::move(y));
  } else {
    ctx.set_output_shape(0, std::nullopt);
  }
  ctx.set_output_shape(1, UnknownDims(1));
  ctx.set_output_shape(2, Dims{per_input});
  ctx.set_output_shape(3, UnknownDims(1));
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

absl::Status ReverseSequenceShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> batch_axis = ctx.GetInt("batch_axis");
  if (!batch_axis.ok()) return batch_axis.status();
  absl::StatusOr<int64_t> time_axis = ctx.GetInt("time_axis");
  if (!time_axis.ok()) return time_axis.status();
  if ((*batch_axis != 0 && *batch_axis != 1) || (*time_axis != 0 && *time_axis != 1) ||
      *batch_axis == *time_axis) {
    return ctx.Error("attributes 'batch_axis' ", *batch_axis, " and 'time_axis' ", *time_axis,
                     " must be 0 and 1 in some order");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> lens = InputShape(ctx, 1);
  if (x && x->size() < 2) return ctx.Error("input must have rank >= 2, got ", ShapeToString(x));
  if (lens && (lens->size() != 1 ||
               (x && !MergeEqualDims((*lens)[0], (*x)[*batch_axis]).ok()))) {
    return ctx.Error("input sequence_lens ", ShapeToString(lens),
                     " must be 1-D of the batch size of ", ShapeToString(x));
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// `d` times `factor` (or divided by it, which must be exact for a known size).
absl::StatusOr<Dim> ScaleDim(const InferenceContext& ctx, const Dim& d, int64_t factor,
                             bool divide, absl::string_view what) {
  if (factor == 1) return d;
  if (!d.is_known()) return Dim::Unknown();
  if (divide) {
    if (d.size() % factor != 0) {
      return ctx.Error(what, " ", d.size(), " is not divisible by ", factor);
    }
    return Dim::Known(d.size() / factor);
  }
  std::optional<int64_t> p = CheckedMul(d.size(), factor);
  return p ? Dim::Known(*p) : Dim::Unknown();
}

// DepthToSpace ([N, C, H, W] -> [N, C / b^2, H * b, W * b]) and SpaceToDepth (the inverse).
ShapeInferenceFn BlockShapeFn(bool depth_to_space) {
  return [depth_to_space](InferenceContext& ctx) -> absl::Status {
    absl::StatusOr<int64_t> b = ctx.GetInt("blocksize");
    if (!b.ok()) return b.status();
    if (*b <= 0) return ctx.Error("attribute 'blocksize' must be positive, got ", *b);
    if (depth_to_space) {
      absl::StatusOr<std::string> mode = ctx.GetString("mode");
      if (!mode.ok()) return mode.status();
      if (*mode != "DCR" && *mode != "CRD") {
        return ctx.Error("attribute 'mode' must be DCR or CRD, got '", *mode, "'");
      }
    }
    const std::optional<Dims> x = InputShape(ctx, 0);
    if (!x) {
      ctx.set_output_shape(0, UnknownDims(4));
      return absl::OkStatus();
    }
    if (x->size() != 4) return ctx.Error("input must be 4-D, got ", ShapeToString(x));
    std::optional<int64_t> b2 = CheckedMul(*b, *b);
    if (!b2) return ctx.Error("attribute 'blocksize' ", *b, " is too large");
    Dims out = {(*x)[0]};
    absl::StatusOr<Dim> c = ScaleDim(ctx, (*x)[1], *b2, depth_to_space, "channel count");
    if (!c.ok()) return c.status();
    out.push_back(*c);
    for (int i = 2; i < 4; ++i) {
      absl::StatusOr<Dim> d = ScaleDim(ctx, (*x)[i], *b, !depth_to_space,
                                       absl::StrCat("spatial dim ", i));
      if (!d.ok()) return d.status();
      out.push_back(*d);
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  };
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

absl::Status TopKShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  std::optional<int64_t> k;
  if (ctx.has_input(1)) {
    std::optional<Dims> ks = InputShape(ctx, 1);
    const bool one_element = ks && (ks->empty() || (ks->size() == 1 && !((*ks)[0].is_known() &&
                                                                        (*ks)[0].size() != 1)));
    if (ks && !one_element) {
      return ctx.Error("input K must hold exactly one element, got shape ", ShapeToString(ks));
    }
    std::optional<std::vector<int64_t>> v = InputInts(ctx, 1);
    if (v && v->size() == 1) k = (*v)[0];
  } else {
    absl::StatusOr<int64_t> attr_k = ctx.GetInt("k");
    if (!attr_k.ok()) return attr_k.status();
    k = *attr_k;
  }
  if (!x) {
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, std::nullopt);
    return absl::OkStatus();
  }
  Dims out = *x;
  if (k) {
    const Dim& d = (*x)[*axis];
    if (*k < 0 || (d.is_known() && *k > d.size())) {
      return ctx.Error("K = ", *k, " is out of range for axis ", *axis, " of size ",
                       d.ToString());
    }
    out[*axis] = Dim::Known(*k);
  } else {
    out[*axis] = Dim::Unknown();
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, out);
  return absl::OkStatus();
}

}  // namespace

void AddIndexOps(std::vector<OpDef>* ops) {
  const DTypes all = AllTypes();
  const DTypes index_types = {v1::DT_INT32, v1::DT_INT64};
  ops->push_back(OpBuilder("GatherElements", "output[i..] = data[i.. with indices[i..] on "
                                             "'axis']; the indices' shape.")
                     .Input("data", "T")
                     .Input("indices", "Tind")
                     .Output("output", "T")
                     .IntAttr("axis", 0)
                     .Constraint("T", all)
                     .Constraint("Tind", index_types)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(GatherElementsShape)
                     .Build());
  ops->push_back(OpBuilder("GatherND", "Gathers slices of data at the index tuples of the "
                                       "indices' last axis, after 'batch_dims' batch dims.")
                     .Input("data", "T")
                     .Input("indices", "Tind")
                     .Output("output", "T")
                     .IntAttr("batch_dims", 0, "Opset 12+.")
                     .Constraint("T", all)
                     .Constraint("Tind", {v1::DT_INT64})
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(GatherNdShape)
                     .Build());
  for (const char* name : {"Scatter", "ScatterElements"}) {
    ops->push_back(OpBuilder(name, "A copy of data with updates written at indices along "
                                   "'axis' (Scatter: opsets 9 and 10).")
                       .Input("data", "T")
                       .Input("indices", "Tind")
                       .Input("updates", "T")
                       .Output("output", "T")
                       .IntAttr("axis", 0)
                       .StringAttr("reduction", "none", "ScatterElements opset 16+.")
                       .Constraint("T", all)
                       .Constraint("Tind", index_types)
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(ScatterElementsShape)
                       .Build());
  }
  ops->push_back(OpBuilder("ScatterND", "A copy of data with update slices written at the "
                                        "index tuples.")
                     .Input("data", "T")
                     .Input("indices", "Tind")
                     .Input("updates", "T")
                     .Output("output", "T")
                     .StringAttr("reduction", "none", "Opset 16+.")
                     .Constraint("T", all)
                     .Constraint("Tind", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ScatterNdShape)
                     .Build());
  ops->push_back(OpBuilder("Compress", "The slices along 'axis' (or flattened elements) where "
                                       "condition holds; how many is known only for a "
                                       "constant condition.")
                     .Input("input", "T")
                     .Input("condition", "T1")
                     .Output("output", "T")
                     .Attr("axis", v1::ATTR_INT)
                     .Constraint("T", all)
                     .Constraint("T1", {v1::DT_BOOL})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(CompressShape)
                     .Build());
  ops->push_back(OpBuilder("NonZero", "Indices of the non-zero elements, [rank, count]; the "
                                      "count is known only at run time.")
                     .Input("X", "T")
                     .Output("Y", "I")
                     .Constraint("T", all)
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(NonZeroShape)
                     .Build());
  ops->push_back(OpBuilder("Unique", "Distinct values (or slices along 'axis') with their first "
                                     "indices, inverse indices and counts.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .OptionalOutput("indices", "I")
                     .OptionalOutput("inverse_indices", "I")
                     .OptionalOutput("counts", "I")
                     .Attr("axis", v1::ATTR_INT)
                     .IntAttr("sorted", 1)
                     .Constraint("T", all)
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(UniqueShape)
                     .Build());
  const DTypes numeric_no_bf16 = Join(IntTypes(), HalfSingleDouble());
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
  ops->push_back(OpBuilder("ReverseSequence", "Reverses the first sequence_lens[b] elements "
                                              "along time_axis of each batch entry.")
                     .Input("input", "T")
                     .Input("sequence_lens", "I")
                     .Output("Y", "T")
                     .IntAttr("batch_axis", 1)
                     .IntAttr("time_axis", 0)
                     .Constraint("T", all)
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ReverseSequenceShape)
                     .Build());
  ops->push_back(OpBuilder("DepthToSpace", "[N, C, H, W] -> [N, C / b^2, H * b, W * b].")
                     .Input("input", "T")
                     .Output("output", "T")
                     .RequiredAttr("blocksize", v1::ATTR_INT)
                     .StringAttr("mode", "DCR", "DCR or CRD (opset 11+).")
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(BlockShapeFn(true))
                     .Build());
  ops->push_back(OpBuilder("SpaceToDepth", "[N, C, H, W] -> [N, C * b^2, H / b, W / b].")
                     .Input("input", "T")
                     .Output("output", "T")
                     .RequiredAttr("blocksize", v1::ATTR_INT)
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(BlockShapeFn(false))
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
  const DTypes eye_types = Join(Join(IntTypes(), HalfSingleDouble()), {v1::DT_BOOL});
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
  ops->push_back(OpBuilder("TopK", "The K largest (or smallest) elements along 'axis'.")
                     .Input("X", "T")
                     .OptionalInput("K", "Tk", "1-D int64 of one element (opset 10+).")
                     .Output("Values", "T")
                     .Output("Indices", "I")
                     .IntAttr("axis", -1)
                     .IntAttr("largest", 1)
                     .IntAttr("sorted", 1)
                     .Attr("k", v1::ATTR_INT, "Opset < 10 only.")
                     .Constraint("T", NumericTypes())
                     .Constraint("Tk", {v1::DT_INT64})
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(TopKShapeFn)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
