#ifndef GRAPHOPT_RULES_DOGFOOD_RULE_AGREEMENT_H_
#define GRAPHOPT_RULES_DOGFOOD_RULE_AGREEMENT_H_

// Compares two op registries node by node on an ONNX model: the builtins ("C++", the
// reference) and a registry whose ops of interest have rule-language shape rules ("rule", see
// RegisterWithRuleOps). Every node of those ops is inferred by both on the same inputs, and
// everything they produce must be identical.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "graph/op_registry.h"
#include "onnx/onnx_pb.h"

namespace graphopt {
namespace dogfood {

// How the rule's result for a node differs from the C++ function's. Knowledge compares the
// output dtypes, ranks, dims and shape-tensor contents ("dims values"): a dim is known (a
// size), symbolic or unknown; both sides knowing it (size or symbol) differently is a conflict.
enum class DiffKind {
  kConflict,          // both know something about an output and it differs
  kRuleKnowsLess,     // the rule leaves unknown what C++ knows; nothing conflicts
  kRuleKnowsMore,     // the rule knows what C++ leaves unknown; nothing conflicts
  kLessAndMore,       // less about one part, more about another; nothing conflicts
  kOnlyCppRejects,    // the C++ function fails on the node, the rule accepts it
  kOnlyRuleRejects,   // the rule fails on the node, the C++ function accepts it
};
// "conflict", "rule knows less", ...
const char* DiffKindName(DiffKind kind);

struct Difference {
  std::string model;
  std::string node;   // the node's name, or "#<index>" when it has none
  std::string op;     // OpLabel(domain, op_type)
  std::string value;  // the output value; empty for an error difference
  DiffKind kind = DiffKind::kConflict;
  // "float32[1,?,batch] value=[1,2]" ("value=none" without contents), or "error: <message>".
  std::string cpp;
  std::string rule;
};

struct OpTally {
  int64_t nodes = 0;          // nodes of the op compared
  int64_t agreed = 0;         // identical results, including both_rejected
  int64_t both_rejected = 0;  // both fail on the node
  int64_t disagreed = 0;      // at least one Difference

  void Add(const OpTally& o) {
    nodes += o.nodes;
    agreed += o.agreed;
    both_rejected += o.both_rejected;
    disagreed += o.disagreed;
  }
};

struct ModelComparison {
  std::string model;
  // The model could not be imported (ImportForInference) or has a cycle: nothing compared.
  std::string import_error;
  // Op label -> tally, for the compared ops that occur in the model.
  std::map<std::string, OpTally> ops;
  std::vector<Difference> differences;
};

// Imports `model` as ImportForInference does and infers types and shapes node by node in
// topological order with `cpp` (InferNodeTypes, then InferNodeShapes). At each node whose op
// label is in `ops`, `rule`'s op of the same (domain, name) runs first on the same inputs and
// its outputs and status are kept; then the C++ op runs, and the two are compared. Inference
// always carries on from the C++ results, so every compared node sees identical inputs (and
// identical results everywhere make the two registries' whole-graph inferences identical).
// Nodes of ops `cpp` does not know are skipped (their outputs stay unknown); a node whose
// inference fails gets unknown outputs, as in tools/shape_agreement.
ModelComparison CompareRuleOps(absl::string_view name, const onnx::ModelProto& model,
                               const OpRegistry& cpp, const OpRegistry& rule,
                               const absl::flat_hash_set<std::string>& ops);

}  // namespace dogfood
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_DOGFOOD_RULE_AGREEMENT_H_
