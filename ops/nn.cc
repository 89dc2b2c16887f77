// Neural-network builtin operators: MatMul, Gemm, Conv, pooling, normalisations, Softmax,
// reductions, ArgMax/ArgMin and TopK.

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

namespace {

absl::Status ConvShapeFn(InferenceContext& ctx) { return ConvShapeAt(ctx, 0, 1, 2); }

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

}  // namespace

absl::StatusOr<int64_t> CheckedAxis(const InferenceContext& ctx, const std::optional<Dims>& x) {
  absl::StatusOr<int64_t> axis = ctx.GetInt("axis");
  if (!axis.ok()) return axis.status();
  if (!x) return -1;
  absl::StatusOr<int64_t> n = NormalizeAxis(*axis, static_cast<int64_t>(x->size()),
                                            "attribute 'axis'");
  if (!n.ok()) return NodeError(ctx, n.status());
  return n;
}

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

namespace {

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

}  // namespace

absl::Status ReduceShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> keepdims = ctx.GetInt("keepdims");
  if (!keepdims.ok()) return keepdims.status();
  absl::StatusOr<int64_t> noop = ctx.GetInt("noop_with_empty_axes");
  if (!noop.ok()) return noop.status();
  absl::StatusOr<IntsOperand> axes = IntsFromAttrOrInput(ctx, "axes", 1);
  if (!axes.ok()) return axes.status();
  const char* what = ctx.has_input(1) ? "input 'axes'" : "attribute 'axes'";
  if (axes->given && !axes->values) {
    // Which axes are reduced is unknown: with keepdims each dim either stays or becomes 1.
    if (!x || !*keepdims) {
      ctx.set_output_shape(0, std::nullopt);
      return absl::OkStatus();
    }
    Dims out = *x;
    for (Dim& d : out) {
      if (!(d.is_known() && d.size() == 1)) d = Dim::Unknown();
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const std::vector<int64_t> list = axes->values ? *axes->values : std::vector<int64_t>();
  if (list.empty() && *noop) {
    ctx.set_output_shape(0, x);
    return absl::OkStatus();
  }
  if (!x) {
    // Reducing everything without keepdims gives a scalar whatever the rank.
    ctx.set_output_shape(0, list.empty() && !*keepdims ? std::optional<Dims>(Dims{})
                                                       : std::nullopt);
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x->size());
  std::vector<bool> reduced(x->size(), list.empty());
  for (int64_t a : list) {
    absl::StatusOr<int64_t> n = NormalizeAxis(a, rank, what);
    if (!n.ok()) return NodeError(ctx, n.status());
    reduced[*n] = true;
  }
  Dims out;
  for (size_t i = 0; i < x->size(); ++i) {
    if (!reduced[i]) {
      out.push_back((*x)[i]);
    } else if (*keepdims) {
      out.push_back(Dim::Known(1));
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

namespace {

absl::Status ArgReduceShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> keepdims = ctx.GetInt("keepdims");
  if (!keepdims.ok()) return keepdims.status();
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  Dims out = *x;
  if (*keepdims) {
    out[*axis] = Dim::Known(1);
  } else {
    out.erase(out.begin() + *axis);
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status TopKShapeFn(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<int64_t> axis = CheckedAxis(ctx, x);
  if (!axis.ok()) return axis.status();
  std::optional<int64_t> k;
  if (ctx.has_input(1)) {
    std::optional<Dims> ks = InputShape(ctx, 1);
    const bool one_element = ks && (ks->empty() || (ks->size() == 1 && !((*ks)[0].is_known() &&
                                                                        (*ks)[0].size() != 1)));
    if (ks && !one_element) {
      return ctx.Error("input K must hold exactly one element, got shape ", ShapeToString(ks));
    }
    std::optional<std::vector<int64_t>> v = InputInts(ctx, 1);
    if (v && v->size() == 1) k = (*v)[0];
  } else {
    absl::StatusOr<int64_t> attr_k = ctx.GetInt("k");
    if (!attr_k.ok()) return attr_k.status();
    k = *attr_k;
  }
  if (!x) {
    for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, std::nullopt);
    return absl::OkStatus();
  }
  Dims out = *x;
  if (k) {
    const Dim& d = (*x)[*axis];
    if (*k < 0 || (d.is_known() && *k > d.size())) {
      return ctx.Error("K = ", *k, " is out of range for axis ", *axis, " of size ",
                       d.ToString());
    }
    out[*axis] = Dim::Known(*k);
  } else {
    out[*axis] = Dim::Unknown();
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, out);
  return absl::OkStatus();
}

}  // namespace

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

OpDef ReduceOpDef(absl::string_view name, absl::string_view doc, const DTypes& types) {
  return OpBuilder(name, doc)
      .Input("data", "T")
      .OptionalInput("axes", "Taxes")
      .Output("reduced", "T")
      .Attr("axes", v1::ATTR_INTS)
      .IntAttr("keepdims", 1)
      .IntAttr("noop_with_empty_axes", 0)
      .Constraint("T", types)
      .Constraint("Taxes", {v1::DT_INT64})
      .Fusion(v1::FUSION_REDUCTION)
      .ShapeFn(ReduceShapeFn)
      .Build();
}

void AddNnOps(std::vector<OpDef>* ops) {
  const DTypes floats = FloatTypes();
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
  ops->push_back(OpBuilder("Softmax", "Softmax along 'axis' (opsets < 13: of the input coerced "
                                      "to 2-D at 'axis', default 1).")
                     .Input("input", "T")
                     .Output("output", "T")
                     .IntAttr("axis", -1)
                     .Constraint("T", floats)
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SoftmaxShapeFn)
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
  const DTypes reduce_types = Join(floats, {v1::DT_INT32, v1::DT_INT64, v1::DT_UINT32,
                                            v1::DT_UINT64, v1::DT_INT8, v1::DT_UINT8});
  for (const char* name : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"}) {
    ops->push_back(ReduceOpDef(name, "Reduction over 'axes' (attribute, or input from opset 13 "
                                     "for ReduceSum and 18 for the others); all axes when empty.",
                               reduce_types));
  }
  const DTypes arg_types = Join(reduce_types, {v1::DT_INT16, v1::DT_UINT16});
  for (const char* name : {"ArgMax", "ArgMin"}) {
    ops->push_back(OpBuilder(name, "Index of the extreme element along 'axis' (int64).")
                       .Input("data", "T")
                       .Output("reduced", "I")
                       .IntAttr("axis", 0)
                       .IntAttr("keepdims", 1)
                       .IntAttr("select_last_index", 0)
                       .Constraint("T", arg_types)
                       .Constraint("I", {v1::DT_INT64})
                       .Fusion(v1::FUSION_REDUCTION)
                       .ShapeFn(ArgReduceShapeFn)
                       .Build());
  }
  ops->push_back(OpBuilder("TopK", "The K largest (or smallest) elements along 'axis'.")
                     .Input("X", "T")
                     .OptionalInput("K", "Tk", "1-D int64 of one element (opset 10+).")
                     .Output("Values", "T")
                     .Output("Indices", "I")
                     .IntAttr("axis", -1)
                     .IntAttr("largest", 1)
                     .IntAttr("sorted", 1)
                     .Attr("k", v1::ATTR_INT, "Opset < 10 only.")
                     .Constraint("T", NumericTypes())
                     .Constraint("Tk", {v1::DT_INT64})
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(TopKShapeFn)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
