#include "etcd/etcd_request_log.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "etcd/keys.h"

namespace graphopt {
namespace {

constexpr char kRunning[] = "running";
constexpr char kDone[] = "done";
constexpr char kDoneLarge[] = "done-large";
// Record values of answered ids sort below this and running ones above it ("d..." < "e" <
// "r..."): the trim deletes a key only if it is still answered, never a running claim.
constexpr char kAnsweredBelow[] = "e";
// Oldest ids deleted by one trim (a tenant normally exceeds its bound by one).
constexpr int64_t kMaxTrimPerCall = 100;
constexpr int64_t kTrimSlack = 16;
// Answers kept for another try when etcd could not take them (the oldest dropped beyond).
constexpr size_t kMaxUnwritten = 1024;

// etcd's trouble is the client's to retry (on this replica or another): UNAVAILABLE, whatever
// etcd said, but for a request etcd refuses as such (too large). NOT_FOUND is a lease that
// lapsed while etcd was out of reach: a new one is being taken.
absl::Status EtcdError(const absl::Status& s, absl::string_view what) {
  const bool refused = s.code() == absl::StatusCode::kInvalidArgument ||
                       s.code() == absl::StatusCode::kResourceExhausted;
  const absl::string_view why =
      s.code() == absl::StatusCode::kNotFound
          ? "this replica's etcd lease lapsed (etcd was out of reach for longer than "
            "--etcd_lease_ttl_s) and is being renewed; try again: "
          : "";
  return absl::Status(refused ? s.code() : absl::StatusCode::kUnavailable,
                      absl::StrCat("cannot ", what, " in etcd (request ids are kept there): ", why,
                                   s.message()));
}

void CompareCreate(etcdserverpb::TxnRequest* txn, const std::string& key, int64_t revision) {
  etcdserverpb::Compare* c = txn->add_compare();
  c->set_key(key);
  c->set_target(etcdserverpb::Compare::CREATE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  // An absent key compares as create revision 0.
  c->set_create_revision(revision);
}

}  // namespace

EtcdRequestLog::EtcdRequestLog(EtcdClient* client, std::string prefix, std::string owner,
                               std::function<int64_t()> running_lease,
                               EtcdRequestLogOptions options)
    : client_(client),
      prefix_(std::move(prefix)),
      owner_(std::move(owner)),
      running_lease_(std::move(running_lease)),
      options_(std::move(options)) {}

EtcdRequestLog::~EtcdRequestLog() = default;

std::string EtcdRequestLog::Encode(const Record& r) {
  return absl::StrCat(r.state, "\n", r.fingerprint, "\n", r.owner, "\n", r.size, "\n", r.body);
}

bool EtcdRequestLog::Decode(const std::string& value, Record* r) {
  size_t pos = 0;
  std::string* fields[] = {&r->state, &r->fingerprint, &r->owner};
  for (std::string* field : fields) {
    const size_t nl = value.find('\n', pos);
    if (nl == std::string::npos) return false;
    *field = value.substr(pos, nl - pos);
    pos = nl + 1;
  }
  const size_t nl = value.find('\n', pos);
  if (nl == std::string::npos || !absl::SimpleAtoi(value.substr(pos, nl - pos), &r->size)) {
    return false;
  }
  r->body = value.substr(nl + 1);
  return r->state == kRunning || r->state == kDone || r->state == kDoneLarge;
}

absl::StatusOr<RequestClaim> EtcdRequestLog::FromRecord(const std::string& key,
                                                        const std::string& id,
                                                        const std::string& fingerprint,
                                                        const std::string& value) {
  Record record;
  if (!Decode(value, &record)) {
    return absl::InternalError(
        absl::StrCat("etcd key '", key, "' is not a request-id record; delete it to reuse the id"));
  }
  RequestClaim claim;
  if (record.fingerprint != fingerprint) {
    claim.kind = RequestClaim::Kind::kMismatch;
    return claim;
  }
  if (record.state != kDone) {
    // A too-large answer, or one this replica gave but could not write yet: replayed from here.
    absl::MutexLock lock(&mu_);
    if (auto it = local_.find(key); it != local_.end() && it->second.fingerprint == fingerprint) {
      claim.kind = RequestClaim::Kind::kDone;
      claim.answer = *it->second.response;
      return claim;
    }
  }
  if (record.state == kRunning) {
    claim.kind = RequestClaim::Kind::kRunning;
    return claim;
  }
  claim.kind = RequestClaim::Kind::kDone;
  if (record.state == kDone) {
    v1::RunResponse response;
    if (!response.ParseFromString(record.body)) {
      claim.answer = absl::InternalError(
          absl::StrCat("request id ", id, " was answered already; its stored answer (etcd key '",
                       key, "') does not parse"));
    } else {
      claim.answer = std::move(response);
    }
    return claim;
  }
  claim.answer = absl::AlreadyExistsError(absl::StrFormat(
      "request id %s was answered already; its answer (%.1f MiB) is too large to replay from "
      "shared state",
      id, static_cast<double>(record.size) / (1 << 20)));
  return claim;
}

absl::StatusOr<RequestClaim> EtcdRequestLog::Claim(const std::string& tenant, const std::string& id,
                                                   const std::string& fingerprint) {
  WriteUnwritten();
  const int64_t lease = running_lease_();
  if (lease == 0) {
    return absl::UnavailableError(
        "this replica holds no etcd lease (etcd out of reach?): request ids cannot be claimed");
  }
  const std::string key = absl::StrCat(etcd_keys::Requests(prefix_, tenant), id);
  {
    // The same id on this replica while it is claimed or running here: wait for that one.
    absl::MutexLock lock(&mu_);
    if (claims_.contains(key) || !claiming_.insert(key).second) {
      RequestClaim claim;
      claim.kind = RequestClaim::Kind::kRunning;
      return claim;
    }
  }
  absl::StatusOr<RequestClaim> claim = ClaimInEtcd(key, id, fingerprint, lease);
  absl::MutexLock lock(&mu_);
  claiming_.erase(key);
  return claim;
}

absl::StatusOr<RequestClaim> EtcdRequestLog::ClaimInEtcd(const std::string& key,
                                                         const std::string& id,
                                                         const std::string& fingerprint,
                                                         int64_t lease) {
  Record running;
  running.state = kRunning;
  running.fingerprint = fingerprint;
  running.owner = owner_;
  etcdserverpb::TxnRequest txn;
  CompareCreate(&txn, key, 0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(Encode(running));
  put->set_lease(lease);
  txn.add_failure()->mutable_request_range()->set_key(key);
  absl::StatusOr<etcdserverpb::TxnResponse> done = client_->Txn(txn);
  if (!done.ok()) {
    // The claim may have been written all the same (etcd took it, the answer was lost): then
    // nobody would ever finish it. Checked, and deleted if so, once etcd answers again.
    absl::MutexLock lock(&mu_);
    unconfirmed_.push_back(key);
    while (unconfirmed_.size() > kMaxUnwritten) unconfirmed_.pop_front();
    return EtcdError(done.status(), "claim the request id");
  }
  if (done->succeeded()) {
    absl::MutexLock lock(&mu_);
    claims_[key] = OwnClaim{done->header().revision(), fingerprint};
    RequestClaim claim;
    claim.kind = RequestClaim::Kind::kFirst;
    return claim;
  }
  if (done->responses_size() != 1 || done->responses(0).response_range().kvs().empty()) {
    // Present at the compare, so the range in the same transaction sees it; defensive only.
    return absl::InternalError(
        absl::StrCat("etcd answered a failed claim of '", key, "' without the key"));
  }
  const etcdserverpb::KeyValue& kv = done->responses(0).response_range().kvs(0);
  Record record;
  if (Decode(kv.value(), &record) && record.state == kRunning && record.owner == owner_ &&
      record.fingerprint == fingerprint) {
    // A claim of this replica's that nothing here runs: the client's own retry of a claim whose
    // answer etcd lost (a member failing over), or one left by this replica's previous process.
    // No one else will finish it: this request does.
    absl::MutexLock lock(&mu_);
    claims_[key] = OwnClaim{kv.create_revision(), fingerprint};
    RequestClaim claim;
    claim.kind = RequestClaim::Kind::kFirst;
    return claim;
  }
  return FromRecord(key, id, fingerprint, kv.value());
}

void EtcdRequestLog::ReleaseUnconfirmed() {
  std::deque<std::string> keys;
  {
    absl::MutexLock lock(&mu_);
    if (unconfirmed_.empty()) return;
    keys.swap(unconfirmed_);
  }
  while (!keys.empty()) {
    const std::string& key = keys.front();
    absl::StatusOr<std::optional<EtcdKeyValue>> kv = client_->Get(key);
    if (!kv.ok()) break;  // etcd still away: later
    Record record;
    bool ours = false;
    if (kv->has_value() && Decode((*kv)->value, &record) && record.state == kRunning &&
        record.owner == owner_) {
      absl::MutexLock lock(&mu_);
      ours = !claims_.contains(key) && !claiming_.contains(key);
    }
    if (ours) {
      // Only that claim: another written since stays.
      etcdserverpb::TxnRequest txn;
      CompareCreate(&txn, key, (*kv)->create_revision);
      txn.add_success()->mutable_request_delete_range()->set_key(key);
      if (!client_->Txn(txn).ok()) break;
    }
    keys.pop_front();
  }
  absl::MutexLock lock(&mu_);
  for (std::string& key : keys) unconfirmed_.push_back(std::move(key));
  while (unconfirmed_.size() > kMaxUnwritten) unconfirmed_.pop_front();
}

absl::StatusOr<RequestClaim> EtcdRequestLog::Wait(const RequestClaim& running,
                                                  const std::string& tenant, const std::string& id,
                                                  const std::string& fingerprint,
                                                  const StopToken& stop) {
  // Every replica's claim looks the same in etcd: `running` adds nothing to a look at the key.
  static_cast<void>(running);
  absl::Status last_error;
  while (true) {
    const absl::Time wake = std::min(absl::Now() + options_.poll_interval, stop.deadline());
    while (absl::Now() < wake && !stop.ShouldStop()) {
      absl::SleepFor(std::min(absl::Milliseconds(10), wake - absl::Now()));
    }
    if (absl::Status why = stop.Check("waiting for the first request with this id"); !why.ok()) {
      if (last_error.ok()) return why;
      return absl::Status(
          why.code(),
          absl::StrCat(why.message(), " (last look in etcd: ", last_error.message(), ")"));
    }
    // A claim attempt rather than a read: when the first request failed, or its replica died,
    // this request takes the id, and a claim of this replica's that nothing here runs is
    // adopted; otherwise it sees the record (still running, or the answer).
    absl::StatusOr<RequestClaim> claim = Claim(tenant, id, fingerprint);
    if (!claim.ok() && absl::IsUnavailable(claim.status())) {
      // An outage shorter than the caller's deadline only delays the answer.
      last_error = claim.status();
      continue;
    }
    last_error = absl::OkStatus();
    if (!claim.ok() || claim->kind != RequestClaim::Kind::kRunning) return claim;
  }
}

EtcdRequestLog::OwnClaim EtcdRequestLog::TakeClaim(const std::string& key) {
  absl::MutexLock lock(&mu_);
  auto it = claims_.find(key);
  if (it == claims_.end()) return OwnClaim();
  OwnClaim claim = std::move(it->second);
  claims_.erase(it);
  return claim;
}

absl::StatusOr<int64_t> EtcdRequestLog::AnswerLease() {
  absl::MutexLock lock(&lease_mu_);
  const absl::Duration refresh = options_.answer_ttl / 4;
  if (answer_lease_ != 0 && absl::Now() - answer_lease_granted_ < refresh) return answer_lease_;
  // Granted for a quarter more than the TTL, so that an answer stored just before the next
  // rotation is still remembered for the whole TTL. The old lease is left to expire with its
  // records.
  const absl::Duration ttl =
      absl::Seconds(std::ceil(absl::ToDoubleSeconds(options_.answer_ttl + refresh)));
  absl::StatusOr<int64_t> lease = client_->GrantLease(ttl);
  if (!lease.ok()) return lease.status();
  answer_lease_ = *lease;
  answer_lease_granted_ = absl::Now();
  return answer_lease_;
}

void EtcdRequestLog::RememberLocally(const std::string& key, const std::string& fingerprint,
                                     const v1::RunResponse& response) {
  LocalAnswer answer;
  answer.fingerprint = fingerprint;
  answer.response = std::make_shared<const v1::RunResponse>(response);
  answer.bytes = static_cast<int64_t>(response.ByteSizeLong());
  absl::MutexLock lock(&mu_);
  if (auto it = local_.find(key); it != local_.end()) {
    local_bytes_ -= it->second.bytes;
  } else {
    local_order_.push_back(key);
  }
  local_bytes_ += answer.bytes;
  local_[key] = std::move(answer);
  while (!local_order_.empty() && (static_cast<int>(local_.size()) > options_.local_entries ||
                                   local_bytes_ > options_.local_bytes)) {
    auto old = local_.find(local_order_.front());
    if (old != local_.end()) {
      local_bytes_ -= old->second.bytes;
      local_.erase(old);
    }
    local_order_.pop_front();
  }
}

absl::Status EtcdRequestLog::WriteAnswer(const std::string& key, const OwnClaim& claim,
                                         const Record& record) {
  const std::string value = Encode(record);
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<int64_t> lease = AnswerLease();
    if (!lease.ok()) return lease.status();
    // This replica's claim, or no key at all (the claim's lease lapsed): a claim another replica
    // took meanwhile is left alone (it runs the request too; nothing can prevent that then).
    absl::Status status;
    for (int64_t expected : {claim.revision, int64_t{0}}) {
      etcdserverpb::TxnRequest txn;
      CompareCreate(&txn, key, expected);
      etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
      put->set_key(key);
      put->set_value(value);
      put->set_lease(*lease);
      absl::StatusOr<etcdserverpb::TxnResponse> done = client_->Txn(txn);
      status = done.status();
      if (!done.ok() || done->succeeded()) break;
    }
    if (status.code() == absl::StatusCode::kNotFound && attempt == 0) {
      // The answer lease is gone (revoked by hand, or etcd's clock ran past it): a new one.
      absl::MutexLock lock(&lease_mu_);
      answer_lease_ = 0;
      continue;
    }
    return status;
  }
}

void EtcdRequestLog::WriteUnwritten() {
  ReleaseUnconfirmed();
  std::deque<Unwritten> pending;
  {
    absl::MutexLock lock(&mu_);
    if (unwritten_.empty()) return;
    pending.swap(unwritten_);
  }
  while (!pending.empty()) {
    Unwritten& u = pending.front();
    if (!WriteAnswer(u.key, u.claim, u.record).ok()) break;
    Trim(u.tenant);
    pending.pop_front();
  }
  absl::MutexLock lock(&mu_);
  for (Unwritten& u : pending) unwritten_.push_back(std::move(u));
  while (unwritten_.size() > kMaxUnwritten) unwritten_.pop_front();
}

void EtcdRequestLog::Complete(const std::string& tenant, const std::string& id,
                              const v1::RunResponse& response) {
  const std::string key = absl::StrCat(etcd_keys::Requests(prefix_, tenant), id);
  OwnClaim claim = TakeClaim(key);
  if (claim.revision == 0) return;
  Record record;
  record.state = kDone;
  record.fingerprint = claim.fingerprint;
  record.owner = owner_;
  record.body = response.SerializeAsString();
  record.size = static_cast<int64_t>(record.body.size());
  if (static_cast<int64_t>(Encode(record).size()) > options_.max_record_bytes) {
    record.state = kDoneLarge;
    record.body.clear();
    RememberLocally(key, claim.fingerprint, response);
  }
  if (absl::Status written = WriteAnswer(key, claim, record); !written.ok()) {
    // Replayed here meanwhile; written by a later call once etcd answers again.
    if (record.state == kDone) RememberLocally(key, claim.fingerprint, response);
    absl::MutexLock lock(&mu_);
    ++write_failures_;
    unwritten_.push_back(Unwritten{key, tenant, std::move(claim), std::move(record)});
    while (unwritten_.size() > kMaxUnwritten) unwritten_.pop_front();
    return;
  }
  Trim(tenant);
}

void EtcdRequestLog::Abandon(const std::string& tenant, const std::string& id,
                             const absl::Status& why) {
  // Nothing of the failure is kept: a retry runs the request again.
  static_cast<void>(why);
  const std::string key = absl::StrCat(etcd_keys::Requests(prefix_, tenant), id);
  const OwnClaim claim = TakeClaim(key);
  if (claim.revision == 0) return;
  etcdserverpb::TxnRequest txn;
  // Only this replica's claim: if its lease lapsed and another replica claimed the id since,
  // that claim stays.
  CompareCreate(&txn, key, claim.revision);
  txn.add_success()->mutable_request_delete_range()->set_key(key);
  if (!client_->Txn(txn).ok()) {
    absl::MutexLock lock(&mu_);
    ++write_failures_;
  }
}

void EtcdRequestLog::Trim(const std::string& tenant) {
  const std::string base = etcd_keys::Requests(prefix_, tenant);
  absl::StatusOr<int64_t> count = client_->CountPrefix(base);
  if (!count.ok() || *count <= options_.max_per_tenant) return;
  const int64_t excess = *count - options_.max_per_tenant;
  // A few more than the excess: running claims among the oldest are skipped, not deleted.
  absl::StatusOr<std::vector<std::string>> oldest =
      client_->OldestKeys(base, std::min(kMaxTrimPerCall, excess + kTrimSlack));
  if (!oldest.ok()) return;
  int64_t deleted = 0;
  for (const std::string& key : *oldest) {
    if (deleted == excess) break;
    etcdserverpb::TxnRequest txn;
    etcdserverpb::Compare* answered = txn.add_compare();
    answered->set_key(key);
    answered->set_target(etcdserverpb::Compare::VALUE);
    answered->set_result(etcdserverpb::Compare::LESS);
    answered->set_value(kAnsweredBelow);
    txn.add_success()->mutable_request_delete_range()->set_key(key);
    absl::StatusOr<etcdserverpb::TxnResponse> done = client_->Txn(txn);
    if (done.ok() && done->succeeded()) ++deleted;
  }
}

int64_t EtcdRequestLog::write_failures() const {
  absl::MutexLock lock(&mu_);
  return write_failures_;
}

}  // namespace graphopt
