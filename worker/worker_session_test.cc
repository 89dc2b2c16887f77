// Sessions of stateful plans on a WorkerCore: state kept between executions, private per
// session, unchanged by failed executions, serialized, counted in the plan cache, dropped on
// unload.

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "runtime/kernels/cpu_kernels.h"
#include "worker/worker_service.h"

namespace graphopt {
namespace {

// acc <- acc + x after every execution; y = acc + x is returned too.
constexpr char kCounter[] = R"pb(
  nodes { name: "add" op_type: "Add" inputs: "acc" inputs: "x" outputs: "acc.next" }
  nodes { name: "copy" op_type: "Identity" inputs: "acc.next" outputs: "y" }
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
  inputs { name: "acc" type { dtype: DT_FLOAT32 shape { dims { size: 2 } } } }
  initializers { name: "acc" dtype: DT_FLOAT32 dims: 2 raw_data: "\0\0\x80\x3f\0\0\0\x40" }
  outputs { name: "y" }
  outputs { name: "acc.next" }
  state_updates { state: "acc" update: "acc.next" }
)pb";

std::vector<float> Floats(const v1::Tensor& t) {
  std::vector<float> v(t.raw_data().size() / sizeof(float));
  std::memcpy(v.data(), t.raw_data().data(), v.size() * sizeof(float));
  return v;
}

class WorkerSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(runtime::RegisterCpuKernels(kernels_).ok());
    WorkerOptions options;
    options.worker_id = "w";
    options.plan_cache_bytes = int64_t{1} << 20;
    core_ = std::make_unique<WorkerCore>(&kernels_, options);
  }

  absl::StatusOr<v1::LoadPlanResponse> Load(const std::string& session) {
    v1::LoadPlanRequest request;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kCounter, request.mutable_graph()));
    request.set_session(session);
    return core_->LoadPlan(std::move(request));
  }

  absl::StatusOr<v1::ExecuteResponse> Step(const std::string& plan, const std::string& session,
                                           std::vector<float> x) {
    v1::ExecuteRequest request;
    request.set_plan_id(plan);
    request.set_session(session);
    v1::NamedTensor* in = request.add_inputs();
    in->set_name("x");
    in->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
    in->mutable_tensor()->add_dims(static_cast<int64_t>(x.size()));
    in->mutable_tensor()->set_raw_data(x.data(), x.size() * sizeof(float));
    return core_->Execute(request);
  }

  // The session's acc and its version.
  std::pair<std::vector<float>, int64_t> State(const std::string& plan,
                                               const std::string& session) {
    v1::FetchStateRequest request;
    request.set_plan_id(plan);
    request.set_session(session);
    absl::StatusOr<v1::FetchStateResponse> r = core_->FetchState(request);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->state_size() != 1) return {{}, -1};
    EXPECT_EQ(r->state(0).name(), "acc");
    return {Floats(r->state(0).tensor()), r->state_version()};
  }

  runtime::KernelRegistry kernels_;
  std::unique_ptr<WorkerCore> core_;
};

TEST_F(WorkerSessionTest, StateIsKeptBetweenExecutions) {
  absl::StatusOr<v1::LoadPlanResponse> loaded = Load("a");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->already_loaded());
  EXPECT_EQ(loaded->state_bytes(), 8);
  for (int i = 1; i <= 3; ++i) {
    absl::StatusOr<v1::ExecuteResponse> r = Step(loaded->plan_id(), "a", {10, 20});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->state_version(), i);
    // The state update is kept, not returned.
    ASSERT_EQ(r->outputs_size(), 1);
    EXPECT_EQ(r->outputs(0).name(), "y");
    EXPECT_EQ(Floats(r->outputs(0).tensor()), (std::vector<float>{1.f + 10 * i, 2.f + 20 * i}));
  }
  EXPECT_EQ(State(loaded->plan_id(), "a"), (std::make_pair(std::vector<float>{31, 62}, int64_t{3})));
  // Loading the session again keeps its state.
  absl::StatusOr<v1::LoadPlanResponse> again = Load("a");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->already_loaded());
  EXPECT_EQ(again->state_version(), 3);
}

TEST_F(WorkerSessionTest, SessionsArePrivate) {
  absl::StatusOr<v1::LoadPlanResponse> a = Load("a");
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(Step(a->plan_id(), "a", {10, 20}).ok());
  absl::StatusOr<v1::LoadPlanResponse> b = Load("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->plan_id(), b->plan_id());
  EXPECT_FALSE(b->already_loaded());
  EXPECT_EQ(State(b->plan_id(), "b").first, (std::vector<float>{1, 2}));
  ASSERT_TRUE(Step(b->plan_id(), "b", {1, 1}).ok());
  EXPECT_EQ(State(a->plan_id(), "a").first, (std::vector<float>{11, 22}));
  EXPECT_EQ(State(b->plan_id(), "b").first, (std::vector<float>{2, 3}));
}

TEST_F(WorkerSessionTest, FailedExecutionLeavesTheStateUnchanged) {
  absl::StatusOr<v1::LoadPlanResponse> loaded = Load("a");
  ASSERT_TRUE(loaded.ok());
  ASSERT_TRUE(Step(loaded->plan_id(), "a", {10, 20}).ok());
  // [2] + [3] does not broadcast: the Add fails.
  absl::StatusOr<v1::ExecuteResponse> bad = Step(loaded->plan_id(), "a", {1, 2, 3});
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(State(loaded->plan_id(), "a"), (std::make_pair(std::vector<float>{11, 22}, int64_t{1})));
  // A cancelled run.
  StopToken stop;
  stop.Cancel("test");
  v1::ExecuteRequest request;
  request.set_plan_id(loaded->plan_id());
  request.set_session("a");
  v1::NamedTensor* in = request.add_inputs();
  in->set_name("x");
  in->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
  in->mutable_tensor()->add_dims(2);
  const float x[2] = {5, 5};
  in->mutable_tensor()->set_raw_data(x, sizeof(x));
  absl::StatusOr<v1::ExecuteResponse> cancelled = core_->Execute(request, &stop);
  EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(State(loaded->plan_id(), "a").second, 1);
  // The state is not fed by the caller.
  v1::NamedTensor* acc = request.add_inputs();
  acc->set_name("acc");
  *acc->mutable_tensor() = in->tensor();
  absl::StatusOr<v1::ExecuteResponse> fed = core_->Execute(request);
  EXPECT_EQ(fed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(fed.status().message().find("'acc' is state"), absl::string_view::npos);
}

TEST_F(WorkerSessionTest, ExecutionsOfOneSessionAreSerialized) {
  absl::StatusOr<v1::LoadPlanResponse> loaded = Load("a");
  ASSERT_TRUE(loaded.ok());
  constexpr int kThreads = 4, kSteps = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kSteps; ++i) EXPECT_TRUE(Step(loaded->plan_id(), "a", {1, 1}).ok());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(State(loaded->plan_id(), "a"),
            (std::make_pair(std::vector<float>{1 + kThreads * kSteps, 2 + kThreads * kSteps},
                            int64_t{kThreads * kSteps})));
}

// FetchState reads the last completed state at once; with wait_for_running it waits for the
// execution in flight (here: the test holding the session's execution turn).
TEST_F(WorkerSessionTest, FetchStateWaitsForTheRunningStepOnlyWhenAsked) {
  absl::StatusOr<v1::LoadPlanResponse> loaded = Load("a");
  ASSERT_TRUE(loaded.ok());
  std::shared_ptr<PlanSession> session = core_->session_for_testing(loaded->plan_id(), "a");
  ASSERT_NE(session, nullptr);
  v1::FetchStateRequest request;
  request.set_plan_id(loaded->plan_id());
  request.set_session("a");
  absl::Notification fetched;
  std::thread waiter;
  {
    absl::MutexLock turn(&session->run_mu);
    EXPECT_TRUE(core_->FetchState(request).ok());  // does not wait
    request.set_wait_for_running(true);
    waiter = std::thread([&] {
      EXPECT_TRUE(core_->FetchState(request).ok());
      fetched.Notify();
    });
    EXPECT_FALSE(fetched.WaitForNotificationWithTimeout(absl::Milliseconds(100)));
  }
  EXPECT_TRUE(fetched.WaitForNotificationWithTimeout(absl::Seconds(30)));
  waiter.join();
}

TEST_F(WorkerSessionTest, SessionsAreRequiredCountedAndUnloaded) {
  absl::StatusOr<v1::LoadPlanResponse> none = Load("");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("load it with a session"), absl::string_view::npos);
  absl::StatusOr<v1::LoadPlanResponse> loaded = Load("a");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(Step(loaded->plan_id(), "", {1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Step(loaded->plan_id(), "nope", {1, 1}).status().code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(Load("b").ok());
  v1::DescribeResponse d = core_->Describe();
  EXPECT_EQ(d.sessions(), 2);
  EXPECT_EQ(d.session_bytes(), 16);
  EXPECT_EQ(d.plan_cache_bytes(), loaded->plan_bytes() + 16);

  v1::UnloadPlanRequest unload;
  unload.set_plan_id(loaded->plan_id());
  unload.set_session("a");
  EXPECT_TRUE(core_->UnloadPlan(unload).unloaded());
  EXPECT_EQ(Step(loaded->plan_id(), "a", {1, 1}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(Step(loaded->plan_id(), "b", {1, 1}).ok());
  EXPECT_EQ(core_->Describe().sessions(), 1);
  unload.clear_session();
  EXPECT_TRUE(core_->UnloadPlan(unload).unloaded());
  d = core_->Describe();
  EXPECT_EQ(d.sessions(), 0);
  EXPECT_EQ(d.plan_cache_bytes(), 0);
}

TEST_F(WorkerSessionTest, StateThatDoesNotFitIsRefused) {
  WorkerOptions options;
  v1::LoadPlanRequest request;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(kCounter, request.mutable_graph()));
  // The plan (its bytes and its decoded initial state, 8 bytes) fits; a session's 8 do not.
  options.plan_cache_bytes = static_cast<int64_t>(request.graph().ByteSizeLong()) + 8 + 4;
  core_ = std::make_unique<WorkerCore>(&kernels_, options);
  absl::StatusOr<v1::LoadPlanResponse> loaded = Load("a");
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(loaded.status().message().find("session 'a'"), absl::string_view::npos);
}

}  // namespace
}  // namespace graphopt
