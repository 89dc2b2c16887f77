#ifndef GRAPHOPT_BENCH_BENCH_UTIL_H_
#define GRAPHOPT_BENCH_BENCH_UTIL_H_

// Small helpers shared by the benchmark tools under bench/ (header-only, no dependencies, so
// that a tool can also be compiled outside Bazel: bench/onednn_version_ab.sh).

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace graphopt::bench {

// The median of `v` (the upper one of an even count); 0 for none.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// CPU time of the whole process so far, in seconds: time the VM or other processes take the
// core away does not count.
inline double ProcessCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Evicts the caches by touching (reading and writing) `mib` MiB of a buffer of its own (0:
// nothing), so that what a measurement reads next comes from beyond them.
class Sweeper {
 public:
  void Sweep(int mib) {
    const size_t bytes = static_cast<size_t>(mib) << 20;
    if (junk_.size() < bytes) junk_.resize(bytes, 1);
    for (size_t i = 0; i < bytes; i += 64) junk_[i]++;
  }

 private:
  std::vector<char> junk_;
};

// Minor page faults of this process so far (a fault maps a fresh page: the kernel zeroes it).
inline long MinorPageFaults() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace graphopt::bench

#endif  // GRAPHOPT_BENCH_BENCH_UTIL_H_
