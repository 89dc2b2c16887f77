// Quantization builtin operators with ONNX semantics: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, ConvInteger, QLinearConv, MatMulInteger and QLinearMatMul.

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

absl::Status ConvIntegerShape(InferenceContext& ctx) { return ConvShapeAt(ctx, 0, 1, -1); }

// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
absl::Status QLinearConvShape(InferenceContext& ctx) { return ConvShapeAt(ctx, 0, 3, 8); }

// numpy.matmul's shape of inputs a and b.
ShapeInferenceFn MatMulOf(int a, int b) {
  return [a, b](InferenceContext& ctx) -> absl::Status {
    absl::StatusOr<std::optional<Dims>> out = MatMulShape(InputShape(ctx, a), InputShape(ctx, b));
    if (!out.ok()) return NodeError(ctx, out.status());
    ctx.set_output_shape(0, *std::move(out));
    return absl::OkStatus();
  };
}

}  // namespace

void AddQuantizationOps(std::vector<OpDef>* ops) {
  const DTypes int8s = {v1::DT_INT8, v1::DT_UINT8};
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
  ops->push_back(WindowAttrs(OpBuilder("ConvInteger", "Integer convolution (int32 result) with "
                                                      "optional zero points."),
                             false)
                     .Input("x", "T1")
                     .Input("w", "T2")
                     .OptionalInput("x_zero_point", "T1")
                     .OptionalInput("w_zero_point", "T2")
                     .Output("y", "T3")
                     .IntAttr("group", 1)
                     .Constraint("T1", int8s)
                     .Constraint("T2", int8s)
                     .Constraint("T3", {v1::DT_INT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ConvIntegerShape)
                     .Build());
  ops->push_back(WindowAttrs(OpBuilder("QLinearConv", "Quantized convolution: dequantized x "
                                                      "and w, requantized y."),
                             false)
                     .Input("x", "T1")
                     .Input("x_scale", "S")
                     .Input("x_zero_point", "T1")
                     .Input("w", "T2")
                     .Input("w_scale", "S")
                     .Input("w_zero_point", "T2")
                     .Input("y_scale", "S")
                     .Input("y_zero_point", "T3")
                     .OptionalInput("B", "T4")
                     .Output("y", "T3")
                     .IntAttr("group", 1)
                     .Constraint("T1", int8s)
                     .Constraint("T2", int8s)
                     .Constraint("T3", int8s)
                     .Constraint("T4", {v1::DT_INT32})
                     .Constraint("S", {v1::DT_FLOAT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(QLinearConvShape)
                     .Build());
  ops->push_back(OpBuilder("MatMulInteger", "Integer numpy.matmul (int32 result) with optional "
                                            "zero points.")
                     .Input("A", "T1")
                     .Input("B", "T2")
                     .OptionalInput("a_zero_point", "T1")
                     .OptionalInput("b_zero_point", "T2")
                     .Output("Y", "T3")
                     .Constraint("T1", int8s)
                     .Constraint("T2", int8s)
                     .Constraint("T3", {v1::DT_INT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MatMulOf(0, 1))
                     .Build());
  ops->push_back(OpBuilder("QLinearMatMul", "Quantized numpy.matmul: dequantized a and b, "
                                            "requantized y.")
                     .Input("a", "T1")
                     .Input("a_scale", "S")
                     .Input("a_zero_point", "T1")
                     .Input("b", "T2")
                     .Input("b_scale", "S")
                     .Input("b_zero_point", "T2")
                     .Input("y_scale", "S")
                     .Input("y_zero_point", "T3")
                     .Output("y", "T3")
                     .Constraint("T1", int8s)
                     .Constraint("T2", int8s)
                     .Constraint("T3", int8s)
                     .Constraint("S", {v1::DT_FLOAT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MatMulOf(0, 3))
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
