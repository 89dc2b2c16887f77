// The misc family, with ONNX semantics; kernels in runtime/kernels/misc*.cc: random generators
// (RandomNormal, RandomUniform, their *Like forms, Bernoulli, Multinomial), the optimizers of the
// ai.onnx.preview.training domain (Adagrad, Adam, Momentum, and Gradient, which the gradient pass
// expands), Det, NonMaxSuppression; image
// sampling (GridSample, RoiAlign); text (StringNormalizer, TfIdfVectorizer); signal processing
// (opset 17: DFT, STFT, the window generators and MelWeightMatrix).
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

// --- Random generators, optimizers, Det, NonMaxSuppression (kernels in misc.cc) --------------

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

// ONNX's training Gradient: the gradients of the value named by 'y' with respect to the values
// named by 'xs', given the values of 'xs' then 'zs' as inputs. The gradient pass expands it
// (there is no kernel); the rule only lets graphs holding it verify and be inferred, with each
// output typed and shaped as the xs value it is the gradient of (input i).
absl::StatusOr<int> GradientXsCount(const InferenceContext& ctx) {
  const v1::Attribute* xs = ctx.attr("xs");
  const v1::Attribute* zs = ctx.attr("zs");
  if (xs == nullptr || xs->strings().values_size() == 0) {
    return ctx.Error("attribute 'xs' must name the values to differentiate with respect to");
  }
  const int nx = xs->strings().values_size();
  const int nz = zs == nullptr ? 0 : zs->strings().values_size();
  if (ctx.num_inputs() != nx + nz) {
    return ctx.Error("takes the values of 'xs' then 'zs' (", nx + nz, " inputs), got ",
                     ctx.num_inputs());
  }
  if (ctx.num_outputs() != nx) {
    return ctx.Error("gives one gradient per name in 'xs' (", nx, "), not ", ctx.num_outputs(),
                     " outputs");
  }
  return nx;
}

absl::Status GradientType(InferenceContext& ctx) {
  absl::StatusOr<int> nx = GradientXsCount(ctx);
  if (!nx.ok()) return nx.status();
  for (int i = 0; i < *nx; ++i) {
    const v1::DataType t = ctx.input_type(i).dtype;
    if (t != v1::DT_UNDEFINED && t != v1::DT_FLOAT16 && t != v1::DT_FLOAT32 &&
        t != v1::DT_FLOAT64) {
      return ctx.Error("input ", i, " (an 'xs' value) is ", DataTypeName(t),
                       "; only float16, float32 and float64 values have gradients");
    }
    ctx.set_output_dtype(i, t);
  }
  return absl::OkStatus();
}

absl::Status GradientShape(InferenceContext& ctx) {
  absl::StatusOr<int> nx = GradientXsCount(ctx);
  if (!nx.ok()) return nx.status();
  for (int i = 0; i < *nx; ++i) ctx.set_output_shape(i, ctx.input_shape(i));
  return absl::OkStatus();
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

// The distribution's attributes: mean and scale (normal), or low and high (uniform).
OpBuilder& DistributionAttrs(OpBuilder& b, bool normal) {
  return normal ? b.FloatAttr("mean", 0.0f).FloatAttr("scale", 1.0f)
                : b.FloatAttr("low", 0.0f).FloatAttr("high", 1.0f);
}

void AddGeneralOps(std::vector<OpDef>* ops) {
  const DTypes hsd = HalfSingleDouble();
  for (const char* name : {"RandomNormal", "RandomUniform"}) {
    OpBuilder b(name, "Random values of the 'shape' attribute (normal: mean/scale, uniform: "
                      "[low, high)).");
    DistributionAttrs(b, name == std::string("RandomNormal"));
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
    DistributionAttrs(b, name == std::string("RandomNormalLike"));
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
  OpDef gradient = OpBuilder("Gradient",
                             "Gradients of the value named 'y' with respect to the values named "
                             "'xs' (inputs: the values of 'xs' then of 'zs'); expanded by the "
                             "gradient pass.")
                       .VariadicInput("Inputs", "", 1)
                       .VariadicOutput("Outputs", "", 1)
                       .RequiredAttr("xs", v1::ATTR_STRINGS, "Values to differentiate with "
                                                             "respect to.")
                       .RequiredAttr("y", v1::ATTR_STRING, "The value differentiated.")
                       .Attr("zs", v1::ATTR_STRINGS, "Other graph inputs fed to the node.")
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(GradientShape)
                       .TypeFn(GradientType)
                       .Build();
  gradient.descriptor.set_domain(kTrainingDomain);
  ops->push_back(std::move(gradient));
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

// --- Image sampling (kernels in misc_image.cc) -----------------------------------------------

// GridSample: X [N, C, D1...] sampled at grid [N, H1..., r-2] gives [N, C, H1...].
absl::Status GridSampleShape(InferenceContext& ctx) {
  for (const char* attr : {"mode", "padding_mode"}) {
    absl::StatusOr<std::string> v = ctx.GetString(attr);
    if (!v.ok()) return v.status();
    const bool ok = std::string(attr) == "mode"
                        ? (*v == "bilinear" || *v == "nearest" || *v == "bicubic" ||
                           *v == "linear" || *v == "cubic")
                        : (*v == "zeros" || *v == "border" || *v == "reflection");
    if (!ok) return ctx.Error("attribute '", attr, "' has unknown value '", *v, "'");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> grid = InputShape(ctx, 1);
  if (x && x->size() < 3) return ctx.Error("input X must have rank >= 3, got ", ShapeToString(x));
  if (grid && grid->size() < 3) {
    return ctx.Error("input grid must have rank >= 3, got ", ShapeToString(grid));
  }
  if (x && grid && grid->size() != x->size()) {
    return ctx.Error("input grid ", ShapeToString(grid), " must have the rank of X ",
                     ShapeToString(x));
  }
  if (grid) {
    const Dim& last = grid->back();
    if (last.is_known() && last.size() != static_cast<int64_t>(grid->size()) - 2) {
      return ctx.Error("input grid ", ShapeToString(grid), " must end in ", grid->size() - 2,
                       " coordinates");
    }
  }
  if (!grid && !x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const size_t rank = x ? x->size() : grid->size();
  absl::StatusOr<Dim> n = MergeEqualDims(x ? (*x)[0] : Dim::Unknown(),
                                         grid ? (*grid)[0] : Dim::Unknown());
  if (!n.ok()) {
    return ctx.Error("inputs X ", ShapeToString(x), " and grid ", ShapeToString(grid),
                     " differ in batch size");
  }
  Dims out = {*n, x ? (*x)[1] : Dim::Unknown()};
  for (size_t i = 1; i + 1 < rank; ++i) out.push_back(grid ? (*grid)[i] : Dim::Unknown());
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// [num_rois, C, output_height, output_width].
absl::Status RoiAlignShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "avg" && *mode != "max") {
    return ctx.Error("attribute 'mode' must be avg or max, got '", *mode, "'");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> rois = InputShape(ctx, 1);
  const std::optional<Dims> idx = InputShape(ctx, 2);
  if (x && x->size() != 4) return ctx.Error("input X must be 4-D, got ", ShapeToString(x));
  if (rois && (rois->size() != 2 || !MergeEqualDims((*rois)[1], Dim::Known(4)).ok())) {
    return ctx.Error("input rois must be [num_rois, 4], got ", ShapeToString(rois));
  }
  if (idx && idx->size() != 1) {
    return ctx.Error("input batch_indices must be 1-D, got ", ShapeToString(idx));
  }
  absl::StatusOr<Dim> num_rois = MergeEqualDims(rois ? (*rois)[0] : Dim::Unknown(),
                                                idx ? (*idx)[0] : Dim::Unknown());
  if (!num_rois.ok()) {
    return ctx.Error("inputs rois ", ShapeToString(rois), " and batch_indices ",
                     ShapeToString(idx), " differ in the number of regions");
  }
  Dims out = {*num_rois, x ? (*x)[1] : Dim::Unknown()};
  for (const char* attr : {"output_height", "output_width"}) {
    absl::StatusOr<int64_t> v = ctx.GetInt(attr);
    if (!v.ok()) return v.status();
    if (*v <= 0) return ctx.Error("attribute '", attr, "' must be positive, got ", *v);
    out.push_back(Dim::Known(*v));
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

void AddImageOps(std::vector<OpDef>* ops) {
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(OpBuilder("GridSample", "Samples X at the normalised coordinates of 'grid'.")
                     .Input("X", "T1")
                     .Input("grid", "T2")
                     .Output("Y", "T1")
                     .IntAttr("align_corners", 0)
                     .StringAttr("mode", "bilinear")
                     .StringAttr("padding_mode", "zeros")
                     .Constraint("T1", AllTypes())
                     .Constraint("T2", hsd)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(GridSampleShape)
                     .Build());
  ops->push_back(OpBuilder("RoiAlign", "Region-of-interest align: one output_height x "
                                       "output_width map per region.")
                     .Input("X", "T1")
                     .Input("rois", "T1")
                     .Input("batch_indices", "T2")
                     .Output("Y", "T1")
                     .StringAttr("coordinate_transformation_mode", "half_pixel", "Opset 16+.")
                     .StringAttr("mode", "avg", "avg or max.")
                     .IntAttr("output_height", 1)
                     .IntAttr("output_width", 1)
                     .IntAttr("sampling_ratio", 0)
                     .FloatAttr("spatial_scale", 1.0f)
                     .Constraint("T1", hsd)
                     .Constraint("T2", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(RoiAlignShape)
                     .Build());
}

// --- Text (kernels in misc_text.cc) ----------------------------------------------------------

// StringNormalizer: [C] or [1, C]; stop words may remove strings (at least one stays, possibly
// empty), so the length is known only without stop words.
absl::Status StringNormalizerShape(InferenceContext& ctx) {
  absl::StatusOr<std::string> action = ctx.GetString("case_change_action");
  if (!action.ok()) return action.status();
  if (*action != "NONE" && *action != "LOWER" && *action != "UPPER") {
    return ctx.Error("attribute 'case_change_action' must be NONE, LOWER or UPPER, got '",
                     *action, "'");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (x->empty() || x->size() > 2 ||
      (x->size() == 2 && !MergeEqualDims((*x)[0], Dim::Known(1)).ok())) {
    return ctx.Error("input must be [C] or [1, C], got ", ShapeToString(x));
  }
  const v1::Attribute* stopwords = ctx.attr("stopwords");
  const bool filters = stopwords != nullptr && stopwords->value_case() == v1::Attribute::kStrings &&
                       stopwords->strings().values_size() > 0;
  Dims out = *x;
  if (filters) out.back() = Dim::Unknown();
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// TfIdfVectorizer: [max(ngram_indexes) + 1] or [N, max(ngram_indexes) + 1].
absl::Status TfIdfVectorizerShape(InferenceContext& ctx) {
  absl::StatusOr<std::vector<int64_t>> indexes = ctx.GetInts("ngram_indexes");
  if (!indexes.ok()) return indexes.status();
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "TF" && *mode != "IDF" && *mode != "TFIDF") {
    return ctx.Error("attribute 'mode' must be TF, IDF or TFIDF, got '", *mode, "'");
  }
  if (indexes->empty() || *std::min_element(indexes->begin(), indexes->end()) < 0) {
    return ctx.Error("attribute 'ngram_indexes' ", IntsToString(*indexes),
                     " must be non-empty and non-negative");
  }
  const std::optional<int64_t> max_index =
      CheckedAdd(*std::max_element(indexes->begin(), indexes->end()), 1);
  const Dim width = max_index ? Dim::Known(*max_index) : Dim::Unknown();
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
  } else if (x->size() == 1) {
    ctx.set_output_shape(0, Dims{width});
  } else if (x->size() == 2) {
    ctx.set_output_shape(0, Dims{(*x)[0], width});
  } else {
    return ctx.Error("input must be 1-D or 2-D, got ", ShapeToString(x));
  }
  return absl::OkStatus();
}

void AddTextOps(std::vector<OpDef>* ops) {
  ops->push_back(OpBuilder("StringNormalizer", "Case-folds strings and removes stop words.")
                     .Input("X", "T")
                     .Output("Y", "T")
                     .StringAttr("case_change_action", "NONE", "NONE, LOWER or UPPER.")
                     .IntAttr("is_case_sensitive", 0)
                     .Attr("locale", v1::ATTR_STRING)
                     .Attr("stopwords", v1::ATTR_STRINGS)
                     .Constraint("T", {v1::DT_STRING})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(StringNormalizerShape)
                     .Build());
  ops->push_back(OpBuilder("TfIdfVectorizer", "N-gram counts (TF, IDF or TFIDF weighted) of the "
                                              "input sequences.")
                     .Input("X", "T")
                     .Output("Y", "T1")
                     .RequiredAttr("max_gram_length", v1::ATTR_INT)
                     .RequiredAttr("max_skip_count", v1::ATTR_INT)
                     .RequiredAttr("min_gram_length", v1::ATTR_INT)
                     .RequiredAttr("mode", v1::ATTR_STRING, "TF, IDF or TFIDF.")
                     .RequiredAttr("ngram_counts", v1::ATTR_INTS)
                     .RequiredAttr("ngram_indexes", v1::ATTR_INTS)
                     .Attr("pool_int64s", v1::ATTR_INTS)
                     .Attr("pool_strings", v1::ATTR_STRINGS)
                     .Attr("weights", v1::ATTR_FLOATS)
                     .Constraint("T", {v1::DT_STRING, v1::DT_INT32, v1::DT_INT64})
                     .Constraint("T1", {v1::DT_FLOAT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(TfIdfVectorizerShape)
                     .Build());
}

// --- Signal processing (kernels in misc_signal.cc) -------------------------------------------

// The value of a scalar integer input that must be positive; nullopt when unknown.
absl::StatusOr<std::optional<int64_t>> PositiveScalar(const InferenceContext& ctx, int i,
                                                      absl::string_view what) {
  if (absl::Status s = CheckScalarInput(ctx, i, what, false); !s.ok()) return s;
  std::optional<int64_t> v = ScalarInputInt(ctx, i);
  if (v && *v <= 0) return ctx.Error("input ", i, " (", what, ") must be positive, got ", *v);
  return v;
}

// A one-sided transform keeps n / 2 + 1 of n frequency bins.
Dim Bins(const Dim& n, bool onesided) {
  if (!onesided) return n;
  return n.is_known() ? Dim::Known(n.size() / 2 + 1) : Dim::Unknown();
}

// INVALID_ARGUMENT unless the signal's last dim is 1 (real) or 2 (complex).
absl::Status CheckComplexAxis(const InferenceContext& ctx, const Dims& x) {
  const Dim& last = x.back();
  if (last.is_known() && last.size() != 1 && last.size() != 2) {
    return ctx.Error("the last dim of the signal ", ShapeToString(x),
                     " must be 1 (real) or 2 (complex)");
  }
  return absl::OkStatus();
}

// DFT: the signal's shape with the transformed axis dft_length long (n / 2 + 1 when one-sided)
// and a last dim of 2 (complex).
absl::Status DftShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> onesided = ctx.GetInt("onesided");
  if (!onesided.ok()) return onesided.status();
  absl::StatusOr<int64_t> inverse = ctx.GetInt("inverse");
  if (!inverse.ok()) return inverse.status();
  if (*onesided && *inverse) return ctx.Error("'onesided' and 'inverse' cannot both be set");
  absl::StatusOr<std::optional<int64_t>> length = PositiveScalar(ctx, 1, "dft_length");
  if (!length.ok()) return length.status();
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (x->size() < 2) return ctx.Error("the signal must have rank >= 2, got ", ShapeToString(x));
  if (absl::Status s = CheckComplexAxis(ctx, *x); !s.ok()) return s;
  const int64_t rank = static_cast<int64_t>(x->size());
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  if (*axis == rank - 1) {
    return ctx.Error("attribute 'axis' must not name the last (real/imaginary) dim of ",
                     ShapeToString(x));
  }
  Dims out = *x;
  Dim n = (*x)[*axis];
  if (ctx.has_input(1)) n = *length ? Dim::Known(**length) : Dim::Unknown();
  out[*axis] = Bins(n, *onesided != 0);
  out.back() = Dim::Known(2);
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// STFT: [batch, frames, bins, 2] for a signal [batch, length, 1 or 2], frames =
// (length - frame_length) / frame_step + 1 and frame_length from the input or the window.
absl::Status StftShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> onesided = ctx.GetInt("onesided");
  if (!onesided.ok()) return onesided.status();
  absl::StatusOr<std::optional<int64_t>> step = PositiveScalar(ctx, 1, "frame_step");
  if (!step.ok()) return step.status();
  absl::StatusOr<std::optional<int64_t>> frame_length = PositiveScalar(ctx, 3, "frame_length");
  if (!frame_length.ok()) return frame_length.status();
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() != 3) {
    return ctx.Error("the signal must be [batch, length, 1 or 2], got ", ShapeToString(x));
  }
  if (x) {
    if (absl::Status s = CheckComplexAxis(ctx, *x); !s.ok()) return s;
  }
  Dim frame = *frame_length ? Dim::Known(**frame_length) : Dim::Unknown();
  if (const std::optional<Dims> w = InputShape(ctx, 2)) {
    absl::StatusOr<Dim> merged = w->size() == 1 ? MergeEqualDims(frame, (*w)[0])
                                                : absl::InvalidArgumentError("");
    if (!merged.ok()) {
      return ctx.Error("input window ", ShapeToString(w), " must be 1-D of the frame length ",
                       frame.ToString());
    }
    frame = *merged;
  }
  Dim frames = Dim::Unknown();
  const Dim length = x ? (*x)[1] : Dim::Unknown();
  if (length.is_known() && frame.is_known() && *step) {
    if (length.size() < frame.size()) {
      return ctx.Error("the signal ", ShapeToString(x), " is shorter than a frame of ",
                       frame.size());
    }
    frames = Dim::Known((length.size() - frame.size()) / **step + 1);
  }
  ctx.set_output_shape(0, Dims{x ? (*x)[0] : Dim::Unknown(), frames, Bins(frame, *onesided != 0),
                               Dim::Known(2)});
  return absl::OkStatus();
}

// Windows: [size].
absl::Status WindowShape(InferenceContext& ctx) {
  absl::StatusOr<std::optional<int64_t>> size = PositiveScalar(ctx, 0, "size");
  if (!size.ok()) return size.status();
  ctx.set_output_shape(0, Dims{*size ? Dim::Known(**size) : Dim::Unknown()});
  return absl::OkStatus();
}

// The element type 'output_datatype' names, which the output's constraint must allow.
absl::Status OutputDatatypeType(InferenceContext& ctx) {
  return OutputDTypeFromAttribute(ctx, 0, "output_datatype", v1::DT_UNDEFINED);
}

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins].
absl::Status MelWeightMatrixShape(InferenceContext& ctx) {
  absl::StatusOr<std::optional<int64_t>> bins = PositiveScalar(ctx, 0, "num_mel_bins");
  if (!bins.ok()) return bins.status();
  absl::StatusOr<std::optional<int64_t>> dft = PositiveScalar(ctx, 1, "dft_length");
  if (!dft.ok()) return dft.status();
  for (int i = 2; i < 5; ++i) {
    if (absl::Status s = CheckScalarInput(ctx, i, "a scalar parameter", false); !s.ok()) return s;
  }
  ctx.set_output_shape(0, Dims{*dft ? Dim::Known(**dft / 2 + 1) : Dim::Unknown(),
                               *bins ? Dim::Known(**bins) : Dim::Unknown()});
  return absl::OkStatus();
}

void AddSignalOps(std::vector<OpDef>* ops) {
  const DTypes index_types = {v1::DT_INT32, v1::DT_INT64};
  const DTypes numeric = NumericTypes();
  ops->push_back(OpBuilder("DFT", "Discrete Fourier transform along 'axis' of a real ([..., 1]) "
                                  "or complex ([..., 2]) signal.")
                     .Input("input", "T1")
                     .OptionalInput("dft_length", "T2", "Scalar: pads or truncates the axis.")
                     .Output("output", "T1")
                     .IntAttr("axis", 1)
                     .IntAttr("inverse", 0)
                     .IntAttr("onesided", 0)
                     .Constraint("T1", FloatTypes())
                     .Constraint("T2", index_types)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(DftShape)
                     .Build());
  ops->push_back(OpBuilder("STFT", "Short-time Fourier transform: [batch, frames, bins, 2].")
                     .Input("signal", "T1")
                     .Input("frame_step", "T2")
                     .OptionalInput("window", "T1")
                     .OptionalInput("frame_length", "T2")
                     .Output("output", "T1")
                     .IntAttr("onesided", 1)
                     .Constraint("T1", FloatTypes())
                     .Constraint("T2", index_types)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(StftShape)
                     .Build());
  for (const char* name : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    ops->push_back(OpBuilder(name, "A cosine-sum window of 'size' points (periodic or "
                                   "symmetric).")
                       .Input("size", "T1")
                       .Output("output", "T2")
                       .IntAttr("output_datatype", v1::DT_FLOAT32)
                       .IntAttr("periodic", 1)
                       .Constraint("T1", index_types)
                       .Constraint("T2", numeric)
                       .Fusion(v1::FUSION_OPAQUE)
                       .ShapeFn(WindowShape)
                       .TypeFn(OutputDatatypeType)
                       .Build());
  }
  ops->push_back(OpBuilder("MelWeightMatrix", "Weights mapping dft_length / 2 + 1 linear "
                                              "frequency bins to num_mel_bins mel bins.")
                     .Input("num_mel_bins", "T1")
                     .Input("dft_length", "T1")
                     .Input("sample_rate", "T1")
                     .Input("lower_edge_hertz", "T2")
                     .Input("upper_edge_hertz", "T2")
                     .Output("output", "T3")
                     .IntAttr("output_datatype", v1::DT_FLOAT32)
                     .Constraint("T1", index_types)
                     .Constraint("T2", FloatTypes())
                     .Constraint("T3", numeric)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(MelWeightMatrixShape)
                     .TypeFn(OutputDatatypeType)
                     .Build());
}

}  // namespace

void AddMiscOps(std::vector<OpDef>* ops) {
  AddGeneralOps(ops);
  AddImageOps(ops);
  AddTextOps(ops);
  AddSignalOps(ops);
}

}  // namespace builtin_internal
}  // namespace graphopt
