// Normalisations with ONNX semantics: BatchNormalization, LayerNormalization,
// InstanceNormalization and LRN; kernels in runtime/kernels/nn_norm.cc.

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

absl::Status BatchNormShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() < 2) return ctx.Error("input X must have rank >= 2, got ", ShapeToString(x));
  absl::StatusOr<int64_t> spatial = ctx.GetInt("spatial", 1);
  if (!spatial.ok()) return spatial.status();
  if (OpsetBefore(ctx, 9) && *spatial == 0) {
    // Per-activation statistics: scale, B, mean and var have X's dims after the batch dim.
    std::optional<Dims> stats;
    if (x) stats = Dims(x->begin() + 1, x->end());
    ctx.set_output_shape(0, x);
    for (int i = 1; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, stats);
    return absl::OkStatus();
  }
  Dim c = x ? (*x)[1] : Dim::Unknown();
  static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (int i = 1; i <= 4; ++i) {
    std::optional<Dims> s = InputShape(ctx, i);
    if (!s) continue;
    if (s->size() != 1) {
      return ctx.Error("input ", i, " (", kNames[i], ") must be 1-D, got ", ShapeToString(s));
    }
    absl::StatusOr<Dim> merged = MergeEqualDims(c, (*s)[0]);
    if (!merged.ok()) {
      return ctx.Error("input ", i, " (", kNames[i], ") ", ShapeToString(s),
                       " does not match the ", c.ToString(), " channels of X ",
                       ShapeToString(x));
    }
    c = *std::move(merged);
  }
  ctx.set_output_shape(0, x);
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, Dims{c});
  return absl::OkStatus();
}

absl::Status LayerNormShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  for (int i = 1; i <= 2; ++i) {
    std::optional<Dims> s = InputShape(ctx, i);
    if (!x || !s) continue;
    if (absl::Status st = CheckUnidirectionalBroadcast(*s, *x); !st.ok()) {
      return NodeError(ctx, st, i == 1 ? "input Scale: " : "input B: ");
    }
  }
  ctx.set_output_shape(0, x);
  std::optional<Dims> stats;
  if (x) {
    stats = x;
    for (size_t i = static_cast<size_t>(*axis); i < stats->size(); ++i) {
      (*stats)[i] = Dim::Known(1);
    }
  }
  for (int i = 1; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, stats);
  return absl::OkStatus();
}

absl::Status LayerNormTypeFn(InferenceContext& ctx) {
  absl::StatusOr<int64_t> stash = ctx.GetInt("stash_type");
  if (!stash.ok()) return stash.status();
  if (*stash != v1::DT_FLOAT32 && *stash != v1::DT_BFLOAT16) {
    return ctx.Error("attribute 'stash_type' must be float32 (1) or bfloat16 (16), got ",
                     *stash);
  }
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    ctx.set_output_dtype(i, static_cast<v1::DataType>(*stash));
  }
  return absl::OkStatus();
}

// X's shape; scale and B are 1-D of X's channel count.
absl::Status InstanceNormShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() < 2) return ctx.Error("input must have rank >= 2, got ", ShapeToString(x));
  const Dim c = x ? (*x)[1] : Dim::Unknown();
  for (int i = 1; i <= 2; ++i) {
    const std::optional<Dims> s = InputShape(ctx, i);
    if (!s) continue;
    if (s->size() != 1 || !MergeEqualDims(c, (*s)[0]).ok()) {
      return ctx.Error("input ", i, " (", i == 1 ? "scale" : "B", ") ", ShapeToString(s),
                       " must be 1-D of the ", c.ToString(), " channels of the input ",
                       ShapeToString(x));
    }
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

absl::Status LrnShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> size = ctx.GetInt("size");
  if (!size.ok()) return size.status();
  if (*size <= 0) return ctx.Error("attribute 'size' must be positive, got ", *size);
  return SameShapeAsInput0(ctx);
}

}  // namespace

void AddNnNormOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(
      OpBuilder("BatchNormalization",
                "Per-channel normalisation; training_mode also returns running statistics "
                "(opsets < 14 name the extra outputs mean, var, saved_mean, saved_var).")
          .Input("X", "T")
          .Input("scale", "T1")
          .Input("B", "T1")
          .Input("input_mean", "T2")
          .Input("input_var", "T2")
          .Output("Y", "T")
          .OptionalOutput("running_mean", "T2")
          .OptionalOutput("running_var", "T2")
          .OptionalOutput("saved_mean", "T2", "Opsets < 14 only.")
          .OptionalOutput("saved_var", "T2", "Opsets < 14 only.")
          .FloatAttr("epsilon", 1e-5f)
          .FloatAttr("momentum", 0.9f)
          .IntAttr("training_mode", 0)
          .Attr("spatial", v1::ATTR_INT,
                "Opsets < 9: 0 gives scale, B, mean and var X's dims after the batch dim.")
          .Attr("is_test", v1::ATTR_INT, "Opsets < 7 only.")
          .Attr("consumed_inputs", v1::ATTR_INTS, "Opset 1 only; ignored.")
          .Constraint("T", floats)
          .Constraint("T1", floats)
          .Constraint("T2", floats)
          .Fusion(v1::FUSION_OPAQUE)
          .ShapeFn(BatchNormShapeFn)
          .Build());
  ops->push_back(OpBuilder("LayerNormalization",
                           "Normalises over the dims from 'axis' on; Mean and InvStdDev keep "
                           "those dims as 1 and have the stash_type.")
                     .Input("X", "T")
                     .Input("Scale", "T")
                     .OptionalInput("B", "T")
                     .Output("Y", "T")
                     .OptionalOutput("Mean", "U")
                     .OptionalOutput("InvStdDev", "U")
                     .IntAttr("axis", -1)
                     .FloatAttr("epsilon", 1e-5f)
                     .IntAttr("stash_type", 1)
                     .Constraint("T", floats)
                     .Constraint("U", {v1::DT_FLOAT32, v1::DT_BFLOAT16})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(LayerNormShapeFn)
                     .TypeFn(LayerNormTypeFn)
                     .Build());
  OpBuilder instance_norm("InstanceNormalization",
                          "Normalises each channel of each sample: scale * (x - mean) / "
                          "sqrt(var + epsilon) + B.");
  ops->push_back(ConsumedInputs(instance_norm)
                     .Input("input", "T")
                     .Input("scale", "T")
                     .Input("B", "T")
                     .Output("output", "T")
                     .FloatAttr("epsilon", 1e-5f)
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(InstanceNormShape)
                     .Build());
  ops->push_back(OpBuilder("LRN", "Local response normalisation across 'size' channels.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .RequiredAttr("size", v1::ATTR_INT)
                     .FloatAttr("alpha", 1e-4f)
                     .FloatAttr("beta", 0.75f)
                     .FloatAttr("bias", 1.0f)
                     .Constraint("T", FloatTypes())
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(LrnShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
