// How kernels see threads: KernelContext::ParallelFor on the pool, and the OpenMP threads the
// executor gives a step's OpenMP code (oneDNN).
#include <omp.h>

#include <atomic>
#include <thread>
#include <vector>

#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/kernel.h"

namespace graphopt::runtime {
namespace {

TEST(ParallelForTest, EveryItemOnceOpenMpSerialInsideAndNestedSerial) {
  Node node;
  node.op_type = "P";
  ExecutorOptions options;
  KernelRegistry none;
  KernelInfo info(node, "node 'p' (P)", 0, {}, none, options, DeviceKind::kCpu);
  for (int threads : {1, 2, 3}) {
    KernelContext ctx(info, {}, {}, nullptr, threads);
    omp_set_num_threads(threads);
    for (int64_t n : {1, 7, 100, 10000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> max_omp{0};
      ctx.ParallelFor(n, 3, [&](int64_t b, int64_t e) {
        if (threads > 1 && n > 3) max_omp = std::max(max_omp.load(), omp_get_max_threads());
        // A nested ParallelFor runs on the calling thread.
        const std::thread::id self = std::this_thread::get_id();
        ctx.ParallelFor(e - b, 1, [&](int64_t b2, int64_t e2) {
          EXPECT_EQ(std::this_thread::get_id(), self);
          for (int64_t i = b + b2; i < b + e2; ++i) hits[i].fetch_add(1);
        });
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
      if (threads > 1 && n > 3) {
        EXPECT_EQ(max_omp.load(), 1) << "OpenMP inside a chunk";
      }
      EXPECT_EQ(omp_get_max_threads(), threads) << "restored after the call";
    }
  }
}

// Records omp_get_max_threads() as its kernel runs.
std::atomic<int> g_seen_omp_threads{0};
absl::Status OmpProbe(KernelContext& ctx) {
  g_seen_omp_threads = omp_get_max_threads();
  ctx.SetOutput(0, *ctx.input(0));
  return absl::OkStatus();
}

TEST(ExecutorThreadsTest, SmallStepsRunTheirOpenMpCodeOnOneThread) {
  KernelRegistry registry;
  ASSERT_TRUE(registry.Register("OmpProbe", &OmpProbe).ok());
  v1::Graph proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    nodes { op_type: "OmpProbe" inputs: "x" outputs: "y" }
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    outputs { name: "y" }
  )pb", &proto));
  absl::StatusOr<Graph> g = GraphFromProto(proto);
  ASSERT_TRUE(g.ok()) << g.status();
  ExecutorOptions options;
  options.num_threads = 2;
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(*std::move(g), registry, options);
  ASSERT_TRUE(ex.ok()) << ex.status();
  for (int64_t n : {int64_t{16}, ExecutorOptions::kMinOpenMpStepElements}) {
    Tensor x = Tensor::Allocate(v1::DT_FLOAT32, {n}).value();
    absl::StatusOr<RunResult> r = (*ex)->Run({{"x", x}}, {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(g_seen_omp_threads.load(), n < ExecutorOptions::kMinOpenMpStepElements ? 1 : 2)
        << n << " elements";
  }
}

}  // namespace
}  // namespace graphopt::runtime
