#ifndef GRAPHOPT_OPS_BUILTIN_OPS_H_
#define GRAPHOPT_OPS_BUILTIN_OPS_H_

#include "absl/status/status.h"
#include "graph/op_registry.h"

namespace graphopt {

// Registers graphopt's builtin operators (default domain, ONNX semantics) into `registry`.
// Called explicitly by each binary's main and by tests.
absl::Status RegisterBuiltinOps(OpRegistry* registry);

}  // namespace graphopt

#endif  // GRAPHOPT_OPS_BUILTIN_OPS_H_
