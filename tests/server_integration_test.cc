// End-to-end tests of the GraphOptimizer gRPC service: a real server on a loopback port (port
// 0, chosen by the kernel) serving OptimizerService over the builtin registries, reached
// through a real channel. Covers every RPC, the health service, malformed graphs and
// requests (the server must keep answering after each), determinism and a 1,000,000-node
// graph.

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/op_registry.h"
#include "graph/proto_util.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "proto/optimizer.grpc.pb.h"
#include "server/optimizer_service.h"
#include "service/optimizer.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/ostream_sink.h"

namespace graphopt {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

constexpr int kMaxMessageBytes = 512 * 1024 * 1024;
constexpr char kOptimizeMethod[] = "/graphopt.v1.GraphOptimizer/Optimize";
constexpr char kHealthCheckMethod[] = "/grpc.health.v1.Health/Check";

// x -> Identity -> Relu -> y, plus an Abs nobody reads.
constexpr char kGoodGraph[] = R"pb(
  name: "good"
  inputs {
    name: "x"
    type {
      dtype: DT_FLOAT32
      shape {
        dims { symbol: "batch" }
        dims { size: 4 }
      }
    }
  }
  outputs { name: "y" }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "x_id" }
  nodes { name: "relu" op_type: "Relu" inputs: "x_id" outputs: "y" }
  nodes { name: "dead" op_type: "Abs" inputs: "x" outputs: "unused" }
)pb";

// Graph input x: float32[2,3], used by the bad graphs below.
constexpr char kInputX[] = R"pb(
  inputs {
    name: "x"
    type {
      dtype: DT_FLOAT32
      shape {
        dims { size: 2 }
        dims { size: 3 }
      }
    }
  }
)pb";

v1::Graph ParseGraph(absl::string_view text) {
  v1::Graph graph;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(std::string(text), &graph))
      << text;
  return graph;
}

// kInputX plus `body` (nodes and outputs).
v1::Graph BadGraph(absl::string_view body) { return ParseGraph(absl::StrCat(kInputX, body)); }

class ServerIntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    optimizer_ = std::make_unique<Optimizer>(&ops_, &passes_);
    logger_ = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    service_ = std::make_unique<OptimizerService>(optimizer_.get(), logger_);

    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
    builder.SetMaxSendMessageSize(kMaxMessageBytes);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port_, 0);

    grpc::ChannelArguments arguments;
    arguments.SetMaxReceiveMessageSize(kMaxMessageBytes);
    arguments.SetMaxSendMessageSize(kMaxMessageBytes);
    channel_ = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port_),
                                         grpc::InsecureChannelCredentials(), arguments);
    stub_ = v1::GraphOptimizer::NewStub(channel_);
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  static void SetDeadline(grpc::ClientContext& context, int seconds = 60) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  }

  grpc::Status Optimize(const v1::OptimizeRequest& request, v1::OptimizeResponse* response,
                        int deadline_s = 60) {
    grpc::ClientContext context;
    SetDeadline(context, deadline_s);
    return stub_->Optimize(&context, request, response);
  }

  grpc::Status OptimizeGraph(const v1::Graph& graph, v1::OptimizeResponse* response) {
    v1::OptimizeRequest request;
    *request.mutable_graph() = graph;
    return Optimize(request, response);
  }

  // A unary call with hand-made request bytes; fills `response_bytes` when OK.
  grpc::Status GenericCall(const std::string& method, const std::string& request_bytes,
                           std::string* response_bytes) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext context;
    SetDeadline(context);
    grpc::Slice slice(request_bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::CompletionQueue queue;
    std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
        stub.PrepareUnaryCall(&context, method, request, &queue);
    call->StartCall();
    grpc::Status status;
    int finish_tag = 1;
    call->Finish(&response, &status, &finish_tag);
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(queue.Next(&tag, &ok));
    EXPECT_EQ(tag, &finish_tag);
    queue.Shutdown();
    while (queue.Next(&tag, &ok)) {
    }
    if (status.ok() && response_bytes != nullptr) {
      response_bytes->clear();
      std::vector<grpc::Slice> slices;
      EXPECT_TRUE(response.Dump(&slices).ok());
      for (const grpc::Slice& s : slices) {
        response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    return status;
  }

  // The server still optimizes a good graph.
  void ExpectServerStillAnswers() {
    v1::OptimizeResponse response;
    grpc::Status status = OptimizeGraph(ParseGraph(kGoodGraph), &response);
    EXPECT_TRUE(status.ok()) << "server stopped answering: " << status.error_message();
    EXPECT_GT(response.graph().nodes_size(), 0);
  }

  // Optimizing `graph` fails with `code` and a message matching `regex` (which names the
  // offending node), and the server keeps working afterwards.
  void ExpectRejected(const v1::Graph& graph, absl::string_view regex,
                      grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT) {
    v1::OptimizeResponse response;
    grpc::Status status = OptimizeGraph(graph, &response);
    EXPECT_EQ(status.error_code(), code) << status.error_message();
    EXPECT_THAT(status.error_message(), ContainsRegex(std::string(regex)));
    ExpectServerStillAnswers();
  }

  OpRegistry ops_;
  PassRegistry passes_;
  std::unique_ptr<Optimizer> optimizer_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<OptimizerService> service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::GraphOptimizer::Stub> stub_;
};

const v1::PassReport* FindReport(const v1::OptimizeResponse& response, absl::string_view name) {
  for (const v1::PassReport& report : response.reports()) {
    if (report.name() == name) return &report;
  }
  return nullptr;
}

bool HasNode(const v1::Graph& graph, absl::string_view name) {
  for (const v1::Node& node : graph.nodes()) {
    if (node.name() == name) return true;
  }
  return false;
}

TEST_F(ServerIntegrationTest, OptimizesGoodGraphWithDefaultPipeline) {
  v1::OptimizeResponse response;
  grpc::Status status = OptimizeGraph(ParseGraph(kGoodGraph), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  const v1::Graph& out = response.graph();
  EXPECT_EQ(out.name(), "good");
  ASSERT_EQ(out.outputs_size(), 1);
  EXPECT_EQ(out.outputs(0).name(), "y");
  ASSERT_EQ(out.inputs_size(), 1);
  EXPECT_EQ(out.inputs(0).name(), "x");
  EXPECT_FALSE(HasNode(out, "dead"));
  EXPECT_FALSE(HasNode(out, "id"));
  ASSERT_EQ(out.nodes_size(), 1);
  EXPECT_EQ(out.nodes(0).op_type(), "Relu");
  ASSERT_EQ(out.nodes(0).inputs_size(), 1);
  EXPECT_EQ(out.nodes(0).inputs(0), "x");

  ASSERT_GT(response.reports_size(), 0);
  const v1::PassReport* dce = FindReport(response, "dead_code_elimination");
  ASSERT_NE(dce, nullptr);
  EXPECT_TRUE(dce->changed());
  EXPECT_LT(dce->nodes_after(), dce->nodes_before());
  EXPECT_EQ(response.reports(0).nodes_before(), 3);
  EXPECT_EQ(response.reports(response.reports_size() - 1).nodes_after(), 1);
  EXPECT_GT(response.total_time_us(), 0);

  EXPECT_THAT(log_.str(), HasSubstr("Optimize peer="));
  EXPECT_THAT(log_.str(), HasSubstr("nodes=3->1"));
}

TEST_F(ServerIntegrationTest, OptimizeWithOptLevel) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  request.mutable_pipeline()->set_opt_level(0);
  v1::OptimizeResponse response;
  grpc::Status status = Optimize(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.reports_size(), 0);
  EXPECT_EQ(response.graph().nodes_size(), 3);

  request.mutable_pipeline()->set_opt_level(1);
  status = Optimize(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_GT(response.reports_size(), 0);
  EXPECT_EQ(response.graph().nodes_size(), 1);

  request.mutable_pipeline()->set_opt_level(99);
  status = Optimize(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("99"));
  ExpectServerStillAnswers();
}

TEST_F(ServerIntegrationTest, OptimizeWithExplicitPassesAndBindings) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  request.mutable_pipeline()->add_passes()->set_name("dead_code_elimination");
  (*request.mutable_dim_bindings())["batch"] = 8;
  request.mutable_options()->set_verify_each_pass(true);
  v1::OptimizeResponse response;
  grpc::Status status = Optimize(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(HasNode(response.graph(), "dead"));
  EXPECT_TRUE(HasNode(response.graph(), "id"));  // eliminate_identity was not asked for
  const v1::PassReport* dce = FindReport(response, "dead_code_elimination");
  ASSERT_NE(dce, nullptr);
  EXPECT_TRUE(dce->added_for().empty());
  // The binding replaced the symbol on the graph input.
  ASSERT_EQ(response.graph().inputs_size(), 1);
  ASSERT_EQ(response.graph().inputs(0).type().shape().dims_size(), 2);
  EXPECT_EQ(response.graph().inputs(0).type().shape().dims(0).size(), 8);
}

TEST_F(ServerIntegrationTest, BothPassesAndOptLevelIsInvalid) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  request.mutable_pipeline()->add_passes()->set_name("dead_code_elimination");
  request.mutable_pipeline()->set_opt_level(1);
  v1::OptimizeResponse response;
  EXPECT_EQ(Optimize(request, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  ExpectServerStillAnswers();
}

TEST_F(ServerIntegrationTest, OptimizesBundledExample) {
  v1::Graph graph;
  {
    std::ifstream in("examples/mlp.pbtxt");
    ASSERT_TRUE(in.good()) << "examples/mlp.pbtxt missing from runfiles";
    std::stringstream text;
    text << in.rdbuf();
    graph = ParseGraph(text.str());
  }
  ASSERT_EQ(graph.nodes_size(), 11);
  v1::OptimizeResponse response;
  grpc::Status status = OptimizeGraph(graph, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Graph& out = response.graph();
  EXPECT_FALSE(HasNode(out, "dead_relu"));
  EXPECT_FALSE(HasNode(out, "dead_scale"));
  EXPECT_FALSE(HasNode(out, "skip"));
  EXPECT_TRUE(HasNode(out, "relu") != HasNode(out, "relu_dup")) << "CSE kept both Relus";
  EXPECT_TRUE(HasNode(out, "softmax"));
  EXPECT_LT(out.nodes_size(), 8);
  ASSERT_EQ(out.outputs_size(), 1);
  EXPECT_EQ(out.outputs(0).name(), "probs");
  EXPECT_EQ(out.initializers_size(), 3);
}

TEST_F(ServerIntegrationTest, IdenticalRequestsGiveByteIdenticalGraphs) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  // Several values and a symbolic dim so the result carries value_info.
  request.mutable_pipeline()->set_opt_level(1);
  v1::OptimizeResponse first, second;
  ASSERT_TRUE(Optimize(request, &first).ok());
  ASSERT_TRUE(Optimize(request, &second).ok());
  EXPECT_EQ(SerializeDeterministic(first.graph()), SerializeDeterministic(second.graph()));
  EXPECT_FALSE(SerializeDeterministic(first.graph()).empty());
}

TEST_F(ServerIntegrationTest, ListPasses) {
  grpc::ClientContext context;
  SetDeadline(context);
  v1::ListPassesResponse response;
  grpc::Status status = stub_->ListPasses(&context, v1::ListPassesRequest(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<std::string> names;
  for (const v1::PassInfo& pass : response.passes()) {
    names.push_back(pass.name());
    EXPECT_FALSE(pass.description().empty()) << pass.name();
  }
  EXPECT_THAT(names, ::testing::IsSupersetOf({"infer_type", "infer_shape",
                                              "dead_code_elimination",
                                              "common_subexpression_elimination",
                                              "eliminate_identity"}));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST_F(ServerIntegrationTest, ListOpsAllAndFiltered) {
  v1::ListOpsResponse all;
  {
    grpc::ClientContext context;
    SetDeadline(context);
    ASSERT_TRUE(stub_->ListOps(&context, v1::ListOpsRequest(), &all).ok());
  }
  std::vector<std::string> names;
  for (const v1::OpDescriptor& op : all.ops()) names.push_back(op.name());
  EXPECT_THAT(names, ::testing::IsSupersetOf({"Relu", "MatMul", "Add", "Softmax", "Identity",
                                              "Dropout", "Transpose"}));

  v1::ListOpsRequest request;
  request.set_name("Relu");
  v1::ListOpsResponse relu;
  {
    grpc::ClientContext context;
    SetDeadline(context);
    ASSERT_TRUE(stub_->ListOps(&context, request, &relu).ok());
  }
  ASSERT_EQ(relu.ops_size(), 1);
  EXPECT_EQ(relu.ops(0).name(), "Relu");
  EXPECT_EQ(relu.ops(0).inputs_size(), 1);

  request.set_name("NoSuchOp");
  v1::ListOpsResponse none;
  {
    grpc::ClientContext context;
    SetDeadline(context);
    ASSERT_TRUE(stub_->ListOps(&context, request, &none).ok());
  }
  EXPECT_EQ(none.ops_size(), 0);

  request.Clear();
  request.set_domain("com.example.nothing");
  {
    grpc::ClientContext context;
    SetDeadline(context);
    ASSERT_TRUE(stub_->ListOps(&context, request, &none).ok());
  }
  EXPECT_EQ(none.ops_size(), 0);
}

TEST_F(ServerIntegrationTest, HealthCheckServingThenNotServing) {
  std::string response;
  // An empty HealthCheckRequest (service "") serializes to zero bytes; the response is
  // field 1 (status, varint): SERVING = 1, NOT_SERVING = 2.
  grpc::Status status = GenericCall(kHealthCheckMethod, "", &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response, std::string("\x08\x01", 2));

  server_->GetHealthCheckService()->SetServingStatus(false);
  status = GenericCall(kHealthCheckMethod, "", &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response, std::string("\x08\x02", 2));
}

TEST_F(ServerIntegrationTest, RejectsCycle) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "b" }
                   nodes { name: "cycle_a" op_type: "Relu" inputs: "b" outputs: "a" }
                   nodes { name: "cycle_b" op_type: "Relu" inputs: "a" outputs: "b" }
                 )pb"),
                 "'cycle_[ab]'");
}

TEST_F(ServerIntegrationTest, RejectsUndefinedInput) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes { name: "reader" op_type: "Relu" inputs: "ghost" outputs: "y" }
                 )pb"),
                 "'reader'.*'ghost'|'ghost'.*'reader'");
}

TEST_F(ServerIntegrationTest, RejectsValueWithTwoProducers) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "dup" }
                   nodes { name: "first" op_type: "Relu" inputs: "x" outputs: "dup" }
                   nodes { name: "second" op_type: "Relu" inputs: "x" outputs: "dup" }
                 )pb"),
                 "'second'");
}

TEST_F(ServerIntegrationTest, RejectsValueProducedByNodeAndGraphInput) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "x" }
                   nodes { name: "shadow" op_type: "Relu" inputs: "x" outputs: "x" }
                 )pb"),
                 "'shadow'");
}

TEST_F(ServerIntegrationTest, RejectsTooManyInputs) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes { name: "relu2" op_type: "Relu" inputs: "x" inputs: "x" outputs: "y" }
                 )pb"),
                 "'relu2'");
}

TEST_F(ServerIntegrationTest, RejectsTooFewInputs) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes { name: "add1" op_type: "Add" inputs: "x" outputs: "y" }
                 )pb"),
                 "'add1'");
}

TEST_F(ServerIntegrationTest, RejectsMissingRequiredInput) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes { name: "mm" op_type: "MatMul" inputs: "" inputs: "x" outputs: "y" }
                 )pb"),
                 "'mm'");
}

TEST_F(ServerIntegrationTest, RejectsUnknownOp) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes { name: "mystery" op_type: "FooBar" inputs: "x" outputs: "y" }
                 )pb"),
                 "'mystery'.*FooBar|FooBar.*'mystery'");
}

TEST_F(ServerIntegrationTest, RejectsMissingRequiredAttribute) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes { name: "cast" op_type: "Cast" inputs: "x" outputs: "y" }
                 )pb"),
                 "'cast'.*'to'");
}

TEST_F(ServerIntegrationTest, RejectsMistypedAttributes) {
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes {
                     name: "sm"
                     op_type: "Softmax"
                     inputs: "x"
                     outputs: "y"
                     attributes { name: "axis" f: 1.0 }
                   }
                 )pb"),
                 "'sm'.*'axis'");
  ExpectRejected(BadGraph(R"pb(
                   outputs { name: "y" }
                   nodes {
                     name: "tr"
                     op_type: "Transpose"
                     inputs: "x"
                     outputs: "y"
                     attributes { name: "perm" s: "1,0" }
                   }
                 )pb"),
                 "'tr'.*'perm'");
}

TEST_F(ServerIntegrationTest, UnknownPassIsNotFound) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  request.mutable_pipeline()->add_passes()->set_name("no_such_pass");
  v1::OptimizeResponse response;
  grpc::Status status = Optimize(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("no_such_pass"));
  EXPECT_THAT(log_.str(), HasSubstr("status=NOT_FOUND"));
  ExpectServerStillAnswers();
}

TEST_F(ServerIntegrationTest, UnknownPassOptionIsInvalid) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  v1::PassSpec* pass = request.mutable_pipeline()->add_passes();
  pass->set_name("dead_code_elimination");
  (*pass->mutable_options())["bogus_option"] = "1";
  v1::OptimizeResponse response;
  grpc::Status status = Optimize(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("bogus_option"));
  ExpectServerStillAnswers();
}

TEST_F(ServerIntegrationTest, NegativeDimBindingIsInvalid) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  (*request.mutable_dim_bindings())["batch"] = -3;
  v1::OptimizeResponse response;
  grpc::Status status = Optimize(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("batch"));
  ExpectServerStillAnswers();
}

TEST_F(ServerIntegrationTest, MalformedRequestBytesAreRejected) {
  v1::OptimizeRequest request;
  *request.mutable_graph() = ParseGraph(kGoodGraph);
  const std::string good = SerializeDeterministic(request);
  ASSERT_GT(good.size(), 20u);

  // The well-formed bytes work through the generic path, so failures below are about the
  // bytes, not the call mechanics.
  std::string response_bytes;
  ASSERT_TRUE(GenericCall(kOptimizeMethod, good, &response_bytes).ok());
  v1::OptimizeResponse response;
  ASSERT_TRUE(response.ParseFromString(response_bytes));
  EXPECT_GT(response.graph().nodes_size(), 0);

  const std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", good.substr(0, good.size() / 2)},
      {"garbage", std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 11)},
      {"bad length", std::string("\x0a\xff\xff\xff\x7f", 5)},
  };
  for (const auto& [label, bytes] : cases) {
    SCOPED_TRACE(label);
    grpc::Status status = GenericCall(kOptimizeMethod, bytes, nullptr);
    EXPECT_FALSE(status.ok());
    // gRPC answers unparsable requests itself (INTERNAL in gRPC 1.51); record what it said.
    RecordProperty(absl::StrCat("malformed_", label, "_code"),
                   static_cast<int>(status.error_code()));
    ExpectServerStillAnswers();
  }
}

// 1,000,000 chained Relu nodes through the server: the request is ~40 MB on the wire.
TEST_F(ServerIntegrationTest, LargeGraphMillionNodeChain) {
  constexpr int kNodes = 1000000;
  v1::OptimizeRequest request;
  v1::Graph* graph = request.mutable_graph();
  graph->set_name("chain");
  v1::ValueInfo* input = graph->add_inputs();
  input->set_name("v0");
  input->mutable_type()->set_dtype(v1::DT_FLOAT32);
  input->mutable_type()->mutable_shape()->add_dims()->set_symbol("batch");
  input->mutable_type()->mutable_shape()->add_dims()->set_size(16);
  graph->mutable_nodes()->Reserve(kNodes);
  for (int i = 0; i < kNodes; ++i) {
    v1::Node* node = graph->add_nodes();
    node->set_name(absl::StrCat("r", i));
    node->set_op_type("Relu");
    node->add_inputs(absl::StrCat("v", i));
    node->add_outputs(absl::StrCat("v", i + 1));
  }
  graph->add_outputs()->set_name(absl::StrCat("v", kNodes));
  request.mutable_options()->set_strip_value_info(true);

  const auto start = std::chrono::steady_clock::now();
  v1::OptimizeResponse response;
  grpc::Status status = Optimize(request, &response, /*deadline_s=*/1200);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("million_node_seconds", absl::StrCat(seconds));
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  ASSERT_EQ(response.graph().nodes_size(), kNodes);
  EXPECT_EQ(response.graph().nodes(0).name(), "r0");
  EXPECT_EQ(response.graph().nodes(kNodes - 1).name(), absl::StrCat("r", kNodes - 1));
  ASSERT_EQ(response.graph().outputs_size(), 1);
  EXPECT_EQ(response.graph().outputs(0).name(), absl::StrCat("v", kNodes));
  EXPECT_EQ(response.graph().value_info_size(), 0);
  ASSERT_GT(response.reports_size(), 0);
  EXPECT_EQ(response.reports(0).nodes_before(), kNodes);
}

}  // namespace
}  // namespace graphopt
