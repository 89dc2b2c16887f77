#include "service/coordinator.h"

#include <netdb.h>
#include <sys/socket.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "graph/proto_util.h"
#include "service/blob_refs.h"
#include "service/coordinator_call_scope.h"
#include "service/digest.h"
#include "util/retry_hint.h"

namespace graphopt {
namespace {

constexpr size_t kMaxRequestIdBytes = 256;
constexpr size_t kMaxWorkerIdBytes = 256;

double MicrosSince(absl::Time start) { return absl::ToDoubleMicroseconds(absl::Now() - start); }

// The default ONNX domain has two spellings; workers list its ops under "".
absl::string_view Domain(absl::string_view domain) {
  return domain == "ai.onnx" ? absl::string_view() : domain;
}

// A failed call's status for messages: "UNAVAILABLE: connection lost".
std::string CallError(const absl::Status& s) {
  return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message());
}

}  // namespace

absl::Status CheckHostPort(absl::string_view address, absl::string_view what) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": '", address, "' is not host:port (a host name or address, a port in 1..65535)"));
  };
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return bad();
  const absl::string_view host = address.substr(0, colon);
  const bool bracketed = host.front() == '[';
  if (bracketed ? (host.size() < 3 || host.back() != ']')
                : host.find_first_of(":[]/ ") != absl::string_view::npos) {
    return bad();
  }
  int port = 0;
  if (!absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 || port > 65535 ||
      address.substr(colon + 1).find_first_not_of("0123456789") != absl::string_view::npos) {
    return bad();
  }
  return absl::OkStatus();
}

Coordinator::Coordinator(CoordinatorOptions options, WorkerClientFactory clients,
                         const Optimizer* optimizer, BlobStore* blobs,
                         std::shared_ptr<spdlog::logger> logger)
    : options_(std::move(options)),
      clients_(std::move(clients)),
      optimizer_(optimizer),
      blobs_(blobs),
      logger_(std::move(logger)),
      request_log_(std::make_shared<InMemoryRequestLog>(options_.dedup_entries,
                                                        options_.dedup_bytes)),
      sessions_(SessionTable::Limits{options_.max_sessions_per_tenant, options_.max_sessions,
                                     options_.session_idle_timeout}) {}

Coordinator::~Coordinator() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (prober_.joinable()) prober_.join();
  if (resolver_.joinable()) resolver_.join();
}

absl::Status Coordinator::AddWorker(const std::string& address, const std::string& source) {
  if (absl::Status s = CheckHostPort(address, "worker"); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  return AddWorkerLocked(address, source);
}

absl::Status Coordinator::AddWorkerLocked(const std::string& address, const std::string& source) {
  if (!workers_.contains(address) && static_cast<int>(workers_.size()) >= options_.max_workers) {
    return absl::ResourceExhaustedError(
        absl::StrCat("worker ", address, ": this server already knows ", workers_.size(),
                     " workers, the most it takes (--max_workers)"));
  }
  auto [it, inserted] = workers_.try_emplace(address);
  Worker& w = it->second;
  if (source != "flag") w.last_heartbeat = absl::Now();
  if (!inserted) {
    if (w.leaving && w.source == source) {
      w.leaving = false;  // its membership is back before its last calls ended
      ++slot_generation_;
    }
    return absl::OkStatus();
  }
  w.address = address;
  w.source = source;
  w.client = clients_(address);
  logger_->info("coordinator: worker {} added ({})", address, source);
  return absl::OkStatus();
}

void Coordinator::RemoveWorker(const std::string& address, const std::string& source) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(address);
  if (it == workers_.end() || it->second.source != source) return;
  ++slot_generation_;
  Worker& w = it->second;
  if (w.in_flight == 0) {
    workers_.erase(it);
    logger_->info("coordinator: worker {} forgotten ({} membership ended)", address, source);
    return;
  }
  // No new work goes there, but its calls in flight stay watched: a worker shutting down
  // cleanly gives up its membership before it drains and finishes them, while one cut off
  // (its lease lapsed) is found down by probing, which cancels them so they are retried
  // elsewhere. It is forgotten when the last one ends.
  w.leaving = true;
  logger_->info("coordinator: worker {} leaving ({} membership ended): {} calls in flight", address,
                source, w.in_flight);
}

absl::Status Coordinator::AddDnsName(const std::string& name_and_port) {
  if (absl::Status s = CheckHostPort(name_and_port, "dns name"); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    dns_names_.push_back(name_and_port);
  }
  ResolveDns();
  return absl::OkStatus();
}

absl::Status Coordinator::Register(const v1::RegisterWorkerRequest& request,
                                   absl::string_view identity) {
  if (absl::Status s = CheckHostPort(request.address(), "address"); !s.ok()) return s;
  if (request.worker_id().size() > kMaxWorkerIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("worker_id: ", request.worker_id().size(),
                                                   " bytes, at most ", kMaxWorkerIdBytes));
  }
  absl::MutexLock lock(&mu_);
  if (!request.worker_id().empty()) {
    // One live worker per id: a second process claiming it (a hijack, or two workers started
    // with the same --worker_id) is refused until the first is down and forgotten or moves.
    const absl::Time now = absl::Now();
    for (const auto& [address, other] : workers_) {
      if (address == request.address() || other.worker_id != request.worker_id()) continue;
      const bool live = other.health == Health::kUp ||
                        (other.health == Health::kUnknown &&
                         now - other.last_heartbeat < options_.forget_after);
      if (live) {
        return absl::AlreadyExistsError(absl::StrCat(
            "worker_id '", request.worker_id(), "' is already taken by the live worker at ",
            address, other.identity.empty() ? "" : absl::StrCat(" (registered as ",
                                                                other.identity, ")"),
            "; each worker needs its own id (--worker_id)"));
      }
    }
  }
  if (absl::Status s = AddWorkerLocked(request.address(), "registered"); !s.ok()) return s;
  Worker& w = workers_.find(request.address())->second;
  w.identity = std::string(identity);
  if (!request.worker_id().empty() && w.worker_id != request.worker_id()) {
    if (!w.worker_id.empty()) {
      logger_->info("coordinator: worker {} is now {} (was {})", w.address, request.worker_id(),
                    w.worker_id);
    }
    w.worker_id = request.worker_id();
  }
  return absl::OkStatus();
}

void Coordinator::Start() {
  prober_ = std::thread([this] { ProbeLoop(); });
  resolver_ = std::thread([this] { DnsLoop(); });
}

void Coordinator::ProbeLoop() {
  while (true) {
    ProbeNow();
    MaintainSessions();
    absl::MutexLock lock(&mu_);
    auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
    mu_.AwaitWithTimeout(absl::Condition(&stop), options_.probe_interval);
    if (stopping_) return;
  }
}

void Coordinator::DnsLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stop), options_.dns_interval);
      if (stopping_) return;
    }
    ResolveDns();
  }
}

void Coordinator::ResolveDns() {
  std::vector<std::string> names;
  {
    absl::MutexLock lock(&mu_);
    names = dns_names_;
  }
  for (const std::string& name : names) {
    const size_t colon = name.rfind(':');
    std::string host = name.substr(0, colon);
    const std::string port = name.substr(colon + 1);
    if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    if (int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &result); error != 0) {
      logger_->warn("coordinator: cannot resolve {}: {}", name, gai_strerror(error));
      continue;
    }
    std::vector<std::string> addresses;
    for (addrinfo* a = result; a != nullptr; a = a->ai_next) {
      char ip[NI_MAXHOST];
      if (getnameinfo(a->ai_addr, a->ai_addrlen, ip, sizeof(ip), nullptr, 0, NI_NUMERICHOST) != 0) {
        continue;
      }
      addresses.push_back(a->ai_family == AF_INET6 ? absl::StrCat("[", ip, "]:", port)
                                                   : absl::StrCat(ip, ":", port));
    }
    freeaddrinfo(result);
    absl::MutexLock lock(&mu_);
    for (const std::string& address : addresses) {
      if (absl::Status s = AddWorkerLocked(address, "dns"); !s.ok()) {
        logger_->error("coordinator: {}: {}", name, std::string(s.message()));
        break;
      }
    }
  }
}

void Coordinator::CancelAll() {
  absl::MutexLock lock(&mu_);
  cancelled_ = true;
  ++slot_generation_;
  for (auto& [address, w] : workers_) {
    for (WorkerCall* call : w.calls) call->Cancel();
  }
}

void Coordinator::MarkDown(Worker& w, const std::string& why) {
  if (w.health != Health::kDown) {
    logger_->warn("coordinator: worker {} ({}) is down: {}", w.address, w.worker_id, why);
    ++w.failures;
  }
  w.health = Health::kDown;
  w.last_error = why;
  w.probe_misses = 0;
  ++slot_generation_;  // runs waiting for it must look elsewhere
  // It may come back restarted, with an empty plan cache; its sessions' steps cannot move.
  w.loaded_plans.clear();
  LoseSessionsLocked(w, why, /*unload=*/true);
  for (WorkerCall* call : w.calls) call->Cancel();
}

void Coordinator::ProbeNow() {
  struct Probe {
    std::string address;
    std::shared_ptr<WorkerClient> client;
    std::unique_ptr<WorkerCall> call;
    v1::DescribeResponse response;
    WorkerCallResult result;
  };
  std::vector<std::unique_ptr<Probe>> probes;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    for (auto it = workers_.begin(); it != workers_.end();) {
      const Worker& w = it->second;
      // Named and etcd workers stay until their flag or lease goes; the others until silent.
      if (w.source != "flag" && w.source != "etcd" && w.health != Health::kUp &&
          now - w.last_heartbeat > options_.forget_after) {
        logger_->info("coordinator: forgetting worker {} (not up, not announced for {})", w.address,
                      absl::FormatDuration(now - w.last_heartbeat));
        it = workers_.erase(it);
        continue;
      }
      auto probe = std::make_unique<Probe>();
      probe->address = w.address;
      probe->client = w.client;
      probes.push_back(std::move(probe));
      ++it;
    }
  }
  if (probes.empty()) return;
  // All at once, so that a stalled worker does not delay the others' probes.
  const v1::DescribeRequest request;
  absl::BlockingCounter outstanding(static_cast<int>(probes.size()));
  for (const std::unique_ptr<Probe>& p : probes) {
    p->call = p->client->NewCall(absl::Now() + options_.probe_timeout);
    Probe* raw = p.get();
    p->client->Describe(*p->call, request, &p->response,
                        [raw, &outstanding](WorkerCallResult result) {
                          raw->result = std::move(result);
                          outstanding.DecrementCount();
                        });
  }
  outstanding.Wait();
  absl::MutexLock lock(&mu_);
  const absl::Time now = absl::Now();
  for (const std::unique_ptr<Probe>& p : probes) {
    auto it = workers_.find(p->address);
    if (it == workers_.end()) continue;
    Worker& w = it->second;
    if (!p->result.status.ok()) {
      // A refused connection is a dead worker; a slow answer may be a moment's stall, so it
      // takes several in a row.
      if (p->result.status.code() == absl::StatusCode::kDeadlineExceeded &&
          w.health == Health::kUp && ++w.probe_misses < options_.probe_misses_to_down) {
        logger_->info("coordinator: worker {} ({}) missed a probe ({} in a row)", w.address,
                      w.worker_id, w.probe_misses);
        continue;
      }
      MarkDown(w, absl::StrCat("probe: ", CallError(p->result.status)));
      continue;
    }
    w.probe_misses = 0;
    v1::DescribeResponse& d = p->response;
    // A worker that restarted since the last probe has lost its plans.
    if (d.instance() != w.description.instance()) {
      w.loaded_plans.clear();
      LoseSessionsLocked(w, "the worker restarted", /*unload=*/false);
    }
    if (w.health != Health::kUp) {
      logger_->info("coordinator: worker {} ({}) is up: {} ops, {} plans loaded", w.address,
                    d.worker_id(), d.supported_ops_size(), d.plans_loaded());
    }
    if (w.health != Health::kUp || w.slots != d.max_concurrent_executions()) ++slot_generation_;
    w.health = Health::kUp;
    w.last_seen = now;
    w.worker_id = d.worker_id();
    w.slots = d.max_concurrent_executions();
    w.supported_ops.clear();
    for (const std::string& op : d.supported_ops()) w.supported_ops.insert(op);
    w.devices.clear();
    for (const v1::DeviceInfo& device : d.devices()) {
      w.devices.insert(device.name());
      w.devices.insert(device.kind());
    }
    w.description = std::move(d);
  }
}

Coordinator::Worker* Coordinator::ChooseLocked(const Requirements& needs,
                                              const std::string& plan_id,
                                              const absl::flat_hash_set<std::string>& tried,
                                              int64_t ticket) {
  auto capable = [](const Worker& w, const Requirements& r) {
    for (const auto& [op, node] : r.ops) {
      if (!w.supported_ops.contains(op)) return false;
    }
    for (const auto& [device, node] : r.devices) {
      if (!w.devices.contains(device)) return false;
    }
    return true;
  };
  Worker* best = nullptr;
  bool best_has_plan = false;
  for (auto& [address, w] : workers_) {
    if (w.health != Health::kUp || w.leaving || tried.contains(address) || !capable(w, needs)) {
      continue;
    }
    if (w.slots > 0 && w.in_flight >= w.slots) continue;
    // A free slot goes to the Run that has waited longest among those that can use it.
    bool earlier_wants_it = false;
    for (auto it = waiters_.begin(); it != waiters_.end() && it->first < ticket; ++it) {
      if (!it->second.tried->contains(address) && capable(w, *it->second.needs)) {
        earlier_wants_it = true;
        break;
      }
    }
    if (earlier_wants_it) continue;
    // Fewest runs in flight; then one that has the plan; then the fewest runs so far.
    const bool has_plan = w.loaded_plans.contains(plan_id);
    if (best == nullptr || w.in_flight < best->in_flight ||
        (w.in_flight == best->in_flight &&
         (has_plan > best_has_plan ||
          (has_plan == best_has_plan && w.dispatched < best->dispatched)))) {
      best = &w;
      best_has_plan = has_plan;
    }
  }
  return best;
}

absl::StatusOr<Coordinator::Target> Coordinator::PickWorker(
    const Requirements& needs, const std::string& plan_id,
    const absl::flat_hash_set<std::string>& tried, int attempts, const std::string& last_error,
    const StopToken& stop) {
  // What `w` lacks of `needs`, for a message; empty when it has everything.
  auto lacks = [&needs](const Worker& w) -> std::string {
    for (const auto& [op, node] : needs.ops) {
      if (!w.supported_ops.contains(op)) {
        return absl::StrCat("a kernel for op '", op, "' (node '", node, "')");
      }
    }
    for (const auto& [device, node] : needs.devices) {
      if (!w.devices.contains(device)) {
        return absl::StrCat("device '", device, "' (node '", node, "')");
      }
    }
    return "";
  };
  const absl::Time wait_start = absl::Now();
  const absl::Time wait_end = std::min(wait_start + options_.slot_wait, stop.deadline());
  absl::MutexLock lock(&mu_);
  const int64_t ticket = next_ticket_++;
  bool waiting = false;
  auto leave = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (waiting) waiters_.erase(ticket);
    waiting = false;
    // A later waiter may now take what this one passed over.
    ++slot_generation_;
  };
  while (true) {
    if (cancelled_) {
      leave();
      return absl::UnavailableError(
          absl::StrCat("plan ", plan_id, ": the server is shutting down (Run cancelled)"));
    }
    if (absl::Status s = stop.Check(absl::StrCat("waiting for a worker for plan ", plan_id));
        !s.ok()) {
      leave();
      return s;
    }
    if (Worker* best = ChooseLocked(needs, plan_id, tried, waiting ? ticket : INT64_MAX);
        best != nullptr) {
      if (waiting) waiters_.erase(ticket);
      ++best->in_flight;
      ++best->dispatched;
      Target target;
      target.address = best->address;
      target.worker_id = best->worker_id;
      target.client = best->client;
      if (auto it = best->loaded_plans.find(plan_id); it != best->loaded_plans.end()) {
        target.loaded_plan_id = it->second;
      }
      return target;
    }
    // No free slot: is there a capable live worker at all (then wait for it), or none?
    int live = 0, capable_busy = 0, busy_slots = 0;
    bool any_capable = false;
    std::string missing;
    for (const auto& [address, w] : workers_) {
      if (w.health == Health::kUnknown) continue;
      const std::string lack = lacks(w);
      any_capable = any_capable || lack.empty();
      if (w.health != Health::kUp || tried.contains(address)) continue;
      ++live;
      if (!lack.empty()) {
        if (missing.empty()) missing = lack;
        continue;
      }
      ++capable_busy;
      busy_slots += w.in_flight;
    }
    if (capable_busy == 0) {
      leave();
      if (workers_.empty()) {
        return absl::UnavailableError(absl::StrCat(
            "plan ", plan_id,
            ": no workers known (start graphopt-worker with --register_with, or name workers "
            "with the server's --workers)"));
      }
      if (attempts == 0 && live > 0 && !any_capable) {
        return absl::UnimplementedError(
            absl::StrCat("plan ", plan_id, ": no worker can run it: none has ", missing));
      }
      if (attempts == 0) {
        return absl::UnavailableError(absl::StrCat("plan ", plan_id,
                                                   ": no live worker can run it (",
                                                   workers_.size(), " known, ", live, " up)"));
      }
      return absl::UnavailableError(absl::StrCat("plan ", plan_id,
                                                 ": no worker could run it in ", attempts,
                                                 " attempt(s); last: ", last_error));
    }
    if (!waiting) {
      if (static_cast<int>(waiters_.size()) >= options_.max_waiting_runs) {
        absl::Status busy = absl::ResourceExhaustedError(absl::StrCat(
            "plan ", plan_id, ": every worker that can run it is busy (", capable_busy,
            " workers, ", busy_slots, " executions) and ", waiters_.size(),
            " runs already wait, the most this server lets wait"));
        SetRetryAfter(busy, absl::Seconds(1));
        return busy;
      }
      waiters_.emplace(ticket, Waiter{&needs, &tried});
      waiting = true;
    }
    const absl::Time now = absl::Now();
    if (now >= wait_end) {
      leave();
      if (stop.cancelled()) {
        return stop.Check(absl::StrCat("waiting for a worker for plan ", plan_id));
      }
      if (now >= stop.deadline()) {
        return absl::DeadlineExceededError(absl::StrCat(
            "the request's deadline passed (stopped in waiting for a worker for plan ", plan_id,
            ")"));
      }
      absl::Status busy = absl::ResourceExhaustedError(absl::StrCat(
          "plan ", plan_id, ": every worker that can run it stayed busy for ",
          absl::FormatDuration(now - wait_start), " (", capable_busy, " workers, ", busy_slots,
          " executions, ", waiters_.size(), " runs waiting); try again later"));
      SetRetryAfter(busy, absl::Seconds(1));
      return busy;
    }
    // Woken when a slot frees or a worker changes; at least every 50 ms for the stop token.
    const int64_t generation = slot_generation_;
    auto changed = [this, generation]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return slot_generation_ != generation || stopping_;
    };
    mu_.AwaitWithTimeout(absl::Condition(&changed),
                         std::min(wait_end - now, absl::Milliseconds(50)));
  }
}

void Coordinator::RecordDeath(const std::string& plan_id, const std::string& address,
                              const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = deaths_.try_emplace(plan_id);
  if (inserted) {
    death_order_.push_back(plan_id);
    while (static_cast<int>(death_order_.size()) > options_.max_remembered_plans) {
      deaths_.erase(death_order_.front());
      death_order_.pop_front();
    }
    it = deaths_.find(plan_id);
  }
  PlanDeaths& d = it->second;
  d.workers[address] = worker_id;
  if (static_cast<int>(d.workers.size()) >= options_.deaths_to_quarantine &&
      d.quarantined_until < absl::Now()) {
    d.quarantined_until = absl::Now() + options_.quarantine;
    logger_->error("coordinator: plan {} quarantined for {}: {} workers died or stalled while "
                   "running it",
                   plan_id, absl::FormatDuration(options_.quarantine), d.workers.size());
  }
}

std::optional<std::string> Coordinator::Quarantined(const std::string& plan_id) const {
  absl::MutexLock lock(&mu_);
  auto it = deaths_.find(plan_id);
  if (it == deaths_.end() || it->second.quarantined_until <= absl::Now()) return std::nullopt;
  std::string workers;
  for (const auto& [address, id] : it->second.workers) {
    absl::StrAppend(&workers, workers.empty() ? "" : ", ", id.empty() ? address : id, " (",
                    address, ")");
  }
  return absl::StrCat(
      "plan ", plan_id, " is quarantined for another ",
      absl::FormatDuration(absl::Trunc(it->second.quarantined_until - absl::Now(), absl::Seconds(1))),
      ": workers died or stalled while running it: ", workers,
      " (a model that crashes or hangs workers; --quarantine_s)");
}

Coordinator::Attempt Coordinator::TryWorker(const Target& target, const v1::Graph& plan,
                                            const std::string& plan_id,
                                            const v1::RunRequest& request,
                                            absl::string_view tenant, const StopToken& stop,
                                            v1::RunResponse* response) {
  const std::string& address = target.address;
  // How a failed call ends the attempt; see coordinator.proto for the policy.
  auto judge = [&](const std::string& rpc, const CallScope& call, const WorkerCallResult& r) {
    const absl::Status& s = r.status;
    Attempt a;
    const std::string what = absl::StrCat("worker ", address, ": ", rpc, ": ", CallError(s));
    const std::string where = absl::StrCat(rpc, " of plan ", plan_id, " on worker ", address);
    if (stop.cancelled()) {
      // The caller's cancellation: not the worker's fault, not worth a retry.
      a.status = stop.Check(where);
      return a;
    }
    // The caller's deadline, read off the call itself: the stop token's clock is coarse, and a
    // call that ran into the caller's deadline must never count against the worker.
    if ((s.code() == absl::StatusCode::kDeadlineExceeded && call.callers_deadline()) ||
        absl::Now() >= stop.deadline()) {
      a.status = absl::DeadlineExceededError(
          absl::StrCat("the request's deadline passed (stopped in ", where, ")"));
      return a;
    }
    const bool answered = r.answered;
    if (answered && r.busy) {
      a.outcome = Attempt::Outcome::kRetry;
      a.counted = false;
      a.error = what;
      return a;
    }
    const absl::StatusCode code = s.code();
    if (answered && code == absl::StatusCode::kUnavailable) {
      // The worker says it cannot serve now (starting, shutting down): another one may.
      a.outcome = Attempt::Outcome::kRetry;
      a.error = what;
      return a;
    }
    if (answered && (code == absl::StatusCode::kResourceExhausted ||
                     code == absl::StatusCode::kDeadlineExceeded) &&
        !r.callers_limit) {
      // The worker stopped the execution itself (its memory budget or time limit) and lives
      // on; another worker may have more room. Not so when the budget was the request's own
      // memory_limit_bytes: that fails alike everywhere, so it is the answer.
      a.outcome = Attempt::Outcome::kRetry;
      a.code = code;
      a.error = what;
      return a;
    }
    if (!answered && (code == absl::StatusCode::kUnavailable ||
                      code == absl::StatusCode::kDeadlineExceeded ||
                      code == absl::StatusCode::kCancelled)) {
      // Dead (connection lost), stalled (our call timeout) or marked down meanwhile.
      a.outcome = Attempt::Outcome::kRetry;
      a.error = what;
      bool cancelled_by_shutdown = false;
      {
        absl::MutexLock lock(&mu_);
        cancelled_by_shutdown = cancelled_;
        auto it = workers_.find(address);
        if (it != workers_.end() && !cancelled_) MarkDown(it->second, a.error);
      }
      if (!cancelled_by_shutdown && !r.never_connected) {
        RecordDeath(plan_id, address, target.worker_id);
      }
      return a;
    }
    a.status = absl::Status(
        code, absl::StrCat(rpc, " of plan ", plan_id, " on worker ", address, ": ", s.message()));
    return a;
  };
  auto remember = [&](const std::string& worker_plan_id) {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(address);
    if (it == workers_.end()) return;
    if (worker_plan_id.empty()) {
      it->second.loaded_plans.erase(plan_id);
    } else {
      it->second.loaded_plans[plan_id] = worker_plan_id;
    }
  };

  std::string worker_plan_id = target.loaded_plan_id;
  for (int round = 0; round < 2; ++round) {  // the second round reloads a plan the worker lost
    if (worker_plan_id.empty()) {
      v1::LoadPlanRequest load;
      *load.mutable_graph() = plan;
      if (absl::Status s = InlineBlobReferences(load.mutable_graph(), blobs_, tenant); !s.ok()) {
        Attempt a;
        a.status = absl::Status(s.code(), absl::StrCat("graph: ", s.message()));
        return a;
      }
      v1::LoadPlanResponse loaded;
      const absl::Time start = absl::Now();
      CallScope call(this, target, stop);
      const WorkerCallResult r = target.client->LoadPlan(call.call(), load, &loaded);
      response->set_load_micros(response->load_micros() + MicrosSince(start));
      if (!r.status.ok()) {
        // A plan too large for this worker's cache may fit another's.
        if (r.status.code() == absl::StatusCode::kResourceExhausted && !stop.ShouldStop() &&
            r.answered && !r.busy) {
          Attempt a;
          a.outcome = Attempt::Outcome::kRetry;
          a.code = absl::StatusCode::kResourceExhausted;
          a.error = absl::StrCat("worker ", address, ": LoadPlan: ", CallError(r.status));
          return a;
        }
        return judge("LoadPlan", call, r);
      }
      worker_plan_id = loaded.plan_id();
      remember(worker_plan_id);
      response->set_loaded_plan(true);
    }
    v1::ExecuteRequest execute;
    execute.set_plan_id(worker_plan_id);
    *execute.mutable_inputs() = request.inputs();
    execute.set_profile(request.profile());
    execute.set_request_id(request.request_id());
    execute.set_memory_limit_bytes(request.memory_limit_bytes());
    v1::ExecuteResponse executed;
    const absl::Time start = absl::Now();
    CallScope call(this, target, stop);
    const WorkerCallResult r = target.client->Execute(call.call(), execute, &executed);
    if (r.status.code() == absl::StatusCode::kNotFound && r.answered) {
      // Evicted, or the worker restarted: load it again (once).
      remember("");
      worker_plan_id.clear();
      if (round == 0) continue;
      Attempt a;
      a.outcome = Attempt::Outcome::kRetry;
      a.error = absl::StrCat("worker ", address, ": Execute: ", CallError(r.status));
      return a;
    }
    if (!r.status.ok()) return judge("Execute", call, r);
    response->set_execute_micros(MicrosSince(start));
    *response->mutable_outputs() = std::move(*executed.mutable_outputs());
    *response->mutable_timings() = std::move(*executed.mutable_timings());
    response->set_worker_id(executed.worker_id());
    response->set_worker_address(address);
    response->set_worker_run_micros(executed.run_micros());
    Attempt a;
    a.outcome = Attempt::Outcome::kDone;
    return a;
  }
  Attempt unreachable;  // the second round always returns
  unreachable.status = absl::InternalError("plan load loop ended without an answer");
  return unreachable;
}

absl::StatusOr<v1::RunResponse> Coordinator::Run(v1::RunRequest request, absl::string_view tenant,
                                                 const StopToken* stop) {
  StopToken never;
  const StopToken& token = stop != nullptr ? *stop : never;
  if (!request.has_graph() && (request.session().empty() || request.has_optimize())) {
    return absl::InvalidArgumentError(
        "graph: missing (the plan to run; only a later Run of a session may leave it out)");
  }
  if (request.request_id().size() > kMaxRequestIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("request_id: ", request.request_id().size(),
                                                   " bytes, at most ", kMaxRequestIdBytes));
  }
  if (!request.has_optimize() && !request.dim_bindings().empty()) {
    return absl::InvalidArgumentError("dim_bindings: given without optimize");
  }
  if (request.memory_limit_bytes() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_limit_bytes: negative (", request.memory_limit_bytes(), ")"));
  }
  absl::flat_hash_set<absl::string_view> names;
  for (int i = 0; i < request.inputs_size(); ++i) {
    const v1::NamedTensor& in = request.inputs(i);
    if (in.name().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("inputs[", i, "].name: empty"));
    }
    if (!in.has_tensor()) {
      return absl::InvalidArgumentError(
          absl::StrCat("inputs[", i, "].tensor: missing (input '", in.name(), "')"));
    }
    if (!names.insert(in.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("inputs[", i, "]: input '", in.name(), "' is given twice"));
    }
  }
  std::string input_digest = Sha256Digest(SerializeDeterministic(request.graph()));
  if (request.request_id().empty())
    return RunOnce(std::move(request), tenant, std::move(input_digest), token);

  // What was asked, without the graph (its digest stands for it) and the id.
  v1::RunRequest asked;
  *asked.mutable_inputs() = request.inputs();
  asked.set_profile(request.profile());
  if (request.has_optimize()) *asked.mutable_optimize() = request.optimize();
  *asked.mutable_dim_bindings() = request.dim_bindings();
  asked.set_memory_limit_bytes(request.memory_limit_bytes());
  asked.set_session(request.session());
  const std::string fingerprint =
      Sha256Digest(absl::StrCat(input_digest, SerializeDeterministic(asked)));
  const std::string id = request.request_id();
  RequestLog& log = *request_log_;
  absl::StatusOr<RequestClaim> claim = log.Claim(std::string(tenant), id, fingerprint);
  while (claim.ok() && claim->kind == RequestClaim::Kind::kRunning) {
    // The same request again while the first runs: wait for its answer, never a second
    // execution.
    absl::StatusOr<RequestClaim> waited =
        log.Wait(*claim, std::string(tenant), id, fingerprint, token);
    if (!waited.ok()) {
      return absl::Status(waited.status().code(),
                          absl::StrCat("request_id '", id,
                                       "': the first request with this id is still running; ",
                                       waited.status().message()));
    }
    claim = std::move(waited);
  }
  if (!claim.ok()) {
    return absl::Status(claim.status().code(),
                        absl::StrCat("request_id '", id, "': ", claim.status().message()));
  }
  switch (claim->kind) {
    case RequestClaim::Kind::kMismatch:
      return absl::InvalidArgumentError(
          absl::StrCat("request_id: '", id,
                       "' was already used for a different request (graph, inputs or options)"));
    case RequestClaim::Kind::kDone: {
      absl::StatusOr<v1::RunResponse> answer = std::move(claim->answer);
      if (answer.ok()) answer->set_replayed(true);
      return answer;
    }
    default:
      break;
  }
  absl::StatusOr<v1::RunResponse> result =
      RunOnce(std::move(request), tenant, std::move(input_digest), token);
  if (result.ok()) {
    result->set_request_id(id);
    log.Complete(std::string(tenant), id, *result);
  } else {
    log.Abandon(std::string(tenant), id, result.status());
  }
  return result;
}

absl::StatusOr<v1::RunResponse> Coordinator::RunOnce(v1::RunRequest request,
                                                     absl::string_view tenant,
                                                     std::string input_digest,
                                                     const StopToken& stop) {
  const absl::Time start = absl::Now();
  const bool has_graph = request.has_graph();
  v1::RunResponse response;
  v1::Graph plan;
  std::string plan_id;
  if (request.has_optimize()) {
    if (optimizer_ == nullptr) {
      return absl::UnimplementedError("optimize: this coordinator has no optimizer");
    }
    v1::OptimizeRequest optimize;
    *optimize.mutable_graph() = std::move(*request.mutable_graph());
    *optimize.mutable_pipeline() = request.optimize();
    *optimize.mutable_dim_bindings() = request.dim_bindings();
    optimize.set_result_format(v1::MODEL_FORMAT_GRAPH);
    const absl::Time optimize_start = absl::Now();
    absl::StatusOr<v1::OptimizeResponse> optimized =
        optimizer_->Optimize(std::move(optimize), tenant, &stop);
    if (!optimized.ok()) {
      return absl::Status(optimized.status().code(),
                          absl::StrCat("optimize: ", optimized.status().message()));
    }
    response.set_optimize_micros(MicrosSince(optimize_start));
    *response.mutable_reports() = std::move(*optimized->mutable_reports());
    plan = std::move(*optimized->mutable_graph());
    plan_id = Sha256Digest(SerializeDeterministic(plan));
  } else {
    plan = std::move(*request.mutable_graph());
    plan_id = std::move(input_digest);
  }
  request.clear_graph();
  if (std::optional<std::string> why = Quarantined(plan_id)) {
    return absl::FailedPreconditionError(*why);
  }
  // Weights sent as blob references stay pinned in the store until the plan is loaded.
  std::vector<std::shared_ptr<const std::string>> pins;
  if (absl::Status s = CheckBlobReferences(plan, blobs_, tenant, &pins); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("graph: ", s.message()));
  }
  Requirements needs;
  std::vector<const v1::Graph*> stack = {&plan};
  while (!stack.empty()) {
    const v1::Graph* g = stack.back();
    stack.pop_back();
    for (const v1::Node& n : g->nodes()) {
      needs.ops.try_emplace(absl::StrCat(Domain(n.domain()), "::", n.op_type()), n.name());
      if (!n.device().empty()) needs.devices.try_emplace(n.device(), n.name());
      for (const v1::Attribute& a : n.attributes()) {
        if (a.has_g()) stack.push_back(&a.g());
        if (a.has_graphs()) {
          for (const v1::Graph& sub : a.graphs().values()) stack.push_back(&sub);
        }
      }
    }
  }

  if (!request.session().empty()) {
    return RunSession(request, tenant, has_graph ? &plan : nullptr, plan_id, needs, stop,
                      std::move(response), start);
  }
  // Busy workers (a full queue: another server's load) send a Run on to the next one without
  // using up an attempt; this bounds how often.
  constexpr int kMaxBusyBounces = 8;
  absl::flat_hash_set<std::string> tried;
  std::string last_error;
  absl::StatusCode last_code = absl::StatusCode::kUnavailable;
  int attempts = 0;
  int bounces = 0;
  while (true) {
    if (attempts >= options_.max_attempts) {
      return absl::Status(last_code, absl::StrCat("plan ", plan_id, ": no worker could run it in ",
                                                  attempts, " attempt(s); last: ", last_error));
    }
    absl::StatusOr<Target> target = PickWorker(needs, plan_id, tried, attempts, last_error, stop);
    if (!target.ok()) {
      // After a request's own failure (memory, time), that failure is the answer.
      if (attempts > 0 && last_code != absl::StatusCode::kUnavailable &&
          target.status().code() == absl::StatusCode::kUnavailable) {
        return absl::Status(last_code, absl::StrCat("plan ", plan_id, ": ", last_error));
      }
      return target.status();
    }
    Attempt attempt = TryWorker(*target, plan, plan_id, request, tenant, stop, &response);
    ReleaseWorker(target->address);
    if (attempt.outcome == Attempt::Outcome::kRetry && !attempt.counted) {
      if (++bounces <= kMaxBusyBounces) {
        tried.insert(target->address);
        last_error = std::move(attempt.error);
        continue;
      }
      attempt.counted = true;
    }
    if (attempt.outcome != Attempt::Outcome::kRetry) {
      if (attempt.outcome == Attempt::Outcome::kFailed) return attempt.status;
      response.set_plan_id(plan_id);
      response.set_attempts(attempts + 1);
      response.set_total_micros(MicrosSince(start));
      return response;
    }
    ++attempts;
    logger_->warn("coordinator: request '{}' (plan {}): {}; {}", request.request_id(), plan_id,
                  attempt.error,
                  attempts < options_.max_attempts ? "trying another worker" : "giving up");
    tried.insert(target->address);
    last_error = std::move(attempt.error);
    last_code = attempt.code;
    response.clear_loaded_plan();
  }
}

void Coordinator::ReleaseWorker(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(address);
  if (it != workers_.end() && --it->second.in_flight == 0 && it->second.leaving) {
    logger_->info("coordinator: worker {} forgotten (its membership ended, its last call is over)",
                  address);
    workers_.erase(it);
  }
  ++slot_generation_;
}

v1::ListWorkersResponse Coordinator::ListWorkers() const {
  absl::MutexLock lock(&mu_);
  v1::ListWorkersResponse response;
  const absl::Time now = absl::Now();
  for (const auto& [address, w] : workers_) {
    v1::WorkerStatus* s = response.add_workers();
    s->set_address(address);
    s->set_worker_id(w.worker_id);
    s->set_health(w.health == Health::kUp ? "up" : w.health == Health::kDown ? "down" : "unknown");
    s->set_source(w.leaving ? absl::StrCat(w.source, " (leaving)") : w.source);
    *s->mutable_devices() = w.description.devices();
    s->set_executing(w.in_flight);
    s->set_executed(w.description.executed());
    s->set_plans_loaded(w.description.plans_loaded());
    s->set_plan_cache_bytes(w.description.plan_cache_bytes());
    s->set_last_seen_ms_ago(
        w.last_seen == absl::InfinitePast() ? -1 : absl::ToInt64Milliseconds(now - w.last_seen));
    s->set_failures(w.failures);
    s->set_supported_ops(static_cast<int32_t>(w.supported_ops.size()));
    s->set_dispatched(w.dispatched);
    s->set_last_error(w.last_error);
    s->set_slots(w.slots);
    s->set_identity(w.identity);
  }
  return response;
}

}  // namespace graphopt
