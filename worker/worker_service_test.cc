#include "worker/worker_service.h"

#include <memory>

#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "runtime/kernels/cpu_kernels.h"
#include "spdlog/sinks/null_sink.h"

namespace graphopt {
namespace {

v1::Graph ParseGraph(const std::string& text) {
  v1::Graph g;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &g));
  return g;
}

// y = Identity(x); w (an initializer) is a second output.
constexpr char kPlan[] = R"pb(
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "y" }
  nodes { name: "idw" op_type: "Identity" inputs: "w" outputs: "w_out" }
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
  initializers { name: "w" dtype: DT_INT64 dims: 1 raw_data: "\x05\0\0\0\0\0\0\0" }
  outputs { name: "y" }
  outputs { name: "w_out" }
)pb";

class WorkerServiceTest : public ::testing::Test {
 protected:
  void Start(int64_t cache_bytes) {
    ASSERT_TRUE(runtime::RegisterCpuKernels(kernels_).ok());
    WorkerOptions options;
    options.worker_id = "test-worker";
    options.plan_cache_bytes = cache_bytes;
    core_ = std::make_unique<WorkerCore>(&kernels_, options);
    service_ = std::make_unique<WorkerService>(
        core_.get(), std::make_shared<spdlog::logger>(
                         "w", std::make_shared<spdlog::sinks::null_sink_mt>()));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(port, 0);
    stub_ = v1::Worker::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (server_) server_->Shutdown();
  }

  grpc::Status Load(const v1::Graph& graph, v1::LoadPlanResponse* response) {
    grpc::ClientContext ctx;
    v1::LoadPlanRequest request;
    *request.mutable_graph() = graph;
    return stub_->LoadPlan(&ctx, request, response);
  }
  grpc::Status Execute(const v1::ExecuteRequest& request, v1::ExecuteResponse* response) {
    grpc::ClientContext ctx;
    return stub_->Execute(&ctx, request, response);
  }
  v1::ExecuteRequest GoodRequest(const std::string& plan_id) {
    v1::ExecuteRequest request;
    request.set_plan_id(plan_id);
    v1::NamedTensor* x = request.add_inputs();
    x->set_name("x");
    x->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
    x->mutable_tensor()->add_dims(2);
    const float v[2] = {1.5f, -3};
    x->mutable_tensor()->set_raw_data(reinterpret_cast<const char*>(v), sizeof(v));
    return request;
  }

  runtime::KernelRegistry kernels_;
  std::unique_ptr<WorkerCore> core_;
  std::unique_ptr<WorkerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::Worker::Stub> stub_;
};

TEST_F(WorkerServiceTest, LoadTwiceExecuteUnload) {
  Start(int64_t{1} << 20);
  v1::LoadPlanResponse first, second;
  ASSERT_TRUE(Load(ParseGraph(kPlan), &first).ok());
  EXPECT_FALSE(first.already_loaded());
  EXPECT_EQ(first.plan_id().rfind("sha256:", 0), 0u);
  ASSERT_TRUE(Load(ParseGraph(kPlan), &second).ok());
  EXPECT_TRUE(second.already_loaded());
  EXPECT_EQ(first.plan_id(), second.plan_id());

  v1::ExecuteRequest request = GoodRequest(first.plan_id());
  request.set_profile(true);
  v1::ExecuteResponse response;
  grpc::Status status = Execute(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.outputs_size(), 2);
  EXPECT_EQ(response.outputs(0).name(), "y");
  EXPECT_EQ(response.outputs(0).tensor().raw_data(), request.inputs(0).tensor().raw_data());
  EXPECT_EQ(response.outputs(1).tensor().raw_data().size(), 8u);
  EXPECT_EQ(response.timings_size(), 2);
  EXPECT_EQ(response.worker_id(), "test-worker");

  grpc::ClientContext dctx;
  v1::DescribeResponse describe;
  ASSERT_TRUE(stub_->Describe(&dctx, {}, &describe).ok());
  EXPECT_EQ(describe.plans_loaded(), 1);
  EXPECT_EQ(describe.executed(), 1);
  ASSERT_GE(describe.devices_size(), 1);
  EXPECT_EQ(describe.devices(0).kind(), "cpu");
  EXPECT_GT(describe.devices(0).memory_bytes(), 0);
  bool has_identity = false;
  for (const std::string& op : describe.supported_ops()) has_identity |= op == "::Identity";
  EXPECT_TRUE(has_identity);

  grpc::ClientContext uctx;
  v1::UnloadPlanRequest unload;
  unload.set_plan_id(first.plan_id());
  v1::UnloadPlanResponse unloaded;
  ASSERT_TRUE(stub_->UnloadPlan(&uctx, unload, &unloaded).ok());
  EXPECT_TRUE(unloaded.unloaded());
  status = Execute(GoodRequest(first.plan_id()), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("load it again"), std::string::npos);
}

TEST_F(WorkerServiceTest, BadRequestsGetClearErrorsAndTheWorkerKeepsServing) {
  Start(int64_t{1} << 20);
  v1::LoadPlanResponse loaded;
  ASSERT_TRUE(Load(ParseGraph(kPlan), &loaded).ok());
  v1::ExecuteResponse response;

  v1::ExecuteRequest wrong_type = GoodRequest(loaded.plan_id());
  wrong_type.mutable_inputs(0)->mutable_tensor()->set_dtype(v1::DT_INT32);
  grpc::Status status = Execute(wrong_type, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("'x'"), std::string::npos);

  v1::ExecuteRequest truncated = GoodRequest(loaded.plan_id());
  truncated.mutable_inputs(0)->mutable_tensor()->set_raw_data("abc");
  status = Execute(truncated, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::ExecuteRequest missing = GoodRequest(loaded.plan_id());
  missing.clear_inputs();
  EXPECT_EQ(Execute(missing, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  v1::LoadPlanResponse unused;
  status = Load(ParseGraph(R"pb(
    nodes { name: "n" op_type: "NoSuchOp" inputs: "x" outputs: "y" }
    inputs { name: "x" }
    outputs { name: "y" })pb"), &unused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_NE(status.error_message().find("NoSuchOp"), std::string::npos);

  status = Load(ParseGraph(R"pb(
    nodes { name: "a" op_type: "Identity" inputs: "x" outputs: "y" }
    nodes { name: "b" op_type: "Identity" inputs: "x" outputs: "y" }
    inputs { name: "x" }
    outputs { name: "y" })pb"), &unused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  // Still serving.
  EXPECT_TRUE(Execute(GoodRequest(loaded.plan_id()), &response).ok());
}

TEST_F(WorkerServiceTest, PlanLargerThanTheCacheIsResourceExhausted) {
  Start(64);
  v1::LoadPlanResponse loaded;
  grpc::Status status = Load(ParseGraph(kPlan), &loaded);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_NE(status.error_message().find("plan cache"), std::string::npos);
}

}  // namespace
}  // namespace graphopt
