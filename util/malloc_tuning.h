#ifndef GRAPHOPT_UTIL_MALLOC_TUNING_H_
#define GRAPHOPT_UTIL_MALLOC_TUNING_H_

namespace graphopt {

// Tunes glibc's malloc for processes that build and free graphs of millions of small objects
// (the optimizer server, the CLI, the optimizer benchmarks); called once from main, before any
// thread starts. Turns glibc's fastbins off (M_MXFAST 0): a freed small block then goes to the
// per-thread cache or is merged with its free neighbours at once, while they are still in
// cache. With fastbins, freeing a request's protos leaves hundreds of thousands of blocks
// unmerged until the next large free, which then walks all of them again (malloc_consolidate),
// one cache miss each: a cost of the whole request (bench/request_breakdown shows it), not of
// the pipeline. Returns false where the allocator refused (not glibc's).
bool TuneMallocForGraphs();

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_MALLOC_TUNING_H_
