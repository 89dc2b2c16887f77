#include "graph/liveness.h"

#include <algorithm>
#include <map>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace graphopt {

Liveness ComputeLiveness(const Graph& graph, absl::Span<const NodeId> order) {
  Liveness live;
  live.def_step.assign(graph.num_value_slots(), -1);
  live.last_use.assign(graph.num_value_slots(), -1);
  live.captures.resize(order.size());
  for (size_t s = 0; s < order.size(); ++s) {
    const Node& node = graph.node(order[s]);
    const int32_t step = static_cast<int32_t>(s);
    for (ValueId v : node.inputs) {
      if (v.valid()) live.last_use[v.value()] = step;
    }
    for (ValueId v : node.outputs) {
      if (v.valid()) live.def_step[v.value()] = step;
    }
    if (node.attributes.empty()) continue;
    std::vector<ValueId>& captured = live.captures[s];
    captured = graph.CapturedInputs(order[s]);
    for (ValueId v : captured) live.last_use[v.value()] = step;
  }
  return live;
}

namespace {

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
constexpr uint64_t kFnvPrime = 0x100000001b3ull;

void Mix(uint64_t& h, absl::string_view bytes) {
  for (unsigned char c : bytes) {
    h ^= c;
    h *= kFnvPrime;
  }
  // A separator no name contains, so that ("ab", "c") and ("a", "bc") differ.
  h ^= 0xff;
  h *= kFnvPrime;
}

}  // namespace

uint64_t PlanFingerprint(const Graph& graph, absl::Span<const NodeId> order) {
  uint64_t h = kFnvOffset;
  auto name_of = [&](ValueId v) -> absl::string_view {
    return v.valid() ? absl::string_view(graph.value(v).name) : absl::string_view();
  };
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    Mix(h, node.domain);
    Mix(h, node.op_type);
    for (ValueId v : node.inputs) Mix(h, name_of(v));
    Mix(h, "->");
    for (ValueId v : node.outputs) Mix(h, name_of(v));
    Mix(h, ";");
  }
  Mix(h, "outputs");
  for (ValueId v : graph.outputs()) Mix(h, name_of(v));
  return h;
}

absl::Status CheckPlacements(std::vector<Placement> placements) {
  placements.erase(std::remove_if(placements.begin(), placements.end(),
                                  [](const Placement& p) { return p.size <= 0; }),
                   placements.end());
  std::sort(placements.begin(), placements.end(), [](const Placement& a, const Placement& b) {
    return a.first_step != b.first_step ? a.first_step < b.first_step : a.id < b.id;
  });
  // Live ranges by offset, and (last step, index) to retire them.
  std::map<int64_t, size_t> live;
  using Retire = std::pair<int32_t, size_t>;
  std::priority_queue<Retire, std::vector<Retire>, std::greater<Retire>> retire;
  auto overlap = [](const Placement& a, const Placement& b) {
    return absl::InternalError(absl::StrCat(
        "buffers ", a.id, " (steps ", a.first_step, "..", a.last_step, ", bytes ", a.offset,
        "..", a.offset + a.size, ") and ", b.id, " (steps ", b.first_step, "..", b.last_step,
        ", bytes ", b.offset, "..", b.offset + b.size, ") overlap"));
  };
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& p = placements[i];
    while (!retire.empty() && retire.top().first < p.first_step) {
      live.erase(placements[retire.top().second].offset);
      retire.pop();
    }
    auto next = live.lower_bound(p.offset);
    if (next != live.end() && next->first < p.offset + p.size) {
      return overlap(placements[next->second], p);
    }
    if (next != live.begin()) {
      const Placement& prev = placements[std::prev(next)->second];
      if (prev.offset + prev.size > p.offset) return overlap(prev, p);
    }
    live.emplace(p.offset, i);
    retire.emplace(p.last_step, i);
  }
  return absl::OkStatus();
}

}  // namespace graphopt
