#ifndef GRAPHOPT_SERVER_PEER_BLOB_FETCHER_H_
#define GRAPHOPT_SERVER_PEER_BLOB_FETCHER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "etcd/blob_holders.h"
#include "grpcpp/grpcpp.h"
#include "proto/peer.grpc.pb.h"
#include "server/tls.h"
#include "service/blob_store.h"
#include "spdlog/logger.h"

namespace graphopt {

struct PeerFetchOptions {
  // How channels to other replicas are made: with TLS, this server's own certificate as the
  // client's and the peer's checked under the server identity (graphopt-server).
  ChannelSecurity security;
  // A holder not connected within this long is skipped (a dead or partitioned replica whose
  // record has not expired yet)...
  absl::Duration connect_timeout = absl::Seconds(2);
  // ...and not tried again for this long, so that many blobs of one dead replica cost one
  // connect_timeout, not one each.
  absl::Duration down_for = absl::Seconds(10);
  // After etcd failed to answer a holders lookup, no lookup is made for this long: blobs are
  // reported missing at once (the replica works alone) instead of each waiting for etcd.
  absl::Duration etcd_retry_after = absl::Seconds(5);
  // Deadline of one FetchBlobs call (one blob).
  absl::Duration call_timeout = absl::Seconds(300);
  // Holders tried per blob before it is reported missing.
  int max_holders_tried = 3;
  // Blobs one Fetch looks for; the rest are reported missing (the client uploads them).
  int max_blobs_per_fetch = 1024;
  // Largest message accepted from a peer (its chunks are a few MiB).
  int max_message_bytes = 16 << 20;
};

// The BlobFetcher of a server replica in a cluster: for each blob the local store lacks, the
// holders recorded in etcd (EtcdBlobHolders) are asked in turn, over graphopt.v1.Peer/
// FetchBlobs, until one streams it in. The bytes go through BlobStore::StartWrite, so the
// tenant's quota and the store's budget apply and the digest is verified: a blob that does
// not fit, or a peer that sends other bytes, leaves the blob missing. The blob committed, the
// store's observer records this replica as a holder too.
//
// Concurrent fetches of one tenant's blob are coalesced: one transfer, the other callers wait
// for its end. Bounded: blobs one at a time per caller, max_blobs_per_fetch per call, each
// transfer under call_timeout, each connection attempt under connect_timeout, a holder that
// did not connect skipped for down_for, and a Fetch whose etcd lookup fails stops there (etcd
// out of reach: the replica behaves as a lone server, and clients upload).
class PeerBlobFetcher final : public BlobFetcher {
 public:
  // `holders` must outlive the fetcher.
  PeerBlobFetcher(EtcdBlobHolders* holders, PeerFetchOptions options,
                  std::shared_ptr<spdlog::logger> logger);
  ~PeerBlobFetcher() override;

  void Fetch(BlobStore& store, const std::string& tenant,
             const std::vector<std::string>& digests) override;

  // Blobs brought in and transfers that failed, so far.
  int64_t fetched() const { return fetched_.load(); }
  int64_t failures() const { return failures_.load(); }

 private:
  struct Flight {
    absl::Notification done;
  };

  // Brings one blob from its holders; the status of the last attempt. `etcd_failed` is set
  // when the holders could not be read.
  absl::Status FetchOne(BlobStore& store, const std::string& tenant, const std::string& digest,
                        bool* etcd_failed);
  bool IsDown(const std::string& address);
  void MarkDown(const std::string& address);
  // One FetchBlobs call to `address`.
  absl::Status FetchFrom(BlobStore& store, const std::string& address,
                         const std::string& tenant, const std::string& digest,
                         int64_t expected_size);
  std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address);

  EtcdBlobHolders* const holders_;
  const PeerFetchOptions options_;
  const std::shared_ptr<spdlog::logger> logger_;
  absl::Mutex mu_;
  // "tenant/digest" -> the transfer in progress.
  absl::flat_hash_map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::shared_ptr<grpc::Channel>> channels_
      ABSL_GUARDED_BY(mu_);
  // Holders that did not connect -> until when they are skipped.
  absl::flat_hash_map<std::string, absl::Time> down_until_ ABSL_GUARDED_BY(mu_);
  absl::Time etcd_down_until_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::atomic<int64_t> fetched_{0};
  std::atomic<int64_t> failures_{0};
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_PEER_BLOB_FETCHER_H_
