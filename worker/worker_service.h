#ifndef GRAPHOPT_WORKER_WORKER_SERVICE_H_
#define GRAPHOPT_WORKER_WORKER_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"
#include "proto/worker.grpc.pb.h"
#include "runtime/kernel.h"
#include "spdlog/logger.h"
#include "worker/plan_cache.h"

namespace graphopt {

struct WorkerOptions {
  std::string worker_id;
  // Kernel threads per execution.
  int threads = 1;
  int64_t plan_cache_bytes = int64_t{4} << 30;
};

// What a worker does, without gRPC: load plans into the cache, execute them, describe itself.
// Thread-safe; executions of one plan may run concurrently.
class WorkerCore {
 public:
  WorkerCore(const runtime::KernelRegistry* kernels, WorkerOptions options);

  absl::StatusOr<v1::LoadPlanResponse> LoadPlan(v1::LoadPlanRequest request);
  absl::StatusOr<v1::ExecuteResponse> Execute(const v1::ExecuteRequest& request);
  v1::UnloadPlanResponse UnloadPlan(const v1::UnloadPlanRequest& request);
  v1::DescribeResponse Describe() const;

 private:
  const runtime::KernelRegistry* kernels_;
  const WorkerOptions options_;
  // DescribeResponse.instance: this process and its start time.
  const std::string instance_;
  PlanCache cache_;
  std::atomic<int> executing_{0};
  std::atomic<int64_t> executed_{0};
};

// The gRPC adapter over WorkerCore.
class WorkerService final : public v1::Worker::Service {
 public:
  // `core` may be set later (set_core) but before the server accepts calls.
  WorkerService(WorkerCore* core, std::shared_ptr<spdlog::logger> logger)
      : core_(core), logger_(std::move(logger)) {}
  void set_core(WorkerCore* core) { core_.store(core); }

  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest* request,
                        v1::DescribeResponse* response) override;
  grpc::Status LoadPlan(grpc::ServerContext* context, const v1::LoadPlanRequest* request,
                        v1::LoadPlanResponse* response) override;
  grpc::Status Execute(grpc::ServerContext* context, const v1::ExecuteRequest* request,
                       v1::ExecuteResponse* response) override;
  grpc::Status UnloadPlan(grpc::ServerContext* context, const v1::UnloadPlanRequest* request,
                          v1::UnloadPlanResponse* response) override;

 private:
  WorkerCore* core() const { return core_.load(); }
  std::atomic<WorkerCore*> core_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_WORKER_WORKER_SERVICE_H_
