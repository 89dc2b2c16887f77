#ifndef GRAPHOPT_RULES_TEST_UTIL_H_
#define GRAPHOPT_RULES_TEST_UTIL_H_

// Helpers for the rule tests: descriptors, attribute values and a small IR graph on which
// InferNodeTypes / InferNodeShapes run.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ops/builtin_ops_test_util.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "graph/types.h"
#include "proto/op.pb.h"

namespace graphopt {
namespace rules_testing {

// "float32[batch,3,?]", "int64[]" (scalar), "float32[?..]" (rank unknown), "?" (nothing): the
// builtin ops' tests' parser.
using ::graphopt::ParseType;

v1::Tensor Int64Tensor(const std::vector<int64_t>& values, bool scalar = false);

v1::Attribute AInt(int64_t v);
v1::Attribute AInts(const std::vector<int64_t>& v);
v1::Attribute AString(const std::string& v);
v1::Attribute AFloat(float v);

// A descriptor in domain "test.rules". Inputs/outputs are single unless the name ends in '?'
// (optional) or '*' (variadic, min 1); all use constraint "T" (float32, float16, int64).
v1::OpDescriptor Descriptor(const std::string& name, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs,
                            const std::vector<v1::AttributeSpec>& attributes = {});
v1::AttributeSpec AttrSpec(const std::string& name, v1::AttributeType type);
v1::AttributeSpec AttrSpec(const std::string& name, v1::AttributeType type,
                           v1::Attribute default_value);

// A graph under construction plus the inference that runs over it.
class TestGraph {
 public:
  explicit TestGraph(const OpRegistry* registry) : registry_(registry) {}

  ValueId Value(const std::string& name);
  // A graph input of the given type ("float32[batch,3]").
  void In(const std::string& name, const std::string& type);
  // An initializer (not a graph input), typed like its tensor.
  void Init(const std::string& name, v1::Tensor t);
  void Ints(const std::string& name, const std::vector<int64_t>& v) {
    Init(name, Int64Tensor(v));
  }
  // "const:1,2" (an int64 initializer holding 1, 2), else a graph input of that type.
  void Input(const std::string& name, const std::string& spec);
  // Inputs "in0", "in1", ... from specs as Input's ("" for an omitted one); their names ("").
  std::vector<std::string> Inputs(const std::vector<std::string>& specs);
  // A node; "" among inputs/outputs omits an optional one.
  void Node(const std::string& op, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, AttributeMap attrs = {},
            const std::string& domain = "");
  // Imports `domain` at `version`.
  void SetOpset(int64_t version, const std::string& domain = "");

  // Type and shape inference over every node, in insertion order.
  absl::Status Run();

  // "float32[batch,3]".
  std::string T(const std::string& name);
  // "[2,batch]" or "none".
  std::string DimsValue(const std::string& name);

  Graph graph;
  DimsValueTable dims;

 private:
  const OpRegistry* registry_;
};

}  // namespace rules_testing
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_TEST_UTIL_H_
