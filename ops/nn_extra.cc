// More neural-network builtin operators with ONNX semantics: ConvTranspose, LpPool,
// GlobalLpPool, MaxUnpool, the normalisations (InstanceNormalization, LRN,
// MeanVarianceNormalization, LpNormalization), LogSoftmax and Hardmax, the remaining
// reductions, the losses (NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss), GridSample,
// RoiAlign and NonMaxSuppression.

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

// One output dim of a transposed convolution along a spatial axis:
//   output_shape given: that size; SAME_*: in * stride;
//   otherwise stride * (in - 1) + output_padding + dilated_kernel - pad_begin - pad_end.
// A symbolic input size is kept when the output provably equals it.
absl::StatusOr<Dim> ConvTransposeDim(const Dim& in, std::optional<int64_t> kernel,
                                     int64_t stride, int64_t dilation, int64_t pad_begin,
                                     int64_t pad_end, int64_t output_padding, AutoPad auto_pad) {
  if (stride <= 0 || dilation <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("stride ", stride, " and dilation ", dilation,
                                                   " must be positive"));
  }
  if (auto_pad == AutoPad::kSameUpper || auto_pad == AutoPad::kSameLower) {
    if (stride == 1) return in;
    if (!in.is_known()) return Dim::Unknown();
    std::optional<int64_t> out = CheckedMul(in.size(), stride);
    return out ? Dim::Known(*out) : Dim::Unknown();
  }
  if (!kernel) return Dim::Unknown();
  if (*kernel < 1) {
    return absl::InvalidArgumentError(absl::StrCat("kernel size ", *kernel, " must be positive"));
  }
  if (auto_pad == AutoPad::kValid) pad_begin = pad_end = 0;
  std::optional<int64_t> dilated = CheckedMul(*kernel - 1, dilation);
  if (!dilated) return Dim::Unknown();
  // out = stride * in + (output_padding + dilated + 1 - stride - pads)
  std::optional<int64_t> extra = CheckedAdd(*dilated, 1);
  if (extra) extra = CheckedAdd(*extra, output_padding);
  if (extra) extra = CheckedSub(*extra, stride);
  if (extra) extra = CheckedSub(*extra, pad_begin);
  if (extra) extra = CheckedSub(*extra, pad_end);
  if (!extra) return Dim::Unknown();
  if (!in.is_known()) return stride == 1 && *extra == 0 ? in : Dim::Unknown();
  std::optional<int64_t> out = CheckedMul(in.size(), stride);
  if (out) out = CheckedAdd(*out, *extra);
  if (!out) return Dim::Unknown();
  if (*out < 0) {
    return absl::InvalidArgumentError(absl::StrCat("the output size ", *out, " is negative"));
  }
  return Dim::Known(*out);
}

absl::Status ConvTransposeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> w = InputShape(ctx, 1);
  absl::StatusOr<int64_t> group = CheckConvOperands(ctx, x, w);
  if (!group.ok()) return group.status();
  const std::optional<Dims>& ranked = x ? x : w;
  if (!ranked) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const size_t spatial = ranked->size() - 2;
  absl::StatusOr<Window> win = ReadWindow(ctx, spatial, w);
  if (!win.ok()) return win.status();
  absl::StatusOr<std::vector<int64_t>> output_padding =
      ListAttr(ctx, "output_padding", spatial, 0);
  if (!output_padding.ok()) return output_padding.status();
  std::optional<std::vector<int64_t>> output_shape;
  if (ctx.has_attr("output_shape")) {
    absl::StatusOr<std::vector<int64_t>> v = ctx.GetInts("output_shape");
    if (!v.ok()) return v.status();
    if (v->size() < spatial) {
      return ctx.Error("attribute 'output_shape' ", IntsToString(*v), " has fewer than ",
                       spatial, " (spatial) values");
    }
    output_shape.emplace(v->end() - spatial, v->end());
  }
  // W is [C, M / group, k...]: its first dim is X's channel count.
  const Dim c = x ? (*x)[1] : Dim::Unknown();
  const Dim wc = w ? (*w)[0] : Dim::Unknown();
  if (!MergeEqualDims(c, wc).ok()) {
    return ctx.Error("input X has ", c.ToString(), " channels but W ", ShapeToString(w),
                     " expects ", wc.ToString());
  }
  if (c.is_known() && c.size() % *group != 0) {
    return ctx.Error("input X has ", c.size(), " channels, not divisible by group ", *group);
  }
  Dim m = Dim::Unknown();
  if (w && (*w)[1].is_known()) {
    std::optional<int64_t> p = CheckedMul((*w)[1].size(), *group);
    if (p) m = Dim::Known(*p);
  } else if (w && *group == 1) {
    m = (*w)[1];
  }
  if (std::optional<Dims> b = InputShape(ctx, 2)) {
    if (b->size() != 1) return ctx.Error("input B must be 1-D, got ", ShapeToString(b));
    absl::StatusOr<Dim> merged = MergeEqualDims(m, (*b)[0]);
    if (!merged.ok()) {
      return ctx.Error("input B ", ShapeToString(b), " does not match the ", m.ToString(),
                       " output channels");
    }
    m = *std::move(merged);
  }
  Dims out = {x ? (*x)[0] : Dim::Unknown(), m};
  for (size_t i = 0; i < spatial; ++i) {
    if (output_shape) {
      out.push_back(Dim::Known((*output_shape)[i]));
      continue;
    }
    absl::StatusOr<Dim> d = ConvTransposeDim(x ? (*x)[i + 2] : Dim::Unknown(), win->kernel[i],
                                             win->strides[i], win->dilations[i], win->pads[i],
                                             win->pads[i + spatial], (*output_padding)[i],
                                             win->auto_pad);
    if (!d.ok()) return NodeError(ctx, d.status(), absl::StrCat("spatial axis ", i, ": "));
    out.push_back(*std::move(d));
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

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

void AddNnExtraOps(std::vector<OpDef>* ops) {
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(WindowAttrs(OpBuilder("ConvTranspose", "N-d transposed convolution (X: N x C "
                                                        "x D1.., W: C x M/group x k1..)."),
                             false)
                     .Input("X", "T")
                     .Input("W", "T")
                     .OptionalInput("B", "T")
                     .Output("Y", "T")
                     .IntAttr("group", 1)
                     .Attr("output_padding", v1::ATTR_INTS, "Added at the end of each axis.")
                     .Attr("output_shape", v1::ATTR_INTS, "Spatial output size (pads follow).")
                     .Constraint("T", hsd)
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(ConvTransposeShape)
                     .Build());
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
  const DTypes reduce_types = Join(FloatTypes(), {v1::DT_UINT32, v1::DT_UINT64, v1::DT_INT32,
                                                  v1::DT_INT64});
  for (const char* name : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                           "ReduceProd", "ReduceSumSquare"}) {
    ops->push_back(ReduceOpDef(name, "Reduction over 'axes' (attribute, or input from opset "
                                     "18); all axes when empty.",
                               reduce_types));
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
