#ifndef GRAPHOPT_GRAPH_OP_REGISTRY_H_
#define GRAPHOPT_GRAPH_OP_REGISTRY_H_

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "proto/op.pb.h"

namespace graphopt {

class InferenceContext;

// Computes output shapes (and, for shape-carrying tensors, their contents) of one node.
// Returns INVALID_ARGUMENT for inputs the op cannot accept; InferenceContext::Error builds a
// message that names the node.
using ShapeInferenceFn = std::function<absl::Status(InferenceContext&)>;
// Optional: computes output element types where the descriptor's type constraints and
// dtype_from_attribute cannot (for example Constant, whose type is its tensor's).
using TypeInferenceFn = std::function<absl::Status(InferenceContext&)>;

// An operator known to the registry: its descriptor plus the compiled rules.
struct OpDef {
  v1::OpDescriptor descriptor;
  ShapeInferenceFn shape_fn;
  TypeInferenceFn type_fn;

  // Derived by OpRegistry::Register from the descriptor.
  int min_inputs = 0;
  int max_inputs = 0;  // kUnbounded for a variadic last input
  int min_outputs = 0;
  int max_outputs = 0;
  absl::flat_hash_map<std::string, const v1::AttributeSpec*> attribute_specs;
  absl::flat_hash_map<std::string, const v1::TypeConstraint*> type_constraints;

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
class OpRegistry {
 public:
  OpRegistry() = default;
  OpRegistry(const OpRegistry&) = delete;
  OpRegistry& operator=(const OpRegistry&) = delete;

  // Validates and adds `def`. INVALID_ARGUMENT naming the op and the offending field when the
  // descriptor is malformed (no shape rule, a variadic argument that is not last, an unknown
  // type constraint, a default of the wrong type, an in-place pair out of range, ...);
  // ALREADY_EXISTS when (domain, name) is taken.
  absl::Status Register(OpDef def);

  // The op, or null.
  const OpDef* Find(absl::string_view domain, absl::string_view name) const;

  // Every op sorted by (domain, name).
  std::vector<const OpDef*> List() const;
  size_t size() const { return ops_.size(); }

 private:
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
