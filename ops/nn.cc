// The nn family, with ONNX semantics; kernels in runtime/kernels/nn*.cc: convolutions (Conv,
// ConvTranspose, ConvInteger, QLinearConv), matrix products (MatMul, Gemm, MatMulInteger,
// QLinearMatMul), normalisations (BatchNormalization, LayerNormalization,
// InstanceNormalization, LRN), pooling (MaxPool, AveragePool, the global pools, LpPool,
// GlobalLpPool, MaxUnpool), the window attributes and shape rules that convolutions and pools
// share, and the channels-last ops of ops/layout_ops.h: NhwcConv and the NHWC pools. Their shape
// rules are the ONNX ops' rules seen through a transposition: input X is presented to the ONNX
// rule as [N, C, spatial...], and the rule's output [N, M, spatial...] is recorded as
// [N, spatial..., M].

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"
#include "ops/layout_ops.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// --- Windows and shape rules shared by convolutions and pools --------------------------------

// Window attributes of Conv and the pooling ops for `spatial` spatial axes.
struct Window {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<std::optional<int64_t>> kernel;  // nullopt: not known
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begin values, then end values
  bool ceil_mode = false;
};

// The output channel count `m` merged with the 1-D bias B at input `b_input` (absent: `m`);
// `whose` names m's origin in the error.
absl::StatusOr<Dim> MergeBias(const InferenceContext& ctx, int b_input, const Dim& m,
                              absl::string_view whose) {
  std::optional<Dims> b = InputShape(ctx, b_input);
  if (!b) return m;
  if (b->size() != 1) return ctx.Error("input B must be 1-D, got ", ShapeToString(b));
  absl::StatusOr<Dim> merged = MergeEqualDims(m, (*b)[0]);
  if (!merged.ok()) {
    return ctx.Error("input B ", ShapeToString(b), " does not match ", whose, m.ToString(),
                     " output channels");
  }
  return merged;
}

// The window attributes (auto_pad, kernel_shape, strides, dilations, pads, ceil_mode); the
// kernel comes from `weight_shape`'s dims after the first two when kernel_shape is absent.
absl::StatusOr<Window> ReadWindow(const InferenceContext& ctx, size_t spatial,
                                  const std::optional<Dims>& weight_shape) {
  Window w;
  absl::StatusOr<std::string> auto_pad = ctx.GetString("auto_pad");
  if (!auto_pad.ok()) return auto_pad.status();
  absl::StatusOr<AutoPad> parsed = ParseAutoPad(*auto_pad);
  if (!parsed.ok()) return NodeError(ctx, parsed.status());
  w.auto_pad = *parsed;
  if (ctx.has_attr("kernel_shape")) {
    absl::StatusOr<std::vector<int64_t>> k = ListAttr(ctx, "kernel_shape", spatial, 1);
    if (!k.ok()) return k.status();
    for (int64_t x : *k) w.kernel.push_back(x);
  } else {
    w.kernel.assign(spatial, std::nullopt);
    if (weight_shape && weight_shape->size() == spatial + 2) {
      for (size_t i = 0; i < spatial; ++i) {
        const Dim& d = (*weight_shape)[i + 2];
        if (d.is_known()) w.kernel[i] = d.size();
      }
    }
  }
  absl::StatusOr<std::vector<int64_t>> strides = ListAttr(ctx, "strides", spatial, 1);
  if (!strides.ok()) return strides.status();
  w.strides = *std::move(strides);
  absl::StatusOr<std::vector<int64_t>> dilations = ListAttr(ctx, "dilations", spatial, 1);
  if (!dilations.ok()) return dilations.status();
  w.dilations = *std::move(dilations);
  absl::StatusOr<std::vector<int64_t>> pads = ListAttr(ctx, "pads", 2 * spatial, 0);
  if (!pads.ok()) return pads.status();
  w.pads = *std::move(pads);
  absl::StatusOr<int64_t> ceil_mode = ctx.GetInt("ceil_mode", 0);
  if (!ceil_mode.ok()) return ceil_mode.status();
  w.ceil_mode = *ceil_mode != 0;
  return w;
}

// Spatial output dims of input `x` (rank 2 + spatial, or unknown) under window `w`.
absl::StatusOr<Dims> SpatialOutput(const InferenceContext& ctx, const std::optional<Dims>& x,
                                   size_t spatial, const Window& w) {
  Dims out;
  for (size_t i = 0; i < spatial; ++i) {
    const Dim in = x ? (*x)[i + 2] : Dim::Unknown();
    if (!w.kernel[i]) {
      out.push_back(Dim::Unknown());
      continue;
    }
    absl::StatusOr<Dim> d = ConvOutputDim(in, *w.kernel[i], w.strides[i], w.dilations[i],
                                          w.pads[i], w.pads[i + spatial], w.auto_pad,
                                          w.ceil_mode);
    if (!d.ok()) return NodeError(ctx, d.status(), absl::StrCat("spatial axis ", i, ": "));
    out.push_back(*std::move(d));
  }
  return out;
}

// Checks a convolution's X and W (rank >= 3, one rank) and returns its positive 'group'.
absl::StatusOr<int64_t> CheckConvOperands(const InferenceContext& ctx,
                                          const std::optional<Dims>& x,
                                          const std::optional<Dims>& w) {
  if (x && x->size() < 3) return ctx.Error("input X must have rank >= 3, got ", ShapeToString(x));
  if (w && w->size() < 3) return ctx.Error("input W must have rank >= 3, got ", ShapeToString(w));
  if (x && w && x->size() != w->size()) {
    return ctx.Error("input X ", ShapeToString(x), " and weight W ", ShapeToString(w),
                     " differ in rank");
  }
  absl::StatusOr<int64_t> group = ctx.GetInt("group");
  if (!group.ok()) return group.status();
  if (*group <= 0) return ctx.Error("attribute 'group' must be positive, got ", *group);
  return group;
}

// Conv's output shape with X, W and the optional bias at the given inputs (b_input -1: none):
// [N, M, spatial...], checking channels against group and the bias against M.
absl::Status ConvShapeAt(InferenceContext& ctx, int x_input, int w_input, int b_input) {
  const std::optional<Dims> x = InputShape(ctx, x_input);
  const std::optional<Dims> w = InputShape(ctx, w_input);
  absl::StatusOr<int64_t> group = CheckConvOperands(ctx, x, w);
  if (!group.ok()) return group.status();
  size_t rank = 0;
  if (x) {
    rank = x->size();
  } else if (w) {
    rank = w->size();
  } else if (ctx.has_attr("kernel_shape")) {
    absl::StatusOr<std::vector<int64_t>> k = ctx.GetInts("kernel_shape");
    if (!k.ok()) return k.status();
    rank = k->size() + 2;
  } else {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const size_t spatial = rank - 2;
  absl::StatusOr<Window> win = ReadWindow(ctx, spatial, w);
  if (!win.ok()) return win.status();
  const Dim c = x ? (*x)[1] : Dim::Unknown();
  const Dim wc = w ? (*w)[1] : Dim::Unknown();
  if (c.is_known() && wc.is_known()) {
    std::optional<int64_t> expected = CheckedMul(wc.size(), *group);
    if (!expected || *expected != c.size()) {
      return ctx.Error("input X has ", c.size(), " channels but W ", ShapeToString(w),
                       " with group ", *group, " expects ", wc.size(), " * ", *group);
    }
  }
  Dim m = w ? (*w)[0] : Dim::Unknown();
  if (m.is_known() && m.size() % *group != 0) {
    return ctx.Error("W has ", m.size(), " output channels, not divisible by group ", *group);
  }
  absl::StatusOr<Dim> merged = MergeBias(ctx, b_input, m, "W's ");
  if (!merged.ok()) return merged.status();
  m = *std::move(merged);
  absl::StatusOr<Dims> sp = SpatialOutput(ctx, x, spatial, *win);
  if (!sp.ok()) return sp.status();
  Dims out = {x ? (*x)[0] : Dim::Unknown(), m};
  out.insert(out.end(), sp->begin(), sp->end());
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// Pooling with a required kernel_shape: [N, C, spatial...] for every output.
absl::Status PoolShapeFn(InferenceContext& ctx) {
  absl::StatusOr<std::vector<int64_t>> kernel = ctx.GetInts("kernel_shape");
  if (!kernel.ok()) return kernel.status();
  const size_t spatial = kernel->size();
  const std::optional<Dims> x = InputShape(ctx, 0);
  if (x && x->size() != spatial + 2) {
    return ctx.Error("input X ", ShapeToString(x), " must have rank ", spatial + 2,
                     " for a kernel_shape of ", spatial, " values");
  }
  absl::StatusOr<Window> win = ReadWindow(ctx, spatial, std::nullopt);
  if (!win.ok()) return win.status();
  absl::StatusOr<Dims> sp = SpatialOutput(ctx, x, spatial, *win);
  if (!sp.ok()) return sp.status();
  Dims out = {x ? (*x)[0] : Dim::Unknown(), x ? (*x)[1] : Dim::Unknown()};
  out.insert(out.end(), sp->begin(), sp->end());
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, out);
  return absl::OkStatus();
}

// Global pooling: [N, C, 1, 1, ...].
absl::Status GlobalPoolShapeFn(InferenceContext& ctx) {
  std::optional<Dims> x = InputShape(ctx, 0);
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  if (x->size() < 2) return ctx.Error("input X must have rank >= 2, got ", ShapeToString(x));
  for (size_t i = 2; i < x->size(); ++i) (*x)[i] = Dim::Known(1);
  ctx.set_output_shape(0, std::move(x));
  return absl::OkStatus();
}

// The window attributes' specs; kernel_shape required or not.
OpBuilder WindowAttrs(OpBuilder b, bool kernel_required) {
  if (kernel_required) {
    b.RequiredAttr("kernel_shape", v1::ATTR_INTS, "Window size per spatial axis.");
  } else {
    b.Attr("kernel_shape", v1::ATTR_INTS, "Window size per spatial axis (default: W's).");
  }
  b.StringAttr("auto_pad", "NOTSET", "NOTSET, SAME_UPPER, SAME_LOWER or VALID.")
      .Attr("pads", v1::ATTR_INTS, "Begin values for each spatial axis, then end values.")
      .Attr("strides", v1::ATTR_INTS)
      .Attr("dilations", v1::ATTR_INTS);
  return b;
}

// Conv's and NhwcConv's common arguments: the window attributes, X, W, optional B, Y, 'group'.
OpBuilder ConvBuilder(absl::string_view name, absl::string_view doc) {
  return WindowAttrs(OpBuilder(name, doc), false)
      .Input("X", "T")
      .Input("W", "T")
      .OptionalInput("B", "T")
      .Output("Y", "T")
      .IntAttr("group", 1);
}

// A pool's common arguments: the window attributes, X and Y.
OpBuilder PoolBuilder(absl::string_view name, absl::string_view doc, bool kernel_required) {
  return WindowAttrs(OpBuilder(name, doc), kernel_required).Input("X", "T").Output("Y", "T");
}

// --- Convolutions (kernels in nn_conv.cc) ----------------------------------------------------

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
  absl::StatusOr<Dim> merged = MergeBias(ctx, 2, m, "the ");
  if (!merged.ok()) return merged.status();
  m = *std::move(merged);
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

void AddConvOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  const DTypes int8s = {v1::DT_INT8, v1::DT_UINT8};
  ops->push_back(ConvBuilder("Conv", "N-d convolution (X: N x C x D1.., W: M x C/group x k1..).")
                     .Constraint("T", floats)
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(ConvShapeFn)
                     .Build());
  ops->push_back(ConvBuilder("ConvTranspose", "N-d transposed convolution (X: N x C x D1.., W: "
                                              "C x M/group x k1..).")
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

// --- Matrix products (kernels in nn_matmul.cc) -----------------------------------------------

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

void AddMatMulOps(std::vector<OpDef>* ops) {
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

// --- Normalisations (kernels in nn_norm.cc) --------------------------------------------------

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

void AddNormOps(std::vector<OpDef>* ops) {
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

// --- Pooling (kernels in nn_pool.cc) ---------------------------------------------------------

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

void AddPoolOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
  const DTypes hsd = HalfSingleDouble();
  ops->push_back(PoolBuilder("MaxPool", "Max pooling; optional flat Indices.", true)
                     .OptionalOutput("Indices", "I")
                     .IntAttr("ceil_mode", 0)
                     .IntAttr("storage_order", 0)
                     .Constraint("T", Join(floats, {v1::DT_INT8, v1::DT_UINT8}))
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
                     .ShapeFn(PoolShapeFn)
                     .Build());
  ops->push_back(PoolBuilder("AveragePool", "Average pooling.", true)
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
  ops->push_back(PoolBuilder("LpPool", "Lp-norm pooling.", false)
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

// --- Channels-last ops, domain graphopt (kernels in nn_conv.cc and nn_pool.cc) ---------------

// [N, spatial..., C] -> [N, C, spatial...], or back; shapes of rank < 2 are left alone.
std::optional<Dims> ToChannelsFirst(std::optional<Dims> s) {
  if (!s || s->size() < 2) return s;
  Dims out = {(*s)[0], s->back()};
  out.insert(out.end(), s->begin() + 1, s->end() - 1);
  return out;
}

std::optional<Dims> ToChannelsLast(std::optional<Dims> s) {
  if (!s || s->size() < 2) return s;
  Dims out = {(*s)[0]};
  out.insert(out.end(), s->begin() + 2, s->end());
  out.push_back((*s)[1]);
  return out;
}

// `inner` as the ONNX op's rule should see it: input 0 and every output channels-first.
class ChannelsFirstView : public InferenceContext {
 public:
  explicit ChannelsFirstView(InferenceContext& inner) : inner_(inner) {
    if (inner.has_input(0)) {
      x_ = inner.input_type(0);
      x_.shape = ToChannelsFirst(x_.shape);
    }
  }
  const Node& node() const override { return inner_.node(); }
  const OpDef& op() const override { return inner_.op(); }
  std::string NodeLabel() const override { return inner_.NodeLabel(); }
  int64_t opset_version() const override { return inner_.opset_version(); }
  const TensorType& input_type(int i) const override {
    return i == 0 ? x_ : inner_.input_type(i);
  }
  const v1::Tensor* input_constant(int i) const override { return inner_.input_constant(i); }
  const Dims* input_dims_value(int i) const override { return inner_.input_dims_value(i); }
  const v1::Attribute* attr(absl::string_view name) const override { return inner_.attr(name); }
  v1::DataType output_dtype(int i) const override { return inner_.output_dtype(i); }
  void set_output_dtype(int i, v1::DataType dtype) override { inner_.set_output_dtype(i, dtype); }
  void set_output_kind(int i, v1::ValueKind kind) override { inner_.set_output_kind(i, kind); }
  void set_output_shape(int i, std::optional<Dims> shape) override {
    inner_.set_output_shape(i, ToChannelsLast(std::move(shape)));
  }
  void set_output_dims_value(int i, Dims value) override {
    inner_.set_output_dims_value(i, std::move(value));
  }

 private:
  InferenceContext& inner_;
  TensorType x_;
};

absl::Status NhwcConvShapeFn(InferenceContext& ctx) {
  ChannelsFirstView view(ctx);
  return ConvShapeAt(view, 0, 1, 2);
}

absl::Status NhwcPoolShapeFn(InferenceContext& ctx) {
  ChannelsFirstView view(ctx);
  return PoolShapeFn(view);
}

absl::Status NhwcGlobalPoolShapeFn(InferenceContext& ctx) {
  ChannelsFirstView view(ctx);
  return GlobalPoolShapeFn(view);
}

OpDef InGraphoptDomain(OpDef def) {
  def.descriptor.set_domain(kLayoutDomain);
  return def;
}

void AddChannelsLastOps(std::vector<OpDef>* ops) {
  const DTypes f32 = {v1::DT_FLOAT32};
  ops->push_back(InGraphoptDomain(
      ConvBuilder(kNhwcConvOp,
                  "Conv on channels-last activations: X [N, spatial..., C], Y [N, spatial..., M]; "
                  "W [M, C/group, k...] and B [M] as Conv's.")
          .IntAttr("winograd", 0,
                   "1: compute with Winograd's algorithm where the runtime has it for the "
                   "shapes (3x3, stride 1; rounds differently from a direct convolution: "
                   "within 1e-5 of the largest output); 0: directly.")
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcConvShapeFn)
          .Build()));
  ops->push_back(InGraphoptDomain(
      PoolBuilder(kNhwcMaxPoolOp,
                  "MaxPool on channels-last activations: X and Y [N, spatial..., C]; no Indices "
                  "output.",
                  true)
          .IntAttr("ceil_mode", 0)
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcPoolShapeFn)
          .Build()));
  ops->push_back(InGraphoptDomain(
      PoolBuilder(kNhwcAveragePoolOp,
                  "AveragePool on channels-last activations: X and Y [N, spatial..., C].", true)
          .IntAttr("ceil_mode", 0)
          .IntAttr("count_include_pad", 0)
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcPoolShapeFn)
          .Build()));
  for (const char* name : {kNhwcGlobalAveragePoolOp, kNhwcGlobalMaxPoolOp}) {
    ops->push_back(InGraphoptDomain(
        OpBuilder(name, "GlobalAveragePool or GlobalMaxPool on channels-last activations: X "
                        "[N, spatial..., C], Y [N, 1..., C].")
            .Input("X", "T")
            .Output("Y", "T")
            .Constraint("T", f32)
            .Fusion(v1::FUSION_REDUCTION)
            .ShapeFn(NhwcGlobalPoolShapeFn)
            .Build()));
  }
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ListAttr(const InferenceContext& ctx,
                                              absl::string_view name, size_t expected,
                                              int64_t fill) {
  absl::StatusOr<std::vector<int64_t>> v = ctx.GetInts(name, std::vector<int64_t>(expected, fill));
  if (!v.ok()) return v.status();
  if (v->size() != expected) {
    return ctx.Error("attribute '", name, "' has ", v->size(), " values, expected ", expected);
  }
  return v;
}

void AddNnOps(std::vector<OpDef>* ops) {
  AddConvOps(ops);
  AddMatMulOps(ops);
  AddNormOps(ops);
  AddPoolOps(ops);
  AddChannelsLastOps(ops);
}

}  // namespace builtin_internal
}  // namespace graphopt
