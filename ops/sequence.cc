// Sequence and optional operators (ONNX opsets 11-17; kernels in runtime/kernels/sequence.cc).
// Their values are TensorTypes of kind VALUE_SEQUENCE / VALUE_OPTIONAL_*: dtype and shape
// describe the tensors held, the shape being what every item's shape has in common.
//
// The inputs that take containers have no type constraint (the binding of element types is
// checked here, by the rules, where the kinds are known).

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/onnx_type_bytes.h"
#include "graph/shape_util.h"
#include "ops/builtin_ops_internal.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// INVALID_ARGUMENT unless input i, when its type is known, is of `kind`.
absl::Status CheckKind(const InferenceContext& ctx, int i, v1::ValueKind kind) {
  if (!ctx.has_input(i)) return absl::OkStatus();
  const TensorType& t = ctx.input_type(i);
  const bool known = t.dtype != v1::DT_UNDEFINED || t.shape || !t.is_tensor();
  if (known && t.kind != kind) {
    return ctx.Error("input ", i, " is a ", ValueKindName(t.kind), ", expected a ",
                     ValueKindName(kind));
  }
  return absl::OkStatus();
}

// Element types of a sequence and a tensor joining it must agree (either may be unknown).
absl::StatusOr<v1::DataType> JoinDType(const InferenceContext& ctx, v1::DataType a,
                                       v1::DataType b) {
  if (a != v1::DT_UNDEFINED && b != v1::DT_UNDEFINED && a != b) {
    return ctx.Error("a ", DataTypeName(b), " tensor cannot join a sequence of ",
                     DataTypeName(a));
  }
  return a != v1::DT_UNDEFINED ? a : b;
}

absl::Status SetSequence(InferenceContext& ctx, int output, v1::DataType dtype) {
  ctx.set_output_kind(output, v1::VALUE_SEQUENCE);
  ctx.set_output_dtype(output, dtype);
  return absl::OkStatus();
}

absl::Status NoShapeKnown(InferenceContext& ctx) {
  for (int i = 0; i < ctx.num_outputs(); ++i) ctx.set_output_shape(i, std::nullopt);
  return absl::OkStatus();
}

// --- Type rules -------------------------------------------------------------------------------

absl::Status SequenceEmptyType(InferenceContext& ctx) {
  absl::StatusOr<int64_t> dtype = ctx.GetInt("dtype", v1::DT_FLOAT32);
  if (!dtype.ok()) return dtype.status();
  if (!v1::DataType_IsValid(static_cast<int>(*dtype)) || *dtype == v1::DT_UNDEFINED) {
    return ctx.Error("attribute 'dtype' is not a data type: ", *dtype);
  }
  return SetSequence(ctx, 0, static_cast<v1::DataType>(*dtype));
}

// Output 0 is a sequence of the type constraint's bound dtype (set by InferNodeTypes).
absl::Status SequenceOfBoundType(InferenceContext& ctx) {
  return SetSequence(ctx, 0, ctx.output_dtype(0));
}

absl::Status SequenceInsertType(InferenceContext& ctx) {
  if (absl::Status s = CheckKind(ctx, 0, v1::VALUE_SEQUENCE); !s.ok()) return s;
  absl::StatusOr<v1::DataType> dtype =
      JoinDType(ctx, ctx.input_type(0).dtype, ctx.input_type(1).dtype);
  if (!dtype.ok()) return dtype.status();
  return SetSequence(ctx, 0, *dtype);
}

// SequenceErase: the input sequence's type.
absl::Status SameSequenceType(InferenceContext& ctx) {
  if (absl::Status s = CheckKind(ctx, 0, v1::VALUE_SEQUENCE); !s.ok()) return s;
  return SetSequence(ctx, 0, ctx.input_type(0).dtype);
}

// SequenceAt, ConcatFromSequence: a tensor of the sequence's element type.
absl::Status ElementTensorType(InferenceContext& ctx) {
  if (absl::Status s = CheckKind(ctx, 0, v1::VALUE_SEQUENCE); !s.ok()) return s;
  ctx.set_output_dtype(0, ctx.input_type(0).dtype);
  return absl::OkStatus();
}

absl::Status SequenceLengthType(InferenceContext& ctx) {
  return CheckKind(ctx, 0, v1::VALUE_SEQUENCE);
}

absl::Status SplitToSequenceType(InferenceContext& ctx) {
  return SetSequence(ctx, 0, ctx.input_type(0).dtype);
}

// SequenceMap: output k is the sequence of what the body's output k declares.
absl::Status SequenceMapType(InferenceContext& ctx) {
  if (absl::Status s = CheckKind(ctx, 0, v1::VALUE_SEQUENCE); !s.ok()) return s;
  const v1::Attribute* body = ctx.attr("body");
  if (body == nullptr || body->value_case() != v1::Attribute::kG) {
    return ctx.Error("attribute 'body' must be a graph");
  }
  const v1::Graph& g = body->g();
  if (g.inputs_size() != ctx.num_inputs() || g.outputs_size() != ctx.num_outputs()) {
    return ctx.Error("attribute 'body' takes ", g.inputs_size(), " inputs and gives ",
                     g.outputs_size(), " outputs, but the node has ", ctx.num_inputs(), " and ",
                     ctx.num_outputs());
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const v1::TensorType& declared = g.outputs(i).type();
    if (declared.kind() != v1::VALUE_TENSOR) {
      return ctx.Error("body output ", i, " must be a tensor");
    }
    if (absl::Status s = SetSequence(ctx, i, declared.dtype()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The type an Optional without an input holds: its 'type' attribute.
absl::StatusOr<TensorType> OptionalAttributeType(const InferenceContext& ctx) {
  const v1::Attribute* a = ctx.attr("type");
  if (a == nullptr) return ctx.Error("needs input 0 or attribute 'type'");
  absl::StatusOr<TensorType> t = TensorTypeFromTypeAttribute(*a);
  if (!t.ok()) return ctx.Error(t.status().message());
  if (t->kind != v1::VALUE_TENSOR && t->kind != v1::VALUE_SEQUENCE) {
    return ctx.Error("attribute 'type' must be a tensor or a sequence type, got ",
                     ValueKindName(t->kind));
  }
  return t;
}

absl::Status OptionalType(InferenceContext& ctx) {
  TensorType held;
  if (ctx.has_input(0)) {
    held = ctx.input_type(0);
    if (IsOptionalKind(held.kind)) return ctx.Error("input 0 must not be an optional");
  } else {
    absl::StatusOr<TensorType> t = OptionalAttributeType(ctx);
    if (!t.ok()) return t.status();
    held = *std::move(t);
  }
  ctx.set_output_kind(0, held.kind == v1::VALUE_SEQUENCE ? v1::VALUE_OPTIONAL_SEQUENCE
                                                         : v1::VALUE_OPTIONAL_TENSOR);
  ctx.set_output_dtype(0, held.dtype);
  return absl::OkStatus();
}

absl::Status OptionalShape(InferenceContext& ctx) {
  if (ctx.has_input(0)) {
    ctx.set_output_shape(0, ctx.input_shape(0));
    return absl::OkStatus();
  }
  absl::StatusOr<TensorType> t = OptionalAttributeType(ctx);
  if (!t.ok()) return t.status();
  ctx.set_output_shape(0, t->shape);
  return absl::OkStatus();
}

// OptionalGetElement: what the optional holds; a tensor or sequence input (opset 18) passes.
absl::Status OptionalGetElementType(InferenceContext& ctx) {
  const TensorType& in = ctx.input_type(0);
  ctx.set_output_kind(0, IsOptionalKind(in.kind) ? OptionalElementKind(in.kind) : in.kind);
  ctx.set_output_dtype(0, in.dtype);
  return absl::OkStatus();
}

// --- Shape rules ------------------------------------------------------------------------------

// SequenceConstruct: what every input's shape has in common.
absl::Status SequenceConstructShape(InferenceContext& ctx) {
  std::optional<Dims> common = InputShape(ctx, 0);
  for (int i = 1; i < ctx.num_inputs() && common; ++i) {
    common = UnionShapes(common, InputShape(ctx, i));
  }
  ctx.set_output_shape(0, std::move(common));
  return absl::OkStatus();
}

absl::Status SequenceInsertShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScalarInput(ctx, 2, "position", true); !s.ok()) return s;
  ctx.set_output_shape(0, UnionShapes(ctx.input_shape(0), InputShape(ctx, 1)));
  return absl::OkStatus();
}

absl::Status SequenceAtShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScalarInput(ctx, 1, "position", true); !s.ok()) return s;
  ctx.set_output_shape(0, ctx.input_shape(0));
  return absl::OkStatus();
}

absl::Status SequenceEraseShape(InferenceContext& ctx) {
  if (absl::Status s = CheckScalarInput(ctx, 1, "position", true); !s.ok()) return s;
  ctx.set_output_shape(0, ctx.input_shape(0));
  return absl::OkStatus();
}

absl::Status ScalarShape(InferenceContext& ctx) {
  ctx.set_output_shape(0, Dims{});
  return absl::OkStatus();
}

// SplitToSequence: the input's shape with the split axis 1 (removed when keepdims is 0 and no
// split is given), or unknown along the axis when split sizes are given.
absl::Status SplitToSequenceShape(InferenceContext& ctx) {
  std::optional<Dims> in = InputShape(ctx, 0);
  if (!in) return NoShapeKnown(ctx);
  if (in->empty()) return ctx.Error("input 0 must have rank 1 or more");
  absl::StatusOr<int64_t> axis_attr = ctx.GetInt("axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int64_t> axis =
      NormalizeAxis(*axis_attr, static_cast<int64_t>(in->size()), "attribute 'axis'");
  if (!axis.ok()) return NodeError(ctx, axis.status());
  Dims out = *in;
  if (ctx.has_input(1)) {
    out[*axis] = Dim::Unknown();
    // One chunk size: every item but the last has exactly that many.
    if (std::optional<int64_t> chunk = ScalarInputInt(ctx, 1); chunk && ctx.input_rank(1) == 0 &&
                                                               (*in)[*axis].is_known() &&
                                                               *chunk > 0 &&
                                                               (*in)[*axis].size() % *chunk == 0) {
      out[*axis] = Dim::Known(*chunk);
    }
  } else {
    absl::StatusOr<int64_t> keepdims = ctx.GetInt("keepdims", 1);
    if (!keepdims.ok()) return keepdims.status();
    if (*keepdims == 0) {
      out.erase(out.begin() + *axis);
    } else {
      out[*axis] = Dim::Known(1);
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

// ConcatFromSequence: the items' common shape, the concatenated axis unknown (the number of
// items is not known statically); with new_axis a new unknown dim at 'axis'.
absl::Status ConcatFromSequenceShape(InferenceContext& ctx) {
  const std::optional<Dims>& item = ctx.input_shape(0);
  if (!item) return NoShapeKnown(ctx);
  absl::StatusOr<int64_t> axis_attr = ctx.GetInt("axis");
  if (!axis_attr.ok()) return axis_attr.status();
  absl::StatusOr<int64_t> new_axis = ctx.GetInt("new_axis", 0);
  if (!new_axis.ok()) return new_axis.status();
  const int64_t rank = static_cast<int64_t>(item->size()) + (*new_axis != 0 ? 1 : 0);
  if (rank == 0) return ctx.Error("cannot concatenate scalars");
  absl::StatusOr<int64_t> axis = NormalizeAxis(*axis_attr, rank, "attribute 'axis'");
  if (!axis.ok()) return NodeError(ctx, axis.status());
  Dims out = *item;
  if (*new_axis != 0) {
    out.insert(out.begin() + *axis, Dim::Unknown());
  } else {
    out[*axis] = Dim::Unknown();
  }
  ctx.set_output_shape(0, std::move(out));
  return absl::OkStatus();
}

absl::Status SequenceMapShape(InferenceContext& ctx) {
  const v1::Attribute* body = ctx.attr("body");
  if (body == nullptr || body->value_case() != v1::Attribute::kG ||
      body->g().outputs_size() != ctx.num_outputs()) {
    return NoShapeKnown(ctx);
  }
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    const v1::TensorType& declared = body->g().outputs(i).type();
    std::optional<Dims> shape;
    if (declared.has_shape()) shape = ShapeFromProto(declared.shape());
    ctx.set_output_shape(i, std::move(shape));
  }
  return absl::OkStatus();
}

absl::Status SameShapeAsInput0Any(InferenceContext& ctx) {
  ctx.set_output_shape(0, ctx.input_shape(0));
  return absl::OkStatus();
}

}  // namespace

void AddSequenceOps(std::vector<OpDef>* ops) {
  const DTypes positions = {v1::DT_INT32, v1::DT_INT64};
  ops->push_back(OpBuilder("SequenceEmpty", "An empty sequence of tensors of 'dtype'.")
                     .Output("output", "")
                     .IntAttr("dtype", v1::DT_FLOAT32, "Element type (default float32).")
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(NoShapeKnown)
                     .TypeFn(SequenceEmptyType)
                     .Build());
  ops->push_back(OpBuilder("SequenceConstruct", "The sequence of its inputs, in order.")
                     .VariadicInput("inputs", "T", 1)
                     .Output("output_sequence", "T")
                     .Constraint("T", AllTypes())
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SequenceConstructShape)
                     .TypeFn(SequenceOfBoundType)
                     .Build());
  ops->push_back(OpBuilder("SequenceInsert",
                           "The sequence with 'tensor' inserted before 'position' (default: at "
                           "the end).")
                     .Input("input_sequence", "")
                     .Input("tensor", "T")
                     .OptionalInput("position", "I")
                     .Output("output_sequence", "")
                     .Constraint("T", AllTypes())
                     .Constraint("I", positions)
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SequenceInsertShape)
                     .TypeFn(SequenceInsertType)
                     .Build());
  ops->push_back(OpBuilder("SequenceAt", "The tensor at 'position' (negative: from the end).")
                     .Input("input_sequence", "")
                     .Input("position", "I")
                     .Output("tensor", "")
                     .Constraint("I", positions)
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SequenceAtShape)
                     .TypeFn(ElementTensorType)
                     .Build());
  ops->push_back(OpBuilder("SequenceErase",
                           "The sequence without the tensor at 'position' (default: the last).")
                     .Input("input_sequence", "")
                     .OptionalInput("position", "I")
                     .Output("output_sequence", "")
                     .Constraint("I", positions)
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SequenceEraseShape)
                     .TypeFn(SameSequenceType)
                     .Build());
  ops->push_back(OpBuilder("SequenceLength", "The number of tensors in the sequence (int64).")
                     .Input("input_sequence", "")
                     .Output("length", "I")
                     .Constraint("I", {v1::DT_INT64})
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ScalarShape)
                     .TypeFn(SequenceLengthType)
                     .Build());
  ops->push_back(OpBuilder("SplitToSequence",
                           "Splits 'input' along 'axis' into a sequence: into pieces of 'split' "
                           "(a size or a list of sizes), or into slices of 1.")
                     .Input("input", "T")
                     .OptionalInput("split", "I")
                     .Output("output_sequence", "")
                     .Constraint("T", AllTypes())
                     .Constraint("I", positions)
                     .IntAttr("axis", 0)
                     .IntAttr("keepdims", 1, "Without 'split': 0 removes the split axis.")
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SplitToSequenceShape)
                     .TypeFn(SplitToSequenceType)
                     .Build());
  ops->push_back(OpBuilder("ConcatFromSequence",
                           "Concatenates the sequence's tensors along 'axis' (new_axis: stacks "
                           "them along a new axis).")
                     .Input("input_sequence", "")
                     .Output("concat_result", "")
                     .RequiredAttr("axis", v1::ATTR_INT)
                     .IntAttr("new_axis", 0)
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ConcatFromSequenceShape)
                     .TypeFn(ElementTensorType)
                     .Build());
  ops->push_back(OpBuilder("SequenceMap",
                           "Runs 'body' on each item of the input sequences (tensor inputs "
                           "whole); each output is the sequence of the body's results.")
                     .Input("input_sequence", "")
                     .VariadicInput("additional_inputs", "", 0)
                     .VariadicOutput("out_sequence", "", 1)
                     .RequiredAttr("body", v1::ATTR_GRAPH)
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SequenceMapShape)
                     .TypeFn(SequenceMapType)
                     .Build());
  ops->push_back(OpBuilder("Optional",
                           "An optional holding 'input', or an empty one of attribute 'type'.")
                     .OptionalInput("input", "")
                     .Output("output", "")
                     .Attr("type", v1::ATTR_OPAQUE,
                           "An ONNX TypeProto (carried opaque): the type of an empty optional.")
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(OptionalShape)
                     .TypeFn(OptionalType)
                     .Build());
  ops->push_back(OpBuilder("OptionalHasElement",
                           "Whether the optional holds a value (a bool scalar).")
                     .OptionalInput("input", "")
                     .Output("output", "B")
                     .Constraint("B", {v1::DT_BOOL})
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(ScalarShape)
                     .Build());
  ops->push_back(OpBuilder("OptionalGetElement",
                           "The value the optional holds (an error when it is empty).")
                     .Input("input", "")
                     .Output("output", "")
                     .TakesContainers()
                     .Fusion(v1::FUSION_OPAQUE)
                     .ShapeFn(SameShapeAsInput0Any)
                     .TypeFn(OptionalGetElementType)
                     .Build());
}

}  // namespace builtin_internal
}  // namespace graphopt
