#ifndef GRAPHOPT_GRAPH_OP_REGISTRY_H_
#define GRAPHOPT_GRAPH_OP_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/op.pb.h"

namespace graphopt {

class InferenceContext;
class GradientContext;

// Computes output shapes (and, for shape-carrying tensors, their contents) of one node.
// Returns INVALID_ARGUMENT for inputs the op cannot accept; InferenceContext::Error builds a
// message that names the node.
using ShapeInferenceFn = std::function<absl::Status(InferenceContext&)>;
// Optional: computes output element types where the descriptor's type constraints and
// dtype_from_attribute cannot (for example Constant, whose type is its tensor's).
using TypeInferenceFn = std::function<absl::Status(InferenceContext&)>;
// Optional: one figure of a node's cost (flops, or bytes read and written) from its inputs'
// types and its attributes; nullopt when unknown or symbolic. The context is const: a cost
// rule only reads the node.
using CostFn = std::function<absl::StatusOr<std::optional<int64_t>>(const InferenceContext&)>;
// Optional: emits the backward nodes of one node (graph/gradient.h). Builtin ops carry one
// (descriptor.gradient.builtin names it); ops registered over the wire carry a gradient body
// instead, which the gradient pass instantiates itself.
using GradientFn = std::function<absl::Status(GradientContext&)>;

// An operator known to the registry: its descriptor plus the compiled rules.
struct OpDef {
  v1::OpDescriptor descriptor;
  ShapeInferenceFn shape_fn;
  TypeInferenceFn type_fn;
  // The descriptor's cost rules (cost.flops, cost.bytes_moved), empty when it has none; read by
  // passes/cost_model.h.
  CostFn flops_fn;
  CostFn bytes_fn;
  GradientFn gradient_fn;
  // Whether the op reads or writes sequence and optional values (TensorType::kind): only such
  // ops may be given them (InferNodeTypes refuses them elsewhere). Builtin ops only: wire
  // descriptors describe tensor ops.
  bool takes_containers = false;

  // Derived by OpRegistry::Register from the descriptor.
  int min_inputs = 0;
  int max_inputs = 0;  // kUnbounded for a variadic last input
  int min_outputs = 0;
  int max_outputs = 0;
  absl::flat_hash_map<std::string, const v1::AttributeSpec*> attribute_specs;
  absl::flat_hash_map<std::string, const v1::TypeConstraint*> type_constraints;
  // The required attributes, in the descriptor's order: what the verifier checks on every node
  // (a descriptor may declare many optional attributes; nodes pay only for the required ones).
  std::vector<const v1::AttributeSpec*> required_attributes;

  static constexpr int kUnbounded = std::numeric_limits<int>::max();

  // The ArgSpec governing input/output `index` (the variadic last one repeats). Null when out of
  // range.
  const v1::ArgSpec* input_spec(int index) const;
  const v1::ArgSpec* output_spec(int index) const;
  // Attribute spec by name, or null.
  const v1::AttributeSpec* attribute_spec(absl::string_view name) const;
};

// The set of known operators, keyed by (domain, name). Built explicitly (see
// RegisterBuiltinOps); there is no static registration. Not thread-safe for mutation; a
// registry that is no longer mutated may be read from any number of threads.
//
// Layering: a registry may have a parent (for example builtins <- a tenant's registered ops <-
// one request's ops). Its own ops form its "local layer"; Find and List see the local layer on
// top of the parent's (recursively), and a local op shadows a parent op of the same
// (domain, name). Whether shadowing is allowed is the caller's policy (the op store refuses to
// override builtins). The parent must outlive the registry and must not be mutated while the
// registry is used.
class OpRegistry {
 public:
  OpRegistry() = default;
  explicit OpRegistry(const OpRegistry* parent) : parent_(parent) {}
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Validates and adds `def` to the local layer. INVALID_ARGUMENT naming the op and the
  // offending field when the descriptor is malformed (no shape rule, a variadic argument that
  // is not last, an unknown type constraint, a default of the wrong type, an in-place pair out
  // of range, ...); ALREADY_EXISTS when (domain, name) is taken in the local layer (an op of the
  // parent is shadowed, not refused).
  absl::Status Register(OpDef def);

  // The op (the local layer first, then the parent's), or null.
  const OpDef* Find(absl::string_view domain, absl::string_view name) const;
  // The op of the local layer only, or null.
  const OpDef* FindLocal(absl::string_view domain, absl::string_view name) const;

  // Every visible op (local and inherited, a shadowed parent op left out) sorted by
  // (domain, name).
  std::vector<const OpDef*> List() const;
  // The local layer's ops sorted by (domain, name).
  std::vector<const OpDef*> ListLocal() const;
  // The number of ops List() returns: local ops plus the parent's, shadowed ones counted once.
  // O(1) without a parent, O(local ops) with one.
  size_t size() const;
  // The number of ops of the local layer.
  size_t local_size() const { return ops_.size(); }

  const OpRegistry* parent() const { return parent_; }

  // True when an op of this registry or of a parent declares mutated_inputs. No builtin op
  // does, so passes that look for writes to values can skip the per-node lookups. O(layers).
  bool HasMutatingOps() const;
  // True when an op of this registry or of a parent has a decomposition body (no builtin op
  // does), so that inlining has nothing to look for otherwise. O(layers).
  bool HasOpsWithBodies() const;

 private:
  // True when `count` is positive in this layer or a parent's.
  bool AnyLayerCounts(int OpRegistry::*count) const;

  const OpRegistry* parent_ = nullptr;
  // Local ops declaring mutated_inputs.
  int local_mutating_ops_ = 0;
  // Local ops with a decomposition body.
  int local_ops_with_bodies_ = 0;
  // unique_ptr keeps OpDef addresses stable (attribute_specs points into them).
  absl::btree_map<std::pair<std::string, std::string>, std::unique_ptr<OpDef>> ops_;
  // domain -> name -> op: Find runs once per node per pass and must not allocate.
  absl::flat_hash_map<std::string, absl::flat_hash_map<std::string, const OpDef*>> index_;
};

// Extension attribute (a non-zero int) of ops whose outputs may differ between two evaluations
// with equal inputs, such as Dropout in training mode: CSE never merges them.
inline constexpr char kNondeterministicExtension[] = "nondeterministic";

// True when the op does more than compute its outputs: it has side effects or writes to an
// input. Such nodes are never removed (DCE) or merged (CSE).
bool HasEffects(const OpDef& op);

// Validates a descriptor without registering it (what Register checks, minus uniqueness).
absl::Status ValidateOpDef(const OpDef& def);

// True when `value` holds the kind of value `type` declares (ATTR_DTYPE also accepts an int,
// ATTR_SHAPE also accepts ints, as ONNX encodes them).
bool AttributeValueMatches(const v1::Attribute& value, v1::AttributeType type);

// "Conv" for the default domain, "com.example::MyOp" otherwise.
std::string OpLabel(absl::string_view domain, absl::string_view name);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_OP_REGISTRY_H_
