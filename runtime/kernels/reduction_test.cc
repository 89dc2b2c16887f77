#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

// --- Reduce* ------------------------------------------------------------------------------

TEST(ReduceTest, SumAxesInputKeepdims) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceSum", {"name: \"keepdims\" i: 1"}, {F32(Iota(6), {2, 3}), I64({1}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 1));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(3, 12));
}

TEST(ReduceTest, IntegerResultsOutOfRangeSaturate) {
  // ReduceLogSum of an empty int64 tensor is log(0) = -inf: the lowest int64, not undefined
  // behaviour (found by graph_pipeline_fuzzer through constant folding).
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceLogSum", {"name: \"keepdims\" i: 0"}, {I64({}, {0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int64_t>()[0], std::numeric_limits<int64_t>::lowest());
}

TEST(ReduceTest, IntegerSumsAndProductsWrapAround) {
  // Two's complement wrap-around, as numpy and ONNX Runtime give, not signed overflow
  // (undefined behaviour: found by graph_pipeline_fuzzer through constant folding).
  const int64_t big = int64_t{1} << 62;
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceSum", {"name: \"keepdims\" i: 0"}, {I64({big, big, big}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int64_t>()[0], -big);  // 3 * 2^62 mod 2^64
  out = RunNode("ReduceProd", {"name: \"keepdims\" i: 0"}, {I64({big, 4}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int64_t>()[0], 0);
  out = RunNode("ReduceL1", {"name: \"keepdims\" i: 0"},
                {I64({std::numeric_limits<int64_t>::lowest()}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int64_t>()[0], std::numeric_limits<int64_t>::lowest());
}

TEST(ReduceTest, SumEmptyAxesReducesAllOrNothing) {
  absl::StatusOr<std::vector<Tensor>> all =
      RunNode("ReduceSum", {"name: \"keepdims\" i: 0"}, {F32(Iota(6), {2, 3})});
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)[0].rank(), 0);
  EXPECT_THAT(ToFloats((*all)[0]), ElementsAre(15));
  absl::StatusOr<std::vector<Tensor>> noop =
      RunNode("ReduceSum", {"name: \"noop_with_empty_axes\" i: 1"},
              {F32(Iota(6), {2, 3}), I64({}, {0})});
  ASSERT_TRUE(noop.ok()) << noop.status();
  EXPECT_THAT((*noop)[0].shape(), ElementsAre(2, 3));
  EXPECT_THAT(ToFloats((*noop)[0]), ElementsAreArray(Iota(6)));
}

TEST(ReduceTest, MeanOverSeparatedAxes) {
  // [2, 3, 4] over axes 0 and 2: two passes.
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceMean", {"name: \"axes\" ints { values: [0, -1] }", "name: \"keepdims\" i: 0"},
              {F32(Iota(24), {2, 3, 4})}, 1, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(3));
  // Row j: mean of {4j..4j+3} and {12+4j..12+4j+3} = 4j + 7.5.
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(7.5, 11.5, 15.5));
}

TEST(ReduceTest, AxesFromInputAtOpset18) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceMax", {"name: \"keepdims\" i: 0"}, {F32({1, 5, 3, 2}, {2, 2}), I64({0}, {1})},
              1, 18);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(3, 5));
}

TEST(ReduceTest, MaxPropagatesNan) {
  const float nan = std::nanf("");
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceMax", {"name: \"axes\" ints { values: [1] }"}, {F32({1, nan, 3, 4}, {2, 2})},
              1, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  std::vector<float> v = ToFloats((*out)[0]);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 4);
}

TEST(ReduceTest, LogSumExpIsStable) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceLogSumExp", {"name: \"keepdims\" i: 0"}, {F32({1000, 1000}, {2})}, 1, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(FloatNear(1000 + std::log(2.0f), 1e-3)));
}

TEST(ReduceTest, NormsAndLogSum) {
  const Tensor x = F32({3, -4, 1, -1}, {2, 2});
  const std::vector<std::string> attrs = {"name: \"axes\" ints { values: [1] }",
                                          "name: \"keepdims\" i: 0"};
  auto run = [&](const char* op) {
    absl::StatusOr<std::vector<Tensor>> out = RunNode(op, attrs, {x}, 1, 13);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? ToFloats((*out)[0]) : std::vector<float>();
  };
  EXPECT_THAT(run("ReduceL1"), ElementsAre(7, 2));
  EXPECT_THAT(run("ReduceL2"), Pointwise(FloatNear(1e-5), {5.0f, std::sqrt(2.0f)}));
  EXPECT_THAT(run("ReduceSumSquare"), ElementsAre(25, 2));
  EXPECT_THAT(run("ReduceProd"), ElementsAre(-12, -1));
  EXPECT_THAT(run("ReduceMin"), ElementsAre(-4, -1));
  EXPECT_THAT(RunNode("ReduceLogSum", attrs, {F32({1, 2, 3, 4}, {2, 2})}, 1, 13)
                  .value()[0]
                  .ElementAsDouble(1),
              testing::DoubleNear(std::log(7.0), 1e-6));
}

TEST(ReduceTest, EmptySetGivesTheIdentity) {
  const Tensor x = F32({}, {2, 0});
  const std::vector<std::string> attrs = {"name: \"axes\" ints { values: [1] }"};
  EXPECT_THAT(ToFloats(RunNode("ReduceSumSquare", attrs, {x}, 1, 13).value()[0]),
              ElementsAre(0, 0));
  EXPECT_THAT(ToFloats(RunNode("ReduceProd", attrs, {x}, 1, 13).value()[0]), ElementsAre(1, 1));
  EXPECT_THAT(ToFloats(RunNode("ReduceMax", attrs, {x}, 1, 13).value()[0]),
              ElementsAre(-kInf, -kInf));
  EXPECT_THAT(ToFloats(RunNode("ReduceMin", attrs, {x}, 1, 13).value()[0]),
              ElementsAre(kInf, kInf));
  EXPECT_THAT(ToFloats(RunNode("ReduceLogSumExp", attrs, {x}, 1, 13).value()[0]),
              ElementsAre(-kInf, -kInf));
  EXPECT_THAT(RunNode("ReduceSum", {}, {x, I64({1}, {1})}, 1, 13).value()[0].shape(),
              ElementsAre(2, 1));
}

TEST(ReduceTest, IntegerSum) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceSum", {"name: \"keepdims\" i: 0"},
              {I64({1, 2, 3, 4000000000}, {2, 2}), I64({0}, {1})}, 1, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), v1::DT_INT64);
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(4, 4000000002));
}

TEST(ReduceTest, LargeReductionsAgreeAcrossThreads) {
  const int n = 1 << 18;
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
  const Tensor x = F32(v, {n});
  const Tensor x2 = F32(v, {2, n / 2});
  for (int threads : {1, 4}) {
    absl::StatusOr<std::vector<Tensor>> all = RunNode("ReduceSum", {}, {x}, 1, 13, threads);
    ASSERT_TRUE(all.ok()) << all.status();
    double expect = 0;
    for (float f : v) expect += f;
    EXPECT_NEAR((*all)[0].ElementAsDouble(0), expect, 1e-3);
    absl::StatusOr<std::vector<Tensor>> cols =
        RunNode("ReduceMax", {"name: \"axes\" ints { values: [0] }"}, {x2}, 1, 13, threads);
    ASSERT_TRUE(cols.ok()) << cols.status();
    EXPECT_EQ((*cols)[0].num_elements(), n / 2);
  }
}

TEST(ReduceTest, BadAxesAreInvalid) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ReduceMean", {"name: \"axes\" ints { values: [2] }"}, {F32(Iota(6), {2, 3})}, 1, 13);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("out of range"));
  out = RunNode("ReduceSum", {}, {F32(Iota(6), {2, 3}), I64({1, -1}, {2})}, 1, 13);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("repeated"));
}

TEST(ReduceTest, BoolIsUnimplemented) {
  Tensor b = Tensor::FromVector<bool>(v1::DT_BOOL, {true, false}, {2});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("ReduceMax", {}, {b}, 1, 13);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(out.status().message(), HasSubstr("ReduceMax"));
}

// --- ArgMax / ArgMin ------------------------------------------------------------------------

TEST(ArgTest, FirstOrLastIndex) {
  const Tensor x = F32({2, 5, 5, 1, 1, 0}, {2, 3});
  absl::StatusOr<std::vector<Tensor>> first =
      RunNode("ArgMax", {"name: \"axis\" i: 1", "name: \"keepdims\" i: 0"}, {x});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ((*first)[0].dtype(), v1::DT_INT64);
  EXPECT_THAT(ToInts((*first)[0]), ElementsAre(1, 0));
  absl::StatusOr<std::vector<Tensor>> last = RunNode(
      "ArgMax", {"name: \"axis\" i: 1", "name: \"keepdims\" i: 0", "name: \"select_last_index\" i: 1"},
      {x});
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_THAT(ToInts((*last)[0]), ElementsAre(2, 1));
  absl::StatusOr<std::vector<Tensor>> min = RunNode("ArgMin", {}, {x});
  ASSERT_TRUE(min.ok()) << min.status();
  EXPECT_THAT((*min)[0].shape(), ElementsAre(1, 3));
  EXPECT_THAT(ToInts((*min)[0]), ElementsAre(1, 1, 1));
}

TEST(ArgTest, BadInputIsInvalid) {
  EXPECT_EQ(RunNode("ArgMax", {"name: \"axis\" i: 2"}, {F32(Iota(6), {2, 3})}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunNode("ArgMin", {"name: \"axis\" i: 1"}, {F32({}, {2, 0})}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --- Softmax family -------------------------------------------------------------------------

TEST(SoftmaxTest, AlongOneAxisFromOpset13) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Softmax", {"name: \"axis\" i: 0"}, {F32({0, 0, std::log(3.0f), 0}, {2, 2})}, 1, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-6), {0.25f, 0.5f, 0.75f, 0.5f}));
}

TEST(SoftmaxTest, FlattensBeforeOpset13) {
  // axis 1 of [1, 2, 2]: one row of 4.
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Softmax", {}, {F32({0, 0, 0, 0}, {1, 2, 2})}, 1, 11);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-6), {0.25f, 0.25f, 0.25f, 0.25f}));
  absl::StatusOr<std::vector<Tensor>> h = RunNode("Hardmax", {}, {F32({1, 3, 3, 2}, {1, 2, 2})}, 1, 11);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(ToFloats((*h)[0]), ElementsAre(0, 1, 0, 0));
}

TEST(SoftmaxTest, LogSoftmaxAndHardmax) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("LogSoftmax", {}, {F32({1000, 1000}, {1, 2})}, 1, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-5), {-std::log(2.0f), -std::log(2.0f)}));
  absl::StatusOr<std::vector<Tensor>> h =
      RunNode("Hardmax", {"name: \"axis\" i: 0"}, {F32({1, 3, 3, 2}, {2, 2})}, 1, 13);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_THAT(ToFloats((*h)[0]), ElementsAre(0, 1, 1, 0));
}

// Float32 rows along the last axis take a vector exp: every row against a double reference,
// rows of 1 to 40 columns (under, at and past a vector), and masked entries (-inf, or far below
// the row's maximum) exactly 0 as std::exp gives them.
TEST(SoftmaxTest, LastAxisFloatRowsMatchDoubleAndKeepMaskedZeros) {
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t cols : {1, 5, 16, 17, 40}) {
    SCOPED_TRACE(cols);
    const int64_t rows = 6;
    std::vector<float> x(rows * cols);
    for (int64_t i = 0; i < rows * cols; ++i) x[i] = 4.0f * std::sin(0.77f * i);
    // Row 1: its first entry masked; row 2: its last entry 200 below the others.
    if (cols > 1) {
      x[cols] = -inf;
      x[3 * cols - 1] = -200.0f;
    }
    absl::StatusOr<std::vector<Tensor>> out = RunNode("Softmax", {}, {F32(x, {rows, cols})}, 1, 13);
    ASSERT_TRUE(out.ok()) << out.status();
    const std::vector<float> y = ToFloats((*out)[0]);
    for (int64_t r = 0; r < rows; ++r) {
      double m = -inf, sum = 0;
      for (int64_t i = 0; i < cols; ++i) m = std::max<double>(m, x[r * cols + i]);
      for (int64_t i = 0; i < cols; ++i) sum += std::exp(x[r * cols + i] - m);
      for (int64_t i = 0; i < cols; ++i) {
        const double want = std::exp(x[r * cols + i] - m) / sum;
        EXPECT_NEAR(y[r * cols + i], want, 1e-6 * want + 1e-30) << "row " << r << " col " << i;
      }
    }
    if (cols > 1) {
      EXPECT_EQ(y[cols], 0.0f);
      EXPECT_EQ(y[3 * cols - 1], 0.0f);
    }
  }
}

TEST(SoftmaxTest, BadInputIsInvalid) {
  EXPECT_EQ(RunNode("Softmax", {"name: \"axis\" i: 3"}, {F32(Iota(6), {2, 3})}, 1, 13)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunNode("Softmax", {}, {I64({1, 2}, {2})}, 1, 13).status().code(),
            absl::StatusCode::kUnimplemented);
}

// --- Losses ---------------------------------------------------------------------------------

TEST(LossTest, NllWeightedMeanWithIgnoreIndex) {
  // logp [N=3, C=2]; targets 0, 1, 1 (ignored).
  const Tensor logp = F32({-1, -2, -3, -4, -5, -6}, {3, 2});
  const Tensor target = I64({0, 1, 1}, {3});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("NegativeLogLikelihoodLoss", {"name: \"ignore_index\" i: 1"},
              {logp, target, F32({2, 3}, {2})}, 1, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].rank(), 0);
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(FloatNear(1.0f, 1e-6)));  // (2 * 1) / 2
  absl::StatusOr<std::vector<Tensor>> none = RunNode(
      "NegativeLogLikelihoodLoss", {"name: \"reduction\" s: \"none\""}, {logp, target}, 1, 13);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(ToFloats((*none)[0]), ElementsAre(1, 4, 6));
}

TEST(LossTest, NllBadTargetIsInvalid) {
  const Tensor logp = F32({-1, -2}, {1, 2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("NegativeLogLikelihoodLoss", {}, {logp, I64({2}, {1})}, 1, 13);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("out of range"));
  out = RunNode("NegativeLogLikelihoodLoss", {}, {logp, I64({0, 0}, {2})}, 1, 13);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("NegativeLogLikelihoodLoss", {}, {logp, I64({0}, {1}), F32({1}, {1})}, 1, 13);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LossTest, SoftmaxCrossEntropyWithLogProb) {
  // Scores [N=1, C=2, d=2]: over C the log-softmax of (0, 0) and (0, log 3).
  const Tensor x = F32({0, 0, 0, std::log(3.0f)}, {1, 2, 2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("SoftmaxCrossEntropyLoss", {"name: \"reduction\" s: \"sum\""},
              {x, I64({0, 1}, {1, 2})}, 2, 13);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]),
              ElementsAre(FloatNear(std::log(2.0f) - std::log(0.75f), 1e-5)));
  EXPECT_THAT((*out)[1].shape(), ElementsAre(1, 2, 2));
  EXPECT_THAT(ToFloats((*out)[1]),
              Pointwise(FloatNear(1e-5), {-std::log(2.0f), std::log(0.25f), -std::log(2.0f),
                                          std::log(0.75f)}));
}

// --- Einsum ---------------------------------------------------------------------------------

TEST(EinsumTest, MatmulTraceAndImplicitOutput) {
  const Tensor a = F32(Iota(6), {2, 3});
  const Tensor b = F32(Iota(6), {3, 2});
  absl::StatusOr<std::vector<Tensor>> mm =
      RunNode("Einsum", {"name: \"equation\" s: \"ij,jk\""}, {a, b}, 1, 12);
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_THAT(mm->at(0).shape(), ElementsAre(2, 2));
  EXPECT_THAT(ToFloats(mm->at(0)), ElementsAre(10, 13, 28, 40));
  absl::StatusOr<std::vector<Tensor>> tr =
      RunNode("Einsum", {"name: \"equation\" s: \"ii->\""}, {F32(Iota(9), {3, 3})}, 1, 12);
  ASSERT_TRUE(tr.ok()) << tr.status();
  EXPECT_THAT(ToFloats(tr->at(0)), ElementsAre(12));
  absl::StatusOr<std::vector<Tensor>> t =
      RunNode("Einsum", {"name: \"equation\" s: \"ba\""}, {a}, 1, 12);  // implicit: "ab"
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_THAT(t->at(0).shape(), ElementsAre(3, 2));
  EXPECT_THAT(ToFloats(t->at(0)), ElementsAre(0, 3, 1, 4, 2, 5));
}

TEST(EinsumTest, IntegerSumsAndProductsWrapAround) {
  // Two's complement, as numpy's einsum gives; the int64 accumulators overflowed (undefined
  // behaviour) before, on the packed matmul path ("ij,jk"), the general two-operand path
  // ("ii,i->", a diagonal), the one-operand sum ("i->") and three operands ("i,i,i->").
  const int64_t big = int64_t{1} << 62;
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Einsum", {"name: \"equation\" s: \"ij,jk\""},
              {I64({big, big}, {1, 2}), I64({2, 2}, {2, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(0));  // 4 * 2^62 mod 2^64
  out = RunNode("Einsum", {"name: \"equation\" s: \"ii,i->\""},
                {I64({big, 0, 0, 0, big, 0, 0, 0, big}, {3, 3}), I64({1, 1, 1}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(-big));  // 3 * 2^62 mod 2^64
  out = RunNode("Einsum", {"name: \"equation\" s: \"i->\""}, {I64({big, big, big}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(-big));
  out = RunNode("Einsum", {"name: \"equation\" s: \"i,i,i->\""},
                {I64({big}, {1}), I64({2}, {1}), I64({3}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  // 6 * 2^62 mod 2^64 = -2^63
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(std::numeric_limits<int64_t>::min()));
}

TEST(EinsumTest, EllipsisBroadcasts) {
  const Tensor a = F32(Iota(12), {2, 2, 3});  // batch 2
  const Tensor b = F32({1, 0, 0, 1, 1, 1}, {1, 3, 2});  // batch 1, broadcast
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Einsum", {"name: \"equation\" s: \"...ij, ...jk -> ...ik\""}, {a, b}, 1, 12);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(out->at(0).shape(), ElementsAre(2, 2, 2));
  EXPECT_THAT(ToFloats(out->at(0)), ElementsAre(2, 3, 8, 9, 14, 15, 20, 21));
}

TEST(EinsumTest, PackedMatmulMatchesNaiveLoops) {
  // "bqd,bkd->bkq": batch b, rows q, cols k, contracted d; the output transposes rows and cols.
  const int B = 2, Q = 3, K = 4, D = 5;
  std::vector<float> a(B * Q * D), b(B * K * D);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7) % 11) - 5;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 5) % 13) - 6;
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Einsum", {"name: \"equation\" s: \"bqd,bkd->bkq\""},
              {F32(a, {B, Q, D}), F32(b, {B, K, D})}, 1, 12);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_THAT(out->at(0).shape(), ElementsAre(B, K, Q));
  std::vector<float> got = ToFloats(out->at(0));
  for (int bi = 0; bi < B; ++bi) {
    for (int k = 0; k < K; ++k) {
      for (int q = 0; q < Q; ++q) {
        float e = 0;
        for (int d = 0; d < D; ++d) e += a[(bi * Q + q) * D + d] * b[(bi * K + k) * D + d];
        EXPECT_EQ(got[(bi * K + k) * Q + q], e) << bi << " " << k << " " << q;
      }
    }
  }
  // Full contraction, and an outer product.
  absl::StatusOr<std::vector<Tensor>> dot =
      RunNode("Einsum", {"name: \"equation\" s: \"ij,ij->\""},
              {F32({1, 2, 3, 4}, {2, 2}), F32({5, 6, 7, 8}, {2, 2})}, 1, 12);
  ASSERT_TRUE(dot.ok()) << dot.status();
  EXPECT_THAT(ToFloats(dot->at(0)), ElementsAre(70));
  absl::StatusOr<std::vector<Tensor>> outer = RunNode(
      "Einsum", {"name: \"equation\" s: \"i,j->ji\""}, {F32({1, 2}, {2}), F32({3, 4, 5}, {3})}, 1,
      12);
  ASSERT_TRUE(outer.ok()) << outer.status();
  EXPECT_THAT(ToFloats(outer->at(0)), ElementsAre(3, 6, 4, 8, 5, 10));
  // Summed within one operand only (not the packed form): "ij,k->k" = sum(a) * b.
  absl::StatusOr<std::vector<Tensor>> partial =
      RunNode("Einsum", {"name: \"equation\" s: \"ij,k->k\""},
              {F32({1, 2, 3, 4}, {2, 2}), F32({1, 2}, {2})}, 1, 12);
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_THAT(ToFloats(partial->at(0)), ElementsAre(10, 20));
}

TEST(EinsumTest, BadEquationIsInvalid) {
  const Tensor a = F32(Iota(6), {2, 3});
  EXPECT_EQ(RunNode("Einsum", {"name: \"equation\" s: \"ij,jk\""}, {a}, 1, 12).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunNode("Einsum", {"name: \"equation\" s: \"ijk\""}, {a}, 1, 12).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunNode("Einsum", {"name: \"equation\" s: \"ij,ij\""}, {a, F32(Iota(6), {3, 2})}, 1, 12)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunNode("Einsum", {"name: \"equation\" s: \"ij->ik\""}, {a}, 1, 12).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --- Normalisations -------------------------------------------------------------------------

TEST(NormalizationTest, MeanVarianceAndLp) {
  absl::StatusOr<std::vector<Tensor>> mvn =
      RunNode("MeanVarianceNormalization", {"name: \"axes\" ints { values: [1] }"},
              {F32({1, 3, 10, 20}, {2, 2})}, 1, 13);
  ASSERT_TRUE(mvn.ok()) << mvn.status();
  EXPECT_THAT(ToFloats(mvn->at(0)), Pointwise(FloatNear(1e-5), {-1.0f, 1.0f, -1.0f, 1.0f}));
  absl::StatusOr<std::vector<Tensor>> lp =
      RunNode("LpNormalization", {}, {F32({3, 4, 0, 2}, {2, 2})}, 1, 13);
  ASSERT_TRUE(lp.ok()) << lp.status();
  EXPECT_THAT(ToFloats(lp->at(0)), Pointwise(FloatNear(1e-6), {0.6f, 0.8f, 0.0f, 1.0f}));
  EXPECT_EQ(RunNode("LpNormalization", {"name: \"p\" i: 3"}, {F32({1}, {1})}, 1, 13).status().code(),
            absl::StatusCode::kInvalidArgument);
}


// --- graphopt::SumToShape -----------------------------------------------------------------

TEST(SumToShapeTest, SumsLeadingAndSizeOneAxes) {
  // [2, 3, 4] summed to [3, 1]: axis 0 dropped, axis 2 summed and kept.
  absl::StatusOr<std::vector<Tensor>> out =
      RunDomainNode("graphopt", "SumToShape", {}, {F32(Iota(24), {2, 3, 4}), I64({3, 1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(3, 1));
  // Row r sums x[b, r, c] over b and c: 6 + 16 r + (6 + 16 r + 48) = 60 + 32 r.
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(60, 92, 124));
}

TEST(SumToShapeTest, SameShapeIsACopyAndScalarSumsAll) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunDomainNode("graphopt", "SumToShape", {}, {F32(Iota(6), {2, 3}), I64({2, 3}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 1, 2, 3, 4, 5));
  out = RunDomainNode("graphopt", "SumToShape", {}, {F32(Iota(6), {2, 3}), I64({}, {0})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].rank(), 0);
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(15));
  // An empty grad sums to zeros of the target shape.
  out = RunDomainNode("graphopt", "SumToShape", {}, {F32({}, {0, 3}), I64({1, 3}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0, 0, 0));
}

TEST(SumToShapeTest, RejectsShapesThatDoNotBroadcast) {
  EXPECT_EQ(RunDomainNode("graphopt", "SumToShape", {}, {F32(Iota(6), {2, 3}), I64({2}, {1})})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RunDomainNode("graphopt", "SumToShape", {},
                          {F32(Iota(6), {2, 3}), I64({1, 2, 3}, {3})})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphopt::runtime
