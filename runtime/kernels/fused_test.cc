// The FusedGroup kernel against the unfused graph: each case is fused by the fuse_ops pass (or
// written as a FusedGroup by hand) and must give the unfused graph's outputs.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_convert.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "ops/fused_group.h"
#include "ops/layout_ops.h"
#include "passes/builtin_passes.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt::runtime {
namespace {

std::string Input(const std::string& name, const std::vector<int>& dims) {
  std::string shape;
  for (int d : dims) absl::StrAppend(&shape, " dims { size: ", d, " }");
  return absl::StrCat("inputs { name: \"", name, "\" type { dtype: DT_FLOAT32 shape {", shape,
                      " } } }\n");
}

// A float32 initializer of `dims` holding `values` (repeated to fill it).
std::string Const(const std::string& name, const std::vector<int>& dims,
                  const std::vector<float>& values) {
  int64_t n = 1;
  std::string d;
  for (int x : dims) {
    n *= x;
    absl::StrAppend(&d, " dims: ", x);
  }
  std::string raw;
  for (int64_t i = 0; i < n; ++i) {
    const float v = values[i % values.size()];
    raw.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  return absl::StrCat("initializers { name: \"", name, "\" dtype: DT_FLOAT32", d,
                      " raw_data: \"", absl::CEscape(raw), "\" }\n");
}

std::string Node(const std::string& op, const std::vector<std::string>& in,
                 const std::string& out, const std::string& attrs = "") {
  std::string s = absl::StrCat("nodes { op_type: \"", op, "\" name: \"", out, "\"");
  for (const std::string& i : in) absl::StrAppend(&s, " inputs: \"", i, "\"");
  return absl::StrCat(s, " outputs: \"", out, "\" ", attrs, " }\n");
}

std::string Output(const std::string& name) {
  return absl::StrCat("outputs { name: \"", name, "\" }\n");
}

class FusedKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&ops_).ok());
    ASSERT_TRUE(RegisterBuiltinPasses(&passes_).ok());
    ASSERT_TRUE(RegisterCpuKernels(kernels_).ok());
  }

  v1::Graph Parse(const std::string& text) {
    v1::Graph g;
    EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &g)) << text;
    return g;
  }

  // The graph after `passes`, each verified.
  v1::Graph Optimized(const v1::Graph& graph, const std::vector<std::string>& passes) {
    absl::StatusOr<Graph> ir = GraphFromProto(graph);
    EXPECT_TRUE(ir.ok()) << ir.status();
    PipelineOptions options;
    options.verify_each_pass = true;
    std::vector<PassSpec> pipeline;
    for (const std::string& pass : passes) pipeline.push_back({pass, {}});
    absl::StatusOr<PipelineResult> r = RunPipeline(*ir, pipeline, passes_, ops_, options);
    EXPECT_TRUE(r.ok()) << r.status();
    return GraphToProto(*ir);
  }

  // The graph after fuse_ops, with the number of FusedGroup nodes.
  v1::Graph Fused(const v1::Graph& graph, int* groups) {
    v1::Graph out = Optimized(graph, {"fuse_ops"});
    *groups = 0;
    for (const v1::Node& n : out.nodes()) *groups += n.op_type() == kFusedGroupOp;
    return out;
  }

  // One executor of `optimized` per thread count (1 and 2), each run three times with new random
  // inputs of `shapes` (in [-2, 2], from `seed` and the thread count), in new buffers each time;
  // `check` compares each run's outputs (`got`) with the plain `graph`'s on the same inputs.
  void CheckAcrossRuns(
      const v1::Graph& graph, const v1::Graph& optimized, const std::vector<Shape>& shapes,
      int seed,
      const std::function<void(const std::vector<Tensor>& got, const std::vector<Tensor>& want)>&
          check) {
    for (int threads : {1, 2}) {
      absl::StatusOr<Graph> ir = GraphFromProto(optimized);
      ASSERT_TRUE(ir.ok()) << ir.status();
      ExecutorOptions options;
      options.num_threads = threads;
      absl::StatusOr<std::unique_ptr<Executor>> ex =
          Executor::Create(*std::move(ir), kernels_, options);
      ASSERT_TRUE(ex.ok()) << ex.status();
      std::mt19937 rng(seed + threads);
      std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
      for (int run = 0; run < 3; ++run) {
        std::vector<Tensor> inputs;
        for (const Shape& shape : shapes) {
          Tensor t = Tensor::Allocate(v1::DT_FLOAT32, shape).value();
          for (float& v : t.mutable_span<float>()) v = dist(rng);
          inputs.push_back(t);
        }
        SCOPED_TRACE(testing::Message() << "run " << run << " on " << threads << " thread(s)");
        const std::vector<Tensor> want = Run(graph, inputs);
        absl::StatusOr<RunResult> got = (*ex)->RunPositional(inputs);
        ASSERT_TRUE(got.ok()) << got.status();
        check(got->outputs, want);
      }
    }
  }

  std::vector<Tensor> Run(v1::Graph graph, const std::vector<Tensor>& inputs, int threads = 1) {
    absl::StatusOr<Graph> ir = GraphFromProto(std::move(graph));
    EXPECT_TRUE(ir.ok()) << ir.status();
    ExecutorOptions options;
    options.num_threads = threads;
    absl::StatusOr<std::unique_ptr<Executor>> ex = Executor::Create(*std::move(ir), kernels_, options);
    EXPECT_TRUE(ex.ok()) << ex.status();
    if (!ex.ok()) return {};
    absl::StatusOr<RunResult> r = (*ex)->RunPositional(inputs);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->outputs : std::vector<Tensor>{};
  }

  // Random float32 inputs for the graph's (non-initializer) inputs, in [-2, 2].
  std::vector<Tensor> Inputs(const v1::Graph& g) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<Tensor> out;
    for (const v1::ValueInfo& in : g.inputs()) {
      Shape shape;
      for (const v1::Dim& d : in.type().shape().dims()) shape.push_back(d.size());
      Tensor t = Tensor::Allocate(v1::DT_FLOAT32, shape).value();
      for (float& v : t.mutable_span<float>()) v = dist(rng);
      out.push_back(t);
    }
    return out;
  }

  static void ExpectNear(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                         double rtol = 1e-5) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].shape(), want[k].shape()) << "output " << k;
      for (int64_t i = 0; i < got[k].num_elements(); ++i) {
        const float g = got[k].data<float>()[i], w = want[k].data<float>()[i];
        ASSERT_NEAR(g, w, 1e-6 + rtol * std::fabs(w)) << "output " << k << " element " << i;
      }
    }
  }

  // Fuses `text` (expecting `groups` FusedGroup nodes) and compares with the unfused graph,
  // on one and on two threads.
  void Check(const std::string& text, int groups, double rtol = 1e-5) {
    const v1::Graph graph = Parse(text);
    int got_groups = 0;
    const v1::Graph fused = Fused(graph, &got_groups);
    EXPECT_EQ(got_groups, groups) << fused.DebugString();
    const std::vector<Tensor> inputs = Inputs(graph);
    const std::vector<Tensor> want = Run(graph, inputs);
    for (int threads : {1, 2}) ExpectNear(Run(fused, inputs, threads), want, rtol);
  }

  OpRegistry ops_;
  PassRegistry passes_;
  KernelRegistry kernels_;
};

const char kPads[] = "attributes { name: \"pads\" ints { values: [1, 1, 1, 1] } }";

TEST_F(FusedKernelTest, ConvBiasAndRelu) {
  Check(Input("x", {1, 8, 10, 10}) + Const("w", {16, 8, 3, 3}, {0.05f, -0.03f, 0.02f}) +
            Const("b", {16}, {0.1f, -0.2f}) + Const("cb", {16, 1, 1}, {0.3f, -0.1f, 0.0f}) +
            Node("Conv", {"x", "w", "b"}, "c", kPads) + Node("Add", {"c", "cb"}, "a") +
            Node("Relu", {"a"}, "y") + Output("y"),
        1);
}

TEST_F(FusedKernelTest, ConvResidualAddRelu) {
  Check(Input("x", {1, 8, 9, 9}) + Const("w", {8, 8, 3, 3}, {0.05f, -0.04f, 0.01f}) +
            Node("Conv", {"x", "w"}, "c", kPads) + Node("Add", {"c", "x"}, "a") +
            Node("Relu", {"a"}, "y") + Output("y"),
        1);
  // The residual first, as torch sometimes writes it.
  Check(Input("x", {1, 8, 9, 9}) + Const("w", {8, 8, 1, 1}, {0.05f, -0.04f, 0.01f}) +
            Node("Conv", {"x", "w"}, "c") + Node("Add", {"x", "c"}, "a") +
            Node("Relu", {"a"}, "y") + Output("y"),
        1);
}

TEST_F(FusedKernelTest, DepthwiseConvAndRelu6) {
  Check(Input("x", {1, 16, 12, 12}) + Const("w", {16, 1, 3, 3}, {0.2f, -0.1f, 0.3f}) +
            Const("b", {16}, {0.5f}) + Const("lo", {}, {0.0f}) + Const("hi", {}, {6.0f}) +
            Node("Conv", {"x", "w", "b"}, "c",
                 absl::StrCat(kPads, " attributes { name: \"group\" i: 16 } attributes { name: "
                                     "\"strides\" ints { values: [2, 2] } }")) +
            Node("Clip", {"c", "lo", "hi"}, "y") + Output("y"),
        1);
}

// From 28x28 outputs on, 1x1 and depthwise convolutions run as direct NCHW loops with the
// post-ops applied per channel (conv_nchw.cc).
TEST_F(FusedKernelTest, DirectLoopsWithPostOps) {
  Check(Input("x", {1, 8, 30, 30}) + Const("w", {8, 8, 1, 1}, {0.05f, -0.04f, 0.01f}) +
            Const("b", {8}, {0.2f, -0.3f}) + Const("cb", {8, 1, 1}, {0.3f, -0.1f, 0.0f}) +
            Node("Conv", {"x", "w", "b"}, "c") + Node("Add", {"c", "cb"}, "p") +
            Node("Add", {"x", "p"}, "a") + Node("Relu", {"a"}, "y") + Output("y"),
        1);
  Check(Input("x", {1, 6, 57, 57}) + Const("w", {6, 1, 3, 3}, {0.2f, -0.1f, 0.3f}) +
            Const("b", {6}, {0.5f}) + Const("lo", {}, {0.0f}) + Const("hi", {}, {6.0f}) +
            Const("s", {}, {0.5f}) +
            Node("Conv", {"x", "w", "b"}, "c",
                 absl::StrCat(kPads, " attributes { name: \"group\" i: 6 } attributes { name: "
                                     "\"strides\" ints { values: [2, 2] } }")) +
            Node("Mul", {"c", "s"}, "m") +
            Node("LeakyRelu", {"m"}, "l", "attributes { name: \"alpha\" f: 0.1 }") +
            Node("Clip", {"l", "lo", "hi"}, "y") + Output("y"),
        1);
}

TEST_F(FusedKernelTest, ConvWithOtherEpilogues) {
  // LeakyRelu and a scalar Mul map to post-ops; Softplus does not (the loop runs it).
  Check(Input("x", {1, 4, 6, 6}) + Const("w", {4, 4, 1, 1}, {0.5f, -0.25f}) +
            Const("s", {}, {1.5f}) + Node("Conv", {"x", "w"}, "c") +
            Node("LeakyRelu", {"c"}, "l", "attributes { name: \"alpha\" f: 0.2 }") +
            Node("Mul", {"l", "s"}, "y") + Output("y"),
        1);
  Check(Input("x", {1, 4, 6, 6}) + Const("w", {4, 4, 1, 1}, {0.5f, -0.25f}) +
            Node("Conv", {"x", "w"}, "c") + Node("Softplus", {"c"}, "p") +
            Node("Sigmoid", {"p"}, "y") + Output("y"),
        1);
}

// Every activation fuse_ops may put after a convolution, on each convolution path: oneDNN
// (small outputs), the direct 1x1 and depthwise NCHW loops (from 28x28 outputs on) and
// channels-last oneDNN. SiLU (x * Sigmoid(x), the Sigmoid reading the convolution's result
// too) becomes one swish post-op.
TEST_F(FusedKernelTest, ConvWithEveryFusableActivation) {
  struct Act {
    std::string nodes;  // reading "c", writing "y"
    std::string consts;
  };
  const std::vector<Act> acts = {
      {Node("Sigmoid", {"c"}, "s") + Node("Mul", {"c", "s"}, "y"), ""},
      {Node("Sigmoid", {"c"}, "s") + Node("Mul", {"s", "c"}, "y"), ""},
      {Node("HardSwish", {"c"}, "y"), ""},
      {Node("Elu", {"c"}, "y", "attributes { name: \"alpha\" f: 0.7 }"), ""},
      {Node("Softplus", {"c"}, "y"), ""},
      {Node("Tanh", {"c"}, "y"), ""},
      {Node("Exp", {"c"}, "y"), ""},
      {Node("Abs", {"c"}, "a") + Node("Sqrt", {"a"}, "y"), ""},
      {Node("Abs", {"c"}, "a") + Node("Add", {"a", "one"}, "p") + Node("Log", {"p"}, "y"),
       Const("one", {}, {1.0f})},
      {Node("Neg", {"c"}, "y"), ""},
      {Node("HardSigmoid", {"c"}, "y",
            "attributes { name: \"alpha\" f: 0.3 } attributes { name: \"beta\" f: 0.4 }"),
       ""},
      {Node("Sub", {"c", "k"}, "d") + Node("Div", {"d", "two"}, "y"),
       Const("k", {}, {0.25f}) + Const("two", {}, {2.0f})},
      {Node("Sub", {"k", "c"}, "d") + Node("Relu", {"d"}, "y"), Const("k", {}, {0.25f})},
      // The same eltwise algorithm twice with different parameters (linear, clip, linear).
      {Node("Add", {"c", "k"}, "d") + Node("Clip", {"d", "lo", "hi"}, "e") +
           Node("Mul", {"e", "k2"}, "y"),
       Const("k", {}, {0.25f}) + Const("k2", {}, {0.5f}) + Const("lo", {}, {-0.3f}) +
           Const("hi", {}, {0.3f})},
  };
  const std::string depthwise =
      absl::StrCat(kPads, " attributes { name: \"group\" i: 6 }");
  for (size_t i = 0; i < acts.size(); ++i) {
    SCOPED_TRACE(acts[i].nodes);
    // oneDNN: a 1x1 convolution of a 6x6 image.
    Check(Input("x", {1, 4, 6, 6}) + Const("w", {4, 4, 1, 1}, {0.5f, -0.25f, 0.125f}) +
              Const("b", {4}, {0.1f, -0.2f}) + acts[i].consts +
              Node("Conv", {"x", "w", "b"}, "c") + acts[i].nodes + Output("y"),
          1);
    // The direct loops: 1x1 and depthwise at 30x30.
    Check(Input("x", {1, 8, 30, 30}) + Const("w", {8, 8, 1, 1}, {0.05f, -0.04f, 0.01f}) +
              Const("b", {8}, {0.2f, -0.3f}) + acts[i].consts +
              Node("Conv", {"x", "w", "b"}, "c") + acts[i].nodes + Output("y"),
          1);
    Check(Input("x", {1, 6, 30, 30}) + Const("w", {6, 1, 3, 3}, {0.2f, -0.1f, 0.3f}) +
              Const("b", {6}, {0.5f, -0.5f}) + acts[i].consts +
              Node("Conv", {"x", "w", "b"}, "c", depthwise) + acts[i].nodes + Output("y"),
          1);
  }
}

// SiLU after a convolution that oneDNN computes (a 1x1 of a 6x6 image, channels-first; a 3x3 and
// a depthwise 5x5 stride 2, channels-last), then a per-channel shift and a residual: the fused
// group gives the unfused nodes' bits (Sigmoid, then Mul, then Add), because the SiLU and what
// follows it run on the same vector functions as the nodes. oneDNN's own swish post-op rounds
// differently.
TEST_F(FusedKernelTest, ConvSiluGivesTheUnfusedBits) {
  const std::string tail = Node("Sigmoid", {"c"}, "s") + Node("Mul", {"c", "s"}, "m") +
                           Node("Add", {"m", "cb"}, "a") + Node("Add", {"a", "r"}, "y") +
                           Output("y");
  const std::string pads2 = "attributes { name: \"pads\" ints { values: [2, 2, 2, 2] } } "
                            "attributes { name: \"strides\" ints { values: [2, 2] } } "
                            "attributes { name: \"group\" i: 16 }";
  struct Case {
    std::string graph;
    std::vector<std::string> passes;
  };
  const std::vector<Case> cases = {
      {Input("x", {1, 4, 6, 6}) + Input("r", {1, 4, 6, 6}) +
           Const("w", {4, 4, 1, 1}, {0.5f, -0.25f, 0.125f}) + Const("b", {4}, {0.1f, -0.2f}) +
           Const("cb", {4, 1, 1}, {0.3f, -0.1f, 0.2f}) + Node("Conv", {"x", "w", "b"}, "c") +
           tail,
       {"fuse_ops"}},
      {Input("x", {1, 16, 12, 12}) + Input("r", {1, 16, 12, 12}) +
           Const("w", {16, 16, 3, 3}, {0.05f, -0.03f, 0.02f, 0.01f}) +
           Const("b", {16}, {0.1f, -0.2f}) + Const("cb", {16, 1, 1}, {0.3f, -0.1f, 0.2f}) +
           Node("Conv", {"x", "w", "b"}, "c", kPads) + tail,
       {"channels_last", "fuse_ops"}},
      {Input("x", {1, 16, 13, 13}) + Input("r", {1, 16, 7, 7}) +
           Const("w", {16, 1, 5, 5}, {0.05f, -0.03f, 0.02f, 0.04f}) +
           Const("b", {16}, {0.1f, -0.2f}) + Const("cb", {16, 1, 1}, {0.3f, -0.1f, 0.2f}) +
           Node("Conv", {"x", "w", "b"}, "c", pads2) + tail,
       {"channels_last", "fuse_ops"}},
  };
  for (const Case& c : cases) {
    const v1::Graph graph = Parse(c.graph);
    const v1::Graph fused = Optimized(graph, c.passes);
    int groups = 0;
    for (const v1::Node& n : fused.nodes()) groups += n.op_type() == kFusedGroupOp;
    ASSERT_GE(groups, 1) << fused.DebugString();
    const std::vector<Tensor> inputs = Inputs(graph);
    const std::vector<Tensor> want = Run(graph, inputs);
    for (int threads : {1, 2}) {
      const std::vector<Tensor> got = Run(fused, inputs, threads);
      ASSERT_EQ(got.size(), 1u);
      ASSERT_EQ(got[0].shape(), want[0].shape());
      for (int64_t i = 0; i < got[0].num_elements(); ++i) {
        ASSERT_EQ(got[0].data<float>()[i], want[0].data<float>()[i])
            << "element " << i << " on " << threads << " thread(s) of\n" << c.graph;
      }
    }
  }
}

// Every elementwise op a group's program runs (fused_elementwise.cc), chained, against the
// unfused nodes.
TEST_F(FusedKernelTest, ProgramRunsEveryActivation) {
  Check(Input("x", {2, 3, 40}) + Const("slope", {3, 1}, {0.1f, -0.2f, 0.3f}) +
            Const("half", {}, {0.5f}) + Const("three", {}, {3.0f}) + Const("e", {}, {-1.0f}) +
            Node("Elu", {"x"}, "a", "attributes { name: \"alpha\" f: 0.5 }") +
            Node("Selu", {"a"}, "b") +
            Node("Celu", {"b"}, "c", "attributes { name: \"alpha\" f: 1.5 }") +
            Node("HardSwish", {"c"}, "d") + Node("Softsign", {"d"}, "f") +
            Node("PRelu", {"f", "slope"}, "g") +
            Node("ThresholdedRelu", {"g"}, "h", "attributes { name: \"alpha\" f: -0.05 }") +
            Node("Softplus", {"h"}, "i") + Node("Log", {"i"}, "j") +
            Node("Pow", {"i", "half"}, "k") + Node("Pow", {"k", "three"}, "l") +
            Node("Pow", {"l", "e"}, "m") + Node("Add", {"j", "m"}, "y") + Output("y"),
        1);
}

// One executor run again and again with inputs in new buffers each time: the oneDNN
// convolution keeps its argument views between runs and must re-point them at each run's
// tensors (source, residual, per-channel operand), including Winograd's reordered residual.
TEST_F(FusedKernelTest, ChannelsLastConvolutionsFollowNewBuffersAcrossRuns) {
  const std::string text =
      Input("x", {1, 64, 28, 28}) + Input("cm", {64, 1, 1}) +
      Const("w3", {64, 64, 3, 3}, {0.02f, -0.01f, 0.015f, -0.02f}) +
      Const("w1", {64, 64, 1, 1}, {0.05f, -0.03f, 0.02f}) +
      Node("Conv", {"x", "w3"}, "c3", kPads) + Node("Add", {"c3", "x"}, "r") +
      Node("Relu", {"r"}, "a") + Node("Conv", {"a", "w1"}, "c1") + Node("Mul", {"c1", "cm"}, "m") +
      Node("Relu", {"m"}, "y") + Output("y");
  const v1::Graph graph = Parse(text);
  const v1::Graph optimized = Optimized(graph, {"channels_last", "fuse_ops"});
  int groups = 0, winograd = 0;
  for (const v1::Node& n : optimized.nodes()) groups += n.op_type() == kFusedGroupOp;
  winograd = absl::StrContains(optimized.DebugString(), "winograd");
  EXPECT_EQ(groups, 2) << optimized.DebugString();
  EXPECT_TRUE(winograd) << "the 3x3 convolution should run Winograd";
  // Within 1e-5 of the largest output (Winograd rounds differently).
  auto close = [](const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(want.size(), 1u);
    ASSERT_EQ(got[0].shape(), want[0].shape());
    float largest = 0, error = 0;
    for (int64_t i = 0; i < want[0].num_elements(); ++i) {
      const float w = want[0].data<float>()[i], g = got[0].data<float>()[i];
      largest = std::max(largest, std::fabs(w));
      error = std::max(error, std::fabs(w - g));
    }
    EXPECT_GT(largest, 0.0f);
    EXPECT_LE(error, 1e-5f * largest);
  };
  CheckAcrossRuns(graph, optimized, {Shape{1, 64, 28, 28}, Shape{64, 1, 1}}, 11, close);
}

// Channels-last 1x1 convolutions of 24, 40 and 8 output channels (on AVX-512 machines the
// runtime's own pointwise rows, not oneDNN) with their epilogues: per-channel operands, the
// residual summed in place over the block's input (plan_memory lets the last group write
// there), Clip, LeakyRelu; and weights the graph computes from an input, new on every run (so
// never kept packed from an earlier run). Against the plain graph, on 1 and 2 threads, three
// runs of one executor with new inputs each.
TEST_F(FusedKernelTest, NarrowChannelsLastPointwiseConvolutions) {
  const std::string text =
      Input("x", {1, 24, 13, 11}) + Input("scale", {40, 1, 1, 1}) +
      Const("w1", {24, 24, 1, 1}, {0.05f, -0.03f, 0.02f, 0.04f, -0.01f}) +
      Const("w2", {40, 24, 1, 1}, {0.02f, -0.05f, 0.03f}) +
      Const("w3", {8, 40, 1, 1}, {-0.04f, 0.03f, 0.05f, -0.02f}) + Const("b3", {8}, {0.1f, -0.2f}) +
      Const("lo", {}, {0.0f}) + Const("hi", {}, {6.0f}) +
      Node("Relu", {"x"}, "xr") + Node("Conv", {"xr", "w1"}, "c0") + Node("Relu", {"c0"}, "a0") +
      Node("Conv", {"a0", "w1"}, "c1") + Node("Add", {"c1", "xr"}, "r1") +
      Node("Clip", {"r1", "lo", "hi"}, "a1") +
      Node("Mul", {"w2", "scale"}, "w2s") + Node("Conv", {"a1", "w2s"}, "c2") +
      Node("Relu", {"c2"}, "a2") + Node("Conv", {"a2", "w3", "b3"}, "c3") +
      Node("LeakyRelu", {"c3"}, "y", "attributes { name: \"alpha\" f: 0.1 }") + Output("y");
  const v1::Graph graph = Parse(text);
  const v1::Graph optimized = Optimized(graph, {"channels_last", "fuse_ops", "plan_memory"});
  EXPECT_TRUE(absl::StrContains(optimized.DebugString(), kFusedGroupInPlace))
      << "the residual group should write over its input: " << optimized.DebugString();
  CheckAcrossRuns(graph, optimized, {Shape{1, 24, 13, 11}, Shape{40, 1, 1, 1}}, 5,
                  [](const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
                    ExpectNear(got, want, 1e-5);
                  });
  // Per-channel Add and Mul after a channels-last convolution ([M] operands: channels go last).
  Check(Input("x", {1, 9, 7, 24}) + Const("w", {24, 24, 1, 1}, {0.05f, -0.03f, 0.02f}) +
            Const("cb", {24}, {0.3f, -0.1f, 0.0f, 0.2f}) + Const("cm", {24}, {1.5f, -0.5f}) +
            absl::StrCat("nodes { op_type: \"", kNhwcConvOp, "\" domain: \"", kLayoutDomain,
                         "\" name: \"c\" inputs: \"x\" inputs: \"w\" outputs: \"c\" }\n") +
            Node("Add", {"c", "cb"}, "p") + Node("Mul", {"p", "cm"}, "q") + Node("Relu", {"q"}, "y") +
            Output("y"),
        1);
}

TEST_F(FusedKernelTest, MatMulBiasRelu) {
  Check(Input("x", {16, 1, 64}) + Const("w", {64, 48}, {0.02f, -0.03f, 0.01f}) +
            Const("b", {48}, {0.1f, -0.1f, 0.2f}) + Node("MatMul", {"x", "w"}, "m") +
            Node("Add", {"b", "m"}, "a") + Node("Relu", {"a"}, "y") + Output("y"),
        1);
}

// Groups run one at a time, so their intermediates share one scratch buffer (the executor's
// ScratchPool): after a run the executor keeps the largest group's scratch, not the sum of
// all of them (which on a transformer or a ConvNeXt was 80-220 MiB of peak RSS).
TEST_F(FusedKernelTest, GroupsShareOneScratchBuffer) {
  // Three MatMul + bias + Relu groups whose MatMul results (their scratch) are 96, 192 and 48
  // floats, separated by Softmax, which fuse_ops leaves alone.
  std::string text = Input("x", {1, 64});
  std::string prev = "x";
  int k = 64;
  const int widths[] = {96, 192, 48};
  for (int i = 0; i < 3; ++i) {
    const std::string s = absl::StrCat(i);
    text += Const("w" + s, {k, widths[i]}, {0.02f, -0.03f, 0.01f}) +
            Const("b" + s, {widths[i]}, {0.1f, -0.1f, 0.2f}) +
            Node("MatMul", {prev, "w" + s}, "m" + s) + Node("Add", {"m" + s, "b" + s}, "a" + s) +
            Node("Relu", {"a" + s}, "r" + s) +
            Node("Softmax", {"r" + s}, "s" + s, "attributes { name: \"axis\" i: -1 }");
    prev = "s" + s;
    k = widths[i];
  }
  text += Output(prev);
  const v1::Graph graph = Parse(text);
  int groups = 0;
  const v1::Graph fused = Fused(graph, &groups);
  ASSERT_GE(groups, 3) << fused.DebugString();
  absl::StatusOr<Graph> ir = GraphFromProto(fused);
  ASSERT_TRUE(ir.ok()) << ir.status();
  absl::StatusOr<std::unique_ptr<Executor>> ex =
      Executor::Create(*std::move(ir), kernels_, ExecutorOptions());
  ASSERT_TRUE(ex.ok()) << ex.status();
  const std::vector<Tensor> inputs = Inputs(graph);
  const std::vector<Tensor> want = Run(graph, inputs);
  for (int run = 0; run < 3; ++run) {
    absl::StatusOr<RunResult> got = (*ex)->RunPositional(inputs);
    ASSERT_TRUE(got.ok()) << got.status();
    ExpectNear(got->outputs, want);
    // The largest group's intermediates (its MatMul and Add results, 192 floats each) in one
    // shared buffer; a buffer per group would keep (96 + 192 + 48) * 2 floats.
    EXPECT_GE((*ex)->scratch_kept_bytes(), 192 * 4) << "run " << run;
    EXPECT_LE((*ex)->scratch_kept_bytes(), 2 * 192 * 4) << "run " << run;
  }
}

std::string Gelu(const std::string& x, const std::string& y) {
  return Node("Div", {x, "sqrt2"}, "d") + Node("Erf", {"d"}, "e") +
         Node("Add", {"e", "one"}, "a") + Node("Mul", {x, "a"}, "m") +
         Node("Mul", {"m", "half"}, y);
}

TEST_F(FusedKernelTest, GemmGelu) {
  const std::string consts = Const("one", {}, {1.0f}) + Const("half", {}, {0.5f});
  Check(Input("x", {3, 32}) + Const("w", {24, 32}, {0.05f, -0.02f}) + Const("b", {24}, {0.1f}) +
            Const("sqrt2", {}, {1.4142135f}) + consts +
            Node("Gemm", {"x", "w", "b"}, "g", "attributes { name: \"transB\" i: 1 }") +
            Gelu("g", "y") + Output("y"),
        1);
  // Other constants: the same nodes as a plain elementwise loop.
  Check(Input("x", {3, 32}) + Const("sqrt2", {}, {1.25f}) + consts + Gelu("x", "y") +
            Output("y"),
        1);
}

TEST_F(FusedKernelTest, LayerNormalization) {
  const std::string axes = "attributes { name: \"axes\" ints { values: -1 } }";
  const std::string ln = Node("ReduceMean", {"x"}, "mean", axes) + Node("Sub", {"x", "mean"}, "d") +
                         Node("Pow", {"d", "two"}, "sq") + Node("ReduceMean", {"sq"}, "var", axes) +
                         Node("Add", {"var", "eps"}, "ve") + Node("Sqrt", {"ve"}, "std");
  const std::string consts = Const("two", {}, {2.0f}) + Const("eps", {}, {1e-5f}) +
                             Const("gamma", {40}, {1.0f, 0.5f, -0.3f}) +
                             Const("beta", {40}, {0.1f, 0.0f});
  Check(Input("x", {2, 3, 40}) + consts + ln + Node("Div", {"d", "std"}, "n") +
            Node("Mul", {"n", "gamma"}, "s") + Node("Add", {"s", "beta"}, "y") + Output("y"),
        1, 1e-4);
  Check(Input("x", {5, 40}) + consts + ln + Node("Div", {"d", "std"}, "y") + Output("y"), 1,
        1e-4);
  Check(Input("x", {5, 40}) + consts + ln + Node("Div", {"d", "std"}, "n") +
            Node("Add", {"n", "beta"}, "y") + Output("y"),
        1, 1e-4);
}

TEST_F(FusedKernelTest, BroadcastingElementwiseChainsWithSeveralOutputs) {
  Check(Input("x", {2, 3, 40}) + Input("z", {3, 1}) + Const("s", {}, {0.75f}) +
            Node("Mul", {"x", "z"}, "a") + Node("Sub", {"a", "s"}, "b") +
            Node("Tanh", {"b"}, "t") + Node("Exp", {"t"}, "e") + Node("Sigmoid", {"b"}, "g") +
            Node("Add", {"e", "g"}, "y") + Node("Softmax", {"b"}, "out2") + Output("y") +
            Output("out2"),
        1);
  // A long row split into several tiles, broadcast along the middle axis.
  Check(Input("x", {2, 3, 3000}) + Input("z", {2, 1, 3000}) + Node("Max", {"x", "z"}, "m") +
            Node("Abs", {"m"}, "a") + Node("Sqrt", {"a"}, "y") + Output("y"),
        1);
}

// Channels-last rows shorter than a tile (C values per pixel): a per-channel scale and shift
// (an inference BatchNormalization), a residual and a Relu run several pixels per tile; the last
// tile is partial. A per-pixel operand ([N, H, W, 1]) takes the row-by-row loop.
TEST_F(FusedKernelTest, ShortRowsRunSeveralPerTile) {
  Check(Input("x", {1, 7, 9, 24}) + Input("r", {1, 7, 9, 24}) +
            Const("scale", {24}, {0.5f, -1.5f, 2.0f, 0.25f, 3.0f}) +
            Const("shift", {1, 1, 1, 24}, {0.1f, -0.2f, 0.3f}) + Const("s", {}, {0.75f}) +
            Node("Mul", {"x", "scale"}, "a") + Node("Add", {"a", "shift"}, "b") +
            Node("Add", {"b", "r"}, "c") + Node("Mul", {"c", "s"}, "d") +
            Node("Relu", {"d"}, "y") + Output("y"),
        1);
  Check(Input("x", {1, 7, 9, 24}) + Input("p", {1, 7, 9, 1}) +
            Const("scale", {24}, {0.5f, -1.5f, 2.0f}) + Node("Mul", {"x", "scale"}, "a") +
            Node("Add", {"a", "p"}, "b") + Node("Relu", {"b"}, "y") + Output("y"),
        1);
}

TEST_F(FusedKernelTest, ReductionPrologueAndInjectiveChain) {
  Check(Input("x", {4, 6}) + Node("Exp", {"x"}, "e") + Node("Mul", {"e", "e"}, "sq") +
            Node("ReduceSum", {"sq"}, "y", "attributes { name: \"keepdims\" i: 0 }") +
            "initializers { name: \"shape\" dtype: DT_INT64 dims: 2 raw_data: "
            "\"\\003\\000\\000\\000\\000\\000\\000\\000\\010\\000\\000\\000\\000\\000\\000\\000\" }\n" +
            Node("Reshape", {"x", "shape"}, "r") +
            Node("Transpose", {"r"}, "t", "attributes { name: \"perm\" ints { values: [1, 0] } }") +
            Output("y") + Output("t"),
        2);
}

// A body whose intermediate results differ in shape: the elementwise loop declines and the group
// runs on the executor, with the same results.
TEST_F(FusedKernelTest, FallsBackToTheExecutor) {
  const std::string body =
      "name: \"g\" " + Input("x", {4}) + Input("z", {3, 4}) + Node("Relu", {"x"}, "r") +
      Node("Add", {"r", "z"}, "y") +
      "value_info { name: \"r\" type { dtype: DT_FLOAT32 shape { dims { size: 4 } } } }\n"
      "outputs { name: \"y\" type { dtype: DT_FLOAT32 shape { dims { size: 3 } dims { size: 4 } } } }\n";
  const std::string fused = Input("x", {4}) + Input("z", {3, 4}) +
                            "nodes { op_type: \"FusedGroup\" domain: \"graphopt\" inputs: \"x\" "
                            "inputs: \"z\" outputs: \"y\" attributes { name: \"body\" g { " +
                            body + " } } }\n" + Output("y");
  const std::string plain = Input("x", {4}) + Input("z", {3, 4}) + Node("Relu", {"x"}, "r") +
                            Node("Add", {"r", "z"}, "y") + Output("y");
  const std::vector<Tensor> inputs = Inputs(Parse(plain));
  ExpectNear(Run(Parse(fused), inputs), Run(Parse(plain), inputs));
}

}  // namespace
}  // namespace graphopt::runtime
