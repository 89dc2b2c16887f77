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
};

class FakeCall final : public WorkerCall {
 public:
  void Cancel() override { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }

 private:
  std::atomic<bool> cancelled_{false};
};

class FakeClient final : public WorkerClient {
 public:
  explicit FakeClient(FakeWorker* worker) : w_(worker) {}

  std::unique_ptr<WorkerCall> NewCall(absl::Time) override { return std::make_unique<FakeCall>(); }
  WorkerCallResult LoadPlan(WorkerCall&, const v1::LoadPlanRequest&,
                            v1::LoadPlanResponse* response) override {
    absl::MutexLock lock(&w_->mu);
    ++w_->loads;
    response->set_plan_id(absl::StrCat(w_->id, "-plan"));
    return {};
  }
  WorkerCallResult Execute(WorkerCall& call, const v1::ExecuteRequest& request,
                           v1::ExecuteResponse* response) override {
    absl::MutexLock lock(&w_->mu);
    ++w_->executions;
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
                                    const std::string& source = "flag") {
    std::map<std::string, FakeWorker*> by_address;
    for (FakeWorker* w : workers) by_address[absl::StrCat(w->id, ":1")] = w;
    auto logger = std::make_shared<spdlog::logger>(
        "coordinator_fake_client_test", std::make_shared<spdlog::sinks::null_sink_mt>());
    auto c = std::make_unique<Coordinator>(
        CoordinatorOptions(),
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

}  // namespace
}  // namespace graphopt
