// Gradients of the reduction ops.

#include "graph/gradient.h"
#include "ops/grad_table.h"

namespace graphopt {
namespace builtin_internal {

void AddReductionGradients(GradientTable* table) { (void)table; }

}  // namespace builtin_internal
}  // namespace graphopt
