// Pooling with ONNX semantics: MaxPool, AveragePool, the global pools, LpPool, GlobalLpPool
// and MaxUnpool; kernels in runtime/kernels/nn_pool.cc.

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

// [N, C, stride * (in - 1) + kernel - pads...], or the shape given as input 2.
absl::Status MaxUnpoolShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<std::vector<int64_t>> kernel = ctx.GetInts("kernel_shape");
  if (!kernel.ok()) return kernel.status();
  const size_t spatial = kernel->size();
  if (x && x->size() != spatial + 2) {
    return ctx.Error("input X ", ShapeToString(x), " must have rank ", spatial + 2,
                     " for a kernel_shape of ", spatial, " values");
  }
  absl::StatusOr<std::vector<int64_t>> strides = ListAttr(ctx, "strides", spatial, 1);
  if (!strides.ok()) return strides.status();
  absl::StatusOr<std::vector<int64_t>> pads = ListAttr(ctx, "pads", 2 * spatial, 0);
  if (!pads.ok()) return pads.status();
  if (ctx.has_input(2)) {
    std::optional<Dims> target = ShapeOperand(ctx, 2);
    if (target && x && target->size() != x->size()) {
      return ctx.Error("input 'output_shape' has ", target->size(), " entries but X ",
                       ShapeToString(x), " has rank ", x->size());
    }
    ctx.set_output_shape(0, target ? target : (x ? std::optional<Dims>(UnknownDims(x->size()))
                                                 : std::nullopt));
    return absl::OkStatus();
  }
  Dims out = {x ? (*x)[0] : Dim::Unknown(), x ? (*x)[1] : Dim::Unknown()};
  for (size_t i = 0; i < spatial; ++i) {
    const Dim in = x ? (*x)[i + 2] : Dim::Unknown();
    std::optional<int64_t> d;
    if (in.is_known()) d = CheckedSub(in.size(), 1);
    if (d) d = CheckedMul((*strides)[i], *d);
    if (d) d = CheckedAdd(*d, (*kernel)[i]);
    if (d) d = CheckedSub(*d, (*pads)[i]);
    if (d) d = CheckedSub(*d, (*pads)[i + spatial]);
    if (d && *d < 0) return ctx.Error("spatial axis ", i, ": the output size ", *d, " is negative");
    out.push_back(d ? Dim::Known(*d) : Dim::Unknown());
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

}  // namespace

void AddNnPoolOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(WindowAttrs(OpBuilder("MaxPool", "Max pooling; optional flat Indices."), true)
                     .Input("X", "T")
                     .Output("Y", "T")
                     .OptionalOutput("Indices", "I")
                     .IntAttr("ceil_mode", 0)
                     .IntAttr("storage_order", 0)
                     .Constraint("T", Join(floats, {v1::DT_INT8, v1::DT_UINT8}))
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(PoolShapeFn)
                     .Build());
  ops->push_back(WindowAttrs(OpBuilder("AveragePool", "Average pooling."), true)
                     .Input("X", "T")
                     .Output("Y", "T")
                     .IntAttr("ceil_mode", 0)
                     .IntAttr("count_include_pad", 0)
                     .Constraint("T", floats)
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(PoolShapeFn)
                     .Build());
  for (const char* name : {"GlobalAveragePool", "GlobalMaxPool"}) {
    ops->push_back(OpBuilder(name, "Pooling over all spatial dims: N x C x 1 x 1 ...")
                       .Input("X", "T")
                       .Output("Y", "T")
                       .Constraint("T", floats)
                       .Fusion(v1::FUSION_REDUCTION)
                       .ShapeFn(GlobalPoolShapeFn)
                       .Build());
  }
  ops->push_back(WindowAttrs(OpBuilder("LpPool", "Lp-norm pooling."), false)
                     .Input("X", "T")
                     .Output("Y", "T")
                     .IntAttr("p", 2, "The norm's order (an int from opset 2).")
                     .IntAttr("ceil_mode", 0, "Opset 18+.")
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(PoolShapeFn)
                     .Build());
  ops->push_back(OpBuilder("GlobalLpPool", "Lp-norm pooling over all spatial dims: N x C x 1 "
                                           "x 1 ...")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .IntAttr("p", 2, "The norm's order (an int from opset 2).")
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_REDUCTION)
                     .ShapeFn(GlobalPoolShapeFn)
                     .Build());
  ops->push_back(OpBuilder("MaxUnpool", "Inverse of MaxPool: scatters X to the flat indices I "
                                        "of a zero tensor.")
                     .Input("X", "T1")
                     .Input("I", "T2")
                     .OptionalInput("output_shape", "T2")
                     .Output("output", "T1")
                     .RequiredAttr("kernel_shape", v1::ATTR_INTS)
                     .Attr("pads", v1::ATTR_INTS)
                     .Attr("strides", v1::ATTR_INTS)
                     .Constraint("T1", hsd)
                     .Constraint("T2", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MaxUnpoolShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
