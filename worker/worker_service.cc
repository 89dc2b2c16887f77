#include "worker/worker_service.h"

#include <unistd.h>

#include <chrono>

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/proto_convert.h"
#include "graph/proto_util.h"
#include "graph/verifier.h"
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
  const std::string session = request.session();
  v1::LoadPlanResponse response;
  response.set_plan_id(id);
  std::shared_ptr<const LoadedPlan> plan = cache_.Find(id);
  if (plan == nullptr) {
    absl::StatusOr<std::shared_ptr<const LoadedPlan>> built = BuildPlan(id, std::move(request));
    if (!built.ok()) return built.status();
    plan = *std::move(built);
  } else {
    response.set_already_loaded(true);
  }
  response.set_plan_bytes(plan->bytes);
  if (!plan->stateful() && !session.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "plan ", id, " has no state updates: it is loaded without a session"));
  }
  if (plan->stateful()) {
    if (session.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan ", id, " has state updates (", plan->state.size(),
                       " state tensors): load it with a session"));
    }
    bool session_loaded = false;
    absl::StatusOr<std::shared_ptr<PlanSession>> s = LoadSession(plan, session, &session_loaded);
    if (!s.ok()) return s.status();
    absl::MutexLock lock(&(*s)->mu);
    response.set_already_loaded(session_loaded);
    response.set_state_bytes((*s)->bytes);
    response.set_state_version((*s)->version);
  }
  return response;
}

absl::StatusOr<std::shared_ptr<const LoadedPlan>> WorkerCore::BuildPlan(
    const std::string& id, v1::LoadPlanRequest request) {
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
  if (absl::Status s = VerifyStateUpdates(*graph); !s.ok()) return s;
  auto plan = std::make_shared<LoadedPlan>();
  plan->id = id;
  plan->bytes = bytes;
  absl::flat_hash_map<std::string, int> output_index;
  for (ValueId v : graph->outputs()) {
    output_index.emplace(graph->value(v).name, static_cast<int>(plan->output_names.size()));
    plan->output_names.push_back(graph->value(v).name);
  }
  plan->is_state_update.assign(plan->output_names.size(), false);
  for (const v1::StateUpdate& u : graph->state_updates) {
    const int index = output_index.at(u.update());  // VerifyStateUpdates: a graph output
    plan->state.push_back(StateSlot{u.state(), index});
    plan->is_state_update[index] = true;
    // VerifyStateUpdates: the state is an initializer.
    const v1::Tensor* init = graph->initializer_of(graph->FindValue(u.state()));
    absl::StatusOr<runtime::Tensor> t =
        runtime::Tensor::FromProto(*init, absl::StrCat("state '", u.state(), "'"));
    if (!t.ok()) return t.status();
    plan->bytes += static_cast<int64_t>(t->byte_size());
    plan->initial_state.push_back(*std::move(t));
  }
  runtime::ExecutorOptions executor_options;
  executor_options.num_threads = options_.threads;
  absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::Create(*std::move(graph), *kernels_, executor_options);
  if (!executor.ok()) return executor.status();
  plan->executor = *std::move(executor);
  bool already = false;
  return cache_.Insert(std::move(plan), &already);
}

absl::StatusOr<std::shared_ptr<PlanSession>> WorkerCore::LoadSession(
    std::shared_ptr<const LoadedPlan> plan, const std::string& name, bool* already_loaded) {
  *already_loaded = false;
  if (std::shared_ptr<PlanSession> s = cache_.FindSession(plan->id, name)) {
    *already_loaded = true;
    return s;
  }
  auto session = std::make_shared<PlanSession>();
  session->name = name;
  for (const runtime::Tensor& t : plan->initial_state) {
    session->bytes += static_cast<int64_t>(t.byte_size());
  }
  {
    absl::MutexLock lock(&session->mu);
    session->state = plan->initial_state;
  }
  session->plan = std::move(plan);
  return cache_.InsertSession(std::move(session), already_loaded);
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
  std::shared_ptr<PlanSession> session;
  if (plan->stateful() != !request.session().empty()) {
    return absl::InvalidArgumentError(
        plan->stateful()
            ? absl::StrCat("plan '", request.plan_id(), "' is stateful: execute it in a session")
            : absl::StrCat("plan '", request.plan_id(), "' has no state: it takes no session"));
  }
  if (plan->stateful()) {
    session = cache_.FindSession(request.plan_id(), request.session());
    if (session == nullptr) {
      return absl::NotFoundError(absl::StrCat("session '", request.session(), "' of plan '",
                                              request.plan_id(), "' is not loaded on worker ",
                                              options_.worker_id));
    }
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
  // A session's executions run one at a time, each from the state the previous one left.
  std::optional<absl::MutexLock> session_turn;
  if (session != nullptr) {
    absl::flat_hash_set<absl::string_view> state_names;
    for (const StateSlot& slot : plan->state) state_names.insert(slot.name);
    for (const auto& [name, t] : inputs) {
      if (state_names.contains(name)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input '", name, "' is state of session '", session->name, "': it is not fed"));
      }
    }
    session_turn.emplace(&session->run_mu);
    absl::MutexLock lock(&session->mu);
    for (size_t i = 0; i < plan->state.size(); ++i) {
      inputs.emplace_back(plan->state[i].name, session->state[i]);
    }
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
  if (session != nullptr) {
    absl::StatusOr<int64_t> version = ApplyState(*plan, *session, result->outputs);
    if (!version.ok()) return version.status();
    response.set_state_version(*version);
  }
  for (size_t i = 0; i < result->outputs.size(); ++i) {
    if (plan->is_state_update[i]) continue;
    if (!result->outputs[i].is_tensor()) {
      // The wire carries tensors only (v1::Tensor).
      return absl::UnimplementedError(absl::StrCat(
          "output '", plan->output_names[i], "' is ", result->outputs[i].DebugString(),
          ": a worker returns tensors only"));
    }
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

absl::StatusOr<int64_t> WorkerCore::ApplyState(const LoadedPlan& plan, PlanSession& session,
                                               std::vector<runtime::Tensor>& outputs) {
  // Every update is checked before any is applied: the state changes whole or not at all.
  absl::MutexLock lock(&session.mu);
  for (size_t i = 0; i < plan.state.size(); ++i) {
    const runtime::Tensor& old = session.state[i];
    const runtime::Tensor& update = outputs[plan.state[i].output_index];
    if (update.dtype() != old.dtype() || update.shape() != old.shape()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state '", plan.state[i].name, "' is ", old.DebugString(), " but its update '",
          plan.output_names[plan.state[i].output_index], "' is ", update.DebugString(),
          "; the state was left unchanged"));
    }
  }
  for (size_t i = 0; i < plan.state.size(); ++i) {
    session.state[i] = std::move(outputs[plan.state[i].output_index]);
  }
  return ++session.version;
}

absl::StatusOr<v1::FetchStateResponse> WorkerCore::FetchState(
    const v1::FetchStateRequest& request) {
  std::shared_ptr<PlanSession> session = cache_.FindSession(request.plan_id(), request.session());
  if (session == nullptr) {
    return absl::NotFoundError(absl::StrCat("session '", request.session(), "' of plan '",
                                            request.plan_id(), "' is not loaded on worker ",
                                            options_.worker_id));
  }
  const LoadedPlan& plan = *session->plan;
  std::vector<int> wanted;
  if (request.names().empty()) {
    for (size_t i = 0; i < plan.state.size(); ++i) wanted.push_back(static_cast<int>(i));
  } else {
    absl::flat_hash_map<absl::string_view, int> index;
    for (size_t i = 0; i < plan.state.size(); ++i) index.emplace(plan.state[i].name, i);
    for (const std::string& name : request.names()) {
      auto it = index.find(name);
      if (it == index.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", name, "' is not state of plan '", request.plan_id(), "'"));
      }
      wanted.push_back(it->second);
    }
  }
  // The tensors are shared, not copied, under the lock; encoded after it.
  std::vector<runtime::Tensor> tensors;
  v1::FetchStateResponse response;
  {
    std::optional<absl::MutexLock> turn;
    if (request.wait_for_running()) turn.emplace(&session->run_mu);
    absl::MutexLock lock(&session->mu);
    for (int i : wanted) tensors.push_back(session->state[i]);
    response.set_state_version(session->version);
  }
  for (size_t k = 0; k < wanted.size(); ++k) {
    v1::NamedTensor* out = response.add_state();
    out->set_name(plan.state[wanted[k]].name);
    tensors[k].ToProto(out->mutable_tensor());
  }
  return response;
}

v1::UnloadPlanResponse WorkerCore::UnloadPlan(const v1::UnloadPlanRequest& request) {
  v1::UnloadPlanResponse response;
  response.set_unloaded(request.session().empty()
                            ? cache_.Remove(request.plan_id())
                            : cache_.RemoveSession(request.plan_id(), request.session()));
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
  response.set_sessions(stats.sessions);
  response.set_session_bytes(stats.session_bytes);
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
  fetch_state_policy_ = {"FetchState", Access::kClusterPeer, queues_.load, false};
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

grpc::ServerUnaryReactor* WorkerService::FetchState(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* in,
                                                    grpc::ByteBuffer* out) {
  return ServeRaw<v1::FetchStateRequest, v1::FetchStateResponse>(
      *env_, context, fetch_state_policy_, in, out,
      [this](CallState& call, v1::FetchStateRequest& request, v1::FetchStateResponse& response) {
        WorkerCore* c = core();
        if (c == nullptr) return absl::UnavailableError(kStarting);
        absl::StatusOr<v1::FetchStateResponse> r = c->FetchState(request);
        call.log_fields() = absl::StrCat("plan=", request.plan_id().substr(0, 80), " session='",
                                         absl::CHexEscape(request.session().substr(0, 80)), "'");
        if (!r.ok()) return r.status();
        response = *std::move(r);
        return absl::OkStatus();
      });
}

}  // namespace graphopt
