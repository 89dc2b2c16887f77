#include "worker/worker_metrics.h"

namespace graphopt {

void ExportWorkerCore(MetricsRegistry* registry, const WorkerCore* core) {
  registry->AddCollector([core](CollectedGauges& out) {
    const PlanCache::Stats s = core->plan_cache_stats();
    out.Declare({"graphopt_plan_cache_hits_total",
                 "Plan lookups (LoadPlan of a plan already loaded, Execute) that found the plan.",
                 {}},
                true);
    out.Declare({"graphopt_plan_cache_misses_total",
                 "Plan lookups that did not find the plan (a load follows, or Execute fails "
                 "NOT_FOUND and the coordinator loads it again).",
                 {}},
                true);
    out.Declare({"graphopt_plan_cache_evictions_total",
                 "Plans evicted (least recently used first) to make room.", {}},
                true);
    out.Declare({"graphopt_plan_cache_plans", "Plans loaded.", {}});
    out.Declare({"graphopt_plan_cache_bytes", "Bytes of the plans loaded.", {}});
    out.Declare({"graphopt_plan_cache_capacity_bytes", "The plan cache's byte budget.", {}});
    out.Declare({"graphopt_worker_executing", "Executions running now.", {}});
    out.Set("graphopt_plan_cache_hits_total", {}, static_cast<double>(s.hits));
    out.Set("graphopt_plan_cache_misses_total", {}, static_cast<double>(s.misses));
    out.Set("graphopt_plan_cache_evictions_total", {}, static_cast<double>(s.evictions));
    out.Set("graphopt_plan_cache_plans", {}, s.plans);
    out.Set("graphopt_plan_cache_bytes", {}, static_cast<double>(s.bytes));
    out.Set("graphopt_plan_cache_capacity_bytes", {}, static_cast<double>(s.capacity));
    out.Set("graphopt_worker_executing", {}, core->executing());
  });
}

}  // namespace graphopt
