// The RPC layer's metrics and log context end to end in one process: a CoordinatorService and
// a WorkerService, each with its own RpcEnvironment, metrics registry and JSON logger, joined
// by a real gRPC channel. A Run's trace id (the client's) appears in both logs, on the server's
// Run line and the worker's LoadPlan and Execute lines; calls are counted by method and code;
// a tenant over its rate is counted by quota.

#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "proto/coordinator.grpc.pb.h"
#include "runtime/kernels/cpu_kernels.h"
#include "server/coordinator_service.h"
#include "server/grpc_worker_client.h"
#include "server/rpc_call.h"
#include "server/work_queue.h"
#include "service/coordinator.h"
#include "service/optimizer.h"
#include "service/quota.h"
#include "service/tenant.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/sinks/ostream_sink.h"
#include "util/log_format.h"
#include "util/metrics.h"
#include "worker/worker_service.h"

namespace graphopt {
namespace {

constexpr char kPlan[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
  nodes { name: "relu" op_type: "Relu" inputs: "x" outputs: "y" }
  outputs { name: "y" }
)pb";

std::shared_ptr<spdlog::logger> JsonLogger(const std::string& name, std::ostringstream* out) {
  auto logger = std::make_shared<spdlog::logger>(
      name, std::make_shared<spdlog::sinks::ostream_sink_mt>(*out));
  ApplyLogFormat(*logger, LogFormat::kJson);
  return logger;
}

std::unique_ptr<grpc::Server> Serve(grpc::Service* service, std::string* address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  *address = absl::StrCat("127.0.0.1:", port);
  return server;
}

std::vector<std::string> LinesWith(const std::string& log, const std::string& needle) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, needle)) out.emplace_back(line);
  }
  return out;
}

class RpcMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    ASSERT_TRUE(runtime::RegisterCpuKernels(kernels_).ok());
    // The worker.
    worker_env_ = std::make_unique<RpcEnvironment>(InsecureHeaderAuthenticator, nullptr,
                                                   JsonLogger("worker", &worker_log_),
                                                   absl::InfiniteDuration());
    worker_env_->EnableMetrics(&worker_metrics_);
    WorkerOptions options;
    options.worker_id = "w1";
    worker_core_ = std::make_unique<WorkerCore>(&kernels_, options);
    worker_service_ = std::make_unique<WorkerService>(worker_core_.get(), worker_env_.get(),
                                                      WorkerQueues());
    worker_server_ = Serve(worker_service_.get(), &worker_address_);
    // The server, where tenant "greedy" may make one call.
    absl::StatusOr<QuotaTable> table =
        QuotaTable::Parse("greedy requests_per_s=0.001 burst=1\n", TenantQuota());
    ASSERT_TRUE(table.ok()) << table.status();
    quotas_ = std::make_unique<QuotaBook>(*std::move(table));
    limiter_ = std::make_unique<TenantLimiter>(quotas_.get());
    server_env_ = std::make_unique<RpcEnvironment>(InsecureHeaderAuthenticator, limiter_.get(),
                                                   JsonLogger("server", &server_log_),
                                                   absl::InfiniteDuration());
    server_env_->EnableMetrics(&server_metrics_);
    optimizer_ = std::make_unique<Optimizer>(&ops_, &passes_);
    coordinator_ = std::make_unique<Coordinator>(CoordinatorOptions(),
                                                 GrpcWorkerClientFactory({}), optimizer_.get(),
                                                 nullptr, JsonLogger("server", &server_log_));
    ASSERT_TRUE(coordinator_->AddWorker(worker_address_, "flag").ok());
    coordinator_->Start();
    coordinator_->ProbeNow();
    service_ = std::make_unique<CoordinatorService>(coordinator_.get(), server_env_.get(),
                                                    &run_queue_);
    server_ = Serve(service_.get(), &address_);
    stub_ = v1::Coordinator::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    for (grpc::Server* s : {server_.get(), worker_server_.get()}) {
      s->Shutdown(std::chrono::system_clock::now());
    }
    run_queue_.Shutdown();
  }

  grpc::Status Run(const std::string& trace_id, const std::string& request_id) {
    v1::RunRequest request;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kPlan, request.mutable_graph()));
    request.set_request_id(request_id);
    v1::NamedTensor* in = request.add_inputs();
    in->set_name("x");
    in->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
    in->mutable_tensor()->add_dims(3);
    const float x[3] = {-1, 0, 1};
    in->mutable_tensor()->set_raw_data(std::string(reinterpret_cast<const char*>(x), sizeof(x)));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!trace_id.empty()) context.AddMetadata(kTraceIdMetadataKey, trace_id);
    v1::RunResponse response;
    return stub_->Run(&context, request, &response);
  }

  grpc::Status ListWorkers(const std::string& tenant) {
    grpc::ClientContext context;
    context.AddMetadata(kTenantMetadataKey, tenant);
    v1::ListWorkersResponse response;
    return stub_->ListWorkers(&context, v1::ListWorkersRequest(), &response);
  }

  OpRegistry ops_;
  PassRegistry passes_;
  runtime::KernelRegistry kernels_;
  std::ostringstream worker_log_, server_log_;
  MetricsRegistry worker_metrics_, server_metrics_;
  std::unique_ptr<RpcEnvironment> worker_env_, server_env_;
  std::unique_ptr<WorkerCore> worker_core_;
  std::unique_ptr<WorkerService> worker_service_;
  std::unique_ptr<grpc::Server> worker_server_;
  std::string worker_address_;
  std::unique_ptr<QuotaBook> quotas_;
  std::unique_ptr<TenantLimiter> limiter_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Coordinator> coordinator_;
  WorkQueue run_queue_{{"run", 2, 8}};
  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
};

TEST_F(RpcMetricsTest, TraceIdReachesTheWorkerAndCallsAreCounted) {
  ASSERT_TRUE(Run("trace-abc", "req-1").ok());
  const std::string server_log = server_log_.str();
  const std::string worker_log = worker_log_.str();
  const std::vector<std::string> runs = LinesWith(server_log, "\"msg\":\"Run ");
  ASSERT_EQ(runs.size(), 1u) << server_log;
  EXPECT_TRUE(absl::StrContains(runs[0], "\"trace_id\":\"trace-abc\",\"request_id\":\"req-1\""))
      << runs[0];
  const std::vector<std::string> traced = LinesWith(worker_log, "\"trace_id\":\"trace-abc\"");
  ASSERT_EQ(traced.size(), 2u) << worker_log;  // LoadPlan and Execute
  EXPECT_TRUE(absl::StrContains(traced[0], "\"msg\":\"LoadPlan ")) << traced[0];
  EXPECT_TRUE(absl::StrContains(traced[1], "\"msg\":\"Execute ")) << traced[1];
  EXPECT_TRUE(absl::StrContains(traced[1], "\"request_id\":\"req-1\"")) << traced[1];

  const std::string server_text = server_metrics_.Render();
  EXPECT_TRUE(absl::StrContains(server_text,
                                "graphopt_rpc_requests_total{method=\"Run\",code=\"OK\"} 1\n"))
      << server_text;
  EXPECT_TRUE(absl::StrContains(
      server_text, "graphopt_rpc_duration_seconds_count{method=\"Run\",code=\"OK\"} 1\n"));
  EXPECT_TRUE(absl::StrContains(server_text, "graphopt_rpc_in_flight{method=\"Run\"} 0\n"));
  const std::string worker_text = worker_metrics_.Render();
  EXPECT_TRUE(absl::StrContains(worker_text,
                                "graphopt_rpc_requests_total{method=\"Execute\",code=\"OK\"} 1\n"))
      << worker_text;
  EXPECT_TRUE(absl::StrContains(
      worker_text, "graphopt_rpc_requests_total{method=\"LoadPlan\",code=\"OK\"} 1\n"));
}

TEST_F(RpcMetricsTest, MadeUpOrInvalidTraceIdsAreReplaced) {
  ASSERT_TRUE(Run("", "a").ok());
  ASSERT_TRUE(Run("bad trace\"id", "b").ok());
  const std::vector<std::string> runs = LinesWith(server_log_.str(), "\"msg\":\"Run ");
  ASSERT_EQ(runs.size(), 2u);
  for (const std::string& line : runs) {
    EXPECT_FALSE(absl::StrContains(line, "bad trace")) << line;
    const size_t at = line.find("\"trace_id\":\"");
    ASSERT_NE(at, std::string::npos) << line;
    const std::string id = line.substr(at + 12, 32);
    EXPECT_TRUE(IsValidTraceId(id)) << line;
    // The worker's Execute got the same made-up id (the second Run finds the plan loaded).
    const std::vector<std::string> traced = LinesWith(worker_log_.str(), id);
    ASSERT_FALSE(traced.empty()) << id;
    EXPECT_TRUE(absl::StrContains(traced.back(), "\"msg\":\"Execute ")) << traced.back();
  }
}

TEST_F(RpcMetricsTest, QuotaRejectionsByTenantAndQuota) {
  EXPECT_TRUE(ListWorkers("greedy").ok());
  const grpc::Status refused = ListWorkers("greedy");
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(ListWorkers("modest").ok());
  const std::string text = server_metrics_.Render();
  EXPECT_TRUE(absl::StrContains(
      text, "graphopt_quota_rejections_total{tenant=\"greedy\",reason=\"requests_per_s\"} 1\n"))
      << text;
  EXPECT_TRUE(absl::StrContains(
      text, "graphopt_rpc_requests_total{method=\"ListWorkers\",code=\"RESOURCE_EXHAUSTED\"} 1\n"));
  EXPECT_FALSE(absl::StrContains(text, "tenant=\"modest\""));
}

}  // namespace
}  // namespace graphopt
