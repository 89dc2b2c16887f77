// Gradients of the tensor ops (ops/tensor.cc, tensor_index.cc, tensor_shape.cc): shape ops,
// layout ops, slicing, indexing and scatters. Index, shape and axes operands are not
// differentiable. Each gradient is written in differentiable ops (Reshape, Transpose, Pad, Slice,
// Split, Concat, ScatterND, GatherND, ...), so that it can be differentiated again.

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "graph/constant_view.h"
#include "graph/gradient.h"
#include "ops/grad_table.h"
#include "ops/grad_util.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// The output gradient of a one-output op and whether input 0 wants a gradient; `skip` is true
// when there is nothing to do.
struct Unary {
  ValueId dy;
  bool skip;
};
Unary UnaryOf(const GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  return {dy, !dy.valid() || !ctx.needs_input_grad(0)};
}

absl::StatusOr<ValueId> Cast(GradientContext& ctx, ValueId v, v1::DataType to) {
  if (ctx.dtype(v) == to) return v;
  AttributeMap attrs;
  attrs["to"] = IntAttr(to);
  return ctx.Emit1("Cast", {v}, std::move(attrs));
}

// --- Shape-only ops ---------------------------------------------------------------------------

// Reshape, Flatten, Squeeze, Unsqueeze keep the elements in order: dx = Reshape(dy, Shape(x)).
absl::Status ReshapeGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ReshapeLike(ctx, u.dy, ctx.input(0)));
  return ctx.AddInputGrad(0, dx);
}

// Transpose(x, perm): dx = Transpose(dy, inverse(perm)).
absl::Status TransposeGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, ctx.input(0), "input 0"));
  std::vector<int64_t> reversed;
  for (int i = rank - 1; i >= 0; --i) reversed.push_back(i);
  GRAD_ASSIGN_OR_RETURN(const std::vector<int64_t> perm, ctx.GetInts("perm", reversed));
  if (static_cast<int>(perm.size()) != rank) {
    return ctx.Error("'perm' has ", perm.size(), " entries for rank ", rank);
  }
  std::vector<int64_t> inverse(rank, -1);
  for (int i = 0; i < rank; ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + rank : perm[i];
    if (p < 0 || p >= rank || inverse[p] >= 0) return ctx.Error("'perm' is not a permutation");
    inverse[p] = i;
  }
  AttributeMap attrs;
  attrs["perm"] = IntsAttr(inverse);
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Transpose", {u.dy}, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// Expand(x, shape): x was broadcast; its gradient is summed back (SumToShape).
absl::Status ExpandGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(ValueId dx, SumToShape(ctx, u.dy, ctx.input(0)));
  return ctx.AddInputGrad(0, dx);
}

// Dropout: the identity when not training; in training, output = x * mask / (1 - ratio), so
// dx = dy * mask / (1 - ratio), which needs the mask output.
absl::Status DropoutGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  bool training = false;
  if (!OpsetBefore(ctx, 12) && ctx.has_input(2)) {
    std::optional<ConstantView> mode = ConstantView::Of(ctx.graph(), ctx.input(2));
    if (!mode || mode->num_elements() != 1) {
      return ctx.Error("input 2 (training_mode) must be a constant to differentiate Dropout");
    }
    training = mode->AsDouble(0) != 0;
  }
  if (!training) return ctx.AddInputGrad(0, u.dy);
  const ValueId mask = ctx.output(1);
  if (!mask.valid()) {
    return ctx.Error("Dropout in training mode is differentiated through its mask: the node "
                     "must have output 1 (mask)");
  }
  const v1::DataType dtype = ctx.dtype(ctx.input(0));
  ValueId keep;
  if (ctx.has_input(1)) {
    GRAD_ASSIGN_OR_RETURN(ValueId ratio, Cast(ctx, ctx.input(1), dtype));
    GRAD_ASSIGN_OR_RETURN(keep, ctx.Emit1("Sub", {ScalarConstant(ctx, 1.0, dtype), ratio}));
  } else {
    keep = ScalarConstant(ctx, 0.5, dtype);
  }
  GRAD_ASSIGN_OR_RETURN(ValueId maskf, Cast(ctx, mask, dtype));
  GRAD_ASSIGN_OR_RETURN(ValueId kept, ctx.Emit1("Mul", {u.dy, maskf}));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Div", {kept, keep}));
  return ctx.AddInputGrad(0, dx);
}

// --- Concat, Split ----------------------------------------------------------------------------

// Split(x, sizes) along `axis` into sizes.size() outputs, in the graph's opset's form ('split'
// is an attribute before opset 13). `sizes_value` (an int64 1-D value) replaces `sizes` when
// valid (opset 13 and later only).
absl::StatusOr<std::vector<ValueId>> EmitSplit(GradientContext& ctx, ValueId x, int64_t axis,
                                               const std::vector<int64_t>& sizes,
                                               ValueId sizes_value, int n) {
  AttributeMap attrs;
  attrs["axis"] = IntAttr(axis);
  if (OpsetBefore(ctx, 13)) {
    if (sizes_value.valid()) {
      return ctx.Error("the split sizes along axis ", axis,
                       " are known only at run time, and Split takes them as an attribute "
                       "before opset 13");
    }
    attrs["split"] = IntsAttr(sizes);
    return ctx.Emit("Split", {x}, std::move(attrs), n);
  }
  const ValueId s = sizes_value.valid() ? sizes_value : Int64Constant(ctx, sizes);
  return ctx.Emit("Split", {x, s}, std::move(attrs), n);
}

// Concat(x_0, ..., x_n-1; axis): dy split along axis into the inputs' sizes.
absl::Status ConcatGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  const int n = ctx.num_inputs();
  bool any = false;
  for (int i = 0; i < n; ++i) any |= ctx.needs_input_grad(i);
  if (!any) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, ctx.output(0), "output 0"));
  GRAD_ASSIGN_OR_RETURN(int64_t axis, ctx.GetInt("axis", 0));
  if (axis < -rank || axis >= rank) return ctx.Error("'axis' is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  if (n == 1) return ctx.AddInputGrad(0, dy);
  std::vector<int64_t> sizes;
  bool known = true;
  for (int i = 0; i < n; ++i) {
    const std::optional<Dims>& s = ctx.shape(ctx.input(i));
    if (!s || static_cast<int>(s->size()) != rank || !(*s)[axis].is_known()) {
      known = false;
      break;
    }
    sizes.push_back((*s)[axis].size());
  }
  ValueId sizes_value;
  if (!known && !OpsetBefore(ctx, 13)) {
    // [dim axis of each input], from their shapes at run time.
    std::vector<ValueId> parts;
    const ValueId index = Int64Constant(ctx, {axis});
    for (int i = 0; i < n; ++i) {
      GRAD_ASSIGN_OR_RETURN(ValueId shape, ShapeOf(ctx, ctx.input(i)));
      GRAD_ASSIGN_OR_RETURN(ValueId d, ctx.Emit1("Gather", {shape, index}));
      parts.push_back(d);
    }
    AttributeMap attrs;
    attrs["axis"] = IntAttr(0);
    GRAD_ASSIGN_OR_RETURN(sizes_value, ctx.Emit1("Concat", parts, std::move(attrs)));
  }
  GRAD_ASSIGN_OR_RETURN(const std::vector<ValueId> parts,
                        EmitSplit(ctx, dy, axis, sizes, sizes_value, n));
  for (int i = 0; i < n; ++i) {
    if (ctx.needs_input_grad(i)) GRAD_RETURN_IF_ERROR(ctx.AddInputGrad(i, parts[i]));
  }
  return absl::OkStatus();
}

// Split(x; axis) -> y_0, ..., y_n-1: dx = Concat(dy_0, ..., dy_n-1) along axis, zeros for the
// outputs without a gradient.
absl::Status SplitGradient(GradientContext& ctx) {
  if (!ctx.needs_input_grad(0)) return absl::OkStatus();
  std::vector<ValueId> parts;
  bool any = false;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const ValueId g = ctx.output_grad(i);
    any |= g.valid();
    if (g.valid()) {
      parts.push_back(g);
      continue;
    }
    if (!ctx.output(i).valid()) return ctx.Error("output ", i, " is absent");
    GRAD_ASSIGN_OR_RETURN(ValueId zeros, ZerosLike(ctx, ctx.output(i)));
    parts.push_back(zeros);
  }
  if (!any) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int64_t axis, ctx.GetInt("axis", 0));
  if (parts.size() == 1) return ctx.AddInputGrad(0, parts[0]);
  AttributeMap attrs;
  attrs["axis"] = IntAttr(axis);
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Concat", parts, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// --- Flat positions ---------------------------------------------------------------------------

// Range(0, Size(x)) reshaped to x's shape: each element's flat position, as int64. Indexing ops
// applied to it give, for each element they produce, the flat position of its source.
absl::StatusOr<ValueId> FlatPositions(GradientContext& ctx, ValueId x) {
  if (OpsetBefore(ctx, 11)) {
    return ctx.Error("this gradient scatters with ScatterND and Range, which need opset 11");
  }
  GRAD_ASSIGN_OR_RETURN(ValueId n, ctx.Emit1("Size", {x}));
  GRAD_ASSIGN_OR_RETURN(ValueId iota, ctx.Emit1("Range", {ScalarConstant(ctx, 0, v1::DT_INT64), n,
                                                          ScalarConstant(ctx, 1, v1::DT_INT64)}));
  return ReshapeLike(ctx, iota, x);
}

// The gradient of x for an op whose output element k is x's element at flat position
// positions[k] (an int64 tensor of dy's shape): dy scattered into zeros of x's shape at those
// positions, summed where a position repeats when `accumulate`.
absl::StatusOr<ValueId> ScatterToPositions(GradientContext& ctx, ValueId x, ValueId positions,
                                           ValueId dy, bool accumulate) {
  const ValueId flat_shape = Int64Constant(ctx, {-1});
  GRAD_ASSIGN_OR_RETURN(ValueId zeros, ZerosLike(ctx, x));
  GRAD_ASSIGN_OR_RETURN(ValueId flat_zeros, ctx.Emit1("Reshape", {zeros, flat_shape}));
  GRAD_ASSIGN_OR_RETURN(ValueId index,
                        ctx.Emit1("Reshape", {positions, Int64Constant(ctx, {-1, 1})}));
  GRAD_ASSIGN_OR_RETURN(ValueId updates, ctx.Emit1("Reshape", {dy, flat_shape}));
  AttributeMap attrs;
  if (accumulate) attrs["reduction"] = StringAttr("add");
  GRAD_ASSIGN_OR_RETURN(ValueId flat,
                        ctx.Emit1("ScatterND", {flat_zeros, index, updates}, std::move(attrs)));
  return ReshapeLike(ctx, flat, x);
}

// The forward node's own op, attributes and operands, with `positions` for input 0: for an op
// that only moves elements, the flat position in input 0 of each element it produces.
absl::StatusOr<ValueId> SameOpOnPositions(GradientContext& ctx, ValueId positions) {
  std::vector<ValueId> inputs = {positions};
  for (int i = 1; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  return ctx.Emit1(ctx.node().op_type, inputs, ctx.node().attributes, ctx.node().domain);
}

// Ops that pick elements of input 0, each at most once (`accumulate` false) or possibly several
// times (true): dy scattered to the positions they pick (Compress; Resize and Upsample in mode
// nearest).
absl::Status PickedGradient(GradientContext& ctx, bool accumulate) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  const std::string& op = ctx.node().op_type;
  if (op == "Resize" || op == "Upsample") {
    GRAD_ASSIGN_OR_RETURN(const std::string mode, ctx.GetString("mode", "nearest"));
    if (mode != "nearest") {
      return ctx.Error(op, " in mode '", mode, "' is not differentiated (only 'nearest')");
    }
  }
  const ValueId x = ctx.input(0);
  GRAD_ASSIGN_OR_RETURN(ValueId positions, FlatPositions(ctx, x));
  GRAD_ASSIGN_OR_RETURN(ValueId picked, SameOpOnPositions(ctx, positions));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ScatterToPositions(ctx, x, picked, u.dy, accumulate));
  return ctx.AddInputGrad(0, dx);
}

// ReverseSequence reverses each sequence's first sequence_lens[b] steps: its own inverse.
absl::Status ReverseSequenceGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(ValueId dx,
                        ctx.Emit1("ReverseSequence", {u.dy, ctx.input(1)}, ctx.node().attributes));
  return ctx.AddInputGrad(0, dx);
}

// --- Slice, Pad ---------------------------------------------------------------------------------

// Pad(x, pads) with constant zeros, in the graph's opset's form (pads an attribute before 11).
absl::StatusOr<ValueId> EmitZeroPad(GradientContext& ctx, ValueId x,
                                    const std::vector<int64_t>& pads) {
  return EmitWithInts(ctx, "Pad", {x}, "pads", pads, 11);
}

// The [begin, end) range a Slice with step 1 keeps of a dim of size d (ONNX's clamping).
std::pair<int64_t, int64_t> SliceRange(int64_t start, int64_t end, int64_t d) {
  if (start < 0) start += d;
  if (end < 0) end += d;
  start = std::clamp<int64_t>(start, 0, d);
  end = std::clamp<int64_t>(end, 0, d);
  return {start, std::max(start, end)};
}

// Slice(x, starts, ends, axes, steps) (attributes before opset 10). With constant operands,
// unit steps and x's dims known, dx = Pad(dy) with zeros; otherwise dy is scattered to the flat
// positions that the same Slice picks from x's positions.
absl::Status SliceGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  const ValueId x = ctx.input(0);
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, x, "input 0"));
  GRAD_ASSIGN_OR_RETURN(const GradInts starts, IntsAttrOrInput(ctx, "starts", 1));
  GRAD_ASSIGN_OR_RETURN(const GradInts ends, IntsAttrOrInput(ctx, "ends", 2));
  GRAD_ASSIGN_OR_RETURN(const GradInts axes, IntsAttrOrInput(ctx, "axes", 3));
  const GradInts steps = {ctx.has_input(4), ConstantInts(ctx, ctx.input(4))};
  const std::optional<std::vector<int64_t>> dims = KnownDims(ctx, x);
  bool unit_steps = !steps.given || (steps.values.has_value());
  if (steps.given && steps.values) {
    for (int64_t s : *steps.values) unit_steps &= s == 1;
  }
  if (dims && starts.values && ends.values && (!axes.given || axes.values) && unit_steps &&
      starts.values->size() == ends.values->size()) {
    std::vector<int64_t> axis_list;
    if (axes.given) {
      axis_list = *axes.values;
    } else {
      for (size_t i = 0; i < starts.values->size(); ++i) axis_list.push_back(static_cast<int64_t>(i));
    }
    if (axis_list.size() != starts.values->size()) {
      return ctx.Error("'axes' has ", axis_list.size(), " entries for ", starts.values->size(),
                       " starts");
    }
    std::vector<int64_t> pads(2 * rank, 0);
    for (size_t i = 0; i < axis_list.size(); ++i) {
      int64_t a = axis_list[i];
      if (a < -rank || a >= rank) return ctx.Error("axis ", a, " is out of range for rank ", rank);
      if (a < 0) a += rank;
      const int64_t d = (*dims)[a];
      const auto [begin, end] = SliceRange((*starts.values)[i], (*ends.values)[i], d);
      pads[a] = begin;
      pads[rank + a] = d - end;
    }
    GRAD_ASSIGN_OR_RETURN(ValueId dx, EmitZeroPad(ctx, u.dy, pads));
    return ctx.AddInputGrad(0, dx);
  }
  if (OpsetBefore(ctx, 10)) {
    return ctx.Error("differentiating a Slice whose input dims are not all known needs opset 10");
  }
  GRAD_ASSIGN_OR_RETURN(ValueId positions, FlatPositions(ctx, x));
  GRAD_ASSIGN_OR_RETURN(ValueId picked, SameOpOnPositions(ctx, positions));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ScatterToPositions(ctx, x, picked, u.dy, false));
  return ctx.AddInputGrad(0, dx);
}

// Pad(x, pads, constant_value, axes) (pads and value attributes before opset 11).
// Constant mode: dx = Pad(dy, -pads), which crops the padding and pads back what negative pads
// cropped; d constant_value = sum(dy) - sum(dx). Edge, reflect and wrap: dy scattered, summed,
// to the positions the same Pad reads from x.
absl::Status PadGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  const ValueId x = ctx.input(0);
  GRAD_ASSIGN_OR_RETURN(const std::string mode, ctx.GetString("mode", "constant"));
  const bool old = OpsetBefore(ctx, 11);
  if (mode != "constant") {
    if (!ctx.needs_input_grad(0)) return absl::OkStatus();
    if (old) return ctx.Error("Pad mode '", mode, "' is differentiated from opset 11");
    GRAD_ASSIGN_OR_RETURN(ValueId positions, FlatPositions(ctx, x));
    std::vector<ValueId> inputs = {positions, ctx.input(1), ValueId(), ctx.input(3)};
    while (!inputs.back().valid()) inputs.pop_back();
    AttributeMap attrs;
    attrs["mode"] = StringAttr(mode);
    GRAD_ASSIGN_OR_RETURN(ValueId picked, ctx.Emit1("Pad", inputs, std::move(attrs)));
    GRAD_ASSIGN_OR_RETURN(ValueId dx, ScatterToPositions(ctx, x, picked, dy, true));
    return ctx.AddInputGrad(0, dx);
  }
  ValueId dx;
  if (old) {
    GRAD_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ctx.GetInts("pads", {}));
    for (int64_t& p : pads) p = -p;
    GRAD_ASSIGN_OR_RETURN(dx, EmitZeroPad(ctx, dy, pads));
  } else {
    ValueId negated;
    if (std::optional<std::vector<int64_t>> pads = ConstantInts(ctx, ctx.input(1))) {
      for (int64_t& p : *pads) p = -p;
      negated = Int64Constant(ctx, *pads);
    } else {
      GRAD_ASSIGN_OR_RETURN(negated, ctx.Emit1("Neg", {ctx.input(1)}));
    }
    std::vector<ValueId> inputs = {dy, negated, ValueId(), ctx.input(3)};
    while (!inputs.back().valid()) inputs.pop_back();
    GRAD_ASSIGN_OR_RETURN(dx, ctx.Emit1("Pad", inputs));
  }
  if (ctx.needs_input_grad(0)) GRAD_RETURN_IF_ERROR(ctx.AddInputGrad(0, dx));
  if (!old && ctx.needs_input_grad(2)) {
    AttributeMap attrs;
    attrs["keepdims"] = IntAttr(0);
    GRAD_ASSIGN_OR_RETURN(ValueId total, ctx.Emit1("ReduceSum", {dy}, attrs));
    GRAD_ASSIGN_OR_RETURN(ValueId inner, ctx.Emit1("ReduceSum", {dx}, attrs));
    GRAD_ASSIGN_OR_RETURN(ValueId dv, ctx.Emit1("Sub", {total, inner}));
    GRAD_ASSIGN_OR_RETURN(dv, ReshapeLike(ctx, dv, ctx.input(2)));
    GRAD_RETURN_IF_ERROR(ctx.AddInputGrad(2, dv));
  }
  return absl::OkStatus();
}

// --- Gather and scatter ---------------------------------------------------------------------

absl::StatusOr<ValueId> Int64Indices(GradientContext& ctx, ValueId indices) {
  return Cast(ctx, indices, v1::DT_INT64);
}

// Gather(data, indices; axis): dy added into zeros at the gathered positions (ScatterND with
// reduction add: repeated indices sum). Along axis 0 the rows are scattered directly; along
// another axis, dy goes to the flat positions that the same Gather picks.
absl::Status GatherGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  const ValueId data = ctx.input(0);
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, data, "input 0"));
  GRAD_ASSIGN_OR_RETURN(int64_t axis, ctx.GetInt("axis", 0));
  if (axis < -rank || axis >= rank) return ctx.Error("'axis' is out of range for rank ", rank);
  if (axis < 0) axis += rank;
  if (OpsetBefore(ctx, 11)) return ctx.Error("Gather is differentiated from opset 11 (ScatterND)");
  if (axis != 0) {
    GRAD_ASSIGN_OR_RETURN(ValueId positions, FlatPositions(ctx, data));
    AttributeMap attrs;
    attrs["axis"] = IntAttr(axis);
    GRAD_ASSIGN_OR_RETURN(ValueId picked,
                          ctx.Emit1("Gather", {positions, ctx.input(1)}, std::move(attrs)));
    GRAD_ASSIGN_OR_RETURN(ValueId dx, ScatterToPositions(ctx, data, picked, u.dy, true));
    return ctx.AddInputGrad(0, dx);
  }
  GRAD_ASSIGN_OR_RETURN(const int index_rank, RankOf(ctx, ctx.input(1), "input 1 (indices)"));
  GRAD_ASSIGN_OR_RETURN(ValueId indices, Int64Indices(ctx, ctx.input(1)));
  GRAD_ASSIGN_OR_RETURN(ValueId index, UnsqueezeAxes(ctx, indices, {index_rank}));
  GRAD_ASSIGN_OR_RETURN(ValueId zeros, ZerosLike(ctx, data));
  AttributeMap attrs;
  attrs["reduction"] = StringAttr("add");
  GRAD_ASSIGN_OR_RETURN(ValueId dx,
                        ctx.Emit1("ScatterND", {zeros, index, u.dy}, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// GatherElements(data, indices; axis): dx = ScatterElements(zeros, indices, dy; axis, add).
absl::Status GatherElementsGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(ValueId zeros, ZerosLike(ctx, ctx.input(0)));
  AttributeMap attrs;
  GRAD_ASSIGN_OR_RETURN(const int64_t axis, ctx.GetInt("axis", 0));
  attrs["axis"] = IntAttr(axis);
  attrs["reduction"] = StringAttr("add");
  GRAD_ASSIGN_OR_RETURN(
      ValueId dx, ctx.Emit1("ScatterElements", {zeros, ctx.input(1), u.dy}, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// GatherND(data, indices) with batch_dims 0: dx = ScatterND(zeros, indices, dy; add).
absl::Status GatherNdGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int64_t batch_dims, ctx.GetInt("batch_dims", 0));
  if (batch_dims != 0) return ctx.Error("GatherND with batch_dims ", batch_dims, " is not differentiated");
  GRAD_ASSIGN_OR_RETURN(ValueId zeros, ZerosLike(ctx, ctx.input(0)));
  AttributeMap attrs;
  attrs["reduction"] = StringAttr("add");
  GRAD_ASSIGN_OR_RETURN(ValueId dx,
                        ctx.Emit1("ScatterND", {zeros, ctx.input(1), u.dy}, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// ScatterND / ScatterElements(data, indices, updates): d updates = Gather*(dy, indices);
// d data = dy, with the overwritten positions zeroed for reduction 'none' (a scatter of zeros).
// A position written twice with 'none' keeps the last update; the gradient then still reaches
// every update written there.
absl::Status ScatterGradient(GradientContext& ctx, bool elements) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const std::string reduction, ctx.GetString("reduction", "none"));
  if (reduction != "none" && reduction != "add") {
    return ctx.Error("a scatter with reduction '", reduction, "' is not differentiated");
  }
  AttributeMap axis_attrs;
  if (elements) {
    GRAD_ASSIGN_OR_RETURN(const int64_t axis, ctx.GetInt("axis", 0));
    axis_attrs["axis"] = IntAttr(axis);
  }
  const ValueId indices = ctx.input(1);
  if (ctx.needs_input_grad(0)) {
    ValueId dd = dy;
    if (reduction == "none") {
      GRAD_ASSIGN_OR_RETURN(ValueId zeros, ZerosLike(ctx, ctx.input(2)));
      GRAD_ASSIGN_OR_RETURN(dd, ctx.Emit1(elements ? "ScatterElements" : "ScatterND",
                                          {dy, indices, zeros}, axis_attrs));
    }
    GRAD_RETURN_IF_ERROR(ctx.AddInputGrad(0, dd));
  }
  if (ctx.needs_input_grad(2)) {
    GRAD_ASSIGN_OR_RETURN(ValueId du, ctx.Emit1(elements ? "GatherElements" : "GatherND",
                                                {dy, indices}, axis_attrs));
    GRAD_RETURN_IF_ERROR(ctx.AddInputGrad(2, du));
  }
  return absl::OkStatus();
}

// TopK(x, k; axis) -> values, indices: d x = ScatterElements(zeros, indices, d values; axis)
// (the indices along the axis are distinct).
absl::Status TopKGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  if (!ctx.output(1).valid()) return ctx.Error("TopK is differentiated through output 1 (indices)");
  GRAD_ASSIGN_OR_RETURN(const int64_t axis, ctx.GetInt("axis", -1));
  GRAD_ASSIGN_OR_RETURN(ValueId zeros, ZerosLike(ctx, ctx.input(0)));
  AttributeMap attrs;
  attrs["axis"] = IntAttr(axis);
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("ScatterElements", {zeros, ctx.output(1), u.dy},
                                              std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// --- Tile, CumSum, Trilu, DepthToSpace, SpaceToDepth -------------------------------------------

// Tile(x, repeats): dy viewed as [r0, d0, r1, d1, ...] summed over the r axes.
absl::Status TileGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  const ValueId x = ctx.input(0);
  GRAD_ASSIGN_OR_RETURN(const int rank, RankOf(ctx, x, "input 0"));
  if (rank == 0) return ctx.AddInputGrad(0, u.dy);
  ValueId view_shape;
  const std::optional<std::vector<int64_t>> repeats = ConstantInts(ctx, ctx.input(1));
  const std::optional<std::vector<int64_t>> dims = KnownDims(ctx, x);
  if (repeats && dims && static_cast<int>(repeats->size()) == rank) {
    std::vector<int64_t> view;
    for (int i = 0; i < rank; ++i) {
      view.push_back((*repeats)[i]);
      view.push_back((*dims)[i]);
    }
    view_shape = Int64Constant(ctx, view);
  } else {
    // Interleave repeats and Shape(x): Concat([r, 1], [d, 1]; axis 1) read row by row.
    GRAD_ASSIGN_OR_RETURN(ValueId r64, Int64Indices(ctx, ctx.input(1)));
    GRAD_ASSIGN_OR_RETURN(ValueId shape, ShapeOf(ctx, x));
    GRAD_ASSIGN_OR_RETURN(ValueId rc, UnsqueezeAxes(ctx, r64, {1}));
    GRAD_ASSIGN_OR_RETURN(ValueId dc, UnsqueezeAxes(ctx, shape, {1}));
    AttributeMap attrs;
    attrs["axis"] = IntAttr(1);
    GRAD_ASSIGN_OR_RETURN(ValueId pairs, ctx.Emit1("Concat", {rc, dc}, std::move(attrs)));
    GRAD_ASSIGN_OR_RETURN(view_shape, ctx.Emit1("Reshape", {pairs, Int64Constant(ctx, {-1})}));
  }
  GRAD_ASSIGN_OR_RETURN(ValueId view, ctx.Emit1("Reshape", {u.dy, view_shape}));
  std::vector<int64_t> axes;
  for (int i = 0; i < rank; ++i) axes.push_back(2 * i);
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ReduceSumAxes(ctx, view, axes, false));
  return ctx.AddInputGrad(0, dx);
}

// CumSum(x, axis): each x_i reaches the sums that include it, so dx is the cumulative sum of
// dy in the other direction (same exclusivity).
absl::Status CumSumGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int64_t exclusive, ctx.GetInt("exclusive", 0));
  GRAD_ASSIGN_OR_RETURN(const int64_t reverse, ctx.GetInt("reverse", 0));
  AttributeMap attrs;
  attrs["exclusive"] = IntAttr(exclusive);
  attrs["reverse"] = IntAttr(reverse != 0 ? 0 : 1);
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("CumSum", {u.dy, ctx.input(1)}, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// Trilu(x, k; upper): a mask, so dx = Trilu(dy, k; upper).
absl::Status TriluGradient(GradientContext& ctx) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int64_t upper, ctx.GetInt("upper", 1));
  AttributeMap attrs;
  attrs["upper"] = IntAttr(upper);
  std::vector<ValueId> inputs = {u.dy};
  if (ctx.has_input(1)) inputs.push_back(ctx.input(1));
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1("Trilu", inputs, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

// SpaceToDepth and DepthToSpace in mode DCR are each other's inverse permutations of the
// elements. DepthToSpace in mode CRD views x [N, C, H, W] as [N, C/b², b, b, H, W] and permutes
// it by (0, 1, 4, 2, 5, 3): its gradient views dy as [N, C/b², H, b, W, b] and permutes it back,
// which needs x's dims.
absl::Status DepthSpaceGradient(GradientContext& ctx, bool depth_to_space) {
  const Unary u = UnaryOf(ctx);
  if (u.skip) return absl::OkStatus();
  GRAD_ASSIGN_OR_RETURN(const int64_t block, ctx.GetInt("blocksize", 0));
  std::string mode = "DCR";
  if (depth_to_space) {
    GRAD_ASSIGN_OR_RETURN(mode, ctx.GetString("mode", "DCR"));
  }
  if (mode == "CRD") {
    const std::optional<std::vector<int64_t>> dims = KnownDims(ctx, ctx.input(0));
    if (!dims || dims->size() != 4 || block <= 0) {
      return ctx.Error("DepthToSpace mode CRD is differentiated for 4-D inputs of known dims");
    }
    const std::vector<int64_t>& d = *dims;
    GRAD_ASSIGN_OR_RETURN(
        ValueId view,
        ctx.Emit1("Reshape", {u.dy, Int64Constant(ctx, {d[0], d[1] / (block * block), d[2], block,
                                                         d[3], block})}));
    AttributeMap attrs;
    attrs["perm"] = IntsAttr({0, 1, 3, 5, 2, 4});
    GRAD_ASSIGN_OR_RETURN(ValueId back, ctx.Emit1("Transpose", {view}, std::move(attrs)));
    GRAD_ASSIGN_OR_RETURN(ValueId dx, ReshapeLike(ctx, back, ctx.input(0)));
    return ctx.AddInputGrad(0, dx);
  }
  if (mode != "DCR") return ctx.Error("DepthToSpace mode '", mode, "' is not differentiated");
  AttributeMap attrs;
  attrs["blocksize"] = IntAttr(block);
  GRAD_ASSIGN_OR_RETURN(ValueId dx, ctx.Emit1(depth_to_space ? "SpaceToDepth" : "DepthToSpace",
                                              {u.dy}, std::move(attrs)));
  return ctx.AddInputGrad(0, dx);
}

}  // namespace

void AddTensorGradients(GradientTable* table) {
  (*table)["Reshape"] = {ReshapeGradient, {1}};
  (*table)["Flatten"] = {ReshapeGradient, {}};
  (*table)["Squeeze"] = {ReshapeGradient, {1}};
  (*table)["Unsqueeze"] = {ReshapeGradient, {1}};
  (*table)["Transpose"] = {TransposeGradient, {}};
  (*table)["Expand"] = {ExpandGradient, {1}};
  (*table)["Dropout"] = {DropoutGradient, {1, 2}};
  (*table)["Concat"] = {ConcatGradient, {}};
  (*table)["Split"] = {SplitGradient, {1}};
  (*table)["Slice"] = {SliceGradient, {1, 2, 3, 4}};
  (*table)["Pad"] = {PadGradient, {1, 3}};
  (*table)["Gather"] = {GatherGradient, {1}};
  (*table)["GatherElements"] = {GatherElementsGradient, {1}};
  (*table)["GatherND"] = {GatherNdGradient, {1}};
  (*table)["ScatterND"] = {[](GradientContext& ctx) { return ScatterGradient(ctx, false); }, {1}};
  (*table)["ScatterElements"] = {[](GradientContext& ctx) { return ScatterGradient(ctx, true); },
                                 {1}};
  (*table)["TopK"] = {TopKGradient, {1}};
  (*table)["Tile"] = {TileGradient, {1}};
  (*table)["CumSum"] = {CumSumGradient, {1}};
  (*table)["Trilu"] = {TriluGradient, {1}};
  (*table)["DepthToSpace"] = {[](GradientContext& ctx) { return DepthSpaceGradient(ctx, true); },
                              {}};
  (*table)["Compress"] = {[](GradientContext& ctx) { return PickedGradient(ctx, false); }, {1}};
  (*table)["Resize"] = {[](GradientContext& ctx) { return PickedGradient(ctx, true); },
                        {1, 2, 3}};
  (*table)["Upsample"] = {[](GradientContext& ctx) { return PickedGradient(ctx, true); }, {1}};
  (*table)["ReverseSequence"] = {ReverseSequenceGradient, {1}};
  (*table)["SpaceToDepth"] = {[](GradientContext& ctx) { return DepthSpaceGradient(ctx, false); },
                              {}};
}

}  // namespace builtin_internal
}  // namespace graphopt
