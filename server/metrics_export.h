#ifndef GRAPHOPT_SERVER_METRICS_EXPORT_H_
#define GRAPHOPT_SERVER_METRICS_EXPORT_H_

// What graphopt-server exports to Prometheus from its components, beyond the RPC metrics
// (RpcEnvironment::EnableMetrics) and the queues' (server/metrics_endpoint.h).
// docs/operations.md ("Metrics and logs") lists every metric. Each Export* adds a collector
// that reads the component when scraped: the components stay free of metrics code, and
// everything they are asked must outlive the endpoint (stop it first).

#include "service/blob_store.h"
#include "service/coordinator.h"
#include "service/op_store.h"
#include "service/optimizer.h"
#include "service/quota.h"
#include "service/result_cache.h"
#include "util/metrics.h"

namespace graphopt {

// Per-tenant series kept before the rest are summed into tenant="other".
inline constexpr int kMaxTenantSeries = 200;

// graphopt_worker_up by address (1 up, 0 down or not yet probed), graphopt_workers by health,
// graphopt_worker_in_flight and graphopt_worker_failures_total by address.
void ExportCoordinator(MetricsRegistry* registry, const Coordinator* coordinator);

// graphopt_blob_store_{hits,misses,evictions}_total, graphopt_blob_store_bytes by state,
// graphopt_blob_store_blobs, graphopt_blob_store_budget_bytes.
void ExportBlobStore(MetricsRegistry* registry, const BlobStore* blobs);

// graphopt_tenant_concurrent_calls, graphopt_tenant_blob_bytes and
// graphopt_tenant_op_store_bytes by tenant. `limiter` and `blobs` may be null.
void ExportTenantUsage(MetricsRegistry* registry, const TenantLimiter* limiter,
                       const BlobStore* blobs, const OpStore* ops);

// graphopt_optimize_cache_{hits,misses,evictions}_total, graphopt_optimize_cache_bytes and
// graphopt_optimize_cache_entries by tenant, graphopt_optimize_cache_budget_bytes.
void ExportResultCache(MetricsRegistry* registry, const ResultCache* cache);

// graphopt_pass_duration_seconds by pass, observed by the optimizer.
void ExportPassTimes(MetricsRegistry* registry, Optimizer* optimizer);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_METRICS_EXPORT_H_
