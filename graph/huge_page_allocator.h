#ifndef GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_
#define GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_

#include <cstddef>
#include <cstdlib>
#include <memory>

#include "util/huge_pages.h"

namespace graphopt {

// A std allocator for the graph's large dense arrays (its node and value slots): an array of at
// least kHugePageAllocatorMinBytes starts on a 2 MiB boundary and is advised to be backed by
// transparent huge pages. Passes sweep these arrays and jump around in them through value and
// node ids; with 4 KiB pages a graph of 10^5 nodes (about 30 MiB of slots) spans more pages than
// the TLB covers, and almost every jump costs a page walk besides the cache miss. Smaller arrays
// come from the ordinary heap. Advice only: where transparent huge pages are off, nothing
// changes but the alignment.
inline constexpr size_t kHugePageAllocatorMinBytes = size_t{4} << 20;

template <typename T>
class HugePageAllocator {
 public:
  using value_type = T;

  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}  // NOLINT: rebinding, as allocators do

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageAllocatorMinBytes) return std::allocator<T>().allocate(n);
    // Whole huge pages, the last one too. Aborts when the memory cannot be had, as operator new
    // does without exceptions.
    void* p = MapHugePages(bytes);
    if (p == nullptr) std::abort();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageAllocatorMinBytes) {
      std::allocator<T>().deallocate(p, n);
    } else {
      UnmapHugePages(p, bytes);
    }
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
  friend bool operator!=(const HugePageAllocator&, const HugePageAllocator&) { return false; }
};

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_
