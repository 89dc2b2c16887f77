#ifndef GRAPHOPT_SERVICE_SESSION_TABLE_H_
#define GRAPHOPT_SERVICE_SESSION_TABLE_H_

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace graphopt {

// The coordinator's training sessions (coordinator.proto RunRequest.session): which worker
// holds each session's state, under which names, and at which version. A session's state
// lives on one worker only, so this table is the affinity that sends every step of a session
// there. It also keeps the bounds (sessions per tenant and in all, idle expiry) and remembers,
// for a while, sessions that were lost with their worker or expired, so that a later step of
// one fails saying why instead of silently starting again from the initial weights.
//
// Sessions are keyed by (tenant, name): tenants never see each other's sessions, and the
// name a session has on its worker includes a digest of the tenant, so that two tenants'
// "s1" never meet there either. Thread-safe; never calls out while holding its lock.
class SessionTable {
 public:
  struct Limits {
    // Live sessions one tenant may have, and all tenants together.
    int max_per_tenant = 16;
    int max_sessions = 4096;
    // A session without a step or FetchState for this long is ended.
    absl::Duration idle_timeout = absl::Minutes(30);
    // Lost and expired sessions remembered (oldest forgotten first).
    int max_gone = 4096;
  };

  // One session as the coordinator knows it (a copy: the table keeps its own).
  struct Session {
    std::string tenant;
    std::string name;
    // Distinguishes this session from an earlier one of the same name (ended, lost).
    int64_t id = 0;
    // The name on the worker: WorkerSessionName, "#", this table's incarnation, ".", id.
    std::string worker_session;
    // The coordinator's plan id, and the worker's once the plan is loaded there (empty
    // before: the first step is loading it).
    std::string plan_id;
    std::string worker_plan_id;
    // The worker holding the state; empty before the first step picked one.
    std::string address;
    std::string worker_id;
    // A state tensor's name, for the cheapest FetchState that tells the version.
    std::string probe_state;
    // Steps applied to the state, as the worker last said.
    int64_t state_version = 0;
    // A step whose outcome is unknown (the caller's deadline or cancellation came during
    // it): its request id, and the version the state has if it was applied.
    std::string uncertain_request_id;
    int64_t uncertain_version = 0;
    absl::Time last_used = absl::InfinitePast();

    bool loaded() const { return !worker_plan_id.empty(); }
  };

  // `incarnation` tells this table's sessions from those of an earlier table (a server that
  // restarted) on the workers; empty: the time of construction.
  explicit SessionTable(Limits limits, std::string incarnation = "");
  SessionTable(const SessionTable&) = delete;
  SessionTable& operator=(const SessionTable&) = delete;

  // INVALID_ARGUMENT naming the field unless `name` is 1 to 128 bytes of letters, digits and
  // "._:/-".
  static absl::Status CheckName(absl::string_view name);
  // The start of a session's name on its worker: "t" + 16 hex digits of the tenant's SHA-256,
  // "/", name. Each session of a name gets its own suffix, so that a session started again
  // never meets the state of an earlier one of that name still on the worker (one lost while
  // its worker was unreachable, dropped there later).
  static std::string WorkerSessionName(absl::string_view tenant, absl::string_view name);

  // Begins a step of (tenant, name). With `plan_id` empty the session must exist; otherwise
  // an unknown session is created for that plan (its first step: the caller loads it, then
  // Finish or Abandon), and a known one must have that plan. The session is busy until
  // Finish, Abandon or its loss. Errors: ABORTED for a session lost with its worker or busy
  // with another step; NOT_FOUND for an expired or unknown one; FAILED_PRECONDITION for
  // another plan; RESOURCE_EXHAUSTED at the limits.
  absl::StatusOr<Session> Begin(absl::string_view tenant, absl::string_view name,
                                const std::string& plan_id, const std::string& probe_state,
                                absl::Time now);
  // Ends a step begun by Begin: stores `session` (worker, version, ...) and makes it idle.
  // False (nothing stored) when the session was lost or ended meanwhile.
  bool Finish(const Session& session, absl::Time now);
  // Stores `session` during its step (the step goes on). False as Finish's.
  bool Update(const Session& session);
  // Ends a first step that could not load the plan: the session is forgotten.
  void Abandon(const Session& session);
  // The session for FetchState (busy or not); marks it used. Errors as Begin's; also
  // FAILED_PRECONDITION while its first step is still loading it.
  absl::StatusOr<Session> Get(absl::string_view tenant, absl::string_view name, absl::Time now);

  // The sessions held by the worker at `address` are lost (it died or restarted): each is
  // forgotten and remembered as lost with `why`. Returns them.
  std::vector<Session> LoseWorker(const std::string& address, const std::string& worker_id,
                                  const std::string& why);
  // One session is lost (its worker no longer has it). No effect unless `id` is still its id.
  void Lose(absl::string_view tenant, absl::string_view name, int64_t id, const std::string& why);
  // Ends every idle session unused since before now - idle_timeout, remembering it as
  // expired. Returns those that were loaded (to be dropped on their workers).
  std::vector<Session> Expire(absl::Time now);
  // Ends (tenant, name): returns whether it was known, live or remembered as lost or expired;
  // `*ended` receives the live session (to be dropped on its worker) when there was one.
  // ABORTED while a step of it runs.
  absl::StatusOr<bool> End(absl::string_view tenant, absl::string_view name, Session* ended);

  // Live sessions.
  int size() const;

  // "session 'x' was lost with worker w (host:port): why; start it again from your last
  // fetched state".
  static std::string LostMessage(absl::string_view name, absl::string_view worker_id,
                                 absl::string_view address, absl::string_view why);

 private:
  using Key = std::pair<std::string, std::string>;  // tenant, name
  struct Entry {
    Session session;
    bool busy = false;
  };
  struct Gone {
    absl::StatusCode code;
    std::string message;
    int64_t id;
  };

  void RememberGoneLocked(const Key& key, absl::StatusCode code, std::string message, int64_t id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status GoneStatusLocked(const Key& key) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const Limits limits_;
  const std::string incarnation_;
  mutable absl::Mutex mu_;
  // Ordered maps: deterministic expiry and loss order.
  absl::btree_map<Key, Entry> live_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<std::string, int> per_tenant_ ABSL_GUARDED_BY(mu_);
  absl::btree_map<Key, Gone> gone_ ABSL_GUARDED_BY(mu_);
  // Gone keys in the order they went, with the id they went with (a key that went, came back
  // and went again is forgotten by its latest id only).
  std::deque<std::pair<Key, int64_t>> gone_order_ ABSL_GUARDED_BY(mu_);
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVICE_SESSION_TABLE_H_
