#ifndef GRAPHOPT_PASSES_PIPELINE_H_
#define GRAPHOPT_PASSES_PIPELINE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "passes/pass.h"
#include "util/stop_token.h"

namespace graphopt {

struct PassSpec {
  std::string name;
  PassOptions options;
  // Part of a fixpoint group: a maximal run of consecutive specs with `repeat` set runs again,
  // round after round, until a whole round changes nothing or PipelineOptions::
  // max_fixpoint_rounds rounds have run.
  bool repeat = false;
};

// Highest optimization level understood, and the level Optimize runs when a request names
// neither passes nor a level (and `graphopt optimize` without -O or --passes).
inline constexpr int kMaxOptLevel = 3;
inline constexpr int kDefaultOptLevel = 2;
// The lowest level whose simplifying passes (PassInfo::repeat_to_fixpoint) form a fixpoint
// group, and the default bound on its rounds.
inline constexpr int kFixpointMinOptLevel = 2;
inline constexpr int kDefaultMaxFixpointRounds = 8;

// The ordered pass list of optimization level `level`: every pass of `passes` whose
// min_opt_level is in [1, level], in registration order (no pass at level 0: only the
// verifier). RegisterBuiltinPasses (builtin_passes.h) gives the order and so the levels. From
// kFixpointMinOptLevel up, the passes marked repeat_to_fixpoint get PassSpec::repeat.
// INVALID_ARGUMENT for a level outside [0, kMaxOptLevel].
absl::StatusOr<std::vector<PassSpec>> PipelineForLevel(const PassRegistry& passes, int level);

// Server ceilings on the pass options that are budgets (PassInfo::budget_options), keyed
// "<pass>.<option>": the largest amount a request may set.
using OptionCeilings = absl::btree_map<std::string, int64_t>;

// Default ceilings, one for every budget option of the builtin passes (a test checks that
// none is missing); a server overrides them from its flags:
//   constant_fold.max_folded_bytes   64 MiB   (largest tensor one fold computes; its default)
//   constant_fold.max_growth_bytes   64 MiB   (bytes all folds together add; default 1 MiB)
//   inline_functions.max_new_nodes   1000000  (its default)
//   fuse_ops.max_group_size          1024     (default 64)
//   schedule.dim_bounds              2^24     (the largest bound of a symbolic dim)
//   plan_memory.dim_bounds           2^24
OptionCeilings DefaultOptionCeilings();

struct PipelineOptions {
  // Run VerifyGraph after every pass that changed the graph (it always runs on the input).
  bool verify_each_pass = false;
  // Symbol -> size, substituted into every value type before the first pass.
  absl::btree_map<std::string, int64_t> dim_bindings;
  // The request's cancellation and deadline (null: never stops): checked before every pass
  // and by the passes that can run long (PassContext::CheckStop). Once it fires RunPipeline
  // returns its status (CANCELLED / DEADLINE_EXCEEDED) naming the pass. Must outlive the call.
  const StopToken* stop = nullptr;
  // Ceilings on the budget options a request sets. An option above its ceiling is
  // INVALID_ARGUMENT naming the pass, option, value and ceiling; a pass whose default is above
  // the ceiling runs at the ceiling. A budget option without an entry has no ceiling: clear the
  // map only for trusted, in-process use.
  OptionCeilings option_ceilings = DefaultOptionCeilings();
  // Rounds a fixpoint group (PassSpec::repeat) runs at most; values below 1 count as 1. Each
  // round after the first starts from freshly inferred types and shapes (their providers run
  // again, reported with added_for), since the last round's rewrites may let inference know
  // more.
  int max_fixpoint_rounds = kDefaultMaxFixpointRounds;
};

struct PassRun {
  std::string name;
  int64_t wall_time_us = 0;
  int64_t verify_time_us = 0;
  bool changed = false;
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  std::vector<std::string> messages;
  // Name of the pass this one was added for ("" when requested).
  std::string added_for;
  // The round of the fixpoint group this run belongs to, from 1; 0 outside any group.
  int round = 0;
};

struct PipelineResult {
  std::vector<PassRun> runs;
  int64_t total_time_us = 0;
  // Rounds the fixpoint group ran (the most of any group); 0 when the pipeline had none.
  int fixpoint_rounds = 0;
  // False when a group stopped at max_fixpoint_rounds while its last round still changed the
  // graph (the last run of that round also says so in its messages).
  bool fixpoint_reached = true;
};

// Runs `passes` over `graph` in order. Before it starts: every pass name is looked up
// (NOT_FOUND naming it), every option key and budget option (against its ceiling) checked
// and every pass created (INVALID_ARGUMENT), and the input graph verified. Before each pass, analyses it requires that are not current
// are produced by running their provider passes first, which appear in the result with
// `added_for` set. A pass error is returned as "pass 'x': <error>"; a verifier failure after a
// pass as "after pass 'x': <error>". The stop token (PipelineOptions::stop) is checked before
// every pass. A fixpoint group (PassSpec::repeat) runs round after round until a round in which
// no pass changed the graph, at most PipelineOptions::max_fixpoint_rounds rounds; each run
// carries its round. No C++ exception leaves the call: one thrown by a pass (or its factory) becomes
// RESOURCE_EXHAUSTED (std::bad_alloc, std::length_error) or INTERNAL naming the pass.
absl::StatusOr<PipelineResult> RunPipeline(Graph& graph, const std::vector<PassSpec>& passes,
                                           const PassRegistry& pass_registry,
                                           const OpRegistry& ops,
                                           const PipelineOptions& options = {});

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_PIPELINE_H_
