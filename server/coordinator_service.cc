#include "server/coordinator_service.h"

#include <string>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace graphopt {

CoordinatorService::CoordinatorService(Coordinator* coordinator, RpcEnvironment* env,
                                       WorkQueue* run_queue)
    : coordinator_(coordinator), env_(env) {
  if (run_queue == nullptr) {
    owned_run_queue_ = std::make_unique<WorkQueue>(WorkQueue::Options{"run", 16, 64});
    run_queue = owned_run_queue_.get();
  }
  run_policy_ = {"Run", Access::kTenant, run_queue, true};
  register_policy_ = {"RegisterWorker", Access::kClusterPeer, nullptr, false, /*quiet=*/true};
  list_policy_ = {"ListWorkers", Access::kAdmin, nullptr, false};
  fetch_state_policy_ = {"FetchState", Access::kTenant, run_queue, true};
  end_session_policy_ = {"EndSession", Access::kTenant, run_queue, false};
}

CoordinatorService::CoordinatorService(Coordinator* coordinator,
                                       std::shared_ptr<spdlog::logger> logger)
    : CoordinatorService(coordinator, nullptr, nullptr) {
  owned_env_ = std::make_unique<RpcEnvironment>(InsecureHeaderAuthenticator, nullptr,
                                                std::move(logger), absl::InfiniteDuration());
  env_ = owned_env_.get();
}

CoordinatorService::~CoordinatorService() {
  if (owned_run_queue_ != nullptr) owned_run_queue_->Shutdown();
  owned_run_queue_.reset();
}

grpc::ServerUnaryReactor* CoordinatorService::Run(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* in,
                                                  grpc::ByteBuffer* out) {
  return ServeRaw<v1::RunRequest, v1::RunResponse>(
      *env_, context, run_policy_, in, out,
      [this](CallState& call, v1::RunRequest& request, v1::RunResponse& response) {
        call.set_request_id(request.request_id());
        // Quoted and cut: the id is the caller's text.
        const std::string id = absl::CHexEscape(request.request_id().substr(0, 80));
        const std::string request_session = absl::CHexEscape(request.session().substr(0, 80));
        // The graph and inputs are moved, not copied.
        absl::StatusOr<v1::RunResponse> result =
            coordinator_->Run(std::move(request), call.tenant(), &call.stop());
        if (!result.ok()) {
          call.log_fields() = absl::StrCat("request_id='", id, "'");
          return result.status();
        }
        call.log_fields() = absl::StrCat(
            "request_id='", id, "'",
            request_session.empty() ? "" : absl::StrCat(" session='", request_session, "'"),
            " plan=", result->plan_id(), " worker=",
            result->worker_address(), " (", result->worker_id(), ") attempts=",
            result->attempts(), " loaded=", result->loaded_plan() ? "true" : "false",
            " replayed=", result->replayed() ? "true" : "false");
        response = *std::move(result);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* CoordinatorService::RegisterWorker(grpc::CallbackServerContext* context,
                                                             const grpc::ByteBuffer* in,
                                                             grpc::ByteBuffer* out) {
  return ServeRaw<v1::RegisterWorkerRequest, v1::RegisterWorkerResponse>(
      *env_, context, register_policy_, in, out,
      [this](CallState& call, v1::RegisterWorkerRequest& request,
             v1::RegisterWorkerResponse& response) {
        call.log_fields() =
            absl::StrCat("address='", absl::CHexEscape(request.address().substr(0, 100)),
                         "' worker_id='", absl::CHexEscape(request.worker_id().substr(0, 100)),
                         "'");
        if (absl::Status s = coordinator_->Register(request, call.caller().credential);
            !s.ok()) {
          return s;
        }
        response.set_heartbeat_interval_ms(
            absl::ToInt64Milliseconds(coordinator_->options().heartbeat_interval));
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* CoordinatorService::ListWorkers(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* in,
                                                          grpc::ByteBuffer* out) {
  return ServeRaw<v1::ListWorkersRequest, v1::ListWorkersResponse>(
      *env_, context, list_policy_, in, out,
      [this](CallState& call, v1::ListWorkersRequest&, v1::ListWorkersResponse& response) {
        response = coordinator_->ListWorkers();
        call.log_fields() = absl::StrCat("workers=", response.workers_size());
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* CoordinatorService::FetchState(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* in,
                                                         grpc::ByteBuffer* out) {
  return ServeRaw<v1::CoordinatorFetchStateRequest, v1::CoordinatorFetchStateResponse>(
      *env_, context, fetch_state_policy_, in, out,
      [this](CallState& call, v1::CoordinatorFetchStateRequest& request,
             v1::CoordinatorFetchStateResponse& response) {
        call.log_fields() =
            absl::StrCat("session='", absl::CHexEscape(request.session().substr(0, 80)), "'");
        absl::StatusOr<v1::CoordinatorFetchStateResponse> result =
            coordinator_->FetchState(request, call.tenant(), &call.stop());
        if (!result.ok()) return result.status();
        response = *std::move(result);
        return absl::OkStatus();
      });
}

grpc::ServerUnaryReactor* CoordinatorService::EndSession(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* in,
                                                         grpc::ByteBuffer* out) {
  return ServeRaw<v1::EndSessionRequest, v1::EndSessionResponse>(
      *env_, context, end_session_policy_, in, out,
      [this](CallState& call, v1::EndSessionRequest& request, v1::EndSessionResponse& response) {
        call.log_fields() =
            absl::StrCat("session='", absl::CHexEscape(request.session().substr(0, 80)), "'");
        absl::StatusOr<v1::EndSessionResponse> result =
            coordinator_->EndSession(request, call.tenant(), &call.stop());
        if (!result.ok()) return result.status();
        response = *std::move(result);
        return absl::OkStatus();
      });
}

}  // namespace graphopt
