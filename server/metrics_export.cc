#include "server/metrics_export.h"

#include <utility>

#include "proto/coordinator.pb.h"

namespace graphopt {

void ExportCoordinator(MetricsRegistry* registry, const Coordinator* coordinator) {
  registry->AddCollector([coordinator](CollectedGauges& out) {
    out.Declare({"graphopt_worker_up",
                 "1 when the coordinator sees the worker up, 0 when down or not yet probed.",
                 {"address"}, /*max_series=*/100000});
    out.Declare({"graphopt_workers", "Workers the coordinator knows, by health (up, down, unknown).",
                 {"health"}});
    out.Declare({"graphopt_worker_in_flight", "Calls the coordinator has in flight on a worker.",
                 {"address"}, /*max_series=*/100000});
    out.Declare({"graphopt_worker_failures_total", "Times a worker was marked down.",
                 {"address"}, /*max_series=*/100000},
                /*counter=*/true);
    out.Declare({"graphopt_training_sessions", "Training sessions the coordinator holds.", {}});
    out.Set("graphopt_training_sessions", {}, coordinator->sessions());
    // Every health appears, at 0 when no worker has it: alerts on "up == 0" need the series.
    for (const char* health : {"up", "down", "unknown"}) out.Set("graphopt_workers", {health}, 0);
    const v1::ListWorkersResponse workers = coordinator->ListWorkers();
    for (const v1::WorkerStatus& w : workers.workers()) {
      out.Set("graphopt_worker_up", {w.address()}, w.health() == "up" ? 1 : 0);
      out.Set("graphopt_workers", {w.health()}, 1);
      out.Set("graphopt_worker_in_flight", {w.address()}, w.executing());
      out.Set("graphopt_worker_failures_total", {w.address()}, static_cast<double>(w.failures()));
    }
  });
}

void ExportBlobStore(MetricsRegistry* registry, const BlobStore* blobs) {
  registry->AddCollector([blobs](CollectedGauges& out) {
    const BlobStoreStats s = blobs->stats();
    out.Declare({"graphopt_blob_store_hits_total",
                 "Blob digests looked up (HasBlobs, weights of a request) that the store held.",
                 {}},
                true);
    out.Declare({"graphopt_blob_store_misses_total",
                 "Blob digests looked up that the store did not hold.", {}},
                true);
    out.Declare({"graphopt_blob_store_evictions_total",
                 "Blobs evicted (least recently used first) to make room.", {}},
                true);
    out.Declare({"graphopt_blob_store_bytes",
                 "Bytes of the blob store: held (committed blobs), in_use (held and pinned by a "
                 "request), reserved (uploads in progress).",
                 {"state"}});
    out.Declare({"graphopt_blob_store_blobs", "Blobs held.", {}});
    out.Declare({"graphopt_blob_store_budget_bytes", "The blob store's byte budget.", {}});
    out.Set("graphopt_blob_store_hits_total", {}, static_cast<double>(s.hits));
    out.Set("graphopt_blob_store_misses_total", {}, static_cast<double>(s.misses));
    out.Set("graphopt_blob_store_evictions_total", {}, static_cast<double>(s.evictions));
    out.Set("graphopt_blob_store_bytes", {"held"}, static_cast<double>(s.bytes_held));
    out.Set("graphopt_blob_store_bytes", {"in_use"}, static_cast<double>(s.bytes_in_use));
    out.Set("graphopt_blob_store_bytes", {"reserved"}, static_cast<double>(s.bytes_reserved));
    out.Set("graphopt_blob_store_blobs", {}, static_cast<double>(s.blob_count));
    out.Set("graphopt_blob_store_budget_bytes", {}, static_cast<double>(s.budget_bytes));
  });
}

void ExportTenantUsage(MetricsRegistry* registry, const TenantLimiter* limiter,
                       const BlobStore* blobs, const OpStore* ops) {
  registry->AddCollector([limiter, blobs, ops](CollectedGauges& out) {
    const auto tenant_family = [](const char* name, const char* help) {
      return FamilyOptions{name, help, {"tenant"}, kMaxTenantSeries, "tenant"};
    };
    out.Declare(tenant_family("graphopt_tenant_concurrent_calls",
                              "A tenant's calls holding one of its max_concurrent slots."));
    out.Declare(tenant_family("graphopt_tenant_blob_bytes",
                              "Bytes of weight blobs a tenant holds (quota blob_bytes)."));
    out.Declare(tenant_family("graphopt_tenant_op_store_bytes",
                              "Bytes of op descriptors a tenant registered (quota "
                              "op_store_bytes)."));
    if (limiter != nullptr) {
      for (const auto& [tenant, n] : limiter->InFlightByTenant()) {
        out.Set("graphopt_tenant_concurrent_calls", {tenant}, n);
      }
    }
    if (blobs != nullptr) {
      for (const auto& [tenant, bytes] : blobs->BytesHeldByTenant()) {
        out.Set("graphopt_tenant_blob_bytes", {tenant}, static_cast<double>(bytes));
      }
    }
    if (ops != nullptr) {
      for (const auto& [tenant, bytes] : ops->BytesByTenant()) {
        out.Set("graphopt_tenant_op_store_bytes", {tenant}, static_cast<double>(bytes));
      }
    }
  });
}

void ExportResultCache(MetricsRegistry* registry, const ResultCache* cache) {
  registry->AddCollector([cache](CollectedGauges& out) {
    auto tenant_family = [](const char* name, const char* help) {
      return FamilyOptions{name, help, {"tenant"}, kMaxTenantSeries, "tenant"};
    };
    out.Declare(tenant_family("graphopt_optimize_cache_hits_total",
                              "Optimize requests answered from the result cache, by tenant."),
                /*counter=*/true);
    out.Declare(tenant_family("graphopt_optimize_cache_misses_total",
                              "Optimize requests that looked in the result cache and ran the "
                              "pipeline, by tenant (no_cache requests are neither)."),
                /*counter=*/true);
    out.Declare(tenant_family("graphopt_optimize_cache_evictions_total",
                              "Results evicted from the cache to make room (least recently used "
                              "first), by tenant."),
                /*counter=*/true);
    out.Declare(tenant_family("graphopt_optimize_cache_bytes",
                              "Bytes of the tenant's cached results."));
    out.Declare(tenant_family("graphopt_optimize_cache_entries",
                              "The tenant's cached results."));
    out.Declare({"graphopt_optimize_cache_budget_bytes",
                 "The result cache's byte budget, all tenants together (--optimize_cache_mb).",
                 {}});
    out.Set("graphopt_optimize_cache_budget_bytes", {},
            static_cast<double>(cache->options().max_bytes));
    for (const auto& [tenant, s] : cache->Stats()) {
      out.Set("graphopt_optimize_cache_hits_total", {tenant}, static_cast<double>(s.hits));
      out.Set("graphopt_optimize_cache_misses_total", {tenant}, static_cast<double>(s.misses));
      out.Set("graphopt_optimize_cache_evictions_total", {tenant},
              static_cast<double>(s.evictions));
      out.Set("graphopt_optimize_cache_bytes", {tenant}, static_cast<double>(s.bytes));
      out.Set("graphopt_optimize_cache_entries", {tenant}, static_cast<double>(s.entries));
    }
  });
}

void ExportPassTimes(MetricsRegistry* registry, Optimizer* optimizer) {
  HistogramFamily* passes = registry->AddHistogram(
      {"graphopt_pass_duration_seconds",
       "Wall time of one optimization pass in a pipeline that ran to the end, by pass.",
       {"pass"}},
      LatencyBuckets());
  optimizer->set_pass_observer([passes](const std::string& pass, int64_t wall_time_us) {
    passes->WithLabels({pass})->Observe(static_cast<double>(wall_time_us) * 1e-6);
  });
}

}  // namespace graphopt
