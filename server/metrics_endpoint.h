#ifndef GRAPHOPT_SERVER_METRICS_ENDPOINT_H_
#define GRAPHOPT_SERVER_METRICS_ENDPOINT_H_

// The Prometheus endpoint of graphopt-server and graphopt-worker (--metrics_listen), and the
// metrics both export from their work queues. docs/operations.md ("Metrics and logs") lists
// every metric.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/work_queue.h"
#include "spdlog/logger.h"
#include "util/http_endpoint.h"
#include "util/metrics.h"

namespace graphopt {

// graphopt_queue_{depth,running,threads,capacity} and graphopt_queue_refused_total by queue.
// The queues must outlive the endpoint.
void ExportWorkQueues(MetricsRegistry* registry, std::vector<const WorkQueue*> queues);

// Serves registry->Render() on GET /metrics and "ok" on GET /healthz at `listen` (HOST:PORT,
// port 0 for a free one), logs the address, and writes the port to `port_file` when given.
// Stop it (destroy it) before anything its collectors read.
absl::StatusOr<std::unique_ptr<HttpEndpoint>> StartMetricsEndpoint(const std::string& listen,
                                                                   const std::string& port_file,
                                                                   MetricsRegistry* registry,
                                                                   spdlog::logger& logger);

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_METRICS_ENDPOINT_H_
