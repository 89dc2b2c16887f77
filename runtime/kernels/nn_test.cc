#include <cmath>
#include <cstdint>
#include <thread>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "runtime/executor.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

std::vector<float> Iota(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

Tensor U8(std::vector<uint8_t> values, Shape shape) {
  return Tensor::FromVector(v1::DT_UINT8, values, std::move(shape));
}

// --- Conv -----------------------------------------------------------------------------------

// A 2-D grouped convolution computed naively.
std::vector<float> NaiveConv2d(const std::vector<float>& x, int n, int c, int h, int w,
                               const std::vector<float>& wt, int m, int kh, int kw, int group,
                               const std::vector<float>& bias, int sh, int sw, int dh, int dw,
                               int pt, int pl, int oh, int ow) {
  std::vector<float> y(n * m * oh * ow, 0.0f);
  const int cg = c / group, mg = m / group;
  for (int ni = 0; ni < n; ++ni) {
    for (int mi = 0; mi < m; ++mi) {
      const int g = mi / mg;
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          float acc = bias.empty() ? 0.0f : bias[mi];
          for (int ci = 0; ci < cg; ++ci) {
            for (int ky = 0; ky < kh; ++ky) {
              for (int kx = 0; kx < kw; ++kx) {
                const int iy = oy * sh - pt + ky * dh, ix = ox * sw - pl + kx * dw;
                if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
                acc += x[((ni * c + g * cg + ci) * h + iy) * w + ix] *
                       wt[((mi * cg + ci) * kh + ky) * kw + kx];
              }
            }
          }
          y[((ni * m + mi) * oh + oy) * ow + ox] = acc;
        }
      }
    }
  }
  return y;
}

TEST(ConvTest, GroupedStridedDilatedPaddedMatchesNaive) {
  // X [2, 4, 7, 6], W [6, 2, 3, 2], group 2, strides (2, 1), dilations (1, 2),
  // pads (1, 0, 2, 1): out h = (7 + 3 - 3) / 2 + 1 = 4, w = (6 + 1 - 3) / 1 + 1 = 5.
  const std::vector<float> x = Random(2 * 4 * 7 * 6, 1);
  const std::vector<float> w = Random(6 * 2 * 3 * 2, 2);
  const std::vector<float> b = Random(6, 3);
  const std::vector<std::string> attrs = {
      "name: \"group\" i: 2", "name: \"strides\" ints { values: [2, 1] }",
      "name: \"dilations\" ints { values: [1, 2] }",
      "name: \"pads\" ints { values: [1, 0, 2, 1] }"};
  for (int threads : {1, 2}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunNode("Conv", attrs, {F32(x, {2, 4, 7, 6}), F32(w, {6, 2, 3, 2}), F32(b, {6})}, 1, 0,
                threads);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 6, 4, 5));
    const std::vector<float> want =
        NaiveConv2d(x, 2, 4, 7, 6, w, 6, 3, 2, 2, b, 2, 1, 1, 2, 1, 0, 4, 5);
    EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-4), want));
  }
}

// The direct NCHW loops (conv_nchw.cc) take 1x1 and depthwise convolutions with outputs of at
// least 28x28: odd sizes, asymmetric pads, strides 1 and 2, kernels of 3, 5 and 7 (the last on
// the generic loop), two images; 1x1 ones split into blocks of channels and columns spread
// over the threads. On one and on two threads, with equal results.
TEST(ConvTest, DirectNchwPathsMatchNaive) {
  struct Case {
    int c, m, h, w, k, group, stride, pt, pl, pb, pr;
  };
  const Case cases[] = {
      {5, 7, 30, 29, 1, 1, 1, 0, 0, 0, 0},     // 1x1 on sgemm
      {9, 200, 40, 40, 1, 1, 1, 0, 0, 0, 0},   // 1x1: 2 channel blocks (104, 96) x 2 column blocks
      {6, 6, 31, 30, 3, 6, 1, 1, 1, 1, 1},     // depthwise 3x3
      {4, 4, 61, 58, 3, 4, 2, 1, 0, 2, 1},     // stride 2, asymmetric pads
      {3, 3, 32, 33, 5, 3, 1, 2, 2, 2, 2},     // 5x5
      {2, 2, 60, 62, 7, 2, 2, 3, 3, 3, 3},     // 7x7 (generic loop)
  };
  int seed = 10;
  for (const Case& t : cases) {
    const int oh = (t.h + t.pt + t.pb - t.k) / t.stride + 1;
    const int ow = (t.w + t.pl + t.pr - t.k) / t.stride + 1;
    const std::vector<float> x = Random(2 * t.c * t.h * t.w, ++seed);
    const std::vector<float> w = Random(t.m * (t.c / t.group) * t.k * t.k, ++seed);
    const std::vector<float> b = Random(t.m, ++seed);
    const std::vector<std::string> attrs = {
        absl::StrCat("name: \"group\" i: ", t.group),
        absl::StrCat("name: \"strides\" ints { values: [", t.stride, ", ", t.stride, "] }"),
        absl::StrCat("name: \"pads\" ints { values: [", t.pt, ", ", t.pl, ", ", t.pb, ", ",
                     t.pr, "] }")};
    std::vector<float> first;
    for (int threads : {1, 2}) {
      absl::StatusOr<std::vector<Tensor>> out = RunNode(
          "Conv", attrs,
          {F32(x, {2, t.c, t.h, t.w}), F32(w, {t.m, t.c / t.group, t.k, t.k}), F32(b, {t.m})}, 1,
          0, threads);
      ASSERT_TRUE(out.ok()) << out.status();
      EXPECT_THAT((*out)[0].shape(), ElementsAre(2, t.m, oh, ow));
      EXPECT_THAT(ToFloats((*out)[0]),
                  Pointwise(FloatNear(1e-4), NaiveConv2d(x, 2, t.c, t.h, t.w, w, t.m, t.k, t.k,
                                                         t.group, b, t.stride, t.stride, 1, 1,
                                                         t.pt, t.pl, oh, ow)))
          << "c" << t.c << " m" << t.m << " k" << t.k << " stride " << t.stride << " threads "
          << threads;
      if (threads == 1) {
        first = ToFloats((*out)[0]);
      } else {
        EXPECT_EQ(ToFloats((*out)[0]), first) << "the thread count changed the results";
      }
    }
  }
}

// MaxPool 2-D float32 without Indices runs on the same row loops: padding never wins, and with
// ceil_mode the last window may hang over the end.
TEST(PoolTest, MaxPoolRowLoopsMatchNaive) {
  struct Case {
    int h, w, k, stride, pad, ceil;
  };
  for (const Case& t : {Case{31, 30, 3, 2, 1, 0}, Case{12, 13, 2, 2, 0, 1}, Case{9, 9, 3, 1, 1, 0},
                        Case{10, 11, 5, 2, 2, 1}}) {
    const std::vector<float> x = Random(2 * 3 * t.h * t.w, t.h * t.w);
    auto out_dim = [&](int in) {
      const int span = in + 2 * t.pad - t.k;
      return (t.ceil ? (span + t.stride - 1) / t.stride : span / t.stride) + 1;
    };
    const int oh = out_dim(t.h), ow = out_dim(t.w);
    absl::StatusOr<std::vector<Tensor>> out = RunNode(
        "MaxPool",
        {absl::StrCat("name: \"kernel_shape\" ints { values: [", t.k, ", ", t.k, "] }"),
         absl::StrCat("name: \"strides\" ints { values: [", t.stride, ", ", t.stride, "] }"),
         absl::StrCat("name: \"pads\" ints { values: [", t.pad, ", ", t.pad, ", ", t.pad, ", ",
                      t.pad, "] }"),
         absl::StrCat("name: \"ceil_mode\" i: ", t.ceil)},
        {F32(x, {2, 3, t.h, t.w})});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_THAT((*out)[0].shape(), ElementsAre(2, 3, oh, ow));
    std::vector<float> want;
    for (int p = 0; p < 6; ++p) {
      for (int oy = 0; oy < oh; ++oy) {
        for (int ox = 0; ox < ow; ++ox) {
          float best = -INFINITY;
          for (int ky = 0; ky < t.k; ++ky) {
            for (int kx = 0; kx < t.k; ++kx) {
              const int iy = oy * t.stride - t.pad + ky, ix = ox * t.stride - t.pad + kx;
              if (iy >= 0 && iy < t.h && ix >= 0 && ix < t.w) {
                best = std::max(best, x[(p * t.h + iy) * t.w + ix]);
              }
            }
          }
          want.push_back(best);
        }
      }
    }
    EXPECT_THAT(ToFloats((*out)[0]), ElementsAreArray(want)) << t.h << "x" << t.w << " k" << t.k;
  }
}

TEST(ConvTest, SameUpperAutoPadAndNoBias) {
  const std::vector<float> x = Random(1 * 3 * 5 * 5, 4);
  const std::vector<float> w = Random(2 * 3 * 3 * 3, 5);
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Conv", {"name: \"auto_pad\" s: \"SAME_UPPER\"", "name: \"strides\" ints { values: [2, 2] }"},
              {F32(x, {1, 3, 5, 5}), F32(w, {2, 3, 3, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  // ceil(5 / 2) = 3; total pad (3 - 1) * 2 + 3 - 5 = 2: one each side.
  EXPECT_THAT((*out)[0].shape(), ElementsAre(1, 2, 3, 3));
  EXPECT_THAT(ToFloats((*out)[0]),
              Pointwise(FloatNear(1e-4), NaiveConv2d(x, 1, 3, 5, 5, w, 2, 3, 3, 1, {}, 2, 2, 1, 1,
                                                     1, 1, 3, 3)));
}

TEST(ConvTest, OneDimensionalAndDouble) {
  Tensor x = Tensor::FromVector(v1::DT_FLOAT64, std::vector<double>{1, 2, 3, 4}, {1, 1, 4});
  Tensor w = Tensor::FromVector(v1::DT_FLOAT64, std::vector<double>{1, -1}, {1, 1, 2});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Conv", {}, {x, w});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(1, 1, 3));
  EXPECT_THAT((*out)[0].span<double>(), ElementsAre(-1, -1, -1));
}

TEST(ConvTest, BadInputs) {
  // W's channels (2) do not match X's (3).
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Conv", {}, {F32(Iota(27), {1, 3, 3, 3}), F32(Iota(8), {2, 2, 1, 2})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("group"));
  // X of rank 2.
  out = RunNode("Conv", {}, {F32(Iota(4), {2, 2}), F32(Iota(4), {2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // A kernel larger than the input.
  out = RunNode("Conv", {}, {F32(Iota(4), {1, 1, 2, 2}), F32(Iota(9), {1, 1, 3, 3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Bias of the wrong length.
  out = RunNode("Conv", {}, {F32(Iota(9), {1, 1, 3, 3}), F32(Iota(4), {1, 1, 2, 2}),
                             F32({1, 2}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Unknown auto_pad.
  out = RunNode("Conv", {"name: \"auto_pad\" s: \"SAME\""},
                {F32(Iota(9), {1, 1, 3, 3}), F32(Iota(4), {1, 1, 2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConvTest, OnePlanRunsConcurrentlyWithChangingShapesAndWeights) {
  // The primitive cache (per input shape) and the reordered-weights cache (per weight tensor)
  // are shared by concurrent runs of one plan.
  v1::Graph proto;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    nodes { op_type: "Conv" inputs: "x" inputs: "w" outputs: "y"
            attributes { name: "pads" ints { values: [1, 1, 1, 1] } } }
    inputs { name: "x" } inputs { name: "w" } outputs { name: "y" }
  )pb", &proto));
  absl::StatusOr<Graph> graph = GraphFromProto(proto);
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(*std::move(graph), TestRegistry(), ExecutorOptions{});
  ASSERT_TRUE(ex.ok()) << ex.status();
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int it = 0; it < 10; ++it) {
        const int h = 6 + (t + it) % 3;
        const std::vector<float> x = Random(1 * 8 * h * 5, 100 * t + it);
        const std::vector<float> w = Random(8 * 8 * 3 * 3, 1000 + (it % 2));
        absl::StatusOr<RunResult> r =
            (*ex)->RunPositional({F32(x, {1, 8, h, 5}), F32(w, {8, 8, 3, 3})});
        if (!r.ok()) {
          ++failures[t];
          continue;
        }
        const std::vector<float> want =
            NaiveConv2d(x, 1, 8, h, 5, w, 8, 3, 3, 1, {}, 1, 1, 1, 1, 1, 1, h, 5);
        const std::vector<float> got = ToFloats(r->outputs[0]);
        for (size_t i = 0; i < want.size(); ++i) {
          if (std::abs(got[i] - want[i]) > 1e-4) {
            ++failures[t];
            break;
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_THAT(failures, ElementsAre(0, 0, 0, 0));
}

TEST(ConvTransposeTest, StridedWithOutputPaddingAndBias) {
  // x [1, 1, 3] = 1 2 3, w [1, 1, 2] = 1 1, stride 2, output_padding 1: full length
  // 2 * 2 + 1 + 2 = 7: 1 1 2 2 3 3 0, plus bias 10.
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ConvTranspose",
              {"name: \"strides\" ints { values: [2] }",
               "name: \"output_padding\" ints { values: [1] }"},
              {F32({1, 2, 3}, {1, 1, 3}), F32({1, 1}, {1, 1, 2}), F32({10}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(1, 1, 7));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(11, 11, 12, 12, 13, 13, 10));
}

TEST(ConvTransposeTest, BadWeights) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ConvTranspose", {}, {F32(Iota(6), {1, 2, 3}), F32({1, 1}, {1, 1, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConvIntegerTest, ZeroPointsAndPadding) {
  // x - 1 = [[0, 1], [2, 3]], w = 1 (1x1 kernel), pads 1: the padded border is 0.
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ConvInteger", {"name: \"pads\" ints { values: [1, 0, 0, 0] }"},
              {U8({1, 2, 3, 4}, {1, 1, 2, 2}), U8({3}, {1, 1, 1, 1}), U8({1}, {}), U8({1}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].dtype(), v1::DT_INT32);
  EXPECT_THAT((*out)[0].shape(), ElementsAre(1, 1, 3, 2));
  EXPECT_THAT((*out)[0].span<int32_t>(), ElementsAre(0, 0, 0, 2, 4, 6));
}

TEST(ConvIntegerTest, Int32SumsWrapAround) {
  // 33100 taps of 255 * 255 = 2152327500 > 2^31 - 1: the int32 sum wraps (two's complement,
  // as ONNX Runtime gives) instead of overflowing (undefined behaviour before).
  const int64_t k = 33100;
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("ConvInteger", {}, {U8(std::vector<uint8_t>(k, 255), {1, 1, 1, k}),
                                  U8(std::vector<uint8_t>(k, 255), {1, 1, 1, k})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].span<int32_t>(), ElementsAre(static_cast<int32_t>(2152327500LL - (1LL << 32))));
}

TEST(QLinearConvTest, BiasWrapsAndNaNScaleSaturates) {
  // x = w = 1 with zero points 0, bias INT32_MAX: the int32 accumulator wraps to INT32_MIN, which
  // requantizes (scale 1) to uint8's 0. A zero y_scale makes 0 * inf = NaN: uint8's lowest (as
  // QuantizeLinear gives) rather than an undefined float-to-int conversion.
  auto run = [](float y_scale, int32_t bias) {
    return RunNode("QLinearConv", {},
                   {U8({1}, {1, 1, 1, 1}), F32({1}, {}), U8({0}, {}), U8({1}, {1, 1, 1, 1}),
                    F32({1}, {}), U8({0}, {}), F32({y_scale}, {}), U8({0}, {}),
                    Tensor::FromVector<int32_t>(v1::DT_INT32, {bias}, {1})});
  };
  absl::StatusOr<std::vector<Tensor>> out = run(1, std::numeric_limits<int32_t>::max());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].span<uint8_t>(), ElementsAre(0));
  out = run(1, 5);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].span<uint8_t>(), ElementsAre(6));
  out = run(0, -1);  // accumulator 0, scale inf
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].span<uint8_t>(), ElementsAre(0));
}

TEST(QLinearMatMulTest, NaNScaleSaturates) {
  // A zero y_scale makes the scale inf and 0 * inf = NaN: int8's lowest (as QuantizeLinear
  // gives) rather than an undefined float-to-int conversion; 2 * inf saturates to the highest.
  auto run = [](uint8_t a) {
    return RunNode("QLinearMatMul", {},
                   {U8({a}, {1, 1}), F32({1}, {}), U8({0}, {}), U8({1}, {1, 1}), F32({1}, {}),
                    U8({0}, {}), F32({0}, {}),
                    Tensor::FromVector<int8_t>(v1::DT_INT8, {0}, {})});
  };
  absl::StatusOr<std::vector<Tensor>> out = run(0);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].span<int8_t>(), ElementsAre(-128));
  out = run(2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].span<int8_t>(), ElementsAre(127));
}

// --- MatMul / Gemm --------------------------------------------------------------------------

TEST(MatMulTest, BroadcastBatchesMatchNaive) {
  // A [2, 1, 2, 3] x B [3, 3, 4] -> [2, 3, 2, 4].
  const std::vector<float> a = Random(12, 6), b = Random(36, 7);
  for (int threads : {1, 2}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunNode("MatMul", {}, {F32(a, {2, 1, 2, 3}), F32(b, {3, 3, 4})}, 1, 0, threads);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 3, 2, 4));
    std::vector<float> want;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        for (int r = 0; r < 2; ++r) {
          for (int c = 0; c < 4; ++c) {
            float s = 0;
            for (int k = 0; k < 3; ++k) s += a[i * 6 + r * 3 + k] * b[j * 12 + k * 4 + c];
            want.push_back(s);
          }
        }
      }
    }
    EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-5), want));
  }
}

TEST(MatMulTest, VectorOperandsAndInt) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("MatMul", {}, {F32({1, 2}, {2}), F32({1, 2, 3, 4, 5, 6}, {2, 3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(3));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(9, 12, 15));
  out = RunNode("MatMul", {}, {I64({1, 2, 3, 4}, {2, 2}), I64({1, 1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2));
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(3, 7));
}

TEST(MatMulTest, IntegerProductsWrapAround) {
  // Two's complement, as numpy gives, not signed overflow (undefined behaviour: found by
  // graph_pipeline_fuzzer through constant folding). (2^59 + 1)^2 = 2^118 + 2^60 + 1.
  const int64_t v = (int64_t{1} << 59) + 1;
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("MatMul", {}, {I64({v, v}, {1, 2}), I64({v, v}, {2, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int64_t>()[0], (int64_t{1} << 61) + 2);  // 2 * (2^60 + 1) mod 2^64
  out = RunNode("Gemm", {"name: \"alpha\" f: 1", "name: \"beta\" f: 1"},
                {I64({v}, {1, 1}), I64({v}, {1, 1}), I64({std::numeric_limits<int64_t>::max()}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<int64_t>()[0], std::numeric_limits<int64_t>::lowest() + (int64_t{1} << 60));
}

TEST(MatMulTest, BadInnerDims) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("MatMul", {}, {F32(Iota(6), {2, 3}), F32(Iota(6), {2, 3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("MatMul", {}, {F32(Iota(12), {2, 2, 3}), F32(Iota(18), {3, 3, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(GemmTest, TransposesAlphaBetaAndRowBias) {
  // A^T with A [3, 2] = rows (1 2) (3 4) (5 6); B^T with B [2, 3] = I-ish.
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Gemm",
              {"name: \"transA\" i: 1", "name: \"transB\" i: 1", "name: \"alpha\" f: 2",
               "name: \"beta\" f: 0.5"},
              {F32({1, 2, 3, 4, 5, 6}, {3, 2}), F32({1, 0, 0, 0, 1, 0}, {2, 3}),
               F32({10, 20}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  // A^T = [[1 3 5] [2 4 6]], B^T = [[1 0] [0 1] [0 0]] -> [[1 3] [2 4]] * 2 + [5 10].
  EXPECT_THAT((*out)[0].shape(), ElementsAre(2, 2));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(7, 16, 9, 18));
}

TEST(GemmTest, BadBias) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Gemm", {}, {F32(Iota(4), {2, 2}), F32(Iota(4), {2, 2}), F32(Iota(3), {3})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MatMulIntegerTest, ZeroPoints) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("MatMulInteger", {},
              {U8({11, 12, 13, 14}, {2, 2}), U8({1, 2, 3, 4}, {2, 2}), U8({10}, {}), U8({1}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  // [[1 2] [3 4]] x [[0 1] [2 3]].
  EXPECT_THAT((*out)[0].span<int32_t>(), ElementsAre(4, 7, 8, 15));
}

// --- Pools ----------------------------------------------------------------------------------

TEST(PoolTest, MaxPoolWithIndicesBothStorageOrders) {
  const std::vector<std::string> attrs = {"name: \"kernel_shape\" ints { values: [2, 2] }",
                                          "name: \"strides\" ints { values: [2, 2] }"};
  absl::StatusOr<std::vector<Tensor>> out = RunNode("MaxPool", attrs, {F32(Iota(16), {1, 1, 4, 4})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(5, 7, 13, 15));
  EXPECT_THAT(ToInts((*out)[1]), ElementsAre(5, 7, 13, 15));
  std::vector<std::string> col = attrs;
  col.push_back("name: \"storage_order\" i: 1");
  out = RunNode("MaxPool", col, {F32(Iota(16), {1, 1, 4, 4})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToInts((*out)[1]), ElementsAre(5, 13, 7, 15));
}

TEST(PoolTest, AveragePoolCountIncludePad) {
  const std::vector<std::string> base = {"name: \"kernel_shape\" ints { values: [2] }",
                                         "name: \"pads\" ints { values: [1, 1] }",
                                         "name: \"strides\" ints { values: [2] }"};
  absl::StatusOr<std::vector<Tensor>> out = RunNode("AveragePool", base, {F32({2, 4}, {1, 1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(2, 4));
  std::vector<std::string> inc = base;
  inc.push_back("name: \"count_include_pad\" i: 1");
  out = RunNode("AveragePool", inc, {F32({2, 4}, {1, 1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1, 2));
}

TEST(PoolTest, GlobalPools) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("GlobalAveragePool", {}, {F32(Iota(8), {1, 2, 2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].shape(), ElementsAre(1, 2, 1, 1));
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(1.5, 5.5));
  out = RunNode("GlobalMaxPool", {}, {F32(Iota(8), {1, 2, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(3, 7));
}

TEST(PoolTest, BadInputs) {
  // kernel_shape is required.
  absl::StatusOr<std::vector<Tensor>> out = RunNode("MaxPool", {}, {F32(Iota(4), {1, 1, 4})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // Rank 2 input.
  out = RunNode("GlobalAveragePool", {}, {F32(Iota(4), {2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // MaxUnpool index out of range.
  out = RunNode("MaxUnpool", {"name: \"kernel_shape\" ints { values: [2] }",
                              "name: \"strides\" ints { values: [2] }"},
                {F32({1, 2}, {1, 1, 2}), I64({0, 9}, {1, 1, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Normalisation --------------------------------------------------------------------------

TEST(NormTest, BatchNormalizationInference) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "BatchNormalization", {"name: \"epsilon\" f: 0"},
      {F32({1, 2, 3, 4}, {1, 2, 2}), F32({1, 2}, {2}), F32({0, 1}, {2}), F32({1, 3}, {2}),
       F32({1, 4}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  // Channel 0: (x - 1) / 1; channel 1: 2 * (x - 3) / 2 + 1.
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-6), std::vector<float>{0, 1, 1, 2}));
}

TEST(NormTest, BatchNormalizationBadParams) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "BatchNormalization", {},
      {F32(Iota(4), {1, 2, 2}), F32({1, 2, 3}, {3}), F32({0, 1}, {2}), F32({1, 3}, {2}),
       F32({1, 4}, {2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NormTest, LayerNormalizationWithStatistics) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("LayerNormalization", {"name: \"epsilon\" f: 0"},
              {F32({1, 3, 1, 5}, {2, 2}), F32({1, 2}, {2}), F32({0, 1}, {2})}, 3, 17);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-6), std::vector<float>{-1, 3, -1, 3}));
  EXPECT_THAT((*out)[1].shape(), ElementsAre(2, 1));
  EXPECT_THAT(ToFloats((*out)[1]), ElementsAre(2, 3));
  EXPECT_THAT(ToFloats((*out)[2]), Pointwise(FloatNear(1e-5), std::vector<float>{1, 0.5}));
}

// Float32 rows go through fast_math's vector loops: rows longer than a vector and with a
// tail, against a double reference, statistics included.
TEST(NormTest, LayerNormalizationLongRowsMatchDouble) {
  const int64_t rows = 3, cols = 37;
  std::vector<float> x(rows * cols), scale(cols), bias(cols);
  for (int64_t i = 0; i < rows * cols; ++i) x[i] = 50.0f + 3.0f * std::sin(0.53f * i);
  for (int64_t i = 0; i < cols; ++i) {
    scale[i] = 1.0f + 0.05f * static_cast<float>(i % 5);
    bias[i] = 0.1f * static_cast<float>(i % 3);
  }
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("LayerNormalization", {},
              {F32(x, {rows, cols}), F32(scale, {cols}), F32(bias, {cols})}, 3, 17);
  ASSERT_TRUE(out.ok()) << out.status();
  const std::vector<float> y = ToFloats((*out)[0]), mean = ToFloats((*out)[1]),
                           inv = ToFloats((*out)[2]);
  for (int64_t r = 0; r < rows; ++r) {
    double m = 0, sq = 0;
    for (int64_t i = 0; i < cols; ++i) m += x[r * cols + i];
    m /= cols;
    for (int64_t i = 0; i < cols; ++i) sq += (x[r * cols + i] - m) * (x[r * cols + i] - m);
    const double iv = 1.0 / std::sqrt(sq / cols + 1e-5);
    EXPECT_NEAR(mean[r], m, 1e-5 * m);
    EXPECT_NEAR(inv[r], iv, 1e-4 * iv);
    for (int64_t i = 0; i < cols; ++i) {
      const double want = (x[r * cols + i] - m) * iv * scale[i] + bias[i];
      EXPECT_NEAR(y[r * cols + i], want, 2e-4) << "row " << r << " col " << i;
    }
  }
}

TEST(NormTest, LayerNormalizationBadAxisAndScale) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "LayerNormalization", {"name: \"axis\" i: 2"}, {F32(Iota(4), {2, 2}), F32({1, 1}, {2})}, 1,
      17);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("LayerNormalization", {}, {F32(Iota(4), {2, 2}), F32({1, 1, 1}, {3})}, 1, 17);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(NormTest, InstanceNormalizationAndLrn) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("InstanceNormalization", {"name: \"epsilon\" f: 0"},
              {F32({1, 3, 4, 6}, {1, 2, 2}), F32({1, 2}, {2}), F32({0, 1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-5), std::vector<float>{-1, 1, -1, 3}));
  // size 1, alpha 1, beta 1, bias 0: y = x / x^2 = 1 / x.
  out = RunNode("LRN",
                {"name: \"size\" i: 1", "name: \"alpha\" f: 1", "name: \"beta\" f: 1",
                 "name: \"bias\" f: 0"},
                {F32({1, 2, 4, 5}, {1, 2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(FloatNear(1e-6), std::vector<float>{1, 0.5, 0.25, 0.2}));
  out = RunNode("LRN", {}, {F32(Iota(4), {1, 2, 2})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);  // size is required
}

}  // namespace
}  // namespace graphopt::runtime
