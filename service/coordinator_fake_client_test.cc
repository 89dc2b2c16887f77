// The coordinator's choices and retries against in-memory workers (no transport): what it does
// with each kind of answer WorkerClient reports. coordinator_test.cc runs it over real gRPC.
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "service/coordinator.h"
#include "service/session_table.h"
#include "util/stop_token.h"
#include "service/worker_client.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/spdlog.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

// A worker as its client sees it: ops it has, and what its next Executes answer.
struct FakeWorker {
  std::string id;
  std::vector<std::string> ops = {"::Identity", "::Relu"};
  absl::Mutex mu;
  // Answers of the next Execute calls, in order; then success (input "x" echoed as "y").
  std::vector<WorkerCallResult> failures ABSL_GUARDED_BY(mu);
  int loads ABSL_GUARDED_BY(mu) = 0;
  int executions ABSL_GUARDED_BY(mu) = 0;
  // While set, Executes wait until their call is cancelled (then fail on the way).
  bool hold ABSL_GUARDED_BY(mu) = false;
  // While set, probes find nothing listening.
  bool unreachable ABSL_GUARDED_BY(mu) = false;
  // Sessions loaded, by their name on the worker: executions applied to their state.
  std::map<std::string, int64_t> sessions ABSL_GUARDED_BY(mu);
  // A held Execute of a session applies its step before it waits (its answer is then lost).
  bool apply_before_hold ABSL_GUARDED_BY(mu) = false;
  int unloads ABSL_GUARDED_BY(mu) = 0;
};

class FakeCall final : public WorkerCall {
 public:
  void Cancel() override { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  std::atomic<bool> cancelled_{false};
};

WorkerCallResult NotFound(const std::string& what) {
  WorkerCallResult r;
  r.status = absl::NotFoundError(absl::StrCat(what, " not loaded"));
  r.answered = true;
  return r;
}

class FakeClient final : public WorkerClient {
 public:
  explicit FakeClient(FakeWorker* worker) : w_(worker) {}

  std::unique_ptr<WorkerCall> NewCall(absl::Time) override { return std::make_unique<FakeCall>(); }
  WorkerCallResult LoadPlan(WorkerCall&, const v1::LoadPlanRequest& request,
                            v1::LoadPlanResponse* response) override {
    absl::MutexLock lock(&w_->mu);
    ++w_->loads;
    response->set_plan_id(absl::StrCat(w_->id, "-plan"));
    if (!request.session().empty()) {
      response->set_state_version(w_->sessions[request.session()]);
    }
    return {};
  }
  WorkerCallResult Execute(WorkerCall& call, const v1::ExecuteRequest& request,
                           v1::ExecuteResponse* response) override {
    absl::MutexLock lock(&w_->mu);
    ++w_->executions;
    auto session = w_->sessions.end();
    if (!request.session().empty()) {
      session = w_->sessions.find(request.session());
      if (session == w_->sessions.end()) return NotFound("session");
      if (w_->hold && w_->apply_before_hold) ++session->second;
    }
    while (w_->hold) {
      if (static_cast<FakeCall&>(call).cancelled()) {
        WorkerCallResult r;
        r.status = absl::CancelledError("cancelled");
        return r;
      }
      // Releases the lock while it waits; looks at the cancellation every 5 ms.
      w_->mu.AwaitWithTimeout(absl::Condition(+[](bool* hold) { return !*hold; }, &w_->hold),
                              absl::Milliseconds(5));
    }
    if (!w_->failures.empty()) {
      WorkerCallResult r = w_->failures.front();
      w_->failures.erase(w_->failures.begin());
      return r;
    }
    for (const v1::NamedTensor& in : request.inputs()) {
      if (in.name() != "x") continue;
      v1::NamedTensor* out = response->add_outputs();
      out->set_name("y");
      *out->mutable_tensor() = in.tensor();
    }
    response->set_worker_id(w_->id);
    if (session != w_->sessions.end()) response->set_state_version(++session->second);
    return {};
  }
  WorkerCallResult FetchState(WorkerCall&, const v1::FetchStateRequest& request,
                              v1::FetchStateResponse* response) override {
    absl::MutexLock lock(&w_->mu);
    auto it = w_->sessions.find(request.session());
    if (it == w_->sessions.end()) return NotFound("session");
    for (const std::string& name : request.names()) response->add_state()->set_name(name);
    response->set_state_version(it->second);
    return {};
  }
  WorkerCallResult UnloadPlan(WorkerCall&, const v1::UnloadPlanRequest& request,
                              v1::UnloadPlanResponse* response) override {
    absl::MutexLock lock(&w_->mu);
    ++w_->unloads;
    response->set_unloaded(w_->sessions.erase(request.session()) > 0);
    return {};
  }
  void Describe(WorkerCall&, const v1::DescribeRequest&, v1::DescribeResponse* response,
                std::function<void(WorkerCallResult)> done) override {
    {
      absl::MutexLock lock(&w_->mu);
      if (w_->unreachable) {
        WorkerCallResult refused;
        refused.status = absl::UnavailableError("connection refused");
        refused.never_connected = true;
        done(refused);
        return;
      }
    }
    response->set_worker_id(w_->id);
    response->set_instance(absl::StrCat(w_->id, "-1"));
    v1::DeviceInfo* cpu = response->add_devices();
    cpu->set_name("cpu:0");
    cpu->set_kind("cpu");
    for (const std::string& op : w_->ops) response->add_supported_ops(op);
    done({});
  }

 private:
  FakeWorker* const w_;
};

// A failure on the way: the worker is gone (no answer of its own).
WorkerCallResult ConnectionLost() {
  WorkerCallResult r;
  r.status = absl::UnavailableError("connection lost");
  return r;
}

// The worker's own answer: the request is wrong.
WorkerCallResult Refused() {
  WorkerCallResult r;
  r.status = absl::InvalidArgumentError("input 'x': wrong shape");
  r.answered = true;
  return r;
}

// Its queue was full: nothing was done.
WorkerCallResult Busy() {
  WorkerCallResult r;
  r.status = absl::ResourceExhaustedError("queue full");
  r.answered = true;
  r.busy = true;
  return r;
}

v1::RunRequest Request(const std::string& ops = "Identity") {
  v1::RunRequest r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      absl::StrCat(R"pb(inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 1 } } } }
                        nodes { name: "n" op_type: ")pb",
                   ops, R"pb(" inputs: "x" outputs: "y" }
                        outputs { name: "y" })pb"),
      r.mutable_graph()));
  v1::NamedTensor* x = r.add_inputs();
  x->set_name("x");
  x->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
  x->mutable_tensor()->add_dims(1);
  const float one = 1.0f;
  x->mutable_tensor()->set_raw_data(std::string(reinterpret_cast<const char*>(&one), sizeof(one)));
  return r;
}

void AnswerNextExecute(FakeWorker& w, WorkerCallResult r) {
  absl::MutexLock lock(&w.mu);
  w.failures.push_back(std::move(r));
}

class CoordinatorFakeClientTest : public ::testing::Test {
 protected:
  // A coordinator knowing `workers` at addresses "a:1", "b:1", ... in order, each probed once,
  // added with `source`.
  std::unique_ptr<Coordinator> Make(std::vector<FakeWorker*> workers,
                                    const std::string& source = "flag",
                                    CoordinatorOptions options = CoordinatorOptions()) {
    std::map<std::string, FakeWorker*> by_address;
    for (FakeWorker* w : workers) by_address[absl::StrCat(w->id, ":1")] = w;
    auto logger = std::make_shared<spdlog::logger>(
        "coordinator_fake_client_test", std::make_shared<spdlog::sinks::null_sink_mt>());
    auto c = std::make_unique<Coordinator>(
        options,
        [by_address](const std::string& address) -> std::unique_ptr<WorkerClient> {
          return std::make_unique<FakeClient>(by_address.at(address));
        },
        /*optimizer=*/nullptr, /*blobs=*/nullptr, logger);
    for (const auto& [address, w] : by_address) EXPECT_TRUE(c->AddWorker(address, source).ok());
    c->ProbeNow();
    return c;
  }
};

std::string Health(const Coordinator& c, const std::string& address) {
  const v1::ListWorkersResponse list = c.ListWorkers();
  for (const v1::WorkerStatus& w : list.workers()) {
    if (w.address() == address) return w.health();
  }
  return "absent";
}

TEST_F(CoordinatorFakeClientTest, ADeadWorkersRequestIsRetriedOnAnother) {
  FakeWorker a{"a"}, b{"b"};
  AnswerNextExecute(a, ConnectionLost());
  auto c = Make({&a, &b});
  // Equally idle: the tie goes to the first by address.
  absl::StatusOr<v1::RunResponse> r = c->Run(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), "b");
  EXPECT_EQ(r->worker_address(), "b:1");
  EXPECT_EQ(r->attempts(), 2);
  EXPECT_EQ(r->outputs(0).name(), "y");
  EXPECT_EQ(Health(*c, "a:1"), "down");
  EXPECT_EQ(Health(*c, "b:1"), "up");
}

TEST_F(CoordinatorFakeClientTest, ABusyWorkerIsPassedOverWithoutUsingAnAttempt) {
  FakeWorker a{"a"}, b{"b"};
  AnswerNextExecute(a, Busy());
  auto c = Make({&a, &b});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), "b");
  EXPECT_EQ(r->attempts(), 1);
  EXPECT_EQ(Health(*c, "a:1"), "up");
}

TEST_F(CoordinatorFakeClientTest, AWorkersOwnRefusalIsTheAnswer) {
  FakeWorker a{"a"}, b{"b"};
  AnswerNextExecute(a, Refused());
  auto c = Make({&a, &b});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("on worker a:1: input 'x': wrong shape"));
  absl::MutexLock lock(&b.mu);
  EXPECT_EQ(b.executions, 0);
}

std::string Source(const Coordinator& c, const std::string& address) {
  const v1::ListWorkersResponse list = c.ListWorkers();
  for (const v1::WorkerStatus& w : list.workers()) {
    if (w.address() == address) return w.source();
  }
  return "absent";
}

// A worker whose etcd membership ends while it runs a call (its lease lapsed: cut off) gets no
// new work, but its call stays watched: when probing finds it dead, the call is retried
// elsewhere, and then the worker is forgotten.
TEST_F(CoordinatorFakeClientTest, AWorkerLeavingWithACallInFlightIsWatchedUntilItEnds) {
  FakeWorker a{"a"}, b{"b"};
  auto c = Make({&a, &b}, "etcd");
  {
    absl::MutexLock lock(&a.mu);
    a.hold = true;
  }
  absl::StatusOr<v1::RunResponse> held;
  std::thread run([&] { held = c->Run(Request()); });  // the tie goes to a
  {
    absl::MutexLock lock(&a.mu);
    a.mu.Await(absl::Condition(
        +[](int* executions) { return *executions > 0; }, &a.executions));
  }
  c->RemoveWorker("a:1", "etcd");
  EXPECT_EQ(Source(*c, "a:1"), "etcd (leaving)");
  // New work goes elsewhere.
  absl::StatusOr<v1::RunResponse> other = c->Run(Request());
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->worker_id(), "b");
  {
    absl::MutexLock lock(&a.mu);
    a.unreachable = true;
  }
  c->ProbeNow();
  run.join();
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->worker_id(), "b");
  EXPECT_EQ(held->attempts(), 2);
  EXPECT_EQ(Source(*c, "a:1"), "absent");
}

TEST_F(CoordinatorFakeClientTest, RemoveWorkerForgetsAnIdleMemberOfItsOwnSourceOnly) {
  FakeWorker a{"a"};
  auto c = Make({&a}, "etcd");
  c->RemoveWorker("a:1", "registered");  // not how it was added: stays
  EXPECT_EQ(Source(*c, "a:1"), "etcd");
  c->RemoveWorker("a:1", "etcd");  // nothing in flight: forgotten at once
  EXPECT_EQ(Source(*c, "a:1"), "absent");
}

TEST_F(CoordinatorFakeClientTest, ChoosesAWorkerWithTheKernels) {
  FakeWorker a{"a"}, b{"b"};
  a.ops = {"::Identity"};
  auto c = Make({&a, &b});
  absl::StatusOr<v1::RunResponse> r = c->Run(Request("Relu"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), "b");
  EXPECT_EQ(r->attempts(), 1);
  // Loaded once on the worker that ran it, then reused.
  r = c->Run(Request("Relu"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->loaded_plan());
  {
    absl::MutexLock lock(&b.mu);
    EXPECT_EQ(b.loads, 1);
    EXPECT_EQ(b.executions, 2);
  }
  r = c->Run(Request("Tanh"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.status().message(), HasSubstr("a kernel for op '::Tanh'"));
}

// A training step (a plan with state updates) of session `session`; `with_graph` false leaves the
// graph out, as later steps may.
v1::RunRequest Step(const std::string& session, bool with_graph = true,
                    const std::string& request_id = "") {
  v1::RunRequest r = Request();
  if (with_graph) {
    v1::StateUpdate* u = r.mutable_graph()->add_state_updates();
    u->set_state("w");
    u->set_update("w_new");
  } else {
    r.clear_graph();
  }
  r.set_session(session);
  r.set_request_id(request_id);
  return r;
}

int Executions(FakeWorker& w) {
  absl::MutexLock lock(&w.mu);
  return w.executions;
}

TEST_F(CoordinatorFakeClientTest, ASessionsStepsGoToTheWorkerThatHoldsItsState) {
  FakeWorker a{"a"}, b{"b"};
  auto c = Make({&a, &b});
  // a is busy when the session starts, so it starts on b.
  {
    absl::MutexLock lock(&a.mu);
    a.hold = true;
  }
  absl::StatusOr<v1::RunResponse> held;
  std::thread run([&] { held = c->Run(Request()); });
  while (Executions(a) < 1) absl::SleepFor(absl::Milliseconds(1));
  absl::StatusOr<v1::RunResponse> r = c->Run(Step("s1"), "acme");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), "b");
  EXPECT_TRUE(r->loaded_plan());
  EXPECT_EQ(r->state_version(), 1);
  {
    absl::MutexLock lock(&a.mu);
    a.hold = false;
  }
  run.join();
  ASSERT_TRUE(held.ok()) << held.status();
  for (int step = 2; step <= 4; ++step) {
    // Stateless Runs now prefer a (idle, it has their plan); the session's steps stay on b.
    absl::StatusOr<v1::RunResponse> stateless = c->Run(Request());
    ASSERT_TRUE(stateless.ok()) << stateless.status();
    EXPECT_EQ(stateless->worker_id(), "a");
    r = c->Run(Step("s1", /*with_graph=*/step % 2 == 0), "acme");
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->worker_id(), "b");
    EXPECT_FALSE(r->loaded_plan());
    EXPECT_EQ(r->state_version(), step);
    EXPECT_EQ(r->attempts(), 1);
  }
  absl::MutexLock lock(&b.mu);
  EXPECT_EQ(b.loads, 1);
  EXPECT_EQ(b.executions, 4);
  ASSERT_EQ(b.sessions.size(), 1u);
  EXPECT_EQ(b.sessions.begin()->second, 4);
  // The worker's session name carries the tenant, not only the caller's name.
  EXPECT_THAT(b.sessions.begin()->first,
              ::testing::StartsWith(SessionTable::WorkerSessionName("acme", "s1") + "#"));
}

TEST_F(CoordinatorFakeClientTest, ASessionsStepIsNeverRetriedElsewhereAndItsLossIsSaid) {
  FakeWorker a{"a"}, b{"b"};
  auto c = Make({&a, &b});
  ASSERT_TRUE(c->Run(Step("s1"), "acme").ok());
  AnswerNextExecute(a, ConnectionLost());
  absl::StatusOr<v1::RunResponse> r = c->Run(Step("s1", false), "acme");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(),
              HasSubstr("session 's1' was lost with worker a (a:1): Execute: UNAVAILABLE: "
                        "connection lost; start it again from your last fetched state"));
  EXPECT_EQ(Executions(b), 0);
  EXPECT_EQ(Health(*c, "a:1"), "down");
  EXPECT_EQ(c->sessions(), 0);
  // Every later step and FetchState says so, with or without the graph, until EndSession.
  for (bool with_graph : {false, true}) {
    r = c->Run(Step("s1", with_graph), "acme");
    EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
    EXPECT_THAT(r.status().message(), HasSubstr("was lost with worker a"));
  }
  v1::CoordinatorFetchStateRequest fetch;
  fetch.set_session("s1");
  EXPECT_EQ(c->FetchState(fetch, "acme").status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(Executions(b), 0);
  v1::EndSessionRequest end;
  end.set_session("s1");
  absl::StatusOr<v1::EndSessionResponse> ended = c->EndSession(end, "acme");
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_TRUE(ended->ended());
  r = c->Run(Step("s1"), "acme");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->worker_id(), "b");
  EXPECT_EQ(r->state_version(), 1);
}

TEST_F(CoordinatorFakeClientTest, AWorkerFoundDownLosesItsSessionsBeforeTheirNextStep) {
  FakeWorker a{"a"}, b{"b"};
  auto c = Make({&a, &b});
  ASSERT_TRUE(c->Run(Step("s1"), "acme").ok());
  {
    absl::MutexLock lock(&a.mu);
    a.unreachable = true;
  }
  c->ProbeNow();
  absl::StatusOr<v1::RunResponse> r = c->Run(Step("s1", false), "acme");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(r.status().message(), HasSubstr("session 's1' was lost with worker a (a:1): probe"));
  EXPECT_EQ(Executions(b), 0);
  // When it answers again, the lost session's state is dropped there.
  {
    absl::MutexLock lock(&a.mu);
    a.unreachable = false;
  }
  c->ProbeNow();
  c->MaintainSessions();
  absl::MutexLock lock(&a.mu);
  EXPECT_TRUE(a.sessions.empty());
}

// A session lost while its worker was unreachable may still have its state there; a new
// session of the same name must neither pick it up nor be dropped with it.
TEST_F(CoordinatorFakeClientTest, ASessionStartedAgainNeverMeetsTheLostOnesState) {
  FakeWorker a{"a"};
  auto c = Make({&a});
  ASSERT_TRUE(c->Run(Step("s1"), "acme").ok());
  ASSERT_TRUE(c->Run(Step("s1", false), "acme").ok());
  {
    absl::MutexLock lock(&a.mu);
    a.unreachable = true;
  }
  c->ProbeNow();  // down: s1 is lost (its state stays on a for now)
  {
    absl::MutexLock lock(&a.mu);
    a.unreachable = false;
  }
  c->ProbeNow();
  v1::EndSessionRequest end;
  end.set_session("s1");
  ASSERT_TRUE(c->EndSession(end, "acme").ok());
  absl::StatusOr<v1::RunResponse> r = c->Run(Step("s1"), "acme");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->state_version(), 1);  // from the initial state, not the lost one's 2
  c->MaintainSessions();             // drops the lost session's state on a
  r = c->Run(Step("s1", false), "acme");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->state_version(), 2);
  absl::MutexLock lock(&a.mu);
  EXPECT_EQ(a.sessions.size(), 1u);
}

TEST_F(CoordinatorFakeClientTest, SessionsArePrivateToTheirTenant) {
  FakeWorker a{"a"};
  auto c = Make({&a});
  ASSERT_TRUE(c->Run(Step("s1"), "acme").ok());
  ASSERT_TRUE(c->Run(Step("s1", false), "acme").ok());
  // globex cannot step, fetch or end acme's s1...
  EXPECT_EQ(c->Run(Step("s1", false), "globex").status().code(), absl::StatusCode::kNotFound);
  v1::CoordinatorFetchStateRequest fetch;
  fetch.set_session("s1");
  EXPECT_EQ(c->FetchState(fetch, "globex").status().code(), absl::StatusCode::kNotFound);
  v1::EndSessionRequest end;
  end.set_session("s1");
  absl::StatusOr<v1::EndSessionResponse> ended = c->EndSession(end, "globex");
  ASSERT_TRUE(ended.ok());
  EXPECT_FALSE(ended->ended());
  // ...and its own s1 is another session, with its own state.
  absl::StatusOr<v1::RunResponse> r = c->Run(Step("s1"), "globex");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->state_version(), 1);
  absl::StatusOr<v1::CoordinatorFetchStateResponse> state = c->FetchState(fetch, "acme");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->state_version(), 2);
  EXPECT_EQ(state->worker_id(), "a");
  absl::MutexLock lock(&a.mu);
  EXPECT_EQ(a.sessions.size(), 2u);
}

TEST_F(CoordinatorFakeClientTest, SessionsNeedAStatefulPlanAndViceVersa) {
  FakeWorker a{"a"};
  auto c = Make({&a});
  v1::RunRequest stateless = Request();
  stateless.set_session("s1");
  absl::StatusOr<v1::RunResponse> r = c->Run(stateless, "acme");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("which has no state_updates"));
  r = c->Run(Step("s1", false), "acme");  // no graph, no session yet
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("its first Run must carry the graph"));
  r = c->Run(Step("bad name"), "acme");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(c->Run(Step("s1"), "acme").ok());
  v1::RunRequest other = Step("s1");
  other.mutable_graph()->mutable_nodes(0)->set_name("m");
  r = c->Run(other, "acme");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(CoordinatorFakeClientTest, SessionLimitsAndIdleExpiry) {
  FakeWorker a{"a"};
  CoordinatorOptions options;
  options.max_sessions_per_tenant = 1;
  options.session_idle_timeout = absl::Milliseconds(50);
  auto c = Make({&a}, "flag", options);
  ASSERT_TRUE(c->Run(Step("s1"), "acme").ok());
  EXPECT_EQ(c->Run(Step("s2"), "acme").status().code(), absl::StatusCode::kResourceExhausted);
  ASSERT_TRUE(c->Run(Step("s1"), "globex").ok());
  absl::SleepFor(absl::Milliseconds(60));
  c->MaintainSessions();
  EXPECT_EQ(c->sessions(), 0);
  {
    absl::MutexLock lock(&a.mu);
    EXPECT_TRUE(a.sessions.empty());  // dropped on the worker
    EXPECT_EQ(a.unloads, 2);
  }
  absl::StatusOr<v1::RunResponse> r = c->Run(Step("s1", false), "acme");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("idle"));
  // The expired name is free once ended; the tenant's place is free at once.
  ASSERT_TRUE(c->Run(Step("s2"), "acme").ok());
}

TEST_F(CoordinatorFakeClientTest, ARetriedRequestIdNeverAppliesAStepTwice) {
  FakeWorker a{"a"};
  auto c = Make({&a});
  ASSERT_TRUE(c->Run(Step("s1", true, "r1"), "acme").ok());
  // Sent again after success: the stored answer, no second step.
  absl::StatusOr<v1::RunResponse> r = c->Run(Step("s1", true, "r1"), "acme");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->replayed());
  EXPECT_EQ(r->state_version(), 1);
  EXPECT_EQ(Executions(a), 1);

  // The caller goes away during a step the worker has applied: the retry learns it was.
  for (bool applied : {true, false}) {
    SCOPED_TRACE(applied ? "applied" : "not applied");
    const std::string id = applied ? "r2" : "r3";
    {
      absl::MutexLock lock(&a.mu);
      a.hold = true;
      a.apply_before_hold = applied;
    }
    const int before = Executions(a);
    StopToken stop;
    absl::StatusOr<v1::RunResponse> cancelled;
    std::thread run([&] { cancelled = c->Run(Step("s1", false, id), "acme", &stop); });
    while (Executions(a) == before) absl::SleepFor(absl::Milliseconds(1));
    stop.Cancel("the client went away");
    run.join();
    {
      absl::MutexLock lock(&a.mu);
      a.hold = false;
    }
    EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled);
    EXPECT_THAT(cancelled.status().message(), HasSubstr("may have been applied"));
    r = c->Run(Step("s1", false, id), "acme");
    if (applied) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
      EXPECT_THAT(r.status().message(),
                  HasSubstr("was applied (state_version 2) but its answer was lost"));
      EXPECT_EQ(Executions(a), before + 1);
    } else {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->state_version(), 3);
      EXPECT_EQ(Executions(a), before + 2);
    }
  }
  absl::MutexLock lock(&a.mu);
  EXPECT_EQ(a.sessions.begin()->second, 3);
}

TEST_F(CoordinatorFakeClientTest, ASessionRunsOneStepAtATime) {
  FakeWorker a{"a"};
  auto c = Make({&a});
  ASSERT_TRUE(c->Run(Step("s1"), "acme").ok());
  {
    absl::MutexLock lock(&a.mu);
    a.hold = true;
  }
  absl::StatusOr<v1::RunResponse> first;
  std::thread run([&] { first = c->Run(Step("s1", false), "acme"); });
  while (Executions(a) < 2) absl::SleepFor(absl::Milliseconds(1));
  absl::StatusOr<v1::RunResponse> second = c->Run(Step("s1", false), "acme");
  EXPECT_EQ(second.status().code(), absl::StatusCode::kAborted);
  EXPECT_THAT(second.status().message(), HasSubstr("running another step"));
  {
    absl::MutexLock lock(&a.mu);
    a.hold = false;
  }
  run.join();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->state_version(), 2);
}

}  // namespace
}  // namespace graphopt
