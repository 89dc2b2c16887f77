#ifndef GRAPHOPT_ETCD_ETCD_CLIENT_H_
#define GRAPHOPT_ETCD_ETCD_CLIENT_H_

// A small client of etcd's v3 gRPC API (proto/etcd_rpc.proto): what graphopt's shared cluster
// state needs and nothing more. etcd does the consensus; this only talks to it.
//
// Endpoints: every call goes to the member that answered last; when it fails with UNAVAILABLE
// or DEADLINE_EXCEEDED the next member is tried, up to once around the ring. Reads are
// linearizable (etcd's default), so a replica never reads state older than a write another
// replica has seen acknowledged.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/etcd_rpc.grpc.pb.h"
#include "proto/etcd_rpc.pb.h"

namespace graphopt {

struct EtcdOptions {
  // Members' client addresses, host:port.
  std::vector<std::string> endpoints;
  // Deadline of one unary call on one member.
  absl::Duration call_timeout = absl::Seconds(3);
  // Null: plaintext (a cluster-internal etcd); otherwise TLS to the members.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
};

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;
  // The store's revision the range was read at: watch from revision + 1 to miss nothing.
  int64_t revision = 0;
};

// The end of the range of every key starting with `prefix` (etcd's range_end).
std::string EtcdPrefixEnd(absl::string_view prefix);

// "host:port,host:port" -> endpoints; INVALID_ARGUMENT naming `flag` for an empty list or an
// entry that is not host:port.
absl::StatusOr<std::vector<std::string>> ParseEtcdEndpoints(absl::string_view list,
                                                            absl::string_view flag);

class EtcdClient {
 public:
  // Does not connect yet; INVALID_ARGUMENT without endpoints.
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Create(EtcdOptions options);

  // Waits up to `timeout` for any member to answer a read; UNAVAILABLE naming the endpoints.
  absl::Status WaitReady(absl::Duration timeout);

  absl::StatusOr<std::optional<EtcdKeyValue>> Get(absl::string_view key);
  // Every key under `prefix`, in key order; `limit` 0 for all.
  absl::StatusOr<EtcdRange> GetPrefix(absl::string_view prefix, int64_t limit = 0);
  // How many keys are under `prefix`.
  absl::StatusOr<int64_t> CountPrefix(absl::string_view prefix);
  // The `limit` oldest keys (by creation) under `prefix`, keys only.
  absl::StatusOr<std::vector<std::string>> OldestKeys(absl::string_view prefix, int64_t limit);
  // Returns the put's revision.
  absl::StatusOr<int64_t> Put(absl::string_view key, absl::string_view value, int64_t lease = 0);
  // The number of keys deleted.
  absl::StatusOr<int64_t> Delete(absl::string_view key);
  absl::StatusOr<int64_t> DeletePrefix(absl::string_view prefix);
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(const etcdserverpb::TxnRequest& request);

  // A lease of `ttl` (whole seconds, at least 1); returns its id.
  absl::StatusOr<int64_t> GrantLease(absl::Duration ttl);
  // Renews `lease` once; NOT_FOUND when it has expired.
  absl::Status KeepAliveOnce(int64_t lease);
  absl::Status RevokeLease(int64_t lease);

  std::string Describe() const;
  const EtcdOptions& options() const { return options_; }

  // For the watch and lease threads: the channel of the member in use, and moving on.
  std::shared_ptr<grpc::Channel> CurrentChannel(int* index) const;
  void Failover(int failed_index);

 private:
  explicit EtcdClient(EtcdOptions options);

  // Runs `call` on one member after another until one answers (or every member failed).
  absl::Status WithFailover(
      absl::string_view what,
      const std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&,
                                       grpc::ClientContext*)>& call);

  const EtcdOptions options_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::atomic<int> current_{0};
};

// Mirrors every key under a prefix: `on_snapshot` gets the whole prefix at start and again after
// any interruption (a member lost, the watch compacted away), `on_event` each change in between,
// in revision order. Both run on the watcher's own thread, never at once. Callers treat a
// snapshot as the truth and drop what it lacks, so a missed event cannot leave stale state.
class EtcdPrefixWatcher {
 public:
  struct Event {
    bool deleted = false;
    EtcdKeyValue kv;
  };
  using SnapshotFn = std::function<void(const std::vector<EtcdKeyValue>&)>;
  using EventFn = std::function<void(const Event&)>;

  EtcdPrefixWatcher(EtcdClient* client, std::string prefix, SnapshotFn on_snapshot,
                    EventFn on_event);
  ~EtcdPrefixWatcher();
  EtcdPrefixWatcher(const EtcdPrefixWatcher&) = delete;
  EtcdPrefixWatcher& operator=(const EtcdPrefixWatcher&) = delete;

  // Starts the thread; returns once the first snapshot was delivered or `timeout` passed
  // (UNAVAILABLE: the thread keeps trying).
  absl::Status Start(absl::Duration timeout);
  // Snapshots delivered so far (tests, logs).
  int snapshots() const { return snapshots_.load(); }

 private:
  void Loop();
  // One snapshot plus watch until the stream breaks; false when stopping.
  bool RunOnce();

  EtcdClient* const client_;
  const std::string prefix_;
  const SnapshotFn on_snapshot_;
  const EventFn on_event_;
  std::atomic<int> snapshots_{0};
  absl::Notification first_snapshot_;
  absl::Notification stop_;
  absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::thread thread_;
};

// A lease kept alive for as long as this object lives (revoked at destruction, so the keys
// under it vanish at once on a clean shutdown and after its TTL on a crash). When the lease is
// lost anyway (etcd unreachable for longer than the TTL), a new one is granted and
// `on_new_lease` is called with it so the owner can put its keys again.
class EtcdLeaseKeeper {
 public:
  using NewLeaseFn = std::function<void(int64_t lease)>;

  EtcdLeaseKeeper(EtcdClient* client, absl::Duration ttl, NewLeaseFn on_new_lease);
  ~EtcdLeaseKeeper();
  EtcdLeaseKeeper(const EtcdLeaseKeeper&) = delete;
  EtcdLeaseKeeper& operator=(const EtcdLeaseKeeper&) = delete;

  // Grants the first lease, calls on_new_lease with it, and starts renewing.
  absl::Status Start();
  int64_t lease() const { return lease_.load(); }
  // Leases granted so far (1 unless one was lost).
  int grants() const { return grants_.load(); }

 private:
  void Loop();

  EtcdClient* const client_;
  const absl::Duration ttl_;
  const NewLeaseFn on_new_lease_;
  std::atomic<int64_t> lease_{0};
  std::atomic<int> grants_{0};
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_ETCD_CLIENT_H_
