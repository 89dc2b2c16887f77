#include "passes/pipeline.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/strings/numbers.h"
#include "graph/verifier.h"
#include "runtime/exception_status.h"

namespace graphopt {
namespace {

absl::Status Prefixed(const absl::Status& s, absl::string_view prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// The pass `info` makes for `options`, with errors (and exceptions) prefixed by its name.
absl::StatusOr<std::unique_ptr<Pass>> CreatePass(const PassInfo& info, const PassOptions& options) {
  absl::StatusOr<std::unique_ptr<Pass>> pass = absl::InternalError("");
  try {
    pass = info.factory(options);
  } catch (...) {
    return CurrentExceptionToStatus(absl::StrCat("pass '", info.name, "': creating it"));
  }
  if (!pass.ok()) return Prefixed(pass.status(), absl::StrCat("pass '", info.name, "': "));
  return pass;
}

std::string KnownPasses(const PassRegistry& registry) {
  return absl::StrJoin(registry.List(), ", ",
                       [](std::string* out, const PassInfo* p) { out->append(p->name); });
}

// Substitutes bound symbols in every value type.
absl::Status BindDims(Graph& graph, const absl::btree_map<std::string, int64_t>& bindings) {
  if (bindings.empty()) return absl::OkStatus();
  for (const auto& [symbol, size] : bindings) {
    if (symbol.empty()) return absl::InvalidArgumentError("dim binding with an empty symbol");
    if (size < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dim binding '", symbol, "' = ", size, " is negative"));
    }
  }
  for (int i = 0; i < graph.num_value_slots(); ++i) {
    Value& v = graph.mutable_value(ValueId(i));
    if (!v.alive || !v.type.shape) continue;
    for (Dim& d : *v.type.shape) {
      if (!d.is_symbol()) continue;
      auto it = bindings.find(d.symbol());
      if (it != bindings.end()) d = Dim::Known(it->second);
    }
  }
  return absl::OkStatus();
}

// `options` with every budget option of `info` checked against its ceiling: a value above it
// is INVALID_ARGUMENT; an unset option whose default is above it is set to the ceiling.
absl::StatusOr<PassOptions> ApplyCeilings(const PassInfo& info, PassOptions options,
                                          const OptionCeilings& ceilings) {
  for (const auto& [key, budget] : info.budget_options) {
    auto ceiling = ceilings.find(absl::StrCat(info.name, ".", key));
    if (ceiling == ceilings.end()) continue;
    auto it = options.find(key);
    if (it == options.end()) {
      if (budget.default_value > ceiling->second) options[key] = absl::StrCat(ceiling->second);
      continue;
    }
    int64_t amount = 0;
    if (budget.amount) {
      absl::StatusOr<int64_t> a = budget.amount(it->second);
      if (!a.ok()) {
        return Prefixed(a.status(), absl::StrCat("pass '", info.name, "': option '", key, "': "));
      }
      amount = *a;
    } else if (!absl::SimpleAtoi(it->second, &amount)) {
      continue;  // malformed: the pass's factory says so
    }
    if (amount > ceiling->second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "pass '", info.name, "': option '", key, "' = ", it->second,
          " is over the server's ceiling of ", ceiling->second));
    }
  }
  return options;
}

struct Runner {
  Graph& graph;
  const PassRegistry& registry;
  const OpRegistry& ops;
  const PipelineOptions& options;
  PipelineResult result;
  AnalysisSet valid;
  // The fixpoint round the runs belong to (0 outside a group), and how many runs changed the
  // graph so far.
  int round = 0;
  int64_t changed_runs = 0;

  absl::Status Run(const PassInfo& info, Pass& pass, const std::string& added_for) {
    PassRun run;
    run.name = info.name;
    run.added_for = added_for;
    run.round = round;
    run.nodes_before = graph.num_live_nodes();
    PassContext context{&ops, &run.messages, options.stop, info.name};
    if (absl::Status s = context.CheckStop(); !s.ok()) return s;
    const absl::Time start = absl::Now();
    absl::StatusOr<bool> changed = absl::InternalError("");
    try {
      changed = pass.Run(graph, context);
    } catch (...) {
      // The graph may be half rewritten: the request fails as a whole.
      return CurrentExceptionToStatus(absl::StrCat("pass '", info.name, "'"));
    }
    run.wall_time_us = absl::ToInt64Microseconds(absl::Now() - start);
    if (!changed.ok()) {
      // A stop names the pass already (PassContext::CheckStop).
      if (absl::IsCancelled(changed.status()) || absl::IsDeadlineExceeded(changed.status())) {
        return changed.status();
      }
      return Prefixed(changed.status(), absl::StrCat("pass '", info.name, "': "));
    }
    run.changed = *changed;
    changed_runs += run.changed ? 1 : 0;
    run.nodes_after = graph.num_live_nodes();
    if (run.changed) valid = valid.Intersect(info.preserves);
    valid.InsertAll(info.provides);
    if (options.verify_each_pass && run.changed) {
      const absl::Time vstart = absl::Now();
      absl::Status s = VerifyGraph(graph, ops);
      run.verify_time_us = absl::ToInt64Microseconds(absl::Now() - vstart);
      if (!s.ok()) {
        // The input was verified, so a failure here is a bug in the pass.
        return absl::InternalError(absl::StrCat("after pass '", info.name, "': ", s.message()));
      }
    }
    result.runs.push_back(std::move(run));
    return absl::OkStatus();
  }

  // Runs providers for every analysis in `needed` that is not current. The dependency depth is
  // bounded by the number of analyses, not by the graph.
  absl::Status Ensure(AnalysisSet needed, const std::string& for_pass, int depth) {
    for (Analysis a : needed.ToVector()) {
      if (valid.contains(a)) continue;
      const PassInfo* provider = registry.Provider(a);
      if (provider == nullptr) {
        return absl::InternalError(absl::StrCat("pass '", for_pass, "' needs ",
                                                AnalysisName(a), " but no pass provides them"));
      }
      if (depth > kNumAnalyses) {
        return absl::InternalError(absl::StrCat("analysis dependencies of pass '", for_pass,
                                                "' form a cycle"));
      }
      if (absl::Status s = Ensure(provider->requires_analyses, for_pass, depth + 1); !s.ok()) {
        return s;
      }
      absl::StatusOr<PassOptions> provider_options =
          ApplyCeilings(*provider, {}, options.option_ceilings);
      if (!provider_options.ok()) return provider_options.status();
      absl::StatusOr<std::unique_ptr<Pass>> pass = CreatePass(*provider, *provider_options);
      if (!pass.ok()) return pass.status();
      if (absl::Status s = Run(*provider, **pass, for_pass); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
};

}  // namespace

OptionCeilings DefaultOptionCeilings() {
  return {
      {"constant_fold.max_folded_bytes", int64_t{64} << 20},
      {"constant_fold.max_growth_bytes", int64_t{64} << 20},
      {"decompose_rnn.max_steps", 16384},
      {"fuse_ops.max_group_size", 1024},
      {"gradient.max_new_nodes", 1000000},
      {"inline_functions.max_new_nodes", 1000000},
      {"plan_memory.dim_bounds", int64_t{1} << 24},
      {"rematerialize.max_new_nodes", 1000000},
      {"schedule.dim_bounds", int64_t{1} << 24},
  };
}

absl::StatusOr<std::vector<PassSpec>> PipelineForLevel(const PassRegistry& passes, int level) {
  if (level < 0 || level > kMaxOptLevel) {
    return absl::InvalidArgumentError(
        absl::StrCat("opt_level ", level, " is not supported (0 to ", kMaxOptLevel, ")"));
  }
  std::vector<PassSpec> specs;
  // The fixpoint group spans from the first to the last repeat_to_fixpoint pass of the level.
  size_t first = 0, last = 0;
  bool any = false;
  for (const PassInfo* info : passes.InRegistrationOrder()) {
    if (info->min_opt_level >= 1 && info->min_opt_level <= level) {
      if (info->repeat_to_fixpoint && level >= kFixpointMinOptLevel) {
        if (!any) first = specs.size();
        last = specs.size();
        any = true;
      }
      specs.push_back({info->name, {}});
    }
  }
  if (any) {
    for (size_t i = first; i <= last; ++i) specs[i].repeat = true;
  }
  return specs;
}

namespace {

absl::StatusOr<PipelineResult> RunPipelineUnguarded(Graph& graph,
                                                    const std::vector<PassSpec>& passes,
                                                    const PassRegistry& pass_registry,
                                                    const OpRegistry& ops,
                                                    const PipelineOptions& options) {
  const absl::Time start = absl::Now();
  // Resolve everything before touching the graph.
  std::vector<std::pair<const PassInfo*, std::unique_ptr<Pass>>> plan;
  plan.reserve(passes.size());
  for (const PassSpec& spec : passes) {
    const PassInfo* info = pass_registry.Find(spec.name);
    if (info == nullptr) {
      return absl::NotFoundError(absl::StrCat("unknown pass '", spec.name,
                                              "' (known passes: ", KnownPasses(pass_registry),
                                              ")"));
    }
    for (const auto& [key, value] : spec.options) {
      if (!info->options.count(key)) {
        std::string accepted = info->options.empty()
                                   ? std::string("it takes no options")
                                   : absl::StrCat("accepted: ",
                                                  absl::StrJoin(info->options, ", ",
                                                                [](std::string* out,
                                                                   const auto& kv) {
                                                                  out->append(kv.first);
                                                                }));
        return absl::InvalidArgumentError(absl::StrCat("pass '", spec.name,
                                                       "': unknown option '", key, "' (",
                                                       accepted, ")"));
      }
    }
    absl::StatusOr<PassOptions> pass_options =
        ApplyCeilings(*info, spec.options, options.option_ceilings);
    if (!pass_options.ok()) return pass_options.status();
    absl::StatusOr<std::unique_ptr<Pass>> pass = CreatePass(*info, *pass_options);
    if (!pass.ok()) return pass.status();
    plan.emplace_back(info, std::move(*pass));
  }

  if (absl::Status s = CheckStop(options.stop, "the pipeline's input check"); !s.ok()) return s;
  if (absl::Status s = VerifyGraph(graph, ops); !s.ok()) return s;
  if (absl::Status s = BindDims(graph, options.dim_bindings); !s.ok()) return s;

  Runner runner{graph, pass_registry, ops, options, {}, {}};
  auto run_one = [&runner](const PassInfo& info, Pass& pass) -> absl::Status {
    if (absl::Status s = runner.Ensure(info.requires_analyses, info.name, 0); !s.ok()) return s;
    return runner.Run(info, pass, "");
  };
  const int max_rounds = std::max(1, options.max_fixpoint_rounds);
  for (size_t i = 0; i < plan.size();) {
    if (!passes[i].repeat) {
      if (absl::Status s = run_one(*plan[i].first, *plan[i].second); !s.ok()) return s;
      ++i;
      continue;
    }
    size_t end = i;
    while (end < plan.size() && passes[end].repeat) ++end;
    // The same pass objects run every round: a pass's budgets (constant_fold's growth) hold
    // for the whole group, not per round.
    int round = 1;
    for (;; ++round) {
      // The last round's rewrites may let inference know more (a folded Reshape target makes
      // its output static): every round after the first starts from fresh analyses.
      if (round > 1) runner.valid = AnalysisSet();
      runner.round = round;
      const int64_t changed_before = runner.changed_runs;
      for (size_t k = i; k < end; ++k) {
        if (absl::Status s = run_one(*plan[k].first, *plan[k].second); !s.ok()) return s;
      }
      if (runner.changed_runs == changed_before) break;
      if (round == max_rounds) {
        runner.result.fixpoint_reached = false;
        runner.result.runs.back().messages.push_back(absl::StrCat(
            "the fixpoint group stopped at its bound of ", max_rounds,
            " rounds while still changing the graph"));
        break;
      }
    }
    runner.round = 0;
    runner.result.fixpoint_rounds = std::max(runner.result.fixpoint_rounds, round);
    i = end;
  }
  runner.result.total_time_us = absl::ToInt64Microseconds(absl::Now() - start);
  return std::move(runner.result);
}

}  // namespace

absl::StatusOr<PipelineResult> RunPipeline(Graph& graph, const std::vector<PassSpec>& passes,
                                           const PassRegistry& pass_registry,
                                           const OpRegistry& ops,
                                           const PipelineOptions& options) {
  // Passes and their factories are guarded where they run (naming them); this is for the
  // pipeline's own bookkeeping (verification, dim bindings, analyses).
  try {
    return RunPipelineUnguarded(graph, passes, pass_registry, ops, options);
  } catch (...) {
    return CurrentExceptionToStatus("the pass pipeline");
  }
}

}  // namespace graphopt
