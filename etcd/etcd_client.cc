#include "etcd/etcd_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace graphopt {
namespace {

std::chrono::system_clock::time_point DeadlineIn(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

// A member that cannot answer now: another one may.
bool MemberProblem(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         s.error_code() == grpc::StatusCode::CANCELLED;
}

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat("etcd ", what, ": ", s.error_message()));
}

EtcdKeyValue FromProto(const etcdserverpb::KeyValue& kv) {
  EtcdKeyValue out;
  out.key = kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.lease = kv.lease();
  return out;
}

}  // namespace

std::string EtcdPrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  // The first key past every key with this prefix: increment the last byte that is not 0xff.
  while (!end.empty()) {
    unsigned char last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  // An empty or all-0xff prefix: every key ("\0" is etcd's "to the end").
  return std::string(1, '\0');
}

absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(absl::string_view list,
                                                            absl::string_view flag) {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    absl::ConsumePrefix(&item, "http://");
    const size_t colon = item.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(item.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", item, "' is not host:port (etcd members' client addresses, comma-separated)"));
    }
    out.emplace_back(item);
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": no endpoints"));
  }
  return out;
}

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  grpc::ChannelArguments args;
  // Members come back after restarts: reconnect quickly rather than after minutes of backoff.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  // A member accepts connections before it serves (while it joins the cluster): give up on
  // such an attempt after a second instead of gRPC's default 20 s.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  // etcd's default request limit is 1.5 MiB; answers (ranges) may be larger.
  args.SetMaxReceiveMessageSize(64 << 20);
  for (const std::string& endpoint : options_.endpoints) {
    channels_.push_back(grpc::CreateCustomChannel(
        endpoint,
        options_.credentials != nullptr ? options_.credentials
                                        : grpc::InsecureChannelCredentials(),
        args));
  }
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Create(EtcdOptions options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("etcd: no endpoints");
  }
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(options)));
}

std::string EtcdClient::Describe() const {
  return absl::StrCat("etcd ", absl::StrJoin(options_.endpoints, ","));
}

std::shared_ptr<grpc::Channel> EtcdClient::CurrentChannel(int* index) const {
  const int i = current_.load() % static_cast<int>(channels_.size());
  if (index != nullptr) *index = i;
  return channels_[i];
}

void EtcdClient::Failover(int failed_index) {
  int expected = failed_index;
  current_.compare_exchange_strong(expected,
                                   (failed_index + 1) % static_cast<int>(channels_.size()));
}

absl::Status EtcdClient::WithFailover(
    absl::string_view what,
    const std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&,
                                     grpc::ClientContext*)>& call) {
  grpc::Status last;
  for (size_t attempt = 0; attempt < channels_.size(); ++attempt) {
    int index = 0;
    std::shared_ptr<grpc::Channel> channel = CurrentChannel(&index);
    grpc::ClientContext context;
    context.set_deadline(DeadlineIn(options_.call_timeout));
    // A member that is restarting should be waited for within the deadline, not failed at once.
    context.set_wait_for_ready(true);
    last = call(channel, &context);
    if (last.ok()) return absl::OkStatus();
    if (!MemberProblem(last)) return FromGrpc(last, what);
    Failover(index);
  }
  return absl::UnavailableError(absl::StrCat("etcd ", what, ": no member of ",
                                             absl::StrJoin(options_.endpoints, ","),
                                             " answered; last error: ", last.error_message()));
}

absl::Status EtcdClient::WaitReady(absl::Duration timeout) {
  const absl::Time until = absl::Now() + timeout;
  absl::Status last;
  while (true) {
    absl::StatusOr<std::optional<EtcdKeyValue>> probe = Get("\x01graphopt-ready-probe");
    if (probe.ok()) return absl::OkStatus();
    last = probe.status();
    if (absl::Now() >= until) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::UnavailableError(
      absl::StrCat(Describe(), " not reachable within ", absl::FormatDuration(timeout), ": ",
                   last.message()));
}

absl::StatusOr<std::optional<EtcdKeyValue>> EtcdClient::Get(absl::string_view key) {
  etcdserverpb::RangeRequest request;
  request.set_key(std::string(key));
  etcdserverpb::RangeResponse response;
  absl::Status s = WithFailover("get", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->Range(context, request, &response);
  });
  if (!s.ok()) return s;
  if (response.kvs().empty()) return std::optional<EtcdKeyValue>();
  return std::optional<EtcdKeyValue>(FromProto(response.kvs(0)));
}

absl::StatusOr<EtcdRange> EtcdClient::GetPrefix(absl::string_view prefix, int64_t limit) {
  etcdserverpb::RangeRequest request;
  request.set_key(std::string(prefix));
  request.set_range_end(EtcdPrefixEnd(prefix));
  request.set_limit(limit);
  etcdserverpb::RangeResponse response;
  absl::Status s = WithFailover("range", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->Range(context, request, &response);
  });
  if (!s.ok()) return s;
  EtcdRange out;
  out.revision = response.header().revision();
  out.kvs.reserve(response.kvs_size());
  for (const etcdserverpb::KeyValue& kv : response.kvs()) out.kvs.push_back(FromProto(kv));
  return out;
}

absl::StatusOr<int64_t> EtcdClient::CountPrefix(absl::string_view prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(std::string(prefix));
  request.set_range_end(EtcdPrefixEnd(prefix));
  request.set_count_only(true);
  etcdserverpb::RangeResponse response;
  absl::Status s = WithFailover("count", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->Range(context, request, &response);
  });
  if (!s.ok()) return s;
  return response.count();
}

absl::StatusOr<std::vector<std::string>> EtcdClient::OldestKeys(absl::string_view prefix,
                                                                int64_t limit) {
  etcdserverpb::RangeRequest request;
  request.set_key(std::string(prefix));
  request.set_range_end(EtcdPrefixEnd(prefix));
  request.set_limit(limit);
  request.set_keys_only(true);
  request.set_sort_order(etcdserverpb::RangeRequest::ASCEND);
  request.set_sort_target(etcdserverpb::RangeRequest::CREATE);
  etcdserverpb::RangeResponse response;
  absl::Status s = WithFailover("range", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->Range(context, request, &response);
  });
  if (!s.ok()) return s;
  std::vector<std::string> keys;
  for (const etcdserverpb::KeyValue& kv : response.kvs()) keys.push_back(kv.key());
  return keys;
}

absl::StatusOr<int64_t> EtcdClient::Put(absl::string_view key, absl::string_view value,
                                        int64_t lease) {
  etcdserverpb::PutRequest request;
  request.set_key(std::string(key));
  request.set_value(std::string(value));
  request.set_lease(lease);
  etcdserverpb::PutResponse response;
  absl::Status s = WithFailover("put", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->Put(context, request, &response);
  });
  if (!s.ok()) return s;
  return response.header().revision();
}

absl::StatusOr<int64_t> EtcdClient::Delete(absl::string_view key) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(std::string(key));
  etcdserverpb::DeleteRangeResponse response;
  absl::Status s = WithFailover("delete", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->DeleteRange(context, request, &response);
  });
  if (!s.ok()) return s;
  return response.deleted();
}

absl::StatusOr<int64_t> EtcdClient::DeletePrefix(absl::string_view prefix) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(std::string(prefix));
  request.set_range_end(EtcdPrefixEnd(prefix));
  etcdserverpb::DeleteRangeResponse response;
  absl::Status s = WithFailover("delete", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->DeleteRange(context, request, &response);
  });
  if (!s.ok()) return s;
  return response.deleted();
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(
    const etcdserverpb::TxnRequest& request) {
  etcdserverpb::TxnResponse response;
  absl::Status s = WithFailover("txn", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::KV::NewStub(channel)->Txn(context, request, &response);
  });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<int64_t> EtcdClient::GrantLease(absl::Duration ttl) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(std::max<int64_t>(1, absl::ToInt64Seconds(ttl)));
  etcdserverpb::LeaseGrantResponse response;
  absl::Status s =
      WithFailover("lease grant", [&](const auto& channel, grpc::ClientContext* context) {
        return etcdserverpb::Lease::NewStub(channel)->LeaseGrant(context, request, &response);
      });
  if (!s.ok()) return s;
  if (!response.error().empty()) {
    return absl::UnavailableError(absl::StrCat("etcd lease grant: ", response.error()));
  }
  return response.id();
}

absl::Status EtcdClient::KeepAliveOnce(int64_t lease) {
  etcdserverpb::LeaseKeepAliveResponse response;
  bool got = false;
  absl::Status s =
      WithFailover("lease keepalive", [&](const auto& channel, grpc::ClientContext* context) {
        auto stream = etcdserverpb::Lease::NewStub(channel)->LeaseKeepAlive(context);
        etcdserverpb::LeaseKeepAliveRequest request;
        request.set_id(lease);
        got = stream->Write(request) && stream->Read(&response);
        // etcd ends the stream once the client's side is done.
        stream->WritesDone();
        grpc::Status finished = stream->Finish();
        if (got) return grpc::Status::OK;
        if (finished.ok()) {
          return grpc::Status(grpc::StatusCode::UNAVAILABLE, "keepalive stream closed");
        }
        return finished;
      });
  if (!s.ok()) return s;
  if (response.ttl() <= 0) {
    return absl::NotFoundError(absl::StrCat("etcd lease ", lease, " has expired"));
  }
  return absl::OkStatus();
}

absl::Status EtcdClient::RevokeLease(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  return WithFailover("lease revoke", [&](const auto& channel, grpc::ClientContext* context) {
    return etcdserverpb::Lease::NewStub(channel)->LeaseRevoke(context, request, &response);
  });
}

// --- EtcdPrefixWatcher ---

EtcdPrefixWatcher::EtcdPrefixWatcher(EtcdClient* client, std::string prefix,
                                     SnapshotFn on_snapshot, EventFn on_event)
    : client_(client),
      prefix_(std::move(prefix)),
      on_snapshot_(std::move(on_snapshot)),
      on_event_(std::move(on_event)) {}

EtcdPrefixWatcher::~EtcdPrefixWatcher() {
  stop_.Notify();
  {
    absl::MutexLock lock(&mu_);
    if (context_ != nullptr) context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status EtcdPrefixWatcher::Start(absl::Duration timeout) {
  thread_ = std::thread([this] { Loop(); });
  if (first_snapshot_.WaitForNotificationWithTimeout(timeout)) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat("no snapshot of '", prefix_, "' from ",
                                             client_->Describe(), " within ",
                                             absl::FormatDuration(timeout), "; still trying"));
}

void EtcdPrefixWatcher::Loop() {
  while (!stop_.HasBeenNotified()) {
    if (!RunOnce()) return;
    // A broken stream: pause briefly so a cluster without a leader is not hammered.
    stop_.WaitForNotificationWithTimeout(absl::Milliseconds(200));
  }
}

bool EtcdPrefixWatcher::RunOnce() {
  absl::StatusOr<EtcdRange> range = client_->GetPrefix(prefix_);
  if (!range.ok()) return !stop_.HasBeenNotified();
  on_snapshot_(range->kvs);
  snapshots_.fetch_add(1);
  if (!first_snapshot_.HasBeenNotified()) first_snapshot_.Notify();

  int index = 0;
  std::shared_ptr<grpc::Channel> channel = client_->CurrentChannel(&index);
  grpc::ClientContext context;
  {
    absl::MutexLock lock(&mu_);
    if (stop_.HasBeenNotified()) return false;
    context_ = &context;
  }
  auto stub = etcdserverpb::Watch::NewStub(channel);
  auto stream = stub->Watch(&context);
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(prefix_);
  create->set_range_end(EtcdPrefixEnd(prefix_));
  create->set_start_revision(range->revision + 1);
  // Progress notifications keep an idle stream observably alive.
  create->set_progress_notify(true);
  bool broken = !stream->Write(request);
  etcdserverpb::WatchResponse response;
  while (!broken && stream->Read(&response)) {
    if (response.canceled() || response.compact_revision() != 0) break;
    for (const etcdserverpb::Event& e : response.events()) {
      Event event;
      event.deleted = e.type() == etcdserverpb::Event::DELETE;
      event.kv = FromProto(e.kv());
      on_event_(event);
    }
  }
  {
    absl::MutexLock lock(&mu_);
    context_ = nullptr;
  }
  context.TryCancel();
  grpc::Status finished = stream->Finish();
  if (MemberProblem(finished) && !stop_.HasBeenNotified()) client_->Failover(index);
  return !stop_.HasBeenNotified();
}

// --- EtcdLeaseKeeper ---

EtcdLeaseKeeper::EtcdLeaseKeeper(EtcdClient* client, absl::Duration ttl, NewLeaseFn on_new_lease)
    : client_(client), ttl_(ttl), on_new_lease_(std::move(on_new_lease)) {}

EtcdLeaseKeeper::~EtcdLeaseKeeper() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
  if (const int64_t lease = lease_.load(); lease != 0) {
    // Best effort: on failure the keys vanish after the TTL anyway.
    client_->RevokeLease(lease).IgnoreError();
  }
}

absl::Status EtcdLeaseKeeper::Start() {
  absl::StatusOr<int64_t> lease = client_->GrantLease(ttl_);
  if (!lease.ok()) return lease.status();
  lease_.store(*lease);
  grants_.fetch_add(1);
  on_new_lease_(*lease);
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void EtcdLeaseKeeper::Loop() {
  // Renewing three times per TTL survives two lost renewals.
  const absl::Duration period = std::max(ttl_ / 3, absl::Milliseconds(200));
  while (!stop_.WaitForNotificationWithTimeout(period)) {
    absl::Status renewed = client_->KeepAliveOnce(lease_.load());
    if (renewed.ok() || !absl::IsNotFound(renewed)) continue;
    // Expired (etcd was out of reach for longer than the TTL): start over with a new lease.
    absl::StatusOr<int64_t> lease = client_->GrantLease(ttl_);
    if (!lease.ok()) continue;
    lease_.store(*lease);
    grants_.fetch_add(1);
    on_new_lease_(*lease);
  }
}

}  // namespace graphopt
