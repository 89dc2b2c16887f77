#ifndef GRAPHOPT_WORKER_WORKER_METRICS_H_
#define GRAPHOPT_WORKER_WORKER_METRICS_H_

#include "util/metrics.h"
#include "worker/worker_service.h"

namespace graphopt {

// graphopt_plan_cache_{hits,misses,evictions}_total, graphopt_plan_cache_{plans,bytes,
// capacity_bytes} and graphopt_worker_executing, read from `core` when scraped; `core` must
// outlive the metrics endpoint.
void ExportWorkerCore(MetricsRegistry* registry, const WorkerCore* core);

}  // namespace graphopt

#endif  // GRAPHOPT_WORKER_WORKER_METRICS_H_
