#include "passes/channels_last_pass.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "ops/layout_ops.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::InputText;
using ::graphopt::testing::IntsText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::TypeOf;
using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::FloatTensorProto;
using ::graphopt::testing::Int64TensorProto;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::WithInitializers;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ChannelsLastPassTest : public ::testing::Test {
 protected:
  v1::Graph Run(const std::string& text, std::string* message = nullptr) {
    PipelineResult result;
    absl::StatusOr<v1::Graph> out = env_.Run(text, {"channels_last"}, &result);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return v1::Graph();
    for (const PassRun& run : result.runs) {
      if (run.name == "channels_last" && message != nullptr) {
        *message = absl::StrJoin(run.messages, "\n");
      }
    }
    return *out;
  }

  const v1::Node* Producer(const v1::Graph& g, const std::string& value) {
    for (const v1::Node& n : g.nodes()) {
      for (const std::string& o : n.outputs()) {
        if (o == value) return &n;
      }
    }
    return nullptr;
  }

  PassTestEnv env_;
};

// A residual block: conv-relu-conv, the sum with the block's input, relu, then pooling and a
// classifier. One Transpose in at the image; none out: Flatten of the pooled [N, C, 1, 1] gives
// the classifier the same [N, C] from the channels-last pool.
std::string ResidualBlock() {
  return InputText("x", {1, 8, 16, 16}) + InputText("w1", {8, 8, 3, 3}) + InputText("b1", {8}) +
         InputText("w2", {8, 8, 3, 3}) + InputText("fc", {8, 10}) +
         NodeText("Conv", {"x", "w1", "b1"}, "c1", IntsText("pads", {1, 1, 1, 1})) +
         NodeText("Relu", {"c1"}, "r1") +
         NodeText("Conv", {"r1", "w2"}, "c2", IntsText("pads", {1, 1, 1, 1})) +
         NodeText("Add", {"c2", "x"}, "sum") + NodeText("Relu", {"sum"}, "r2") +
         NodeText("MaxPool", {"r2"}, "pool",
              IntsText("kernel_shape", {2, 2}) + " " + IntsText("strides", {2, 2})) +
         NodeText("GlobalAveragePool", {"pool"}, "gap") + NodeText("Flatten", {"gap"}, "flat") +
         NodeText("MatMul", {"flat", "fc"}, "y") + OutputText("y");
}

TEST_F(ChannelsLastPassTest, ResidualBlockRunsChannelsLastBetweenTwoTransposes) {
  std::string message;
  const v1::Graph out = Run(ResidualBlock(), &message);
  std::vector<std::string> ops;
  int transposes = 0;
  for (const v1::Node& n : out.nodes()) {
    ops.push_back(n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type());
    transposes += n.op_type() == "Transpose";
  }
  EXPECT_EQ(transposes, 1) << absl::StrJoin(ops, " ");
  EXPECT_THAT(message, HasSubstr("converted 8 nodes to channels-last (2 Conv, 0 of them Winograd, 2 "
                                 "pools, 3 elementwise); transposes: 1 in, 0 out"));
  // The image goes in once, although two nodes read it (the first Conv and the residual Add).
  const v1::Node* in = Producer(out, "x_nhwc");
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(in->op_type(), "Transpose");
  EXPECT_EQ(TypeOf(out, "x_nhwc"), "float32[1,16,16,8]");
  const v1::Node* conv = Producer(out, "c1_nhwc");
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->domain(), kLayoutDomain);
  EXPECT_EQ(conv->op_type(), kNhwcConvOp);
  EXPECT_THAT(conv->inputs(), ElementsAre("x_nhwc", "w1", "b1"));
  const v1::Node* sum = Producer(out, "sum_nhwc");
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->op_type(), "Add");
  EXPECT_THAT(sum->inputs(), ElementsAre("c2_nhwc", "x_nhwc"));
  EXPECT_EQ(TypeOf(out, "pool_nhwc"), "float32[1,8,8,8]");
  EXPECT_EQ(TypeOf(out, "gap_nhwc"), "float32[1,1,1,8]");
  const v1::Node* flat = Producer(out, "flat");
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ(flat->op_type(), "Flatten");
  EXPECT_EQ(flat->inputs(0), "gap_nhwc");
  EXPECT_EQ(Producer(out, "gap"), nullptr);
  EXPECT_EQ(TypeOf(out, "flat"), "float32[1,8]");
  EXPECT_EQ(TypeOf(out, "y"), "float32[1,10]");
}

TEST_F(ChannelsLastPassTest, IsDeterministic) {
  const std::string a = Run(ResidualBlock()).SerializeAsString();
  const std::string b = Run(ResidualBlock()).SerializeAsString();
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
}

// An activation read outside the region (a graph output, a Reshape) keeps its channels-first
// value through a Transpose back; readers inside the region use the channels-last one.
TEST_F(ChannelsLastPassTest, ReadersOutsideKeepTheirLayout) {
  std::string message;
  const v1::Graph out =
      Run(InputText("x", {1, 4, 8, 8}) + InputText("w", {4, 4, 1, 1}) + InputText("shape", {2}, "DT_INT64") +
              NodeText("Conv", {"x", "w"}, "c") + NodeText("Relu", {"c"}, "r") +
              NodeText("Conv", {"r", "w"}, "c2") + NodeText("Reshape", {"r", "shape"}, "flat") +
              OutputText("r") + OutputText("c2") + OutputText("flat"),
          &message);
  EXPECT_THAT(message, HasSubstr("(2 Conv, 0 of them Winograd, 0 pools, 1 elementwise); transposes: 1 in, 2 out"));
  const v1::Node* r = Producer(out, "r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op_type(), "Transpose");
  EXPECT_EQ(TypeOf(out, "r"), "float32[1,4,8,8]");
  const v1::Node* c2 = Producer(out, "c2_nhwc");
  ASSERT_NE(c2, nullptr);
  EXPECT_EQ(c2->inputs(0), "r_nhwc");
  const v1::Node* flat = Producer(out, "flat");
  ASSERT_NE(flat, nullptr);
  EXPECT_EQ(flat->inputs(0), "r");
}

// What keeps its layout: a per-channel operand ends the region before the Add; float64 and
// 1-D convolutions, and an elementwise op none of whose inputs is channels-last, stay ONNX ops.
TEST_F(ChannelsLastPassTest, LeavesWhatItCannotRelayout) {
  std::string message;
  const v1::Graph out =
      Run(InputText("x", {1, 4, 8, 8}) + InputText("w", {4, 4, 3, 3}) + InputText("cb", {4, 1, 1}) +
              InputText("d", {1, 4, 8, 8}, "DT_FLOAT64") + InputText("dw", {4, 4, 3, 3}, "DT_FLOAT64") +
              InputText("s", {1, 4, 9}) + InputText("sw", {4, 4, 3}) +
              NodeText("Conv", {"x", "w"}, "c", IntsText("pads", {1, 1, 1, 1})) +
              NodeText("Add", {"c", "cb"}, "biased") + NodeText("Relu", {"x"}, "plain") +
              NodeText("Conv", {"d", "dw"}, "c64") + NodeText("Conv", {"s", "sw"}, "c1d") +
              OutputText("biased") + OutputText("plain") + OutputText("c64") + OutputText("c1d"),
          &message);
  EXPECT_THAT(message, HasSubstr("converted 1 nodes"));
  EXPECT_EQ(Producer(out, "biased")->op_type(), "Add");
  EXPECT_EQ(Producer(out, "biased")->inputs(0), "c");
  EXPECT_EQ(Producer(out, "c")->op_type(), "Transpose");
  EXPECT_EQ(Producer(out, "plain")->op_type(), "Relu");
  EXPECT_EQ(Producer(out, "c64")->op_type(), "Conv");
  EXPECT_EQ(Producer(out, "c1d")->op_type(), "Conv");
}

TEST_F(ChannelsLastPassTest, MaxPoolWithIndicesStays) {
  const v1::Graph out = Run(InputText("x", {1, 4, 8, 8}) +
                            "nodes { op_type: \"MaxPool\" name: \"p\" inputs: \"x\" outputs: "
                            "\"y\" outputs: \"i\" " +
                            IntsText("kernel_shape", {2, 2}) + " }\n" + OutputText("y") + OutputText("i"));
  EXPECT_THAT(OpTypes(out), ElementsAre("MaxPool"));
}

TEST_F(ChannelsLastPassTest, ScalarOperandsFollowTheRegion) {
  std::string message;
  const v1::Graph out = Run(
      InputText("x", {1, 4, 8, 8}) + InputText("w", {4, 4, 1, 1}) + InputText("lo", {}) + InputText("hi", {1}) +
          NodeText("Conv", {"x", "w"}, "c") + NodeText("Clip", {"c", "lo", "hi"}, "clipped") +
          NodeText("Conv", {"clipped", "w"}, "y") + OutputText("y"),
      &message);
  EXPECT_THAT(message, HasSubstr("(2 Conv, 0 of them Winograd, 0 pools, 1 elementwise); transposes: 1 in, 1 out"));
  const v1::Node* clip = Producer(out, "clipped_nhwc");
  ASSERT_NE(clip, nullptr);
  EXPECT_THAT(clip->inputs(), ElementsAre("c_nhwc", "lo", "hi"));
}

// A squeeze-excite block: the scale [1, C, 1, 1], computed from the pooled activations, stays
// channels-last ([1, 1, 1, C]) and so does the Mul broadcasting it over the image: no Transpose
// inside the block. A per-channel constant operand is transposed (C values).
TEST_F(ChannelsLastPassTest, BroadcastOperandsFollowTheRegion) {
  std::string message;
  const v1::Graph out = Run(
      InputText("x", {1, 4, 8, 8}) + InputText("w", {4, 4, 1, 1}) + InputText("k", {1, 4, 1, 1}) +
          NodeText("Conv", {"x", "w"}, "c") + NodeText("GlobalAveragePool", {"c"}, "g") +
          NodeText("Conv", {"g", "w"}, "s0") + NodeText("Sigmoid", {"s0"}, "s") +
          NodeText("Mul", {"c", "s"}, "m") + NodeText("Add", {"m", "k"}, "a") +
          NodeText("Conv", {"a", "w"}, "y") + OutputText("y"),
      &message);
  EXPECT_THAT(message, HasSubstr("(3 Conv, 0 of them Winograd, 1 pools, 3 elementwise); "
                                 "transposes: 2 in, 1 out"));
  const v1::Node* mul = Producer(out, "m_nhwc");
  ASSERT_NE(mul, nullptr);
  EXPECT_THAT(mul->inputs(), ElementsAre("c_nhwc", "s_nhwc"));
}

// Winograd where it pays: 3x3, stride 1, one group, 64 or more channels in and out, outputs of
// 28x28 or more; the option turns it off.
TEST_F(ChannelsLastPassTest, WinogradForLargeThreeByThreeConvolutions) {
  const std::string graph =
      InputText("x", {1, 64, 28, 28}) + InputText("w", {64, 64, 3, 3}) + InputText("w32", {32, 64, 3, 3}) +
      NodeText("Conv", {"x", "w"}, "wide", IntsText("pads", {1, 1, 1, 1})) +
      NodeText("Conv", {"x", "w32"}, "narrow", IntsText("pads", {1, 1, 1, 1})) +
      NodeText("Conv", {"x", "w"}, "strided", IntsText("pads", {1, 1, 1, 1}) + " " + IntsText("strides", {2, 2})) +
      NodeText("Conv", {"x", "w"}, "small", IntsText("pads", {0, 0, 0, 0})) +  // 26x26
      OutputText("wide") + OutputText("narrow") + OutputText("strided") + OutputText("small");
  auto winograd = [&](const v1::Graph& g, const std::string& out) {
    for (const v1::Attribute& a : Producer(g, out + "_nhwc")->attributes()) {
      if (a.name() == "winograd") return a.i();
    }
    return int64_t{0};
  };
  std::string message;
  const v1::Graph on = Run(graph, &message);
  EXPECT_THAT(message, HasSubstr("(4 Conv, 1 of them Winograd"));
  EXPECT_EQ(winograd(on, "wide"), 1);
  EXPECT_EQ(winograd(on, "narrow"), 0);
  EXPECT_EQ(winograd(on, "strided"), 0);
  EXPECT_EQ(winograd(on, "small"), 0);
  absl::StatusOr<v1::Graph> off = env_.RunSpecs(graph, {{"channels_last", {{"winograd", "0"}}}});
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_EQ(winograd(*off, "wide"), 0);
  absl::StatusOr<v1::Graph> bad = env_.RunSpecs(graph, {{"channels_last", {{"winograd", "yes"}}}});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("winograd"));
}

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

// Runs channels_last (winograd off: direct convolutions round alike) and checks the outputs
// against the original graph's within 1e-4 (relative); returns the graph and the pass's note.
v1::Graph RunAndCompare(const std::string& text, const Inputs& inputs, std::string* message) {
  PassTestEnv env;
  PipelineResult result;
  absl::StatusOr<v1::Graph> out = testing::OptimizeAndCompare(
      env, text, {{"channels_last", {{"winograd", "0"}}}}, inputs, /*bit_exact=*/false, 1e-4,
      &result);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return v1::Graph();
  for (const PassRun& run : result.runs) {
    if (run.name == "channels_last") *message = absl::StrJoin(run.messages, "\n");
  }
  return *std::move(out);
}

int CountOps(const v1::Graph& g, const std::string& op) {
  int n = 0;
  for (const v1::Node& node : g.nodes()) n += node.op_type() == op;
  return n;
}

std::string BnText(const std::string& x, const std::string& p, const std::string& y) {
  return NodeText("BatchNormalization", {x, p + "scale", p + "b", p + "mean", p + "var"}, y);
}

std::vector<v1::Tensor> BnParams(const std::string& p, int64_t c, uint32_t seed) {
  std::vector<float> var = SeededFloats(c, seed + 3);
  for (float& v : var) v = v * v + 0.5f;
  return {FloatTensorProto(p + "scale", {c}, SeededFloats(c, seed)),
          FloatTensorProto(p + "b", {c}, SeededFloats(c, seed + 1)),
          FloatTensorProto(p + "mean", {c}, SeededFloats(c, seed + 2)),
          FloatTensorProto(p + "var", {c}, var)};
}

// A DenseNet layer: the block's features and a new convolution's are concatenated, then
// normalised (a BatchNormalization no Conv precedes: it cannot fold) and activated before the
// next convolution. Concat and the BatchNormalization (as a per-channel scale and shift) stay
// channels-last: one Transpose in, one out, none around them.
TEST_F(ChannelsLastPassTest, ConcatAndBatchNormStayChannelsLast) {
  std::vector<v1::Tensor> init = BnParams("bn_", 12, 20);
  init.push_back(FloatTensorProto("w0", {8, 3, 3, 3}, SeededFloats(8 * 27, 1)));
  init.push_back(FloatTensorProto("w1", {4, 8, 3, 3}, SeededFloats(4 * 72, 2)));
  init.push_back(FloatTensorProto("w2", {5, 12, 1, 1}, SeededFloats(60, 3)));
  const std::string text = WithInitializers(
      InputText("x", {1, 3, 6, 6}) +
          NodeText("Conv", {"x", "w0"}, "f", IntsText("pads", {1, 1, 1, 1})) +
          NodeText("Conv", {"f", "w1"}, "g", IntsText("pads", {1, 1, 1, 1})) +
          NodeText("Concat", {"f", "g"}, "cat", "attributes { name: \"axis\" i: 1 }") +
          BnText("cat", "bn_", "n") + NodeText("Relu", {"n"}, "r") +
          NodeText("Conv", {"r", "w2"}, "y") + OutputText("y"),
      init);
  std::string message;
  const v1::Graph out =
      RunAndCompare(text, {{"x", FloatTensor({1, 3, 6, 6}, SeededFloats(108, 7))}}, &message);
  EXPECT_EQ(CountOps(out, "Transpose"), 2);
  EXPECT_EQ(CountOps(out, "BatchNormalization"), 0);
  EXPECT_THAT(message, HasSubstr("transposes: 1 in, 1 out; kept channels-last: 1 "
                                 "BatchNormalization as scale and shift, 1 "
                                 "Concat/Split/Slice/reductions/Flatten"));
  const v1::Node* cat = Producer(out, "cat_nhwc");
  ASSERT_NE(cat, nullptr);
  EXPECT_THAT(cat->inputs(), ElementsAre("f_nhwc", "g_nhwc"));
  EXPECT_EQ(cat->attributes(0).i(), 3);
  EXPECT_EQ(TypeOf(out, "cat_nhwc"), "float32[1,6,6,12]");
  const v1::Node* add = Producer(out, "n_nhwc");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op_type(), "Add");
  // The shift is one value per channel; the parameters it and the scale replace are gone.
  bool shift = false;
  for (const v1::Tensor& t : out.initializers()) {
    EXPECT_NE(t.name(), "bn_var");
    if (t.name() == add->inputs(1)) shift = t.dims_size() == 1 && t.dims(0) == 12;
  }
  EXPECT_TRUE(shift);
}

// A BatchNormalization of a channels-first value (nothing computes it channels-last) stays.
TEST_F(ChannelsLastPassTest, BatchNormOfChannelsFirstValueStays) {
  std::string message;
  const v1::Graph out = RunAndCompare(
      WithInitializers(InputText("x", {1, 4, 5, 5}) + BnText("x", "bn_", "y") + OutputText("y"),
                       BnParams("bn_", 4, 5)),
      {{"x", FloatTensor({1, 4, 5, 5}, SeededFloats(100, 4))}}, &message);
  EXPECT_THAT(OpTypes(out), ElementsAre("BatchNormalization"));
}

// A ShuffleNet v2 unit: the input split in two channel halves (Slice, or Split), one half
// convolved, the halves concatenated, then the channel shuffle (Reshape to [N, 2, C/2, H, W],
// Transpose(0, 2, 1, 3, 4), Reshape back). Everything stays channels-last.
TEST_F(ChannelsLastPassTest, SplitSliceAndChannelShuffleStayChannelsLast) {
  for (const bool split : {false, true}) {
    SCOPED_TRACE(split ? "Split" : "Slice");
    std::vector<v1::Tensor> init = {
        FloatTensorProto("w0", {8, 3, 1, 1}, SeededFloats(24, 1)),
        FloatTensorProto("w1", {4, 4, 3, 3}, SeededFloats(144, 2)),
        FloatTensorProto("w2", {6, 8, 1, 1}, SeededFloats(48, 3)),
        Int64TensorProto("s0", {1}, {0}), Int64TensorProto("s4", {1}, {4}),
        Int64TensorProto("s8", {1}, {8}), Int64TensorProto("ax", {1}, {1}),
        Int64TensorProto("grouped", {5}, {1, 2, 4, 5, 5}),
        Int64TensorProto("merged", {4}, {1, 8, 5, 5})};
    std::string halves;
    if (split) {
      halves = "nodes { op_type: \"Split\" name: \"split\" inputs: \"f\" outputs: \"a\" "
               "outputs: \"b\" attributes { name: \"axis\" i: 1 } }\n";
    } else {
      halves = NodeText("Slice", {"f", "s0", "s4", "ax"}, "a") +
               NodeText("Slice", {"f", "s4", "s8", "ax"}, "b");
    }
    const std::string text = WithInitializers(
        InputText("x", {1, 3, 5, 5}) + NodeText("Conv", {"x", "w0"}, "f") + halves +
            NodeText("Conv", {"b", "w1"}, "bc", IntsText("pads", {1, 1, 1, 1})) +
            NodeText("Relu", {"bc"}, "br") +
            NodeText("Concat", {"a", "br"}, "cat", "attributes { name: \"axis\" i: -3 }") +
            NodeText("Reshape", {"cat", "grouped"}, "g5") +
            NodeText("Transpose", {"g5"}, "t5", IntsText("perm", {0, 2, 1, 3, 4})) +
            NodeText("Reshape", {"t5", "merged"}, "shuffled") +
            NodeText("Conv", {"shuffled", "w2"}, "y") + OutputText("y"),
        init);
    std::string message;
    const v1::Graph out =
        RunAndCompare(text, {{"x", FloatTensor({1, 3, 5, 5}, SeededFloats(75, 8))}}, &message);
    EXPECT_THAT(message, HasSubstr("transposes: 1 in, 1 out"));
    EXPECT_THAT(message, HasSubstr(absl::StrCat(split ? 2 : 3, " Concat/Split/Slice/reductions/",
                                                "Flatten, 1 channel shuffles")));
    // Three Transposes: the image in, the shuffle's own (now of the pixel's channels), out.
    EXPECT_EQ(CountOps(out, "Transpose"), 3);
    EXPECT_EQ(TypeOf(out, "shuffled_nhwc"), "float32[1,5,5,8]");
  }
}

// Global pooling written as a reduction over the spatial axes (ShuffleNet's mean([2, 3])):
// without kept dims its [N, C] result is the same in either layout, so no Transpose is left;
// with kept dims the result is a channels-last twin that the next Conv reads.
TEST_F(ChannelsLastPassTest, SpatialReductionsStayChannelsLast) {
  const std::string text = WithInitializers(
      InputText("x", {1, 3, 5, 5}) + NodeText("Conv", {"x", "w0"}, "f") +
          NodeText("ReduceMean", {"f"}, "pooled",
                   IntsText("axes", {2, 3}) + " attributes { name: \"keepdims\" i: 0 }") +
          NodeText("ReduceMax", {"f"}, "m", IntsText("axes", {-1, -2})) +
          NodeText("Conv", {"m", "w1"}, "y") + OutputText("pooled") + OutputText("y"),
      {FloatTensorProto("w0", {8, 3, 1, 1}, SeededFloats(24, 1)),
       FloatTensorProto("w1", {4, 8, 1, 1}, SeededFloats(32, 2))});
  std::string message;
  const v1::Graph out =
      RunAndCompare(text, {{"x", FloatTensor({1, 3, 5, 5}, SeededFloats(75, 8))}}, &message);
  EXPECT_THAT(message, HasSubstr("transposes: 1 in, 1 out; kept channels-last: 0 "
                                 "BatchNormalization as scale and shift, 2 "
                                 "Concat/Split/Slice/reductions/Flatten"));
  const v1::Node* pooled = Producer(out, "pooled");
  ASSERT_NE(pooled, nullptr);
  EXPECT_EQ(pooled->op_type(), "ReduceMean");
  EXPECT_EQ(pooled->inputs(0), "f_nhwc");
  EXPECT_EQ(TypeOf(out, "m_nhwc"), "float32[1,1,1,8]");
}

// A Concat of a channels-last result and a channels-first value (a graph input) takes the
// latter in through a Transpose (no more than the result's would cost) and stays channels-last.
TEST_F(ChannelsLastPassTest, ConcatTransposesInWhatIsChannelsFirst) {
  const std::string text = WithInitializers(
      InputText("x", {1, 3, 4, 4}) + InputText("side", {1, 2, 4, 4}) +
          NodeText("Conv", {"x", "w0"}, "f") +
          NodeText("Concat", {"side", "f"}, "cat", "attributes { name: \"axis\" i: 1 }") +
          NodeText("Conv", {"cat", "w1"}, "y") + OutputText("y"),
      {FloatTensorProto("w0", {5, 3, 1, 1}, SeededFloats(15, 1)),
       FloatTensorProto("w1", {4, 7, 1, 1}, SeededFloats(28, 2))});
  std::string message;
  const v1::Graph out = RunAndCompare(text,
                                      {{"x", FloatTensor({1, 3, 4, 4}, SeededFloats(48, 3))},
                                       {"side", FloatTensor({1, 2, 4, 4}, SeededFloats(32, 4))}},
                                      &message);
  EXPECT_THAT(message, HasSubstr("transposes: 2 in, 1 out"));
  const v1::Node* cat = Producer(out, "cat_nhwc");
  ASSERT_NE(cat, nullptr);
  EXPECT_THAT(cat->inputs(), ElementsAre("side_nhwc", "f_nhwc"));
}

}  // namespace
}  // namespace graphopt
