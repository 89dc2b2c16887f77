#include "service/session_table.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "service/digest.h"

namespace graphopt {
namespace {

constexpr size_t kMaxNameBytes = 128;

}  // namespace

SessionTable::SessionTable(Limits limits, std::string incarnation)
    : limits_(limits),
      incarnation_(incarnation.empty() ? absl::StrCat(absl::ToUnixNanos(absl::Now()))
                                       : std::move(incarnation)) {}

absl::Status SessionTable::CheckName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("session: ", name.size(), " bytes, want 1 to ", kMaxNameBytes));
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != ':' &&
        c != '/' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat("session: '", absl::CHexEscape(name),
                       "' has a character other than letters, digits and \"._:/-\""));
    }
  }
  return absl::OkStatus();
}

std::string SessionTable::WorkerSessionName(absl::string_view tenant, absl::string_view name) {
  // A digest, not the tenant's name: the worker needs no tenant names, and a tenant name with
  // a "/" could otherwise forge another tenant's prefix.
  const std::string digest = Sha256Digest(tenant);
  return absl::StrCat("t", digest.substr(kBlobDigestPrefix.size(), 16), "/", name);
}

std::string SessionTable::LostMessage(absl::string_view name, absl::string_view worker_id,
                                      absl::string_view address, absl::string_view why) {
  return absl::StrCat("session '", name, "' was lost with worker ",
                      worker_id.empty() ? address : worker_id, " (", address, "): ", why,
                      "; start it again from your last fetched state (EndSession frees the "
                      "name)");
}

void SessionTable::RememberGoneLocked(const Key& key, absl::StatusCode code, std::string message,
                                      int64_t id) {
  gone_[key] = Gone{code, std::move(message), id};
  gone_order_.emplace_back(key, id);
  while (static_cast<int>(gone_order_.size()) > limits_.max_gone) {
    auto& [old_key, old_id] = gone_order_.front();
    auto it = gone_.find(old_key);
    if (it != gone_.end() && it->second.id == old_id) gone_.erase(it);
    gone_order_.pop_front();
  }
}

absl::Status SessionTable::GoneStatusLocked(const Key& key) const {
  auto it = gone_.find(key);
  if (it == gone_.end()) return absl::OkStatus();
  return absl::Status(it->second.code, it->second.message);
}

absl::StatusOr<SessionTable::Session> SessionTable::Begin(absl::string_view tenant,
                                                          absl::string_view name,
                                                          const std::string& plan_id,
                                                          const std::string& probe_state,
                                                          absl::Time now) {
  if (absl::Status s = CheckName(name); !s.ok()) return s;
  const Key key{std::string(tenant), std::string(name)};
  absl::MutexLock lock(&mu_);
  if (absl::Status gone = GoneStatusLocked(key); !gone.ok()) return gone;
  auto it = live_.find(key);
  if (it != live_.end()) {
    Entry& e = it->second;
    if (e.busy) {
      return absl::AbortedError(absl::StrCat(
          "session '", name, "' is running another step; a session's steps run one at a time"));
    }
    if (!plan_id.empty() && plan_id != e.session.plan_id) {
      return absl::FailedPreconditionError(
          absl::StrCat("session '", name, "' runs plan ", e.session.plan_id, ", not ", plan_id,
                       "; end it (EndSession) or use another session name for another plan"));
    }
    e.busy = true;
    e.session.last_used = now;
    return e.session;
  }
  if (plan_id.empty()) {
    return absl::NotFoundError(
        absl::StrCat("session '", name, "': no such session (its first Run must carry the graph)"));
  }
  int& mine = per_tenant_[key.first];
  if (mine >= limits_.max_per_tenant) {
    return absl::ResourceExhaustedError(
        absl::StrCat("session '", name, "': this tenant already has ", mine,
                     " sessions, the most the server allows (end one with EndSession)"));
  }
  if (static_cast<int>(live_.size()) >= limits_.max_sessions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("session '", name, "': the server holds ", live_.size(),
                     " sessions, the most it allows; try again later"));
  }
  ++mine;
  Entry& e = live_[key];
  e.busy = true;
  e.session.tenant = key.first;
  e.session.name = key.second;
  e.session.id = next_id_++;
  e.session.worker_session =
      absl::StrCat(WorkerSessionName(tenant, name), "#", incarnation_, ".", e.session.id);
  e.session.plan_id = plan_id;
  e.session.probe_state = probe_state;
  e.session.last_used = now;
  return e.session;
}

bool SessionTable::Finish(const Session& session, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(Key(session.tenant, session.name));
  if (it == live_.end() || it->second.session.id != session.id) return false;
  it->second.session = session;
  it->second.session.last_used = now;
  it->second.busy = false;
  return true;
}

bool SessionTable::Update(const Session& session) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(Key(session.tenant, session.name));
  if (it == live_.end() || it->second.session.id != session.id) return false;
  it->second.session = session;
  return true;
}

void SessionTable::Abandon(const Session& session) {
  absl::MutexLock lock(&mu_);
  auto it = live_.find(Key(session.tenant, session.name));
  if (it == live_.end() || it->second.session.id != session.id) return;
  live_.erase(it);
  if (--per_tenant_[session.tenant] == 0) per_tenant_.erase(session.tenant);
}

absl::StatusOr<SessionTable::Session> SessionTable::Get(absl::string_view tenant,
                                                        absl::string_view name, absl::Time now) {
  if (absl::Status s = CheckName(name); !s.ok()) return s;
  const Key key{std::string(tenant), std::string(name)};
  absl::MutexLock lock(&mu_);
  if (absl::Status gone = GoneStatusLocked(key); !gone.ok()) return gone;
  auto it = live_.find(key);
  if (it == live_.end()) {
    return absl::NotFoundError(absl::StrCat("session '", name, "': no such session"));
  }
  if (!it->second.session.loaded()) {
    return absl::FailedPreconditionError(
        absl::StrCat("session '", name, "' is starting: its first Run is loading its plan"));
  }
  it->second.session.last_used = now;
  return it->second.session;
}

std::vector<SessionTable::Session> SessionTable::LoseWorker(const std::string& address,
                                                            const std::string& worker_id,
                                                            const std::string& why) {
  std::vector<Session> lost;
  absl::MutexLock lock(&mu_);
  for (auto it = live_.begin(); it != live_.end();) {
    const Session& s = it->second.session;
    if (s.address != address) {
      ++it;
      continue;
    }
    RememberGoneLocked(
        it->first, absl::StatusCode::kAborted,
        LostMessage(s.name, worker_id.empty() ? s.worker_id : worker_id, address, why), s.id);
    if (--per_tenant_[s.tenant] == 0) per_tenant_.erase(s.tenant);
    lost.push_back(s);
    it = live_.erase(it);
  }
  return lost;
}

void SessionTable::Lose(absl::string_view tenant, absl::string_view name, int64_t id,
                        const std::string& why) {
  const Key key{std::string(tenant), std::string(name)};
  absl::MutexLock lock(&mu_);
  auto it = live_.find(key);
  if (it == live_.end() || it->second.session.id != id) return;
  const Session& s = it->second.session;
  RememberGoneLocked(key, absl::StatusCode::kAborted,
                     LostMessage(s.name, s.worker_id, s.address, why), id);
  if (--per_tenant_[s.tenant] == 0) per_tenant_.erase(s.tenant);
  live_.erase(it);
}

std::vector<SessionTable::Session> SessionTable::Expire(absl::Time now) {
  std::vector<Session> expired;
  absl::MutexLock lock(&mu_);
  for (auto it = live_.begin(); it != live_.end();) {
    const Session& s = it->second.session;
    if (it->second.busy || now - s.last_used < limits_.idle_timeout) {
      ++it;
      continue;
    }
    RememberGoneLocked(
        it->first, absl::StatusCode::kNotFound,
        absl::StrCat("session '", s.name, "' was ended after ",
                     absl::FormatDuration(absl::Trunc(now - s.last_used, absl::Seconds(1))),
                     " idle (the server ends sessions idle for ",
                     absl::FormatDuration(limits_.idle_timeout),
                     "); start it again from your last fetched state (EndSession frees the "
                     "name)"),
        s.id);
    if (--per_tenant_[s.tenant] == 0) per_tenant_.erase(s.tenant);
    if (s.loaded()) expired.push_back(s);
    it = live_.erase(it);
  }
  return expired;
}

absl::StatusOr<bool> SessionTable::End(absl::string_view tenant, absl::string_view name,
                                       Session* ended) {
  if (absl::Status s = CheckName(name); !s.ok()) return s;
  const Key key{std::string(tenant), std::string(name)};
  absl::MutexLock lock(&mu_);
  // The remembered loss goes too; its entry in gone_order_ is skipped when it comes up (its id
  // no longer matches anything).
  const bool was_gone = gone_.erase(key) > 0;
  auto it = live_.find(key);
  if (it == live_.end()) return was_gone;
  if (it->second.busy) {
    return absl::AbortedError(
        absl::StrCat("session '", name, "' is running a step; end it when the step is over"));
  }
  *ended = it->second.session;
  if (--per_tenant_[key.first] == 0) per_tenant_.erase(key.first);
  live_.erase(it);
  return true;
}

int SessionTable::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(live_.size());
}

}  // namespace graphopt
