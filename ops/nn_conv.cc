// Convolutions with ONNX semantics: Conv, ConvTranspose and the quantized ConvInteger and
// QLinearConv; kernels in runtime/kernels/nn_conv.cc.

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

absl::Status ConvShapeFn(InferenceContext& ctx) { return ConvShapeAt(ctx, 0, 1, 2); }

absl::Status ConvIntegerShape(InferenceContext& ctx) { return ConvShapeAt(ctx, 0, 1, -1); }

// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
absl::Status QLinearConvShape(InferenceContext& ctx) { return ConvShapeAt(ctx, 0, 3, 8); }

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

}  // namespace

void AddNnConvOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  const DTypes int8s = {v1::DT_INT8, v1::DT_UINT8};
  ops->push_back(WindowAttrs(OpBuilder("Conv", "N-d convolution (X: N x C x D1.., W: M x C/group "
                                               "x k1..)."),
                             false)
                     .Input("X", "T")
                     .Input("W", "T")
                     .OptionalInput("B", "T")
                     .Output("Y", "T")
                     .IntAttr("group", 1)
                     .Constraint("T", floats)
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(ConvShapeFn)
                     .Build());
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
}

}  // namespace builtin_internal
}  // namespace graphopt
