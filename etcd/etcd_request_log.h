#ifndef GRAPHOPT_ETCD_ETCD_REQUEST_LOG_H_
#define GRAPHOPT_ETCD_ETCD_REQUEST_LOG_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "etcd/etcd_client.h"
#include "service/request_log.h"

namespace graphopt {

struct EtcdRequestLogOptions {
  // How long an answered id is remembered (--request_id_ttl_s): at least this, at most a quarter
  // more, since records share a lease that is replaced every quarter of it.
  absl::Duration answer_ttl = absl::Hours(24);
  // Answered ids kept per tenant (--request_ids_per_tenant); beyond, the oldest are deleted.
  int max_per_tenant = 10000;
  // Answers whose record would be larger are stored without their body (etcd refuses requests
  // over 1.5 MiB by default): other replicas then refuse to replay them.
  int64_t max_record_bytes = int64_t{1} << 20;
  // How often a request waiting for the same id on another replica looks again.
  absl::Duration poll_interval = absl::Milliseconds(100);
  // Too-large answers this replica gave, kept in memory to replay them here (oldest forgotten).
  int local_entries = 64;
  int64_t local_bytes = int64_t{256} << 20;
};

// Request ids shared by every server replica through etcd, one key per tenant and id (PREFIX
// requests/TENANT/ID, etcd/keys.h). A claim is created only where no key exists, under the
// claiming replica's lease: if that replica dies, the claim vanishes after the lease's TTL and a
// retry elsewhere runs the request (the dead replica never answered, so nothing is answered
// twice). An answer replaces the claim under a shared lease of answer_ttl. When etcd cannot be
// reached, Claim fails with UNAVAILABLE rather than risk running a request twice.
//
// Record values: "STATE\nFINGERPRINT\nOWNER\nSIZE\n" then the serialized RunResponse, STATE being
// "running", "done" or "done-large" (no body: SIZE bytes were too many). Thread-safe.
class EtcdRequestLog final : public RequestLog {
 public:
  // `client` must outlive this object. `owner` names this replica in records (its address);
  // `running_lease` returns its current lease (ReplicaPresence::lease), 0 while it has none.
  EtcdRequestLog(EtcdClient* client, std::string prefix, std::string owner,
                 std::function<int64_t()> running_lease, EtcdRequestLogOptions options = {});
  ~EtcdRequestLog() override;

  absl::StatusOr<RequestClaim> Claim(const std::string& tenant, const std::string& id,
                                     const std::string& fingerprint) override;
  void Complete(const std::string& tenant, const std::string& id,
                const v1::RunResponse& response) override;
  void Abandon(const std::string& tenant, const std::string& id, const absl::Status& why) override;
  absl::StatusOr<RequestClaim> Wait(const RequestClaim& running, const std::string& tenant,
                                    const std::string& id, const std::string& fingerprint,
                                    const StopToken& stop) override;

  // Answers and abandonments that could not be written (etcd out of reach). An answer is tried
  // again by later calls (up to 1,024 of them kept); meanwhile, and for an abandonment,
  // the claim stays until written or until this replica's lease goes. For logs and tests.
  int64_t write_failures() const;

 private:
  struct Record {
    std::string state;
    std::string fingerprint;
    std::string owner;
    int64_t size = 0;
    std::string body;
  };
  struct OwnClaim {
    int64_t revision = 0;  // the claim's create revision
    std::string fingerprint;
  };
  // An answer that could not be written yet (etcd out of reach), retried by later calls.
  struct Unwritten {
    std::string key;
    std::string tenant;
    OwnClaim claim;
    Record record;
  };
  struct LocalAnswer {
    std::string fingerprint;
    std::shared_ptr<const v1::RunResponse> response;
    int64_t bytes = 0;
  };

  static std::string Encode(const Record& record);
  static bool Decode(const std::string& value, Record* record);
  // What an existing record means to a request with `fingerprint`.
  absl::StatusOr<RequestClaim> FromRecord(const std::string& key, const std::string& id,
                                          const std::string& fingerprint, const std::string& value);
  // The shared lease for answers, replaced every quarter of answer_ttl.
  absl::StatusOr<int64_t> AnswerLease();
  // Deletes the tenant's oldest answered ids beyond max_per_tenant.
  void Trim(const std::string& tenant);
  // This replica's claim on `key` (revision 0: none), forgotten.
  OwnClaim TakeClaim(const std::string& key);
  // Replaces this replica's claim by `record` under the answer lease.
  absl::Status WriteAnswer(const std::string& key, const OwnClaim& claim, const Record& record);
  // The claim transaction for `key` (Claim without the local bookkeeping).
  absl::StatusOr<RequestClaim> ClaimInEtcd(const std::string& key, const std::string& id,
                                           const std::string& fingerprint, int64_t lease);
  // Deletes claims this replica may have written without hearing etcd's answer, where nothing
  // here runs them, so that a retry elsewhere does not wait on a claim no one will finish.
  void ReleaseUnconfirmed();
  // Retries answers that could not be written before (and releases unconfirmed claims).
  void WriteUnwritten();
  void RememberLocally(const std::string& key, const std::string& fingerprint,
                       const v1::RunResponse& response);

  EtcdClient* const client_;
  const std::string prefix_;
  const std::string owner_;
  const std::function<int64_t()> running_lease_;
  const EtcdRequestLogOptions options_;

  // Held while the answer lease is replaced, so that one grant serves every Complete waiting.
  absl::Mutex lease_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  // This replica's claims now running, by key.
  absl::flat_hash_map<std::string, OwnClaim> claims_ ABSL_GUARDED_BY(mu_);
  std::deque<Unwritten> unwritten_ ABSL_GUARDED_BY(mu_);
  // Ids being claimed here now (their transaction in flight).
  absl::flat_hash_set<std::string> claiming_ ABSL_GUARDED_BY(mu_);
  // Claims whose transaction failed on the way: possibly written, see ReleaseUnconfirmed.
  std::deque<std::string> unconfirmed_ ABSL_GUARDED_BY(mu_);
  int64_t answer_lease_ ABSL_GUARDED_BY(lease_mu_) = 0;
  absl::Time answer_lease_granted_ ABSL_GUARDED_BY(lease_mu_) = absl::InfinitePast();
  absl::flat_hash_map<std::string, LocalAnswer> local_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> local_order_ ABSL_GUARDED_BY(mu_);
  int64_t local_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t write_failures_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_ETCD_ETCD_REQUEST_LOG_H_
