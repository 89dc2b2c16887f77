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

// Like MapHugePages, for arrays that come and go with each request (the graph's node and value
// slots and its name table), but not necessarily zeroed: mappings given back with
// GiveBackHugePages are kept, up to kMaxKeptHugePageBytes (the oldest unmapped first), and
// handed out again, the smallest one large enough, its surplus unmapped. A kept mapping is
// advised MADV_FREE, so the kernel may take its pages back under memory pressure (a later
// write then faults in zeroed pages, as a fresh mapping would); until then, reusing it costs
// no page faults and no zeroing. A fresh mapping pays both on every page: at 10^6 nodes about
// 400 MiB of slots per request, a third of the time converting the request to the IR.
// Thread-safe.
inline constexpr size_t kMaxKeptHugePageBytes = size_t{1} << 30;
void* TakeHugePages(size_t bytes);
// Gives back what TakeHugePages(bytes) gave.
void GiveBackHugePages(void* p, size_t bytes);
// Bytes kept for reuse now.
size_t KeptHugePageBytes();
// Unmaps every kept mapping.
void ReleaseKeptHugePages();

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_HUGE_PAGES_H_
