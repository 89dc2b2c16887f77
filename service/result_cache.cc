#include "service/result_cache.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/repeated_field.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "service/digest.h"

namespace graphopt {
namespace {

// Feeds whatever protobuf writes into a hasher: a message is hashed without being serialized
// into one string first (a model's inline weights are not copied).
class HashingStream final : public google::protobuf::io::CopyingOutputStream {
 public:
  explicit HashingStream(Sha256Hasher* hasher) : hasher_(hasher) {}
  bool Write(const void* buffer, int size) override {
    hasher_->Update(absl::string_view(static_cast<const char*>(buffer), size));
    return true;
  }

 private:
  Sha256Hasher* hasher_;
};

// A part of the key: its length first, so no two sequences of parts hash alike.
void AddPart(Sha256Hasher& hasher, absl::string_view part) {
  const std::string length = absl::StrCat(part.size(), ":");
  hasher.Update(length);
  hasher.Update(part);
}

void AddMessage(Sha256Hasher& hasher, const google::protobuf::MessageLite& message) {
  hasher.Update(absl::StrCat(message.ByteSizeLong(), ":"));
  HashingStream sink(&hasher);
  google::protobuf::io::CopyingOutputStreamAdaptor adaptor(&sink);
  {
    google::protobuf::io::CodedOutputStream coded(&adaptor);
    // Deterministic: maps (pass options, dim_bindings) in key order.
    coded.SetSerializationDeterministic(true);
    message.SerializeWithCachedSizes(&coded);
  }
  adaptor.Flush();
}

}  // namespace

std::string OptimizeCacheKey(v1::OptimizeRequest* request, absl::string_view op_set_digest) {
  Sha256Hasher hasher;
  AddPart(hasher, "graphopt-optimize-cache-key");
  AddPart(hasher, kGraphoptVersion);
  AddPart(hasher, op_set_digest);
  // The model, the request's ops and the options that do not change the result are set aside
  // (swapped out, O(1)) while the rest of the request is hashed, then put back.
  std::unique_ptr<v1::Graph> graph(request->has_graph() ? request->release_graph() : nullptr);
  std::string onnx;
  onnx.swap(*request->mutable_onnx_model());
  google::protobuf::RepeatedPtrField<v1::OpDescriptor> ops;
  ops.Swap(request->mutable_ops());
  std::unique_ptr<v1::OptimizeOptions> options(
      request->has_options() ? request->release_options() : nullptr);
  AddMessage(hasher, *request);
  if (options != nullptr) {
    // Hashed without verify and no_cache, and absent when nothing else is set (as in a request
    // that never had options).
    std::unique_ptr<v1::VerifyOptions> verify(options->has_verify() ? options->release_verify()
                                                                     : nullptr);
    const bool no_cache = options->no_cache();
    options->clear_no_cache();
    if (options->ByteSizeLong() > 0) {
      AddPart(hasher, "options");
      AddMessage(hasher, *options);
    }
    options->set_no_cache(no_cache);
    if (verify != nullptr) options->set_allocated_verify(verify.release());
    request->set_allocated_options(options.release());
  }
  // Request ops, in order (their order can decide which definition wins).
  hasher.Update(absl::StrCat("ops:", ops.size(), ":"));
  for (const v1::OpDescriptor& op : ops) AddMessage(hasher, op);
  ops.Swap(request->mutable_ops());
  if (!onnx.empty()) {
    AddPart(hasher, "onnx");
    AddPart(hasher, onnx);
    onnx.swap(*request->mutable_onnx_model());
  } else {
    AddPart(hasher, "graph");
    AddMessage(hasher, graph != nullptr ? *graph : v1::Graph::default_instance());
  }
  if (graph != nullptr) request->set_allocated_graph(graph.release());
  return hasher.Finish();
}

ResultCache::ResultCache(ResultCacheOptions options) : options_([&] {
  ResultCacheOptions o = options;
  o.max_bytes = std::max<int64_t>(0, o.max_bytes);
  if (o.max_tenant_bytes <= 0 || o.max_tenant_bytes > o.max_bytes) {
    o.max_tenant_bytes = o.max_tenant_bytes <= 0 ? o.max_bytes / 4 : o.max_bytes;
  }
  return o;
}()) {}

int64_t ResultCache::EntryBytes(const CachedResult& result, absl::string_view key) {
  // A fixed part for the entry's own bookkeeping (map node, list nodes, tenant name).
  constexpr int64_t kEntryOverhead = 256;
  int64_t bytes = kEntryOverhead + static_cast<int64_t>(result.response.ByteSizeLong()) +
                  static_cast<int64_t>(key.size());
  for (const std::string& d : result.blob_digests) bytes += static_cast<int64_t>(d.size()) + 32;
  return bytes;
}

ResultCache::TenantState& ResultCache::StateFor(absl::string_view tenant) {
  auto it = tenants_.find(tenant);
  if (it != tenants_.end()) return it->second;
  TenantState& state = tenants_[std::string(tenant)];
  if (tracked_ < kMaxTrackedTenants) {
    state.tracked = true;
    ++tracked_;
  }
  return state;
}

void ResultCache::ForgetIfIdle(absl::string_view tenant) {
  auto it = tenants_.find(tenant);
  if (it != tenants_.end() && !it->second.tracked && it->second.entries == 0) tenants_.erase(it);
}

std::shared_ptr<const CachedResult> ResultCache::Lookup(absl::string_view tenant,
                                                         absl::string_view key) {
  if (!enabled()) return nullptr;
  const std::string full_key = absl::StrCat(tenant, absl::string_view("\0", 1), key);
  absl::MutexLock lock(&mu_);
  TenantState& state = StateFor(tenant);
  auto it = entries_.find(full_key);
  if (it == entries_.end()) {
    ++Counters(state).misses;
    ForgetIfIdle(tenant);
    return nullptr;
  }
  ++Counters(state).hits;
  Entry& entry = it->second;
  global_lru_.splice(global_lru_.begin(), global_lru_, entry.global_it);
  state.lru.splice(state.lru.begin(), state.lru, entry.tenant_it);
  return entry.result;
}

void ResultCache::Erase(absl::node_hash_map<std::string, Entry>::iterator it, bool eviction) {
  Entry& entry = it->second;
  TenantState& state = tenants_.find(entry.tenant)->second;
  global_lru_.erase(entry.global_it);
  state.lru.erase(entry.tenant_it);
  state.bytes -= entry.bytes;
  --state.entries;
  bytes_ -= entry.bytes;
  if (eviction) ++Counters(state).evictions;
  const std::string tenant = entry.tenant;
  entries_.erase(it);
  ForgetIfIdle(tenant);
}

bool ResultCache::Insert(absl::string_view tenant, absl::string_view key,
                         std::shared_ptr<const CachedResult> result) {
  if (!enabled() || result == nullptr) return false;
  const int64_t bytes = EntryBytes(*result, key);
  if (bytes > options_.max_tenant_bytes) return false;
  std::string full_key = absl::StrCat(tenant, absl::string_view("\0", 1), key);
  absl::MutexLock lock(&mu_);
  if (auto old = entries_.find(full_key); old != entries_.end()) Erase(old, /*eviction=*/false);
  // The tenant's own least recently used entries make room within its share...
  for (;;) {
    TenantState& state = StateFor(tenant);
    if (state.bytes + bytes <= options_.max_tenant_bytes || state.lru.empty()) break;
    Erase(entries_.find(state.lru.back()->full_key), /*eviction=*/true);
  }
  // ...then anyone's, when all tenants together would be over the total.
  while (bytes_ + bytes > options_.max_bytes && !global_lru_.empty()) {
    Erase(entries_.find(global_lru_.back()->full_key), /*eviction=*/true);
  }
  TenantState& state = StateFor(tenant);
  auto [it, inserted] = entries_.try_emplace(full_key);
  Entry& entry = it->second;
  entry.full_key = std::move(full_key);
  entry.tenant = std::string(tenant);
  entry.result = std::move(result);
  entry.bytes = bytes;
  global_lru_.push_front(&entry);
  entry.global_it = global_lru_.begin();
  state.lru.push_front(&entry);
  entry.tenant_it = state.lru.begin();
  state.bytes += bytes;
  ++state.entries;
  bytes_ += bytes;
  return true;
}

std::vector<std::pair<std::string, ResultCacheStats>> ResultCache::Stats() const {
  std::vector<std::pair<std::string, ResultCacheStats>> out;
  absl::MutexLock lock(&mu_);
  ResultCacheStats other = other_;
  bool any_other = other_.hits + other_.misses + other_.evictions > 0;
  for (const auto& [tenant, state] : tenants_) {
    if (state.tracked) {
      ResultCacheStats s = state.stats;
      s.entries = state.entries;
      s.bytes = state.bytes;
      out.emplace_back(tenant, s);
    } else {
      other.entries += state.entries;
      other.bytes += state.bytes;
      any_other = true;
    }
  }
  if (any_other) {
    out.emplace_back("other", other);
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  return out;
}

int64_t ResultCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace graphopt
