#include "passes/rewrite_driver.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/opset.h"
#include "graph/prefetch.h"
#include "passes/rewrite_util.h"

namespace graphopt {
namespace {

constexpr char kHiddenAccesses[] = "hidden accesses";

class Driver {
 public:
  Driver(Graph& graph, const PassContext& context, absl::Span<const RewritePattern> patterns,
         const RewriteDriverOptions& options)
      : graph_(graph),
        context_(context),
        patterns_(patterns),
        options_(options),
        hidden_(graph, *context.ops),
        rewrite_{graph, *context.ops, hidden_, DefaultDomainOpset(graph)} {}

  absl::StatusOr<RewriteStats> Run() {
    std::vector<NodeId> order;
    for (int sweep = 0; sweep < std::max(options_.max_sweeps, 1); ++sweep) {
      IndexKinds();
      if (sweep == 0) {
        if (!AnyCandidate()) break;
        if (options_.order == RewriteDriverOptions::Order::kTopological) {
          absl::StatusOr<std::vector<NodeId>> topo = graph_.TopologicalOrder();
          if (!topo.ok()) return topo.status();
          order = *std::move(topo);
        } else {
          order = graph_.LiveNodesOfKinds(candidate_kinds_);
        }
      } else {
        order = TakeDirty();
        if (order.empty()) break;
      }
      ++stats_.sweeps;
      const int64_t applied_before = stats_.total_applied;
      // The first topological sweep walks every node (most are not candidates) in order; the
      // other sweeps visit scattered candidates.
      const bool full_sweep =
          sweep == 0 && options_.order == RewriteDriverOptions::Order::kTopological;
      for (size_t k = 0; k < order.size(); ++k) {
        if (absl::Status s = context_.CheckStopEvery(k); !s.ok()) return s;
        if (full_sweep) {
          PrefetchSweep(graph_, order, k);
        } else {
          PrefetchScattered(graph_, order, k);
        }
        const NodeId id = order[k];
        if (PatternsOf(id) == nullptr || !graph_.node(id).alive) continue;
        if (absl::Status s = Visit(id, static_cast<int64_t>(k)); !s.ok()) return s;
      }
      if (stats_.total_applied == applied_before) dirty_.clear();
    }
    // Whatever a rewrite may have enabled was visited again.
    stats_.fixpoint = dirty_.empty();
    for (size_t p = 0; p < patterns_.size(); ++p) {
      if (applied_[p] > 0) stats_.applied[patterns_[p].name] += applied_[p];
    }
    for (const auto& [why, count] : refused_) stats_.refused[why] += count;
    return std::move(stats_);
  }

 private:
  // Which patterns apply to which of the graph's op kinds (kinds appear as rewrites add nodes).
  void IndexKinds() {
    by_kind_.assign(graph_.num_op_kinds(), {});
    candidate_kinds_.clear();
    for (size_t p = 0; p < patterns_.size(); ++p) {
      for (const char* op : patterns_[p].ops) {
        const OpKindId kind = graph_.FindOpKind("", op);
        if (!kind.valid()) continue;
        if (by_kind_[kind.value()].empty()) candidate_kinds_.push_back(kind);
        by_kind_[kind.value()].push_back(static_cast<int>(p));
      }
    }
  }

  bool AnyCandidate() const {
    for (OpKindId kind : candidate_kinds_) {
      if (graph_.num_live_nodes_of_kind(kind) > 0) return true;
    }
    return false;
  }

  const absl::InlinedVector<int, 2>* PatternsOf(NodeId id) const {
    const OpKindId kind = graph_.op_kind(id);
    if (!kind.valid() || kind.value() >= static_cast<int>(by_kind_.size())) return nullptr;
    const absl::InlinedVector<int, 2>& list = by_kind_[kind.value()];
    return list.empty() ? nullptr : &list;
  }

  // Tries the root's patterns until none applies (or the bound); counts the outcome.
  absl::Status Visit(NodeId id, int64_t key) {
    for (int attempt = 0; attempt < options_.max_rewrites_per_root; ++attempt) {
      if (!graph_.node(id).alive) return absl::OkStatus();
      const absl::InlinedVector<int, 2>* list = PatternsOf(id);
      if (list == nullptr) return absl::OkStatus();
      absl::InlinedVector<const char*, 2> refusals;
      ValueIdList inputs;
      const int slots_before = graph_.num_node_slots();
      const RewritePattern* applied = nullptr;
      for (int p : *list) {
        const RewritePattern& pattern = patterns_[p];
        if (pattern.match && !pattern.match(rewrite_, id)) continue;
        if (hidden_.Touches(graph_.node(id))) {
          refusals.push_back(kHiddenAccesses);
          break;
        }
        // The inputs as they were: whatever the rewrite leaves unread goes too.
        if (inputs.empty()) inputs = graph_.node(id).inputs;
        absl::StatusOr<RewriteResult> result = pattern.rewrite(rewrite_, id);
        if (!result.ok()) {
          return absl::Status(result.status().code(),
                              absl::StrCat(pattern.name, ": ", result.status().message()));
        }
        if (result->kind() == RewriteResult::Kind::kApplied) {
          applied = &pattern;
          break;
        }
        if (result->kind() == RewriteResult::Kind::kRefused) refusals.push_back(result->why());
      }
      if (applied == nullptr) {
        // Refusals count once, on the visit that ends the root's rewriting.
        for (const char* why : refusals) ++refused_[why];
        return absl::OkStatus();
      }
      ++applied_[applied - patterns_.data()];
      ++stats_.total_applied;
      for (ValueId in : inputs) {
        if (!in.valid()) continue;
        MarkDirty(graph_.value(in).producer, key);
        RemoveDefinitionIfUnused(graph_, in, *context_.ops, hidden_);
      }
      for (int i = slots_before; i < graph_.num_node_slots(); ++i) {
        MarkDirty(NodeId(i), key, /*any_kind=*/true);
      }
    }
    // The bound cut the root's rewriting short: the next sweep goes on with it.
    MarkDirty(id, key);
    return absl::OkStatus();
  }

  // `id` (when valid) is visited again in the next sweep, ordered by `key`, the position of the
  // rewrite that touched it. Unless `any_kind`, only when some pattern may root at it (a node a
  // rewrite created may be of a kind the index does not know yet).
  void MarkDirty(NodeId id, int64_t key, bool any_kind = false) {
    if (!id.valid() || (!any_kind && PatternsOf(id) == nullptr) ||
        !dirty_seen_.insert(id.value()).second) {
      return;
    }
    dirty_.emplace_back(key, id.value());
  }

  std::vector<NodeId> TakeDirty() {
    std::sort(dirty_.begin(), dirty_.end());
    std::vector<NodeId> out;
    out.reserve(dirty_.size());
    for (const auto& [key, id] : dirty_) {
      if (graph_.node(NodeId(id)).alive && PatternsOf(NodeId(id)) != nullptr) {
        out.push_back(NodeId(id));
      }
    }
    dirty_.clear();
    dirty_seen_.clear();
    return out;
  }

  Graph& graph_;
  const PassContext& context_;
  absl::Span<const RewritePattern> patterns_;
  const RewriteDriverOptions& options_;
  const HiddenAccess hidden_;
  RewriteContext rewrite_;
  std::vector<absl::InlinedVector<int, 2>> by_kind_;
  std::vector<OpKindId> candidate_kinds_;
  std::vector<std::pair<int64_t, int32_t>> dirty_;
  absl::flat_hash_set<int32_t> dirty_seen_;
  RewriteStats stats_;
  // Counts by pattern index and by refusal reason (static strings), named at the end.
  std::vector<int64_t> applied_ = std::vector<int64_t>(patterns_.size(), 0);
  absl::flat_hash_map<const char*, int64_t> refused_;
};

std::string JoinCounts(const absl::btree_map<std::string, int64_t>& counts) {
  return absl::StrJoin(counts, ", ", [](std::string* out, const auto& kv) {
    absl::StrAppend(out, kv.first, " ", kv.second);
  });
}

}  // namespace

std::string RewriteStats::Summary(absl::string_view what) const {
  std::string out = absl::StrCat(what, " ", total_applied);
  if (!applied.empty()) absl::StrAppend(&out, ": ", JoinCounts(applied));
  int64_t total_refused = 0;
  for (const auto& [why, count] : refused) total_refused += count;
  if (total_refused > 0) absl::StrAppend(&out, "; refused ", total_refused, ": ", JoinCounts(refused));
  if (!fixpoint) absl::StrAppend(&out, "; stopped after ", sweeps, " sweeps, still changing");
  return out;
}

absl::StatusOr<RewriteStats> ApplyPatterns(Graph& graph, const PassContext& context,
                                           absl::Span<const RewritePattern> patterns,
                                           const RewriteDriverOptions& options) {
  return Driver(graph, context, patterns, options).Run();
}

absl::StatusOr<bool> RunPatterns(Graph& graph, const PassContext& context,
                                 absl::Span<const RewritePattern> patterns, absl::string_view what,
                                 const RewriteDriverOptions& options) {
  absl::StatusOr<RewriteStats> stats = ApplyPatterns(graph, context, patterns, options);
  if (!stats.ok()) return stats.status();
  context.Note(stats->Summary(what));
  return stats->total_applied > 0;
}

}  // namespace graphopt
