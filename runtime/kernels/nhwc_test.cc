// The channels-last kernels (ops/layout_ops.h) against their ONNX ops on the same data laid
// out channels-first: NhwcConv within rounding (oneDNN sums in its own order for each layout),
// the pools bit for bit (they reduce the same taps in the same order).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/layout_ops.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

// [N, C, spatial...] -> [N, spatial..., C] for channels_last, and back otherwise.
Tensor Relayout(const Tensor& t, bool channels_last) {
  const int r = t.rank();
  const int64_t n = t.dim(0);
  const int64_t c = channels_last ? t.dim(1) : t.dim(r - 1);
  Shape shape = {n};
  int64_t plane = 1;
  if (channels_last) {
    for (int i = 2; i < r; ++i) {
      shape.push_back(t.dim(i));
      plane *= t.dim(i);
    }
    shape.push_back(c);
  } else {
    shape.push_back(c);
    for (int i = 1; i + 1 < r; ++i) {
      shape.push_back(t.dim(i));
      plane *= t.dim(i);
    }
  }
  std::vector<float> in = ToFloats(t), out(in.size());
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < plane; ++p) {
      for (int64_t k = 0; k < c; ++k) {
        const int64_t first = (b * c + k) * plane + p, last = (b * plane + p) * c + k;
        if (channels_last) {
          out[last] = in[first];
        } else {
          out[first] = in[last];
        }
      }
    }
  }
  return F32(out, shape);
}

std::string Ints(const char* name, const std::vector<int64_t>& v) {
  std::string s = absl::StrCat("name: \"", name, "\" ints { values: [");
  for (size_t i = 0; i < v.size(); ++i) absl::StrAppend(&s, i ? ", " : "", v[i]);
  return s + "] }";
}

TEST(NhwcConvTest, MatchesConvOnTheSameData) {
  struct Case {
    int n, c, m, h, w, kh, kw, group, stride, dilation;
    std::vector<int64_t> pads;
    bool bias;
  };
  const Case cases[] = {
      {1, 3, 16, 30, 29, 7, 7, 1, 2, 1, {3, 3, 3, 3}, true},    // an image's first layer
      {2, 16, 24, 14, 14, 1, 1, 1, 1, 1, {0, 0, 0, 0}, true},   // 1x1 (narrow: own rows on AVX-512)
      {1, 32, 16, 12, 10, 1, 1, 1, 1, 1, {0, 0, 0, 0}, true},   // 1x1, narrow
      {1, 20, 40, 7, 9, 1, 1, 1, 1, 1, {0, 0, 0, 0}, false},    // 1x1, narrow, no bias
      {1, 20, 48, 7, 9, 1, 1, 1, 1, 1, {0, 0, 0, 0}, true},     // 1x1, oneDNN
      {1, 24, 8, 13, 15, 1, 1, 1, 2, 1, {0, 0, 0, 0}, false},   // 1x1, stride 2
      {1, 32, 32, 17, 16, 3, 3, 32, 1, 1, {1, 1, 1, 1}, true},  // depthwise
      {1, 48, 48, 20, 21, 3, 3, 48, 2, 1, {1, 0, 2, 1}, true},  // depthwise, stride 2, asymmetric
      {2, 12, 18, 11, 9, 3, 2, 3, 1, 2, {2, 1, 2, 0}, true},    // grouped, dilated
      {1, 20, 36, 9, 9, 5, 5, 1, 1, 1, {2, 2, 2, 2}, false},    // 5x5
  };
  int seed = 100;
  for (const Case& t : cases) {
    const Tensor x = F32(Random(int64_t{t.n} * t.c * t.h * t.w, ++seed), {t.n, t.c, t.h, t.w});
    const Tensor w = F32(Random(int64_t{t.m} * (t.c / t.group) * t.kh * t.kw, ++seed),
                         {t.m, t.c / t.group, t.kh, t.kw});
    const Tensor b = t.bias ? F32(Random(t.m, ++seed), {t.m}) : Tensor();
    const std::vector<std::string> attrs = {
        absl::StrCat("name: \"group\" i: ", t.group), Ints("strides", {t.stride, t.stride}),
        Ints("dilations", {t.dilation, t.dilation}), Ints("pads", t.pads)};
    absl::StatusOr<std::vector<Tensor>> want = RunNode("Conv", attrs, {x, w, b});
    ASSERT_TRUE(want.ok()) << want.status();
    const Tensor expected = Relayout((*want)[0], true);
    std::vector<float> first;
    for (int threads : {1, 2}) {
      absl::StatusOr<std::vector<Tensor>> got = RunDomainNode(
          kLayoutDomain, kNhwcConvOp, attrs, {Relayout(x, true), w, b}, 1, 0, threads);
      ASSERT_TRUE(got.ok()) << got.status();
      const std::string label = absl::StrCat("c", t.c, " m", t.m, " k", t.kh, "x", t.kw,
                                             " group ", t.group, " threads ", threads);
      EXPECT_EQ((*got)[0].shape(), expected.shape()) << label;
      EXPECT_THAT(ToFloats((*got)[0]), Pointwise(FloatNear(1e-4), ToFloats(expected))) << label;
      if (threads == 1) {
        first = ToFloats((*got)[0]);
      } else {
        EXPECT_EQ(ToFloats((*got)[0]), first) << "the thread count changed the results: " << label;
      }
    }
  }
}

// With 'winograd' set, a 3x3 stride-1 convolution runs Winograd's F(2x2, 3x3): another
// rounding than the direct one (so the results differ), within 1e-5 of the largest output.
// Where oneDNN has no Winograd kernel (stride 2) the attribute changes nothing.
TEST(NhwcConvTest, WinogradAgreesWithTheDirectConvolution) {
  const Tensor x = Relayout(F32(Random(64 * 28 * 28, 3), {1, 64, 28, 28}), true);
  const Tensor w = F32(Random(64 * 64 * 9, 4), {64, 64, 3, 3});
  const Tensor b = F32(Random(64, 5), {64});
  for (int stride : {1, 2}) {
    std::vector<std::string> attrs = {Ints("pads", {1, 1, 1, 1}), Ints("strides", {stride, stride})};
    absl::StatusOr<std::vector<Tensor>> direct =
        RunDomainNode(kLayoutDomain, kNhwcConvOp, attrs, {x, w, b});
    ASSERT_TRUE(direct.ok()) << direct.status();
    attrs.push_back("name: \"winograd\" i: 1");
    for (int threads : {1, 2}) {
      absl::StatusOr<std::vector<Tensor>> wino =
          RunDomainNode(kLayoutDomain, kNhwcConvOp, attrs, {x, w, b}, 1, 0, threads);
      ASSERT_TRUE(wino.ok()) << wino.status();
      const std::vector<float> d = ToFloats((*direct)[0]), g = ToFloats((*wino)[0]);
      ASSERT_EQ(d.size(), g.size());
      float largest = 0, error = 0;
      for (size_t i = 0; i < d.size(); ++i) {
        largest = std::max(largest, std::abs(d[i]));
        error = std::max(error, std::abs(d[i] - g[i]));
      }
      EXPECT_LE(error, 1e-5f * largest) << "stride " << stride << " threads " << threads;
      if (stride == 1) {
        EXPECT_GT(error, 0.0f) << "no Winograd kernel ran";
      } else {
        EXPECT_EQ(error, 0.0f) << "stride 2 has no Winograd kernel: direct";
      }
    }
  }
}

TEST(NhwcConvTest, OneSpatialDim) {
  const Tensor x = F32(Random(2 * 6 * 17, 7), {2, 6, 17});
  const Tensor w = F32(Random(5 * 6 * 3, 8), {5, 6, 3});
  const std::vector<std::string> attrs = {Ints("pads", {1, 1}), Ints("strides", {2})};
  absl::StatusOr<std::vector<Tensor>> want = RunNode("Conv", attrs, {x, w});
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::vector<Tensor>> got =
      RunDomainNode(kLayoutDomain, kNhwcConvOp, attrs, {Relayout(x, true), w});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(ToFloats((*got)[0]),
              Pointwise(FloatNear(1e-4), ToFloats(Relayout((*want)[0], true))));
}

TEST(NhwcConvTest, BadInputsNameTheNode) {
  const Tensor w = F32(Random(8 * 4 * 9, 1), {8, 4, 3, 3});
  absl::StatusOr<std::vector<Tensor>> r =
      RunDomainNode(kLayoutDomain, kNhwcConvOp, {}, {F32(Random(5 * 5 * 3, 2), {1, 5, 5, 3}), w});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'n'"));
  EXPECT_THAT(r.status().message(), HasSubstr("[1,5,5,3]"));
  r = RunDomainNode(kLayoutDomain, kNhwcConvOp, {}, {F32({1, 2}, {1, 2}), w});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("[N, spatial..., C]"));
  r = RunDomainNode(kLayoutDomain, kNhwcConvOp, {},
                    {Tensor::FromVector<double>(v1::DT_FLOAT64, std::vector<double>(100, 1.0),
                                                {1, 5, 5, 4}),
                     w});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("float32"));
}

TEST(NhwcPoolTest, PoolsMatchTheirOnnxOpsBitForBit) {
  struct Case {
    const char* op;
    const char* nhwc_op;
    std::vector<int64_t> kernel, strides, pads;
    int ceil, include_pad;
    std::vector<int64_t> dilations = {1, 1};
  };
  const Case cases[] = {
      {"MaxPool", kNhwcMaxPoolOp, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},
      {"MaxPool", kNhwcMaxPoolOp, {2, 3}, {2, 1}, {0, 1, 1, 0}, 1, 0},
      {"MaxPool", kNhwcMaxPoolOp, {2, 2}, {1, 2}, {1, 0, 0, 1}, 0, 0, {2, 3}},
      {"AveragePool", kNhwcAveragePoolOp, {3, 3}, {2, 2}, {1, 1, 1, 1}, 0, 0},
      {"AveragePool", kNhwcAveragePoolOp, {3, 3}, {1, 1}, {1, 1, 1, 1}, 0, 1},
      {"AveragePool", kNhwcAveragePoolOp, {3, 2}, {2, 2}, {0, 1, 2, 1}, 1, 1},
      {"AveragePool", kNhwcAveragePoolOp, {2, 2}, {2, 2}, {0, 0, 0, 0}, 1, 0},
  };
  const Tensor x = F32(Random(2 * 19 * 13 * 11, 5), {2, 19, 13, 11});
  for (const Case& t : cases) {
    std::vector<std::string> attrs = {Ints("kernel_shape", t.kernel), Ints("strides", t.strides),
                                      Ints("pads", t.pads),
                                      absl::StrCat("name: \"ceil_mode\" i: ", t.ceil)};
    if (t.dilations != std::vector<int64_t>{1, 1}) attrs.push_back(Ints("dilations", t.dilations));
    if (t.include_pad) attrs.push_back("name: \"count_include_pad\" i: 1");
    absl::StatusOr<std::vector<Tensor>> want = RunNode(t.op, attrs, {x});
    ASSERT_TRUE(want.ok()) << want.status();
    for (int threads : {1, 2}) {
      absl::StatusOr<std::vector<Tensor>> got =
          RunDomainNode(kLayoutDomain, t.nhwc_op, attrs, {Relayout(x, true)}, 1, 0, threads);
      ASSERT_TRUE(got.ok()) << got.status();
      const Tensor expected = Relayout((*want)[0], true);
      EXPECT_EQ((*got)[0].shape(), expected.shape()) << t.nhwc_op;
      EXPECT_THAT(ToFloats((*got)[0]), ElementsAreArray(ToFloats(expected)))
          << t.nhwc_op << " ceil " << t.ceil << " threads " << threads;
    }
  }
}

TEST(NhwcPoolTest, GlobalPoolsMatchTheirOnnxOpsBitForBit) {
  // 150 channels: two full blocks of 64 and a partial one.
  const Tensor x = F32(Random(2 * 150 * 7 * 6, 9), {2, 150, 7, 6});
  for (const auto& [op, nhwc_op] : {std::pair{"GlobalAveragePool", kNhwcGlobalAveragePoolOp},
                                    std::pair{"GlobalMaxPool", kNhwcGlobalMaxPoolOp}}) {
    absl::StatusOr<std::vector<Tensor>> want = RunNode(op, {}, {x});
    ASSERT_TRUE(want.ok()) << want.status();
    absl::StatusOr<std::vector<Tensor>> got =
        RunDomainNode(kLayoutDomain, nhwc_op, {}, {Relayout(x, true)}, 1, 0, 2);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].shape(), Shape({2, 1, 1, 150})) << nhwc_op;
    EXPECT_THAT(ToFloats((*got)[0]), ElementsAreArray(ToFloats((*want)[0]))) << nhwc_op;
  }
}

TEST(NhwcPoolTest, BadInputsNameTheNode) {
  absl::StatusOr<std::vector<Tensor>> r = RunDomainNode(
      kLayoutDomain, kNhwcMaxPoolOp, {Ints("kernel_shape", {2, 2})}, {F32({1, 2, 3, 4}, {2, 2})});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("[N, spatial..., C]"));
  r = RunDomainNode(kLayoutDomain, kNhwcMaxPoolOp, {}, {F32(Random(16, 1), {1, 4, 4, 1})});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("kernel_shape"));
}

}  // namespace
}  // namespace graphopt::runtime
