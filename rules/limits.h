#ifndef GRAPHOPT_RULES_LIMITS_H_
#define GRAPHOPT_RULES_LIMITS_H_

#include <cstdint>

namespace graphopt {

// What a rule computes: output shapes, output element types, or one cost figure.
enum class RuleKind { kShape, kType, kCost };

// Bounds that make every rule terminate in bounded time and memory (docs/rule-language.md,
// "Limits").
struct RuleLimits {
  int64_t max_text_bytes = 64 * 1024;
  // Nesting of expressions (parentheses, operands, calls, lists) in the source.
  int max_depth = 256;
  // Length of any list built while evaluating (range, comprehension, ++, list literal).
  int64_t max_list_length = 4096;
  // Evaluation steps for one application of a rule: one per expression evaluated, plus one per
  // list element copied and per polynomial term computed.
  int64_t max_steps = 1000000;
};

}  // namespace graphopt

#endif  // GRAPHOPT_RULES_LIMITS_H_
