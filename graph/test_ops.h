#ifndef GRAPHOPT_GRAPH_TEST_OPS_H_
#define GRAPHOPT_GRAPH_TEST_OPS_H_

#include <string>
#include <vector>

#include "graph/op_registry.h"

namespace graphopt {
namespace testing {

// A descriptor builder for tests that need ops without depending on the builtin set.
// Inputs/outputs are single-valued and of type constraint "T" (float32 or int64) unless the
// name ends in '?' (optional) or '*' (variadic, min 1).
OpDef MakeTestOp(const std::string& name, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs,
                 const std::vector<v1::AttributeSpec>& attributes = {});

// An AttributeSpec.
v1::AttributeSpec AttrSpec(const std::string& name, v1::AttributeType type, bool required);

}  // namespace testing
}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_TEST_OPS_H_
