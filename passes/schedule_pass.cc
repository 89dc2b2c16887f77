#include "passes/schedule_pass.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "passes/cost_model.h"
#include "passes/remat_names.h"

namespace graphopt {
namespace {

// What an order costs in memory: the peak of live bytes and, when step weights are given, the
// live bytes held over the estimated work (the sum over steps of live bytes times the step's
// weight), saturating.
struct Footprint {
  int64_t peak = 0;
  // The same without graph outputs: the peak of what plan_memory places in its arena. The
  // executor holds the arena for the whole run and every graph output at its end whatever the
  // order, so in a graph whose outputs are large (a training graph's weight gradients) this is
  // what an order changes in the memory a planned run takes.
  int64_t planned_peak = 0;
  unsigned __int128 held = 0;
};

Footprint FootprintOf(const Graph& graph, const std::vector<NodeId>& order,
                      const std::vector<std::vector<ValueId>>& reads,
                      const std::vector<int64_t>& bytes, const std::vector<int64_t>* weights);

// Orders compare by the peak with graph outputs, except in training graphs (backward nodes,
// IsBackwardNodeName), whose weight gradients are outputs: there `peak` is set at the end by
// those, whatever the order, so the planned peak comes first.
bool LowerPeak(const Footprint& a, const Footprint& b, bool training) {
  if (training && a.planned_peak != b.planned_peak) return a.planned_peak < b.planned_peak;
  return a.peak < b.peak;
}

// Per node slot, the work a step of it stands for in the tie-break between orders of equal
// peak: 1 + the larger of its estimated flops and bytes moved (passes/cost_model.h; unknown
// figures count 0), a roofline at one flop per byte. A long step that holds bytes it does not
// need keeps them from other work (and other tenants) for longer than a short one.
std::vector<int64_t> StepWeights(const Graph& graph, const OpRegistry& ops) {
  const std::vector<NodeCost> costs = EstimateCosts(graph, ops);
  std::vector<int64_t> weights(costs.size(), 1);
  for (size_t i = 0; i < costs.size(); ++i) {
    const int64_t work = std::max(costs[i].flops.value_or(0), costs[i].bytes.value_or(0));
    weights[i] = work < std::numeric_limits<int64_t>::max() ? work + 1 : work;
  }
  return weights;
}

// Bytes of each value slot for scheduling: node outputs of known (bounded) size; 0 otherwise.
std::vector<int64_t> ValueBytes(const Graph& graph, const DimBounds& bounds) {
  std::vector<int64_t> bytes(graph.num_value_slots(), 0);
  std::string why;
  for (int i = 0; i < graph.num_value_slots(); ++i) {
    const Value& v = graph.value(ValueId(i));
    if (!v.alive || !v.producer.valid()) continue;
    bytes[i] = BoundedBytes(v.type, bounds, &why).value_or(0);
  }
  return bytes;
}

// Dependencies between the live nodes: for each node, how many (producer, read) edges it waits
// for, and for each value the distinct nodes reading it.
struct Dependencies {
  std::vector<int32_t> pending;                   // by node slot
  std::vector<std::vector<NodeId>> readers;       // by value slot, distinct, in id order
};

Dependencies BuildDependencies(const Graph& graph,
                               const std::vector<std::vector<ValueId>>& reads) {
  Dependencies d;
  d.pending.assign(graph.num_node_slots(), 0);
  d.readers.resize(graph.num_value_slots());
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    if (!graph.node(NodeId(i)).alive) continue;
    for (ValueId v : reads[i]) {
      if (graph.value(v).producer.valid()) ++d.pending[i];
      d.readers[v.value()].push_back(NodeId(i));  // reads[i] has no duplicates
    }
  }
  return d;
}

// Kahn's algorithm over `deps`, always running the ready node with the smallest key; `key` may
// change while a node waits (then `requeue` is called to push a fresh entry, and stale entries
// are skipped). O((n + e) log n).
class ListScheduler {
 public:
  using Key = std::tuple<int64_t, int64_t>;  // compared lexicographically, smallest first

  ListScheduler(const Graph& graph, const std::vector<std::vector<ValueId>>& reads,
                const std::vector<NodeId>& base_order)
      : graph_(graph), reads_(reads), deps_(BuildDependencies(graph, reads)) {
    position_.assign(graph.num_node_slots(), 0);
    for (size_t i = 0; i < base_order.size(); ++i) position_[base_order[i].value()] = i;
    version_.assign(graph.num_node_slots(), 0);
    ready_.assign(graph.num_node_slots(), 0);
    for (NodeId id : base_order) {
      if (deps_.pending[id.value()] == 0) ready_list_.push_back(id);
    }
  }

  // `key(node)` for a node that became ready; `on_run(node)` after a node runs (it may call
  // Requeue for waiting nodes whose key changed).
  std::vector<NodeId> Run(const std::function<int64_t(NodeId)>& key,
                          const std::function<void(NodeId)>& on_run) {
    for (NodeId id : ready_list_) Push(id, key);
    std::vector<NodeId> order;
    order.reserve(ready_list_.size());
    while (!heap_.empty()) {
      const Entry e = heap_.top();
      heap_.pop();
      const NodeId id(std::get<3>(e));
      if (std::get<2>(e) != version_[id.value()] || ready_[id.value()] != 1) continue;
      ready_[id.value()] = 2;  // done
      order.push_back(id);
      on_run(id);
      for (ValueId out : graph_.node(id).outputs) {
        if (!out.valid()) continue;
        for (NodeId r : deps_.readers[out.value()]) {
          if (--deps_.pending[r.value()] == 0) Push(r, key);
        }
      }
    }
    return order;
  }

  // Pushes a fresh entry for a ready node whose key changed.
  void Requeue(NodeId id, const std::function<int64_t(NodeId)>& key) {
    if (ready_[id.value()] == 1) Push(id, key);
  }
  bool IsWaitingOrReady(NodeId id) const { return ready_[id.value()] != 2; }
  const Dependencies& deps() const { return deps_; }

 private:
  // (key, base position, version, node): the base order breaks ties.
  using Entry = std::tuple<int64_t, int64_t, int32_t, int32_t>;

  void Push(NodeId id, const std::function<int64_t(NodeId)>& key) {
    ready_[id.value()] = 1;
    heap_.emplace(key(id), position_[id.value()], ++version_[id.value()], id.value());
  }

  const Graph& graph_;
  const std::vector<std::vector<ValueId>>& reads_;
  Dependencies deps_;
  std::vector<int64_t> position_;
  std::vector<int32_t> version_;
  std::vector<char> ready_;  // 0 waiting, 1 ready, 2 done
  std::vector<NodeId> ready_list_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

// Greedy: run the ready node that grows the live bytes least (its outputs that stay live,
// minus the inputs it is the last reader of).
std::vector<NodeId> GreedyOrder(const Graph& graph, const std::vector<std::vector<ValueId>>& reads,
                                const std::vector<NodeId>& base, const std::vector<int64_t>& bytes) {
  ListScheduler scheduler(graph, reads, base);
  const Dependencies& deps = scheduler.deps();
  // Readers not yet run, per value; graph outputs never die.
  std::vector<int32_t> remaining(graph.num_value_slots(), 0);
  for (int v = 0; v < graph.num_value_slots(); ++v) {
    remaining[v] = static_cast<int32_t>(deps.readers[v].size());
  }
  auto dies_with_last_reader = [&](ValueId v) {
    return graph.value(v).graph_output_count == 0 && bytes[v.value()] > 0;
  };
  std::function<int64_t(NodeId)> key = [&](NodeId id) {
    int64_t delta = 0;
    for (ValueId out : graph.node(id).outputs) {
      if (out.valid() && (remaining[out.value()] > 0 || !dies_with_last_reader(out))) {
        delta += bytes[out.value()];
      }
    }
    for (ValueId v : reads[id.value()]) {
      if (remaining[v.value()] == 1 && dies_with_last_reader(v)) delta -= bytes[v.value()];
    }
    return delta;
  };
  auto on_run = [&](NodeId id) {
    for (ValueId v : reads[id.value()]) {
      if (--remaining[v.value()] != 1 || !dies_with_last_reader(v)) continue;
      // The one reader left now frees v: its key dropped.
      for (NodeId r : deps.readers[v.value()]) {
        if (r != id && scheduler.IsWaitingOrReady(r)) {
          scheduler.Requeue(r, key);
          break;
        }
      }
    }
  };
  return scheduler.Run(key, on_run);
}

// Chain-following: run a reader of the most recently produced value first (depth-first in
// spirit), so that a value is consumed while it is fresh.
std::vector<NodeId> RecentFirstOrder(const Graph& graph,
                                     const std::vector<std::vector<ValueId>>& reads,
                                     const std::vector<NodeId>& base) {
  ListScheduler scheduler(graph, reads, base);
  std::vector<int64_t> step_of(graph.num_node_slots(), -1);
  int64_t step = 0;
  std::function<int64_t(NodeId)> key = [&](NodeId id) {
    int64_t latest = -1;
    for (ValueId v : reads[id.value()]) {
      NodeId p = graph.value(v).producer;
      if (p.valid()) latest = std::max(latest, step_of[p.value()]);
    }
    return -latest;
  };
  return scheduler.Run(key, [&](NodeId id) { step_of[id.value()] = step++; });
}

// Depth-first post-order from the graph outputs' producers (then from every other node in the
// base order): each node runs right after the last of its inputs' subtrees. Iterative.
std::vector<NodeId> DepthFirstOrder(const Graph& graph,
                                    const std::vector<std::vector<ValueId>>& reads,
                                    const std::vector<NodeId>& base) {
  std::vector<char> visited(graph.num_node_slots(), 0);
  std::vector<NodeId> order;
  order.reserve(base.size());
  std::vector<std::pair<NodeId, size_t>> stack;
  auto visit = [&](NodeId root) {
    if (!root.valid() || visited[root.value()]) return;
    visited[root.value()] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const std::vector<ValueId>& r = reads[id.value()];
      if (next < r.size()) {
        NodeId p = graph.value(r[next++]).producer;
        if (p.valid() && !visited[p.value()]) {
          visited[p.value()] = 1;
          stack.emplace_back(p, 0);
        }
        continue;
      }
      order.push_back(id);
      stack.pop_back();
    }
  };
  for (ValueId out : graph.outputs()) visit(graph.value(out).producer);
  for (NodeId id : base) visit(id);
  return order;
}

// Chooses among a few topological orders the one with the lowest peak of live bytes. Among
// orders of equal peak the one that holds its live bytes over the least estimated work wins
// (StepWeights), then the current order, then the candidates in the order they are tried. Every candidate
// respects the edges, including values read by subgraphs (If/Loop/Scan bodies). Graphs with
// nodes that have effects (or ops without descriptors) keep their order: effects are ordered by
// the node order, not by edges.
class SchedulePass : public Pass {
 public:
  explicit SchedulePass(DimBounds bounds) : bounds_(std::move(bounds)) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> base = graph.TopologicalOrder();
    if (!base.ok()) return base.status();
    for (NodeId id : *base) {
      const Node& n = graph.node(id);
      const OpDef* op = context.ops->Find(n.domain, n.op_type);
      if (op == nullptr || HasEffects(*op)) {
        context.Note(absl::StrCat("kept the node order: ", graph.NodeLabel(id),
                                  op == nullptr ? " has no descriptor" : " has effects"));
        return false;
      }
    }
    const std::vector<std::vector<ValueId>> reads = ValuesReadByNodes(graph);
    const std::vector<int64_t> bytes = ValueBytes(graph, bounds_);
    bool has_recomputation = false, training = false;
    for (NodeId id : *base) {
      const absl::string_view name = graph.node(id).name;
      has_recomputation |= IsRecomputedNodeName(name);
      training |= IsBackwardNodeName(name);
    }
    auto sink = [&](std::vector<NodeId> order) {
      return SinkRecomputation(graph, reads, std::move(order), has_recomputation);
    };
    struct Candidate {
      const char* name;
      std::vector<NodeId> order;
      Footprint footprint;
    };
    std::vector<Candidate> candidates;
    // Each candidate is O(n log n): the stop token is polled between them.
    candidates.push_back({"current", sink(*base)});
    if (absl::Status s = context.CheckStop(); !s.ok()) return s;
    candidates.push_back({"greedy", sink(GreedyOrder(graph, reads, *base, bytes))});
    if (absl::Status s = context.CheckStop(); !s.ok()) return s;
    candidates.push_back({"recent-first", sink(RecentFirstOrder(graph, reads, *base))});
    if (absl::Status s = context.CheckStop(); !s.ok()) return s;
    candidates.push_back({"depth-first", sink(DepthFirstOrder(graph, reads, *base))});
    if (absl::Status s = context.CheckStop(); !s.ok()) return s;
    size_t best = 0;
    std::vector<std::string> peaks;
    for (size_t i = 0; i < candidates.size(); ++i) {
      Candidate& c = candidates[i];
      if (c.order.size() != base->size()) {
        return absl::InternalError(absl::StrCat("schedule '", c.name, "' has ", c.order.size(),
                                                " of ", base->size(), " nodes"));
      }
      c.footprint = FootprintOf(graph, c.order, reads, bytes, nullptr);
      if (absl::Status s = context.CheckStop(); !s.ok()) return s;
      if (LowerPeak(c.footprint, candidates[best].footprint, training)) best = i;
      peaks.push_back(training ? absl::StrCat(c.name, " ", c.footprint.peak, " (planned ",
                                              c.footprint.planned_peak, ")")
                               : absl::StrCat(c.name, " ", c.footprint.peak));
    }
    // The cost model is consulted only when another order ties with the best one's peak.
    std::vector<size_t> tied;
    for (size_t i = best + 1; i < candidates.size(); ++i) {
      const Candidate& c = candidates[i];
      const Footprint& b = candidates[best].footprint;
      const bool equal = c.footprint.peak == b.peak &&
                         (!training || c.footprint.planned_peak == b.planned_peak);
      if (equal && c.order != candidates[best].order) {
        tied.push_back(i);
      }
    }
    bool tie_broken = false;
    if (!tied.empty()) {
      const std::vector<int64_t> weights = StepWeights(graph, *context.ops);
      if (absl::Status s = context.CheckStop(); !s.ok()) return s;
      unsigned __int128 best_held =
          FootprintOf(graph, candidates[best].order, reads, bytes, &weights).held;
      for (size_t i : tied) {
        const unsigned __int128 held =
            FootprintOf(graph, candidates[i].order, reads, bytes, &weights).held;
        if (absl::Status s = context.CheckStop(); !s.ok()) return s;
        if (held < best_held) {
          best = i;
          best_held = held;
          tie_broken = true;
        }
      }
    }
    const Candidate& chosen = candidates[best];
    context.Note(absl::StrCat("peak live bytes: ", absl::StrJoin(peaks, ", "), "; kept ",
                              chosen.name,
                              tie_broken ? " (of equal peaks, it holds its live bytes over the "
                                           "least estimated work)"
                                         : ""));
    if (chosen.order == *base) return false;
    if (absl::Status s = graph.SetSchedule(chosen.order); !s.ok()) {
      return absl::InternalError(s.message());
    }
    return true;
  }

 private:
  DimBounds bounds_;
};

}  // namespace

int64_t PeakLiveBytes(const Graph& graph, const std::vector<NodeId>& order,
                      const std::vector<std::vector<ValueId>>& reads, const DimBounds& bounds) {
  return FootprintOf(graph, order, reads, ValueBytes(graph, bounds), nullptr).peak;
}

// Recomputed nodes (the rematerialize pass's clones, IsRecomputedNodeName) moved in `order` to
// right before the first other node that reads them, their recomputed inputs right before
// them: recomputation saves memory only when the value is made again late, next to its
// backward readers, and none of the orders below knows that (a depth-first order, say, would
// recompute a whole segment's values at the first backward node that reaches one of them).
// Stays topological: a clone's other inputs come before its first reader already. `order`
// unchanged when the graph has no such node. O(n + e).
std::vector<NodeId> SinkRecomputation(const Graph& graph,
                                      const std::vector<std::vector<ValueId>>& reads,
                                      std::vector<NodeId> order, bool has_recomputation) {
  if (!has_recomputation) return order;
  std::vector<char> pending(graph.num_node_slots(), 0);  // a recomputed node not placed yet
  for (NodeId id : order) {
    if (IsRecomputedNodeName(graph.node(id).name)) pending[id.value()] = 1;
  }
  std::vector<NodeId> out;
  out.reserve(order.size());
  std::vector<std::pair<NodeId, size_t>> stack;
  auto place_inputs_of = [&](NodeId reader) {
    stack.emplace_back(reader, 0);
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const std::vector<ValueId>& r = reads[id.value()];
      if (next < r.size()) {
        const NodeId p = graph.value(r[next++]).producer;
        if (p.valid() && pending[p.value()]) {
          pending[p.value()] = 0;
          stack.emplace_back(p, 0);
        }
        continue;
      }
      out.push_back(id);
      stack.pop_back();
    }
  };
  for (NodeId id : order) {
    if (!IsRecomputedNodeName(graph.node(id).name)) place_inputs_of(id);
  }
  // Those nothing else reads, in their order.
  for (NodeId id : order) {
    if (pending[id.value()]) {
      pending[id.value()] = 0;
      place_inputs_of(id);
    }
  }
  return out;
}

namespace {

Footprint FootprintOf(const Graph& graph, const std::vector<NodeId>& order,
                      const std::vector<std::vector<ValueId>>& reads,
                      const std::vector<int64_t>& bytes, const std::vector<int64_t>* weights) {
  const int32_t n = static_cast<int32_t>(order.size());
  std::vector<int32_t> end(graph.num_value_slots(), -1);
  for (int32_t s = 0; s < n; ++s) {
    const Node& node = graph.node(order[s]);
    for (ValueId v : node.outputs) {
      if (v.valid()) end[v.value()] = graph.value(v).graph_output_count > 0 ? n - 1 : s;
    }
    for (ValueId v : reads[order[s].value()]) end[v.value()] = std::max(end[v.value()], s);
  }
  std::vector<int64_t> freed(n, 0);
  std::vector<int64_t> freed_planned(n, 0);
  for (int v = 0; v < graph.num_value_slots(); ++v) {
    const Value& value = graph.value(ValueId(v));
    if (end[v] < 0 || !value.producer.valid()) continue;
    freed[end[v]] += bytes[v];
    if (value.graph_output_count == 0) freed_planned[end[v]] += bytes[v];
  }
  constexpr unsigned __int128 kMaxHeld = ~static_cast<unsigned __int128>(0);
  int64_t live = 0, live_planned = 0;
  Footprint out;
  for (int32_t s = 0; s < n; ++s) {
    for (ValueId v : graph.node(order[s]).outputs) {
      if (!v.valid()) continue;
      live += bytes[v.value()];
      if (graph.value(v).graph_output_count == 0) live_planned += bytes[v.value()];
    }
    out.peak = std::max(out.peak, live);
    out.planned_peak = std::max(out.planned_peak, live_planned);
    if (weights != nullptr) {
      // Both factors are below 2^63, so the product fits; only the sum can saturate.
      const unsigned __int128 step = static_cast<unsigned __int128>(std::max<int64_t>(live, 0)) *
                                     static_cast<uint64_t>((*weights)[order[s].value()]);
      out.held = step > kMaxHeld - out.held ? kMaxHeld : out.held + step;
    }
    live -= freed[s];
    live_planned -= freed_planned[s];
  }
  return out;
}

}  // namespace

PassInfo SchedulePassInfo() {
  PassInfo info;
  info.name = "schedule";
  info.description =
      "Chooses the node order (a topological order) with the lowest peak of live intermediate "
      "bytes among a few (in training graphs, those with the gradient pass's nodes, the peak "
      "without graph outputs first, as in the memory plan's arena): the current one, a greedy one (the ready node that grows the live "
      "bytes least), one that runs readers of the newest values first, and a depth-first one. "
      "Of orders with equal peaks it keeps the one that holds its live bytes over the least "
      "estimated work (the cost model's flops and bytes per node; symbolic shapes count as "
      "none). In every candidate, nodes the rematerialize pass made ('<node>/remat') run right "
      "before their first reader. Records it as the graph's node order.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.options[kDimBoundsOption] =
      "Upper bounds of symbolic dims for sizing values, as batch:8,seq:128 (values with "
      "unbounded dims count as 0 bytes).";
  info.budget_options[kDimBoundsOption] = {0, LargestDimBound};
  info.min_opt_level = 3;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    absl::StatusOr<DimBounds> bounds = DimBoundsFromOptions(options);
    if (!bounds.ok()) return bounds.status();
    return std::unique_ptr<Pass>(std::make_unique<SchedulePass>(*std::move(bounds)));
  };
  return info;
}

}  // namespace graphopt
