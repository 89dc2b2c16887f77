#ifndef GRAPHOPT_RULES_LOWERING_H_
#define GRAPHOPT_RULES_LOWERING_H_

// Lowering: a checked program -> the bytecode the VM runs (bytecode.h). Internal to //rules;
// the public entry is PrepareProgram (evaluator.h).

#include "absl/status/status.h"
#include "rules/program.h"

namespace graphopt {
namespace rules {

// Fills Program::code (each node's compact form) and Program::bytecode. Every construct the
// checker accepts lowers; the one bound is the register file: an instruction names at most
// 65535 registers (slots, distinct literals and temporaries together), which a rule within the
// default RuleLimits never reaches. A program past it is INVALID_ARGUMENT. INTERNAL for a
// program that was not through the checker.
absl::Status LowerProgram(Program* program);

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_LOWERING_H_
