#ifndef GRAPHOPT_CLIENT_BLOB_UPLOAD_H_
#define GRAPHOPT_CLIENT_BLOB_UPLOAD_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "proto/optimizer.grpc.pb.h"

namespace graphopt {

// A blob to make available on the server: its "sha256:<hex>" digest (see service/digest.h) and
// its bytes, which must stay alive during UploadBlobs. The digest is trusted here; the server
// checks it.
struct BlobRef {
  std::string digest;
  absl::string_view data;
};

struct UploadStats {
  // Distinct blobs asked about, and how many of them were sent (the server lacked them).
  int64_t blobs_total = 0;
  int64_t blobs_sent = 0;
  // Their bytes.
  int64_t bytes_total = 0;
  int64_t bytes_sent = 0;
  // Wall time of the whole upload, HasBlobs included.
  double seconds = 0;
};

struct UploadOptions {
  // Bytes of blob data per BlobChunk (>= 1); must stay under the server's message limit.
  int64_t chunk_bytes = int64_t{1} << 20;
  // Deadline of the whole upload (HasBlobs and PutBlobs together).
  absl::Duration timeout = absl::Minutes(30);
  // Digests per HasBlobs request (about 700 KB of request); more are asked in several
  // requests. Must not exceed the server's --max_blob_digests.
  int max_digests_per_request = 10000;
  // Prefixed to error messages, e.g. "server 10.0.0.1:50051".
  std::string context;
  // Sent as the "graphopt-tenant" metadata of each call when not empty.
  std::string tenant;
  // Further metadata of each call (the credential: "authorization: Bearer <token>").
  std::vector<std::pair<std::string, std::string>> metadata;
  // Called with (bytes sent so far, bytes to send in all) once before the first chunk and
  // after each one; only when something is to be sent.
  std::function<void(int64_t bytes_sent, int64_t bytes_to_send)> progress;
};

// Makes `blobs` available in the server's blob store: asks HasBlobs which digests it lacks,
// then sends only those with one PutBlobs stream, in chunks of options.chunk_bytes. Equal
// digests are sent once. Errors: INVALID_ARGUMENT for a malformed digest or one digest given
// with two different sizes (before anything is sent); otherwise the server's or the
// transport's status code, with options.context and the RPC prefixed to the message.
absl::StatusOr<UploadStats> UploadBlobs(v1::GraphOptimizer::StubInterface& stub,
                                        absl::Span<const BlobRef> blobs,
                                        const UploadOptions& options);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_BLOB_UPLOAD_H_
