#include "util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace graphopt {
namespace {

size_t RoundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

// Mappings given back for reuse, oldest first, and their total length.
struct Kept {
  absl::Mutex mu;
  std::vector<std::pair<char*, size_t>> mappings ABSL_GUARDED_BY(mu);
  size_t bytes ABSL_GUARDED_BY(mu) = 0;
};

Kept& KeptMappings() {
  static Kept* const kept = new Kept();  // never destroyed: in use until the process ends
  return *kept;
}

}  // namespace

void* MapHugePages(size_t bytes) {
  const size_t length = RoundUp(bytes, kHugePageBytes);
  if (length < bytes || length + kHugePageBytes < length) return nullptr;  // overflow
  // Mapped with one huge page of slack, then trimmed to start on a huge-page boundary.
  void* mapped = mmap(nullptr, length + kHugePageBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) return nullptr;
  char* const start = static_cast<char*>(mapped);
  char* const aligned =
      reinterpret_cast<char*>(RoundUp(reinterpret_cast<uintptr_t>(start), kHugePageBytes));
  char* const end = start + length + kHugePageBytes;
  if (aligned > start) munmap(start, aligned - start);
  if (end > aligned + length) munmap(aligned + length, end - (aligned + length));
  madvise(aligned, length, MADV_HUGEPAGE);
  return aligned;
}

void UnmapHugePages(void* p, size_t bytes) {
  if (p != nullptr) munmap(p, RoundUp(bytes, kHugePageBytes));
}

void* TakeHugePages(size_t bytes) {
  const size_t length = RoundUp(bytes, kHugePageBytes);
  if (length < bytes) return nullptr;  // overflow
  char* found = nullptr;
  size_t found_length = 0;
  {
    Kept& kept = KeptMappings();
    absl::MutexLock lock(&kept.mu);
    int best = -1;
    for (int i = 0; i < static_cast<int>(kept.mappings.size()); ++i) {
      const size_t l = kept.mappings[i].second;
      if (l >= length && (best < 0 || l < kept.mappings[best].second)) best = i;
    }
    if (best >= 0) {
      std::tie(found, found_length) = kept.mappings[best];
      kept.mappings.erase(kept.mappings.begin() + best);
      kept.bytes -= found_length;
    }
  }
  if (found == nullptr) return MapHugePages(bytes);
  if (found_length > length) munmap(found + length, found_length - length);
  return found;
}

void GiveBackHugePages(void* p, size_t bytes) {
  if (p == nullptr) return;
  const size_t length = RoundUp(bytes, kHugePageBytes);
  if (length > kMaxKeptHugePageBytes) {
    munmap(p, length);
    return;
  }
  madvise(p, length, MADV_FREE);
  std::vector<std::pair<char*, size_t>> dropped;
  {
    Kept& kept = KeptMappings();
    absl::MutexLock lock(&kept.mu);
    kept.mappings.emplace_back(static_cast<char*>(p), length);
    kept.bytes += length;
    size_t drop = 0;
    while (kept.bytes > kMaxKeptHugePageBytes) {
      kept.bytes -= kept.mappings[drop].second;
      dropped.push_back(kept.mappings[drop++]);
    }
    kept.mappings.erase(kept.mappings.begin(), kept.mappings.begin() + drop);
  }
  for (const auto& [q, l] : dropped) munmap(q, l);
}

size_t KeptHugePageBytes() {
  Kept& kept = KeptMappings();
  absl::MutexLock lock(&kept.mu);
  return kept.bytes;
}

void ReleaseKeptHugePages() {
  std::vector<std::pair<char*, size_t>> dropped;
  {
    Kept& kept = KeptMappings();
    absl::MutexLock lock(&kept.mu);
    dropped.swap(kept.mappings);
    kept.bytes = 0;
  }
  for (const auto& [q, l] : dropped) munmap(q, l);
}

}  // namespace graphopt
