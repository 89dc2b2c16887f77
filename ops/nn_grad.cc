// The nn family's backward ops (ops/nn_grad_ops.h), domain graphopt; kernels in
// runtime/kernels/nn_grad.cc, gradients in ops/grad_nn.cc. Their output's shape is the forward
// input's: given as a shape operand (Shape(X) or Shape(W), whose dims value infer_shape knows)
// or, for MaxPoolGrad, X itself.

#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"
#include "ops/nn_grad_ops.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Input `grad`'s rank (the forward output's), or -1 when unknown.
int RankOf(const InferenceContext& ctx, int i) {
  const std::optional<Dims> s = InputShape(ctx, i);
  return s ? static_cast<int>(s->size()) : -1;
}

// The output is the shape held by the shape operand `shape_input`; it must have the rank of
// input `like` (the forward output's gradient, or the activations), which is >= 3.
absl::Status ShapeFromOperand(InferenceContext& ctx, int shape_input, int like) {
  const int rank = RankOf(ctx, like);
  if (rank >= 0 && rank < 3) {
    return ctx.Error("input ", like, " must have rank >= 3 ([N, C, spatial...]), got ",
                     ShapeToString(InputShape(ctx, like)));
  }
  const std::optional<Dims> shape_of_shape = InputShape(ctx, shape_input);
  if (shape_of_shape && shape_of_shape->size() != 1) {
    return ctx.Error("input ", shape_input, " (a shape) must be 1-D, got ",
                     ShapeToString(shape_of_shape));
  }
  std::optional<Dims> out = ShapeOperand(ctx, shape_input);
  if (out && rank >= 0 && static_cast<int>(out->size()) != rank) {
    return ctx.Error("input ", shape_input, " holds a shape of rank ", out->size(), ", but input ",
                     like, " has rank ", rank);
  }
  if (!out && rank >= 0) out = UnknownDims(rank);
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status ConvGradDataShape(InferenceContext& ctx) { return ShapeFromOperand(ctx, 2, 0); }
absl::Status ConvGradWeightShape(InferenceContext& ctx) { return ShapeFromOperand(ctx, 2, 1); }
absl::Status AveragePoolGradShape(InferenceContext& ctx) { return ShapeFromOperand(ctx, 1, 0); }

// dX has X's shape; dY and X have one rank.
absl::Status MaxPoolGradShape(InferenceContext& ctx) {
  const std::optional<Dims> dy = InputShape(ctx, 0);
  const std::optional<Dims> x = InputShape(ctx, 1);
  if (x && x->size() < 3) {
    return ctx.Error("input X must have rank >= 3 ([N, C, spatial...]), got ", ShapeToString(x));
  }
  if (dy && x && dy->size() != x->size()) {
    return ctx.Error("input dY ", ShapeToString(dy), " and X ", ShapeToString(x),
                     " differ in rank");
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

OpDef InGraphopt(OpDef def) {
  def.descriptor.set_domain(kNnGradDomain);
  return def;
}

// The window attributes of the forward ops, as ONNX's Conv and pools declare them.
OpBuilder& Window(OpBuilder& b) {
  return b.StringAttr("auto_pad", "NOTSET", "The forward op's: NOTSET, SAME_UPPER, SAME_LOWER or VALID.")
      .Attr("pads", v1::ATTR_INTS, "The forward op's: begin values, then end values.")
      .Attr("strides", v1::ATTR_INTS, "The forward op's.")
      .Attr("dilations", v1::ATTR_INTS, "The forward op's.");
}

}  // namespace

void AddNnGradOps(std::vector<OpDef>* ops) {
  const DTypes floats = {v1::DT_FLOAT32, v1::DT_FLOAT64};
  {
    OpBuilder b(kConvGradDataOp,
                "The gradient of Conv(X, W) with respect to X: the transposed convolution of dY "
                "[N, M, out...] with W [M, C/group, k...] into X's shape [N, C, in...] (given as "
                "X_shape); Conv's window attributes.");
    b.Input("dY", "T").Input("W", "T").Input("X_shape", "I");
    ops->push_back(InGraphopt(Window(b)
                                  .Output("dX", "T")
                                  .IntAttr("group", 1)
                                  .Attr("kernel_shape", v1::ATTR_INTS, "W's spatial dims.")
                                  .Constraint("T", floats)
                                  .Constraint("I", {v1::DT_INT64})
                                  .Fusion(v1::FUSION_OPAQUE)
                                  .ShapeFn(ConvGradDataShape)
                                  .Build()));
  }
  {
    OpBuilder b(kConvGradWeightOp,
                "The gradient of Conv(X, W) with respect to W: the correlation of X [N, C, in...] "
                "with dY [N, M, out...] into W's shape [M, C/group, k...] (given as W_shape); "
                "Conv's window attributes.");
    b.Input("X", "T").Input("dY", "T").Input("W_shape", "I");
    ops->push_back(InGraphopt(Window(b)
                                  .Output("dW", "T")
                                  .IntAttr("group", 1)
                                  .Attr("kernel_shape", v1::ATTR_INTS, "W's spatial dims.")
                                  .Constraint("T", floats)
                                  .Constraint("I", {v1::DT_INT64})
                                  .Fusion(v1::FUSION_OPAQUE)
                                  .ShapeFn(ConvGradWeightShape)
                                  .Build()));
  }
  {
    OpBuilder b(kMaxPoolGradOp,
                "The gradient of MaxPool(X) with respect to X: each dY element added to the "
                "input element its window took (the first maximum in window order, as "
                "MaxPool's Indices); MaxPool's attributes.");
    b.Input("dY", "T").Input("X", "T");
    ops->push_back(InGraphopt(Window(b)
                                  .Output("dX", "T")
                                  .RequiredAttr("kernel_shape", v1::ATTR_INTS)
                                  .IntAttr("ceil_mode", 0)
                                  .IntAttr("storage_order", 0, "Ignored (Indices only).")
                                  .Constraint("T", floats)
                                  .Fusion(v1::FUSION_OPAQUE)
                                  .ShapeFn(MaxPoolGradShape)
                                  .Build()));
  }
  {
    OpBuilder b(kAveragePoolGradOp,
                "The gradient of AveragePool(X) with respect to X: each dY element spread "
                "evenly over its window's counted taps, into X's shape (given as X_shape); "
                "AveragePool's attributes.");
    b.Input("dY", "T").Input("X_shape", "I");
    ops->push_back(InGraphopt(Window(b)
                                  .Output("dX", "T")
                                  .RequiredAttr("kernel_shape", v1::ATTR_INTS)
                                  .IntAttr("ceil_mode", 0)
                                  .IntAttr("count_include_pad", 0)
                                  .Constraint("T", floats)
                                  .Constraint("I", {v1::DT_INT64})
                                  .Fusion(v1::FUSION_OPAQUE)
                                  .ShapeFn(AveragePoolGradShape)
                                  .Build()));
  }
}

}  // namespace builtin_internal
}  // namespace graphopt
