// This machine's memory hierarchy as the optimizer's graphs see it: for working sets of 1 MiB
// to 256 MiB, the latency of a dependent load (a pointer chase over a shuffled ring of 64-byte
// lines, 4 KiB pages) and the bandwidth of a sequential read. Used to read bench/scaling.sh's
// ratios: a 10^4-node graph (about 5 MiB of IR) and a 10^5-node one (about 50 MiB) sit on
// different steps of this curve.
//   memory_latency [MAX_MIB]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

struct alignas(64) Line {
  size_t next;
  char pad[64 - sizeof(size_t)];
};

}  // namespace

int main(int argc, char** argv) {
  const size_t max_mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  std::printf("%8s %16s %18s\n", "MiB", "random load ns", "sequential GB/s");
  for (size_t mib = 1; mib <= max_mib; mib *= 2) {
    const size_t n = mib * 1024 * 1024 / sizeof(Line);
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937_64(1));
    std::vector<Line> lines(n);
    for (size_t i = 0; i < n; ++i) lines[order[i]].next = order[(i + 1) % n];
    size_t p = 0;
    for (size_t i = 0; i < n; ++i) p = lines[p].next;  // warm up
    constexpr size_t kSteps = 10000000;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < kSteps; ++i) p = lines[p].next;
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() /
        kSteps;
    constexpr int kPasses = 5;
    size_t sum = 0;
    t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < kPasses; ++r) {
      for (size_t i = 0; i < n; ++i) sum += lines[i].next;
    }
    const double gbs = static_cast<double>(kPasses) * n * sizeof(Line) /
                       std::chrono::duration<double, std::nano>(
                           std::chrono::steady_clock::now() - t0).count();
    std::printf("%8zu %16.1f %18.1f\n", mib, ns, gbs);
    if ((p ^ sum) == 0x5eed) std::printf("\n");  // keeps both loops' results alive
  }
  return 0;
}
