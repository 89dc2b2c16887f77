#include "worker/worker_service.h"

#include <unistd.h>

#include <chrono>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/proto_convert.h"
#include "graph/proto_util.h"
#include "server/grpc_status.h"
#include "runtime/memory_budget.h"
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

absl::StatusOr<v1::ExecuteResponse> WorkerCore::Execute(const v1::ExecuteRequest& request,
                                                        const StopToken* stop,
                                                        int64_t* peak_bytes) {
  const auto start = std::chrono::steady_clock::now();
  if (request.memory_limit_bytes() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_limit_bytes: negative (", request.memory_limit_bytes(), ")"));
  }
  std::shared_ptr<const LoadedPlan> plan = cache_.Find(request.plan_id());
  if (plan == nullptr) {
    return absl::NotFoundError(absl::StrCat("plan '", request.plan_id(),
                                            "' is not loaded on worker ", options_.worker_id,
                                            " (never loaded, or evicted): load it again"));
  }
  const int64_t limit = request.memory_limit_bytes() > 0
                            ? std::min(request.memory_limit_bytes(), options_.execution_memory_bytes)
                            : options_.execution_memory_bytes;
  auto budget = std::make_shared<runtime::MemoryBudget>(limit);
  std::vector<std::pair<std::string, runtime::Tensor>> inputs;
  inputs.reserve(request.inputs_size());
  for (const v1::NamedTensor& in : request.inputs()) {
    absl::StatusOr<runtime::Tensor> t =
        runtime::Tensor::FromProto(in.tensor(), absl::StrCat("input '", in.name(), "'"));
    if (!t.ok()) return t.status();
    inputs.emplace_back(in.name(), *std::move(t));
  }
  executing_.fetch_add(1);
  runtime::RunOptions run;
  run.profile = request.profile();
  run.stop = stop;
  run.memory = budget;
  absl::StatusOr<runtime::RunResult> result = plan->executor->Run(inputs, run);
  executing_.fetch_sub(1);
  executed_.fetch_add(1);
  if (peak_bytes != nullptr) *peak_bytes = budget->peak();
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
  response.set_execution_memory_bytes(options_.execution_memory_bytes);
  response.set_max_execution_ms(absl::ToInt64Milliseconds(options_.max_execution));
  return response;
}

WorkerService::WorkerService(WorkerCore* core, RpcEnvironment* env, WorkerQueues queues)
    : core_(core), env_(env), queues_(queues) {
  if (queues_.execute == nullptr) {
    owned_execute_ = std::make_unique<WorkQueue>(WorkQueue::Options{"execute", 4, 16});
    queues_.execute = owned_execute_.get();
  }
  if (queues_.load == nullptr) {
    owned_load_ = std::make_unique<WorkQueue>(WorkQueue::Options{"load", 1, 16});
    queues_.load = owned_load_.get();
  }
  describe_policy_ = {"Describe", Access::kClusterPeer, nullptr, false, /*quiet=*/true};
  load_policy_ = {"LoadPlan", Access::kClusterPeer, queues_.load, false};
  execute_policy_ = {"Execute", Access::kClusterPeer, queues_.execute, false};
  unload_policy_ = {"UnloadPlan", Access::kClusterPeer, nullptr, false};
}

WorkerService::WorkerService(WorkerCore* core, std::shared_ptr<spdlog::logger> logger)
    : WorkerService(core, nullptr, WorkerQueues()) {
  owned_env_ = std::make_unique<RpcEnvironment>(InsecureHeaderAuthenticator, nullptr,
                                                std::move(logger), absl::InfiniteDuration());
  owned_env_->set_answer_trailers({{kOriginKey, kOriginWorker}});
  env_ = owned_env_.get();
}

WorkerService::~WorkerService() {
  for (WorkQueue* q : {owned_execute_.get(), owned_load_.get()}) {
    if (q != nullptr) q->Shutdown();
  }
  owned_execute_.reset();
  owned_load_.reset();
}

namespace {
constexpr char kStarting[] = "worker is starting";
}  // namespace

grpc::ServerUnaryReactor* WorkerService::Describe(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* in,
                                                  grpc::ByteBuffer* out) {
  return ServeRaw<v1::DescribeRequest, v1::DescribeResponse>(
      *env_, context, describe_policy_, in, out,
      [this](CallState&, v1::DescribeRequest&, v1::DescribeResponse& response) {
        WorkerCore* c = core();
        if (c == nullptr) return absl::UnavailableError(kStarting);
        response = c->Describe();
        const WorkQueue::Stats execute = queues_.execute->stats();
        response.set_max_concurrent_executions(execute.threads);
        response.set_queued(execute.queued);
        response.set_queue_capacity(execute.capacity);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* WorkerService::LoadPlan(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* in,
                                                  grpc::ByteBuffer* out) {
  return ServeRaw<v1::LoadPlanRequest, v1::LoadPlanResponse>(
      *env_, context, load_policy_, in, out,
      [this](CallState& call, v1::LoadPlanRequest& request, v1::LoadPlanResponse& response) {
        WorkerCore* c = core();
        if (c == nullptr) return absl::UnavailableError(kStarting);
        if (absl::Status s = call.stop().Check("LoadPlan"); !s.ok()) return s;
        // The graph is moved in, its weights not copied.
        absl::StatusOr<v1::LoadPlanResponse> r = c->LoadPlan(std::move(request));
        if (!r.ok()) return r.status();
        call.log_fields() = absl::StrCat("plan=", r->plan_id(), " ",
                                         r->already_loaded() ? "already_loaded" : "loaded",
                                         " bytes=", r->plan_bytes());
        response = *std::move(r);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* WorkerService::Execute(grpc::CallbackServerContext* context,
                                                 const grpc::ByteBuffer* in,
                                                 grpc::ByteBuffer* out) {
  return ServeRaw<v1::ExecuteRequest, v1::ExecuteResponse>(
      *env_, context, execute_policy_, in, out,
      [this](CallState& call, v1::ExecuteRequest& request, v1::ExecuteResponse& response) {
        WorkerCore* c = core();
        if (c == nullptr) return absl::UnavailableError(kStarting);
        call.set_request_id(request.request_id());
        call.stop().TightenDeadline(absl::Now() + c->options().max_execution);
        int64_t peak = 0;
        absl::StatusOr<v1::ExecuteResponse> r = c->Execute(request, &call.stop(), &peak);
        call.log_fields() = absl::StrCat(
            "plan=", request.plan_id().substr(0, 80), " request_id='",
            absl::CHexEscape(request.request_id().substr(0, 80)), "' peak_mib=",
            absl::StrFormat("%.1f", static_cast<double>(peak) / (1 << 20)));
        if (!r.ok()) {
          if (r.status().code() == absl::StatusCode::kResourceExhausted &&
              request.memory_limit_bytes() > 0 &&
              request.memory_limit_bytes() <= c->options().execution_memory_bytes) {
            call.AddTrailer(kCallersLimitKey, "memory_limit_bytes");
          }
          return r.status();
        }
        response = *std::move(r);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* WorkerService::UnloadPlan(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* in,
                                                    grpc::ByteBuffer* out) {
  return ServeRaw<v1::UnloadPlanRequest, v1::UnloadPlanResponse>(
      *env_, context, unload_policy_, in, out,
      [this](CallState&, v1::UnloadPlanRequest& request, v1::UnloadPlanResponse& response) {
        WorkerCore* c = core();
        if (c == nullptr) return absl::UnavailableError(kStarting);
        response = c->UnloadPlan(request);
        return absl::OkStatus();
      });
}

}  // namespace graphopt
