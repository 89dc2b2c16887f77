#ifndef GRAPHOPT_SERVICE_COORDINATOR_H_
#define GRAPHOPT_SERVICE_COORDINATOR_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/coordinator.pb.h"
#include "proto/worker.pb.h"
#include "service/blob_store.h"
#include "service/optimizer.h"
#include "service/request_log.h"
#include "service/session_table.h"
#include "service/tenant.h"
#include "service/worker_client.h"
#include "spdlog/logger.h"
#include "util/stop_token.h"

namespace graphopt {

struct CoordinatorOptions {
  // Workers one Run tries before giving up. A request whose worker died or stalled, or that
  // failed there with RESOURCE_EXHAUSTED or DEADLINE_EXCEEDED, is a possible poison request:
  // it is tried on at most this many workers (the default 2: retried once elsewhere).
  int max_attempts = 2;
  // Deadline of one LoadPlan or Execute call on a worker; a call past it counts as a stalled
  // worker (marked down, the request retried elsewhere).
  absl::Duration call_timeout = absl::Seconds(120);
  // Every this often each worker is probed with Describe...
  absl::Duration probe_interval = absl::Milliseconds(500);
  // ...and marked down when it refuses the connection, or does not answer within this
  // probe_misses_to_down times in a row (a dead or stalled worker: the calls in flight on it are
  // cancelled and their requests retried elsewhere). A busy worker answers probes at once:
  // they never wait behind executions.
  absl::Duration probe_timeout = absl::Milliseconds(1000);
  int probe_misses_to_down = 2;
  // What RegisterWorker tells a worker about its next heartbeat.
  absl::Duration heartbeat_interval = absl::Seconds(2);
  // A registered worker that is not up and has sent no heartbeat for this long is forgotten;
  // so is a worker found by DNS that is not up and no longer resolves.
  absl::Duration forget_after = absl::Seconds(60);
  // DNS names are resolved again this often.
  absl::Duration dns_interval = absl::Seconds(10);
  // Successful answers kept for request-id deduplication, by count and by bytes (oldest
  // forgotten first), unless UseRequestLog gives another log.
  int dedup_entries = 1024;
  int64_t dedup_bytes = int64_t{256} << 20;
  // Workers known at once (registered, named and resolved); a registration beyond is refused.
  int max_workers = 1024;
  // A Run finding every capable worker at its advertised concurrency waits for a free slot,
  // in arrival order, for at most this long (and never past its deadline), then gets
  // RESOURCE_EXHAUSTED with a retry hint...
  absl::Duration slot_wait = absl::Seconds(30);
  // ...and at most this many Runs wait at once; more are refused at once.
  int max_waiting_runs = 4096;
  // A plan whose execution was in flight on this many different workers when each died or
  // stalled is quarantined (Run refuses it with FAILED_PRECONDITION) for `quarantine`.
  int deaths_to_quarantine = 2;
  absl::Duration quarantine = absl::Minutes(10);
  // Plans whose deaths are remembered (oldest forgotten first).
  int max_remembered_plans = 10000;
  // Training sessions (RunRequest.session): at most this many per tenant and in all; one
  // without a Run or FetchState for session_idle_timeout is ended and dropped on its worker.
  int max_sessions_per_tenant = 16;
  int max_sessions = 4096;
  absl::Duration session_idle_timeout = absl::Minutes(30);
};

// "host:port" with a non-empty host (a name, an IPv4 address or a bracketed IPv6 address) and a
// port in 1..65535. INVALID_ARGUMENT naming `what` otherwise.
absl::Status CheckHostPort(absl::string_view address, absl::string_view what);

// The worker nodes as the server sees them, and Run: plans executed on them.
//
// Workers are known by address ("host:port"), from three sources: AddWorker (the server's
// --workers flag), AddDnsName (every address a name resolves to, re-resolved periodically: a
// Kubernetes headless service), and Register (a worker's own announcement, repeated as its
// heartbeat). Every worker is probed with Describe every probe_interval; one that does not answer
// within probe_timeout is marked down, and the calls in flight on it are cancelled, so their
// requests move on to another worker. A worker that answers again is up again.
//
// Thread-safe. Start() begins probing on threads of its own; the destructor stops them.
class Coordinator {
 public:
  // `clients` makes the client of each worker it learns of (the transport: gRPC in the server,
  // server/grpc_worker_client.h); it must not be null. `optimizer` serves RunRequest.optimize
  // and `blobs` resolves blob references; either may be null (such requests are then refused).
  // Both must outlive the Coordinator.
  Coordinator(CoordinatorOptions options, WorkerClientFactory clients, const Optimizer* optimizer,
              BlobStore* blobs, std::shared_ptr<spdlog::logger> logger);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // A worker at `address` (host:port); `source` is "flag", "dns", "registered" or "etcd" (a
  // worker's lease in etcd: it stays known, up or down, until RemoveWorker). Adding a
  // known address again changes nothing (a registration refreshes its heartbeat).
  // INVALID_ARGUMENT for a malformed address; RESOURCE_EXHAUSTED when max_workers are known.
  absl::Status AddWorker(const std::string& address, const std::string& source);
  // Forgets `address` if it was added with `source` (a worker whose etcd key went away); a
  // worker known through another source stays. With calls in flight it first leaves: no new
  // work, still probed (a dead one is marked down and its calls retried elsewhere), forgotten
  // when the last call ends; AddWorker with the same source before then makes it a member again.
  void RemoveWorker(const std::string& address, const std::string& source);
  // Request ids are deduplicated through `log` (etcd/etcd_request_log.h: across replicas)
  // instead of in this process. Call before Start and the first Run.
  void UseRequestLog(std::shared_ptr<RequestLog> log) { request_log_ = std::move(log); }
  // A DNS name, as "NAME:PORT", whose addresses are all workers. Resolved now and every
  // dns_interval. INVALID_ARGUMENT for a malformed name; a name that does not resolve (yet) is
  // only logged.
  absl::Status AddDnsName(const std::string& name_and_port);
  // A registration or heartbeat from a caller proven to be `identity` (its certificate's name,
  // or "insecure"). INVALID_ARGUMENT naming the field for an address that is not host:port or a
  // worker_id over 256 bytes; ALREADY_EXISTS when another worker that is up (or registered
  // within forget_after and not yet probed) has the same worker_id; RESOURCE_EXHAUSTED for a
  // new address when max_workers are known.
  absl::Status Register(const v1::RegisterWorkerRequest& request,
                        absl::string_view identity = "insecure");

  // Probes every worker once, then keeps probing every probe_interval (and resolving DNS names
  // every dns_interval) until destruction. Call once.
  void Start();
  // Probes every worker once and waits for the answers (or probe_timeout).
  void ProbeNow();
  // For a server shutting down after its grace period: cancels every call in flight on a
  // worker; those Runs, and every later one, end with UNAVAILABLE ("shutting down"), and no
  // worker is marked down for it.
  void CancelAll();

  // Runs `request` on behalf of `tenant` (see coordinator.proto for the errors). `stop` (may be
  // null: no deadline, never cancelled) carries the caller's deadline and cancellation: they
  // pass on to the worker (its execution stops), end the wait for a free worker or for an
  // earlier request with the same request_id, and are never blamed on a worker.
  absl::StatusOr<v1::RunResponse> Run(v1::RunRequest request,
                                      absl::string_view tenant = kDefaultTenant,
                                      const StopToken* stop = nullptr);

  // A training session's state, and its end (coordinator.proto FetchState, EndSession), on
  // behalf of `tenant`; `stop` as Run's.
  absl::StatusOr<v1::CoordinatorFetchStateResponse> FetchState(
      const v1::CoordinatorFetchStateRequest& request, absl::string_view tenant = kDefaultTenant,
      const StopToken* stop = nullptr);
  absl::StatusOr<v1::EndSessionResponse> EndSession(const v1::EndSessionRequest& request,
                                                    absl::string_view tenant = kDefaultTenant,
                                                    const StopToken* stop = nullptr);
  // Ends idle sessions, and drops the state of ended and lost sessions on workers that are
  // up. The prober calls it after every round; tests call it to run expiry now.
  void MaintainSessions();
  // Live training sessions.
  int sessions() const { return sessions_.size(); }

  // Every worker known, by address.
  v1::ListWorkersResponse ListWorkers() const;

  const CoordinatorOptions& options() const { return options_; }

  // Whether `plan_id` is quarantined now; the reason when it is.
  std::optional<std::string> Quarantined(const std::string& plan_id) const;

 private:
  enum class Health { kUnknown, kUp, kDown };
  struct Worker {
    std::string address;
    std::string source;
    std::string worker_id;
    std::shared_ptr<WorkerClient> client;
    Health health = Health::kUnknown;
    absl::Time last_seen = absl::InfinitePast();
    absl::Time last_heartbeat = absl::InfinitePast();
    v1::DescribeResponse description;
    absl::flat_hash_set<std::string> supported_ops;
    // Device names and kinds ("cpu:0", "cpu").
    absl::flat_hash_set<std::string> devices;
    // Plans loaded there: the coordinator's plan id -> the worker's plan id.
    absl::flat_hash_map<std::string, std::string> loaded_plans;
    // Runs on it now, and the most it takes at once (0: no limit advertised).
    int in_flight = 0;
    int slots = 0;
    // Probes in a row it did not answer in time.
    int probe_misses = 0;
    // Who registered it ("" when it was named or resolved, not registered).
    std::string identity;
    // Runs sent to it, ever (the tie-break among equally busy workers).
    int64_t dispatched = 0;
    int64_t failures = 0;
    std::string last_error;
    // Calls in flight, cancelled when the worker is marked down.
    absl::flat_hash_set<WorkerCall*> calls;
    // Its membership ended (RemoveWorker) while calls were in flight: it gets no new work and
    // is forgotten when the last one ends.
    bool leaving = false;
  };
  // What a plan needs of a worker: ops ("domain::op") and devices, each with the first node
  // that needs it (for messages).
  struct Requirements {
    absl::btree_map<std::string, std::string> ops;
    absl::btree_map<std::string, std::string> devices;
  };
  // The worker picked for one attempt.
  struct Target {
    std::string address;
    std::string worker_id;
    std::shared_ptr<WorkerClient> client;
    // The worker's id for the plan when it has it loaded; empty when it must be loaded.
    std::string loaded_plan_id;
  };
  // One attempt's end: done (`response` filled), or the next worker is to be tried (`error`
  // says why; `counted` when it used up an attempt: a failure, not a busy worker), or the
  // request failed (`status`).
  struct Attempt {
    enum class Outcome { kDone, kRetry, kFailed } outcome = Outcome::kFailed;
    absl::Status status;
    std::string error;
    bool counted = true;
    // The failure's code as the worker answered it (for the final status).
    absl::StatusCode code = absl::StatusCode::kUnavailable;
  };
  // A Run waiting for a worker slot.
  struct Waiter {
    const Requirements* needs;
    const absl::flat_hash_set<std::string>* tried;
  };
  // Workers that died or stalled while running a plan, and the quarantine they led to.
  struct PlanDeaths {
    // Address -> worker id (for the message).
    absl::btree_map<std::string, std::string> workers;
    absl::Time quarantined_until = absl::InfinitePast();
  };
  class CallScope;
  // A session's state to drop on a worker (it ended or was lost while the worker lives on).
  struct PendingUnload {
    std::string address;
    v1::UnloadPlanRequest request;
    int tries = 0;
  };

  absl::StatusOr<v1::RunResponse> RunOnce(v1::RunRequest request, absl::string_view tenant,
                                          std::string input_digest, const StopToken& stop);
  Attempt TryWorker(const Target& target, const v1::Graph& plan, const std::string& plan_id,
                    const v1::RunRequest& request, absl::string_view tenant,
                    const StopToken& stop, v1::RunResponse* response);
  // The least loaded live worker meeting `needs`, not in `tried` and with a free slot (waiting
  // for one, in arrival order, up to slot_wait and the deadline), or the error to answer with
  // when there is none (`attempts` made so far, `last_error` the last failure).
  absl::StatusOr<Target> PickWorker(const Requirements& needs, const std::string& plan_id,
                                    const absl::flat_hash_set<std::string>& tried, int attempts,
                                    const std::string& last_error, const StopToken& stop);
  // One pass of PickWorker's choice under the lock: the worker to use, or null.
  Worker* ChooseLocked(const Requirements& needs, const std::string& plan_id,
                       const absl::flat_hash_set<std::string>& tried, int64_t ticket)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Notes that `address` died or stalled while running `plan_id`; quarantines the plan when
  // enough workers did.
  void RecordDeath(const std::string& plan_id, const std::string& address,
                   const std::string& worker_id);
  // RunOnce for a Run with a session (coordinator_sessions.cc). `plan` is null when the Run
  // left the graph out (a later step); `needs` is its requirements.
  absl::StatusOr<v1::RunResponse> RunSession(const v1::RunRequest& request,
                                             absl::string_view tenant, const v1::Graph* plan,
                                             const std::string& plan_id, const Requirements& needs,
                                             const StopToken& stop, v1::RunResponse response,
                                             absl::Time start);
  // Loads `plan` into `session` on `target` (its first step); fills the session's worker.
  absl::Status LoadSession(const Target& target, const v1::Graph& plan, absl::string_view tenant,
                           const StopToken& stop, SessionTable::Session* session,
                           v1::RunResponse* response);
  // The session's worker as a call target, counted in flight when `execution`; the status
  // that loses the session (ABORTED) when that worker is no longer up.
  absl::StatusOr<Target> SessionTarget(const SessionTable::Session& session, bool execution);
  // Loses `session` because its worker failed `rpc` on the way or no longer has it (`result`):
  // marks the worker down when it did not answer, unless the server is shutting down (then
  // UNAVAILABLE, and the step ends when `holds_step`). Returns the answer.
  absl::Status LoseSessionToWorker(const SessionTable::Session& session, const std::string& plan_id,
                                   const WorkerCallResult& result, const std::string& rpc,
                                   bool holds_step);
  // Ends a call that PickWorker or SessionTarget counted in flight.
  void ReleaseWorker(const std::string& address);
  // Sessions on `w` are lost (`why`); their state is dropped there later when `unload`.
  void LoseSessionsLocked(const Worker& w, const std::string& why, bool unload)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void QueueUnloadLocked(const SessionTable::Session& session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ProbeLoop();
  void DnsLoop();
  void ResolveDns();
  void MarkDown(Worker& worker, const std::string& why) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // RESOURCE_EXHAUSTED for a new address when max_workers are known.
  absl::Status AddWorkerLocked(const std::string& address, const std::string& source)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const CoordinatorOptions options_;
  const WorkerClientFactory clients_;
  const Optimizer* const optimizer_;
  BlobStore* const blobs_;
  std::shared_ptr<spdlog::logger> logger_;
  // Set before the first Run, not changed after.
  std::shared_ptr<RequestLog> request_log_;

  mutable absl::Mutex mu_;
  absl::btree_map<std::string, Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> dns_names_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  // Runs waiting for a slot, by arrival ticket; bumped whenever a slot frees.
  absl::btree_map<int64_t, Waiter> waiters_ ABSL_GUARDED_BY(mu_);
  int64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t slot_generation_ ABSL_GUARDED_BY(mu_) = 0;
  // Plans that killed or stalled workers; insertion order for forgetting the oldest.
  absl::flat_hash_map<std::string, PlanDeaths> deaths_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> death_order_ ABSL_GUARDED_BY(mu_);
  SessionTable sessions_;
  std::deque<PendingUnload> pending_unloads_ ABSL_GUARDED_BY(mu_);
  std::thread prober_;
  std::thread resolver_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_COORDINATOR_H_
