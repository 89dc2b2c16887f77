// End-to-end tests of custom op registration over gRPC: a real server on a loopback port (port
// 0) serving OptimizerService over an OpStore persisted in a directory, reached through a real
// channel with the "graphopt-tenant" metadata. Covers RegisterOps/UnregisterOps/ListOps per
// tenant, Optimize with registered and request-local ops, refusals (the server keeps serving)
// and a restart on the same directory.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/op_registry.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pass.h"
#include "passes/runtime_test_util.h"
#include "proto/optimizer.grpc.pb.h"
#include "server/optimizer_service.h"
#include "service/op_persistence.h"
#include "service/op_store.h"
#include "service/optimizer.h"
#include "spdlog/logger.h"
#include "spdlog/sinks/ostream_sink.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

// my.ops::Twist: a custom op whose shapes follow the builtin Relu rule.
constexpr char kTwist[] = R"pb(
  name: "Twist"
  domain: "my.ops"
  version: 1
  doc: "Relu-shaped custom op"
  inputs { name: "x" type_constraint: "T" }
  outputs { name: "y" type_constraint: "T" }
  type_constraints { name: "T" allowed: DT_FLOAT32 allowed: DT_FLOAT16 }
  shape_rule { builtin: "Relu" }
)pb";

// x: float32[batch, 4] -> Twist -> y.
constexpr char kTwistGraph[] = R"pb(
  name: "uses_twist"
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
  nodes { name: "t" op_type: "Twist" domain: "my.ops" inputs: "x" outputs: "y" }
  outputs { name: "y" }
)pb";

template <typename Message>
Message Parse(const char* text) {
  Message m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

std::string NewDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  static int counter = 0;
  return absl::StrCat(tmp != nullptr ? tmp : "/tmp", "/op-registration-", ::getpid(), "-",
                      counter++, "/ops");
}

// One graphopt server in this process: builtins, an op store persisted in `dir`, the service
// on 127.0.0.1:0 and a client stub.
class TestServer {
 public:
  explicit TestServer(const std::string& dir) {
    EXPECT_TRUE(RegisterBuiltinOps(&builtins_).ok());
    EXPECT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    auto persistence = FileOpPersistence::Create(dir);
    EXPECT_TRUE(persistence.ok()) << persistence.status();
    OpStoreOptions options;
    options.persistence = std::shared_ptr<OpPersistence>(std::move(*persistence));
    store_ = std::make_unique<OpStore>(&builtins_, std::move(options));
    auto loaded = store_->Load();
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (loaded.ok()) load_report_ = *loaded;
    optimizer_ = std::make_unique<Optimizer>(store_.get(), &passes_);
    logger_ = std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    service_ = std::make_unique<OptimizerService>(optimizer_.get(), logger_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    EXPECT_NE(server_, nullptr);
    EXPECT_NE(port_, 0);
    stub_ = v1::GraphOptimizer::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }

  ~TestServer() {
    if (server_ != nullptr) server_->Shutdown(std::chrono::system_clock::now());
  }

  // A context with a deadline and, unless `tenant` is empty, the tenant metadata.
  static std::unique_ptr<grpc::ClientContext> Context(const std::string& tenant) {
    auto context = std::make_unique<grpc::ClientContext>();
    context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    if (!tenant.empty()) context->AddMetadata("graphopt-tenant", tenant);
    return context;
  }

  grpc::Status Register(const std::string& tenant, const v1::RegisterOpsRequest& request,
                        v1::RegisterOpsResponse* response) {
    return stub_->RegisterOps(Context(tenant).get(), request, response);
  }
  grpc::Status Unregister(const std::string& tenant, const v1::UnregisterOpsRequest& request,
                          v1::UnregisterOpsResponse* response) {
    return stub_->UnregisterOps(Context(tenant).get(), request, response);
  }
  grpc::Status Optimize(const std::string& tenant, const v1::OptimizeRequest& request,
                        v1::OptimizeResponse* response) {
    return stub_->Optimize(Context(tenant).get(), request, response);
  }
  grpc::Status ListOps(const std::string& tenant, const v1::ListOpsRequest& request,
                       v1::ListOpsResponse* response) {
    return stub_->ListOps(Context(tenant).get(), request, response);
  }

  // Optimizes kTwistGraph (with `request_ops` given in the request) for `tenant`.
  grpc::Status OptimizeTwist(const std::string& tenant, v1::OptimizeResponse* response,
                             const std::vector<v1::OpDescriptor>& request_ops = {}) {
    v1::OptimizeRequest request;
    *request.mutable_graph() = Parse<v1::Graph>(kTwistGraph);
    for (const v1::OpDescriptor& d : request_ops) *request.add_ops() = d;
    return Optimize(tenant, request, response);
  }

  std::string log() const { return log_.str(); }
  v1::GraphOptimizer::Stub* stub_for_test() { return stub_.get(); }
  const OpStoreLoadReport& load_report() const { return load_report_; }

 private:
  OpRegistry builtins_;
  PassRegistry passes_;
  std::unique_ptr<OpStore> store_;
  OpStoreLoadReport load_report_;
  std::unique_ptr<Optimizer> optimizer_;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<OptimizerService> service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::GraphOptimizer::Stub> stub_;
};

class OpRegistrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = NewDir();
    server_ = std::make_unique<TestServer>(dir_);
    twist_ = Parse<v1::OpDescriptor>(kTwist);
  }

  v1::RegisterOpsRequest RegisterRequest(const std::vector<v1::OpDescriptor>& ops) {
    v1::RegisterOpsRequest request;
    for (const v1::OpDescriptor& d : ops) *request.add_ops() = d;
    return request;
  }

  // The output "y" of an optimized kTwistGraph has the shape [batch, 4].
  static void ExpectTwistShape(const v1::OptimizeResponse& response) {
    ASSERT_EQ(response.graph().outputs_size(), 1);
    const v1::ValueInfo& y = response.graph().outputs(0);
    EXPECT_EQ(y.type().dtype(), v1::DT_FLOAT32);
    ASSERT_EQ(y.type().shape().dims_size(), 2) << y.ShortDebugString();
    EXPECT_EQ(y.type().shape().dims(0).symbol(), "batch");
    EXPECT_EQ(y.type().shape().dims(1).size(), 4);
  }

  std::string dir_;
  std::unique_ptr<TestServer> server_;
  v1::OpDescriptor twist_;
};

TEST_F(OpRegistrationTest, RegisteredOpWorksInItsTenantOnly) {
  v1::RegisterOpsResponse registered;
  grpc::Status status = server_->Register("team-a", RegisterRequest({twist_}), &registered);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(registered.tenant(), "team-a");
  ASSERT_EQ(registered.results_size(), 1);
  EXPECT_EQ(registered.results(0), "registered my.ops::Twist v1");

  v1::OptimizeResponse optimized;
  status = server_->OptimizeTwist("team-a", &optimized);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ExpectTwistShape(optimized);
  EXPECT_EQ(optimized.graph().nodes(0).op_type(), "Twist");

  for (const std::string tenant : {"team-b", ""}) {
    v1::OptimizeResponse other;
    status = server_->OptimizeTwist(tenant, &other);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << tenant;
    EXPECT_THAT(status.error_message(), HasSubstr("unknown op 'my.ops::Twist'")) << tenant;
  }

  v1::ListOpsRequest mine;
  mine.set_registered_only(true);
  v1::ListOpsResponse listed;
  ASSERT_TRUE(server_->ListOps("team-a", mine, &listed).ok());
  EXPECT_EQ(listed.tenant(), "team-a");
  ASSERT_EQ(listed.ops_size(), 1);
  EXPECT_EQ(listed.ops(0).doc(), "Relu-shaped custom op");
  ASSERT_TRUE(server_->ListOps("team-b", mine, &listed).ok());
  EXPECT_EQ(listed.tenant(), "team-b");
  EXPECT_EQ(listed.ops_size(), 0);
  ASSERT_TRUE(server_->ListOps("", v1::ListOpsRequest(), &listed).ok());
  EXPECT_EQ(listed.tenant(), "default");
  EXPECT_GT(listed.ops_size(), 40);

  EXPECT_THAT(server_->log(), HasSubstr("RegisterOps peer="));
  EXPECT_THAT(server_->log(), HasSubstr("tenant=team-a registered my.ops::Twist v1"));
  EXPECT_THAT(server_->log(), HasSubstr("Optimize peer="));
  EXPECT_THAT(server_->log(), HasSubstr("tenant=team-b"));
}

TEST_F(OpRegistrationTest, MalformedTenantIsRefusedForEveryMethod) {
  v1::OptimizeResponse optimized;
  grpc::Status status = server_->OptimizeTwist("Team A", &optimized);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("tenant 'Team A' is not a tenant name"));
  v1::RegisterOpsResponse registered;
  status = server_->Register("../x", RegisterRequest({twist_}), &registered);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::ListOpsResponse listed;
  status = server_->ListOps("UPPER", v1::ListOpsRequest(), &listed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::ListPassesResponse passes;
  status = server_->stub_for_test()->ListPasses(TestServer::Context("a b").get(),
                                                v1::ListPassesRequest(), &passes);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(server_->log(), HasSubstr("status=INVALID_ARGUMENT: tenant 'Team A'"));
}

TEST_F(OpRegistrationTest, RequestLocalOpsServeOneRequest) {
  v1::OptimizeResponse optimized;
  grpc::Status status = server_->OptimizeTwist("team-b", &optimized, {twist_});
  ASSERT_TRUE(status.ok()) << status.error_message();
  ExpectTwistShape(optimized);
  // Not registered by that request.
  status = server_->OptimizeTwist("team-b", &optimized);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  v1::ListOpsRequest mine;
  mine.set_registered_only(true);
  v1::ListOpsResponse listed;
  ASSERT_TRUE(server_->ListOps("team-b", mine, &listed).ok());
  EXPECT_EQ(listed.ops_size(), 0);
  // Checked as registrations are.
  v1::OpDescriptor bad = twist_;
  bad.set_domain("");
  status = server_->OptimizeTwist("team-b", &optimized, {bad});
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("ops[0]: op Twist: domain '' is the builtin"));
}

TEST_F(OpRegistrationTest, BadDescriptorsAreRefusedAndTheServerKeepsServing) {
  v1::OpDescriptor no_shape = twist_;
  no_shape.clear_shape_rule();
  v1::OpDescriptor rule_text = twist_;
  rule_text.mutable_shape_rule()->set_expr("y = x");
  v1::OpDescriptor builtin_name = twist_;
  builtin_name.set_domain("ai.onnx");
  v1::OpDescriptor recursive = twist_;
  recursive.clear_shape_rule();
  *recursive.mutable_body() = Parse<v1::Graph>(R"pb(
    inputs { name: "a" }
    outputs { name: "b" }
    nodes { op_type: "Twist" domain: "my.ops" inputs: "a" outputs: "b" }
  )pb");
  struct Case {
    v1::OpDescriptor descriptor;
    grpc::StatusCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {no_shape, grpc::StatusCode::INVALID_ARGUMENT,
       "ops[0]: op my.ops::Twist: shape_rule is required"},
      {rule_text, grpc::StatusCode::INVALID_ARGUMENT,
       "ops[0]: op my.ops::Twist: shape_rule 1:3: expected ';' at the end of the statement"},
      {builtin_name, grpc::StatusCode::INVALID_ARGUMENT,
       "ops[0]: op ai.onnx::Twist: domain 'ai.onnx' is the builtin ONNX ops' domain"},
      {recursive, grpc::StatusCode::INVALID_ARGUMENT,
       "ops[0]: op my.ops::Twist: body is recursive: my.ops::Twist -> my.ops::Twist"},
  };
  for (const Case& c : cases) {
    v1::RegisterOpsResponse response;
    grpc::Status status = server_->Register("team-a", RegisterRequest({c.descriptor}), &response);
    EXPECT_EQ(status.error_code(), c.code) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
  // All or nothing: a good op next to a bad one is not registered either.
  v1::OpDescriptor other_without_shape = no_shape;
  other_without_shape.set_name("Other");
  v1::RegisterOpsResponse response;
  grpc::Status status =
      server_->Register("team-a", RegisterRequest({twist_, other_without_shape}), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("ops[1]: op my.ops::Other: shape_rule is required"));
  v1::OptimizeResponse optimized;
  EXPECT_EQ(server_->OptimizeTwist("team-a", &optimized).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // validate_only checks without storing; then a real registration works.
  v1::RegisterOpsRequest dry = RegisterRequest({twist_});
  dry.set_validate_only(true);
  ASSERT_TRUE(server_->Register("team-a", dry, &response).ok());
  EXPECT_EQ(response.results(0), "valid my.ops::Twist v1");
  EXPECT_EQ(server_->OptimizeTwist("team-a", &optimized).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(server_->Register("team-a", RegisterRequest({twist_}), &response).ok());
  ASSERT_TRUE(server_->OptimizeTwist("team-a", &optimized).ok());

  // A changed redefinition must raise the version.
  v1::OpDescriptor changed = twist_;
  changed.set_doc("changed");
  status = server_->Register("team-a", RegisterRequest({changed}), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("a redefinition must raise version"));
  changed.set_version(2);
  ASSERT_TRUE(server_->Register("team-a", RegisterRequest({changed}), &response).ok());
  EXPECT_EQ(response.results(0), "registered my.ops::Twist v2 (was v1)");
}

TEST_F(OpRegistrationTest, UnregisterOverRpc) {
  v1::OpDescriptor wrapper = twist_;
  wrapper.set_name("Wrapper");
  wrapper.clear_shape_rule();
  *wrapper.mutable_body() = Parse<v1::Graph>(R"pb(
    inputs { name: "a" }
    outputs { name: "b" }
    nodes { op_type: "Twist" domain: "my.ops" inputs: "a" outputs: "b" }
  )pb");
  v1::RegisterOpsResponse registered;
  ASSERT_TRUE(server_->Register("team-a", RegisterRequest({twist_, wrapper}), &registered).ok());

  v1::UnregisterOpsRequest request;
  v1::OpRef* ref = request.add_ops();
  ref->set_domain("my.ops");
  ref->set_name("Twist");
  v1::UnregisterOpsResponse response;
  grpc::Status status = server_->Unregister("team-a", request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("is used by the body of op my.ops::Wrapper"));
  status = server_->Unregister("team-b", request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("is not registered in tenant 'team-b'"));

  ref = request.add_ops();
  ref->set_domain("my.ops");
  ref->set_name("Wrapper");
  status = server_->Unregister("team-a", request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.tenant(), "team-a");
  ASSERT_EQ(response.unregistered_size(), 2);
  EXPECT_EQ(response.unregistered(0), "unregistered my.ops::Twist v1");
  v1::OptimizeResponse optimized;
  EXPECT_EQ(server_->OptimizeTwist("team-a", &optimized).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

TEST_F(OpRegistrationTest, RegisteredOpsSurviveARestart) {
  v1::RegisterOpsResponse registered;
  ASSERT_TRUE(server_->Register("team-a", RegisterRequest({twist_}), &registered).ok());
  v1::OpDescriptor other = twist_;
  other.set_name("Other");
  ASSERT_TRUE(server_->Register("team-c", RegisterRequest({other}), &registered).ok());
  server_.reset();

  server_ = std::make_unique<TestServer>(dir_);
  EXPECT_EQ(server_->load_report().tenants, 2);
  EXPECT_EQ(server_->load_report().ops, 2);
  EXPECT_TRUE(server_->load_report().errors.empty());
  v1::OptimizeResponse optimized;
  grpc::Status status = server_->OptimizeTwist("team-a", &optimized);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ExpectTwistShape(optimized);
  EXPECT_EQ(server_->OptimizeTwist("team-c", &optimized).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  v1::ListOpsRequest mine;
  mine.set_registered_only(true);
  v1::ListOpsResponse listed;
  ASSERT_TRUE(server_->ListOps("team-c", mine, &listed).ok());
  ASSERT_EQ(listed.ops_size(), 1);
  EXPECT_EQ(listed.ops(0).name(), "Other");
  // Registering the same op again after the restart is "unchanged".
  ASSERT_TRUE(server_->Register("team-a", RegisterRequest({twist_}), &registered).ok());
  EXPECT_EQ(registered.results(0), "unchanged my.ops::Twist v1");
}

// my.ops::Cube: y = x^3 with a decomposition body (so it runs once inlined) and a gradient body
// dx = 3 x^2 dy, written over the op's input x, output y and output gradient dy.
constexpr char kCube[] = R"pb(
  name: "Cube"
  domain: "my.ops"
  version: 1
  inputs { name: "x" type_constraint: "T" }
  outputs { name: "y" type_constraint: "T" }
  type_constraints { name: "T" allowed: DT_FLOAT32 }
  shape_rule { builtin: "Relu" }
  body {
    inputs { name: "x" }
    outputs { name: "y" }
    nodes { op_type: "Mul" inputs: "x" inputs: "x" outputs: "x2" }
    nodes { op_type: "Mul" inputs: "x2" inputs: "x" outputs: "y" }
  }
  gradient {
    body {
      inputs { name: "x" }
      inputs { name: "y" }
      inputs { name: "dy" }
      outputs { name: "dx" }
      initializers { name: "three" dtype: DT_FLOAT32 raw_data: "\000\000\100\100" }
      nodes { name: "sq" op_type: "Mul" inputs: "x" inputs: "x" outputs: "x2" }
      nodes { name: "scale" op_type: "Mul" inputs: "x2" inputs: "three" outputs: "d" }
      nodes { name: "chain" op_type: "Mul" inputs: "d" inputs: "dy" outputs: "dx" }
    }
  }
)pb";

TEST_F(OpRegistrationTest, GradientBodiesAreCheckedAtRegistration) {
  const v1::OpDescriptor cube = Parse<v1::OpDescriptor>(kCube);
  auto with = [&](auto edit) {
    v1::OpDescriptor d = cube;
    edit(d);
    return d;
  };
  struct Case {
    v1::OpDescriptor descriptor;
    std::string message;
  };
  const std::vector<Case> cases = {
      {with([](v1::OpDescriptor& d) { d.mutable_gradient()->mutable_body()->mutable_inputs()->RemoveLast(); }),
       "gradient body has 2 inputs; it takes the op's 1 inputs, its 1 outputs and their 1 "
       "gradients, 3 in all"},
      {with([](v1::OpDescriptor& d) { d.mutable_gradient()->mutable_body()->add_outputs()->set_name("x2"); }),
       "gradient body has 2 outputs; it must give one gradient per differentiable input, 1"},
      {with([](v1::OpDescriptor& d) { d.mutable_gradient()->set_builtin("Relu"); }),
       "gradient.builtin names a gradient written inside the server, for builtin ops only"},
      {with([](v1::OpDescriptor& d) { d.add_non_differentiable_inputs(3); }),
       "non_differentiable_inputs: 3 is not an input index (the op has 1 inputs)"},
      {with([](v1::OpDescriptor& d) {
         d.mutable_gradient()->mutable_body()->mutable_nodes(1)->set_op_type("Scale");
       }),
       "gradient body: node 'scale' (Scale)"},
      {with([](v1::OpDescriptor& d) {
         d.mutable_gradient()->mutable_body()->mutable_outputs(0)->mutable_type()->set_dtype(
             v1::DT_INT64);
       }),
       "gradient body: output 'dx' is DT_INT64, which type constraint 'T' of input 'x' does not "
       "allow"},
      {with([](v1::OpDescriptor& d) {
         v1::Node* n = d.mutable_gradient()->mutable_body()->mutable_nodes(2);
         n->set_op_type("Cube");
         n->set_domain("my.ops");
         n->clear_inputs();
         n->add_inputs("d");
       }),
       "gradient body is recursive: my.ops::Cube -> my.ops::Cube"},
      {with([](v1::OpDescriptor& d) { d.mutable_inputs(0)->set_arity(v1::ARITY_VARIADIC); }),
       "gradient body: the op has variadic argument 'x'"},
  };
  for (const Case& c : cases) {
    v1::RegisterOpsResponse response;
    grpc::Status status = server_->Register("team-g", RegisterRequest({c.descriptor}), &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
  v1::RegisterOpsResponse response;
  grpc::Status status = server_->Register("team-g", RegisterRequest({cube}), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
}

TEST_F(OpRegistrationTest, CustomOpWithGradientBodyIsDifferentiatedThroughTheServer) {
  v1::RegisterOpsResponse registered;
  grpc::Status status =
      server_->Register("team-g", RegisterRequest({Parse<v1::OpDescriptor>(kCube)}), &registered);
  ASSERT_TRUE(status.ok()) << status.error_message();
  v1::OptimizeRequest request;
  *request.mutable_graph() = Parse<v1::Graph>(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 3 } } } }
    nodes { name: "c" op_type: "Cube" domain: "my.ops" inputs: "x" outputs: "y" }
    outputs { name: "y" }
  )pb");
  // The gradient first (it instantiates Cube's gradient body), then Cube is inlined into Muls.
  for (const char* pass : {"infer_type", "infer_shape", "gradient", "inline_functions"}) {
    v1::PassSpec* spec = request.mutable_pipeline()->add_passes();
    spec->set_name(pass);
    if (std::string(pass) == "gradient") {
      (*spec->mutable_options())["wrt"] = "x";
      (*spec->mutable_options())["loss"] = "y";
    }
  }
  v1::OptimizeResponse optimized;
  status = server_->Optimize("team-g", request, &optimized);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const v1::Graph& g = optimized.graph();
  ASSERT_EQ(g.outputs_size(), 2);
  EXPECT_EQ(g.outputs(1).name(), "x_grad");
  // The backward nodes are the gradient body's, named after the forward node.
  std::vector<std::string> names;
  for (const v1::Node& n : g.nodes()) names.push_back(n.name());
  EXPECT_THAT(names, ::testing::Contains(HasSubstr("c/grad/Mul")));
  for (const v1::Node& n : g.nodes()) EXPECT_NE(n.op_type(), "Cube") << "inlined";
  // And it computes y = x^3, dy/dx = 3 x^2.
  testing::TestRuntime runtime;
  auto outputs = runtime.Run(g, {{"x", testing::FloatTensor({3}, {1.0f, 2.0f, -1.5f})}});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  ASSERT_EQ(outputs->size(), 2u);
  EXPECT_THAT((*outputs)[0].span<float>(), ::testing::ElementsAre(1.0f, 8.0f, -3.375f));
  EXPECT_THAT((*outputs)[1].span<float>(), ::testing::ElementsAre(3.0f, 12.0f, 6.75f));
  // Without a gradient body the same request names the op.
  v1::OpDescriptor plain = Parse<v1::OpDescriptor>(kCube);
  plain.clear_gradient();
  plain.set_name("Cube2");
  ASSERT_TRUE(server_->Register("team-g", RegisterRequest({plain}), &registered).ok());
  request.mutable_graph()->mutable_nodes(0)->set_op_type("Cube2");
  status = server_->Optimize("team-g", request, &optimized);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("no gradient definition for op 'my.ops::Cube2'"));
}

}  // namespace
}  // namespace graphopt
