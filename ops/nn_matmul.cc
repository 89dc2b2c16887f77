// Matrix products with ONNX semantics: MatMul, Gemm and the quantized MatMulInteger and
// QLinearMatMul; kernels in runtime/kernels/nn_matmul.cc.

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

absl::Status MatMulShapeFn(InferenceContext& ctx) {
  absl::StatusOr<std::optional<Dims>> out = MatMulShape(InputShape(ctx, 0), InputShape(ctx, 1));
  if (!out.ok()) return NodeError(ctx, out.status());
  ctx.set_output_shape(0, *std::move(out));
  return absl::OkStatus();
}

absl::Status GemmShapeFn(InferenceContext& ctx) {
  absl::StatusOr<int64_t> trans_a = ctx.GetInt("transA");
  if (!trans_a.ok()) return trans_a.status();
  absl::StatusOr<int64_t> trans_b = ctx.GetInt("transB");
  if (!trans_b.ok()) return trans_b.status();
  const std::optional<Dims> a = InputShape(ctx, 0);
  const std::optional<Dims> b = InputShape(ctx, 1);
  if (a && a->size() != 2) return ctx.Error("input A must be 2-D, got ", ShapeToString(a));
  if (b && b->size() != 2) return ctx.Error("input B must be 2-D, got ", ShapeToString(b));
  const Dim m = a ? (*a)[*trans_a ? 1 : 0] : Dim::Unknown();
  const Dim ka = a ? (*a)[*trans_a ? 0 : 1] : Dim::Unknown();
  const Dim kb = b ? (*b)[*trans_b ? 1 : 0] : Dim::Unknown();
  const Dim n = b ? (*b)[*trans_b ? 0 : 1] : Dim::Unknown();
  if (ka.is_known() && kb.is_known() && ka.size() != kb.size()) {
    return ctx.Error("inner dimensions differ: A ", ShapeToString(a), " (transA=", *trans_a,
                     ") has K=", ka.size(), " but B ", ShapeToString(b), " (transB=", *trans_b,
                     ") has K=", kb.size());
  }
  Dims out = {m, n};
  if (std::optional<Dims> c = InputShape(ctx, 2)) {
    if (absl::Status s = CheckUnidirectionalBroadcast(*c, out); !s.ok()) {
      return NodeError(ctx, s, "input C: ");
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

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

void AddNnMatMulOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes int8s = {v1::DT_INT8, v1::DT_UINT8};
  const DTypes matmul_types = Join(floats, {v1::DT_INT32, v1::DT_INT64, v1::DT_UINT32,
                                            v1::DT_UINT64});
  ops->push_back(OpBuilder("MatMul", "Matrix product with numpy.matmul semantics.")
                     .Input("A", "T")
                     .Input("B", "T")
                     .Output("Y", "T")
                     .Constraint("T", matmul_types)
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(MatMulShapeFn)
                     .Build());
  ops->push_back(OpBuilder("Gemm", "alpha * op(A) * op(B) + beta * C; C broadcasts to [M, N].")
                     .Input("A", "T")
                     .Input("B", "T")
                     .OptionalInput("C", "T")
                     .Output("Y", "T")
                     .FloatAttr("alpha", 1.0f)
                     .FloatAttr("beta", 1.0f)
                     .IntAttr("transA", 0)
                     .IntAttr("transB", 0)
                     .Attr("broadcast", v1::ATTR_INT, "Opset < 7 only.")
                     .Constraint("T", matmul_types)
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(GemmShapeFn)
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
