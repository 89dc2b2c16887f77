#ifndef GRAPHOPT_RULES_CHECKER_H_
#define GRAPHOPT_RULES_CHECKER_H_

#include "absl/status/status.h"
#include "proto/op.pb.h"
#include "rules/program.h"

namespace graphopt {
namespace rules {

// Resolves every name of a parsed `program` against the descriptor `op` (inputs, outputs,
// attributes, type constraints, let-bound names, comprehension variables, data type names,
// builtin functions), assigns static types and checks them, and checks the statements against
// the rule kind (output statements cover every required output of a shape rule; a cost rule
// ends in one int expression). INVALID_ARGUMENT through `diag` naming the position.
absl::Status Check(const v1::OpDescriptor& op, const Diag& diag, Program* program);

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_CHECKER_H_
