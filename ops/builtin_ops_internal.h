#ifndef GRAPHOPT_OPS_BUILTIN_OPS_INTERNAL_H_
#define GRAPHOPT_OPS_BUILTIN_OPS_INTERNAL_H_

// Private to the builtin_ops target: the descriptor builder, dtype sets and InferenceContext
// helpers shared by the op files of ops/ (one per runtime/kernels/ file family).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "graph/shape_util.h"
#include "graph/types.h"
#include "proto/op.pb.h"

namespace graphopt {
namespace builtin_internal {

using DTypes = std::vector<v1::DataType>;

DTypes FloatTypes();      // float16, float32, float64, bfloat16
DTypes SignedIntTypes();  // int8 .. int64
DTypes IntTypes();        // every signed and unsigned integer type
DTypes NumericTypes();    // IntTypes + FloatTypes
DTypes AllTypes();        // NumericTypes + bool, string, complex64, complex128
DTypes Join(DTypes a, const DTypes& b);
DTypes HalfSingleDouble();  // float16, float32, float64 (most ONNX math ops: no bfloat16)
DTypes NumericNoBfloat16();  // IntTypes + HalfSingleDouble (ONNX's all_numeric_types)

// Builds an OpDef for the default domain. Attributes declared without a default are optional
// unless added with RequiredAttr.
class OpBuilder {
 public:
  OpBuilder(absl::string_view name, absl::string_view doc);

  OpBuilder& Input(absl::string_view name, absl::string_view constraint,
                   absl::string_view doc = "");
  OpBuilder& OptionalInput(absl::string_view name, absl::string_view constraint,
                           absl::string_view doc = "");
  OpBuilder& VariadicInput(absl::string_view name, absl::string_view constraint, int min_count,
                           absl::string_view doc = "");
  OpBuilder& Output(absl::string_view name, absl::string_view constraint,
                    absl::string_view doc = "");
  OpBuilder& OptionalOutput(absl::string_view name, absl::string_view constraint,
                            absl::string_view doc = "");
  OpBuilder& VariadicOutput(absl::string_view name, absl::string_view constraint, int min_count,
                            absl::string_view doc = "");
  // An output whose element type is the value of the int attribute `attribute`.
  OpBuilder& OutputFromAttribute(absl::string_view name, absl::string_view attribute,
                                 absl::string_view doc = "");

  OpBuilder& Attr(absl::string_view name, v1::AttributeType type, absl::string_view doc = "");
  OpBuilder& RequiredAttr(absl::string_view name, v1::AttributeType type,
                          absl::string_view doc = "");
  OpBuilder& IntAttr(absl::string_view name, int64_t default_value, absl::string_view doc = "");
  OpBuilder& FloatAttr(absl::string_view name, float default_value, absl::string_view doc = "");
  OpBuilder& StringAttr(absl::string_view name, absl::string_view default_value,
                        absl::string_view doc = "");
  OpBuilder& IntsAttr(absl::string_view name, const std::vector<int64_t>& default_value,
                      absl::string_view doc = "");

  OpBuilder& Constraint(absl::string_view name, const DTypes& allowed,
                        absl::string_view doc = "");
  OpBuilder& Fusion(v1::FusionPattern pattern);
  OpBuilder& InPlace(int input, int output);
  OpBuilder& IgnoredInput(int input);
  OpBuilder& Extension(absl::string_view name, v1::Attribute value);
  // The op reads or writes sequence and optional values (OpDef::takes_containers).
  OpBuilder& TakesContainers();
  OpBuilder& ShapeFn(ShapeInferenceFn fn);
  OpBuilder& TypeFn(TypeInferenceFn fn);

  // The OpDef, with shape_rule = Rule{builtin: name} and version 1.
  OpDef Build();

 private:
  v1::ArgSpec* AddArg(bool input, absl::string_view name, absl::string_view constraint,
                      v1::Arity arity, absl::string_view doc);
  v1::AttributeSpec* AddAttr(absl::string_view name, v1::AttributeType type,
                             absl::string_view doc);

  OpDef def_;
};

// --- InferenceContext helpers -----------------------------------------------------------------


// `status` (a node-agnostic error from shape_util) as ctx.Error, with an optional prefix such as
// "attribute 'pads': ".
absl::Status NodeError(const InferenceContext& ctx, const absl::Status& status,
                       absl::string_view prefix = "");

// Shape of a present input: its type's shape, else the dims of its constant tensor. nullopt
// when unknown or absent.
std::optional<Dims> InputShape(const InferenceContext& ctx, int i);

// Known integer contents of input i: its constant int32/int64 tensor, or a dims value whose
// entries are all known. nullopt otherwise.
std::optional<std::vector<int64_t>> InputInts(const InferenceContext& ctx, int i);

// Contents of input i as dims: its dims value, else its constant int32/int64 tensor of rank <= 1
// with at most kMaxDimsValueElements elements. nullopt otherwise.
std::optional<Dims> InputDimsValue(const InferenceContext& ctx, int i);

// Records `value` as output i's contents when it has at most kMaxDimsValueElements entries.
void SetDimsValue(InferenceContext& ctx, int i, Dims value);

// An int-list operand that ONNX moved from an attribute to an input (Squeeze's axes, Slice's
// starts, ...). `given` is false when neither form is present; `values` is nullopt when the
// input is present but its contents are not known.
struct IntsOperand {
  bool given = false;
  std::optional<std::vector<int64_t>> values;
};
absl::StatusOr<IntsOperand> IntsFromAttrOrInput(const InferenceContext& ctx,
                                                absl::string_view attribute, int input);

// Contents of input i used as a shape (Reshape, Expand, ConstantOfShape): its dims value, else
// its constant int tensor, else `n` unknown entries when input i is 1-D of known length n.
std::optional<Dims> ShapeOperand(const InferenceContext& ctx, int i);

// Passes input 0's dims value on to output 0 (ops that keep the element order).
void ForwardDimsValue(InferenceContext& ctx);

// "[1,2,3]".
std::string IntsToString(const std::vector<int64_t>& v);

inline Dims UnknownDims(size_t n) { return Dims(n, Dim::Unknown()); }

// True when the graph imports the node's domain at an opset older than `version`. A graph that
// imports none (a native graph) gets the newest semantics.
inline bool OpsetBefore(const InferenceContext& ctx, int64_t version) {
  const int64_t v = ctx.opset_version();
  return v > 0 && v < version;
}

// Every present output takes input 0's shape (nullopt when unknown).
absl::Status SameShapeAsInput0(InferenceContext& ctx);

// Output 0 is the multidirectional broadcast of every present input.
absl::Status BroadcastAllInputs(InferenceContext& ctx);

// Output element type `output` from the int attribute `attribute` when the node gives it, else
// `fallback` (DT_UNDEFINED leaves it unknown). INVALID_ARGUMENT when the attribute is not a
// data type or not one the output's type constraint allows (as Bernoulli's or EyeLike's dtype).
absl::Status OutputDTypeFromAttribute(InferenceContext& ctx, int output,
                                      absl::string_view attribute, v1::DataType fallback);

// INVALID_ARGUMENT naming input i (`what`) unless its shape, when known, holds exactly one
// element (a scalar, or a 1-D tensor of one element when `allow_1d`).
absl::Status CheckScalarInput(const InferenceContext& ctx, int i, absl::string_view what,
                              bool allow_1d);

// Known value of the one-element integer input i, or nullopt.
std::optional<int64_t> ScalarInputInt(const InferenceContext& ctx, int i);

// The dims two shapes agree on where both describe one value (If's branches, a Loop's initial
// and final values): equal known sizes and equal symbols stay, the rest is unknown; nullopt
// when either rank is unknown or the ranks differ.
std::optional<Dims> UnionShapes(const std::optional<Dims>& a, const std::optional<Dims>& b);

// --- Shared by the op files of ops/ ------------------------------------------------------

// Opset 1's in-place hint on many ops; accepted and ignored.
OpBuilder& ConsumedInputs(OpBuilder& b);

// Int-list attribute `name` with `expected` entries (`expected` copies of `fill` when absent);
// INVALID_ARGUMENT naming the node and the attribute for another count.
absl::StatusOr<std::vector<int64_t>> ListAttr(const InferenceContext& ctx,
                                              absl::string_view name, size_t expected,
                                              int64_t fill);

// Validates 'axis' against input 0's rank (when known); returns the normalised axis or -1.
absl::StatusOr<int64_t> CheckedAxis(const InferenceContext& ctx, const std::optional<Dims>& x);

// Per-family descriptor lists (ops/<family>.cc, <family> the prefix of the runtime/kernels/
// files holding the kernels), concatenated by RegisterBuiltinOps.
void AddElementwiseOps(std::vector<OpDef>* ops);
void AddNnOps(std::vector<OpDef>* ops);  // with NhwcConv and the NHWC pools, domain graphopt
void AddReductionOps(std::vector<OpDef>* ops);
void AddTensorOps(std::vector<OpDef>* ops);  // Identity and the layout ops
void AddTensorIndexOps(std::vector<OpDef>* ops);
void AddTensorShapeOps(std::vector<OpDef>* ops);
void AddRnnOps(std::vector<OpDef>* ops);
void AddControlFlowOps(std::vector<OpDef>* ops);
void AddSequenceOps(std::vector<OpDef>* ops);  // sequences and optionals (runtime sequence.cc)
void AddMiscOps(std::vector<OpDef>* ops);
void AddFusedOps(std::vector<OpDef>* ops);  // FusedGroup, domain graphopt
void AddNnGradOps(std::vector<OpDef>* ops);  // ops/nn_grad_ops.h, domain graphopt

}  // namespace builtin_internal
}  // namespace graphopt

#endif  // GRAPHOPT_OPS_BUILTIN_OPS_INTERNAL_H_
