#ifndef GRAPHOPT_UTIL_HUGE_PAGES_H_
#define GRAPHOPT_UTIL_HUGE_PAGES_H_

#include <cstddef>

namespace graphopt {

// x86-64's transparent huge page.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes`, rounded up to whole huge pages, of zeroed memory on a huge-page boundary, straight
// from the kernel (not from malloc, whose recycled memory was faulted in with small pages, so
// that advice given afterwards changes nothing) and advised to be backed by transparent huge
// pages, the last one too. For arrays swept and jumped around in by id (the graph's slots).
// Advice only: where transparent huge pages are off, only the alignment differs from malloc's.
// nullptr when the memory cannot be had.
void* MapHugePages(size_t bytes);
// Returns what MapHugePages(bytes) gave.
void UnmapHugePages(void* p, size_t bytes);

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_HUGE_PAGES_H_
