#include "service/coordinator.h"

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "ops/builtin_ops.h"
#include "graph/proto_util.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "passes/builtin_passes.h"
#include "proto/worker.grpc.pb.h"
#include "server/grpc_worker_client.h"
#include "service/blob_store.h"
#include "service/digest.h"
#include "service/optimizer.h"
#include "util/retry_hint.h"
#include "util/stop_token.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/spdlog.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

// A worker whose behaviour the test sets: which ops it has, whether its calls fail, hang or
// wait for the test. Serves on 127.0.0.1, port chosen by the system. Execute echoes input "x" as
// output "y".
class FakeWorker final : public v1::Worker::Service {
 public:
  explicit FakeWorker(std::string id, std::vector<std::string> ops = {"::Identity", "::Relu"})
      : id_(std::move(id)), ops_(std::move(ops)) {
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    address_ = absl::StrCat("127.0.0.1:", port);
  }
  ~FakeWorker() override { Kill(); }

  const std::string& address() const { return address_; }
  const std::string& id() const { return id_; }
  // Stops serving: calls in flight are cancelled, new ones find nobody.
  void Kill() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }

  // Every call (Describe included) hangs until cancelled: a stopped process.
  void set_stalled(bool stalled) {
    absl::MutexLock lock(&mu_);
    stalled_ = stalled;
  }
  // Execute answers with this error.
  void set_execute_error(grpc::StatusCode code) {
    absl::MutexLock lock(&mu_);
    execute_error_ = code;
  }
  // Execute waits until Release() (or cancellation).
  void set_hold(bool hold) {
    absl::MutexLock lock(&mu_);
    hold_ = hold;
  }
  void Release() { set_hold(false); }
  void EvictAll() {
    absl::MutexLock lock(&mu_);
    plans_.clear();
  }
  int loads() const {
    absl::MutexLock lock(&mu_);
    return loads_;
  }
  int executions() const {
    absl::MutexLock lock(&mu_);
    return executions_;
  }
  int waiting() const {
    absl::MutexLock lock(&mu_);
    return waiting_;
  }
  v1::Graph last_loaded() const {
    absl::MutexLock lock(&mu_);
    return last_loaded_;
  }

  // Advertised in Describe: executions at once (0: none advertised).
  void set_slots(int slots) {
    absl::MutexLock lock(&mu_);
    slots_ = slots;
  }
  // Execute answers RESOURCE_EXHAUSTED with "graphopt-busy", as a worker with a full queue.
  void set_busy(bool busy) {
    absl::MutexLock lock(&mu_);
    busy_ = busy;
  }
  // Executes running now, and the most that ran at once.
  int max_running() const {
    absl::MutexLock lock(&mu_);
    return max_running_;
  }
  int cancelled_executions() const {
    absl::MutexLock lock(&mu_);
    return cancelled_executions_;
  }

  grpc::Status Describe(grpc::ServerContext* context, const v1::DescribeRequest*,
                        v1::DescribeResponse* response) override {
    Answered(context);
    if (!WaitWhileStalled(context)) return Cancelled();
    absl::MutexLock lock(&mu_);
    response->set_worker_id(id_);
    response->set_max_concurrent_executions(slots_);
    v1::DeviceInfo* cpu = response->add_devices();
    cpu->set_name("cpu:0");
    cpu->set_kind("cpu");
    cpu->set_threads(1);
    for (const std::string& op : ops_) response->add_supported_ops(op);
    response->set_plans_loaded(static_cast<int32_t>(plans_.size()));
    response->set_executed(executions_);
    return grpc::Status::OK;
  }
  grpc::Status LoadPlan(grpc::ServerContext* context, const v1::LoadPlanRequest* request,
                        v1::LoadPlanResponse* response) override {
    Answered(context);
    if (!WaitWhileStalled(context)) return Cancelled();
    absl::MutexLock lock(&mu_);
    const std::string id = Sha256Digest(SerializeDeterministic(request->graph()));
    response->set_already_loaded(plans_.contains(id));
    plans_.insert(id);
    ++loads_;
    last_loaded_ = request->graph();
    response->set_plan_id(id);
    return grpc::Status::OK;
  }
  grpc::Status Execute(grpc::ServerContext* context, const v1::ExecuteRequest* request,
                       v1::ExecuteResponse* response) override {
    Answered(context);
    if (!WaitWhileStalled(context)) return Cancelled();
    absl::MutexLock lock(&mu_);
    if (busy_) {
      context->AddTrailingMetadata("graphopt-busy", "1");
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full");
    }
    if (!plans_.contains(request->plan_id())) {
      return grpc::Status(grpc::StatusCode::NOT_FOUND, "plan not loaded");
    }
    ++executions_;
    ++waiting_;
    max_running_ = std::max(max_running_, waiting_);
    auto released = [this, context]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return !hold_ || context->IsCancelled();
    };
    while (!released()) mu_.AwaitWithTimeout(absl::Condition(&released), absl::Milliseconds(5));
    --waiting_;
    if (context->IsCancelled()) {
      ++cancelled_executions_;
      return Cancelled();
    }
    if (execute_error_ != grpc::StatusCode::OK) {
      // As a real worker marks a failure of the request's own memory cap.
      if (execute_error_ == grpc::StatusCode::RESOURCE_EXHAUSTED &&
          request->memory_limit_bytes() > 0) {
        context->AddTrailingMetadata("graphopt-callers-limit", "memory_limit_bytes");
      }
      return grpc::Status(execute_error_, "told to fail");
    }
    for (const v1::NamedTensor& in : request->inputs()) {
      if (in.name() != "x") continue;
      v1::NamedTensor* out = response->add_outputs();
      out->set_name("y");
      *out->mutable_tensor() = in.tensor();
    }
    response->set_worker_id(id_);
    return grpc::Status::OK;
  }
  grpc::Status UnloadPlan(grpc::ServerContext* context, const v1::UnloadPlanRequest*,
                          v1::UnloadPlanResponse*) override {
    Answered(context);
    return grpc::Status::OK;
  }

 private:
  // What a real worker adds to every answer it sends itself.
  static void Answered(grpc::ServerContext* context) {
    context->AddTrailingMetadata("graphopt-origin", "worker");
  }
  static grpc::Status Cancelled() { return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled"); }
  // False when the call was cancelled while stalled.
  bool WaitWhileStalled(grpc::ServerContext* context) {
    absl::MutexLock lock(&mu_);
    auto go = [this, context]()
                  ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !stalled_ || context->IsCancelled(); };
    while (!go()) mu_.AwaitWithTimeout(absl::Condition(&go), absl::Milliseconds(5));
    return !context->IsCancelled();
  }

  const std::string id_;
  const std::vector<std::string> ops_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  mutable absl::Mutex mu_;
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  int slots_ ABSL_GUARDED_BY(mu_) = 0;
  int max_running_ ABSL_GUARDED_BY(mu_) = 0;
  int cancelled_executions_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::StatusCode execute_error_ ABSL_GUARDED_BY(mu_) = grpc::StatusCode::OK;
  absl::flat_hash_set<std::string> plans_ ABSL_GUARDED_BY(mu_);
  int loads_ ABSL_GUARDED_BY(mu_) = 0;
  int executions_ ABSL_GUARDED_BY(mu_) = 0;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  v1::Graph last_loaded_ ABSL_GUARDED_BY(mu_);
};

constexpr char kPlan[] = R"pb(
  inputs {
    name: "x"
    type {
      dtype: DT_FLOAT32
      shape { dims { size: 2 } }
    }
  }
  nodes { name: "id" op_type: "Identity" inputs: "x" outputs: "a" }
  nodes { name: "relu" op_type: "Relu" inputs: "a" outputs: "y" }
  outputs { name: "y" }
)pb";

v1::RunRequest Request(float value, const std::string& request_id = "",
                       const std::string& plan = kPlan) {
  v1::RunRequest r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(plan, r.mutable_graph()));
  v1::NamedTensor* x = r.add_inputs();
  x->set_name("x");
  x->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
  x->mutable_tensor()->add_dims(2);
  const float data[2] = {value, -value};
  x->mutable_tensor()->set_raw_data(std::string(reinterpret_cast<const char*>(data), sizeof(data)));
  r.set_request_id(request_id);
  return r;
}

// A plan of one node (its name, op and placement given) reading "x" and writing "y".
std::string OneNode(const std::string& node) {
  return absl::StrCat(R"pb(inputs { name: "x" type { dtype: DT_FLOAT32 } } nodes { )pb", node,
                      R"pb( inputs: "x" outputs: "y" } outputs { name: "y" })pb");
}

float FirstOutput(const v1::RunResponse& r) {
  float v = 0;
  std::memcpy(&v, r.outputs(0).tensor().raw_data().data(), sizeof(v));
  return v;
}

const v1::WorkerStatus* Find(const v1::ListWorkersResponse& list, const std::string& address) {
  for (const v1::WorkerStatus& w : list.workers()) {
    if (w.address() == address) return &w;
  }
  return nullptr;
}

class CoordinatorTest : public ::testing::Test {
 protected:
  CoordinatorTest() {
    options_.probe_interval = absl::Milliseconds(50);
    options_.probe_timeout = absl::Milliseconds(300);
    options_.call_timeout = absl::Seconds(20);
  }

  std::unique_ptr<Coordinator> Make(const std::vector<FakeWorker*>& workers,
                                    const Optimizer* optimizer = nullptr,
                                    BlobStore* blobs = nullptr) {
    auto logger = std::make_shared<spdlog::logger>("coordinator_test",
                                                   std::make_shared<spdlog::sinks::null_sink_mt>());
    auto c = std::make_unique<Coordinator>(options_, GrpcWorkerClientFactory({}), optimizer,
                                           blobs, logger);
    for (FakeWorker* w : workers) EXPECT_TRUE(c->AddWorker(w->address(), "flag").ok());
    c->ProbeNow();
    return c;
  }

  CoordinatorOptions options_;
};

TEST_F(CoordinatorTest, LoadsOncePerWorkerAndReportsWhoRan) {
  FakeWorker a("a");
  auto c = Make({&a});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1.5f));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(FirstOutput(*r), 1.5f);
  EXPECT_EQ(r->worker_id(), "a");
  EXPECT_EQ(r->worker_address(), a.address());
  EXPECT_EQ(r->attempts(), 1);
  EXPECT_TRUE(r->loaded_plan());
  EXPECT_THAT(r->plan_id(), HasSubstr("sha256:"));
  r = c->Run(Request(2.5f));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->loaded_plan());
  EXPECT_EQ(a.loads(), 1);
  EXPECT_EQ(a.executions(), 2);
}

TEST_F(CoordinatorTest, PicksTheLeastLoadedWorker) {
  FakeWorker a("a"), b("b");
  auto c = Make({&a, &b});
  a.set_hold(true);
  b.set_hold(true);
  std::thread first([&] { EXPECT_TRUE(c->Run(Request(1)).ok()); });
  while (a.waiting() + b.waiting() < 1) absl::SleepFor(absl::Milliseconds(1));
  // The second goes to the idle worker, whichever the first took.
  std::thread second([&] { EXPECT_TRUE(c->Run(Request(2)).ok()); });
  while (a.waiting() + b.waiting() < 2) absl::SleepFor(absl::Milliseconds(1));
  EXPECT_EQ(a.waiting(), 1);
  EXPECT_EQ(b.waiting(), 1);
  v1::ListWorkersResponse list = c->ListWorkers();
  EXPECT_EQ(Find(list, a.address())->executing(), 1);
  a.Release();
  b.Release();
  first.join();
  second.join();
}

TEST_F(CoordinatorTest, PrefersAWorkerThatHasThePlan) {
  FakeWorker a("a"), b("b");
  auto c = Make({&a, &b});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  ASSERT_TRUE(r.ok()) << r.status();
  const std::string first = r->worker_id();
  for (int i = 0; i < 3; ++i) {
    r = c->Run(Request(1));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->worker_id(), first);
    EXPECT_FALSE(r->loaded_plan());
  }
}

TEST_F(CoordinatorTest, OnlyWorkersWithTheOpsAndDevices) {
  FakeWorker relu_only("relu_only", {"::Relu"}), both("both");
  auto c = Make({&relu_only, &both});
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->worker_id(), "both");
  }
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(
      1, "", OneNode(R"pb(name: "odd" op_type: "Swish" domain: "com.example")pb")));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.status().message(), HasSubstr("op 'com.example::Swish' (node 'odd')"));
  r = c->Run(Request(1, "", OneNode(R"pb(name: "on_gpu" op_type: "Relu" device: "gpu:0")pb")));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.status().message(), HasSubstr("device 'gpu:0' (node 'on_gpu')"));
  r = c->Run(Request(1, "", OneNode(R"pb(name: "on_cpu" op_type: "Relu" device: "cpu:0")pb")));
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST_F(CoordinatorTest, DeadWorkerIsMarkedDownAndTheRequestRetried) {
  FakeWorker a("a"), b("b");
  auto c = Make({&a, &b});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  ASSERT_TRUE(r.ok()) << r.status();
  // The worker with the plan is picked next; it dies first.
  FakeWorker& dead = r->worker_id() == "a" ? a : b;
  FakeWorker& alive = r->worker_id() == "a" ? b : a;
  dead.Kill();
  r = c->Run(Request(3));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), alive.id());
  EXPECT_EQ(r->attempts(), 2);
  EXPECT_EQ(FirstOutput(*r), 3.0f);
  v1::ListWorkersResponse list = c->ListWorkers();
  EXPECT_EQ(Find(list, dead.address())->health(), "down");
  EXPECT_EQ(Find(list, dead.address())->failures(), 1);
  EXPECT_THAT(Find(list, dead.address())->last_error(), HasSubstr("UNAVAILABLE"));
  EXPECT_EQ(Find(list, alive.address())->health(), "up");
  for (int i = 0; i < 3; ++i) {
    r = c->Run(Request(1));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->attempts(), 1);
  }
}

TEST_F(CoordinatorTest, UnavailableNamingThePlanAfterTheAttemptsAllowed) {
  options_.max_attempts = 2;
  FakeWorker a("a"), b("b"), d("d");
  for (FakeWorker* w : {&a, &b, &d}) w->set_execute_error(grpc::StatusCode::UNAVAILABLE);
  auto c = Make({&a, &b, &d});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("plan sha256:"));
  EXPECT_THAT(r.status().message(), HasSubstr("2 attempt(s)"));
  EXPECT_EQ(a.executions() + b.executions() + d.executions(), 2);

  // No workers at all, or none up.
  auto empty = Make({});
  r = empty->Run(Request(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("no workers known"));
  for (FakeWorker* w : {&a, &b, &d}) w->Kill();
  c->ProbeNow();
  r = c->Run(Request(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(), HasSubstr("0 up"));
}

TEST_F(CoordinatorTest, ErrorsAboutTheRequestAreNotRetried) {
  FakeWorker a("a"), b("b");
  a.set_execute_error(grpc::StatusCode::INVALID_ARGUMENT);
  b.set_execute_error(grpc::StatusCode::INVALID_ARGUMENT);
  auto c = Make({&a, &b});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("told to fail"));
  EXPECT_EQ(a.executions() + b.executions(), 1);
  const v1::ListWorkersResponse list = c->ListWorkers();
  for (const v1::WorkerStatus& w : list.workers()) EXPECT_EQ(w.health(), "up");
}

TEST_F(CoordinatorTest, ReloadsAPlanTheWorkerLost) {
  FakeWorker a("a");
  auto c = Make({&a});
  ASSERT_TRUE(c->Run(Request(1)).ok());
  a.EvictAll();
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->loaded_plan());
  EXPECT_EQ(r->attempts(), 1);
  EXPECT_EQ(a.loads(), 2);
}

TEST_F(CoordinatorTest, StalledWorkerIsDetectedAndItsRequestMovesOn) {
  FakeWorker a("a"), b("b");
  auto c = Make({&a, &b});
  c->Start();
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  ASSERT_TRUE(r.ok()) << r.status();
  FakeWorker& ran = r->worker_id() == "a" ? a : b;
  FakeWorker& other = r->worker_id() == "a" ? b : a;
  // The next request goes to the worker that has the plan, which then stops answering.
  ran.set_stalled(true);
  const absl::Time start = absl::Now();
  r = c->Run(Request(4));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), other.id());
  EXPECT_EQ(r->attempts(), 2);
  EXPECT_EQ(FirstOutput(*r), 4.0f);
  // Probe interval + probe timeout, with room for a slow machine.
  EXPECT_LT(absl::Now() - start, absl::Seconds(3));
  EXPECT_EQ(Find(c->ListWorkers(), ran.address())->health(), "down");
  // Back, and up again at the next probes.
  ran.set_stalled(false);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (Find(c->ListWorkers(), ran.address())->health() != "up" && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Find(c->ListWorkers(), ran.address())->health(), "up");
}

TEST_F(CoordinatorTest, CancelAllEndsRunsWithoutBlamingWorkers) {
  FakeWorker a("a");
  auto c = Make({&a});
  a.set_hold(true);
  absl::StatusOr<v1::RunResponse> held;
  std::thread run([&] { held = c->Run(Request(1)); });
  while (a.waiting() < 1) absl::SleepFor(absl::Milliseconds(1));
  c->CancelAll();
  run.join();
  EXPECT_EQ(held.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(held.status().message(), HasSubstr("shutting down"));
  EXPECT_EQ(c->Run(Request(1)).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Find(c->ListWorkers(), a.address())->health(), "up");
  a.Release();
}

TEST_F(CoordinatorTest, RequestIdRunsOnceAndReplaysTheAnswer) {
  FakeWorker a("a");
  auto c = Make({&a});
  absl::StatusOr<v1::RunResponse> first = c->Run(Request(1, "req-1"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->replayed());
  EXPECT_EQ(first->request_id(), "req-1");
  absl::StatusOr<v1::RunResponse> again = c->Run(Request(1, "req-1"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->replayed());
  EXPECT_EQ(again->outputs(0).tensor().raw_data(), first->outputs(0).tensor().raw_data());
  EXPECT_EQ(a.executions(), 1);

  // Other inputs under the same id.
  absl::StatusOr<v1::RunResponse> other = c->Run(Request(2, "req-1"));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(other.status().message(), HasSubstr("request_id: 'req-1' was already used"));

  // Concurrent copies: one execution, every caller gets the answer.
  a.set_hold(true);
  std::vector<std::thread> callers;
  std::vector<absl::StatusOr<v1::RunResponse>> answers(4);
  for (int i = 0; i < 4; ++i) {
    callers.emplace_back([&, i] { answers[i] = c->Run(Request(5, "req-2")); });
  }
  while (a.waiting() < 1) absl::SleepFor(absl::Milliseconds(1));
  absl::SleepFor(absl::Milliseconds(50));
  a.Release();
  for (std::thread& t : callers) t.join();
  int replayed = 0;
  for (const auto& answer : answers) {
    ASSERT_TRUE(answer.ok()) << answer.status();
    EXPECT_EQ(FirstOutput(*answer), 5.0f);
    replayed += answer->replayed();
  }
  EXPECT_EQ(replayed, 3);
  EXPECT_EQ(a.executions(), 2);
}

TEST_F(CoordinatorTest, FailedRequestIdMayBeTriedAgain) {
  FakeWorker a("a");
  a.set_execute_error(grpc::StatusCode::UNAVAILABLE);
  auto c = Make({&a});
  EXPECT_EQ(c->Run(Request(1, "req")).status().code(), absl::StatusCode::kUnavailable);
  a.set_execute_error(grpc::StatusCode::OK);
  c->ProbeNow();
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1, "req"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->replayed());
}

TEST_F(CoordinatorTest, RequestIdsAreForgottenOldestFirst) {
  options_.dedup_entries = 2;
  FakeWorker a("a");
  auto c = Make({&a});
  for (const char* id : {"r1", "r2", "r3"}) ASSERT_TRUE(c->Run(Request(1, id)).ok());
  EXPECT_TRUE(c->Run(Request(1, "r3"))->replayed());
  EXPECT_FALSE(c->Run(Request(1, "r1"))->replayed());  // forgotten: runs again
  EXPECT_EQ(a.executions(), 4);
}

TEST_F(CoordinatorTest, BadRequestsNameTheField) {
  FakeWorker a("a");
  auto c = Make({&a});
  auto expect = [&](v1::RunRequest r, const std::string& text) {
    absl::StatusOr<v1::RunResponse> answer = c->Run(std::move(r));
    EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(answer.status().message(), HasSubstr(text));
  };
  v1::RunRequest r = Request(1);
  r.clear_graph();
  expect(r, "graph: missing");
  r = Request(1);
  r.mutable_inputs(0)->clear_name();
  expect(r, "inputs[0].name: empty");
  r = Request(1);
  r.mutable_inputs(0)->clear_tensor();
  expect(r, "inputs[0].tensor: missing");
  r = Request(1);
  *r.add_inputs() = r.inputs(0);
  expect(r, "inputs[1]: input 'x' is given twice");
  r = Request(1, std::string(300, 'i'));
  expect(r, "request_id: 300 bytes");
  r = Request(1);
  (*r.mutable_dim_bindings())["batch"] = 2;
  expect(r, "dim_bindings: given without optimize");

  v1::RegisterWorkerRequest reg;
  for (const char* bad : {"", "host", "host:", ":80", "host:0", "host:99999", "a:b:80", "h:8x"}) {
    reg.set_address(bad);
    absl::Status s = c->Register(reg);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(s.message(), HasSubstr("address: '")) << bad;
  }
  for (const char* good : {"worker-1.example:50061", "10.0.0.7:1", "[::1]:50061"}) {
    EXPECT_TRUE(CheckHostPort(good, "x").ok()) << good;
  }
  EXPECT_EQ(c->AddWorker("nope", "flag").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c->AddDnsName("nope").code(), absl::StatusCode::kInvalidArgument);
  // The coordinator still serves.
  EXPECT_TRUE(c->Run(Request(1)).ok());
}

TEST_F(CoordinatorTest, OptimizesFirstWhenAsked) {
  OpRegistry ops;
  PassRegistry passes;
  ASSERT_TRUE(RegisterBuiltinOps(&ops).ok());
  ASSERT_TRUE(RegisterBuiltinPasses(&passes).ok());
  Optimizer optimizer(&ops, &passes);
  FakeWorker a("a");
  auto c = Make({&a}, &optimizer);
  v1::RunRequest r = Request(1);
  r.mutable_optimize()->set_opt_level(1);
  absl::StatusOr<v1::RunResponse> answer = c->Run(r);
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_GT(answer->reports_size(), 0);
  // The identity is gone from the plan the worker got.
  ASSERT_EQ(a.last_loaded().nodes_size(), 1);
  EXPECT_EQ(a.last_loaded().nodes(0).op_type(), "Relu");

  r.mutable_optimize()->add_passes()->set_name("no_such_pass");
  answer = c->Run(r);
  EXPECT_FALSE(answer.ok());
  EXPECT_THAT(answer.status().message(), HasSubstr("optimize: "));

  // Without an optimizer.
  auto plain = Make({&a});
  r = Request(1);
  r.mutable_optimize();
  EXPECT_EQ(plain->Run(r).status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(CoordinatorTest, BlobReferencesAreInlinedForTheWorker) {
  BlobStore blobs(1 << 20);
  const float weights[2] = {0.5f, 2.0f};
  const std::string bytes(reinterpret_cast<const char*>(weights), sizeof(weights));
  absl::StatusOr<std::string> digest = blobs.Put(kDefaultTenant, bytes);
  ASSERT_TRUE(digest.ok()) << digest.status();
  FakeWorker a("a", {"::Mul"});
  auto c = Make({&a}, nullptr, &blobs);
  constexpr char kWeighted[] = R"pb(
    inputs {
      name: "x"
      type {
        dtype: DT_FLOAT32
        shape { dims { size: 2 } }
      }
    }
    initializers { name: "w" dtype: DT_FLOAT32 dims: 2 blob: "BLOB" }
    nodes { name: "mul" op_type: "Mul" inputs: "x" inputs: "w" outputs: "y" }
    outputs { name: "y" })pb";
  std::string text = kWeighted;
  text.replace(text.find("BLOB"), 4, *digest);
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1, "", text));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(a.last_loaded().initializers_size(), 1);
  EXPECT_EQ(a.last_loaded().initializers(0).raw_data(), bytes);
  EXPECT_TRUE(a.last_loaded().initializers(0).blob().empty());

  text = kWeighted;
  text.replace(text.find("BLOB"), 4, Sha256Digest("not stored"));
  r = c->Run(Request(1, "", text));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("initializer 'w' refers to blob"));
}

TEST_F(CoordinatorTest, RegisteredWorkersAndDnsNames) {
  options_.forget_after = absl::Milliseconds(100);
  FakeWorker a("a");
  auto c = Make({});
  v1::RegisterWorkerRequest reg;
  reg.set_address(a.address());
  reg.set_worker_id("a");
  ASSERT_TRUE(c->Register(reg).ok());
  // Another address claiming a's id while a lives is refused (a hijack, or a copy-pasted
  // --worker_id), naming the live one.
  reg.set_address("127.0.0.1:1");
  absl::Status taken = c->Register(reg, "graphopt-worker");
  EXPECT_EQ(taken.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(taken.message(), HasSubstr(absl::StrCat("taken by the live worker at ", a.address())));
  reg.set_worker_id("ghost");  // nobody there
  ASSERT_TRUE(c->Register(reg).ok());
  c->ProbeNow();
  v1::ListWorkersResponse list = c->ListWorkers();
  ASSERT_EQ(list.workers_size(), 2);
  EXPECT_EQ(Find(list, a.address())->health(), "up");
  EXPECT_EQ(Find(list, a.address())->source(), "registered");
  EXPECT_EQ(Find(list, a.address())->devices(0).name(), "cpu:0");
  EXPECT_EQ(Find(list, "127.0.0.1:1")->health(), "down");
  absl::SleepFor(absl::Milliseconds(150));
  c->ProbeNow();
  list = c->ListWorkers();
  // The dead one, with no heartbeat since, is forgotten; the live one stays.
  ASSERT_EQ(list.workers_size(), 1);
  EXPECT_EQ(list.workers(0).address(), a.address());

  const std::string port = a.address().substr(a.address().rfind(':') + 1);
  auto by_dns = Make({});
  ASSERT_TRUE(by_dns->AddDnsName(absl::StrCat("localhost:", port)).ok());
  by_dns->ProbeNow();
  const v1::ListWorkersResponse dns_list = by_dns->ListWorkers();
  const v1::WorkerStatus* found = Find(dns_list, a.address());
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->source(), "dns");
  EXPECT_EQ(found->health(), "up");
}

TEST_F(CoordinatorTest, RegistrationsAreBounded) {
  options_.max_workers = 2;
  auto c = Make({});
  v1::RegisterWorkerRequest reg;
  for (int port : {1, 2}) {
    reg.set_address(absl::StrCat("127.0.0.1:", port));
    ASSERT_TRUE(c->Register(reg).ok());
  }
  reg.set_address("127.0.0.1:3");
  absl::Status third = c->Register(reg);
  EXPECT_EQ(third.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(third.message(), HasSubstr("--max_workers"));
  reg.set_address("127.0.0.1:2");  // a heartbeat of a known one is fine
  EXPECT_TRUE(c->Register(reg).ok());
}

TEST_F(CoordinatorTest, NeverMoreExecutionsThanAWorkerAdvertises) {
  FakeWorker a("a");
  a.set_slots(2);
  a.set_hold(true);
  auto c = Make({&a});
  std::vector<std::thread> runs;
  std::vector<absl::StatusOr<v1::RunResponse>> results(5, absl::UnknownError(""));
  for (int i = 0; i < 5; ++i) runs.emplace_back([&, i] { results[i] = c->Run(Request(i)); });
  // Two run; three wait in the coordinator, not on the worker.
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (a.waiting() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(a.waiting(), 2);
  EXPECT_EQ(Find(c->ListWorkers(), a.address())->slots(), 2);
  a.Release();
  for (std::thread& t : runs) t.join();
  for (const auto& r : results) EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(a.max_running(), 2);
  EXPECT_EQ(a.executions(), 5);
}

TEST_F(CoordinatorTest, WaitingForASlotEndsWithAHintOrTheDeadline) {
  options_.slot_wait = absl::Milliseconds(200);
  FakeWorker a("a");
  a.set_slots(1);
  a.set_hold(true);
  auto c = Make({&a});
  std::thread held([&] { EXPECT_TRUE(c->Run(Request(1)).ok()); });
  while (a.waiting() < 1) absl::SleepFor(absl::Milliseconds(5));
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(2));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("stayed busy"));
  EXPECT_TRUE(RetryAfter(r.status()).has_value());
  // The caller's deadline comes first: DEADLINE_EXCEEDED, not a busy answer.
  StopToken soon(absl::Now() + absl::Milliseconds(50));
  r = c->Run(Request(3), kDefaultTenant, &soon);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(Find(c->ListWorkers(), a.address())->health(), "up");
  a.Release();
  held.join();
}

TEST_F(CoordinatorTest, TheCallersDeadlineAndCancellationReachTheWorker) {
  FakeWorker a("a");
  a.set_hold(true);
  auto c = Make({&a});
  StopToken deadline(absl::Now() + absl::Milliseconds(300));
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1), kDefaultTenant, &deadline);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  // Not the worker's fault: it stays up, nothing is retried elsewhere, the plan is not blamed.
  c->ProbeNow();
  EXPECT_EQ(Find(c->ListWorkers(), a.address())->health(), "up");
  EXPECT_EQ(a.executions(), 1);
  const absl::Time until = absl::Now() + absl::Seconds(5);
  while (a.cancelled_executions() < 1 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(a.cancelled_executions(), 1);

  StopToken cancel;
  std::thread canceller([&] {
    while (a.waiting() < 1) absl::SleepFor(absl::Milliseconds(5));
    cancel.Cancel("the client cancelled the call");
  });
  r = c->Run(Request(2), kDefaultTenant, &cancel);
  canceller.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("the client cancelled the call"));
  c->ProbeNow();
  EXPECT_EQ(Find(c->ListWorkers(), a.address())->health(), "up");
  EXPECT_FALSE(c->Quarantined(r.status().message().empty() ? "" : "x").has_value());
}

TEST_F(CoordinatorTest, ABusyWorkerPassesTheRunOnWithoutUsingAnAttempt) {
  options_.max_attempts = 1;
  FakeWorker busy("busy"), free("free");
  busy.set_busy(true);
  auto c = Make({&busy, &free});
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<v1::RunResponse> r = c->Run(Request(i));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->worker_id(), "free");
  }
  EXPECT_EQ(Find(c->ListWorkers(), busy.address())->health(), "up");
}

TEST_F(CoordinatorTest, AWorkersOwnResourceFailureIsRetriedOnceThenAnswered) {
  FakeWorker a("a"), b("b"), d("d");
  for (FakeWorker* w : {&a, &b, &d}) w->set_execute_error(grpc::StatusCode::RESOURCE_EXHAUSTED);
  auto c = Make({&a, &b, &d});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("told to fail"));
  EXPECT_EQ(a.executions() + b.executions() + d.executions(), 2);  // retried once, no more
  for (FakeWorker* w : {&a, &b, &d}) {
    EXPECT_EQ(Find(c->ListWorkers(), w->address())->health(), "up");
  }
}

TEST_F(CoordinatorTest, GoingOverTheRequestsOwnMemoryCapIsNotRetried) {
  FakeWorker a("a"), b("b");
  for (FakeWorker* w : {&a, &b}) w->set_execute_error(grpc::StatusCode::RESOURCE_EXHAUSTED);
  auto c = Make({&a, &b});
  v1::RunRequest request = Request(1);
  request.set_memory_limit_bytes(1 << 20);
  absl::StatusOr<v1::RunResponse> r = c->Run(request);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), HasSubstr("told to fail"));
  EXPECT_EQ(a.executions() + b.executions(), 1);
}

TEST_F(CoordinatorTest, APlanThatKillsTwoWorkersIsQuarantined) {
  FakeWorker a("a"), b("b"), d("d");
  for (FakeWorker* w : {&a, &b}) w->set_hold(true);
  d.set_slots(1);
  auto c = Make({&a, &b});
  // The plan "kills" each worker it runs on: the worker goes away while executing it.
  std::thread killer([&] {
    for (int killed = 0; killed < 2;) {
      for (FakeWorker* w : {&a, &b}) {
        if (w->waiting() > 0) {
          w->Kill();
          ++killed;
        }
      }
      absl::SleepFor(absl::Milliseconds(2));
    }
  });
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  killer.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  const std::string plan_id = Sha256Digest(SerializeDeterministic(Request(1).graph()));
  std::optional<std::string> why = c->Quarantined(plan_id);
  ASSERT_TRUE(why.has_value());
  EXPECT_THAT(*why, HasSubstr("a (" + a.address() + ")"));
  // A healthy worker joins; the plan is refused before it reaches it, other plans run.
  ASSERT_TRUE(c->AddWorker(d.address(), "flag").ok());
  c->ProbeNow();
  r = c->Run(Request(2));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("is quarantined"));
  EXPECT_EQ(d.executions(), 0);
  r = c->Run(Request(2, "", OneNode(R"pb(name: "other" op_type: "Relu")pb")));
  EXPECT_TRUE(r.ok()) << r.status();
}

TEST_F(CoordinatorTest, QuarantineEnds) {
  options_.quarantine = absl::Milliseconds(100);
  options_.deaths_to_quarantine = 1;
  FakeWorker a("a"), b("b");
  a.set_hold(true);
  auto c = Make({&a});
  absl::StatusOr<v1::RunResponse> first = absl::UnknownError("not run");
  std::thread run([&] { first = c->Run(Request(1)); });
  while (a.waiting() < 1) absl::SleepFor(absl::Milliseconds(2));
  // b joins while the plan runs on a; then a dies of it.
  ASSERT_TRUE(c->AddWorker(b.address(), "flag").ok());
  c->ProbeNow();
  a.Kill();
  run.join();
  EXPECT_TRUE(first.ok()) << first.status();  // retried on b, which survives
  absl::StatusOr<v1::RunResponse> r = c->Run(Request(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  absl::SleepFor(absl::Milliseconds(150));
  EXPECT_TRUE(c->Run(Request(1)).ok());
}

}  // namespace
}  // namespace graphopt
