#include "client/weights.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "onnx_io/onnx_import.h"
#include "service/digest.h"

namespace graphopt {

std::string WeightStash::Add(std::string bytes) {
  std::string digest = Sha256Digest(bytes);
  auto [it, inserted] = bytes_by_digest_.try_emplace(digest);
  if (inserted) {
    total_bytes_ += static_cast<int64_t>(bytes.size());
    it->second = std::move(bytes);
    order_.push_back(digest);
  }
  return digest;
}

void WeightStash::Externalize(v1::Graph* graph, int64_t min_bytes) {
  for (v1::Tensor& t : *graph->mutable_initializers()) {
    if (!t.blob().empty() || static_cast<int64_t>(t.raw_data().size()) < min_bytes) continue;
    std::string bytes;
    bytes.swap(*t.mutable_raw_data());
    t.set_blob(Add(std::move(bytes)));
  }
}

void WeightStash::Externalize(onnx::ModelProto* model, int64_t min_bytes) {
  for (onnx::TensorProto& t : *model->mutable_graph()->mutable_initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL || !t.has_raw_data() ||
        static_cast<int64_t>(t.raw_data().size()) < min_bytes) {
      continue;
    }
    std::string bytes;
    bytes.swap(*t.mutable_raw_data());
    const int64_t size = static_cast<int64_t>(bytes.size());
    const std::string digest = Add(std::move(bytes));
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    t.clear_external_data();
    onnx::StringStringEntryProto* location = t.add_external_data();
    location->set_key("location");
    location->set_value(absl::StrCat(kBlobLocationPrefix, digest));
    onnx::StringStringEntryProto* length = t.add_external_data();
    length->set_key("length");
    length->set_value(absl::StrCat(size));
  }
}

absl::Status WeightStash::Reattach(v1::Graph* graph) const {
  // Iterative over subgraphs: a work list of graphs still to visit.
  std::vector<v1::Graph*> pending = {graph};
  auto put_back = [&](v1::Tensor& t) -> absl::Status {
    if (t.blob().empty()) return absl::OkStatus();
    auto it = bytes_by_digest_.find(t.blob());
    if (it == bytes_by_digest_.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "tensor '", t.name(), "' of the result refers to blob ", t.blob(),
          ", which this client did not send"));
    }
    t.set_raw_data(it->second);
    t.clear_blob();
    return absl::OkStatus();
  };
  while (!pending.empty()) {
    v1::Graph* g = pending.back();
    pending.pop_back();
    for (v1::Tensor& t : *g->mutable_initializers()) {
      if (absl::Status s = put_back(t); !s.ok()) return s;
    }
    for (v1::Node& n : *g->mutable_nodes()) {
      for (v1::Attribute& a : *n.mutable_attributes()) {
        if (a.has_t()) {
          if (absl::Status s = put_back(*a.mutable_t()); !s.ok()) return s;
        }
        if (a.has_g()) pending.push_back(a.mutable_g());
        if (a.has_graphs()) {
          for (v1::Graph& sub : *a.mutable_graphs()->mutable_values()) pending.push_back(&sub);
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status WeightStash::Reattach(onnx::ModelProto* model) const {
  std::vector<onnx::GraphProto*> pending = {model->mutable_graph()};
  auto put_back = [&](onnx::TensorProto& t) -> absl::Status {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return absl::OkStatus();
    for (const onnx::StringStringEntryProto& e : t.external_data()) {
      if (e.key() != "location" || !absl::StartsWith(e.value(), kBlobLocationPrefix)) continue;
      const std::string digest = e.value().substr(kBlobLocationPrefix.size());
      auto it = bytes_by_digest_.find(digest);
      if (it == bytes_by_digest_.end()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "tensor '", t.name(), "' of the result refers to blob ", digest,
            ", which this client did not send"));
      }
      t.clear_external_data();
      t.clear_data_location();
      t.set_raw_data(it->second);
      return absl::OkStatus();
    }
    return absl::OkStatus();
  };
  while (!pending.empty()) {
    onnx::GraphProto* g = pending.back();
    pending.pop_back();
    for (onnx::TensorProto& t : *g->mutable_initializer()) {
      if (absl::Status s = put_back(t); !s.ok()) return s;
    }
    for (onnx::NodeProto& n : *g->mutable_node()) {
      for (onnx::AttributeProto& a : *n.mutable_attribute()) {
        if (a.has_t()) {
          if (absl::Status s = put_back(*a.mutable_t()); !s.ok()) return s;
        }
        if (a.has_g()) pending.push_back(a.mutable_g());
        for (onnx::GraphProto& sub : *a.mutable_graphs()) pending.push_back(&sub);
      }
    }
  }
  return absl::OkStatus();
}

std::vector<BlobRef> WeightStash::Blobs() const {
  std::vector<BlobRef> blobs;
  blobs.reserve(order_.size());
  for (const std::string& digest : order_) {
    blobs.push_back({digest, bytes_by_digest_.at(digest)});
  }
  return blobs;
}

int64_t InitializerBytes(const v1::Graph& graph) {
  int64_t total = 0;
  for (const v1::Tensor& t : graph.initializers()) total += t.raw_data().size();
  return total;
}

int64_t InitializerBytes(const onnx::ModelProto& model) {
  int64_t total = 0;
  for (const onnx::TensorProto& t : model.graph().initializer()) total += t.raw_data().size();
  return total;
}

}  // namespace graphopt
