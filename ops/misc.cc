// Random generators (RandomNormal, RandomUniform, their *Like forms, Bernoulli, Multinomial),
// the optimizers of the ai.onnx.preview.training domain (Adagrad, Adam, Momentum), Det and
// NonMaxSuppression, with ONNX semantics; kernels in runtime/kernels/misc.cc.
//
// Random generators carry the nondeterministic extension: CSE never merges two of them and
// constant folding never evaluates one, even with a 'seed'.

#include <algorithm>
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

constexpr char kTrainingDomain[] = "ai.onnx.preview.training";

OpBuilder& Nondeterministic(OpBuilder& b) {
  v1::Attribute yes;
  yes.set_i(1);
  return b.Extension(kNondeterministicExtension, yes);
}

// RandomNormal and RandomUniform: the 'shape' attribute.
absl::Status ShapeFromAttribute(InferenceContext& ctx) {
  absl::StatusOr<std::vector<int64_t>> shape = ctx.GetInts("shape");
  if (!shape.ok()) return shape.status();
  Dims out;
  for (int64_t d : *shape) {
    if (d < 0) return ctx.Error("attribute 'shape' ", IntsToString(*shape), " has a negative dim");
    out.push_back(Dim::Known(d));
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status DTypeFromAttribute(InferenceContext& ctx) {
  return OutputDTypeFromAttribute(ctx, 0, "dtype", v1::DT_UNDEFINED);
}

absl::Status DTypeAttributeOrInput(InferenceContext& ctx) {
  return OutputDTypeFromAttribute(ctx, 0, "dtype", ctx.input_type(0).dtype);
}

// Multinomial: [batch, sample_size] draws from [batch, classes] log-probabilities.
absl::Status MultinomialShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() != 2) {
    return ctx.Error("input must be [batch, classes], got ", ShapeToString(x));
  }
  absl::StatusOr<int64_t> samples = ctx.GetInt("sample_size");
  if (!samples.ok()) return samples.status();
  if (*samples < 1) return ctx.Error("attribute 'sample_size' must be positive, got ", *samples);
  ctx.set_output_shape(0, Dims{x ? (*x)[0] : Dim::Unknown(), Dim::Known(*samples)});
  return absl::OkStatus();
}

// The training optimizers take (R, T, then `groups` groups of n tensors) and give the updated
// groups listed in `updated` (indices of input groups), n each.
struct OptimizerLayout {
  int groups;
  std::vector<int> updated;
};

absl::StatusOr<int> OptimizedCount(const InferenceContext& ctx, const OptimizerLayout& layout) {
  const int tensors = ctx.num_inputs() - 2;
  if (tensors < 0 || tensors % layout.groups != 0) {
    return ctx.Error("takes R, T and ", layout.groups, " tensors per optimized tensor, got ",
                     ctx.num_inputs(), " inputs");
  }
  const int n = tensors / layout.groups;
  if (ctx.num_outputs() != n * static_cast<int>(layout.updated.size())) {
    return ctx.Error("optimizes ", n, " tensors and so gives ", n * layout.updated.size(),
                     " outputs, not ", ctx.num_outputs());
  }
  return n;
}

TypeInferenceFn OptimizerType(OptimizerLayout layout) {
  return [layout](InferenceContext& ctx) -> absl::Status {
    absl::StatusOr<int> n = OptimizedCount(ctx, layout);
    if (!n.ok()) return n.status();
    for (int i = 2; i < ctx.num_inputs(); ++i) {
      const v1::DataType t = ctx.input_type(i).dtype;
      if (t != v1::DT_UNDEFINED && t != v1::DT_FLOAT32 && t != v1::DT_FLOAT64) {
        return ctx.Error("input ", i, " is ", DataTypeName(t), ", expected float32 or float64");
      }
    }
    for (size_t g = 0; g < layout.updated.size(); ++g) {
      for (int k = 0; k < *n; ++k) {
        ctx.set_output_dtype(g * *n + k, ctx.input_type(2 + layout.updated[g] * *n + k).dtype);
      }
    }
    return absl::OkStatus();
  };
}

ShapeInferenceFn OptimizerShape(OptimizerLayout layout) {
  return [layout](InferenceContext& ctx) -> absl::Status {
    if (ctx.has_attr("mode")) {  // Momentum
      absl::StatusOr<std::string> mode = ctx.GetString("mode");
      if (!mode.ok()) return mode.status();
      if (*mode != "standard" && *mode != "nesterov") {
        return ctx.Error("attribute 'mode' must be standard or nesterov, got '", *mode, "'");
      }
    }
    if (absl::Status s = CheckScalarInput(ctx, 0, "R", false); !s.ok()) return s;
    if (absl::Status s = CheckScalarInput(ctx, 1, "T", false); !s.ok()) return s;
    absl::StatusOr<int> n = OptimizedCount(ctx, layout);
    if (!n.ok()) return n.status();
    for (int k = 0; k < *n; ++k) {
      // Every group's k-th tensor has the shape of the k-th optimized tensor.
      std::optional<Dims> shape = InputShape(ctx, 2 + k);
      for (int g = 1; g < layout.groups && shape; ++g) {
        const std::optional<Dims> other = InputShape(ctx, 2 + g * *n + k);
        if (!other) continue;
        bool same = other->size() == shape->size();
        for (size_t i = 0; same && i < shape->size(); ++i) {
          absl::StatusOr<Dim> merged = MergeEqualDims((*shape)[i], (*other)[i]);
          same = merged.ok();
          if (same) (*shape)[i] = *std::move(merged);
        }
        if (!same) {
          return ctx.Error("input ", 2 + g * *n + k, " ", ShapeToString(other),
                           " does not have the shape ", ShapeToString(shape),
                           " of the tensor it belongs to");
        }
      }
      for (size_t g = 0; g < layout.updated.size(); ++g) {
        ctx.set_output_shape(g * *n + k, shape);
      }
    }
    return absl::OkStatus();
  };
}

OpDef Optimizer(OptimizerLayout layout, OpBuilder b) {
  OpDef def = b.Input("R", "T1", "Learning rate (scalar).")
                  .Input("T", "T2", "Update count (scalar).")
                  .VariadicInput("inputs", "", 1)
                  .VariadicOutput("outputs", "", 1)
                  .Constraint("T1", {v1::DT_FLOAT32, v1::DT_FLOAT64})
                  .Constraint("T2", {v1::DT_INT64})
                  .Fusion(v1::FUSION_OPAQUE)
                  .ShapeFn(OptimizerShape(layout))
                  .TypeFn(OptimizerType(layout))
                  .Build();
  def.descriptor.set_domain(kTrainingDomain);
  return def;
}

// [*, M, M] -> [*].
absl::Status DetShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (x->size() < 2) return ctx.Error("input X must have rank >= 2, got ", ShapeToString(x));
  if (!MergeEqualDims(x->back(), (*x)[x->size() - 2]).ok()) {
    return ctx.Error("input X ", ShapeToString(x), " does not hold square matrices");
  }
  ctx.set_output_shape(0, Dims(x->begin(), x->end() - 2));
  return absl::OkStatus();
}

// [selected, 3]: how many boxes are selected depends on the data.
absl::Status NonMaxSuppressionShape(InferenceContext& ctx) {
  const std::optional<Dims> boxes = InputShape(ctx, 0);
  const std::optional<Dims> scores = InputShape(ctx, 1);
  if (boxes && boxes->size() != 3) {
    return ctx.Error("input boxes must be [batch, boxes, 4], got ", ShapeToString(boxes));
  }
  if (scores && scores->size() != 3) {
    return ctx.Error("input scores must be [batch, classes, boxes], got ",
                     ShapeToString(scores));
  }
  if (boxes && scores &&
      (!MergeEqualDims((*boxes)[0], (*scores)[0]).ok() ||
       !MergeEqualDims((*boxes)[1], (*scores)[2]).ok())) {
    return ctx.Error("inputs boxes ", ShapeToString(boxes), " and scores ", ShapeToString(scores),
                     " differ in batch size or box count");
  }
  ctx.set_output_shape(0, Dims{Dim::Unknown(), Dim::Known(3)});
  return absl::OkStatus();
}

}  // namespace

void AddMiscOps(std::vector<OpDef>* ops) {
  const DTypes hsd = HalfSingleDouble();
  for (const char* name : {"RandomNormal", "RandomUniform"}) {
    OpBuilder b(name, "Random values of the 'shape' attribute (normal: mean/scale, uniform: "
                      "[low, high)).");
    if (name == std::string("RandomNormal")) {
      b.FloatAttr("mean", 0.0f).FloatAttr("scale", 1.0f);
    } else {
      b.FloatAttr("low", 0.0f).FloatAttr("high", 1.0f);
    }
    ops->push_back(Nondeterministic(b)
                       .Output("output", "T")
                       .IntAttr("dtype", v1::DT_FLOAT32)
                       .Attr("seed", v1::ATTR_FLOAT)
                       .RequiredAttr("shape", v1::ATTR_INTS)
                       .Constraint("T", hsd)
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(ShapeFromAttribute)
                       .TypeFn(DTypeFromAttribute)
                       .Build());
  }
  for (const char* name : {"RandomNormalLike", "RandomUniformLike"}) {
    OpBuilder b(name, "Random values of the input's shape; element type 'dtype' or the "
                      "input's.");
    if (name == std::string("RandomNormalLike")) {
      b.FloatAttr("mean", 0.0f).FloatAttr("scale", 1.0f);
    } else {
      b.FloatAttr("low", 0.0f).FloatAttr("high", 1.0f);
    }
    ops->push_back(Nondeterministic(b)
                       .Input("input", "T1")
                       .Output("output", "T2")
                       .Attr("dtype", v1::ATTR_INT)
                       .Attr("seed", v1::ATTR_FLOAT)
                       .Constraint("T1", AllTypes())
                       .Constraint("T2", hsd)
                       .IgnoredInput(0)
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(SameShapeAsInput0)
                       .TypeFn(DTypeAttributeOrInput)
                       .Build());
  }
  OpBuilder bernoulli("Bernoulli", "1 with the probability given by each input element, else "
                                   "0; element type 'dtype' or the input's.");
  ops->push_back(Nondeterministic(bernoulli)
                     .Input("input", "T1")
                     .Output("output", "T2")
                     .Attr("dtype", v1::ATTR_INT)
                     .Attr("seed", v1::ATTR_FLOAT)
                     .Constraint("T1", hsd)
                     .Constraint("T2", Join(NumericTypes(), {v1::DT_BOOL}))
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SameShapeAsInput0)
                     .TypeFn(DTypeAttributeOrInput)
                     .Build());
  OpBuilder multinomial("Multinomial", "sample_size class indices per batch row drawn from "
                                       "its unnormalised log-probabilities.");
  ops->push_back(Nondeterministic(multinomial)
                     .Input("input", "T1")
                     .Output("output", "T2")
                     .IntAttr("dtype", v1::DT_INT32)
                     .IntAttr("sample_size", 1)
                     .Attr("seed", v1::ATTR_FLOAT)
                     .Constraint("T1", hsd)
                     .Constraint("T2", {v1::DT_INT32, v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MultinomialShape)
                     .TypeFn(DTypeFromAttribute)
                     .Build());

  ops->push_back(Optimizer({3, {0, 2}},
                           std::move(OpBuilder("Adagrad", "Adagrad step: inputs X..., G..., H... "
                                                          "give X_new..., H_new...")
                                         .FloatAttr("decay_factor", 0.0f)
                                         .FloatAttr("epsilon", 1e-6f)
                                         .FloatAttr("norm_coefficient", 0.0f))));
  ops->push_back(Optimizer({4, {0, 2, 3}},
                           std::move(OpBuilder("Adam", "Adam step: inputs X..., G..., V..., H... "
                                                       "give X_new..., V_new..., H_new...")
                                         .FloatAttr("alpha", 0.9f)
                                         .FloatAttr("beta", 0.999f)
                                         .FloatAttr("epsilon", 1e-6f)
                                         .FloatAttr("norm_coefficient", 0.0f)
                                         .FloatAttr("norm_coefficient_post", 0.0f))));
  ops->push_back(Optimizer({3, {0, 2}},
                           std::move(OpBuilder("Momentum", "Momentum step (standard or "
                                                           "nesterov): inputs X..., G..., V... "
                                                           "give X_new..., V_new...")
                                         .RequiredAttr("alpha", v1::ATTR_FLOAT)
                                         .RequiredAttr("beta", v1::ATTR_FLOAT)
                                         .RequiredAttr("mode", v1::ATTR_STRING,
                                                       "standard or nesterov.")
                                         .RequiredAttr("norm_coefficient", v1::ATTR_FLOAT))));
  ops->push_back(OpBuilder("Det", "Determinants of the square matrices in the last two dims.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(DetShape)
                     .Build());
  ops->push_back(OpBuilder("NonMaxSuppression",
                           "Indices [batch, class, box] of the boxes kept; how many is known "
                           "only at run time.")
                     .Input("boxes", "T")
                     .Input("scores", "T")
                     .OptionalInput("max_output_boxes_per_class", "I")
                     .OptionalInput("iou_threshold", "T")
                     .OptionalInput("score_threshold", "T")
                     .Output("selected_indices", "I")
                     .IntAttr("center_point_box", 0)
                     .Constraint("T", {v1::DT_FLOAT32})
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(NonMaxSuppressionShape)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
