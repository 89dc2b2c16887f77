#include "worker/worker_service.h"

#include <unistd.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/proto_convert.h"
#include "graph/proto_util.h"
#include "server/grpc_status.h"
#include "service/digest.h"

namespace graphopt {

WorkerCore::WorkerCore(const runtime::KernelRegistry* kernels, WorkerOptions options)
    : kernels_(kernels),
      options_(std::move(options)),
      instance_(absl::StrCat(getpid(), "@", absl::ToUnixMicros(absl::Now()))),
      cache_(options_.plan_cache_bytes) {}

absl::StatusOr<v1::LoadPlanResponse> WorkerCore::LoadPlan(v1::LoadPlanRequest request) {
  const std::string id = Sha256Digest(SerializeDeterministic(request.graph()));
  v1::LoadPlanResponse response;
  response.set_plan_id(id);
  if (std::shared_ptr<const LoadedPlan> cached = cache_.Find(id)) {
    response.set_already_loaded(true);
    response.set_plan_bytes(cached->bytes);
    return response;
  }
  for (const v1::Tensor& t : request.graph().initializers()) {
    if (!t.blob().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "plan: initializer '", t.name(), "' is a blob reference; plans carry their weights"));
    }
  }
  // What the plan holds: its weights (decoded once) and its structure.
  const int64_t bytes = static_cast<int64_t>(request.graph().ByteSizeLong());
  absl::StatusOr<Graph> graph = GraphFromProto(std::move(*request.mutable_graph()));
  if (!graph.ok()) return graph.status();
  auto plan = std::make_shared<LoadedPlan>();
  plan->id = id;
  plan->bytes = bytes;
  for (ValueId v : graph->outputs()) plan->output_names.push_back(graph->value(v).name);
  runtime::ExecutorOptions executor_options;
  executor_options.num_threads = options_.threads;
  absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::Create(*std::move(graph), *kernels_, executor_options);
  if (!executor.ok()) return executor.status();
  plan->executor = *std::move(executor);
  bool already = false;
  absl::StatusOr<std::shared_ptr<const LoadedPlan>> inserted = cache_.Insert(std::move(plan), &already);
  if (!inserted.ok()) return inserted.status();
  response.set_already_loaded(already);
  response.set_plan_bytes((*inserted)->bytes);
  return response;
}

absl::StatusOr<v1::ExecuteResponse> WorkerCore::Execute(const v1::ExecuteRequest& request) {
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const LoadedPlan> plan = cache_.Find(request.plan_id());
  if (plan == nullptr) {
    return absl::NotFoundError(absl::StrCat("plan '", request.plan_id(),
                                            "' is not loaded on worker ", options_.worker_id,
                                            " (never loaded, or evicted): load it again"));
  }
  std::vector<std::pair<std::string, runtime::Tensor>> inputs;
  inputs.reserve(request.inputs_size());
  for (const v1::NamedTensor& in : request.inputs()) {
    absl::StatusOr<runtime::Tensor> t =
        runtime::Tensor::FromProto(in.tensor(), absl::StrCat("input '", in.name(), "'"));
    if (!t.ok()) return t.status();
    inputs.emplace_back(in.name(), *std::move(t));
  }
  executing_.fetch_add(1);
  absl::StatusOr<runtime::RunResult> result =
      plan->executor->Run(inputs, {.profile = request.profile()});
  executing_.fetch_sub(1);
  executed_.fetch_add(1);
  if (!result.ok()) return result.status();
  v1::ExecuteResponse response;
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    v1::NamedTensor* out = response.add_outputs();
    out->set_name(plan->output_names[i]);
    result->outputs[i].ToProto(out->mutable_tensor());
  }
  for (const runtime::NodeTiming& t : result->timings) {
    v1::NodeTiming* timing = response.add_timings();
    timing->set_node(t.node);
    timing->set_op_type(t.op_type);
    timing->set_micros(t.micros);
  }
  response.set_worker_id(options_.worker_id);
  response.set_run_micros(
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  return response;
}

v1::UnloadPlanResponse WorkerCore::UnloadPlan(const v1::UnloadPlanRequest& request) {
  v1::UnloadPlanResponse response;
  response.set_unloaded(cache_.Remove(request.plan_id()));
  return response;
}

v1::DescribeResponse WorkerCore::Describe() const {
  v1::DescribeResponse response;
  response.set_worker_id(options_.worker_id);
  response.set_version("0.1.0");
  response.set_instance(instance_);
  v1::DeviceInfo* cpu = response.add_devices();
  cpu->set_name("cpu:0");
  cpu->set_kind("cpu");
  cpu->set_memory_bytes(static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE));
  cpu->set_threads(options_.threads);
  std::string last;
  for (const runtime::KernelRegistry::Key& key : kernels_->Keys()) {
    std::string name = absl::StrCat(key.domain, "::", key.op_type);
    if (name != last) response.add_supported_ops(name);
    last = std::move(name);
  }
  const PlanCache::Stats stats = cache_.stats();
  response.set_plans_loaded(stats.plans);
  response.set_plan_cache_bytes(stats.bytes);
  response.set_plan_cache_capacity_bytes(stats.capacity);
  response.set_executing(executing_.load());
  response.set_executed(executed_.load());
  return response;
}

grpc::Status WorkerService::Describe(grpc::ServerContext*, const v1::DescribeRequest*,
                                     v1::DescribeResponse* response) {
  if (core() == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is starting");
  *response = core()->Describe();
  return grpc::Status::OK;
}

grpc::Status WorkerService::LoadPlan(grpc::ServerContext*, const v1::LoadPlanRequest* request,
                                     v1::LoadPlanResponse* response) {
  if (core() == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is starting");
  // The request is not used after this call: move the graph out instead of copying weights.
  absl::StatusOr<v1::LoadPlanResponse> r =
      core()->LoadPlan(std::move(*const_cast<v1::LoadPlanRequest*>(request)));
  if (!r.ok()) {
    logger_->warn("LoadPlan: {}", r.status().ToString());
    return ToGrpcStatus(r.status());
  }
  logger_->info("LoadPlan {}: {} ({} bytes)", r->plan_id(),
                r->already_loaded() ? "already loaded" : "loaded", r->plan_bytes());
  *response = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status WorkerService::Execute(grpc::ServerContext*, const v1::ExecuteRequest* request,
                                    v1::ExecuteResponse* response) {
  if (core() == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is starting");
  absl::StatusOr<v1::ExecuteResponse> r = core()->Execute(*request);
  if (!r.ok()) {
    logger_->warn("Execute {} (request '{}'): {}", request->plan_id(), request->request_id(),
                  r.status().ToString());
    return ToGrpcStatus(r.status());
  }
  *response = *std::move(r);
  return grpc::Status::OK;
}

grpc::Status WorkerService::UnloadPlan(grpc::ServerContext*, const v1::UnloadPlanRequest* request,
                                       v1::UnloadPlanResponse* response) {
  if (core() == nullptr) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "worker is starting");
  *response = core()->UnloadPlan(*request);
  return grpc::Status::OK;
}

}  // namespace graphopt
