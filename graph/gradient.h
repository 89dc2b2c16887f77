#ifndef GRAPHOPT_GRAPH_GRADIENT_H_
#define GRAPHOPT_GRAPH_GRADIENT_H_

// What an op's gradient function sees and builds (OpDef::gradient_fn), and helpers shared by
// the builtin gradients (ops/grad_*.cc). The gradient pass (passes/gradient_pass.h) implements
// GradientContext; docs/gradients.md describes the contract for op authors.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/types.h"

namespace graphopt {

// One forward node being differentiated. A gradient function reads the node (inputs, outputs,
// attributes, their inferred types and shapes), emits backward nodes with Emit (each is typed
// and shaped as it is added, so later helpers see static shapes where the forward graph had
// them) and hands each input's gradient to AddInputGrad. It should skip the inputs for which
// needs_input_grad is false: their gradients would be dead code.
//
// Gradients are written in differentiable ops (ONNX ops where an efficient kernel exists, a
// graphopt-domain op with its own gradient otherwise), so that the pass can run on its own
// output (higher order).
class GradientContext {
 public:
  virtual ~GradientContext() = default;

  // --- The forward node -----------------------------------------------------------------------
  virtual const Graph& graph() const = 0;
  virtual NodeId node_id() const = 0;
  virtual const OpDef& op() const = 0;
  // The default domain's opset the graph imports (0: none, the newest semantics). Emitting
  // helpers below choose between ONNX's attribute and input forms (axes of ReduceSum, Squeeze,
  // Unsqueeze; split of Split) by it.
  virtual int64_t opset_version() const = 0;

  const Node& node() const { return graph().node(node_id()); }
  int num_inputs() const { return static_cast<int>(node().inputs.size()); }
  int num_outputs() const { return static_cast<int>(node().outputs.size()); }
  bool has_input(int i) const { return i >= 0 && i < num_inputs() && node().inputs[i].valid(); }
  // Invalid for an absent input.
  ValueId input(int i) const { return has_input(i) ? node().inputs[i] : ValueId(); }
  ValueId output(int i) const {
    return i >= 0 && i < num_outputs() ? node().outputs[i] : ValueId();
  }
  const TensorType& type(ValueId v) const { return graph().value(v).type; }
  // The value's shape, nullopt when its rank is unknown.
  const std::optional<Dims>& shape(ValueId v) const { return type(v).shape; }
  v1::DataType dtype(ValueId v) const { return type(v).dtype; }

  // The gradient of output i with respect to the loss; invalid when the loss does not depend
  // on that output (a zero gradient, never materialized).
  virtual ValueId output_grad(int i) const = 0;
  // True when input i is present, differentiable (floating point, not declared
  // non-differentiable, not a stop-gradient value) and on a path from a target to the loss.
  virtual bool needs_input_grad(int i) const = 0;

  // The node's attribute, else the descriptor's default, else null.
  const v1::Attribute* attr(absl::string_view name) const;
  // Typed attribute access with a fallback for an absent attribute; INVALID_ARGUMENT naming
  // the node for a value of another kind.
  absl::StatusOr<int64_t> GetInt(absl::string_view name, int64_t fallback) const;
  absl::StatusOr<float> GetFloat(absl::string_view name, float fallback) const;
  absl::StatusOr<std::string> GetString(absl::string_view name,
                                        absl::string_view fallback) const;
  absl::StatusOr<std::vector<int64_t>> GetInts(absl::string_view name,
                                               std::vector<int64_t> fallback) const;

  // --- Building the backward graph ----------------------------------------------------------
  // Adds a node of (domain, op_type) reading `inputs` (invalid ids are omitted optional inputs)
  // and returns its `num_outputs` new values, typed and shaped by the op's rules. Value and node
  // names are made unique under the forward node's name. INVALID_ARGUMENT naming the forward
  // node when the op is unknown or rejects its inputs.
  virtual absl::StatusOr<std::vector<ValueId>> Emit(absl::string_view op_type,
                                                    absl::Span<const ValueId> inputs,
                                                    AttributeMap attributes = {},
                                                    int num_outputs = 1,
                                                    absl::string_view domain = "") = 0;
  // Emit of a one-output op.
  absl::StatusOr<ValueId> Emit1(absl::string_view op_type, absl::Span<const ValueId> inputs,
                                AttributeMap attributes = {}, absl::string_view domain = "");
  // A new initializer holding `tensor` (its name is replaced by a unique one).
  virtual ValueId AddConstant(v1::Tensor tensor) = 0;

  // Contributes `grad` to input i's gradient; the pass sums several contributions. `grad` must
  // have the input's element type and shape (SumToShape reduces a broadcast result).
  virtual absl::Status AddInputGrad(int i, ValueId grad) = 0;

  // INVALID_ARGUMENT "node 'x' (Op): gradient: <message>".
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(
        absl::StrCat(graph().NodeLabel(node_id()), ": gradient: ", args...));
  }
};

// --- Attribute values -------------------------------------------------------------------------
v1::Attribute IntAttr(int64_t value);
v1::Attribute FloatAttr(float value);
v1::Attribute StringAttr(absl::string_view value);
v1::Attribute IntsAttr(absl::Span<const int64_t> values);

// --- Helpers over a GradientContext -----------------------------------------------------------
// A rank-0 constant of `dtype` (a floating-point or integer type) holding `value`.
ValueId ScalarConstant(GradientContext& ctx, double value, v1::DataType dtype);
// A 1-D int64 constant.
ValueId Int64Constant(GradientContext& ctx, absl::Span<const int64_t> values);

// Shape(x).
absl::StatusOr<ValueId> ShapeOf(GradientContext& ctx, ValueId x);
// A tensor of `like`'s shape and element type filled with `value` (Expand of a scalar).
absl::StatusOr<ValueId> FilledLike(GradientContext& ctx, ValueId like, double value);
// ReduceSum over `axes` (non-negative), in the form the graph's opset takes.
absl::StatusOr<ValueId> ReduceSumAxes(GradientContext& ctx, ValueId x,
                                      absl::Span<const int64_t> axes, bool keepdims);
// Unsqueeze / Squeeze over `axes`, in the form the graph's opset takes.
absl::StatusOr<ValueId> UnsqueezeAxes(GradientContext& ctx, ValueId x,
                                      absl::Span<const int64_t> axes);
absl::StatusOr<ValueId> SqueezeAxes(GradientContext& ctx, ValueId x,
                                    absl::Span<const int64_t> axes);
// Reshape(x, Shape(like)).
absl::StatusOr<ValueId> ReshapeLike(GradientContext& ctx, ValueId x, ValueId like);

// The gradient of an operand `like` that was broadcast (numpy rules) into a result whose
// gradient is `grad`: the sum of `grad` over the broadcast axes, shaped as `like`. `grad` itself
// when nothing was broadcast. With both shapes static (known sizes, or equal symbols) it emits a
// ReduceSum and a Reshape; otherwise the graphopt-domain SumToShape op (grad, Shape(like)).
absl::StatusOr<ValueId> SumToShape(GradientContext& ctx, ValueId grad, ValueId like);

// The domain of graphopt's own ops (gradient helpers such as SumToShape, backward kernels).
inline constexpr char kGraphoptDomain[] = "graphopt";

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_GRADIENT_H_
