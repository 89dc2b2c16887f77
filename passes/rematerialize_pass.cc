#include "passes/rematerialize_pass.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/cost_model.h"
#include "passes/effects.h"
#include "passes/memory_util.h"

namespace graphopt {
namespace {

constexpr char kBudgetOption[] = "budget";
constexpr char kBudgetBytesOption[] = "budget_bytes";
constexpr char kMaxExtraFlopsOption[] = "max_extra_flops_percent";
constexpr char kMaxNewNodesOption[] = "max_new_nodes";
constexpr int64_t kDefaultMaxExtraPercent = 25;

// A node is cheap to recompute when its estimated work is at most this many flops per byte of
// its outputs: elementwise ops (Relu, Add, Where, inference BatchNormalization) and small
// pools are (well under one flop per byte); Conv, MatMul and Gemm (K/2 flops per float32 output
// byte, K the reduced length) and reductions over large windows are not.
constexpr int64_t kCheapWorkPerOutputByte = 2;

struct Options {
  // budget=auto: Chen et al.'s sqrt(n) segments, and expensive nodes recomputed only within
  // max_extra_percent of the graph's estimated flops. Otherwise the smallest recomputation whose
  // estimated peak fits budget_bytes.
  bool auto_budget = true;
  int64_t budget_bytes = 0;
  int64_t max_extra_percent = kDefaultMaxExtraPercent;
  int64_t max_new_nodes = kDefaultMaxRematNodes;
};

// The work estimate the pass weighs and reports: the cost model's flops where it has them
// (MatMul, Gemm, Conv, descriptors' cost rules), else one flop per four bytes the node moves
// (an elementwise op's flop per float32 element read or written).
int64_t WorkOf(const NodeCost& cost) {
  if (cost.flops) return *cost.flops;
  if (cost.bytes) return *cost.bytes / 4;
  return 0;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  return a > std::numeric_limits<int64_t>::max() - b ? std::numeric_limits<int64_t>::max()
                                                     : a + b;
}

// The largest sum of bytes of planned values (node outputs that are not graph outputs: what
// plan_memory places in its arena) live at one step when the nodes run in `order`; a value is
// live from its producer's step to its last reader's. plan_memory reports the same figure as
// its liveness lower bound. O(n).
int64_t PlannedPeak(const Graph& graph, const std::vector<NodeId>& order,
                    const std::vector<std::vector<ValueId>>& reads) {
  const int32_t n = static_cast<int32_t>(order.size());
  std::vector<int32_t> end(graph.num_value_slots(), -1);
  for (int32_t s = 0; s < n; ++s) {
    for (ValueId v : graph.node(order[s]).outputs) {
      if (v.valid()) end[v.value()] = s;
    }
    for (ValueId v : reads[order[s].value()]) end[v.value()] = std::max(end[v.value()], s);
  }
  std::vector<int64_t> freed(n, 0);
  std::vector<int64_t> bytes(graph.num_value_slots(), 0);
  std::string why;
  for (int i = 0; i < graph.num_value_slots(); ++i) {
    const Value& v = graph.value(ValueId(i));
    if (end[i] < 0 || !v.producer.valid() || v.graph_output_count > 0) continue;
    bytes[i] = BoundedBytes(v.type, DimBounds(), &why).value_or(0);
    freed[end[i]] += bytes[i];
  }
  int64_t live = 0, peak = 0;
  for (int32_t s = 0; s < n; ++s) {
    for (ValueId v : graph.node(order[s]).outputs) {
      if (v.valid()) live += bytes[v.value()];
    }
    peak = std::max(peak, live);
    live -= freed[s];
  }
  return peak;
}

// What the pass knows of the graph before it changes anything. Per-slot tables are sized to
// the slots before the pass adds clones.
struct Facts {
  std::vector<NodeId> order;     // the graph's current node order
  std::vector<NodeId> forward;   // forward nodes, in order
  std::vector<NodeId> backward;  // backward nodes, in order
  std::vector<char> is_backward;                // by node slot
  std::vector<char> hoisted;                    // by node slot: backward-named, run forward
  std::vector<std::vector<ValueId>> reads;      // by node slot (ValuesReadByNodes)
  std::vector<int64_t> value_bytes;             // by value slot; 0 when not known
  std::vector<int64_t> out_bytes;               // by node slot: sum over its outputs
  std::vector<int64_t> work;                    // by node slot
  std::vector<char> recomputable;               // by node slot (forward nodes only)
  std::vector<char> expensive;                  // by node slot
  std::vector<int32_t> segment;                 // by node slot (forward nodes only)
  std::vector<char> boundary;                   // by node slot: an output crosses a segment
  std::vector<int32_t> rank;                    // by node slot: place among expensive candidates
  std::vector<NodeId> expensive_candidates;     // cheapest recomputation per byte first
  std::vector<int64_t> crossing;                // by forward position (see Analyze)
  int64_t total_work = 0;
  int64_t sqrt_segment_bytes = 0;
  int64_t segment_bytes = 0;
  int32_t segments = 0;
};

bool IsForwardNode(const Facts& f, NodeId id) { return id.valid() && !f.is_backward[id.value()]; }

// Splits the nodes into forward and backward, sizes values and estimates work, cuts the
// forward order into segments and ranks the expensive nodes. O(n log n).
absl::StatusOr<Facts> Analyze(const Graph& graph, const PassContext& context, bool hoist) {
  Facts f;
  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  if (!order.ok()) return order.status();
  f.order = *std::move(order);
  const int num_nodes = graph.num_node_slots();
  f.reads = ValuesReadByNodes(graph);
  f.value_bytes.assign(graph.num_value_slots(), 0);
  std::string why;
  const DimBounds no_bounds;
  for (int i = 0; i < graph.num_value_slots(); ++i) {
    const Value& v = graph.value(ValueId(i));
    if (v.alive && v.producer.valid()) {
      f.value_bytes[i] = BoundedBytes(v.type, no_bounds, &why).value_or(0);
    }
  }
  f.is_backward.assign(num_nodes, 0);
  f.hoisted.assign(num_nodes, 0);
  // Forward positions: real forward nodes in order; a hoisted node goes right after the last
  // producer of what it reads (its anchor), so that its larger inputs may die in the forward.
  std::vector<int32_t> anchor(num_nodes, -1);
  std::vector<std::vector<NodeId>> hoisted_after;  // by forward position + 1
  std::vector<NodeId> plain_forward;
  std::vector<int32_t> plain_position(num_nodes, -1);
  for (NodeId id : f.order) {
    const absl::string_view name = graph.node(id).name;
    bool reads_backward = false;
    int64_t forward_in_bytes = 0;
    int32_t last = -1;
    for (ValueId v : f.reads[id.value()]) {
      const NodeId p = graph.value(v).producer;
      if (!p.valid()) continue;
      if (f.is_backward[p.value()]) {
        reads_backward = true;
      } else {
        forward_in_bytes = SaturatingAdd(forward_in_bytes, f.value_bytes[v.value()]);
        last = std::max(last, f.hoisted[p.value()] ? anchor[p.value()] : plain_position[p.value()]);
      }
    }
    bool backward = reads_backward || IsBackwardNodeName(name);
    if (backward && !reads_backward && !absl::StartsWith(name, "grad/") &&
        !IsRecomputedNodeName(name)) {
      // A backward node computed from forward values alone (a Relu gradient's mask, a Shape):
      // when its output is smaller than those values, it runs in the forward part and its
      // output is kept instead of them.
      int64_t out = 0;
      bool sized = true;
      for (ValueId v : graph.node(id).outputs) {
        if (!v.valid()) continue;
        sized &= f.value_bytes[v.value()] > 0 && graph.value(v).graph_output_count == 0;
        out = SaturatingAdd(out, f.value_bytes[v.value()]);
      }
      if (hoist && sized && out < forward_in_bytes) {
        backward = false;
        f.hoisted[id.value()] = 1;
        anchor[id.value()] = last;
        if (static_cast<int32_t>(hoisted_after.size()) <= last + 1) hoisted_after.resize(last + 2);
        hoisted_after[last + 1].push_back(id);
        continue;
      }
    }
    f.is_backward[id.value()] = backward ? 1 : 0;
    if (backward) {
      f.backward.push_back(id);
    } else {
      plain_position[id.value()] = static_cast<int32_t>(plain_forward.size());
      plain_forward.push_back(id);
    }
  }
  hoisted_after.resize(plain_forward.size() + 1);
  for (size_t i = 0; i <= plain_forward.size(); ++i) {
    for (NodeId h : hoisted_after[i]) f.forward.push_back(h);
    if (i < plain_forward.size()) f.forward.push_back(plain_forward[i]);
  }
  const std::vector<NodeCost> costs = EstimateCosts(graph, *context.ops);
  f.work.assign(num_nodes, 0);
  f.out_bytes.assign(num_nodes, 0);
  f.recomputable.assign(num_nodes, 0);
  f.expensive.assign(num_nodes, 0);
  for (NodeId id : f.order) {
    f.work[id.value()] = WorkOf(costs[id.value()]);
    f.total_work = SaturatingAdd(f.total_work, f.work[id.value()]);
  }
  const HiddenAccess hidden(graph, *context.ops);
  int64_t total_bytes = 0;
  int64_t sized = 0;
  for (NodeId id : f.forward) {
    const Node& n = graph.node(id);
    bool ok = !n.has_subgraphs && !hidden.Touches(n) && !f.hoisted[id.value()];
    int64_t bytes = 0;
    for (ValueId v : n.outputs) {
      if (!v.valid()) continue;
      if (graph.value(v).graph_output_count > 0 || f.value_bytes[v.value()] == 0) ok = false;
      bytes = SaturatingAdd(bytes, f.value_bytes[v.value()]);
    }
    // Recomputation must give the same bits: nothing with effects, randomness or an op the
    // registry does not know.
    const OpDef* op = context.ops->Find(n.domain, n.op_type);
    if (op == nullptr || HasEffects(*op) || IsNondeterministic(*op)) ok = false;
    f.out_bytes[id.value()] = bytes;
    f.recomputable[id.value()] = ok ? 1 : 0;
    f.expensive[id.value()] =
        f.work[id.value()] / kCheapWorkPerOutputByte > bytes ? 1 : 0;
    total_bytes = SaturatingAdd(total_bytes, bytes);
    if (bytes > 0) ++sized;
  }
  // Chen et al.: n values in sqrt(n) segments of sqrt(n) values each; by bytes, segments of
  // total / ceil(sqrt(n)) bytes in the forward order (Segment takes multiples of it).
  const int64_t parts = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(std::sqrt(sized))));
  f.sqrt_segment_bytes = std::max<int64_t>(1, (total_bytes + parts - 1) / parts);
  const int32_t num_forward = static_cast<int32_t>(f.forward.size());
  std::vector<int32_t> position(num_nodes, -1);
  for (int32_t i = 0; i < num_forward; ++i) position[f.forward[i].value()] = i;
  // crossing[i]: the change at position i of the bytes of values made there or before and read
  // by a forward node after it.
  f.crossing.assign(num_forward + 1, 0);
  for (int32_t i = 0; i < num_forward; ++i) {
    for (ValueId v : graph.node(f.forward[i]).outputs) {
      if (!v.valid()) continue;
      int32_t last = i;
      for (const Use& u : graph.value(v).uses) {
        if (IsForwardNode(f, u.node)) last = std::max(last, position[u.node.value()]);
      }
      f.crossing[i] += f.value_bytes[v.value()];
      f.crossing[last] -= f.value_bytes[v.value()];
    }
  }
  return f;
}

// Cuts the forward order into segments of about `segment_bytes` of outputs; a segment ends
// only where what crosses to later forward nodes is no more than the value just made (a
// residual block's output, not the middle of a block with its shortcut beside it), so that the
// checkpoints are single values. Values read by a forward node of a later segment are kept
// (checkpoints): recomputation never reaches back past its segment's start. Ranks the
// expensive nodes left. O(n log n).
void Segment(const Graph& graph, Facts& f, int64_t segment_bytes) {
  const int num_nodes = static_cast<int>(f.is_backward.size());
  const int32_t num_forward = static_cast<int32_t>(f.forward.size());
  f.segment_bytes = segment_bytes;
  f.segment.assign(num_nodes, 0);
  int64_t accumulated = 0, cut = 0;
  int32_t segment = 0;
  for (int32_t i = 0; i < num_forward; ++i) {
    const NodeId id = f.forward[i];
    f.segment[id.value()] = segment;
    accumulated = SaturatingAdd(accumulated, f.out_bytes[id.value()]);
    cut += f.crossing[i];
    if (accumulated >= f.segment_bytes && cut <= f.out_bytes[id.value()] && i + 1 < num_forward) {
      ++segment;
      accumulated = 0;
    }
  }
  f.segments = segment + 1;
  f.boundary.assign(num_nodes, 0);
  for (NodeId id : f.forward) {
    for (ValueId v : graph.node(id).outputs) {
      if (!v.valid()) continue;
      for (const Use& u : graph.value(v).uses) {
        if (IsForwardNode(f, u.node) && f.segment[u.node.value()] > f.segment[id.value()]) {
          f.boundary[id.value()] = 1;
        }
      }
    }
  }
  f.expensive_candidates.clear();
  for (NodeId id : f.forward) {
    const int i = id.value();
    if (f.recomputable[i] && f.expensive[i] && !f.boundary[i]) f.expensive_candidates.push_back(id);
  }
  // Least work per byte saved first; forward order breaks ties (stable sort).
  std::stable_sort(f.expensive_candidates.begin(), f.expensive_candidates.end(),
                   [&](NodeId a, NodeId b) {
                     return static_cast<__int128>(f.work[a.value()]) * f.out_bytes[b.value()] <
                            static_cast<__int128>(f.work[b.value()]) * f.out_bytes[a.value()];
                   });
  f.rank.assign(num_nodes, std::numeric_limits<int32_t>::max());
  for (size_t k = 0; k < f.expensive_candidates.size(); ++k) {
    f.rank[f.expensive_candidates[k].value()] = static_cast<int32_t>(k);
  }
}

// The forward nodes to clone when the cheap ones and the first `k` expensive candidates are
// not kept for the backward part, with the estimates the choice is made on.
struct Selection {
  std::vector<char> clone;  // by node slot
  int64_t clones = 0;
  int64_t cheap_clones = 0;
  int64_t extra_work = 0;
  // Bytes of the forward values kept for the backward part (read there or by clones).
  int64_t kept_bytes = 0;
  // The largest sum of clone output bytes in one segment: what one segment's recomputation
  // holds at most.
  int64_t segment_clone_bytes = 0;
  int64_t estimate() const { return SaturatingAdd(kept_bytes, segment_clone_bytes); }
};

bool Dropped(const Facts& f, int node, int64_t k) {
  return f.recomputable[node] && !f.boundary[node] && (!f.expensive[node] || f.rank[node] < k);
}

// O(nodes + edges): the forward nodes that backward reads of dropped values reach through
// dropped producers.
Selection Select(const Graph& graph, const Facts& f, int64_t k) {
  Selection s;
  s.clone.assign(f.is_backward.size(), 0);
  std::vector<NodeId> stack;
  auto reach = [&](ValueId v) {
    const NodeId p = graph.value(v).producer;
    if (!IsForwardNode(f, p) || s.clone[p.value()] || !Dropped(f, p.value(), k)) return;
    s.clone[p.value()] = 1;
    stack.push_back(p);
  };
  for (NodeId b : f.backward) {
    for (ValueId v : f.reads[b.value()]) reach(v);
  }
  while (!stack.empty()) {
    const NodeId p = stack.back();
    stack.pop_back();
    for (ValueId v : f.reads[p.value()]) reach(v);
  }
  std::vector<char> counted(graph.num_value_slots(), 0);
  auto keep = [&](ValueId v) {
    const Value& value = graph.value(v);
    if (!IsForwardNode(f, value.producer) || s.clone[value.producer.value()] ||
        counted[v.value()] || value.graph_output_count > 0) {
      return;
    }
    counted[v.value()] = 1;
    s.kept_bytes = SaturatingAdd(s.kept_bytes, f.value_bytes[v.value()]);
  };
  std::vector<int64_t> per_segment(std::max(f.segments, 1), 0);
  for (NodeId b : f.backward) {
    for (ValueId v : f.reads[b.value()]) keep(v);
  }
  for (NodeId id : f.forward) {
    if (!s.clone[id.value()]) continue;
    ++s.clones;
    if (!f.expensive[id.value()]) ++s.cheap_clones;
    s.extra_work = SaturatingAdd(s.extra_work, f.work[id.value()]);
    for (ValueId v : f.reads[id.value()]) keep(v);
    int64_t& seg = per_segment[f.segment[id.value()]];
    seg = SaturatingAdd(seg, f.out_bytes[id.value()]);
    s.segment_clone_bytes = std::max(s.segment_clone_bytes, seg);
  }
  return s;
}

// One step of the order the pass records: a node, or the clone of a forward node.
struct Step {
  NodeId node;
  bool clone = false;
};

// The order with clones: the forward part as it is, then the backward part with each clone
// right before the first node that needs it (its cloned inputs before it, depth first), so
// that a recomputed value lives only from there to its last backward reader. O(n + e).
std::vector<Step> PlanOrder(const Graph& graph, const Facts& f, const Selection& sel) {
  std::vector<Step> steps;
  steps.reserve(f.forward.size() + f.backward.size() + sel.clones);
  for (NodeId id : f.forward) steps.push_back({id, false});
  std::vector<char> placed(f.is_backward.size(), 0);
  std::vector<std::pair<NodeId, size_t>> stack;
  auto needs = [&](ValueId v) {
    const NodeId p = graph.value(v).producer;
    return p.valid() && IsForwardNode(f, p) && sel.clone[p.value()] && !placed[p.value()]
               ? p
               : NodeId();
  };
  auto place = [&](NodeId root) {
    placed[root.value()] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [id, next] = stack.back();
      const std::vector<ValueId>& r = f.reads[id.value()];
      if (next < r.size()) {
        const NodeId p = needs(r[next++]);
        if (p.valid()) {
          placed[p.value()] = 1;
          stack.emplace_back(p, 0);
        }
        continue;
      }
      steps.push_back({id, true});
      stack.pop_back();
    }
  };
  for (NodeId b : f.backward) {
    for (ValueId v : f.reads[b.value()]) {
      const NodeId p = needs(v);
      if (p.valid()) place(p);
    }
    steps.push_back({b, false});
  }
  return steps;
}

// The peak of live planned bytes (node outputs that are not graph outputs) of `steps`, with
// clones read wherever PlanOrder's backward nodes and clones read a cloned value: what
// plan_memory's liveness lower bound will be for that order. O(n + e), nothing changed.
int64_t SimulatedPeak(const Graph& graph, const Facts& f, const Selection& sel,
                      const std::vector<Step>& steps) {
  const int num_values = graph.num_value_slots();
  // Ids: a value v, or num_values + v for its clone.
  std::vector<int32_t> def(2 * num_values, -1), end(2 * num_values, -1);
  auto read_id = [&](ValueId v, bool reader_is_backward_or_clone) {
    const NodeId p = graph.value(v).producer;
    const bool cloned = reader_is_backward_or_clone && p.valid() && IsForwardNode(f, p) &&
                        sel.clone[p.value()];
    return cloned ? num_values + v.value() : v.value();
  };
  const int32_t n = static_cast<int32_t>(steps.size());
  for (int32_t i = 0; i < n; ++i) {
    const Step& st = steps[i];
    const bool late = st.clone || f.is_backward[st.node.value()];
    for (ValueId v : f.reads[st.node.value()]) end[read_id(v, late)] = i;
    for (ValueId v : graph.node(st.node).outputs) {
      if (!v.valid()) continue;
      const int id = st.clone ? num_values + v.value() : v.value();
      def[id] = i;
      end[id] = std::max(end[id], i);
    }
  }
  std::vector<int64_t> delta(n + 1, 0);
  for (int id = 0; id < 2 * num_values; ++id) {
    if (def[id] < 0) continue;
    const ValueId v(id % num_values);
    if (graph.value(v).graph_output_count > 0 && id < num_values) continue;
    delta[def[id]] += f.value_bytes[v.value()];
    delta[end[id] + 1] -= f.value_bytes[v.value()];
  }
  int64_t live = 0, peak = 0;
  for (int32_t i = 0; i < n; ++i) {
    live += delta[i];
    peak = std::max(peak, live);
  }
  return peak;
}

// A candidate plan: whether masks are hoisted, the segment size, how many expensive nodes are
// recomputed, and what the simulation says of it.
struct Candidate {
  bool hoist = false;
  int64_t segment_bytes = 0;
  int64_t k = 0;
  int64_t peak = 0;
  int64_t extra_work = 0;
};

// Under budget=auto the most expensive candidates whose extra work stays within the limit
// (bisection: extra work only grows with k); under budget_bytes all of them (the search below
// tries fewer).
int64_t MostExpensiveAllowed(const Graph& graph, const Facts& f, const Options& options) {
  const int64_t candidates = static_cast<int64_t>(f.expensive_candidates.size());
  if (!options.auto_budget) return candidates;
  const int64_t limit = static_cast<int64_t>(static_cast<long double>(f.total_work) *
                                             options.max_extra_percent / 100.0L);
  int64_t lo = 0, hi = candidates;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (Select(graph, f, mid).extra_work <= limit) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Whether `a` is the better plan: under budget=auto the lower simulated peak, then the fewer
// extra flops; under budget_bytes the fewer extra flops among those that fit, else the lower
// peak.
bool Better(const Candidate& a, const Candidate& b, const Options& options) {
  if (!options.auto_budget) {
    const bool fa = a.peak <= options.budget_bytes, fb = b.peak <= options.budget_bytes;
    if (fa != fb) return fa;
    if (fa && a.extra_work != b.extra_work) return a.extra_work < b.extra_work;
  }
  if (a.peak != b.peak) return a.peak < b.peak;
  return a.extra_work < b.extra_work;
}

// Recomputes forward values in the backward part of a training graph instead of keeping them
// alive from the forward pass to their backward uses (NNVM's mirroring, Chen et al. 2016 made
// cost-aware). See the PassInfo description.
class RematerializePass : public Pass {
 public:
  explicit RematerializePass(Options options) : options_(options) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<Facts> plain = Analyze(graph, context, /*hoist=*/false);
    if (!plain.ok()) return plain.status();
    if (plain->backward.empty()) {
      context.Note("no backward nodes (named '<node>/grad/...' by the gradient pass): unchanged");
      return false;
    }
    const int64_t peak_before = PlannedPeak(graph, plain->order, plain->reads);
    // The search: segment sizes around Chen's sqrt(n), with and without masks computed in the
    // forward part, and a few counts of recomputed expensive nodes; each plan simulated. A
    // fixed, small number of O(n log n) steps.
    constexpr int64_t kSegmentScales[] = {1, 2, 3, 4, 6};  // halves of the sqrt(n) size
    Candidate best;
    bool have_best = false;
    int64_t tried = 0;
    for (bool hoist : {false, true}) {
      absl::StatusOr<Facts> analyzed = hoist ? Analyze(graph, context, true) : std::move(plain);
      if (!analyzed.ok()) return analyzed.status();
      Facts& f = *analyzed;
      for (int64_t scale : kSegmentScales) {
        if (absl::Status s = context.CheckStop(); !s.ok()) return s;
        Segment(graph, f, std::max<int64_t>(1, f.sqrt_segment_bytes / 2 * scale));
        const int64_t most = MostExpensiveAllowed(graph, f, options_);
        std::vector<int64_t> ks = {most, most * 3 / 4, most / 2, most / 4, 0};
        std::sort(ks.begin(), ks.end());
        ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
        for (int64_t k : ks) {
          const Selection sel = Select(graph, f, k);
          Candidate c{hoist, f.segment_bytes, k, SimulatedPeak(graph, f, sel, PlanOrder(graph, f, sel)),
                      sel.extra_work};
          ++tried;
          if (!have_best || Better(c, best, options_)) {
            best = c;
            have_best = true;
          }
        }
      }
    }
    absl::StatusOr<Facts> chosen = Analyze(graph, context, best.hoist);
    if (!chosen.ok()) return chosen.status();
    const Facts& f = *chosen;
    Segment(graph, *chosen, best.segment_bytes);
    const Selection sel = Select(graph, f, best.k);
    if (sel.clones == 0) {
      context.Note("no forward value is worth recomputing: unchanged");
      return false;
    }
    if (sel.clones > options_.max_new_nodes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "rematerialize: would clone ", sel.clones, " nodes, more than ",
          options_.max_new_nodes, " (option max_new_nodes)"));
    }
    const std::vector<Step> steps = PlanOrder(graph, f, sel);

    // Clones, in forward order so that a clone's cloned inputs exist before it.
    const int old_values = graph.num_value_slots();
    std::vector<ValueId> clone_value(old_values);
    std::vector<NodeId> clone_of(f.is_backward.size());
    for (NodeId id : f.forward) {
      if (!sel.clone[id.value()]) continue;
      const Node& original = graph.node(id);
      std::vector<ValueId> inputs(original.inputs.begin(), original.inputs.end());
      for (ValueId& v : inputs) {
        if (v.valid() && clone_value[v.value()].valid()) v = clone_value[v.value()];
      }
      const std::vector<ValueId> outs(original.outputs.begin(), original.outputs.end());
      const std::string name =
          original.name.empty()
              ? absl::StrCat(std::string(original.op_type), "#", id.value(), kRematSuffix)
              : absl::StrCat(std::string(original.name), kRematSuffix);
      const std::string op_type(original.op_type);
      const std::string domain(original.domain);
      const std::string device(original.device);
      AttributeMap attributes = original.attributes;
      std::vector<ValueId> new_outs;
      for (ValueId v : outs) {
        if (!v.valid()) {
          new_outs.push_back(ValueId());
          continue;
        }
        const ValueId c = graph.AddUniqueValue(absl::StrCat(graph.value(v).name, kRematSuffix));
        graph.mutable_value(c).type = graph.value(v).type;
        clone_value[v.value()] = c;
        new_outs.push_back(c);
      }
      absl::StatusOr<NodeId> added =
          graph.AddNode(name, op_type, domain, inputs, new_outs, std::move(attributes));
      if (!added.ok()) return added.status();
      graph.mutable_node(*added).device = device;
      clone_of[id.value()] = *added;
    }
    // Backward reads of cloned values read the clones.
    for (NodeId b : f.backward) {
      const int num_inputs = static_cast<int>(graph.node(b).inputs.size());
      for (int i = 0; i < num_inputs; ++i) {
        const ValueId v = graph.node(b).inputs[i];
        if (v.valid() && v.value() < old_values && clone_value[v.value()].valid()) {
          graph.SetInput(b, i, clone_value[v.value()]);
        }
      }
    }
    std::vector<NodeId> order;
    order.reserve(steps.size());
    for (const Step& st : steps) order.push_back(st.clone ? clone_of[st.node.value()] : st.node);
    const int64_t peak_after = PlannedPeak(graph, order, ValuesReadByNodes(graph));
    if (absl::Status s = graph.SetSchedule(std::move(order)); !s.ok()) {
      return absl::InternalError(absl::StrCat("rematerialize: ", s.message()));
    }

    const bool fits = options_.auto_budget || best.peak <= options_.budget_bytes;
    context.Note(absl::StrFormat(
        "%s: recomputes %d of %d forward nodes in the backward part (%d cheap, %d expensive "
        "of %d candidates); %d segments of ~%d bytes%s; best of %d simulated plans%s",
        options_.auto_budget ? "budget auto"
                             : absl::StrCat("budget ", options_.budget_bytes, " bytes"),
        sel.clones, f.forward.size(), sel.cheap_clones, sel.clones - sel.cheap_clones,
        f.expensive_candidates.size(), f.segments, f.segment_bytes,
        best.hoist ? "; Relu masks and other small backward values of forward ones computed in "
                     "the forward part"
                   : "",
        tried, fits ? "" : " (the budget is not reached)"));
    context.Note(absl::StrFormat(
        "peak of live planned bytes %d -> %d (%.2fx lower) in the recorded order; extra flops %d "
        "(%.1f%% of %d; cost model flops, else one per 4 bytes moved)",
        peak_before, peak_after,
        peak_after > 0 ? static_cast<double>(peak_before) / peak_after : 0.0, sel.extra_work,
        f.total_work > 0 ? 100.0 * sel.extra_work / f.total_work : 0.0, f.total_work));
    return true;
  }

 private:
  Options options_;
};

absl::StatusOr<int64_t> ParseNonNegative(const PassOptions& options, const char* key,
                                         int64_t fallback) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat("option '", key, "': '", it->second,
                                                   "' is not a non-negative integer"));
  }
  return value;
}

absl::StatusOr<Options> ParseOptions(const PassOptions& options) {
  Options o;
  auto budget = options.find(kBudgetOption);
  if (budget != options.end() && budget->second != "auto") {
    return absl::InvalidArgumentError(absl::StrCat("option '", kBudgetOption, "': '",
                                                   budget->second, "' is not 'auto'"));
  }
  if (options.count(kBudgetBytesOption) > 0) {
    if (budget != options.end()) {
      return absl::InvalidArgumentError(absl::StrCat("options '", kBudgetOption, "' and '",
                                                     kBudgetBytesOption, "' exclude each other"));
    }
    absl::StatusOr<int64_t> bytes = ParseNonNegative(options, kBudgetBytesOption, 0);
    if (!bytes.ok()) return bytes.status();
    o.auto_budget = false;
    o.budget_bytes = *bytes;
  }
  absl::StatusOr<int64_t> percent =
      ParseNonNegative(options, kMaxExtraFlopsOption, kDefaultMaxExtraPercent);
  if (!percent.ok()) return percent.status();
  o.max_extra_percent = *percent;
  absl::StatusOr<int64_t> max_nodes =
      ParseNonNegative(options, kMaxNewNodesOption, kDefaultMaxRematNodes);
  if (!max_nodes.ok()) return max_nodes.status();
  o.max_new_nodes = *max_nodes;
  return o;
}

}  // namespace

PassInfo RematerializePassInfo() {
  PassInfo info;
  info.name = "rematerialize";
  info.description =
      "Training graphs: recomputes forward values in the backward part instead of keeping them "
      "alive from the forward pass to their backward uses (NNVM's mirroring; Chen et al. 2016's "
      "sqrt(n) checkpointing, made cost-aware). Backward nodes are those the gradient pass "
      "names '<node>/grad/...' and everything reading their values. The forward order is cut "
      "into ceil(sqrt(n)) segments of equal bytes; values read in a later segment are kept "
      "(checkpoints). Within a segment, values of cheap nodes (at most 2 estimated flops per "
      "output byte: elementwise ops, small pools) are always recomputed, and expensive ones "
      "(Conv, MatMul, Gemm) least flops per byte first: under budget=auto (the default) as "
      "many as keep the extra flops within max_extra_flops_percent of the graph's, under "
      "budget_bytes the fewest whose estimated peak (kept bytes plus the largest segment's "
      "recomputation) fits. Clones are named '<node>/remat' and are placed right before their "
      "first backward reader in the recorded node order (the executor's). Nodes with effects, "
      "nondeterministic ops, subgraphs or graph outputs are never cloned. Recomputation is "
      "exact: gradients are bit-identical.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.options[kBudgetOption] = "'auto' (the default): sqrt(n) segments, extra flops bounded by "
                                "max_extra_flops_percent.";
  info.options[kBudgetBytesOption] =
      "A target for the peak of live bytes (estimate): recompute the fewest expensive nodes "
      "that fit it. Excludes 'budget'.";
  info.options[kMaxExtraFlopsOption] = absl::StrCat(
      "Under budget=auto, the most extra estimated flops, in percent of the graph's (default ",
      kDefaultMaxExtraPercent, ").");
  info.options[kMaxNewNodesOption] =
      absl::StrCat("Most nodes the pass may clone (default ", kDefaultMaxRematNodes, ").");
  info.budget_options[kMaxNewNodesOption] = {kDefaultMaxRematNodes, nullptr};
  info.min_opt_level = 0;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    absl::StatusOr<Options> o = ParseOptions(options);
    if (!o.ok()) return o.status();
    return std::unique_ptr<Pass>(std::make_unique<RematerializePass>(*o));
  };
  return info;
}

}  // namespace graphopt
