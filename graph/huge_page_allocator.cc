#include "graph/huge_page_allocator.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>

namespace graphopt {
namespace {

size_t RoundUp(size_t bytes) {
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void* AllocateHugePages(size_t bytes) {
  // Straight from the kernel, not through malloc: memory malloc hands out again was faulted in
  // with small pages, and advice given afterwards changes nothing. Mapped with one huge page of
  // slack, then trimmed to a 2 MiB boundary.
  const size_t rounded = RoundUp(bytes);
  void* mapped = mmap(nullptr, rounded + kHugePageBytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) std::abort();
  char* const start = static_cast<char*>(mapped);
  char* const aligned = reinterpret_cast<char*>(RoundUp(reinterpret_cast<uintptr_t>(start)));
  char* const end = start + rounded + kHugePageBytes;
  if (aligned > start) munmap(start, aligned - start);
  if (end > aligned + rounded) munmap(aligned + rounded, end - (aligned + rounded));
  madvise(aligned, rounded, MADV_HUGEPAGE);
  return aligned;
}

void FreeHugePages(void* p, size_t bytes) { munmap(p, RoundUp(bytes)); }

}  // namespace graphopt
