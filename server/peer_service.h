#ifndef GRAPHOPT_SERVER_PEER_SERVICE_H_
#define GRAPHOPT_SERVER_PEER_SERVICE_H_

#include <atomic>
#include <cstdint>

#include <memory>

#include "grpcpp/grpcpp.h"
#include "proto/peer.grpc.pb.h"
#include "proto/peer.pb.h"
#include "server/auth.h"
#include "server/rpc_call.h"
#include "service/blob_store.h"

namespace graphopt {

struct PeerServiceLimits {
  // Most digests one FetchBlobs call may name.
  int max_digests_per_call = 64;
  // Bytes of blob data per streamed message: one message in memory per stream.
  int64_t chunk_bytes = int64_t{2} << 20;
  // FetchBlobs streams open at once.
  int max_streams = 8;
};

// graphopt.v1.Peer: what server replicas ask of each other (proto/peer.proto). FetchBlobs
// streams the blobs this replica's store holds in the tenant's namespace, read-only: no blob
// is fetched onwards from a third replica, so a request never travels further than one hop.
//
// Access: Access::kClusterPeer in `env`, whose authenticator (PeerCallAuthenticator) allows
// only the server identity (graphopt-server) over TLS; with --insecure anyone (a development
// setup). `env` should have no tenant limiter: peers' calls are not a tenant's traffic.
// The authenticator of the Peer service's environment: a caller whose verified client
// certificate names kServerIdentity (another replica of this cluster), or anyone on a
// plaintext listener (--insecure); Access other than kClusterPeer is refused.
CallAuthenticator PeerCallAuthenticator(std::shared_ptr<Authenticator> auth);

class PeerService final : public v1::Peer::CallbackService {
 public:
  // `blobs` and `env` must outlive the service.
  PeerService(BlobStore* blobs, RpcEnvironment* env, PeerServiceLimits limits = {});

  grpc::ServerWriteReactor<v1::BlobChunk>* FetchBlobs(
      grpc::CallbackServerContext* context, const v1::FetchBlobsRequest* request) override;

  // Blobs streamed out in full so far.
  int64_t blobs_served() const { return blobs_served_.load(); }

 private:
  class Stream;

  BlobStore* const blobs_;
  RpcEnvironment* const env_;
  const PeerServiceLimits limits_;
  MethodPolicy policy_;
  std::atomic<int> streams_{0};
  std::atomic<int64_t> blobs_served_{0};
};

}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_PEER_SERVICE_H_
