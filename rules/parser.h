#ifndef GRAPHOPT_RULES_PARSER_H_
#define GRAPHOPT_RULES_PARSER_H_

#include <vector>

#include "absl/status/status.h"
#include "rules/lexer.h"
#include "rules/program.h"

namespace graphopt {
namespace rules {

// Parses `tokens` (ending with kEnd) into program->nodes/kids/stmts, leaving names unresolved
// (Op::kName, kCallName, kAttrName). INVALID_ARGUMENT (through `diag`) for a syntax error or an
// expression nested deeper than limits.max_depth. Recursion is bounded by that depth.
absl::Status Parse(const std::vector<Token>& tokens, const Diag& diag, const RuleLimits& limits,
                   Program* program);

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_PARSER_H_
