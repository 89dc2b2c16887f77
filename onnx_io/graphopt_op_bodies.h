#ifndef GRAPHOPT_ONNX_IO_GRAPHOPT_OP_BODIES_H_
#define GRAPHOPT_ONNX_IO_GRAPHOPT_OP_BODIES_H_

// Standard-ONNX bodies for graphopt's own ops (domain "graphopt"): what the portable export
// (onnx_portable.h) writes as ONNX model-local functions, so that other runtimes can run a graph
// graphopt optimized. One body per node: the node's attributes, and the static facts the body
// needs (ranks, constant shapes), are baked into it, so a FunctionProto needs neither attributes
// nor ref_attr_name. FusedGroup is handled by the caller (its body is already a graph).
// A new graphopt-domain op that can reach an optimized graph needs a body here: without one,
// writing such a graph as ONNX fails (UNIMPLEMENTED) unless native ops are asked for.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"

namespace graphopt {
namespace onnx_portable {

inline constexpr char kGraphoptDomain[] = "graphopt";

// What is known statically about the values one graph (or FusedGroup body) names: declared
// types (inputs, outputs, value_info) and initializers. Looks through to the enclosing scope.
class ValueFacts {
 public:
  explicit ValueFacts(const ValueFacts* parent = nullptr) : parent_(parent) {}
  // Registers the declarations of `g` (not its nodes' subgraphs).
  void AddGraph(const onnx::GraphProto& g);

  // Rank, or -1 when the type or its shape is not declared.
  int Rank(const std::string& name) const;
  // Every dim, when all are known sizes.
  std::optional<std::vector<int64_t>> Dims(const std::string& name) const;
  // Element type, or 0 (UNDEFINED).
  int32_t ElemType(const std::string& name) const;
  // The values of an int64 initializer.
  std::optional<std::vector<int64_t>> Int64Values(const std::string& name) const;

 private:
  const onnx::TypeProto::Tensor* Type(const std::string& name) const;
  const ValueFacts* parent_;
  absl::flat_hash_map<std::string, const onnx::TypeProto::Tensor*> types_;
  absl::flat_hash_map<std::string, const onnx::TensorProto*> initializers_;
};

// The body of the graphopt-domain `node` (any op but FusedGroup) as a function named `name` in
// domain "graphopt", inputs in0.. (the node's inputs without trailing absent ones), outputs
// out0.., written with default-domain ops of `opset`. UNIMPLEMENTED naming the node and what is
// missing where no standard form is known (an unknown op, an unknown rank or a shape the body
// needs, an opset too old for the ops it needs).
absl::StatusOr<onnx::FunctionProto> GraphoptOpBody(const onnx::NodeProto& node,
                                                   const std::string& what,
                                                   const ValueFacts& facts, int64_t opset);

}  // namespace onnx_portable
}  // namespace graphopt

#endif  // GRAPHOPT_ONNX_IO_GRAPHOPT_OP_BODIES_H_
