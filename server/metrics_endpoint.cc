#include "server/metrics_endpoint.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/serving.h"

namespace graphopt {

void ExportWorkQueues(MetricsRegistry* registry, std::vector<const WorkQueue*> queues) {
  registry->AddCollector([queues = std::move(queues)](CollectedGauges& out) {
    out.Declare({"graphopt_queue_depth", "Calls waiting in a work queue for a thread.",
                 {"queue"}});
    out.Declare({"graphopt_queue_running", "Calls a work queue's threads are running now.",
                 {"queue"}});
    out.Declare({"graphopt_queue_threads", "Threads of a work queue.", {"queue"}});
    out.Declare({"graphopt_queue_capacity",
                 "Calls that may wait in a work queue (beyond idle threads); more are refused.",
                 {"queue"}});
    out.Declare({"graphopt_queue_refused_total",
                 "Calls refused with RESOURCE_EXHAUSTED because a work queue was full.",
                 {"queue"}},
                /*counter=*/true);
    for (const WorkQueue* q : queues) {
      const WorkQueue::Stats s = q->stats();
      out.Set("graphopt_queue_depth", {q->name()}, s.queued);
      out.Set("graphopt_queue_running", {q->name()}, s.running);
      out.Set("graphopt_queue_threads", {q->name()}, s.threads);
      out.Set("graphopt_queue_capacity", {q->name()}, s.capacity);
      out.Set("graphopt_queue_refused_total", {q->name()}, static_cast<double>(s.refused));
    }
  });
}

absl::StatusOr<std::unique_ptr<HttpEndpoint>> StartMetricsEndpoint(const std::string& listen,
                                                                   const std::string& port_file,
                                                                   MetricsRegistry* registry,
                                                                   spdlog::logger& logger) {
  HttpEndpointOptions options;
  options.listen = listen;
  options.routes["/metrics"] = [registry] {
    return HttpResponse{200, kPrometheusContentType, registry->Render()};
  };
  options.routes["/healthz"] = [] { return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"}; };
  absl::StatusOr<std::unique_ptr<HttpEndpoint>> endpoint = HttpEndpoint::Start(std::move(options));
  if (!endpoint.ok()) {
    return absl::Status(endpoint.status().code(),
                        absl::StrCat("--metrics_listen: ", endpoint.status().message()));
  }
  if (!port_file.empty()) {
    if (absl::Status s = WritePortFile(port_file, (*endpoint)->port()); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("--metrics_port_file: ", s.message()));
    }
  }
  logger.info("metrics on http://{}/metrics", ResolvedAddress(listen, (*endpoint)->port()));
  return endpoint;
}

}  // namespace graphopt
