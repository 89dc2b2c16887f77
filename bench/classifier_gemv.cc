// A classifier's Gemm at batch 1 (one row of A times a transposed B, B = [N, K] as torch exports
// Linear), alone: oneDNN's matmul with B packed once into its own layout (what PackedMatMul
// does for wider products), oneDNN's sgemm, and the row dot products the runtime uses for it
// (DotRowsF32 shared out among the threads, as GemvRows in runtime/kernels/nn_matmul.cc does),
// with the weights hot and with 8 and 48 MiB swept between runs (a network leaves them beyond
// the caches). Shapes: the corpus CNNs' classifiers. The experiment behind docs/performance.md's
// classifier figures of 2026-12-06.
//
//   classifier_gemv [--threads N] [--reps R]
//
// Prints the median of R runs (microseconds) per shape, sweep and contender, and each
// contender's largest difference from a double-precision reference.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "bench/bench_util.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/kernels/fast_math.h"

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct Shape {
  const char* model;
  int k, n;
};
const Shape kShapes[] = {{"resnet18", 512, 1000}, {"mobilenet_v2", 1280, 1000},
                         {"resnet50", 2048, 1000}};

double MedianMicros(int reps, int sweep_mib, graphopt::bench::Sweeper& sweeper,
                    const std::function<void()>& run) {
  run();  // first use: primitive setup, page faults
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    sweeper.Sweep(sweep_mib);
    const auto start = std::chrono::steady_clock::now();
    run();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count());
  }
  return graphopt::bench::Median(std::move(t));
}

double MaxDiff(const std::vector<float>& y, const std::vector<double>& want) {
  double d = 0;
  for (size_t i = 0; i < y.size(); ++i) d = std::max(d, std::fabs(y[i] - want[i]));
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, reps = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--threads") == 0) {
      threads = std::atoi(argv[i + 1]);
    } else if (std::strcmp(argv[i], "--reps") == 0) {
      reps = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "unknown flag %s\nusage: %s [--threads N] [--reps R]\n", argv[i],
                   argv[0]);
      return 2;
    }
  }
  if (threads < 1 || reps < 1) {
    std::fprintf(stderr, "--threads and --reps must be positive\n");
    return 2;
  }
  omp_set_num_threads(threads);
  graphopt::bench::Sweeper sweeper;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::printf("%d thread(s), medians of %d runs, microseconds (largest difference from a double "
              "reference in brackets)\n\n",
              threads, reps);
  std::printf("%-13s %5s %5s %6s  %16s %16s %16s\n", "model", "K", "N", "swept", "oneDNN packed",
              "sgemm", "row dots");
  for (const Shape& s : kShapes) {
    const int k = s.k, n = s.n;
    std::vector<float> x(k), w(static_cast<size_t>(n) * k), y(n);
    for (int i = 0; i < k; ++i) x[i] = std::sin(0.37f * static_cast<float>(i));
    for (size_t i = 0; i < w.size(); ++i) w[i] = std::cos(0.11f * static_cast<float>(i)) * 0.05f;
    std::vector<double> want(n);
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int p = 0; p < k; ++p) acc += double{x[p]} * w[static_cast<size_t>(j) * k + p];
      want[j] = acc;
    }
    // oneDNN's matmul: A [1, K], B [K, N] given as the transpose of w (format ba), packed.
    dnnl::memory::desc a_md({1, k}, dt::f32, tag::ab), c_md({1, n}, dt::f32, tag::ab);
    dnnl::memory::desc b_plain({k, n}, dt::f32, tag::ba), b_any({k, n}, dt::f32, tag::any);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, c_md), engine);
    dnnl::memory b_user(b_plain, engine, w.data()), b_packed(pd.weights_desc(), engine);
    dnnl::reorder(b_user, b_packed).execute(stream, b_user, b_packed);
    stream.wait();
    dnnl::memory a_mem(a_md, engine, x.data()), c_mem(c_md, engine, y.data());
    dnnl::matmul matmul(pd);
    auto onednn = [&] {
      matmul.execute(stream, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_packed},
                              {DNNL_ARG_DST, c_mem}});
      stream.wait();
    };
    auto sgemm = [&] {
      dnnl_sgemm('N', 'T', 1, n, k, 1.0f, x.data(), k, w.data(), k, 0.0f, y.data(), n);
    };
    auto rows = [&] {
#pragma omp parallel num_threads(threads)
      {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        const int begin = n * t / nt, end = n * (t + 1) / nt;
        graphopt::runtime::DotRowsF32(k, end - begin, x.data(),
                                      w.data() + static_cast<size_t>(begin) * k, k,
                                      y.data() + begin);
      }
    };
    for (int sweep : {0, 8, 48}) {
      double us[3], diff[3];
      const std::function<void()> runs[3] = {onednn, sgemm, rows};
      for (int c = 0; c < 3; ++c) {
        std::fill(y.begin(), y.end(), 0.0f);
        us[c] = MedianMicros(reps, sweep, sweeper, runs[c]);
        diff[c] = MaxDiff(y, want);
      }
      std::printf("%-13s %5d %5d %3d MiB  %7.1f [%6.0e] %7.1f [%6.0e] %7.1f [%6.0e]\n", s.model,
                  k, n, sweep, us[0], diff[0], us[1], diff[1], us[2], diff[2]);
    }
  }
  return 0;
}
