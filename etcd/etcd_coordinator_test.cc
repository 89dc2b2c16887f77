// Coordinators of two server replicas sharing one real etcd: a request id runs once across both,
// and workers are known through their leases. Workers are in-memory (no transport).
#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "etcd/etcd_client.h"
#include "etcd/etcd_request_log.h"
#include "etcd/etcd_test_util.h"
#include "etcd/keys.h"
#include "etcd/worker_membership.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "service/coordinator.h"
#include "service/worker_client.h"
#include "spdlog/sinks/null_sink.h"
#include "spdlog/spdlog.h"

namespace graphopt {
namespace {



// One worker shared by both replicas' coordinators; Execute holds until `release`.
struct SharedWorker {
  std::atomic<int> executions{0};
  absl::Notification release;
};

class NoCall final : public WorkerCall {
 public:
  void Cancel() override {}
};

class SharedWorkerClient final : public WorkerClient {
 public:
  explicit SharedWorkerClient(SharedWorker* w) : w_(w) {}
  std::unique_ptr<WorkerCall> NewCall(absl::Time) override { return std::make_unique<NoCall>(); }
  WorkerCallResult LoadPlan(WorkerCall&, const v1::LoadPlanRequest&,
                            v1::LoadPlanResponse* response) override {
    response->set_plan_id("plan");
    return {};
  }
  WorkerCallResult Execute(WorkerCall&, const v1::ExecuteRequest& request,
                           v1::ExecuteResponse* response) override {
    ++w_->executions;
    w_->release.WaitForNotificationWithTimeout(absl::Seconds(10));
    for (const v1::NamedTensor& in : request.inputs()) {
      v1::NamedTensor* out = response->add_outputs();
      out->set_name("y");
      *out->mutable_tensor() = in.tensor();
    }
    response->set_worker_id("w");
    return {};
  }
  void Describe(WorkerCall&, const v1::DescribeRequest&, v1::DescribeResponse* response,
                std::function<void(WorkerCallResult)> done) override {
    response->set_worker_id("w");
    response->set_instance("w-1");
    v1::DeviceInfo* cpu = response->add_devices();
    cpu->set_name("cpu:0");
    cpu->set_kind("cpu");
    response->add_supported_ops("::Identity");
    done({});
  }

 private:
  SharedWorker* const w_;
};

v1::RunRequest Request(const std::string& id, float value = 1.0f) {
  v1::RunRequest r;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(inputs {
             name: "x"
             type {
               dtype: DT_FLOAT32
               shape { dims { size: 1 } }
             }
           }
           nodes { name: "n" op_type: "Identity" inputs: "x" outputs: "y" }
           outputs { name: "y" })pb",
      r.mutable_graph()));
  v1::NamedTensor* x = r.add_inputs();
  x->set_name("x");
  x->mutable_tensor()->set_dtype(v1::DT_FLOAT32);
  x->mutable_tensor()->add_dims(1);
  x->mutable_tensor()->set_raw_data(std::string(reinterpret_cast<const char*>(&value), 4));
  r.set_request_id(id);
  return r;
}

std::shared_ptr<spdlog::logger> NullLogger() {
  return std::make_shared<spdlog::logger>("etcd_coordinator_test",
                                          std::make_shared<spdlog::sinks::null_sink_mt>());
}

std::string Source(const Coordinator& c, const std::string& address) {
  const v1::ListWorkersResponse list = c.ListWorkers();
  for (const v1::WorkerStatus& w : list.workers()) {
    if (w.address() == address) return w.source();
  }
  return "absent";
}

class EtcdCoordinatorTest : public EtcdSuiteTest {
 protected:
  // A replica: its lease, its request log in etcd, its coordinator knowing `worker` at "w:1".
  struct Replica {
    std::unique_ptr<EtcdLeaseKeeper> lease;
    std::unique_ptr<Coordinator> coordinator;
  };
  Replica MakeReplica(const std::string& name, SharedWorker* worker) {
    Replica r;
    r.lease = std::make_unique<EtcdLeaseKeeper>(client_.get(), absl::Seconds(10), [](int64_t) {});
    EXPECT_TRUE(r.lease->Start().ok());
    r.coordinator = std::make_unique<Coordinator>(
        CoordinatorOptions(),
        [worker](const std::string&) -> std::unique_ptr<WorkerClient> {
          return std::make_unique<SharedWorkerClient>(worker);
        },
        /*optimizer=*/nullptr, /*blobs=*/nullptr, NullLogger());
    EtcdRequestLogOptions log_options;
    log_options.poll_interval = absl::Milliseconds(20);
    r.coordinator->UseRequestLog(std::make_shared<EtcdRequestLog>(
        client_.get(), prefix_, name, [keeper = r.lease.get()] { return keeper->lease(); },
        log_options));
    if (worker != nullptr) {
      EXPECT_TRUE(r.coordinator->AddWorker("w:1", "flag").ok());
      r.coordinator->ProbeNow();
    }
    return r;
  }

};

TEST_F(EtcdCoordinatorTest, ARequestIdRunsOnceAcrossReplicas) {
  SharedWorker worker;
  Replica a = MakeReplica("a:1", &worker);
  Replica b = MakeReplica("b:1", &worker);
  absl::StatusOr<v1::RunResponse> first;
  std::thread runner([&] { first = a.coordinator->Run(Request("job-1"), "acme"); });
  ASSERT_TRUE(Eventually([&] { return worker.executions.load() == 1; }));
  // The client retries on the other replica while the first still runs: it waits for that one.
  absl::StatusOr<v1::RunResponse> retry;
  std::thread retrier([&] { retry = b.coordinator->Run(Request("job-1"), "acme"); });
  absl::SleepFor(absl::Milliseconds(200));
  worker.release.Notify();
  runner.join();
  retrier.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_FALSE(first->replayed());
  EXPECT_TRUE(retry->replayed());
  EXPECT_EQ(retry->outputs(0).tensor().raw_data(), first->outputs(0).tensor().raw_data());
  EXPECT_EQ(worker.executions.load(), 1);

  // Later, and on a replica started since: still the first answer.
  Replica c = MakeReplica("c:1", &worker);
  absl::StatusOr<v1::RunResponse> later = c.coordinator->Run(Request("job-1"), "acme");
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_TRUE(later->replayed());
  EXPECT_EQ(worker.executions.load(), 1);
  absl::StatusOr<v1::RunResponse> other = c.coordinator->Run(Request("job-1", 2.0f), "acme");
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  // Another tenant's id is its own.
  EXPECT_FALSE(c.coordinator->Run(Request("job-1"), "other")->replayed());
  EXPECT_EQ(worker.executions.load(), 2);
}

TEST_F(EtcdCoordinatorTest, AFailedRunLeavesTheIdFree) {
  Replica a = MakeReplica("a:1", nullptr);  // no worker: the Run fails
  absl::StatusOr<v1::RunResponse> failed = a.coordinator->Run(Request("job-1"), "acme");
  ASSERT_FALSE(failed.ok());
  auto kv = client_->Get(absl::StrCat(etcd_keys::Requests(prefix_, "acme"), "job-1"));
  ASSERT_TRUE(kv.ok());
  EXPECT_FALSE(kv->has_value());
}

TEST_F(EtcdCoordinatorTest, WorkersAreKnownWhileTheirLeasesLive) {
  SharedWorker worker;
  worker.release.Notify();
  Replica server = MakeReplica("a:1", nullptr);
  Coordinator* coordinator = server.coordinator.get();
  EtcdWorkerWatcher watcher(
      client_.get(), prefix_,
      [coordinator](const std::string& address) {
        EXPECT_TRUE(coordinator->AddWorker(address, "etcd").ok());
      },
      [coordinator](const std::string& address) { coordinator->RemoveWorker(address, "etcd"); });
  ASSERT_TRUE(watcher.Start(absl::Seconds(10)).ok());

  auto announcer = std::make_unique<EtcdWorkerAnnouncer>(client_.get(), prefix_, "worker-7",
                                                         "w7.example:50061", absl::Seconds(10));
  ASSERT_TRUE(announcer->Start().ok());
  EXPECT_EQ(announcer->key(), absl::StrCat(prefix_, "workers/worker-7"));
  ASSERT_TRUE(Eventually([&] { return Source(*coordinator, "w7.example:50061") == "etcd"; }));
  // A worker the flag names stays when an etcd key of the same address goes.
  ASSERT_TRUE(coordinator->AddWorker("flagged:1", "flag").ok());
  ASSERT_TRUE(client_->Put(absl::StrCat(prefix_, "workers/f"), "flagged:1").ok());
  ASSERT_TRUE(client_->Delete(absl::StrCat(prefix_, "workers/f")).ok());

  announcer->Withdraw();  // a clean shutdown: gone at once
  ASSERT_TRUE(Eventually([&] { return Source(*coordinator, "w7.example:50061") == "absent"; }));
  EXPECT_EQ(Source(*coordinator, "flagged:1"), "flag");

  // A worker that crashed: its lease is not renewed, and its key goes after the TTL.
  auto lease = client_->GrantLease(absl::Seconds(2));
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(client_->Put(absl::StrCat(prefix_, "workers/crashed"), "crashed:1", *lease).ok());
  ASSERT_TRUE(Eventually([&] { return Source(*coordinator, "crashed:1") == "etcd"; }));
  ASSERT_TRUE(
      Eventually([&] { return Source(*coordinator, "crashed:1") == "absent"; }, absl::Seconds(8)));
  EXPECT_TRUE(watcher.Workers().empty());
}

}  // namespace
}  // namespace graphopt
