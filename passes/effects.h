#ifndef GRAPHOPT_PASSES_EFFECTS_H_
#define GRAPHOPT_PASSES_EFFECTS_H_

#include <vector>

#include "graph/graph.h"
#include "graph/op_registry.h"

namespace graphopt {

// What the graph's edges do not show about its values, as of construction (values added later
// have neither):
// - mutated: some live node writes the value (an input listed in its op's mutated_inputs). The
//   edges do not say when the write happens, so a pass must not move reads or writes between
//   such a value and another (CSE merging two readers, eliminate_identity forwarding a copy).
// - captured: the subgraph of some live node (If, Loop and Scan bodies) reads the value by
//   name. That read is no edge either: a pass must not forward, merge, fuse away or rename it.
// The one check every rewriting pass uses. Linear in nodes and subgraph sizes; free (no
// allocation, no sweep) for the common graph without mutating ops and subgraphs.
class HiddenAccess {
 public:
  HiddenAccess(const Graph& graph, const OpRegistry& ops);

  bool mutated(ValueId v) const { return Get(mutated_, v); }
  bool captured(ValueId v) const { return Get(captured_, v); }
  // Mutated or captured.
  bool any(ValueId v) const { return mutated(v) || captured(v); }
  // Some input or output of `node` is mutated or captured.
  bool Touches(const Node& node) const;
  // Whether the graph has any such value at all.
  bool has_any() const { return !mutated_.empty() || !captured_.empty(); }

 private:
  static bool Get(const std::vector<char>& bits, ValueId v) {
    return v.valid() && v.value() < static_cast<int>(bits.size()) && bits[v.value()] != 0;
  }
  // Indexed by ValueId::value(); empty when no value is mutated (resp. captured).
  std::vector<char> mutated_;
  std::vector<char> captured_;
};

// True when the op carries a non-zero kNondeterministicExtension.
bool IsNondeterministic(const OpDef& op);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_EFFECTS_H_
