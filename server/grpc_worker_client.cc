#include "server/grpc_worker_client.h"

#include <utility>

#include "grpcpp/grpcpp.h"
#include "proto/worker.grpc.pb.h"
#include "util/log_format.h"

namespace graphopt {
namespace {

// Trailing metadata of a worker's answers (worker/worker_service.h): present when the worker
// itself sent the status, absent when the call failed on the way (connection lost, our own
// deadline); present when its queue was full; present when an execution went over the memory
// cap of the request itself.
constexpr char kOriginKey[] = "graphopt-origin";
constexpr char kBusyKey[] = "graphopt-busy";
constexpr char kCallersLimitKey[] = "graphopt-callers-limit";

class GrpcWorkerCall final : public WorkerCall {
 public:
  explicit GrpcWorkerCall(absl::Time deadline) {
    context_.set_deadline(absl::ToChronoTime(deadline));
  }
  void Cancel() override { context_.TryCancel(); }
  grpc::ClientContext* context() { return &context_; }

 private:
  grpc::ClientContext context_;
};

// The trace id of the request this thread serves (util/log_format.h), passed on so that the
// worker's log lines for the call carry it too.
void AddTraceId(grpc::ClientContext* context) {
  const LogContext* log_context = CurrentLogContext();
  if (log_context != nullptr && !log_context->trace_id.empty()) {
    context->AddMetadata(kTraceIdMetadataKey, log_context->trace_id);
  }
}

WorkerCallResult Result(const grpc::ClientContext& context, const grpc::Status& s) {
  WorkerCallResult r;
  if (s.ok()) return r;
  r.status = absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  const auto& trailers = context.GetServerTrailingMetadata();
  r.answered = trailers.count(kOriginKey) > 0;
  r.busy = trailers.count(kBusyKey) > 0;
  r.callers_limit = trailers.count(kCallersLimitKey) > 0;
  const std::string& m = s.error_message();
  r.never_connected = m.find("failed to connect") != std::string::npos ||
                      m.find("Connection refused") != std::string::npos;
  return r;
}

class GrpcWorkerClient final : public WorkerClient {
 public:
  GrpcWorkerClient(const std::string& address, const GrpcWorkerClientOptions& options) {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(options.max_message_bytes);
    args.SetMaxSendMessageSize(options.max_message_bytes);
    // A worker that comes back is reconnected to within a second.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // Workers are called at their pod address; their certificates name their role instead.
    if (!options.tls_name.empty()) args.SetSslTargetNameOverride(options.tls_name);
    stub_ = v1::Worker::NewStub(grpc::CreateCustomChannel(
        address,
        options.credentials != nullptr ? options.credentials : grpc::InsecureChannelCredentials(),
        args));
  }

  std::unique_ptr<WorkerCall> NewCall(absl::Time deadline) override {
    return std::make_unique<GrpcWorkerCall>(deadline);
  }

  WorkerCallResult LoadPlan(WorkerCall& call, const v1::LoadPlanRequest& request,
                            v1::LoadPlanResponse* response) override {
    grpc::ClientContext* context = static_cast<GrpcWorkerCall&>(call).context();
    AddTraceId(context);
    return Result(*context, stub_->LoadPlan(context, request, response));
  }

  WorkerCallResult Execute(WorkerCall& call, const v1::ExecuteRequest& request,
                           v1::ExecuteResponse* response) override {
    grpc::ClientContext* context = static_cast<GrpcWorkerCall&>(call).context();
    AddTraceId(context);
    return Result(*context, stub_->Execute(context, request, response));
  }

  WorkerCallResult FetchState(WorkerCall& call, const v1::FetchStateRequest& request,
                              v1::FetchStateResponse* response) override {
    grpc::ClientContext* context = static_cast<GrpcWorkerCall&>(call).context();
    AddTraceId(context);
    return Result(*context, stub_->FetchState(context, request, response));
  }

  WorkerCallResult UnloadPlan(WorkerCall& call, const v1::UnloadPlanRequest& request,
                              v1::UnloadPlanResponse* response) override {
    grpc::ClientContext* context = static_cast<GrpcWorkerCall&>(call).context();
    AddTraceId(context);
    return Result(*context, stub_->UnloadPlan(context, request, response));
  }

  void Describe(WorkerCall& call, const v1::DescribeRequest& request,
                v1::DescribeResponse* response,
                std::function<void(WorkerCallResult)> done) override {
    grpc::ClientContext* context = static_cast<GrpcWorkerCall&>(call).context();
    stub_->async()->Describe(
        context, &request, response,
        [context, done = std::move(done)](grpc::Status status) { done(Result(*context, status)); });
  }

 private:
  std::unique_ptr<v1::Worker::Stub> stub_;
};

}  // namespace

std::unique_ptr<WorkerClient> NewGrpcWorkerClient(const std::string& address,
                                                  const GrpcWorkerClientOptions& options) {
  return std::make_unique<GrpcWorkerClient>(address, options);
}

WorkerClientFactory GrpcWorkerClientFactory(GrpcWorkerClientOptions options) {
  return [options = std::move(options)](const std::string& address) {
    return NewGrpcWorkerClient(address, options);
  };
}

}  // namespace graphopt
