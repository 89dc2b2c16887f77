// Reductions with ONNX semantics: the Reduce* ops, ArgMax/ArgMin, MeanVarianceNormalization and
// LpNormalization; kernels in runtime/kernels/reduction.cc.

#include <cstdint>
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

absl::Status ArgReduceShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> keepdims = ctx.GetInt("keepdims");
  if (!keepdims.ok()) return keepdims.status();
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  Dims out = *x;
  if (*keepdims) {
    out[*axis] = Dim::Known(1);
  } else {
    out.erase(out.begin() + *axis);
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status MeanVarianceNormShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<std::vector<int64_t>> axes = ctx.GetInts("axes");
  if (!axes.ok()) return axes.status();
  if (x) {
    absl::StatusOr<std::vector<int64_t>> n =
        NormalizeAxes(*axes, static_cast<int64_t>(x->size()), "attribute 'axes'");
    if (!n.ok()) return NodeError(ctx, n.status());
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// Input 0's shape after checking 'axis' (LpNormalization).
absl::Status AxisCheckedSameShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x); !axis.ok()) return axis.status();
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> CheckedAxis(const InferenceContext& ctx, const std::optional<Dims>& x) {
  absl::StatusOr<int64_t> axis = ctx.GetInt("axis");
  if (!axis.ok()) return axis.status();
  if (!x) return -1;
  absl::StatusOr<int64_t> n = NormalizeAxis(*axis, static_cast<int64_t>(x->size()),
                                            "attribute 'axis'");
  if (!n.ok()) return NodeError(ctx, n.status());
  return n;
}

absl::Status ReduceShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> keepdims = ctx.GetInt("keepdims");
  if (!keepdims.ok()) return keepdims.status();
  absl::StatusOr<int64_t> noop = ctx.GetInt("noop_with_empty_axes");
  if (!noop.ok()) return noop.status();
  absl::StatusOr<IntsOperand> axes = IntsFromAttrOrInput(ctx, "axes", 1);
  if (!axes.ok()) return axes.status();
  const char* what = ctx.has_input(1) ? "input 'axes'" : "attribute 'axes'";
  if (axes->given && !axes->values) {
    // Which axes are reduced is unknown: with keepdims each dim either stays or becomes 1.
    if (!x || !*keepdims) {
      ctx.set_output_shape(0, std::nullopt);
      return absl::OkStatus();
    }
    Dims out = *x;
    for (Dim& d : out) {
      if (!(d.is_known() && d.size() == 1)) d = Dim::Unknown();
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const std::vector<int64_t> list = axes->values ? *axes->values : std::vector<int64_t>();
  if (list.empty() && *noop) {
    ctx.set_output_shape(0, x);
    return absl::OkStatus();
  }
  if (!x) {
    // Reducing everything without keepdims gives a scalar whatever the rank.
    ctx.set_output_shape(0, list.empty() && !*keepdims ? std::optional<Dims>(Dims{})
                                                       : std::nullopt);
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x->size());
  std::vector<bool> reduced(x->size(), list.empty());
  for (int64_t a : list) {
    absl::StatusOr<int64_t> n = NormalizeAxis(a, rank, what);
    if (!n.ok()) return NodeError(ctx, n.status());
    reduced[*n] = true;
  }
  Dims out;
  for (size_t i = 0; i < x->size(); ++i) {
    if (!reduced[i]) {
      out.push_back((*x)[i]);
    } else if (*keepdims) {
      out.push_back(Dim::Known(1));
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

OpDef ReduceOpDef(absl::string_view name, absl::string_view doc, const DTypes& types) {
  return OpBuilder(name, doc)
      .Input("data", "T")
      .OptionalInput("axes", "Taxes")
      .Output("reduced", "T")
      .Attr("axes", v1::ATTR_INTS)
      .IntAttr("keepdims", 1)
      .IntAttr("noop_with_empty_axes", 0)
      .Constraint("T", types)
      .Constraint("Taxes", {v1::DT_INT64})
      .Fusion(v1::FUSION_REDUCTION)
      .ShapeFn(ReduceShapeFn)
      .Build();
}

void AddReductionOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  const DTypes reduce_types = Join(floats, {v1::DT_INT32, v1::DT_INT64, v1::DT_UINT32,
                                            v1::DT_UINT64, v1::DT_INT8, v1::DT_UINT8});
  const DTypes arg_types = Join(reduce_types, {v1::DT_INT16, v1::DT_UINT16});
  const DTypes reduce_types_32_64 = Join(FloatTypes(), {v1::DT_UINT32, v1::DT_UINT64, v1::DT_INT32,
                                                        v1::DT_INT64});
  for (const char* name : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    ops->push_back(ReduceOpDef(name, "Reduction over 'axes' (attribute, or input from opset 13 "
                                     "for ReduceSum and 18 for the others); all axes when empty.",
                               reduce_types));
  }
  for (const char* name : {"ArgMax", "ArgMin"}) {
    ops->push_back(OpBuilder(name, "Index of the extreme element along 'axis' (int64).")
                       .Input("data", "T")
                       .Output("reduced", "I")
                       .IntAttr("axis", 0)
                       .IntAttr("keepdims", 1)
                       .IntAttr("select_last_index", 0)
                       .Constraint("T", arg_types)
                       .Constraint("I", {v1::DT_INT64})
                       .Fusion(v1::FUSION_REDUCTION)
                       .ShapeFn(ArgReduceShapeFn)
                       .Build());
  }
  ops->push_back(OpBuilder("MeanVarianceNormalization", "(x - mean) / sqrt(var) over 'axes'.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .IntsAttr("axes", {0, 2, 3})
                     .Constraint("T", FloatTypes())
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MeanVarianceNormShape)
                     .Build());
  ops->push_back(OpBuilder("LpNormalization", "Normalises to unit Lp norm along 'axis'.")
                     .Input("input", "T")
                     .Output("output", "T")
                     .IntAttr("axis", -1)
                     .IntAttr("p", 2, "1 or 2.")
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(AxisCheckedSameShape)
                     .Build());
  for (const char* name : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                           "ReduceProd", "ReduceSumSquare"}) {
    ops->push_back(ReduceOpDef(name, "Reduction over 'axes' (attribute, or input from opset "
                                     "18); all axes when empty.",
                               reduce_types_32_64));
  }
}

}  // namespace builtin_internal
}  // namespace graphopt
