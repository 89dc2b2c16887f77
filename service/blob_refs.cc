#include "service/blob_refs.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "graph/types.h"
#include "service/digest.h"

namespace graphopt {
namespace {

// Calls `visit` with each initializer and top-level attribute tensor of `graph` and a name for
// messages; stops at the first error.
absl::Status ForEachTensor(v1::Graph& graph,
                           absl::FunctionRef<absl::Status(v1::Tensor&, absl::string_view)> visit) {
  for (v1::Tensor& t : *graph.mutable_initializers()) {
    if (absl::Status s = visit(t, absl::StrCat("initializer '", t.name(), "'")); !s.ok()) return s;
  }
  for (v1::Node& n : *graph.mutable_nodes()) {
    for (v1::Attribute& a : *n.mutable_attributes()) {
      if (!a.has_t()) continue;
      absl::Status s = visit(*a.mutable_t(),
                             absl::StrCat("attribute '", a.name(), "' of node '", n.name(), "'"));
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// The bytes of the blob `t` refers to, checked against `t`.
absl::StatusOr<std::shared_ptr<const std::string>> Resolve(const v1::Tensor& t,
                                                           absl::string_view what,
                                                           BlobStore* blobs,
                                                           absl::string_view tenant) {
  if (!IsBlobDigest(t.blob())) {
    return absl::InvalidArgumentError(absl::StrCat(what, " refers to blob '", t.blob(),
                                                   "', which is not a \"sha256:<64 hex>\" digest"));
  }
  if (blobs == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " refers to blob ", t.blob(), " but this server has no blob store"));
  }
  std::shared_ptr<const std::string> data = blobs->LookupOrFetch(tenant, t.blob());
  if (data == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, " refers to blob ", t.blob(), ", which tenant '", tenant,
        "' does not hold on this server: upload it with PutBlobs first"));
  }
  // Dims come from the request: a product that overflows is as wrong as a mismatch.
  int64_t want = DataTypeSize(t.dtype());
  for (int64_t d : t.dims()) {
    if (d < 0 || (d > 0 && want > INT64_MAX / d)) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has dims that are negative or too "
                                                     "large for any blob"));
    }
    want *= d;
  }
  if (static_cast<int64_t>(data->size()) != want) {
    return absl::InvalidArgumentError(absl::StrCat(what, " refers to blob ", t.blob(), " of ",
                                                   data->size(), " bytes; its dims and type ",
                                                   DataTypeName(t.dtype()), " need ", want));
  }
  return data;
}

}  // namespace

absl::Status CheckBlobReferences(const v1::Graph& graph, BlobStore* blobs,
                                 absl::string_view tenant,
                                 std::vector<std::shared_ptr<const std::string>>* pins) {
  // ForEachTensor visits mutably; nothing is changed here.
  return ForEachTensor(
      const_cast<v1::Graph&>(graph), [&](v1::Tensor& t, absl::string_view what) -> absl::Status {
        if (t.blob().empty()) return absl::OkStatus();
        absl::StatusOr<std::shared_ptr<const std::string>> data = Resolve(t, what, blobs, tenant);
        if (!data.ok()) return data.status();
        pins->push_back(*std::move(data));
        return absl::OkStatus();
      });
}

absl::Status InlineBlobReferences(v1::Graph* graph, BlobStore* blobs, absl::string_view tenant) {
  return ForEachTensor(*graph, [&](v1::Tensor& t, absl::string_view what) -> absl::Status {
    if (t.blob().empty()) return absl::OkStatus();
    absl::StatusOr<std::shared_ptr<const std::string>> data = Resolve(t, what, blobs, tenant);
    if (!data.ok()) return data.status();
    t.set_raw_data(**data);
    t.clear_blob();
    return absl::OkStatus();
  });
}

std::vector<std::string> BlobDigests(const v1::Graph& graph) {
  std::vector<std::string> out;
  (void)ForEachTensor(const_cast<v1::Graph&>(graph), [&](v1::Tensor& t, absl::string_view) {
    if (!t.blob().empty()) out.push_back(t.blob());
    return absl::OkStatus();
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool HasBlobReferences(const v1::Graph& graph) {
  bool found = false;
  (void)ForEachTensor(const_cast<v1::Graph&>(graph), [&](v1::Tensor& t, absl::string_view) {
    found = found || !t.blob().empty();
    return absl::OkStatus();
  });
  return found;
}

}  // namespace graphopt
