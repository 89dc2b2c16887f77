// PackedMatMul alone, and Gemm / MatMul with a constant B through an executor (where the plan
// hands the kernel its constant and the packed path runs), against a double-precision
// reference.
#include "runtime/kernels/packed_matmul.h"

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt::runtime {
namespace {

std::vector<float> Values(int64_t n, float phase) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

Tensor Make(const std::vector<float>& values, Shape shape) {
  Tensor t = Tensor::Allocate(v1::DT_FLOAT32, std::move(shape)).value();
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

// y[m, n] = alpha * sum_k a[m, k] * B[k, n] (+ add[m, n]); B is [K, N], or [N, K] when `tb`.
std::vector<double> Reference(const std::vector<float>& a, const std::vector<float>& b, int64_t m,
                              int64_t k, int64_t n, bool tb, float alpha,
                              const std::vector<double>& add = {}) {
  std::vector<double> y(m * n);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double{a[i * k + p]} * (tb ? b[j * k + p] : b[p * n + j]);
      y[i * n + j] = alpha * s + (add.empty() ? 0.0 : add[i * n + j]);
    }
  }
  return y;
}

void ExpectNear(const float* got, const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "element " << i;
  }
}

class PackedMatMulTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterCpuKernels(kernels_).ok()); }
  KernelRegistry kernels_;
};

TEST_F(PackedMatMulTest, ProductsMatchTheReferenceForEveryLayoutAndM) {
  Node node;
  node.op_type = "Gemm";
  ExecutorOptions options;
  KernelInfo info(node, "node 'g' (Gemm)", 17, {}, kernels_, options, DeviceKind::kCpu);
  KernelContext ctx(info, {}, {}, nullptr, 1);
  const int64_t k = 70, n = 48;
  for (bool tb : {false, true}) {
    const std::vector<float> bv = Values(k * n, 0.5f);
    const Tensor b = Make(bv, tb ? Shape{n, k} : Shape{k, n});
    std::unique_ptr<PackedMatMul> p = PackedMatMul::Create(info, b, tb);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(p->Matches(b));
    EXPECT_FALSE(p->Matches(Make(bv, tb ? Shape{n, k} : Shape{k, n})));  // another buffer
    EXPECT_EQ(p->k(), k);
    EXPECT_EQ(p->n(), n);
    // M changes between calls (a primitive each); alpha and accumulation.
    for (int64_t m : {1, 4, 17, 4}) {
      for (bool accumulate : {false, true}) {
        SCOPED_TRACE(testing::Message() << "transposed " << tb << ", M " << m << ", accumulate "
                                        << accumulate);
        const std::vector<float> a = Values(m * k, 1.5f);
        std::vector<float> y(m * n, 0.25f);
        std::vector<double> add(m * n, accumulate ? 0.25 : 0.0);
        absl::StatusOr<bool> ran = p->Run(ctx, m, a.data(), 0.5f, accumulate, y.data());
        ASSERT_TRUE(ran.ok()) << ran.status();
        ASSERT_TRUE(*ran) << "oneDNN offered only its reference kernel";
        ExpectNear(y.data(), Reference(a, bv, m, k, n, tb, 0.5f, add));
      }
    }
  }
}

TEST_F(PackedMatMulTest, NarrowOrNonFloatMatricesAreLeftToSgemm) {
  Node node;
  node.op_type = "MatMul";
  ExecutorOptions options;
  KernelInfo info(node, "node 'm' (MatMul)", 17, {}, kernels_, options, DeviceKind::kCpu);
  EXPECT_EQ(PackedMatMul::Create(info, Make(Values(64 * 8, 0), {64, 8}), false), nullptr);
  EXPECT_EQ(PackedMatMul::Create(info, Make(Values(64, 0), {64}), false), nullptr);
  EXPECT_EQ(PackedMatMul::Create(info, Tensor::Zeros(v1::DT_INT32, {64, 64}).value(), false),
            nullptr);
}

// A float32 initializer holding `values`.
std::string Initializer(const std::string& name, const std::vector<int64_t>& dims,
                        const std::vector<float>& values) {
  std::string d;
  for (int64_t x : dims) absl::StrAppend(&d, " dims: ", x);
  const std::string raw(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
  return absl::StrCat("initializers { name: \"", name, "\" dtype: DT_FLOAT32", d, " raw_data: \"",
                      absl::CEscape(raw), "\" }\n");
}

std::unique_ptr<Executor> Plan(const std::string& text, const KernelRegistry& kernels,
                               int threads = 1) {
  v1::Graph g;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &g)) << text;
  ExecutorOptions options;
  options.num_threads = threads;
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(GraphFromProto(g).value(), kernels, options);
  EXPECT_TRUE(ex.ok()) << ex.status();
  return ex.ok() ? *std::move(ex) : nullptr;
}

// Gemm with a constant B (transposed, as torch exports Linear), alpha, beta and a C broadcast
// along the rows; the same executor run from two threads at once (each call its own scratch).
TEST_F(PackedMatMulTest, GemmWithConstantWeightsThroughTheExecutor) {
  const int64_t m = 5, k = 40, n = 36;
  const std::vector<float> w = Values(n * k, 0.2f), c = Values(n, 2.0f);
  const std::string text = absl::StrCat(
      "inputs { name: \"x\" type { dtype: DT_FLOAT32 shape { dims { size: ", m,
      " } dims { size: ", k, " } } } }\n", Initializer("w", {n, k}, w), Initializer("c", {n}, c),
      "nodes { op_type: \"Gemm\" name: \"g\" inputs: \"x\" inputs: \"w\" inputs: \"c\" "
      "outputs: \"y\" attributes { name: \"transB\" i: 1 } attributes { name: \"alpha\" "
      "f: 0.5 } attributes { name: \"beta\" f: 2 } }\n"
      "outputs { name: \"y\" }\n");
  std::unique_ptr<Executor> ex = Plan(text, kernels_);
  ASSERT_NE(ex, nullptr);
  auto check = [&](float phase) {
    const std::vector<float> x = Values(m * k, phase);
    std::vector<double> add(m * n);
    for (int64_t i = 0; i < m * n; ++i) add[i] = 2.0 * c[i % n];
    for (int rep = 0; rep < 20; ++rep) {
      absl::StatusOr<RunResult> r = ex->RunPositional({Make(x, {m, k})});
      ASSERT_TRUE(r.ok()) << r.status();
      ExpectNear(r->outputs[0].data<float>(), Reference(x, w, m, k, n, true, 0.5f, add));
    }
  };
  std::thread other([&] { check(3.0f); });
  check(1.0f);
  other.join();
}

// Gemm at M = 1 with B transposed (a classifier at batch 1) runs as row dot products shared out
// among the threads: against the reference with and without C, and the same bits on 1 and 2
// threads. K = 333 leaves a tail in every row; N = 203 rows go 101 / 102 to two threads.
TEST_F(PackedMatMulTest, GemmOfOneRowByATransposedBIsTheSameOnAnyThreadCount) {
  const int64_t k = 333, n = 203;
  const std::vector<float> w = Values(n * k, 0.4f), c = Values(n, 1.5f), x = Values(k, 0.8f);
  std::vector<float> first;
  for (bool with_c : {true, false}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "C " << with_c << ", threads " << threads);
      const std::string text = absl::StrCat(
          "inputs { name: \"x\" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: ",
          k, " } } } }\n", Initializer("w", {n, k}, w), Initializer("c", {n}, c),
          "nodes { op_type: \"Gemm\" name: \"g\" inputs: \"x\" inputs: \"w\" ",
          with_c ? "inputs: \"c\" " : "",
          "outputs: \"y\" attributes { name: \"transB\" i: 1 } attributes { name: \"alpha\" "
          "f: 0.5 } attributes { name: \"beta\" f: 2 } }\n"
          "outputs { name: \"y\" }\n");
      std::unique_ptr<Executor> ex = Plan(text, kernels_, threads);
      ASSERT_NE(ex, nullptr);
      std::vector<double> add(n, 0.0);
      if (with_c) {
        for (int64_t j = 0; j < n; ++j) add[j] = 2.0 * c[j];
      }
      absl::StatusOr<RunResult> r = ex->RunPositional({Make(x, {1, k})});
      ASSERT_TRUE(r.ok()) << r.status();
      const float* y = r->outputs[0].data<float>();
      ExpectNear(y, Reference(x, w, 1, k, n, true, 0.5f, add));
      if (threads == 1) {
        first.assign(y, y + n);
      } else {
        for (int64_t j = 0; j < n; ++j) ASSERT_EQ(y[j], first[j]) << "column " << j;
      }
    }
  }
}

// MatMul with a constant 2-D B: a plain A and a batched A (stacked into one product), on 1 and 2
// threads; and a B too narrow to pack (sgemm).
TEST_F(PackedMatMulTest, MatMulWithConstantWeightsThroughTheExecutor) {
  for (int64_t n : {64, 8}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "N " << n << ", threads " << threads);
      const int64_t k = 48;
      const std::vector<float> w = Values(k * n, 0.7f);
      const std::string text = absl::StrCat(
          "inputs { name: \"x\" type { dtype: DT_FLOAT32 shape { dims { size: 3 } dims { size: 7 "
          "} dims { size: ", k, " } } } }\n",
          "inputs { name: \"x2\" type { dtype: DT_FLOAT32 shape { dims { size: 6 } dims { size: ",
          k, " } } } }\n", Initializer("w", {k, n}, w),
          "nodes { op_type: \"MatMul\" name: \"m\" inputs: \"x\" inputs: \"w\" outputs: \"y\" }\n"
          "nodes { op_type: \"MatMul\" name: \"m2\" inputs: \"x2\" inputs: \"w\" outputs: \"y2\" "
          "}\noutputs { name: \"y\" }\noutputs { name: \"y2\" }\n");
      std::unique_ptr<Executor> ex = Plan(text, kernels_, threads);
      ASSERT_NE(ex, nullptr);
      const std::vector<float> x = Values(3 * 7 * k, 0.1f), x2 = Values(6 * k, 0.9f);
      absl::StatusOr<RunResult> r = ex->RunPositional({Make(x, {3, 7, k}), Make(x2, {6, k})});
      ASSERT_TRUE(r.ok()) << r.status();
      ExpectNear(r->outputs[0].data<float>(), Reference(x, w, 21, k, n, false, 1.0f));
      ExpectNear(r->outputs[1].data<float>(), Reference(x2, w, 6, k, n, false, 1.0f));
    }
  }
}

}  // namespace
}  // namespace graphopt::runtime
