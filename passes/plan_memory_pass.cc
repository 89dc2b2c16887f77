#include "passes/plan_memory_pass.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ops/fused_group.h"
#include "graph/liveness.h"
#include "graph/proto_util.h"
#include "passes/effects.h"
#include "passes/memory_util.h"
#include "passes/offset_assignment.h"

namespace graphopt {
namespace {

constexpr char kInPlaceOption[] = "inplace";
// Reasons for unplanned values named in the pass messages (the plan lists every value).
constexpr size_t kNamedReasons = 4;

// True when values of types `a` and `b` always have the same byte size: the same element size,
// the same product of known dims and the same symbols (any order). Both are fully sized.
bool SameBytes(const TensorType& a, const TensorType& b) {
  if (DataTypeSize(a.dtype) != DataTypeSize(b.dtype) || !a.shape || !b.shape) return false;
  auto split = [](const Dims& dims, int64_t* known, std::vector<std::string>* symbols) {
    *known = 1;
    for (const Dim& d : dims) {
      if (d.is_symbol()) {
        symbols->push_back(d.symbol());
      } else if (d.is_known()) {
        if (d.size() != 0 && *known > (int64_t{1} << 62) / d.size()) return false;
        *known *= d.size();
      } else {
        return false;
      }
    }
    std::sort(symbols->begin(), symbols->end());
    return true;
  };
  int64_t ka = 0, kb = 0;
  std::vector<std::string> sa, sb;
  return split(*a.shape, &ka, &sa) && split(*b.shape, &kb, &sb) && ka == kb && sa == sb;
}

// A range of one arena owned by a chain of values: the first produces it, each next one is
// written in place over the previous one at the step where that one dies.
// In-place pairs: the input indices each output index may take over, in declaration order.
using PairsByOutput = absl::flat_hash_map<int, std::vector<int>>;

PairsByOutput ByOutput(const google::protobuf::RepeatedPtrField<v1::InPlacePair>& pairs) {
  PairsByOutput out;
  for (const v1::InPlacePair& p : pairs) out[p.output()].push_back(p.input());
  return out;
}

struct Storage {
  ValueId root;
  int32_t arena = 0;
  int32_t first_step = 0;
  int32_t last_step = 0;
  int64_t size = 0;
  int64_t offset = 0;
};

// Plans the memory of intermediate values over one arena per device (the devices of the
// producing nodes), for the current node order (run schedule first to choose it):
//  - planned: node outputs that are not graph outputs, with a fixed-size element type and a
//    size known once symbolic dims are at their bounds (option dim_bounds); others are left to
//    run-time allocation and listed as unplanned with the reason. Graph outputs are never
//    planned: the caller keeps them after the run.
//  - in place: an output takes over the storage of an input of its node when the op declares
//    the pair (descriptor's in-place pairs), the input's storage dies at this node, both
//    always have the same byte size, the node reads no other value of that storage, and no
//    op writes either value (mutated_inputs).
//  - offsets: the better of greedy-by-size and a best-fit sweep (passes/offset_assignment.h),
//    checked for overlaps before the plan is recorded.
// Records Graph::memory_plan (proto field Graph.memory_plan) and reports, per arena, the
// planned bytes, the liveness lower bound (largest sum of live buffer bytes at one step) and
// the bytes without any reuse.
class PlanMemoryPass : public Pass {
 public:
  PlanMemoryPass(DimBounds bounds, bool inplace) : bounds_(std::move(bounds)), inplace_(inplace) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    const Liveness live = ComputeLiveness(graph, *order);
    const HiddenAccess hidden(graph, *context.ops);
    const int num_values = graph.num_value_slots();

    v1::MemoryPlan plan;
    plan.set_alignment(kPlanAlignment);
    for (const auto& [symbol, size] : bounds_) {
      v1::DimBound* b = plan.add_dim_bounds();
      b->set_symbol(symbol);
      b->set_size(size);
    }
    plan.set_fingerprint(PlanFingerprint(graph, *order));

    // Arenas by device, in device order.
    absl::btree_map<std::string, int32_t> arena_of_device;
    for (NodeId id : *order) arena_of_device.emplace(graph.node(id).device.str(), 0);
    int32_t next_arena = 0;
    for (auto& [device, index] : arena_of_device) index = next_arena++;

    std::vector<int64_t> size(num_values, 0);
    std::vector<int32_t> storage_of(num_values, -1);
    std::vector<ValueId> shares_with(num_values);
    std::vector<Storage> storages;
    std::vector<ValueId> planned;  // in producer order
    std::string why;
    // The descriptors' in-place pairs as input indices by output index, made once per op: a
    // descriptor may declare many, and each node only looks at those of its outputs.
    absl::flat_hash_map<const OpDef*, PairsByOutput> op_pairs;
    for (size_t s = 0; s < order->size(); ++s) {
      if (absl::Status st = context.CheckStopEvery(s); !st.ok()) return st;
      const int32_t step = static_cast<int32_t>(s);
      const Node& node = graph.node((*order)[s]);
      const int32_t arena = arena_of_device.at(node.device.str());
      const OpDef* op = inplace_ ? context.ops->Find(node.domain, node.op_type) : nullptr;
      // The descriptor's in-place pairs, and a fused group's own.
      const PairsByOutput* pairs = nullptr;
      PairsByOutput node_pairs;
      if (op != nullptr) {
        auto [it, added] = op_pairs.try_emplace(op);
        if (added) it->second = ByOutput(op->descriptor.inplace());
        pairs = &it->second;
        const std::vector<v1::InPlacePair> own = FusedGroupInPlacePairs(node);
        if (!own.empty()) {
          node_pairs = *pairs;
          for (const v1::InPlacePair& p : own) node_pairs[p.output()].push_back(p.input());
          pairs = &node_pairs;
        }
      }
      // Input values of this node by storage (only when some output may take one over): how
      // many distinct values of each storage the node reads.
      absl::flat_hash_map<int32_t, int32_t> values_read_of_storage;
      if (pairs != nullptr && !pairs->empty()) {
        absl::flat_hash_set<int32_t> seen;
        for (ValueId in : node.inputs) {
          if (in.valid() && storage_of[in.value()] >= 0 && seen.insert(in.value()).second) {
            ++values_read_of_storage[storage_of[in.value()]];
          }
        }
      }
      absl::flat_hash_set<int32_t> taken;  // storages an output of this node took over
      for (size_t j = 0; j < node.outputs.size(); ++j) {
        const ValueId out = node.outputs[j];
        if (!out.valid()) continue;
        const Value& value = graph.value(out);
        if (value.graph_output_count > 0) continue;
        std::optional<int64_t> bytes = BoundedBytes(value.type, bounds_, &why);
        if (!bytes) {
          v1::UnplannedValue* u = plan.add_unplanned();
          u->set_value(value.name);
          u->set_reason(why);
          continue;
        }
        if (*bytes == 0) continue;  // nothing to place
        size[out.value()] = *bytes;
        planned.push_back(out);
        const int32_t last = std::max(step, live.last_use[out.value()]);
        auto candidates =
            pairs != nullptr ? pairs->find(static_cast<int>(j)) : PairsByOutput::const_iterator();
        if (pairs != nullptr && candidates != pairs->end() && !hidden.mutated(out)) {
          for (int input : candidates->second) {
            if (input < 0 || input >= static_cast<int>(node.inputs.size())) continue;
            const ValueId in = node.inputs[input];
            if (!in.valid() || storage_of[in.value()] < 0 || hidden.mutated(in)) continue;
            const int32_t st = storage_of[in.value()];
            Storage& storage = storages[st];
            if (storage.last_step != step || storage.arena != arena ||
                storage.size != *bytes || !SameBytes(graph.value(in).type, value.type) ||
                taken.contains(st)) {
              continue;
            }
            // The node must read no other value of that storage.
            if (values_read_of_storage[st] > 1) continue;
            storage_of[out.value()] = st;
            shares_with[out.value()] = in;
            storage.last_step = last;
            taken.insert(st);
            break;
          }
        }
        if (storage_of[out.value()] < 0) {
          storage_of[out.value()] = static_cast<int32_t>(storages.size());
          storages.push_back({out, arena, step, last, *bytes, 0});
        }
      }
    }

    // Offsets, arena by arena.
    for (const auto& [device, arena] : arena_of_device) {
      std::vector<int32_t> ids;
      std::vector<LiveBuffer> buffers;
      int64_t naive = 0;
      for (size_t i = 0; i < storages.size(); ++i) {
        if (storages[i].arena != arena) continue;
        ids.push_back(static_cast<int32_t>(i));
        buffers.push_back({storages[i].first_step, storages[i].last_step, storages[i].size});
      }
      int64_t values = 0, in_place = 0;
      for (ValueId v : planned) {
        if (storages[storage_of[v.value()]].arena != arena) continue;
        naive += size[v.value()];
        ++values;
        in_place += shares_with[v.value()].valid() ? 1 : 0;
      }
      OffsetAssignment assignment = AssignOffsets(buffers);
      std::vector<Placement> check;
      for (size_t k = 0; k < ids.size(); ++k) {
        storages[ids[k]].offset = assignment.offsets[k];
        check.push_back({buffers[k].first_step, buffers[k].last_step, assignment.offsets[k],
                         buffers[k].size, static_cast<int32_t>(k)});
      }
      if (absl::Status s = CheckPlacements(std::move(check)); !s.ok()) {
        return absl::InternalError(absl::StrCat(assignment.heuristic, ": ", s.message()));
      }
      const int64_t bound = LivenessLowerBound(buffers);
      v1::MemoryArena* a = plan.add_arenas();
      a->set_device(device);
      a->set_size_bytes(assignment.arena_bytes);
      a->set_liveness_lower_bound(bound);
      a->set_naive_bytes(naive);
      context.Note(absl::StrFormat(
          "arena%s: %d bytes for %d values (%d in place; %s), liveness lower bound %d bytes "
          "(ratio %.3f), %d bytes without reuse",
          device.empty() ? "" : absl::StrCat(" '", device, "'"), assignment.arena_bytes,
          values, in_place, assignment.heuristic, bound,
          bound > 0 ? static_cast<double>(assignment.arena_bytes) / bound : 1.0, naive));
    }
    for (ValueId v : planned) {
      const Storage& st = storages[storage_of[v.value()]];
      v1::PlannedBuffer* b = plan.add_buffers();
      b->set_value(graph.value(v).name);
      b->set_arena(st.arena);
      b->set_offset(st.offset);
      b->set_size(st.size);
      if (shares_with[v.value()].valid()) b->set_shares_with(graph.value(shares_with[v.value()]).name);
    }
    if (plan.unplanned_size() > 0) {
      // By reason, the most frequent first, each with its first value.
      absl::btree_map<std::string, std::pair<int, std::string>> by_reason;
      for (const v1::UnplannedValue& u : plan.unplanned()) {
        auto [it, added] = by_reason.try_emplace(u.reason(), 0, u.value());
        ++it->second.first;
      }
      std::vector<std::pair<int, std::string>> reasons;
      for (const auto& [reason, count_first] : by_reason) {
        reasons.emplace_back(-count_first.first, reason);
      }
      std::sort(reasons.begin(), reasons.end());
      std::string text;
      for (size_t i = 0; i < reasons.size() && i < kNamedReasons; ++i) {
        const auto& [count, first] = by_reason.at(reasons[i].second);
        absl::StrAppend(&text, i > 0 ? "; " : "", count, " because ", reasons[i].second,
                        " (e.g. '", first, "')");
      }
      if (reasons.size() > kNamedReasons) absl::StrAppend(&text, "; and other reasons");
      context.Note(absl::StrCat(plan.unplanned_size(),
                                " values left unplanned (allocated at run time): ", text));
    }
    const bool changed = !graph.memory_plan ||
                         SerializeDeterministic(*graph.memory_plan) != SerializeDeterministic(plan);
    graph.memory_plan = std::move(plan);
    return changed;
  }

 private:
  DimBounds bounds_;
  bool inplace_;
};

}  // namespace

PassInfo PlanMemoryPassInfo() {
  PassInfo info;
  info.name = "plan_memory";
  info.description =
      "Plans one arena per device for the intermediate values in the current node order: "
      "in-place reuse from the ops' in-place pairs, then offsets (greedy by size or a best-fit "
      "sweep, whichever is smaller). Records the plan in the graph (Graph.memory_plan) and "
      "reports planned bytes against the liveness lower bound.";
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  info.preserves = AnalysisSet::All();
  info.options[kDimBoundsOption] =
      "Upper bounds of symbolic dims, as batch:8,seq:128: values with such dims are planned at "
      "these sizes (larger ones at run time are allocated outside the arena); values with "
      "unbounded or unknown dims are left unplanned.";
  // Bounds size the arenas every run of the plan allocates.
  info.budget_options[kDimBoundsOption] = {0, LargestDimBound};
  info.options[kInPlaceOption] = "1 (default) to let outputs reuse dying inputs' storage, 0 not to.";
  info.min_opt_level = 3;
  info.factory = [](const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    absl::StatusOr<DimBounds> bounds = DimBoundsFromOptions(options);
    if (!bounds.ok()) return bounds.status();
    bool inplace = true;
    if (auto it = options.find(kInPlaceOption); it != options.end()) {
      if (it->second != "0" && it->second != "1") {
        return absl::InvalidArgumentError(absl::StrCat("option '", kInPlaceOption,
                                                       "': expected 0 or 1, got '", it->second,
                                                       "'"));
      }
      inplace = it->second == "1";
    }
    return std::unique_ptr<Pass>(std::make_unique<PlanMemoryPass>(*std::move(bounds), inplace));
  };
  return info;
}

}  // namespace graphopt
