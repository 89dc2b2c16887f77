// The window attributes and shape rules that convolutions and pools share (nn_conv.cc,
// nn_pool.cc), and the channels-last ops of ops/layout_ops.h: NhwcConv and the NHWC pools. Their
// shape rules are the ONNX ops' rules seen through a transposition: input X is presented to the
// ONNX rule as [N, C, spatial...], and the rule's output [N, M, spatial...] is recorded as
// [N, spatial..., M]. Kernels in runtime/kernels/nn_conv.cc and nn_pool.cc.

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
  if (std::optional<Dims> b = InputShape(ctx, b_input)) {
    if (b->size() != 1) return ctx.Error("input B must be 1-D, got ", ShapeToString(b));
    absl::StatusOr<Dim> merged = MergeEqualDims(m, (*b)[0]);
    if (!merged.ok()) {
      return ctx.Error("input B ", ShapeToString(b), " does not match W's ", m.ToString(),
                       " output channels");
    }
    m = *std::move(merged);
  }
  absl::StatusOr<Dims> sp = SpatialOutput(ctx, x, spatial, *win);
  if (!sp.ok()) return sp.status();
  Dims out = {x ? (*x)[0] : Dim::Unknown(), m};
  out.insert(out.end(), sp->begin(), sp->end());
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

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

void AddNnChannelsLastOps(std::vector<OpDef>* ops) {
  const DTypes f32 = {v1::DT_FLOAT32};
  ops->push_back(InGraphoptDomain(
      WindowAttrs(OpBuilder(kNhwcConvOp,
                            "Conv on channels-last activations: X [N, spatial..., C], "
                            "Y [N, spatial..., M]; W [M, C/group, k...] and B [M] as Conv's."),
                  false)
          .Input("X", "T")
          .Input("W", "T")
          .OptionalInput("B", "T")
          .Output("Y", "T")
          .IntAttr("group", 1)
          .IntAttr("winograd", 0,
                   "1: compute with Winograd's algorithm where the runtime has it for the "
                   "shapes (3x3, stride 1; rounds differently from a direct convolution: "
                   "within 1e-5 of the largest output); 0: directly.")
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcConvShapeFn)
          .Build()));
  ops->push_back(InGraphoptDomain(
      WindowAttrs(OpBuilder(kNhwcMaxPoolOp,
                            "MaxPool on channels-last activations: X and Y [N, spatial..., C]; "
                            "no Indices output."),
                  true)
          .Input("X", "T")
          .Output("Y", "T")
          .IntAttr("ceil_mode", 0)
          .Constraint("T", f32)
          .Fusion(v1::FUSION_OUT_ELEMWISE_FUSABLE)
          .ShapeFn(NhwcPoolShapeFn)
          .Build()));
  ops->push_back(InGraphoptDomain(
      WindowAttrs(OpBuilder(kNhwcAveragePoolOp,
                            "AveragePool on channels-last activations: X and Y "
                            "[N, spatial..., C]."),
                  true)
          .Input("X", "T")
          .Output("Y", "T")
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

}  // namespace builtin_internal
}  // namespace graphopt
