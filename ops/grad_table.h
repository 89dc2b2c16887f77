#ifndef GRAPHOPT_OPS_GRAD_TABLE_H_
#define GRAPHOPT_OPS_GRAD_TABLE_H_

// Private to the builtin_ops target: the builtin gradient definitions, one file per op family
// (ops/grad_<family>.cc), attached to their ops by RegisterBuiltinOps.

#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "graph/gradient.h"
#include "graph/op_registry.h"

namespace graphopt {
namespace builtin_internal {

struct BuiltinGradient {
  GradientFn fn;
  // Inputs that get no gradient (indices, shapes, masks): OpDescriptor.non_differentiable_inputs.
  std::vector<int> non_differentiable;
};

// Key: the op's name for the default domain, "graphopt::Name" for graphopt's own ops.
using GradientTable = absl::btree_map<std::string, BuiltinGradient>;

void AddElementwiseGradients(GradientTable* table);
void AddNnGradients(GradientTable* table);
void AddReductionGradients(GradientTable* table);
void AddTensorGradients(GradientTable* table);

}  // namespace builtin_internal
}  // namespace graphopt

#endif  // GRAPHOPT_OPS_GRAD_TABLE_H_
