#ifndef GRAPHOPT_GRAPH_INFERENCE_H_
#define GRAPHOPT_GRAPH_INFERENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/types.h"

namespace graphopt {

// "int", "floats", "tensor", ... for an attribute's value kind; "empty" when none is set.
const char* AttributeKindName(const v1::Attribute& a);

// What a shape or type rule sees of one node: its inputs' types, shapes and (when known)
// contents, and its attributes with the descriptor's defaults applied. Rules write output
// dtypes, shapes and, for small integer tensors that describe shapes, their contents.
//
// "Contents as dims" lets shape computations such as Shape -> Gather -> Concat -> Reshape carry
// symbolic sizes: a 1-D int64 tensor holding [batch, 3] is represented as Dims{batch, 3}; a
// scalar as a single Dim. Unknown elements are Dim::Unknown().
class InferenceContext {
 public:
  virtual ~InferenceContext() = default;

  // --- The node -----------------------------------------------------------------------------
  virtual const Node& node() const = 0;
  virtual const OpDef& op() const = 0;
  // "node 'conv1' (Conv)".
  virtual std::string NodeLabel() const = 0;
  // Version of the operator set the node's domain is imported at (the graph's opset_imports;
  // "" and "ai.onnx" are one domain), or 0 when the graph imports none for it. Rules whose ONNX
  // semantics changed between opsets read it; 0 means the newest semantics.
  virtual int64_t opset_version() const = 0;

  // --- Inputs -------------------------------------------------------------------------------
  int num_inputs() const { return static_cast<int>(node().inputs.size()); }
  // False when input `i` is out of range or an omitted optional input.
  bool has_input(int i) const {
    return i >= 0 && i < num_inputs() && node().inputs[i].valid();
  }
  // Type of a present input (dtype may be DT_UNDEFINED and shape nullopt when unknown).
  virtual const TensorType& input_type(int i) const = 0;
  const std::optional<Dims>& input_shape(int i) const { return input_type(i).shape; }
  // Rank of input i, or nullopt when unknown or the input is absent.
  std::optional<int> input_rank(int i) const {
    if (!has_input(i) || !input_shape(i)) return std::nullopt;
    return static_cast<int>(input_shape(i)->size());
  }
  // Constant tensor feeding input i (an initializer that is not a graph input, or a Constant
  // node's value), or null.
  virtual const v1::Tensor* input_constant(int i) const = 0;
  // Known contents of a small integer input as dims (see above), or null.
  virtual const Dims* input_dims_value(int i) const = 0;

  // --- Attributes ---------------------------------------------------------------------------
  // The attribute as given on the node, else the descriptor's default, else null.
  virtual const v1::Attribute* attr(absl::string_view name) const = 0;
  bool has_attr(absl::string_view name) const { return attr(name) != nullptr; }
  // Typed access. INVALID_ARGUMENT naming the node when the attribute is absent without a
  // default or holds another kind of value.
  absl::StatusOr<int64_t> GetInt(absl::string_view name) const;
  absl::StatusOr<float> GetFloat(absl::string_view name) const;
  absl::StatusOr<std::string> GetString(absl::string_view name) const;
  absl::StatusOr<std::vector<int64_t>> GetInts(absl::string_view name) const;
  // With a fallback used when the attribute is absent (type errors still fail).
  absl::StatusOr<int64_t> GetInt(absl::string_view name, int64_t fallback) const;
  absl::StatusOr<std::vector<int64_t>> GetInts(absl::string_view name,
                                               std::vector<int64_t> fallback) const;

  // --- Outputs ------------------------------------------------------------------------------
  int num_outputs() const { return static_cast<int>(node().outputs.size()); }
  bool has_output(int i) const {
    return i >= 0 && i < num_outputs() && node().outputs[i].valid();
  }
  virtual v1::DataType output_dtype(int i) const = 0;
  virtual void set_output_dtype(int i, v1::DataType dtype) = 0;
  // Whether output i is a tensor (what InferNodeTypes sets before the op's type rule), a
  // sequence or an optional: only rules of ops that take containers (OpDef::takes_containers)
  // set another kind.
  virtual void set_output_kind(int i, v1::ValueKind kind) = 0;
  // nullopt: rank unknown.
  virtual void set_output_shape(int i, std::optional<Dims> shape) = 0;
  virtual void set_output_dims_value(int i, Dims value) = 0;

  // --- Errors -------------------------------------------------------------------------------
  // INVALID_ARGUMENT "node 'x' (Op): <message>".
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(NodeLabel(), ": ", args...));
  }
};

// Reads a small integer tensor (int32/int64, at most `max_elements`) as int64 values.
// INVALID_ARGUMENT when the tensor is of another type, too large, or its data is truncated.
absl::StatusOr<std::vector<int64_t>> TensorToInts(const v1::Tensor& tensor,
                                                   int64_t max_elements = 1 << 16);

// The tensor's dims as known Dims.
Dims ShapeFromDimsList(const v1::Tensor& tensor);

}  // namespace graphopt


namespace graphopt {

// Dims values (see InferenceContext) are kept for integer tensors of rank <= 1 with at most this
// many elements.
inline constexpr int64_t kMaxDimsValueElements = 64;

// Known contents of small integer values, indexed by ValueId::value(); see InferenceContext.
using DimsValueTable = std::vector<std::optional<Dims>>;

// The constant tensor defining `value`: its initializer (unless it is also a graph input, which
// a caller may override) or the `value` attribute of the Constant node producing it; else null.
const v1::Tensor* ConstantTensorOf(const Graph& graph, ValueId value);

// Known contents of every initializer (not also a graph input) that is an int32/int64 tensor of
// rank <= 1 with at most kMaxDimsValueElements elements: the table InferNodeShapes starts from.
DimsValueTable InitialDimsValues(const Graph& graph);

// Element types of `node`'s outputs from its inputs' types: checks every input against its type
// constraint (INVALID_ARGUMENT naming the node, the input and the constraint), binds the
// constraints, then sets each output from its dtype_from_attribute, its bound constraint or the
// constraint's single allowed type, and finally lets op.type_fn refine them. Inputs of unknown
// type bind nothing; outputs that cannot be known stay DT_UNDEFINED. A sequence or optional
// input binds its element type; it is INVALID_ARGUMENT for an op that does not take such
// values (OpDef::takes_containers). Outputs are tensors unless op.type_fn says otherwise.
absl::Status InferNodeTypes(Graph& graph, NodeId node, const OpDef& op);

// Output shapes of `node` through op.shape_fn. Reads and writes `dims_values` (which must have
// graph.num_value_slots() entries) for shape-carrying tensors. An op without shape_fn leaves
// the output shapes as they are (unknown unless declared) and OK.
absl::Status InferNodeShapes(Graph& graph, NodeId node, const OpDef& op,
                             DimsValueTable* dims_values);

// Evaluates a cost function of `op` (OpDef::flops_fn or bytes_fn, non-empty) on `node` as the
// graph's values now type it. The context only reads: it carries no dims values (a rule's
// input_dims_value sees none).
absl::StatusOr<std::optional<int64_t>> EvaluateNodeCost(const Graph& graph, NodeId node,
                                                        const OpDef& op, const CostFn& fn);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_INFERENCE_H_
