#ifndef GRAPHOPT_CLIENT_WEIGHTS_H_
#define GRAPHOPT_CLIENT_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "client/blob_upload.h"
#include "onnx/onnx_pb.h"
#include "proto/graph.pb.h"

namespace graphopt {

// Weights taken out of a model so that they can travel once, as content-addressed blobs,
// while the model itself goes to the server without them; the server's answer refers to the
// same blobs, and the bytes are put back on this side.
class WeightStash {
 public:
  // Initializers with at least this many bytes of data are taken out by default.
  static constexpr int64_t kDefaultMinBytes = 64 * 1024;

  // Moves the raw_data of every initializer of `graph` holding at least `min_bytes` into the
  // stash, leaving Tensor.blob = its digest.
  void Externalize(v1::Graph* graph, int64_t min_bytes = kDefaultMinBytes);
  // The same for an ONNX model: the initializer becomes external data at
  // "graphopt-blob:<digest>" with its length (what the server's ONNX import reads).
  void Externalize(onnx::ModelProto* model, int64_t min_bytes = kDefaultMinBytes);

  // Puts the bytes back into every tensor referring to a stashed blob (initializers and
  // attribute tensors, subgraphs included). The stash keeps its bytes (a second result can be
  // re-attached too). FAILED_PRECONDITION naming the tensor for a blob this stash does not
  // hold.
  absl::Status Reattach(v1::Graph* graph) const;
  absl::Status Reattach(onnx::ModelProto* model) const;

  // The stashed blobs, in the order they were first stashed; valid while the stash lives.
  std::vector<BlobRef> Blobs() const;
  int64_t blob_count() const { return static_cast<int64_t>(order_.size()); }
  int64_t total_bytes() const { return total_bytes_; }

 private:
  // Returns the digest of `bytes`, moving them into the stash unless an equal blob is there.
  std::string Add(std::string bytes);

  absl::flat_hash_map<std::string, std::string> bytes_by_digest_;
  std::vector<std::string> order_;
  int64_t total_bytes_ = 0;
};

// Bytes of raw tensor data in the initializers of a model: how much weight upload could save.
int64_t InitializerBytes(const v1::Graph& graph);
int64_t InitializerBytes(const onnx::ModelProto& model);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_WEIGHTS_H_
