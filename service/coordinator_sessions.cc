// The coordinator's training sessions (coordinator.proto RunRequest.session, FetchState,
// EndSession): a session's state lives on the one worker that loaded it, so its steps go
// there and are never retried elsewhere.
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/proto_util.h"
#include "service/blob_refs.h"
#include "service/coordinator.h"
#include "service/coordinator_call_scope.h"
#include "service/digest.h"
#include "util/retry_hint.h"

namespace graphopt {
namespace {

// Lost and ended sessions whose state waits to be dropped on a worker; the oldest is given up
// beyond this (the worker keeps it until it restarts).
constexpr size_t kMaxPendingUnloads = 4096;
// Unloads tried per prober round, and tries per session, so that a worker that answers
// probes but not UnloadPlan cannot hold up probing.
constexpr int kUnloadsPerRound = 16;
constexpr int kMaxUnloadTries = 10;

double MicrosSince(absl::Time start) { return absl::ToDoubleMicroseconds(absl::Now() - start); }

std::string CallError(const absl::Status& s) {
  return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", s.message());
}

// Whether a failed call ended because of the caller (its cancellation or its deadline), not
// the worker.
bool CallersFault(const StopToken& stop, bool callers_deadline, const absl::Status& s) {
  return stop.cancelled() ||
         (s.code() == absl::StatusCode::kDeadlineExceeded && callers_deadline) ||
         absl::Now() >= stop.deadline();
}

absl::Status CallersStatus(const StopToken& stop, const std::string& where) {
  if (stop.cancelled()) return stop.Check(where);
  return absl::DeadlineExceededError(
      absl::StrCat("the request's deadline passed (stopped in ", where, ")"));
}

absl::Status Busy(const SessionTable::Session& session, const std::string& address) {
  absl::Status busy = absl::ResourceExhaustedError(
      absl::StrCat("session '", session.name, "': its worker ", address,
                   " is busy, and a session's steps run only there; try again later"));
  SetRetryAfter(busy, absl::Seconds(1));
  return busy;
}

}  // namespace

absl::StatusOr<v1::RunResponse> Coordinator::RunSession(
    const v1::RunRequest& request, absl::string_view tenant, const v1::Graph* plan,
    const std::string& plan_id, const Requirements& needs, const StopToken& stop,
    v1::RunResponse response, absl::Time start) {
  const std::string& name = request.session();
  if (plan != nullptr && plan->state_updates().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("session: '", name, "' given for plan ", plan_id,
                     ", which has no state_updates (a stateless plan runs "
                     "without a session)"));
  }
  absl::StatusOr<SessionTable::Session> begun = sessions_.Begin(
      tenant, name, plan != nullptr ? plan_id : std::string(),
      plan != nullptr ? plan->state_updates(0).state() : std::string(), absl::Now());
  if (!begun.ok()) return begun.status();
  SessionTable::Session session = *std::move(begun);

  absl::StatusOr<Target> target;
  if (!session.loaded()) {
    // The first step: any capable worker, as a stateless Run picks one.
    target = PickWorker(needs, plan_id, {}, 0, "", stop);
    if (!target.ok()) {
      sessions_.Abandon(session);
      return target.status();
    }
    if (absl::Status s = LoadSession(*target, *plan, tenant, stop, &session, &response); !s.ok()) {
      ReleaseWorker(target->address);
      sessions_.Abandon(session);
      return s;
    }
    // Known from now on, so that the worker's death loses it.
    sessions_.Update(session);
  } else {
    target = SessionTarget(session, /*execution=*/true);
    if (!target.ok()) return target.status();
  }

  // A step retried after an unknown outcome: applied already, or not yet?
  if (!session.uncertain_request_id.empty() &&
      session.uncertain_request_id == request.request_id()) {
    v1::FetchStateRequest fetch;
    fetch.set_plan_id(session.worker_plan_id);
    fetch.set_session(session.worker_session);
    fetch.add_names(session.probe_state);
    v1::FetchStateResponse fetched;
    WorkerCallResult r;
    bool callers = false;
    {
      CallScope call(this, *target, stop);
      r = target->client->FetchState(call.call(), fetch, &fetched);
      callers = !r.status.ok() && CallersFault(stop, call.callers_deadline(), r.status);
    }
    ReleaseWorker(target->address);
    if (!r.status.ok()) {
      if (callers || (r.answered && r.status.code() != absl::StatusCode::kNotFound)) {
        sessions_.Finish(session, absl::Now());
        return callers ? CallersStatus(stop, "FetchState")
                       : absl::Status(r.status.code(),
                                      absl::StrCat("session '", name, "': FetchState on worker ",
                                                   target->address, ": ", r.status.message()));
      }
      return LoseSessionToWorker(session, session.plan_id, r, "FetchState", true);
    }
    const int64_t applied_at = session.uncertain_version;
    session.state_version = fetched.state_version();
    session.uncertain_request_id.clear();
    if (fetched.state_version() >= applied_at) {
      sessions_.Finish(session, absl::Now());
      return absl::AbortedError(absl::StrCat(
          "request_id '", request.request_id(), "': its step of session '", name,
          "' was applied (state_version ", applied_at,
          ") but its answer was lost; it is not run twice (FetchState returns the state)"));
    }
    target = SessionTarget(session, /*execution=*/true);
    if (!target.ok()) return target.status();
  }

  v1::ExecuteRequest execute;
  execute.set_plan_id(session.worker_plan_id);
  execute.set_session(session.worker_session);
  *execute.mutable_inputs() = request.inputs();
  execute.set_profile(request.profile());
  execute.set_request_id(request.request_id());
  execute.set_memory_limit_bytes(request.memory_limit_bytes());
  v1::ExecuteResponse executed;
  WorkerCallResult r;
  bool callers = false;
  const absl::Time execute_start = absl::Now();
  {
    CallScope call(this, *target, stop);
    r = target->client->Execute(call.call(), execute, &executed);
    callers = !r.status.ok() && CallersFault(stop, call.callers_deadline(), r.status);
  }
  ReleaseWorker(target->address);
  const std::string& address = target->address;
  const std::string where = absl::StrCat("Execute of session '", name, "' on worker ", address);
  if (r.status.ok()) {
    session.state_version = executed.state_version();
    session.uncertain_request_id.clear();
    sessions_.Finish(session, absl::Now());
    response.set_execute_micros(MicrosSince(execute_start));
    *response.mutable_outputs() = std::move(*executed.mutable_outputs());
    *response.mutable_timings() = std::move(*executed.mutable_timings());
    response.set_worker_id(executed.worker_id());
    response.set_worker_address(address);
    response.set_worker_run_micros(executed.run_micros());
    response.set_state_version(executed.state_version());
    response.set_plan_id(session.plan_id);
    response.set_attempts(1);
    response.set_total_micros(MicrosSince(start));
    return response;
  }
  if (callers) {
    std::string note;
    if (!r.answered) {
      // The worker may have finished the step just before the call ended.
      session.uncertain_request_id = request.request_id();
      session.uncertain_version = session.state_version + 1;
      note = request.request_id().empty()
                 ? "; the step may have been applied (FetchState's state_version tells)"
                 : "; the step may have been applied: sent again with the same request_id, the "
                   "Run is answered ABORTED if it was and run if it was not";
    }
    sessions_.Finish(session, absl::Now());
    absl::Status s = CallersStatus(stop, where);
    return absl::Status(s.code(), absl::StrCat(s.message(), note));
  }
  if (r.answered && r.busy) {
    sessions_.Finish(session, absl::Now());
    return Busy(session, address);
  }
  if (r.answered && r.status.code() != absl::StatusCode::kNotFound) {
    // The worker refused or failed the step; its state is as it was.
    sessions_.Finish(session, absl::Now());
    return absl::Status(r.status.code(), absl::StrCat(where, ": ", r.status.message()));
  }
  return LoseSessionToWorker(session, session.plan_id, r, "Execute", true);
}

absl::Status Coordinator::LoadSession(const Target& target, const v1::Graph& plan,
                                      absl::string_view tenant, const StopToken& stop,
                                      SessionTable::Session* session, v1::RunResponse* response) {
  v1::LoadPlanRequest load;
  *load.mutable_graph() = plan;
  load.set_session(session->worker_session);
  if (absl::Status s = InlineBlobReferences(load.mutable_graph(), blobs_, tenant); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("graph: ", s.message()));
  }
  v1::LoadPlanResponse loaded;
  WorkerCallResult r;
  bool callers = false;
  const absl::Time start = absl::Now();
  {
    CallScope call(this, target, stop);
    r = target.client->LoadPlan(call.call(), load, &loaded);
    callers = !r.status.ok() && CallersFault(stop, call.callers_deadline(), r.status);
  }
  response->set_load_micros(MicrosSince(start));
  const std::string where =
      absl::StrCat("LoadPlan of session '", session->name, "' on worker ", target.address);
  if (r.status.ok()) {
    session->worker_plan_id = loaded.plan_id();
    session->address = target.address;
    session->worker_id = target.worker_id;
    session->state_version = loaded.state_version();
    response->set_loaded_plan(true);
    return absl::OkStatus();
  }
  if (callers) {
    // The load may have completed on the worker: drop what it may hold.
    SessionTable::Session orphan = *session;
    orphan.address = target.address;
    // The worker names a plan by the digest of the graph it received.
    orphan.worker_plan_id = Sha256Digest(SerializeDeterministic(load.graph()));
    absl::MutexLock lock(&mu_);
    QueueUnloadLocked(orphan);
    return CallersStatus(stop, where);
  }
  if (r.answered && r.busy) return Busy(*session, target.address);
  if (r.answered) {
    return absl::Status(r.status.code(), absl::StrCat(where, ": ", r.status.message()));
  }
  // Nothing of the session ran: the caller may start it again (on another worker).
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(target.address);
    if (it != workers_.end() && !cancelled_) MarkDown(it->second, CallError(r.status));
  }
  return absl::UnavailableError(
      absl::StrCat(where, ": ", CallError(r.status), " (no step ran; run it again)"));
}

absl::StatusOr<Coordinator::Target> Coordinator::SessionTarget(const SessionTable::Session& session,
                                                               bool execution) {
  std::string why;
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(session.address);
    if (it == workers_.end()) {
      why = "the server no longer knows the worker";
    } else if (it->second.leaving) {
      why = "the worker left the cluster";
    } else if (it->second.health != Health::kUp) {
      why = absl::StrCat("the worker is down (", it->second.last_error, ")");
    } else {
      Worker& w = it->second;
      if (execution) {
        ++w.in_flight;
        ++w.dispatched;
      }
      Target target;
      target.address = w.address;
      target.worker_id = w.worker_id;
      target.client = w.client;
      target.loaded_plan_id = session.worker_plan_id;
      return target;
    }
  }
  sessions_.Lose(session.tenant, session.name, session.id, why);
  return absl::AbortedError(
      SessionTable::LostMessage(session.name, session.worker_id, session.address, why));
}

absl::Status Coordinator::LoseSessionToWorker(const SessionTable::Session& session,
                                              const std::string& plan_id,
                                              const WorkerCallResult& result,
                                              const std::string& rpc, bool holds_step) {
  std::string why = absl::StrCat(rpc, ": ", CallError(result.status));
  if (result.answered) {
    // NOT_FOUND from the worker itself: it restarted, or its session was dropped.
    why = absl::StrCat("the worker no longer has it (", why, ")");
  }
  bool shutting_down = false;
  {
    absl::MutexLock lock(&mu_);
    shutting_down = cancelled_;
    auto it = workers_.find(session.address);
    if (!result.answered && !shutting_down && it != workers_.end()) MarkDown(it->second, why);
  }
  if (shutting_down) {
    if (holds_step) sessions_.Finish(session, absl::Now());
    return absl::UnavailableError(
        absl::StrCat("session '", session.name, "': the server is shutting down (Run cancelled)"));
  }
  if (!result.answered && !result.never_connected && rpc == "Execute") {
    RecordDeath(plan_id, session.address, session.worker_id);
  }
  // MarkDown lost it already unless the worker was forgotten meanwhile or it answered.
  sessions_.Lose(session.tenant, session.name, session.id, why);
  return absl::AbortedError(
      SessionTable::LostMessage(session.name, session.worker_id, session.address, why));
}

absl::StatusOr<v1::CoordinatorFetchStateResponse> Coordinator::FetchState(
    const v1::CoordinatorFetchStateRequest& request, absl::string_view tenant,
    const StopToken* stop) {
  StopToken never;
  const StopToken& token = stop != nullptr ? *stop : never;
  absl::StatusOr<SessionTable::Session> session =
      sessions_.Get(tenant, request.session(), absl::Now());
  if (!session.ok()) return session.status();
  absl::StatusOr<Target> target = SessionTarget(*session, /*execution=*/false);
  if (!target.ok()) return target.status();
  v1::FetchStateRequest fetch;
  fetch.set_plan_id(session->worker_plan_id);
  fetch.set_session(session->worker_session);
  *fetch.mutable_names() = request.names();
  v1::FetchStateResponse fetched;
  WorkerCallResult r;
  bool callers = false;
  {
    CallScope call(this, *target, token);
    r = target->client->FetchState(call.call(), fetch, &fetched);
    callers = !r.status.ok() && CallersFault(token, call.callers_deadline(), r.status);
  }
  const std::string where =
      absl::StrCat("FetchState of session '", session->name, "' on worker ", target->address);
  if (callers) return CallersStatus(token, where);
  if (!r.status.ok()) {
    if (r.answered && r.status.code() != absl::StatusCode::kNotFound) {
      return absl::Status(r.status.code(), absl::StrCat(where, ": ", r.status.message()));
    }
    return LoseSessionToWorker(*session, session->plan_id, r, "FetchState",
                               /*holds_step=*/false);
  }
  v1::CoordinatorFetchStateResponse response;
  *response.mutable_state() = std::move(*fetched.mutable_state());
  response.set_state_version(fetched.state_version());
  response.set_plan_id(session->plan_id);
  response.set_worker_id(target->worker_id);
  response.set_worker_address(target->address);
  return response;
}

absl::StatusOr<v1::EndSessionResponse> Coordinator::EndSession(const v1::EndSessionRequest& request,
                                                               absl::string_view tenant,
                                                               const StopToken* stop) {
  StopToken never;
  const StopToken& token = stop != nullptr ? *stop : never;
  SessionTable::Session ended;
  absl::StatusOr<bool> known = sessions_.End(tenant, request.session(), &ended);
  if (!known.ok()) return known.status();
  v1::EndSessionResponse response;
  response.set_ended(*known);
  if (!ended.loaded()) return response;
  // Dropped now when the worker answers; otherwise later, by the prober.
  absl::StatusOr<Target> target = SessionTarget(ended, /*execution=*/false);
  if (target.ok()) {
    v1::UnloadPlanRequest unload;
    unload.set_plan_id(ended.worker_plan_id);
    unload.set_session(ended.worker_session);
    v1::UnloadPlanResponse unloaded;
    CallScope call(this, *target, token);
    if (target->client->UnloadPlan(call.call(), unload, &unloaded).status.ok()) return response;
  }
  absl::MutexLock lock(&mu_);
  QueueUnloadLocked(ended);
  return response;
}

void Coordinator::LoseSessionsLocked(const Worker& w, const std::string& why, bool unload) {
  for (const SessionTable::Session& s : sessions_.LoseWorker(w.address, w.worker_id, why)) {
    logger_->warn("coordinator: session '{}' of tenant '{}' was lost with worker {} ({}): {}",
                  s.name, s.tenant, w.address, w.worker_id, why);
    if (unload) QueueUnloadLocked(s);
  }
}

void Coordinator::QueueUnloadLocked(const SessionTable::Session& session) {
  PendingUnload p;
  p.address = session.address;
  p.request.set_plan_id(session.worker_plan_id);
  p.request.set_session(session.worker_session);
  pending_unloads_.push_back(std::move(p));
  if (pending_unloads_.size() > kMaxPendingUnloads) {
    logger_->warn("coordinator: giving up dropping session {} on worker {}: too many pending",
                  pending_unloads_.front().request.session(), pending_unloads_.front().address);
    pending_unloads_.pop_front();
  }
}

void Coordinator::MaintainSessions() {
  const std::vector<SessionTable::Session> expired = sessions_.Expire(absl::Now());
  std::vector<std::pair<PendingUnload, Target>> due;
  {
    absl::MutexLock lock(&mu_);
    for (const SessionTable::Session& s : expired) {
      logger_->info("coordinator: session '{}' of tenant '{}' ended: idle for {}", s.name, s.tenant,
                    absl::FormatDuration(options_.session_idle_timeout));
      QueueUnloadLocked(s);
    }
    std::deque<PendingUnload> waiting;
    while (!pending_unloads_.empty()) {
      PendingUnload p = std::move(pending_unloads_.front());
      pending_unloads_.pop_front();
      auto it = workers_.find(p.address);
      if (it == workers_.end()) continue;  // forgotten: nothing to drop it on
      if (it->second.health != Health::kUp || static_cast<int>(due.size()) >= kUnloadsPerRound) {
        waiting.push_back(std::move(p));
        continue;
      }
      Target t;
      t.address = p.address;
      t.worker_id = it->second.worker_id;
      t.client = it->second.client;
      due.emplace_back(std::move(p), std::move(t));
    }
    pending_unloads_ = std::move(waiting);
  }
  for (auto& [p, target] : due) {
    StopToken stop(absl::Now() + options_.probe_timeout);
    v1::UnloadPlanResponse unloaded;
    WorkerCallResult r;
    {
      CallScope call(this, target, stop);
      r = target.client->UnloadPlan(call.call(), p.request, &unloaded);
    }
    if (r.status.ok() || r.status.code() == absl::StatusCode::kNotFound) continue;
    if (++p.tries < kMaxUnloadTries) {
      absl::MutexLock lock(&mu_);
      pending_unloads_.push_back(std::move(p));
    } else {
      logger_->warn("coordinator: giving up dropping session {} on worker {}: {}",
                    p.request.session(), p.address, CallError(r.status));
    }
  }
}

}  // namespace graphopt
