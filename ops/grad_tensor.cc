// Gradients of the tensor ops.

#include "graph/gradient.h"
#include "ops/grad_table.h"

namespace graphopt {
namespace builtin_internal {

void AddTensorGradients(GradientTable* table) { (void)table; }

}  // namespace builtin_internal
}  // namespace graphopt
