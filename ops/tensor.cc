// The tensor family's Identity and layout ops, with ONNX semantics; kernels in
// runtime/kernels/tensor.cc, tensor_layout.cc and tensor_layout_resize.cc: Identity, Transpose,
// Concat, Split, Slice, ReverseSequence, DepthToSpace, SpaceToDepth, Resize, Upsample and Pad.
// The family's indexing and shape ops have their own files (tensor_index.cc, tensor_shape.cc).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// --- Identity (kernel in tensor.cc) ----------------------------------------------------------

// Identity: input 0's shape and contents.
absl::Status ShapeAndValueOfInput0(InferenceContext& ctx) {
  if (absl::Status s = SameShapeAsInput0(ctx); !s.ok()) return s;
  ForwardDimsValue(ctx);
  return absl::OkStatus();
}

// Identity passes sequences and optionals on as they are.
absl::Status KindOfInput0(InferenceContext& ctx) {
  ctx.set_output_kind(0, ctx.input_type(0).kind);
  return absl::OkStatus();
}

void AddIdentityOp(std::vector<OpDef>* ops) {
  ops->push_back(OpBuilder("Identity", "Returns its input.")
                     .Input("input", "T")
                     .Output("output", "T")
                     .Constraint("T", AllTypes())
                     .Fusion(v1::FUSION_ELEMWISE)
                     .InPlace(0, 0)
                     .TakesContainers()
                     .ShapeFn(ShapeAndValueOfInput0)
                     .TypeFn(KindOfInput0)
                     .Build());
}

// --- Layout ops (kernels in tensor_layout.cc) ------------------------------------------------

absl::Status TransposeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  std::optional<std::vector<int64_t>> perm;
  if (ctx.has_attr("perm")) {
    absl::StatusOr<std::vector<int64_t>> p = ctx.GetInts("perm");
    if (!p.ok()) return p.status();
    std::vector<bool> seen(p->size(), false);
    for (int64_t v : *p) {
      if (v < 0 || v >= static_cast<int64_t>(p->size()) || seen[v]) {
        return ctx.Error("attribute 'perm' ", IntsToString(*p), " is not a permutation of 0..",
                         static_cast<int64_t>(p->size()) - 1);
      }
      seen[v] = true;
    }
    if (x && x->size() != p->size()) {
      return ctx.Error("attribute 'perm' ", IntsToString(*p), " has ", p->size(),
                       " entries but the input ", ShapeToString(x), " has rank ", x->size());
    }
    perm = *std::move(p);
  }
  if (!x) {
    ctx.set_output_shape(0, perm ? std::optional<Dims>(UnknownDims(perm->size()))
                                 : std::nullopt);
    return absl::OkStatus();
  }
  Dims out;
  for (size_t i = 0; i < x->size(); ++i) {
    out.push_back((*x)[perm ? (*perm)[i] : x->size() - 1 - i]);
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status ConcatShape(InferenceContext& ctx) {
  // 'axis' is required from opset 4 and defaults to 1 before.
  absl::StatusOr<int64_t> axis_attr = OpsetBefore(ctx, 4) ? ctx.GetInt("axis", 1)
                                                          : ctx.GetInt("axis");
  if (!axis_attr.ok()) return axis_attr.status();
  std::vector<std::pair<int, std::optional<Dims>>> inputs;
  int ranked = -1;  // first input with a known rank
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    inputs.emplace_back(i, InputShape(ctx, i));
    const std::optional<Dims>& s = inputs.back().second;
    if (!s) continue;
    if (ranked < 0) {
      ranked = static_cast<int>(inputs.size()) - 1;
    } else if (s->size() != inputs[ranked].second->size()) {
      return ctx.Error("input ", i, " ", ShapeToString(s), " has rank ", s->size(),
                       " but input ", inputs[ranked].first, " ",
                       ShapeToString(inputs[ranked].second), " has rank ",
                       inputs[ranked].second->size());
    }
  }
  if (ranked < 0) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(inputs[ranked].second->size());
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, rank, "attribute 'axis'");
  if (!axis.ok()) return NodeError(ctx, axis.status());
  Dims out = *inputs[ranked].second;
  int64_t known_sum = 0;
  int non_known = 0;
  bool axis_unknown = false;
  for (const auto& [index, s] : inputs) {
    if (!s) {
      axis_unknown = true;
      continue;
    }
    for (int64_t k = 0; k < rank; ++k) {
      const Dim& d = (*s)[k];
      if (k == *axis) {
        if (d.is_known() && d.size() >= 0) {
          std::optional<int64_t> sum = CheckedAdd(known_sum, d.size());
          if (!sum) axis_unknown = true;
          known_sum = sum.value_or(0);
        } else {
          ++non_known;
          if (non_known == 1) out[k] = d;
        }
        continue;
      }
      absl::StatusOr<Dim> merged = MergeEqualDims(out[k], d);
      if (!merged.ok()) {
        return ctx.Error("input ", index, " ", ShapeToString(s), " differs at axis ", k,
                         " from the other inputs (", out[k].ToString(), " vs ", d.ToString(),
                         ")");
      }
      out[k] = *std::move(merged);
    }
  }
  if (axis_unknown || non_known > 1 || (non_known == 1 && known_sum != 0)) {
    out[*axis] = Dim::Unknown();
  } else if (non_known == 0) {
    out[*axis] = Dim::Known(known_sum);
  }  // else: the single non-known dim (a symbol or unknown) plus zero-sized inputs.
  ctx.set_output_shape(0, out);
  // Contents of 1-D shape tensors (Shape -> ... -> Concat -> Reshape).
  if (rank != 1) return absl::OkStatus();
  Dims value;
  for (const auto& [index, s] : inputs) {
    if (std::optional<Dims> v = InputDimsValue(ctx, index)) {
      value.insert(value.end(), v->begin(), v->end());
    } else if (s && (*s)[0].is_known() && (*s)[0].size() >= 0 &&
               (*s)[0].size() <= kMaxDimsValueElements) {
      value.insert(value.end(), (*s)[0].size(), Dim::Unknown());
    } else {
      return absl::OkStatus();
    }
    if (static_cast<int64_t>(value.size()) > kMaxDimsValueElements) return absl::OkStatus();
  }
  SetDimsValue(ctx, 0, std::move(value));
  return absl::OkStatus();
}

absl::Status SplitShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const int n_out = ctx.num_outputs();
  absl::StatusOr<int64_t> axis_attr = ctx.GetInt("axis");
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<IntsOperand> split = IntsFromAttrOrInput(ctx, "split", 1);
  if (!split.ok()) return split.status();
  if (split->values && split->values->empty()) *split = IntsOperand();  // empty: equal parts
  std::optional<int64_t> num_outputs;
  if (ctx.has_attr("num_outputs")) {
    absl::StatusOr<int64_t> n = ctx.GetInt("num_outputs");
    if (!n.ok()) return n.status();
    if (*n != n_out) {
      return ctx.Error("attribute 'num_outputs' is ", *n, " but the node has ", n_out,
                       " outputs");
    }
    if (split->given) return ctx.Error("'split' and 'num_outputs' are both given");
    num_outputs = *n;
  }
  if (split->values && static_cast<int>(split->values->size()) != n_out) {
    return ctx.Error("'split' ", IntsToString(*split->values), " has ", split->values->size(),
                     " entries but the node has ", n_out, " outputs");
  }
  if (!x) {
    for (int i = 0; i < n_out; ++i) ctx.set_output_shape(i, std::nullopt);
    return absl::OkStatus();
  }
  absl::StatusOr<int64_t> axis =
      NormalizeAxis(*axis_attr, static_cast<int64_t>(x->size()), "attribute 'axis'");
  if (!axis.ok()) return NodeError(ctx, axis.status());
  const Dim d = (*x)[*axis];
  std::vector<Dim> sizes(n_out, Dim::Unknown());
  if (split->values) {
    int64_t sum = 0;
    bool overflow = false;
    for (int i = 0; i < n_out; ++i) {
      const int64_t v = (*split->values)[i];
      if (v < 0) return ctx.Error("'split' entry ", i, " is negative: ", v);
      sizes[i] = Dim::Known(v);
      std::optional<int64_t> s = CheckedAdd(sum, v);
      overflow |= !s;
      sum = s.value_or(0);
    }
    if (d.is_known() && (overflow || sum != d.size())) {
      return ctx.Error("'split' ", IntsToString(*split->values), " does not sum to ", d.size(),
                       ", the size of axis ", *axis, " of ", ShapeToString(x));
    }
  } else if (!split->given) {
    if (n_out == 1) {
      sizes[0] = d;
    } else if (d.is_known() && n_out > 0) {
      const int64_t n = n_out;
      if (num_outputs) {
        const int64_t chunk = d.size() / n + (d.size() % n != 0 ? 1 : 0);
        const int64_t last = d.size() - chunk * (n - 1);
        if (last < 0) {
          return ctx.Error("axis ", *axis, " of size ", d.size(), " cannot be split into ", n,
                           " chunks");
        }
        for (int i = 0; i < n_out; ++i) sizes[i] = Dim::Known(i + 1 < n_out ? chunk : last);
      } else {
        if (d.size() % n != 0) {
          return ctx.Error("axis ", *axis, " of size ", d.size(),
                           " cannot be split evenly into ", n, " outputs");
        }
        for (Dim& s : sizes) s = Dim::Known(d.size() / n);
      }
    }
  }
  for (int i = 0; i < n_out; ++i) {
    Dims out = *x;
    out[*axis] = sizes[i];
    ctx.set_output_shape(i, std::move(out));
  }
  return absl::OkStatus();
}

absl::Status SliceShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  bool axes_given = false;
  const bool input_form = ctx.num_inputs() > 1;
  const char* axes_what = input_form ? "input 'axes'" : "attribute 'axes'";
  if (input_form) {
    starts = InputInts(ctx, 1);
    ends = InputInts(ctx, 2);
    if (!ctx.has_input(1) || !ctx.has_input(2)) {
      return ctx.Error("inputs 'starts' and 'ends' are required");
    }
    axes_given = ctx.has_input(3);
    if (axes_given) axes = InputInts(ctx, 3);
    if (ctx.has_input(4)) {
      steps = InputInts(ctx, 4);
      if (!steps) starts.reset();  // unknown steps: treat the slice as unknown
    }
  } else {
    absl::StatusOr<std::vector<int64_t>> s = ctx.GetInts("starts");
    if (!s.ok()) return s.status();
    absl::StatusOr<std::vector<int64_t>> e = ctx.GetInts("ends");
    if (!e.ok()) return e.status();
    starts = *std::move(s);
    ends = *std::move(e);
    axes_given = ctx.has_attr("axes");
    if (axes_given) {
      absl::StatusOr<std::vector<int64_t>> a = ctx.GetInts("axes");
      if (!a.ok()) return a.status();
      axes = *std::move(a);
    }
  }
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x->size());
  if (axes) {
    absl::StatusOr<std::vector<int64_t>> n = NormalizeAxes(*axes, rank, axes_what);
    if (!n.ok()) return NodeError(ctx, n.status());
    axes = *std::move(n);
  }
  if (!starts || !ends || (axes_given && !axes)) {
    // The sliced axes (all of them when not known) have unknown sizes.
    Dims out = *x;
    if (axes) {
      for (int64_t a : *axes) out[a] = Dim::Unknown();
    } else {
      out = UnknownDims(x->size());
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const size_t k = starts->size();
  if (ends->size() != k) {
    return ctx.Error("'starts' has ", k, " entries but 'ends' has ", ends->size());
  }
  if (!axes) {
    if (static_cast<int64_t>(k) > rank) {
      return ctx.Error("'starts' has ", k, " entries but the input has rank ", rank);
    }
    axes.emplace();
    for (size_t i = 0; i < k; ++i) axes->push_back(static_cast<int64_t>(i));
  }
  if (axes->size() != k) {
    return ctx.Error("'axes' has ", axes->size(), " entries but 'starts' has ", k);
  }
  if (!steps) steps = std::vector<int64_t>(k, 1);
  if (steps->size() != k) {
    return ctx.Error("'steps' has ", steps->size(), " entries but 'starts' has ", k);
  }
  Dims out = *x;
  for (size_t i = 0; i < k; ++i) {
    if ((*steps)[i] == 0) return ctx.Error("'steps' entry ", i, " is 0");
    const int64_t a = (*axes)[i];
    out[a] = SliceDim((*x)[a], (*starts)[i], (*ends)[i], (*steps)[i]);
  }
  ctx.set_output_shape(0, std::move(out));
  if (rank == 1 && k == 1) {
    if (std::optional<Dims> v = InputDimsValue(ctx, 0)) {
      SliceRange r = ComputeSliceRange(static_cast<int64_t>(v->size()), (*starts)[0], (*ends)[0],
                                       (*steps)[0]);
      Dims sliced;
      for (int64_t j = 0; j < r.count; ++j) sliced.push_back((*v)[r.first + j * (*steps)[0]]);
      SetDimsValue(ctx, 0, std::move(sliced));
    }
  }
  return absl::OkStatus();
}

absl::Status ReverseSequenceShape(InferenceContext& ctx) {
  absl::StatusOr<int64_t> batch_axis = ctx.GetInt("batch_axis");
  if (!batch_axis.ok()) return batch_axis.status();
  absl::StatusOr<int64_t> time_axis = ctx.GetInt("time_axis");
  if (!time_axis.ok()) return time_axis.status();
  if ((*batch_axis != 0 && *batch_axis != 1) || (*time_axis != 0 && *time_axis != 1) ||
      *batch_axis == *time_axis) {
    return ctx.Error("attributes 'batch_axis' ", *batch_axis, " and 'time_axis' ", *time_axis,
                     " must be 0 and 1 in some order");
  }
  const std::optional<Dims> x = InputShape(ctx, 0);
  const std::optional<Dims> lens = InputShape(ctx, 1);
  if (x && x->size() < 2) return ctx.Error("input must have rank >= 2, got ", ShapeToString(x));
  if (lens && (lens->size() != 1 ||
               (x && !MergeEqualDims((*lens)[0], (*x)[*batch_axis]).ok()))) {
    return ctx.Error("input sequence_lens ", ShapeToString(lens),
                     " must be 1-D of the batch size of ", ShapeToString(x));
  }
  ctx.set_output_shape(0, x);
  return absl::OkStatus();
}

// `d` times `factor` (or divided by it, which must be exact for a known size).
absl::StatusOr<Dim> ScaleDim(const InferenceContext& ctx, const Dim& d, int64_t factor,
                             bool divide, absl::string_view what) {
  if (factor == 1) return d;
  if (!d.is_known()) return Dim::Unknown();
  if (divide) {
    if (d.size() % factor != 0) {
      return ctx.Error(what, " ", d.size(), " is not divisible by ", factor);
    }
    return Dim::Known(d.size() / factor);
  }
  std::optional<int64_t> p = CheckedMul(d.size(), factor);
  return p ? Dim::Known(*p) : Dim::Unknown();
}

// DepthToSpace ([N, C, H, W] -> [N, C / b^2, H * b, W * b]) and SpaceToDepth (the inverse).
ShapeInferenceFn BlockShapeFn(bool depth_to_space) {
  return [depth_to_space](InferenceContext& ctx) -> absl::Status {
    absl::StatusOr<int64_t> b = ctx.GetInt("blocksize");
    if (!b.ok()) return b.status();
    if (*b <= 0) return ctx.Error("attribute 'blocksize' must be positive, got ", *b);
    if (depth_to_space) {
      absl::StatusOr<std::string> mode = ctx.GetString("mode");
      if (!mode.ok()) return mode.status();
      if (*mode != "DCR" && *mode != "CRD") {
        return ctx.Error("attribute 'mode' must be DCR or CRD, got '", *mode, "'");
      }
    }
    const std::optional<Dims> x = InputShape(ctx, 0);
    if (!x) {
      ctx.set_output_shape(0, UnknownDims(4));
      return absl::OkStatus();
    }
    if (x->size() != 4) return ctx.Error("input must be 4-D, got ", ShapeToString(x));
    std::optional<int64_t> b2 = CheckedMul(*b, *b);
    if (!b2) return ctx.Error("attribute 'blocksize' ", *b, " is too large");
    Dims out = {(*x)[0]};
    absl::StatusOr<Dim> c = ScaleDim(ctx, (*x)[1], *b2, depth_to_space, "channel count");
    if (!c.ok()) return c.status();
    out.push_back(*c);
    for (int i = 2; i < 4; ++i) {
      absl::StatusOr<Dim> d = ScaleDim(ctx, (*x)[i], *b, !depth_to_space,
                                       absl::StrCat("spatial dim ", i));
      if (!d.ok()) return d.status();
      out.push_back(*d);
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  };
}

void AddLayoutOps(std::vector<OpDef>* ops) {
  const DTypes all = AllTypes();
  const DTypes index_types = {v1::DT_INT32, v1::DT_INT64};
  ops->push_back(OpBuilder("Transpose", "Permutes the axes (default: reversed).")
                     .Input("data", "T")
                     .Output("transposed", "T")
                     .Attr("perm", v1::ATTR_INTS)
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(TransposeShape)
                     .Build());
  ops->push_back(OpBuilder("Concat", "Concatenation along 'axis'.")
                     .VariadicInput("inputs", "T", 1)
                     .Output("concat_result", "T")
                     .Attr("axis", v1::ATTR_INT, "Required from opset 4; 1 when absent before.")
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(ConcatShape)
                     .Build());
  ops->push_back(OpBuilder("Split", "Splits along 'axis' by 'split' sizes (attribute before "
                                    "opset 13, input after) or into equal parts.")
                     .Input("input", "T")
                     .OptionalInput("split", "Tsplit")
                     .VariadicOutput("outputs", "T", 1)
                     .IntAttr("axis", 0)
                     .Attr("split", v1::ATTR_INTS, "Opset < 13 only.")
                     .Attr("num_outputs", v1::ATTR_INT, "Opset 18+.")
                     .Constraint("T", all)
                     .Constraint("Tsplit", {v1::DT_INT64})
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(SplitShape)
                     .Build());
  ops->push_back(OpBuilder("Slice", "Strided slice; starts/ends/axes are attributes before "
                                    "opset 10 and inputs after.")
                     .Input("data", "T")
                     .OptionalInput("starts", "Tind")
                     .OptionalInput("ends", "Tind")
                     .OptionalInput("axes", "Tind")
                     .OptionalInput("steps", "Tind")
                     .Output("output", "T")
                     .Attr("starts", v1::ATTR_INTS, "Opset < 10 only.")
                     .Attr("ends", v1::ATTR_INTS, "Opset < 10 only.")
                     .Attr("axes", v1::ATTR_INTS, "Opset < 10 only.")
                     .Constraint("T", all)
                     .Constraint("Tind", index_types)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(SliceShape)
                     .Build());
  ops->push_back(OpBuilder("ReverseSequence", "Reverses the first sequence_lens[b] elements "
                                              "along time_axis of each batch entry.")
                     .Input("input", "T")
                     .Input("sequence_lens", "I")
                     .Output("Y", "T")
                     .IntAttr("batch_axis", 1)
                     .IntAttr("time_axis", 0)
                     .Constraint("T", all)
                     .Constraint("I", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ReverseSequenceShape)
                     .Build());
  ops->push_back(OpBuilder("DepthToSpace", "[N, C, H, W] -> [N, C / b^2, H * b, W * b].")
                     .Input("input", "T")
                     .Output("output", "T")
                     .RequiredAttr("blocksize", v1::ATTR_INT)
                     .StringAttr("mode", "DCR", "DCR or CRD (opset 11+).")
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(BlockShapeFn(true))
                     .Build());
  ops->push_back(OpBuilder("SpaceToDepth", "[N, C, H, W] -> [N, C * b^2, H / b, W / b].")
                     .Input("input", "T")
                     .Output("output", "T")
                     .RequiredAttr("blocksize", v1::ATTR_INT)
                     .Constraint("T", all)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(BlockShapeFn(false))
                     .Build());
}

// --- Resize, Upsample, Pad (kernels in tensor_layout_resize.cc) ------------------------------

// Contents of a constant float32 input of at most 64 elements, or nullopt.
std::optional<std::vector<float>> InputFloats(const InferenceContext& ctx, int i) {
  const v1::Tensor* t = ctx.input_constant(i);
  if (t == nullptr || t->dtype() != v1::DT_FLOAT32) return std::nullopt;
  std::optional<int64_t> n = NumElements(ShapeFromDimsList(*t));
  if (!n || *n > kMaxDimsValueElements || t->raw_data().size() != static_cast<size_t>(*n) * 4) {
    return std::nullopt;
  }
  std::vector<float> out(*n);
  if (*n > 0) std::memcpy(out.data(), t->raw_data().data(), t->raw_data().size());
  return out;
}

// What is known of Resize's scales or sizes input i: absent (or an empty tensor, which counts
// as absent), present with elements, or present of unknown length.
enum class Operand { kAbsent, kGiven, kUnknown };

Operand ResizeOperand(const InferenceContext& ctx, int i) {
  if (!ctx.has_input(i)) return Operand::kAbsent;
  const std::optional<Dims> s = InputShape(ctx, i);
  if (!s || s->size() != 1 || !(*s)[0].is_known()) return Operand::kUnknown;
  return (*s)[0].size() == 0 ? Operand::kAbsent : Operand::kGiven;
}

// floor(in * scale); a dim scaled by 1 stays as it is.
absl::StatusOr<Dim> ScaledDim(const InferenceContext& ctx, const Dim& in, float scale) {
  if (!(scale > 0) || !std::isfinite(scale)) {
    return ctx.Error("scale ", scale, " must be positive and finite");
  }
  if (scale == 1.0f) return in;
  if (!in.is_known()) return Dim::Unknown();
  const double d = std::floor(static_cast<double>(scale) * static_cast<double>(in.size()));
  if (d > 9.0e18) return Dim::Unknown();
  return Dim::Known(static_cast<int64_t>(d));
}

// Output of X ([rank] dims) resized along `axes` by constant `scales` (one per axis), or with
// the sizes of those axes unknown when the scales are not known.
absl::Status ScaledShape(InferenceContext& ctx, const Dims& x, const std::vector<int64_t>& axes,
                         const std::optional<std::vector<float>>& scales) {
  if (scales && scales->size() != axes.size()) {
    return ctx.Error("'scales' has ", scales->size(), " entries for ", axes.size(), " axes of ",
                     ShapeToString(x));
  }
  Dims out = x;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!scales) {
      out[axes[i]] = Dim::Unknown();
      continue;
    }
    absl::StatusOr<Dim> d = ScaledDim(ctx, x[axes[i]], (*scales)[i]);
    if (!d.ok()) return d.status();
    out[axes[i]] = *std::move(d);
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// Resize: opset 10 takes (X, scales); later opsets (X, roi, scales, sizes), exactly one of
// scales and sizes given (an empty tensor counts as not given); opset 18 may name the axes.
absl::Status ResizeShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  const bool v10 = OpsetBefore(ctx, 11);
  const int scales_input = v10 ? 1 : 2;
  const int sizes_input = v10 ? -1 : 3;
  const Operand scales = ResizeOperand(ctx, scales_input);
  const Operand sizes = sizes_input >= 0 ? ResizeOperand(ctx, sizes_input) : Operand::kAbsent;
  if (scales == Operand::kGiven && sizes == Operand::kGiven) {
    return ctx.Error("only one of 'scales' and 'sizes' may be given");
  }
  if (scales == Operand::kAbsent && sizes == Operand::kAbsent) {
    return ctx.Error("one of 'scales' and 'sizes' must be given");
  }
  absl::StatusOr<std::string> policy = ctx.GetString("keep_aspect_ratio_policy");
  if (!policy.ok()) return policy.status();
  if (*policy != "stretch" && *policy != "not_larger" && *policy != "not_smaller") {
    return ctx.Error("attribute 'keep_aspect_ratio_policy' has unknown value '", *policy, "'");
  }
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  std::vector<int64_t> axes;
  if (ctx.has_attr("axes")) {
    absl::StatusOr<std::vector<int64_t>> a = ctx.GetInts("axes");
    if (!a.ok()) return a.status();
    absl::StatusOr<std::vector<int64_t>> n =
        NormalizeAxes(*a, static_cast<int64_t>(x->size()), "attribute 'axes'");
    if (!n.ok()) return NodeError(ctx, n.status());
    axes = *std::move(n);
  } else {
    for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (scales == Operand::kAbsent) {
    std::optional<Dims> target = sizes == Operand::kGiven ? ShapeOperand(ctx, sizes_input)
                                                          : std::nullopt;
    if (target && target->size() != axes.size()) {
      return ctx.Error("'sizes' has ", target->size(), " entries for ", axes.size(),
                       " axes of ", ShapeToString(x));
    }
    Dims out = *x;
    for (size_t i = 0; i < axes.size(); ++i) {
      // The other policies scale every axis by one common factor: not worked out here.
      out[axes[i]] = target && *policy == "stretch" ? (*target)[i] : Dim::Unknown();
    }
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  return ScaledShape(ctx, *x, axes,
                     sizes == Operand::kAbsent ? InputFloats(ctx, scales_input) : std::nullopt);
}

// Upsample: 'height_scale'/'width_scale' of a 4-D input (opset 1), the 'scales' attribute
// (opset 7) or input (opset 9).
absl::Status UpsampleShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "nearest" && *mode != "linear" && *mode != "bilinear") {
    return ctx.Error("attribute 'mode' must be nearest, linear or bilinear, got '", *mode, "'");
  }
  std::optional<std::vector<float>> scales;
  if (ctx.has_input(1)) {
    scales = InputFloats(ctx, 1);
  } else if (ctx.has_attr("scales")) {
    const v1::Attribute* a = ctx.attr("scales");
    if (a->value_case() != v1::Attribute::kFloats) {
      return ctx.Error("attribute 'scales' must be a list of floats");
    }
    scales.emplace(a->floats().values().begin(), a->floats().values().end());
  } else if (ctx.has_attr("height_scale") && ctx.has_attr("width_scale")) {
    absl::StatusOr<float> h = ctx.GetFloat("height_scale");
    if (!h.ok()) return h.status();
    absl::StatusOr<float> w = ctx.GetFloat("width_scale");
    if (!w.ok()) return w.status();
    if (x && x->size() != 4) return ctx.Error("input must be 4-D, got ", ShapeToString(x));
    scales = std::vector<float>{1.0f, 1.0f, *h, *w};
  } else {
    return ctx.Error("'scales' is required (input 1 from opset 9, attribute before)");
  }
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  std::vector<int64_t> axes;
  for (size_t i = 0; i < x->size(); ++i) axes.push_back(static_cast<int64_t>(i));
  return ScaledShape(ctx, *x, axes, scales);
}

absl::Status PadShape(InferenceContext& ctx) {
  const std::optional<Dims> x = InputShape(ctx, 0);
  absl::StatusOr<std::string> mode = ctx.GetString("mode");
  if (!mode.ok()) return mode.status();
  if (*mode != "constant" && *mode != "reflect" && *mode != "edge" && *mode != "wrap") {
    return ctx.Error("attribute 'mode' has unknown value '", *mode, "'");
  }
  // Opset 1 names the attribute 'paddings'.
  absl::StatusOr<IntsOperand> pads =
      IntsFromAttrOrInput(ctx, OpsetBefore(ctx, 2) ? "paddings" : "pads", 1);
  if (!pads.ok()) return pads.status();
  if (!pads->given) return ctx.Error("'pads' is required (input 1, or attribute before opset 11)");
  if (!x) {
    ctx.set_output_shape(0, std::nullopt);
    return absl::OkStatus();
  }
  const int64_t rank = static_cast<int64_t>(x->size());
  std::vector<int64_t> axes;
  if (ctx.has_input(3)) {
    std::optional<std::vector<int64_t>> a = InputInts(ctx, 3);
    if (!a) {
      ctx.set_output_shape(0, UnknownDims(x->size()));
      return absl::OkStatus();
    }
    absl::StatusOr<std::vector<int64_t>> n = NormalizeAxes(*a, rank, "input 'axes'");
    if (!n.ok()) return NodeError(ctx, n.status());
    axes = *std::move(n);
  } else {
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  Dims out = *x;
  if (!pads->values) {
    for (int64_t a : axes) out[a] = Dim::Unknown();
    ctx.set_output_shape(0, std::move(out));
    return absl::OkStatus();
  }
  const std::vector<int64_t>& p = *pads->values;
  if (p.size() != 2 * axes.size()) {
    return ctx.Error("'pads' ", IntsToString(p), " has ", p.size(), " entries, expected ",
                     2 * axes.size());
  }
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i];
    const int64_t begin = p[i];
    const int64_t end = p[i + axes.size()];
    const Dim& d = (*x)[a];
    if (begin == 0 && end == 0) continue;
    if (!d.is_known()) {
      out[a] = Dim::Unknown();
      continue;
    }
    std::optional<int64_t> s = CheckedAdd(d.size(), begin);
    if (s) s = CheckedAdd(*s, end);
    if (!s) {
      out[a] = Dim::Unknown();
    } else if (*s < 0) {
      return ctx.Error("padding axis ", a, " of size ", d.size(), " by ", begin, ", ", end,
                       " gives a negative size");
    } else {
      out[a] = Dim::Known(*s);
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

void AddResizeOps(std::vector<OpDef>* ops) {
  const DTypes all = AllTypes();
  const DTypes index_types = {v1::DT_INT32, v1::DT_INT64};
  ops->push_back(OpBuilder("Resize", "Resizes X by 'scales' (floor(scale * dim)) or to 'sizes'; "
                                     "opset 10 takes (X, scales).")
                     .Input("X", "T1")
                     .OptionalInput("roi", "T2", "Opset 10: the scales.")
                     .OptionalInput("scales", "T3")
                     .OptionalInput("sizes", "T4")
                     .Output("Y", "T1")
                     .StringAttr("mode", "nearest", "nearest, linear or cubic.")
                     .StringAttr("coordinate_transformation_mode", "half_pixel")
                     .FloatAttr("cubic_coeff_a", -0.75f)
                     .IntAttr("exclude_outside", 0)
                     .FloatAttr("extrapolation_value", 0.0f)
                     .StringAttr("nearest_mode", "round_prefer_floor")
                     .IntAttr("antialias", 0, "Opset 18+.")
                     .Attr("axes", v1::ATTR_INTS, "Opset 18+.")
                     .StringAttr("keep_aspect_ratio_policy", "stretch", "Opset 18+.")
                     .Constraint("T1", all)
                     .Constraint("T2", HalfSingleDouble())
                     .Constraint("T3", {v1::DT_FLOAT32})
                     .Constraint("T4", {v1::DT_INT64})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ResizeShape)
                     .Build());
  ops->push_back(OpBuilder("Upsample", "Deprecated Resize: floor(scale * dim) per axis.")
                     .Input("X", "T")
                     .OptionalInput("scales", "T1", "Opset 9+.")
                     .Output("Y", "T")
                     .StringAttr("mode", "nearest")
                     .Attr("scales", v1::ATTR_FLOATS, "Opsets 7 and 8.")
                     .Attr("height_scale", v1::ATTR_FLOAT, "Opset 1.")
                     .Attr("width_scale", v1::ATTR_FLOAT, "Opset 1.")
                     .Constraint("T", all)
                     .Constraint("T1", {v1::DT_FLOAT32})
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(UpsampleShape)
                     .Build());
  ops->push_back(OpBuilder("Pad", "Pads each axis by pads[i] before and pads[i + n] after.")
                     .Input("data", "T")
                     .OptionalInput("pads", "Tpads", "Required from opset 11.")
                     .OptionalInput("constant_value", "T")
                     .OptionalInput("axes", "Tind", "Opset 18+.")
                     .Output("output", "T")
                     .StringAttr("mode", "constant", "constant, reflect, edge or wrap.")
                     .Attr("pads", v1::ATTR_INTS, "Opsets 2 to 10 only.")
                     .Attr("paddings", v1::ATTR_INTS, "Opset 1's name for 'pads'.")
                     .Attr("value", v1::ATTR_FLOAT, "Opset < 11 only.")
                     .Constraint("T", Join(NumericTypes(), {v1::DT_BOOL, v1::DT_STRING,
                                                            v1::DT_COMPLEX64,
                                                            v1::DT_COMPLEX128}))
                     .Constraint("Tpads", {v1::DT_INT64})
                     .Constraint("Tind", index_types)
                     .Fusion(v1::FUSION_INJECTIVE)
                     .ShapeFn(PadShape)
                     .Build());
}

}  // namespace

void AddTensorOps(std::vector<OpDef>* ops) {
  AddIdentityOp(ops);
  AddLayoutOps(ops);
  AddResizeOps(ops);
}

}  // namespace builtin_internal
}  // namespace graphopt
