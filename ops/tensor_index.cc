// Indexing builtin operators with ONNX semantics: Gather, GatherElements, GatherND, Scatter,
// ScatterElements, ScatterND, Compress, NonZero, Unique and TopK. Sizes that depend on the data
// (NonZero, Unique, Compress without a constant condition) are unknown. Kernels in
// runtime/kernels/tensor_index.cc.

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

absl::Status GatherShape(InferenceContext& ctx) {
  const std::optional<Dims> data = InputShape(ctx, 0);
  const std::optional<Dims> indices = InputShape(ctx, 1);
  absl::StatusOr<int64_t> axis_attr = ctx.GetInt("axis");
  if (!axis_attr.ok()) return axis_attr.status();
  if (!data) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> axis =
      NormalizeAxis(*axis_attr, static_cast<int64_t>(data->size()), "attribute 'axis'");
  if (!axis.ok()) return NodeError(ctx, axis.status());
  const Dim& d = (*data)[*axis];
  const std::optional<std::vector<int64_t>> idx = InputInts(ctx, 1);
  if (idx && d.is_known() && d.size() >= 0) {
    for (int64_t i : *idx) {
      if (i < -d.size() || i >= d.size()) {
        return ctx.Error("indices value ", i, " is out of range for axis ", *axis, " of size ",
                         d.size());
      }
    }
  }
  if (!indices) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  Dims out(data->begin(), data->begin() + *axis);
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + *axis + 1, data->end());
  ctx.set_output_shape(0, std::move(out));
  if (data->size() != 1 || indices->size() > 1 || !idx) return absl::OkStatus();
  std::optional<Dims> v = InputDimsValue(ctx, 0);
  if (!v) return absl::OkStatus();
  const int64_t n = static_cast<int64_t>(v->size());
  Dims picked;
  for (int64_t i : *idx) {
    if (i < -n || i >= n) {
      return ctx.Error("indices value ", i, " is out of range for axis 0 of size ", n);
    }
    picked.push_back((*v)[i < 0 ? i + n : i]);
  }
  SetDimsValue(ctx, 0, std::move(picked));
  return absl::OkStatus();
}

}  // namespace

void AddTensorIndexOps(std::vector<OpDef>* ops) {
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
  ops->push_back(OpBuilder("Gather", "Takes entries of 'data' along 'axis' at 'indices'.")
                     .Input("data", "T")
                     .Input("indices", "Tind")
                     .Output("output", "T")
                     .IntAttr("axis", 0)
                     .Constraint("T", all)
                     .Constraint("Tind", index_types)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(GatherShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
