#ifndef GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_
#define GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_

#include <cstddef>
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

// `bytes` (rounded up to whole huge pages) on a 2 MiB boundary, advised to be huge pages.
// Aborts when the memory cannot be had, as operator new does without exceptions.
void* AllocateHugePages(size_t bytes);
// Returns what AllocateHugePages(bytes) gave.
void FreeHugePages(void* p, size_t bytes);

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
    return static_cast<T*>(AllocateHugePages(bytes));
  }
  void deallocate(T* p, size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHugePageAllocatorMinBytes) {
      std::allocator<T>().deallocate(p, n);
    } else {
      FreeHugePages(p, bytes);
    }
  }

  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
  friend bool operator!=(const HugePageAllocator&, const HugePageAllocator&) { return false; }
};

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_HUGE_PAGE_ALLOCATOR_H_
