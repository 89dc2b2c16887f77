// The executor's guards: the per-run memory budget, cancellation and deadlines (RunOptions),
// and C++ exceptions turned into statuses.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt::runtime {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

const KernelRegistry& Registry() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    EXPECT_TRUE(RegisterCpuKernels(*r).ok());
    return r;
  }();
  return *registry;
}

std::unique_ptr<Executor> Build(const std::string& text, int threads = 1,
                                const KernelRegistry& registry = Registry()) {
  v1::Graph proto;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &proto)) << text;
  absl::StatusOr<Graph> g = GraphFromProto(proto);
  EXPECT_TRUE(g.ok()) << g.status();
  ExecutorOptions options;
  options.num_threads = threads;
  absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(*std::move(g), registry, options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  return ex.ok() ? *std::move(ex) : nullptr;
}

// An int64 initializer's raw_data in text format.
std::string Int64Bytes(int64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) {
    absl::StrAppend(&out, "\\x", absl::Hex(static_cast<uint8_t>(v >> (8 * i)), absl::kZeroPad2));
  }
  return out;
}

int64_t PeakRssBytes() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return int64_t{usage.ru_maxrss} * 1024;
}

// A 40-character string tiled `reps` times (the graph itself is a few hundred bytes).
std::string StringTile(int64_t reps) {
  return absl::StrCat(R"pb(
    nodes { name: "big" op_type: "Tile" inputs: "s" inputs: "reps" outputs: "y" }
    initializers { name: "s" dtype: DT_STRING dims: 1
                   string_data: "0123456789012345678901234567890123456789" }
    initializers { name: "reps" dtype: DT_INT64 dims: 1 raw_data: ")pb",
                      Int64Bytes(reps), R"pb(" }
    outputs { name: "y" })pb");
}

TEST(MemoryBudgetRunTest, StringTileOverTheBudgetFailsBeforeAllocatingNamingTheNode) {
  // 2^26 copies: about 4.9 GB of strings, refused under 256 MiB with the RSS near where it was.
  std::unique_ptr<Executor> ex = Build(StringTile(int64_t{1} << 26));
  ASSERT_NE(ex, nullptr);
  auto budget = std::make_shared<MemoryBudget>(int64_t{256} << 20);
  RunOptions run;
  run.memory = budget;
  const int64_t rss_before = PeakRssBytes();
  absl::StatusOr<RunResult> r = ex->Run({}, run);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr("node 'big' (Tile)"), HasSubstr("output 0"),
                    HasSubstr(absl::StrCat("budget of ", int64_t{256} << 20, " bytes"))));
  EXPECT_LT(PeakRssBytes() - rss_before, int64_t{64} << 20);
  EXPECT_EQ(budget->in_use(), 0);
}

TEST(MemoryBudgetRunTest, StringOutputsAreSettledAndStayChargedWhileTheyLive) {
  std::unique_ptr<Executor> ex = Build(StringTile(1000));
  ASSERT_NE(ex, nullptr);
  auto budget = std::make_shared<MemoryBudget>(1 << 20);
  RunOptions run;
  run.memory = budget;
  absl::StatusOr<RunResult> r = ex->Run({}, run);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->outputs[0].num_elements(), 1000);
  // The objects and each copy's 41 heap bytes: settled to what the strings hold.
  const int64_t expected = 1000 * (static_cast<int64_t>(sizeof(std::string)) + 41) +
                           kBufferOverheadBytes;
  EXPECT_EQ(budget->in_use(), expected);
  r->outputs.clear();
  EXPECT_EQ(budget->in_use(), 0);
  EXPECT_EQ(budget->peak(), expected);
}

// A Loop over `body` (which carries x) running `trips` times on x = float[n].
std::string LoopGraph(int64_t trips, int64_t n, const std::string& body_nodes) {
  return absl::StrCat(R"pb(
    nodes { name: "loop" op_type: "Loop" inputs: "m" inputs: "" inputs: "x0" outputs: "x"
      attributes { name: "body" g {
        inputs { name: "i" } inputs { name: "c" } inputs { name: "x_in" }
        nodes { op_type: "Identity" inputs: "c" outputs: "c_out" }
        )pb",
                      body_nodes, R"pb(
        outputs { name: "c_out" } outputs { name: "x_out" } } } }
    inputs { name: "x0" type { dtype: DT_FLOAT32 } }
    initializers { name: "m" dtype: DT_INT64 raw_data: ")pb",
                      Int64Bytes(trips), R"pb(" }
    outputs { name: "x" })pb");
}

Tensor Filled(int64_t n, float v) {
  Tensor t = Tensor::Allocate(v1::DT_FLOAT32, {n}).value();
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = v;
  return t;
}

TEST(MemoryBudgetRunTest, AntialiasedResizeChargesItsTapTables) {
  // 2^20 floats (4 MiB, the caller's: not charged) antialiased down to one value: a filter of
  // 2^21 taps, 32 MiB of index and weight tables for a 4-byte output.
  const std::string graph = R"pb(
    opset_imports { version: 18 }
    nodes { name: "shrink" op_type: "Resize" inputs: "x" inputs: "" inputs: "" inputs: "sizes"
            outputs: "y" attributes { name: "mode" s: "linear" }
            attributes { name: "antialias" i: 1 } }
    initializers { name: "sizes" dtype: DT_INT64 dims: 1 raw_data: "\x01\0\0\0\0\0\0\0" }
    inputs { name: "x" } outputs { name: "y" })pb";
  std::unique_ptr<Executor> ex = Build(graph);
  ASSERT_NE(ex, nullptr);
  const Tensor x = Filled(int64_t{1} << 20, 2);
  RunOptions run;
  run.memory = std::make_shared<MemoryBudget>(16 << 20);
  absl::StatusOr<RunResult> r = ex->Run({{"x", x}}, run);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("node 'shrink'"), HasSubstr("tap tables")));
  run.memory = std::make_shared<MemoryBudget>(64 << 20);
  r = ex->Run({{"x", x}}, run);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FLOAT_EQ(r->outputs[0].data<float>()[0], 2);
  EXPECT_GT(run.memory->peak(), 32 << 20);
}

TEST(MemoryBudgetRunTest, DoublingLoopStopsAtTheBudgetNamingTheBodyNode) {
  std::unique_ptr<Executor> ex = Build(LoopGraph(
      100, 1024,
      R"pb(nodes { name: "double" op_type: "Concat" inputs: "x_in" inputs: "x_in"
                   outputs: "x_out" attributes { name: "axis" i: 0 } })pb"));
  ASSERT_NE(ex, nullptr);
  auto budget = std::make_shared<MemoryBudget>(int64_t{64} << 20);
  RunOptions run;
  run.memory = budget;
  absl::StatusOr<RunResult> r = ex->Run({{"x0", Filled(1024, 1)}}, run);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("node 'loop' (Loop)"),
                                          HasSubstr("node 'double' (Concat)")));
  EXPECT_LE(budget->peak(), budget->limit());
  EXPECT_EQ(budget->in_use(), 0);
}

TEST(MemoryBudgetRunTest, LoopThatFreesEachIterationIsLiveAccountingNotCumulative) {
  // 300 iterations of 1 MiB each under an 8 MiB budget.
  constexpr int64_t kN = 256 * 1024;
  std::unique_ptr<Executor> ex = Build(LoopGraph(
      300, kN, R"pb(nodes { op_type: "Add" inputs: "x_in" inputs: "x_in" outputs: "x_out" })pb"));
  ASSERT_NE(ex, nullptr);
  auto budget = std::make_shared<MemoryBudget>(int64_t{8} << 20);
  RunOptions run;
  run.memory = budget;
  absl::StatusOr<RunResult> r = ex->Run({{"x0", Filled(kN, 1e-30f)}}, run);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(budget->peak(), int64_t{4} << 20);
  // Only the output is alive after the run.
  EXPECT_EQ(budget->in_use(), kN * 4 + kBufferOverheadBytes);
  r->outputs.clear();
  EXPECT_EQ(budget->in_use(), 0);
}

TEST(MemoryBudgetRunTest, LoopCollectingEmptyScanOutputsIsBoundedToo) {
  // Each iteration scans out an empty tensor: no elements, but the collected tensors grow.
  std::unique_ptr<Executor> ex = Build(R"pb(
    nodes { name: "loop" op_type: "Loop" inputs: "m" inputs: "" outputs: "scanned"
      attributes { name: "body" g {
        inputs { name: "i" } inputs { name: "c" }
        nodes { op_type: "Identity" inputs: "c" outputs: "c_out" }
        nodes { op_type: "Identity" inputs: "empty" outputs: "e" }
        outputs { name: "c_out" } outputs { name: "e" } } } }
    initializers { name: "m" dtype: DT_INT64 raw_data: "\0\0\0\0\0\0\0\x40" }
    initializers { name: "empty" dtype: DT_FLOAT32 dims: 0 }
    outputs { name: "scanned" })pb");
  ASSERT_NE(ex, nullptr);
  auto budget = std::make_shared<MemoryBudget>(int64_t{1} << 20);
  RunOptions run;
  run.memory = budget;
  absl::StatusOr<RunResult> r = ex->Run({}, run);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(),
              AllOf(HasSubstr("node 'loop' (Loop) iteration"), HasSubstr("scan outputs")));
  EXPECT_EQ(budget->in_use(), 0);
}

// Runs `ex` on a thread, cancels `token` after `after`, and returns how long Run took to
// return after the cancel, with its status.
std::pair<double, absl::Status> CancelAfter(const Executor& ex,
                                            const std::vector<std::pair<std::string, Tensor>>& in,
                                            std::chrono::milliseconds after) {
  StopToken token;
  RunOptions run;
  run.stop = &token;
  absl::Status status;
  std::atomic<bool> done{false};
  Clock::time_point returned;
  std::thread worker([&] {
    absl::StatusOr<RunResult> r = ex.Run(in, run);
    returned = Clock::now();
    status = r.status();
    done = true;
  });
  std::this_thread::sleep_for(after);
  const Clock::time_point cancelled = Clock::now();
  token.Cancel("the client cancelled the call");
  worker.join();
  EXPECT_FALSE(done && returned < cancelled) << "the run ended before it was cancelled";
  return {std::chrono::duration<double, std::milli>(returned - cancelled).count(), status};
}

TEST(CancellationTest, LoopOfTwoToTheSixtyTwoTripsStopsWithin100Ms) {
  for (int threads : {1, 2}) {
    SCOPED_TRACE(absl::StrCat(threads, " threads"));
    std::unique_ptr<Executor> ex = Build(
        LoopGraph(int64_t{1} << 62, 1,
                  R"pb(nodes { op_type: "Identity" inputs: "x_in" outputs: "x_out" })pb"),
        threads);
    ASSERT_NE(ex, nullptr);
    // The best of three tries: the machine running the test may be busy (a run that did not
    // stop at all would still fail every try).
    double best = 1e9;
    for (int attempt = 0; attempt < 3 && best >= 100; ++attempt) {
      auto [ms, status] =
          CancelAfter(*ex, {{"x0", Filled(1, 1)}}, std::chrono::milliseconds(200));
      EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
      EXPECT_THAT(status.message(), AllOf(HasSubstr("the client cancelled the call"),
                                          HasSubstr("node 'loop' (Loop)")));
      std::printf("Loop of 2^62 trips, %d thread(s): stopped %.2f ms after the cancel\n",
                  threads, ms);
      best = std::min(best, ms);
    }
    EXPECT_LT(best, 100);
  }
}

TEST(CancellationTest, HugeElementwiseChainStopsWithin100Ms) {
  // 16M floats (64 MiB) through 60 Adds: seconds of work, each step tens of milliseconds.
  constexpr int64_t kN = int64_t{16} << 20;
  std::string text = R"pb(inputs { name: "v0" type { dtype: DT_FLOAT32 } })pb";
  for (int i = 0; i < 60; ++i) {
    absl::StrAppend(&text, " nodes { name: \"add", i, "\" op_type: \"Add\" inputs: \"v", i,
                    "\" inputs: \"v", i, "\" outputs: \"v", i + 1, "\" }");
  }
  absl::StrAppend(&text, " outputs { name: \"v60\" }");
  const Tensor x = Filled(kN, 1e-30f);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(absl::StrCat(threads, " threads"));
    std::unique_ptr<Executor> ex = Build(text, threads);
    ASSERT_NE(ex, nullptr);
    double best = 1e9;
    for (int attempt = 0; attempt < 3 && best >= 100; ++attempt) {
      auto [ms, status] = CancelAfter(*ex, {{"v0", x}}, std::chrono::milliseconds(250));
      EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
      EXPECT_THAT(status.message(), HasSubstr("(Add)"));
      std::printf("60 Adds of 16M floats, %d thread(s): stopped %.2f ms after the cancel\n",
                  threads, ms);
      best = std::min(best, ms);
    }
    EXPECT_LT(best, 100);
  }
}

// Kernels whose work is large for their inputs (a long output from a scalar, a transform or
// contraction quadratic in its inputs) stop within 100 ms of a cancel too.
TEST(CancellationTest, LongKernelsOnSmallInputsStopWithin100Ms) {
  struct Case {
    const char* name;
    std::string graph;
    std::vector<std::pair<std::string, Tensor>> inputs;
  };
  const int64_t kLong = int64_t{1} << 25;
  std::vector<Case> cases;
  cases.push_back({"Tile of one element", absl::StrCat(R"pb(
    nodes { name: "k" op_type: "Tile" inputs: "x" inputs: "reps" outputs: "y" }
    inputs { name: "x" } outputs { name: "y" }
    initializers { name: "reps" dtype: DT_INT64 dims: 1 raw_data: ")pb", Int64Bytes(kLong),
                                                 R"pb(" })pb"),
                   {{"x", Filled(1, 2)}}});
  cases.push_back({"Expand of a scalar", absl::StrCat(R"pb(
    nodes { name: "k" op_type: "Expand" inputs: "x" inputs: "shape" outputs: "y" }
    inputs { name: "x" } outputs { name: "y" }
    initializers { name: "shape" dtype: DT_INT64 dims: 1 raw_data: ")pb", Int64Bytes(kLong),
                                                      R"pb(" })pb"),
                   {{"x", Filled(1, 2)}}});
  cases.push_back({"Range", absl::StrCat(R"pb(
    nodes { name: "k" op_type: "Range" inputs: "a" inputs: "b" inputs: "d" outputs: "y" }
    outputs { name: "y" }
    initializers { name: "a" dtype: DT_INT64 raw_data: ")pb", Int64Bytes(0), R"pb(" }
    initializers { name: "b" dtype: DT_INT64 raw_data: ")pb", Int64Bytes(kLong), R"pb(" }
    initializers { name: "d" dtype: DT_INT64 raw_data: ")pb", Int64Bytes(1), R"pb(" })pb"),
                   {}});
  cases.push_back({"DFT of 65536 points", R"pb(
    nodes { name: "k" op_type: "DFT" inputs: "x" outputs: "y" attributes { name: "axis" i: 1 } }
    inputs { name: "x" } outputs { name: "y" })pb",
                   {{"x", Filled(65536, 1).Reshaped({1, 65536, 1}).value()}}});
  // 2^36 multiply-adds: seconds on one core; one oneDNN sgemm call cannot be interrupted, so
  // Sgemm runs it in blocks with the token polled between them.
  const Tensor square = Filled(4096 * 4096, 1).Reshaped({4096, 4096}).value();
  cases.push_back({"MatMul of 4096 x 4096 matrices", R"pb(
    nodes { name: "k" op_type: "MatMul" inputs: "a" inputs: "b" outputs: "y" }
    inputs { name: "a" } inputs { name: "b" } outputs { name: "y" })pb",
                   {{"a", square}, {"b", square}}});
  cases.push_back({"Einsum i,j-> of 10^5 each", R"pb(
    nodes { name: "k" op_type: "Einsum" inputs: "a" inputs: "b" outputs: "y"
            attributes { name: "equation" s: "i,j->" } }
    inputs { name: "a" } inputs { name: "b" } outputs { name: "y" })pb",
                   {{"a", Filled(100000, 1)}, {"b", Filled(100000, 1)}}});
  for (const Case& c : cases) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(absl::StrCat(c.name, ", ", threads, " threads"));
      std::unique_ptr<Executor> ex = Build(c.graph, threads);
      ASSERT_NE(ex, nullptr);
      double best = 1e9;
      for (int attempt = 0; attempt < 3 && best >= 100; ++attempt) {
        auto [ms, status] = CancelAfter(*ex, c.inputs, std::chrono::milliseconds(20));
        EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
        EXPECT_THAT(status.message(), HasSubstr("node 'k'"));
        best = std::min(best, ms);
      }
      std::printf("%s, %d thread(s): stopped %.2f ms after the cancel\n", c.name, threads, best);
      EXPECT_LT(best, 100);
    }
  }
}

// Values in [-1, 1) that differ from element to element (a block at the wrong offset would show).
Tensor Varied(Shape shape, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  Tensor t = Tensor::Allocate(v1::DT_FLOAT32, shape).value();
  uint32_t x = seed;
  for (int64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.data<float>()[i] = static_cast<float>(x >> 8) / static_cast<float>(1 << 23) - 1.0f;
  }
  return t;
}

TEST(CancellationTest, BlockedMatMulGivesTheProductOfOneCall) {
  // With a stop token, Sgemm splits products over 2^28 multiply-adds: by rows (600 x 800 by
  // 800 x 700), and by the inner dimension (256 x 8192 by 8192 x 256; its partial sums add up
  // in another order, hence the tolerance); plain MatMul and Gemm with transposes and beta.
  struct Case {
    const char* name;
    std::string graph;
    std::vector<std::pair<std::string, Tensor>> inputs;
  };
  const std::string matmul = R"pb(
    nodes { name: "k" op_type: "MatMul" inputs: "a" inputs: "b" outputs: "y" }
    inputs { name: "a" } inputs { name: "b" } outputs { name: "y" })pb";
  const std::string gemm = R"pb(
    nodes { name: "k" op_type: "Gemm" inputs: "a" inputs: "b" inputs: "c" outputs: "y"
            attributes { name: "transA" i: 1 } attributes { name: "transB" i: 1 }
            attributes { name: "alpha" f: 0.5 } attributes { name: "beta" f: 2 } }
    inputs { name: "a" } inputs { name: "b" } inputs { name: "c" } outputs { name: "y" })pb";
  const std::vector<Case> cases = {
      {"rows", matmul, {{"a", Varied({600, 800}, 1)}, {"b", Varied({800, 700}, 2)}}},
      {"inner", matmul, {{"a", Varied({256, 8192}, 3)}, {"b", Varied({8192, 256}, 4)}}},
      {"gemm", gemm,
       {{"a", Varied({8192, 300}, 5)}, {"b", Varied({280, 8192}, 6)}, {"c", Varied({300, 280}, 7)}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Executor> ex = Build(c.graph);
    ASSERT_NE(ex, nullptr);
    absl::StatusOr<RunResult> whole = ex->Run(c.inputs);
    ASSERT_TRUE(whole.ok()) << whole.status();
    StopToken token;
    RunOptions run;
    run.stop = &token;
    absl::StatusOr<RunResult> blocked = ex->Run(c.inputs, run);
    ASSERT_TRUE(blocked.ok()) << blocked.status();
    const Tensor& x = whole->outputs[0];
    const Tensor& y = blocked->outputs[0];
    ASSERT_EQ(x.num_elements(), y.num_elements());
    int64_t off = 0;
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      off += std::abs(x.data<float>()[i] - y.data<float>()[i]) > 1e-3f;
    }
    EXPECT_EQ(off, 0) << "elements differ between one sgemm call and blocks";
  }
}

TEST(CancellationTest, ParallelForSkipsTheRestOfItsPiecesOnceTheTokenFires) {
  Node node;
  node.op_type = "Slow";
  ExecutorOptions options;
  KernelRegistry none;
  KernelInfo info(node, "node 'slow' (Slow)", 0, {}, none, options, DeviceKind::kCpu);
  for (int threads : {1, 2}) {
    SCOPED_TRACE(absl::StrCat(threads, " threads"));
    KernelContext ctx(info, {}, {}, nullptr, threads);
    StopToken token;
    ctx.SetRunGuards(&token, nullptr);
    // 100,000 items of ~10 us, grain 10: 1 s of work on one thread, pieces of ~1.6 ms.
    std::atomic<int64_t> done{0};
    std::thread canceller([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      token.Cancel("stop");
    });
    const Clock::time_point start = Clock::now();
    ctx.ParallelFor(100000, 10, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        const Clock::time_point until = Clock::now() + std::chrono::microseconds(10);
        while (Clock::now() < until) {
        }
        done.fetch_add(1, std::memory_order_relaxed);
      }
    });
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    canceller.join();
    EXPECT_TRUE(ctx.ShouldStop());
    EXPECT_LT(done.load(), 100000);
    EXPECT_LT(ms, 150);
  }
}

TEST(CancellationTest, DeadlineStopsTheLoopWithDeadlineExceeded) {
  std::unique_ptr<Executor> ex = Build(LoopGraph(
      int64_t{1} << 62, 1, R"pb(nodes { op_type: "Identity" inputs: "x_in" outputs: "x_out" })pb"));
  ASSERT_NE(ex, nullptr);
  StopToken token(absl::Now() + absl::Milliseconds(100));
  RunOptions run;
  run.stop = &token;
  const Clock::time_point start = Clock::now();
  absl::StatusOr<RunResult> r = ex->Run({{"x0", Filled(1, 1)}}, run);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("node 'loop' (Loop)"));
  EXPECT_LT(ms, 200);
}

TEST(CancellationTest, CancelledTokenStopsBeforeTheFirstStep) {
  std::unique_ptr<Executor> ex =
      Build(R"pb(nodes { name: "first" op_type: "Identity" inputs: "x" outputs: "y" }
                 inputs { name: "x" } outputs { name: "y" })pb");
  ASSERT_NE(ex, nullptr);
  StopToken token;
  token.Cancel("the server is shutting down");
  RunOptions run;
  run.stop = &token;
  absl::StatusOr<RunResult> r = ex->Run({{"x", Filled(2, 1)}}, run);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("the server is shutting down"),
                                          HasSubstr("node 'first' (Identity)")));
}

// Bodies nested past kMaxSubgraphDepth: each level's If builds its branches' executors, so
// the depth is bounded where the recursion is (a Graph made without GraphFromProto's check).
TEST(SubgraphDepthTest, ExecutorsOfBodiesNestedTooDeepAreRefused) {
  auto nested = [](int depth) {
    v1::Graph leaf;
    v1::Node* id = leaf.add_nodes();
    id->set_op_type("Identity");
    id->add_inputs("c");
    id->add_outputs("y");
    leaf.add_outputs()->set_name("y");
    v1::Graph g = leaf;
    for (int level = depth; level >= 2; --level) {
      v1::Graph outer;
      v1::Node* n = outer.add_nodes();
      n->set_op_type("If");
      n->add_inputs("c");
      n->add_outputs("y");
      v1::Attribute* t = n->add_attributes();
      t->set_name("then_branch");
      *t->mutable_g() = std::move(g);
      v1::Attribute* e = n->add_attributes();
      e->set_name("else_branch");
      *e->mutable_g() = leaf;
      outer.add_outputs()->set_name("y");
      g = std::move(outer);
    }
    Graph top;
    const ValueId c = top.AddValue("c").value();
    top.mutable_value(c).type.dtype = v1::DT_BOOL;
    top.AddGraphInput(c);
    const ValueId y = top.AddValue("y").value();
    AttributeMap attributes;
    attributes["then_branch"].mutable_g()->Swap(&g);
    *attributes["else_branch"].mutable_g() = leaf;
    EXPECT_TRUE(top.AddNode("top", "If", "", {c}, {y}, std::move(attributes)).ok());
    top.AddGraphOutput(y);
    return top;
  };
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(nested(kMaxSubgraphDepth), Registry(), {});
  ASSERT_TRUE(ex.ok()) << ex.status();
  absl::StatusOr<RunResult> r =
      (*ex)->Run({{"c", Tensor::FromVector<bool>(v1::DT_BOOL, {true}, {})}});
  ASSERT_TRUE(r.ok()) << r.status();
  ex = Executor::Create(nested(kMaxSubgraphDepth + 1), Registry(), {});
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ex.status().message(), HasSubstr("64 levels deep"));
}

// A kernel that throws what its attribute 'kind' says, directly or from a ParallelFor.
absl::Status ThrowingKernel(KernelContext& ctx) {
  const std::string kind = ctx.info().GetString("kind", "");
  auto raise = [&] {
    if (kind == "bad_alloc") throw std::bad_alloc();
    if (kind == "length") throw std::length_error("vector::_M_default_append");
    if (kind == "range") throw std::out_of_range("vector::_M_range_check");
    throw 42;
  };
  if (ctx.info().GetInt("parallel", 0) != 0) {
    ctx.ParallelFor(1000, 1, [&](int64_t b, int64_t) {
      if (b > 0) raise();
    });
  } else {
    raise();
  }
  return absl::OkStatus();
}

const KernelRegistry& ThrowingRegistry() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    EXPECT_TRUE(r->Register(KernelRegistry::Key{"test", "Throw"}, ThrowingKernel).ok());
    EXPECT_TRUE(r->Register(KernelRegistry::Key{"test", "ThrowAtPlan"},
                            KernelFactory([](const KernelInfo&)
                                              -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                              throw std::runtime_error("dnnl_unimplemented");
                            }))
                    .ok());
    return r;
  }();
  return *registry;
}

TEST(ExceptionTest, KernelExceptionsBecomeStatusesNamingTheNode) {
  struct Case {
    const char* kind;
    absl::StatusCode code;
    const char* text;
  };
  for (const Case& c : {Case{"bad_alloc", absl::StatusCode::kResourceExhausted, "out of memory"},
                        Case{"length", absl::StatusCode::kResourceExhausted, "_M_default_append"},
                        Case{"range", absl::StatusCode::kInternal, "_M_range_check"},
                        Case{"int", absl::StatusCode::kInternal, "unknown type"}}) {
    for (int parallel : {0, 1}) {
      SCOPED_TRACE(absl::StrCat(c.kind, parallel ? " in a ParallelFor" : ""));
      std::unique_ptr<Executor> ex = Build(
          absl::StrCat(R"pb(nodes { name: "t" domain: "test" op_type: "Throw" inputs: "x"
                                    outputs: "y" attributes { name: "kind" s: ")pb",
                       c.kind, R"pb(" } attributes { name: "parallel" i: )pb", parallel,
                       R"pb( } } inputs { name: "x" } outputs { name: "y" })pb"),
          2, ThrowingRegistry());
      ASSERT_NE(ex, nullptr);
      absl::StatusOr<RunResult> r = ex->Run({{"x", Filled(1, 1)}});
      EXPECT_EQ(r.status().code(), c.code) << r.status();
      EXPECT_THAT(r.status().message(), AllOf(HasSubstr("node 't' (test::Throw)"),
                                              HasSubstr(c.text)));
    }
  }
}

TEST(ExceptionTest, KernelFactoryExceptionFailsCreateNamingTheNode) {
  v1::Graph proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(nodes { name: "p" domain: "test" op_type: "ThrowAtPlan" inputs: "x" outputs: "y" }
           inputs { name: "x" } outputs { name: "y" })pb",
      &proto));
  absl::StatusOr<Graph> g = GraphFromProto(proto);
  ASSERT_TRUE(g.ok());
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(*std::move(g), ThrowingRegistry(), {});
  EXPECT_EQ(ex.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(ex.status().message(),
              AllOf(HasSubstr("node 'p' (test::ThrowAtPlan)"), HasSubstr("dnnl_unimplemented")));
}

}  // namespace
}  // namespace graphopt::runtime
