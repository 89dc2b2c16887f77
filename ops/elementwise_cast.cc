// Type conversions with ONNX semantics: Cast, CastLike and the linear (de)quantizations
// (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear); kernels in
// runtime/kernels/elementwise_cast.cc.

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
    if (std::optional<Dims> v = InputDimsValue(ctx, 0)) SetDimsValue(ctx, 0, *std::move(v));
  }
  return absl::OkStatus();
}

}  // namespace

void AddElementwiseCastOps(std::vector<OpDef>* ops) {
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

}  // namespace builtin_internal
}  // namespace graphopt
