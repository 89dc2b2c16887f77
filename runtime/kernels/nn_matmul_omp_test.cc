// Which float32 products enter an OpenMP region. This binary interposes libgomp's
// GOMP_parallel (the call every `#pragma omp parallel` compiles to) to count the regions a
// kernel opens on the test's thread; it is a test of its own so that no other test runs under
// the interposer.
#include <dlfcn.h>
#include <omp.h>

#include <atomic>
#include <cmath>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/kernels/kernel_test_util.h"
#include "runtime/kernels/packed_matmul.h"

namespace {
std::atomic<int> g_regions{0};
}  // namespace

extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads,
                              unsigned flags) {
  using Real = void (*)(void (*)(void*), void*, unsigned, unsigned);
  static Real real = reinterpret_cast<Real>(dlsym(RTLD_NEXT, "GOMP_parallel"));
  g_regions.fetch_add(1);
  real(fn, data, num_threads, flags);
}

namespace graphopt::runtime {
namespace {

using ::testing::FloatNear;
using ::testing::Pointwise;

// Attention's per-head products at batch 1: [heads, L, d] x [heads, d, L] and back, a few
// thousand multiply-adds per head. On one thread they run without opening a region: a team of
// one still costs libgomp an allocation and a futex round trip per call, more than such a
// product.
TEST(MatMulOmpTest, SmallBatchedProductsOnOneThreadOpenNoRegion) {
  constexpr int kHeads = 8, kL = 10, kD = 16;
  const std::vector<float> q = Random(kHeads * kL * kD, 11), k = Random(kHeads * kD * kL, 12);
  g_regions = 0;
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("MatMul", {}, {F32(q, {kHeads, kL, kD}), F32(k, {kHeads, kD, kL})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(g_regions.load(), 0);
  std::vector<float> want(kHeads * kL * kL, 0.0f);
  for (int h = 0; h < kHeads; ++h) {
    for (int i = 0; i < kL; ++i) {
      for (int j = 0; j < kL; ++j) {
        float s = 0;
        for (int p = 0; p < kD; ++p) s += q[(h * kL + i) * kD + p] * k[(h * kD + p) * kL + j];
        want[(h * kL + i) * kL + j] = s;
      }
    }
  }
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-5), want));
}

// The interposer sees regions: a product large enough to share out on two threads opens one.
// Its inputs hold at least the 2^15 elements below which the executor runs a step's OpenMP code
// on one thread.
TEST(MatMulOmpTest, LargerProductOnTwoThreadsOpensARegion) {
  constexpr int kM = 256, kK = 128, kN = 128;  // 2^22 multiply-adds, 48 Ki input elements
  g_regions = 0;
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "MatMul", {}, {F32(Random(kM * kK, 13), {kM, kK}), F32(Random(kK * kN, 14), {kK, kN})}, 1,
      0, /*num_threads=*/2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_GE(g_regions.load(), 1);
}

// A product with B packed by oneDNN: below PackedMatMul::kSerialMacs it runs on the calling
// thread (oneDNN would open a team of all the threads on every call), above it oneDNN shares it
// out; the caller's thread count is the same afterwards.
TEST(MatMulOmpTest, SmallPackedProductsRunOnTheCallingThread) {
  Node node;
  node.op_type = "MatMul";
  ExecutorOptions options;
  KernelInfo info(node, "node 'm' (MatMul)", 17, {}, TestRegistry(), options, DeviceKind::kCpu);
  KernelContext ctx(info, {}, {}, nullptr, 2);
  constexpr int64_t kK = 256, kN = 256;
  const std::vector<float> bv = Random(kK * kN, 15);
  const Tensor b = F32(bv, {kK, kN});
  std::unique_ptr<PackedMatMul> p = PackedMatMul::Create(info, b, false);
  ASSERT_NE(p, nullptr);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(2);
  for (int64_t m : {10, 512}) {
    SCOPED_TRACE(testing::Message() << "M " << m);
    const bool small = m * kK * kN < PackedMatMul::kSerialMacs;
    const std::vector<float> a = Random(m * kK, 16);
    std::vector<float> y(m * kN);
    g_regions = 0;
    absl::StatusOr<bool> ran = p->Run(ctx, m, a.data(), 1.0f, false, y.data());
    ASSERT_TRUE(ran.ok()) << ran.status();
    ASSERT_TRUE(*ran) << "oneDNN offered only its reference kernel";
    if (small) {
      EXPECT_EQ(g_regions.load(), 0);
    } else {
      EXPECT_GE(g_regions.load(), 1);
    }
    EXPECT_EQ(omp_get_max_threads(), 2);
    for (int64_t i = 0; i < m; i += 97) {
      for (int64_t j = 0; j < kN; j += 31) {
        double want = 0;
        for (int64_t q = 0; q < kK; ++q) want += double{a[i * kK + q]} * bv[q * kN + j];
        EXPECT_NEAR(y[i * kN + j], want, 1e-4 * (1 + std::fabs(want)));
      }
    }
  }
  omp_set_num_threads(saved);
}

}  // namespace
}  // namespace graphopt::runtime
