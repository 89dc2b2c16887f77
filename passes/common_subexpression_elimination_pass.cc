#include "passes/common_subexpression_elimination_pass.h"

#include <memory>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/types/span.h"
#include "absl/strings/str_cat.h"
#include "graph/kind_ops.h"
#include "graph/prefetch.h"
#include "graph/proto_util.h"
#include "passes/effects.h"

namespace graphopt {
namespace {

// Never merged: unknown ops, ops with effects, and nondeterministic ones.
bool Mergeable(const OpDef* op) {
  return op != nullptr && !HasEffects(*op) && !IsNondeterministic(*op);
}

// Deterministic bytes of a node's attributes ("" when it has none).
std::string AttributeBytes(const Node& n) {
  std::string bytes;
  for (const auto& [name, attr] : n.attributes) {
    absl::StrAppend(&bytes, name, "=");
    AppendSerializedDeterministic(attr, &bytes);
  }
  return bytes;
}

// Merges nodes that compute the same op on the same inputs with the same attributes: the later
// node's uses move to the earlier node and the later node goes away. One walk in topological
// order, so chains of duplicates collapse in a single run. Candidates are found by a 64-bit hash
// of (op kind, output count, input ids, attribute bytes) and confirmed by comparing exactly;
// the earliest node kept so far that computes the same wins.
//
// Where candidates are looked up: a duplicate reads what the original reads, so the nodes kept
// so far ("representatives") are listed per value their first input reads, in dense arrays
// indexed by value id that follow the graph's own order through memory. A hash table keyed by
// the hash alone would be larger than the caches on big graphs and cost a memory round trip per
// node. Nodes without inputs, and the readers of a value once more than kMaxListed
// representatives read it, go to that hash table instead (the value's list moves there once),
// so no list is walked for long: linear.
class CommonSubexpressionEliminationPass : public Pass {
 public:
  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    // Attribute bytes of nodes already in the table, computed once per node that has any
    // (kept sparse: a string per node slot would be a pass over memory of its own).
    AttrBytes attr_bytes;
    std::vector<Rep> reps;
    std::vector<RepList> lists(graph.num_value_slots());
    // hash -> first representative with that hash; further ones with the same hash but another
    // identity (true collisions, vanishingly rare) go to `overflow`.
    absl::flat_hash_map<uint64_t, NodeId> first;
    std::vector<std::pair<uint64_t, NodeId>> overflow;
    auto add_to_table = [&](uint64_t hash, NodeId node) {
      if (!first.try_emplace(hash, node).second) overflow.emplace_back(hash, node);
    };
    const HiddenAccess hidden(graph, *context.ops);
    const KindOps ops(graph, *context.ops);
    int64_t merged = 0;
    for (size_t k = 0; k < order->size(); ++k) {
      // A merge unlinks the duplicate from its inputs' use lists, which live on the heap once a
      // value has more than two readers: start loading those a few nodes ahead.
      if (absl::Status s = context.CheckStopEvery(k); !s.ok()) return s;
      PrefetchSweep(graph, *order, k);
      const NodeId id = (*order)[k];
      const Node& n = graph.node(id);
      // A node touching a hidden access is never merged: merging could move a read across a
      // write (a reader of x before a write to x merged with one after it) or make two values
      // one where only one of them is written or captured; the edges order neither.
      if (n.outputs.empty() || !Mergeable(ops.Find(id)) || hidden.Touches(n)) {
        continue;
      }
      if (!n.attributes.empty()) attr_bytes[id.value()] = AttributeBytes(n);
      // The interned kind stands for (domain, op_type): equal kinds, equal ops.
      const uint64_t hash = absl::HashOf(graph.op_kind(id).value(), n.outputs.size(),
                                         absl::MakeConstSpan(n.inputs),
                                         BytesOf(attr_bytes, id));
      ValueId key;
      for (ValueId in : n.inputs) {
        if (in.valid()) {
          key = in;
          break;
        }
      }
      RepList* list = key.valid() && !lists[key.value()].in_table ? &lists[key.value()] : nullptr;
      NodeId match;
      if (list != nullptr) {
        for (int32_t r = list->head; r >= 0 && !match.valid(); r = reps[r].next) {
          if (reps[r].hash == hash && SameComputation(graph, reps[r].node, id, attr_bytes)) {
            match = reps[r].node;
          }
        }
      } else if (auto it = first.find(hash); it != first.end()) {
        if (SameComputation(graph, it->second, id, attr_bytes)) {
          match = it->second;
        } else {
          for (const auto& [h, other] : overflow) {
            if (h == hash && SameComputation(graph, other, id, attr_bytes)) {
              match = other;
              break;
            }
          }
        }
      }
      if (match.valid() && Merge(graph, match, id)) {
        ++merged;
        continue;
      }
      // `id` stays: a representative from now on.
      if (list == nullptr) {
        add_to_table(hash, id);
        continue;
      }
      const int32_t r = static_cast<int32_t>(reps.size());
      reps.push_back(Rep{id, hash, -1});
      (list->tail >= 0 ? reps[list->tail].next : list->head) = r;
      list->tail = r;
      if (++list->length > kMaxListed) {
        for (int32_t q = list->head; q >= 0; q = reps[q].next) {
          add_to_table(reps[q].hash, reps[q].node);
        }
        list->in_table = true;
      }
    }
    context.Note(absl::StrCat("merged ", merged, " duplicate nodes"));
    return merged > 0;
  }

 private:
  using AttrBytes = absl::flat_hash_map<int32_t, std::string>;

  // Representatives read by one value listed at most; beyond, the hash table takes them.
  static constexpr int32_t kMaxListed = 8;

  struct Rep {
    NodeId node;
    uint64_t hash = 0;
    int32_t next = -1;  // the next representative on the same list, in walk order
  };
  // The representatives whose first input reads one value, in the order they were kept.
  struct RepList {
    int32_t head = -1;
    int32_t tail = -1;
    int32_t length = 0;
    bool in_table = false;
  };

  // The attribute bytes of `id` ("" for a node without attributes).
  static absl::string_view BytesOf(const AttrBytes& attr_bytes, NodeId id) {
    auto it = attr_bytes.find(id.value());
    return it == attr_bytes.end() ? absl::string_view() : absl::string_view(it->second);
  }

  static bool SameComputation(const Graph& graph, NodeId a, NodeId b,
                              const AttrBytes& attr_bytes) {
    const Node& x = graph.node(a);
    const Node& y = graph.node(b);
    return graph.op_kind(a) == graph.op_kind(b) && x.outputs.size() == y.outputs.size() &&
           x.inputs == y.inputs && BytesOf(attr_bytes, a) == BytesOf(attr_bytes, b);
  }

  // Redirects `dup`'s uses to `keep` and removes `dup`. False (nothing done) when `dup` cannot
  // go: one of its outputs is a graph output (a name in the interface) or is an output `keep`
  // omits.
  static bool Merge(Graph& graph, NodeId keep, NodeId dup) {
    const Node& k = graph.node(keep);
    const Node& d = graph.node(dup);
    for (size_t i = 0; i < d.outputs.size(); ++i) {
      if (!d.outputs[i].valid()) continue;
      if (graph.value(d.outputs[i]).graph_output_count > 0 || !k.outputs[i].valid()) {
        return false;
      }
    }
    for (size_t i = 0; i < d.outputs.size(); ++i) {
      if (d.outputs[i].valid()) graph.ReplaceAllUsesWith(d.outputs[i], k.outputs[i]);
    }
    graph.RemoveNode(dup);
    return true;
  }
};

}  // namespace

PassInfo CommonSubexpressionEliminationPassInfo() {
  PassInfo info;
  info.name = "common_subexpression_elimination";
  info.description =
      "Merges nodes computing the same op on the same inputs with the same attributes (never "
      "ops with side effects, mutated inputs or the 'nondeterministic' extension, nor nodes "
      "reading or producing a value some node mutates).";
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 1;
  info.repeat_to_fixpoint = true;
  info.factory = OptionlessFactory<CommonSubexpressionEliminationPass>();
  return info;
}

}  // namespace graphopt
