// Softmax, LogSoftmax, Hardmax and the losses (NegativeLogLikelihoodLoss,
// SoftmaxCrossEntropyLoss) with ONNX semantics; kernels in runtime/kernels/reduction_softmax.cc.

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

absl::StatusOr<std::string> Reduction(const InferenceContext& ctx) {
  absl::StatusOr<std::string> r = ctx.GetString("reduction");
  if (!r.ok()) return r.status();
  if (*r != "none" && *r != "mean" && *r != "sum") {
    return ctx.Error("attribute 'reduction' must be none, mean or sum, got '", *r, "'");
  }
  return r;
}

// The per-sample shape [N, d1, ...] of a loss over scores/log-probabilities [N, C, d1, ...] and
// targets [N, d1, ...] (merged dim by dim); the class count C comes back in `classes`.
absl::StatusOr<std::optional<Dims>> LossSampleShape(const InferenceContext& ctx, Dim* classes) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> t = InputShape(ctx, 1);
  if (x && x->size() < 2) return ctx.Error("input 0 must have rank >= 2, got ", ShapeToString(x));
  if (x && t && t->size() + 1 != x->size()) {
    return ctx.Error("input 1 ", ShapeToString(t), " must have rank ", x->size() - 1,
                     " for input 0 ", ShapeToString(x));
  }
  *classes = x ? (*x)[1] : Dim::Unknown();
  if (!x) return t;
  Dims out = {(*x)[0]};
  out.insert(out.end(), x->begin() + 2, x->end());
  for (size_t i = 0; t && i < out.size(); ++i) {
    absl::StatusOr<Dim> merged = MergeEqualDims(out[i], (*t)[i]);
    if (!merged.ok()) {
      return ctx.Error("input 1 ", ShapeToString(t), " does not match input 0 ",
                       ShapeToString(x), " (expected [N, d1, ...] of [N, C, d1, ...])");
    }
    out[i] = *std::move(merged);
  }
  return std::optional<Dims>(std::move(out));
}

// Losses: the per-sample shape with reduction 'none', a scalar otherwise; the optional
// class weights (input 2) are [C]; a second output (log_prob) has the scores' shape.
absl::Status LossShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> reduction = Reduction(ctx);
  if (!reduction.ok()) return reduction.status();
  Dim classes;
  absl::StatusOr<std::optional<Dims>> sample = LossSampleShape(ctx, &classes);
  if (!sample.ok()) return sample.status();
  if (std::optional<Dims> wt = InputShape(ctx, 2)) {
    if (wt->size() != 1 || !MergeEqualDims(classes, (*wt)[0]).ok()) {
      return ctx.Error("input 2 (weights) ", ShapeToString(wt), " must be 1-D of the ",
                       classes.ToString(), " classes");
    }
  }
  ctx.set_output_shape(0, *reduction == "none" ? *sample : std::optional<Dims>(Dims{}));
  if (ctx.num_outputs() > 1) ctx.set_output_shape(1, InputShape(ctx, 0));
  return absl::OkStatus();
}

}  // namespace

absl::Status SoftmaxShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!OpsetBefore(ctx, 13)) {
    if (absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x); !axis.ok()) return axis.status();
    ctx.set_output_shape(0, x);
    return absl::OkStatus();
  }
  // Opsets < 13 coerce the input to 2-D at 'axis', which defaults to 1 there (the descriptor's
  // default is the newer -1); before opset 11 'axis' may also equal the rank, as in Flatten.
  int64_t axis = 1;
  if (ctx.node().attributes.contains("axis")) {
    absl::StatusOr<int64_t> a = ctx.GetInt("axis");
    if (!a.ok()) return a.status();
    axis = *a;
  }
  if (x) {
    const int64_t r = static_cast<int64_t>(x->size());
    const int64_t last = OpsetBefore(ctx, 11) ? r : r - 1;
    if (axis < -r || axis > last) {
      return ctx.Error("'axis' value ", axis, " is out of range for rank ", r, " (expected [",
                       -r, ", ", last, "] at opset ", ctx.opset_version(), ")");
    }
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

void AddReductionSoftmaxOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(OpBuilder("Softmax", "Softmax along 'axis' (opsets < 13: of the input coerced "
                                      "to 2-D at 'axis', default 1).")
                     .Input("input", "T")
                     .Output("output", "T")
                     .IntAttr("axis", -1)
                     .Constraint("T", floats)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SoftmaxShapeFn)
                     .Build());
  for (const char* name : {"LogSoftmax", "Hardmax"}) {
    ops->push_back(OpBuilder(name, "Along 'axis' (opsets < 13: of the input coerced to 2-D at "
                                   "'axis', default 1).")
                       .Input("input", "T")
                       .Output("output", "T")
                       .IntAttr("axis", -1)
                       .Constraint("T", FloatTypes())
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(SoftmaxShapeFn)
                       .Build());
  }
  ops->push_back(OpBuilder("NegativeLogLikelihoodLoss",
                           "-input[n, target[n, d...], d...] (times the class weight), reduced "
                           "by 'reduction'.")
                     .Input("input", "T")
                     .Input("target", "Tind")
                     .OptionalInput("weight", "T")
                     .Output("loss", "T")
                     .Attr("ignore_index", v1::ATTR_INT)
                     .StringAttr("reduction", "mean", "none, mean or sum.")
                     .Constraint("T", hsd)
                     .Constraint("Tind", {v1::DT_INT32, v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(LossShape)
                     .Build());
  ops->push_back(OpBuilder("SoftmaxCrossEntropyLoss",
                           "Cross entropy of softmax(scores) against the labels; optional "
                           "log_prob output.")
                     .Input("scores", "T")
                     .Input("labels", "Tind")
                     .OptionalInput("weights", "T")
                     .Output("output", "T")
                     .OptionalOutput("log_prob", "T")
                     .Attr("ignore_index", v1::ATTR_INT)
                     .StringAttr("reduction", "mean", "none, mean or sum.")
                     .Constraint("T", FloatTypes())
                     .Constraint("Tind", {v1::DT_INT32, v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(LossShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
