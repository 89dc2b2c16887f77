#ifndef GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_
#define GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace graphopt {

// A std allocator for the graph's large dense arrays (its node and value slots): an array of at
// least kHugePageAllocatorMinBytes starts on a 2 MiB boundary and is advised to be backed by
// transparent huge pages. Passes sweep these arrays and jump around in them through value and
// node ids; with 4 KiB pages a graph of 10^5 nodes (about 30 MiB of slots) spans more pages than
// the TLB covers, and almost every jump costs a page walk besides the cache miss. Smaller arrays
// come from the ordinary heap. Advice only: where transparent huge pages are off, nothing
// changes but the alignment.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
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
    const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
    void* p = std::aligned_alloc(kHugePageBytes, rounded);
    if (p == nullptr) std::abort();  // as operator new does without exceptions
    madvise(p, rounded, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < kHugePageAllocatorMinBytes) {
      std::allocator<T>().deallocate(p, n);
    } else {
      std::free(p);
    }
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
  friend bool operator!=(const HugePageAllocator&, const HugePageAllocator&) { return false; }
};

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_
