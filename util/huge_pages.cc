#include "util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace graphopt {
namespace {

size_t RoundUp(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

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

}  // namespace graphopt
