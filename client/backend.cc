#include "client/backend.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "grpcpp/grpcpp.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "proto/optimizer.grpc.pb.h"
#include "server/grpc_status.h"
#include "service/op_store.h"
#include "service/optimizer.h"

namespace graphopt {
namespace {

class EmbeddedBackend final : public OptimizerBackend {
 public:
  // Registers the builtins; INTERNAL if that fails.
  absl::Status Init() {
    if (absl::Status status = RegisterBuiltinOps(&ops_); !status.ok()) {
      return absl::InternalError(absl::StrCat("registering builtin ops: ", status.ToString()));
    }
    if (absl::Status status = RegisterBuiltinPasses(&passes_); !status.ok()) {
      return absl::InternalError(
          absl::StrCat("registering builtin passes: ", status.ToString()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<v1::OptimizeResponse> Optimize(v1::OptimizeRequest request) override {
    return optimizer_.Optimize(std::move(request));
  }
  absl::StatusOr<v1::ListPassesResponse> ListPasses() override {
    return optimizer_.ListPasses();
  }
  absl::StatusOr<v1::ListOpsResponse> ListOps(const v1::ListOpsRequest& request) override {
    return optimizer_.ListOps(request);
  }
  absl::StatusOr<v1::RegisterOpsResponse> RegisterOps(
      const v1::RegisterOpsRequest& request) override {
    return optimizer_.RegisterOps(request);
  }
  absl::StatusOr<v1::UnregisterOpsResponse> UnregisterOps(
      const v1::UnregisterOpsRequest& request) override {
    return optimizer_.UnregisterOps(request);
  }

  bool SupportsBlobs() const override { return false; }
  absl::StatusOr<UploadStats> UploadBlobs(absl::Span<const BlobRef>, UploadOptions) override {
    return absl::UnimplementedError("the embedded optimizer takes weights inline");
  }

 private:
  OpRegistry ops_;
  PassRegistry passes_;
  // Registered custom ops, in memory. Reads ops_, declared after it.
  OpStore op_store_{&ops_};
  // Reads op_store_ and passes_, declared after them.
  Optimizer optimizer_{&op_store_, &passes_};
};

class RemoteBackend final : public OptimizerBackend {
 public:
  RemoteBackend(std::shared_ptr<const ServerConnection> connection, absl::Duration timeout)
      : connection_(std::move(connection)),
        address_(connection_->address()),
        timeout_(timeout),
        stub_(v1::GraphOptimizer::NewStub(connection_->channel())) {}

  absl::StatusOr<v1::OptimizeResponse> Optimize(v1::OptimizeRequest request) override {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::OptimizeResponse response;
    grpc::Status status = stub_->Optimize(&context, request, &response);
    if (!status.ok()) return Error(status);
    return response;
  }

  absl::StatusOr<v1::ListPassesResponse> ListPasses() override {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::ListPassesResponse response;
    grpc::Status status = stub_->ListPasses(&context, v1::ListPassesRequest(), &response);
    if (!status.ok()) return Error(status);
    return response;
  }

  absl::StatusOr<v1::ListOpsResponse> ListOps(const v1::ListOpsRequest& request) override {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::ListOpsResponse response;
    grpc::Status status = stub_->ListOps(&context, request, &response);
    if (!status.ok()) return Error(status);
    return response;
  }

  absl::StatusOr<v1::RegisterOpsResponse> RegisterOps(
      const v1::RegisterOpsRequest& request) override {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::RegisterOpsResponse response;
    grpc::Status status = stub_->RegisterOps(&context, request, &response);
    if (!status.ok()) return Error(status);
    return response;
  }

  absl::StatusOr<v1::UnregisterOpsResponse> UnregisterOps(
      const v1::UnregisterOpsRequest& request) override {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::UnregisterOpsResponse response;
    grpc::Status status = stub_->UnregisterOps(&context, request, &response);
    if (!status.ok()) return Error(status);
    return response;
  }

  bool SupportsBlobs() const override { return true; }
  absl::StatusOr<UploadStats> UploadBlobs(absl::Span<const BlobRef> blobs,
                                          UploadOptions options) override {
    options.timeout = timeout_;
    options.context = absl::StrCat("server ", address_);
    options.metadata = connection_->call_metadata();
    return graphopt::UploadBlobs(*stub_, blobs, options);
  }

 private:
  // The deadline and the metadata (token, tenant) of every call.
  void SetDeadline(grpc::ClientContext& context) const {
    connection_->PrepareCall(&context, timeout_);
  }

  // Errors the optimizer reports (bad graph, unknown pass) pass through unchanged; transport
  // and server-side failures name the server.
  absl::Status Error(const grpc::Status& status) const {
    absl::Status converted = FromGrpcStatus(status);
    switch (converted.code()) {
      case absl::StatusCode::kInvalidArgument:
      case absl::StatusCode::kNotFound:
      case absl::StatusCode::kFailedPrecondition:
      case absl::StatusCode::kAlreadyExists:
        return converted;
      default:
        return absl::Status(converted.code(), absl::StrCat("server ", address_, ": ",
                                                           converted.message()));
    }
  }

  std::shared_ptr<const ServerConnection> connection_;
  std::string address_;
  absl::Duration timeout_;
  std::unique_ptr<v1::GraphOptimizer::Stub> stub_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OptimizerBackend>> CreateEmbeddedBackend() {
  auto backend = std::make_unique<EmbeddedBackend>();
  if (absl::Status status = backend->Init(); !status.ok()) return status;
  return backend;
}

std::unique_ptr<OptimizerBackend> CreateRemoteBackend(
    std::shared_ptr<const ServerConnection> connection, absl::Duration timeout) {
  return std::make_unique<RemoteBackend>(std::move(connection), timeout);
}

}  // namespace graphopt
