// The graphopt.v1.Coordinator gRPC service end to end in one process: a server serving
// CoordinatorService over a Coordinator with the builtin optimizer, a worker serving
// WorkerService over the CPU kernels, real channels between them. Checks the status codes and
// messages a caller sees for bad requests (the server answering on after each), a Run optimized
// and executed on the worker, registration and the listing.

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "ops/builtin_ops.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "passes/builtin_passes.h"
#include "proto/coordinator.grpc.pb.h"
#include "runtime/kernels/cpu_kernels.h"
#include "server/coordinator_service.h"
#include "server/grpc_worker_client.h"
#include "service/coordinator.h"
#include "service/optimizer.h"
#include "service/tenant.h"
#include "spdlog/sinks/null_sink.h"
#include "worker/worker_service.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

constexpr char kPlan[] = R"pb(
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "a" }
  nodes { name: "relu" op_type: "Relu" inputs: "a" outputs: "y" }
  outputs { name: "y" }
)pb";

std::shared_ptr<spdlog::logger> NullLogger() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

class CoordinatorServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    ASSERT_TRUE(runtime::RegisterCpuKernels(kernels_).ok());
    optimizer_ = std::make_unique<Optimizer>(&ops_, &passes_);
    CoordinatorOptions options;
    options.probe_interval = absl::Milliseconds(50);
    coordinator_ = std::make_unique<Coordinator>(options, GrpcWorkerClientFactory({}),
                                                 optimizer_.get(), nullptr, NullLogger());
    service_ = std::make_unique<CoordinatorService>(coordinator_.get(), NullLogger());
    server_ = Serve(service_.get(), &address_);
    stub_ = v1::Coordinator::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    for (auto* s : {server_.get(), worker_server_.get()}) {
      if (s != nullptr) s->Shutdown(std::chrono::system_clock::now());
    }
  }

  static std::unique_ptr<grpc::Server> Serve(grpc::Service* service, std::string* address) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    *address = absl::StrCat("127.0.0.1:", port);
    return server;
  }

  // A real worker, registered with the coordinator and probed.
  void StartWorker() {
    WorkerOptions options;
    options.worker_id = "w1";
    worker_core_ = std::make_unique<WorkerCore>(&kernels_, options);
    worker_service_ = std::make_unique<WorkerService>(worker_core_.get(), NullLogger());
    worker_server_ = Serve(worker_service_.get(), &worker_address_);
    v1::RegisterWorkerRequest request;
    request.set_address(worker_address_);
    request.set_worker_id("w1");
    v1::RegisterWorkerResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->RegisterWorker(&context, request, &response).ok());
    EXPECT_GT(response.heartbeat_interval_ms(), 0);
    coordinator_->ProbeNow();
  }

  static v1::RunRequest Request(const std::vector<float>& x) {
    v1::RunRequest r;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kPlan, r.mutable_graph()));
    v1::NamedTensor* in = r.add_inputs();
    in->set_name("x");
    in->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
    in->mutable_tensor()->add_dims(static_cast<int64_t>(x.size()));
    in->mutable_tensor()->set_raw_data(
        std::string(reinterpret_cast<const char*>(x.data()), x.size() * sizeof(float)));
    return r;
  }

  grpc::Status Run(const v1::RunRequest& request, v1::RunResponse* response,
                   const std::string& tenant = "") {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!tenant.empty()) context.AddMetadata(kTenantMetadataKey, tenant);
    return stub_->Run(&context, request, response);
  }

  OpRegistry ops_;
  PassRegistry passes_;
  runtime::KernelRegistry kernels_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<v1::Coordinator::Stub> stub_;
  std::unique_ptr<WorkerCore> worker_core_;
  std::unique_ptr<WorkerService> worker_service_;
  std::unique_ptr<grpc::Server> worker_server_;
  std::string worker_address_;
};

TEST_F(CoordinatorServiceTest, RunsOnTheWorkerOptimizedFirst) {
  StartWorker();
  v1::RunRequest request = Request({-1.0f, 0.5f, 2.0f});
  request.mutable_optimize()->set_opt_level(1);
  request.set_profile(true);
  v1::RunResponse response;
  grpc::Status s = Run(request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.worker_id(), "w1");
  EXPECT_EQ(response.worker_address(), worker_address_);
  EXPECT_GT(response.reports_size(), 0);
  // The optimized plan has the Relu alone.
  ASSERT_EQ(response.timings_size(), 1);
  EXPECT_EQ(response.timings(0).op_type(), "Relu");
  ASSERT_EQ(response.outputs_size(), 1);
  EXPECT_EQ(response.outputs(0).name(), "y");
  float y[3];
  ASSERT_EQ(response.outputs(0).tensor().raw_data().size(), sizeof(y));
  std::memcpy(y, response.outputs(0).tensor().raw_data().data(), sizeof(y));
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.5f);
  EXPECT_EQ(y[2], 2.0f);

  v1::ListWorkersResponse list;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ListWorkers(&context, v1::ListWorkersRequest(), &list).ok());
  ASSERT_EQ(list.workers_size(), 1);
  EXPECT_EQ(list.workers(0).health(), "up");
  EXPECT_EQ(list.workers(0).source(), "registered");
  EXPECT_EQ(list.workers(0).dispatched(), 1);
  EXPECT_GT(list.workers(0).supported_ops(), 100);
}

TEST_F(CoordinatorServiceTest, BadRequestsGetTheRightCodeAndTheServerGoesOn) {
  StartWorker();
  struct Case {
    v1::RunRequest request;
    std::string tenant;
    grpc::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({v1::RunRequest(), "", grpc::StatusCode::INVALID_ARGUMENT, "graph: missing"});
  v1::RunRequest r = Request({1, 2, 3});
  r.mutable_inputs(0)->set_name("");
  cases.push_back({r, "", grpc::StatusCode::INVALID_ARGUMENT, "inputs[0].name: empty"});
  r = Request({1, 2, 3});
  r.set_request_id(std::string(257, 'r'));
  cases.push_back({r, "", grpc::StatusCode::INVALID_ARGUMENT, "request_id: 257 bytes"});
  r = Request({1, 2});  // the plan wants 3 elements
  cases.push_back({r, "", grpc::StatusCode::INVALID_ARGUMENT, "'x'"});
  r = Request({1, 2, 3});
  r.mutable_inputs(0)->set_name("nope");
  cases.push_back({r, "", grpc::StatusCode::INVALID_ARGUMENT, "nope"});
  r = Request({1, 2, 3});
  r.mutable_graph()->mutable_nodes(1)->set_op_type("NoSuchOp");
  cases.push_back({r, "", grpc::StatusCode::UNIMPLEMENTED, "op '::NoSuchOp' (node 'relu')"});
  r = Request({1, 2, 3});
  r.mutable_optimize()->set_opt_level(7);
  cases.push_back({r, "", grpc::StatusCode::INVALID_ARGUMENT, "optimize: "});
  r = Request({1, 2, 3});
  r.mutable_graph()->mutable_initializers()->Add()->set_name("w");
  r.mutable_graph()->mutable_initializers(0)->set_blob("sha256:bad");
  cases.push_back({r, "", grpc::StatusCode::INVALID_ARGUMENT, "initializer 'w'"});
  cases.push_back({Request({1, 2, 3}), "Not A Tenant!", grpc::StatusCode::INVALID_ARGUMENT,
                   "tenant"});
  for (const Case& c : cases) {
    v1::RunResponse response;
    grpc::Status s = Run(c.request, &response, c.tenant);
    EXPECT_EQ(s.error_code(), c.code) << c.message << ": " << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.message));
    // Still serving.
    s = Run(Request({1, 2, 3}), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
  }

  v1::RegisterWorkerRequest bad;
  bad.set_address("no-port");
  v1::RegisterWorkerResponse registered;
  grpc::ClientContext context;
  grpc::Status s = stub_->RegisterWorker(&context, bad, &registered);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s.error_message(), HasSubstr("address: 'no-port' is not host:port"));
}

TEST_F(CoordinatorServiceTest, UnavailableNamingThePlanWithoutWorkers) {
  v1::RunResponse response;
  grpc::Status s = Run(Request({1, 2, 3}), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("plan sha256:"));
  StartWorker();
  worker_server_->Shutdown(std::chrono::system_clock::now());
  s = Run(Request({1, 2, 3}), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(s.error_message(), HasSubstr("plan sha256:"));
  EXPECT_THAT(s.error_message(), HasSubstr(worker_address_));
}

}  // namespace
}  // namespace graphopt
