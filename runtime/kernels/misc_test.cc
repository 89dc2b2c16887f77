#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/kernels/kernel_test_util.h"

namespace graphopt::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

float Sig(float x) { return 1 / (1 + std::exp(-x)); }

Tensor Strings(std::vector<std::string> values, Shape shape) {
  Tensor t = Tensor::Allocate(v1::DT_STRING, std::move(shape)).value();
  for (size_t i = 0; i < values.size(); ++i) t.strings()[i] = values[i];
  return t;
}

std::vector<std::string> ToStrings(const Tensor& t) {
  return std::vector<std::string>(t.strings(), t.strings() + t.num_elements());
}

MATCHER(Near, "") { return std::fabs(std::get<0>(arg) - std::get<1>(arg)) < 1e-5f; }

// --- RNN / GRU / LSTM -----------------------------------------------------------------------

TEST(RnnTest, ForwardTwoSteps) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("RNN", {"name: \"hidden_size\" i: 1"},
              {F32({1, 2}, {2, 1, 1}), F32({0.5f}, {1, 1, 1}), F32({0.5f}, {1, 1, 1})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  const float h1 = std::tanh(0.5f), h2 = std::tanh(1 + 0.5f * h1);
  EXPECT_EQ((*out)[0].shape(), Shape({2, 1, 1, 1}));
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{h1, h2}));
  EXPECT_THAT(ToFloats((*out)[1]), Pointwise(Near(), std::vector<float>{h2}));
}

TEST(RnnTest, BidirectionalAndLayout) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "RNN", {"name: \"hidden_size\" i: 1", "name: \"direction\" s: \"bidirectional\"",
              "name: \"layout\" i: 1"},
      {F32({1, 2}, {1, 2, 1}), F32({0.5f, 0.5f}, {2, 1, 1}), F32({0.5f, 0.5f}, {2, 1, 1})}, 2);
  ASSERT_TRUE(out.ok()) << out.status();
  const float f1 = std::tanh(0.5f), f2 = std::tanh(1 + 0.5f * f1);
  const float r1 = std::tanh(1.0f), r0 = std::tanh(0.5f + 0.5f * r1);
  EXPECT_EQ((*out)[0].shape(), Shape({1, 2, 2, 1}));  // [batch, seq, dirs, hidden]
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{f1, r0, f2, r1}));
  EXPECT_THAT(ToFloats((*out)[1]), Pointwise(Near(), std::vector<float>{f2, r0}));  // [batch, dirs, hidden]
}

TEST(RnnTest, SequenceLengths) {
  Tensor lens = Tensor::FromVector<int32_t>(v1::DT_INT32, {2, 1}, {2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("RNN", {"name: \"hidden_size\" i: 1"},
              {F32({1, 3, 2, 4}, {2, 2, 1}), F32({0.5f}, {1, 1, 1}), F32({0.5f}, {1, 1, 1}),
               Tensor(), lens},
              2);
  ASSERT_TRUE(out.ok()) << out.status();
  const float a1 = std::tanh(0.5f), a2 = std::tanh(1 + 0.5f * a1), b1 = std::tanh(1.5f);
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{a1, b1, a2, 0.0f}));
  EXPECT_THAT(ToFloats((*out)[1]), Pointwise(Near(), std::vector<float>{a2, b1}));
}

TEST(RnnTest, RejectsBadWeights) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("RNN", {"name: \"hidden_size\" i: 1"},
              {F32({1, 2}, {2, 1, 1}), F32({0.5f, 1}, {1, 1, 2}), F32({0.5f}, {1, 1, 1})}, 2);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("W is"));
}

TEST(RnnTest, RejectsUnknownActivation) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("RNN", {"name: \"activations\" strings { values: \"Bogus\" }"},
              {F32({1}, {1, 1, 1}), F32({0.5f}, {1, 1, 1}), F32({0.5f}, {1, 1, 1})}, 2);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(GruTest, OneStepDefaults) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("GRU", {"name: \"hidden_size\" i: 1"},
              {F32({1}, {1, 1, 1}), F32({0.5f, 0.5f, 0.5f}, {1, 3, 1}),
               F32({0.5f, 0.5f, 0.5f}, {1, 3, 1})},
              2);
  ASSERT_TRUE(out.ok()) << out.status();
  const float z = Sig(0.5f);
  EXPECT_THAT(ToFloats((*out)[1]), Pointwise(Near(), std::vector<float>{(1 - z) * std::tanh(0.5f)}));
}

TEST(GruTest, LinearBeforeResetWithRecurrentBias) {
  Tensor b = F32({0, 0, 0, 0, 0, 1}, {1, 6});  // Rbh = 1
  Tensor h0 = F32({1}, {1, 1, 1});
  for (int lbr : {0, 1}) {
    absl::StatusOr<std::vector<Tensor>> out = RunNode(
        "GRU", {"name: \"hidden_size\" i: 1", absl::StrCat("name: \"linear_before_reset\" i: ", lbr)},
        {F32({1}, {1, 1, 1}), F32({0.5f, 0.5f, 0.5f}, {1, 3, 1}),
         F32({0.5f, 0.5f, 0.5f}, {1, 3, 1}), b, Tensor(), h0},
        2);
    ASSERT_TRUE(out.ok()) << out.status();
    const float z = Sig(1), r = Sig(1);
    const float hh = lbr ? std::tanh(0.5f + r * (0.5f + 1)) : std::tanh(0.5f + r * 0.5f + 1);
    EXPECT_THAT(ToFloats((*out)[1]), Pointwise(Near(), std::vector<float>{(1 - z) * hh + z}));
  }
}

TEST(LstmTest, OneStepWithPeepholes) {
  Tensor w = F32({0.5f, 0.5f, 0.5f, 0.5f}, {1, 4, 1});
  Tensor p = F32({1, 1, 1}, {1, 3});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("LSTM", {"name: \"hidden_size\" i: 1"},
              {F32({1}, {1, 1, 1}), w, w, Tensor(), Tensor(), F32({0}, {1, 1, 1}),
               F32({1}, {1, 1, 1}), p},
              3);
  ASSERT_TRUE(out.ok()) << out.status();
  const float i = Sig(1.5f), f = Sig(1.5f), cc = std::tanh(0.5f);
  const float c = f * 1 + i * cc;
  const float o = Sig(0.5f + c);
  EXPECT_THAT(ToFloats((*out)[1]), Pointwise(Near(), std::vector<float>{o * std::tanh(c)}));
  EXPECT_THAT(ToFloats((*out)[2]), Pointwise(Near(), std::vector<float>{c}));
}

TEST(LstmTest, RejectsWrongInitialState) {
  Tensor w = F32({0.5f, 0.5f, 0.5f, 0.5f}, {1, 4, 1});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("LSTM", {"name: \"hidden_size\" i: 1"},
              {F32({1}, {1, 1, 1}), w, w, Tensor(), Tensor(), F32({0, 0}, {1, 2, 1})}, 3);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("initial_h"));
}

// Each entry of a batch recurs on its own: a batch of three must give, entry by entry, what
// each entry run alone gives (the row bookkeeping of X, the projections, Y). Hidden size 40
// covers the vectorised column blocks and their tails.
void ExpectBatchMatchesEntries(const std::string& op, int64_t gates) {
  const int64_t seq = 4, batch = 3, in = 5, hidden = 40;
  uint32_t state = 12345;
  auto values = [&](int64_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) {
      state = state * 1664525u + 1013904223u;
      x = scale * (static_cast<float>(state >> 8) / 16777216.0f - 0.5f);
    }
    return v;
  };
  const std::vector<float> x = values(seq * batch * in, 2.0f);
  const Tensor w = F32(values(gates * hidden * in, 0.6f), {1, gates * hidden, in});
  const Tensor r = F32(values(gates * hidden * hidden, 0.3f), {1, gates * hidden, hidden});
  const Tensor b = F32(values(2 * gates * hidden, 0.2f), {1, 2 * gates * hidden});
  const std::vector<std::string> attrs = {absl::StrCat("name: \"hidden_size\" i: ", hidden)};
  absl::StatusOr<std::vector<Tensor>> all =
      RunNode(op, attrs, {F32(x, {seq, batch, in}), w, r, b}, 2);
  ASSERT_TRUE(all.ok()) << all.status();
  const std::vector<float> y_all = ToFloats((*all)[0]);  // [seq, 1, batch, hidden]
  for (int64_t e = 0; e < batch; ++e) {
    std::vector<float> xe;
    for (int64_t t = 0; t < seq; ++t) {
      xe.insert(xe.end(), x.begin() + (t * batch + e) * in, x.begin() + (t * batch + e + 1) * in);
    }
    absl::StatusOr<std::vector<Tensor>> one = RunNode(op, attrs, {F32(xe, {seq, 1, in}), w, r, b}, 2);
    ASSERT_TRUE(one.ok()) << one.status();
    const std::vector<float> y_one = ToFloats((*one)[0]);  // [seq, 1, 1, hidden]
    for (int64_t t = 0; t < seq; ++t) {
      for (int64_t j = 0; j < hidden; ++j) {
        EXPECT_NEAR(y_all[(t * batch + e) * hidden + j], y_one[t * hidden + j], 1e-6f)
            << op << " entry " << e << " step " << t << " unit " << j;
      }
    }
  }
}

TEST(RecurrentTest, LstmBatchMatchesEntriesAlone) { ExpectBatchMatchesEntries("LSTM", 4); }
TEST(RecurrentTest, GruBatchMatchesEntriesAlone) { ExpectBatchMatchesEntries("GRU", 3); }
TEST(RecurrentTest, RnnBatchMatchesEntriesAlone) { ExpectBatchMatchesEntries("RNN", 1); }

// A single batch entry on two threads shares each step's recurrent product out by columns: the
// result must be the one-thread result to the bit (hidden 136: above the size from which the
// product is shared, and not a multiple of the 16-column blocks).
void ExpectThreadsAgree(const std::string& op, int64_t gates) {
  const int64_t seq = 5, in = 7, hidden = 136;
  uint32_t state = 777;
  auto values = [&](int64_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) {
      state = state * 1664525u + 1013904223u;
      x = scale * (static_cast<float>(state >> 8) / 16777216.0f - 0.5f);
    }
    return v;
  };
  const std::vector<Tensor> inputs = {
      F32(values(seq * in, 2.0f), {seq, 1, in}),
      F32(values(gates * hidden * in, 0.6f), {1, gates * hidden, in}),
      F32(values(gates * hidden * hidden, 0.2f), {1, gates * hidden, hidden}),
      F32(values(2 * gates * hidden, 0.2f), {1, 2 * gates * hidden})};
  const std::vector<std::string> attrs = {absl::StrCat("name: \"hidden_size\" i: ", hidden)};
  absl::StatusOr<std::vector<Tensor>> one = RunNode(op, attrs, inputs, 2, 0, 1);
  absl::StatusOr<std::vector<Tensor>> two = RunNode(op, attrs, inputs, 2, 0, 2);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(ToFloats((*one)[0]), ToFloats((*two)[0])) << op;
  EXPECT_EQ(ToFloats((*one)[1]), ToFloats((*two)[1])) << op;
}

TEST(RecurrentTest, LstmThreadsAgree) { ExpectThreadsAgree("LSTM", 4); }
TEST(RecurrentTest, GruThreadsAgree) { ExpectThreadsAgree("GRU", 3); }

// --- NonMaxSuppression ----------------------------------------------------------------------

TEST(NonMaxSuppressionTest, SuppressesOverlaps) {
  Tensor boxes = F32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11}, {1, 3, 4});
  Tensor scores = F32({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "NonMaxSuppression", {}, {boxes, scores, I64({10}, {1}), F32({0.5f}, {1}), F32({0}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({2, 3}));
  EXPECT_THAT(ToInts((*out)[0]), ElementsAre(0, 0, 0, 0, 0, 2));
}

TEST(NonMaxSuppressionTest, RejectsBadBoxes) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "NonMaxSuppression", {}, {F32({0, 0, 1, 1}, {1, 4}), F32({0.9f}, {1, 1, 1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("boxes"));
}

TEST(MelWeightMatrixTest, HugeOrNaNEdges) {
  // A 1e38 Hz upper edge put a bin past int64 (its conversion was undefined): bins past the
  // spectrum clamp to its last bin. NaN and infinite edges are rejected.
  auto run = [](float lower, float upper) {
    return RunNode("MelWeightMatrix", {},
                   {I64({4}, {}), I64({16}, {}), I64({8000}, {}), F32({lower}, {}),
                    F32({upper}, {})});
  };
  absl::StatusOr<std::vector<Tensor>> out = run(0, 1e38f);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({9, 4}));
  EXPECT_EQ(run(0, std::nanf("")).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run(std::nanf(""), 100).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(run(0, std::numeric_limits<float>::infinity()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// --- GridSample / RoiAlign ------------------------------------------------------------------

TEST(GridSampleTest, CornersAndCentre) {
  Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor grid = F32({-1, -1, 1, -1, -1, 1, 1, 1, 0, 0}, {1, 1, 5, 2});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("GridSample", {"name: \"align_corners\" i: 1"}, {x, grid});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{1, 2, 3, 4, 2.5f}));
}

TEST(GridSampleTest, ZerosPaddingOutside) {
  Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor grid = F32({5, 5}, {1, 1, 1, 2});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("GridSample", {}, {x, grid});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0));
  out = RunNode("GridSample", {"name: \"padding_mode\" s: \"border\""}, {x, grid});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(4));
}

TEST(GridSampleTest, NaNAndFarOffGridValues) {
  // NaN and 1e30 coordinates were converted to int64 (undefined behaviour); with zeros padding
  // they sample nothing (0), and reflection folds them back into the image.
  Tensor x = F32({1, 2, 3, 4}, {1, 1, 2, 2});
  const float nan = std::nanf("");
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    absl::StatusOr<std::vector<Tensor>> out =
        RunNode("GridSample", {absl::StrCat("name: \"mode\" s: \"", mode, "\"")},
                {x, F32({1e30f, -1e30f}, {1, 1, 1, 2})});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0)) << mode;
    out = RunNode("GridSample",
                  {absl::StrCat("name: \"mode\" s: \"", mode, "\""),
                   "name: \"padding_mode\" s: \"reflection\""},
                  {x, F32({1e30f, nan}, {1, 1, 1, 2})});
    ASSERT_TRUE(out.ok()) << out.status();
  }
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("GridSample", {"name: \"mode\" s: \"nearest\""}, {x, F32({nan, nan}, {1, 1, 1, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(0));
}

TEST(GridSampleTest, RejectsBadGrid) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("GridSample", {}, {F32({1, 2, 3, 4}, {1, 1, 2, 2}), F32({0, 0, 0}, {1, 1, 1, 3})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RoiAlignTest, ConstantImage) {
  Tensor x = F32(std::vector<float>(16, 5.0f), {1, 1, 4, 4});
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "RoiAlign", {"name: \"output_height\" i: 2", "name: \"output_width\" i: 2"},
      {x, F32({0, 0, 3, 3}, {1, 4}), I64({0}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 1, 2, 2}));
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{5, 5, 5, 5}));
}

TEST(RoiAlignTest, RejectsHugeAdaptiveGridAndScale) {
  // ceil(roi height / output height) = 1e30 was converted to int64 (undefined behaviour).
  Tensor x = F32(std::vector<float>(16, 5.0f), {1, 1, 4, 4});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("RoiAlign", {}, {x, F32({0, 0, 3, 1e30f}, {1, 4}), I64({0}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = RunNode("RoiAlign", {"name: \"spatial_scale\" f: inf"},
                {x, F32({0, 0, 3, 3}, {1, 4}), I64({0}, {1})});
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  // A fixed sampling ratio does not depend on the roi's size.
  out = RunNode("RoiAlign", {"name: \"sampling_ratio\" i: 2"},
                {x, F32({0, 0, 3, 1e30f}, {1, 4}), I64({0}, {1})});
  ASSERT_TRUE(out.ok()) << out.status();
}

TEST(RoiAlignTest, RejectsBadBatchIndex) {
  Tensor x = F32(std::vector<float>(16, 5.0f), {1, 1, 4, 4});
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("RoiAlign", {}, {x, F32({0, 0, 3, 3}, {1, 4}), I64({3}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("batch index 3"));
}

// --- Signal ---------------------------------------------------------------------------------

TEST(DftTest, ImpulseAndInverse) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode("DFT", {}, {F32({1, 0, 0, 0}, {1, 4, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 4, 2}));
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{1, 0, 1, 0, 1, 0, 1, 0}));
  out = RunNode("DFT", {"name: \"inverse\" i: 1"}, {(*out)[0]});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{1, 0, 0, 0, 0, 0, 0, 0}));
  out = RunNode("DFT", {"name: \"onesided\" i: 1"}, {F32({1, 2, 3, 4}, {1, 4, 1})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{10, 0, -2, 2, -2, 0}));
}

TEST(DftTest, RejectsComplexAxis) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("DFT", {"name: \"axis\" i: 2"}, {F32({1, 0, 0, 0}, {1, 4, 1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(StftTest, FramesOfAConstant) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("STFT", {}, {F32(std::vector<float>(8, 1.0f), {1, 8, 1}), I64({4}, {}), Tensor(),
                           I64({4}, {})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), Shape({1, 2, 3, 2}));
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{4, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0}));
}

TEST(WindowTest, Hann) {
  Tensor size = Tensor::FromVector<int32_t>(v1::DT_INT32, {4}, {});
  absl::StatusOr<std::vector<Tensor>> out = RunNode("HannWindow", {}, {size});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{0, 0.5f, 1, 0.5f}));
  Tensor three = Tensor::FromVector<int32_t>(v1::DT_INT32, {3}, {});
  out = RunNode("HannWindow", {"name: \"periodic\" i: 0"}, {three});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{0, 1, 0}));
}

TEST(WindowTest, RejectsNonIntegerSize) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode("HammingWindow", {}, {F32({4}, {})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Text -----------------------------------------------------------------------------------

TEST(TfIdfVectorizerTest, UnigramsAndBigrams) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "TfIdfVectorizer",
      {"name: \"min_gram_length\" i: 1", "name: \"max_gram_length\" i: 2",
       "name: \"max_skip_count\" i: 0", "name: \"mode\" s: \"TF\"",
       "name: \"ngram_counts\" ints { values: 0 values: 2 }",
       "name: \"ngram_indexes\" ints { values: 0 values: 1 values: 2 }",
       "name: \"pool_int64s\" ints { values: 1 values: 2 values: 1 values: 2 }"},
      {I64({1, 2, 1, 2}, {4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), ElementsAre(2, 2, 2));
}

TEST(TfIdfVectorizerTest, RejectsMissingMode) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "TfIdfVectorizer",
      {"name: \"min_gram_length\" i: 1", "name: \"max_gram_length\" i: 1",
       "name: \"max_skip_count\" i: 0"},
      {I64({1}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("mode"));
}

TEST(StringNormalizerTest, StopwordsAndUpper) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode(
      "StringNormalizer",
      {"name: \"case_change_action\" s: \"UPPER\"", "name: \"stopwords\" strings { values: \"a\" }"},
      {Strings({"A", "b", "C"}, {3})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToStrings((*out)[0]), ElementsAre("B", "C"));
}

TEST(StringNormalizerTest, RejectsNumbers) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode("StringNormalizer", {}, {F32({1}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Det, random ----------------------------------------------------------------------------

TEST(DetTest, Batched) {
  absl::StatusOr<std::vector<Tensor>> out =
      RunNode("Det", {}, {F32({1, 2, 3, 4, 2, 0, 0, 3}, {2, 2, 2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(ToFloats((*out)[0]), Pointwise(Near(), std::vector<float>{-2, 6}));
}

TEST(DetTest, RejectsNonSquare) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Det", {}, {F32({1, 2, 3, 4, 5, 6}, {2, 3})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RandomTest, SeededAndDeterministic) {
  Tensor p = F32({0, 1, 0.5f, 0.5f, 0.5f, 0.5f}, {6});
  absl::StatusOr<std::vector<Tensor>> a = RunNode("Bernoulli", {"name: \"seed\" f: 3"}, {p});
  absl::StatusOr<std::vector<Tensor>> b = RunNode("Bernoulli", {"name: \"seed\" f: 3"}, {p});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(ToFloats((*a)[0]), ToFloats((*b)[0]));
  EXPECT_EQ(ToFloats((*a)[0])[0], 0);
  EXPECT_EQ(ToFloats((*a)[0])[1], 1);
  absl::StatusOr<std::vector<Tensor>> u = RunNode(
      "RandomUniformLike", {"name: \"low\" f: 2", "name: \"high\" f: 3"}, {F32({0, 0, 0}, {3})});
  ASSERT_TRUE(u.ok()) << u.status();
  for (float v : ToFloats((*u)[0])) {
    EXPECT_GE(v, 2);
    EXPECT_LT(v, 3);
  }
}

TEST(RandomTest, RejectsIntegerProbabilities) {
  absl::StatusOr<std::vector<Tensor>> out = RunNode("Bernoulli", {}, {I64({1}, {1})});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace graphopt::runtime
