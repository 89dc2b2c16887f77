#include "passes/rematerialize_pass.h"

#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::AddEffectOps;
using ::graphopt::testing::CompareOutputs;
using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::InputText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::TestRuntime;
using ::testing::HasSubstr;

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

// A `layers`-deep MLP on a [batch, width] input: a_i = Relu(a_{i-1} W_i + b_i) (every second
// layer also multiplies by its input, for a Mul in the chain), output the last a.
struct Mlp {
  std::string text;
  Inputs inputs;
  std::string wrt;
};

Mlp DeepMlp(int layers, int batch, int width) {
  Mlp m;
  m.text = InputText("x", {batch, width});
  m.inputs.emplace_back("x", FloatTensor({batch, width}, SeededFloats(batch * width, 1)));
  std::vector<std::string> wrt = {"x"};
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string w = absl::StrCat("w", i), b = absl::StrCat("b", i);
    m.text += InputText(w, {width, width}) + InputText(b, {width});
    std::vector<float> wv = SeededFloats(width * width, 100 + i);
    for (float& v : wv) v *= 1.5f / width;  // keeps activations of the order of 1
    m.inputs.emplace_back(w, FloatTensor({width, width}, wv));
    m.inputs.emplace_back(b, FloatTensor({width}, SeededFloats(width, 200 + i)));
    wrt.push_back(w);
    wrt.push_back(b);
    const std::string h = absl::StrCat("h", i), s = absl::StrCat("s", i),
                      a = absl::StrCat("a", i);
    m.text += NodeText("MatMul", {prev, w}, h) + NodeText("Add", {h, b}, s);
    if (i % 2 == 1) {
      m.text += NodeText("Relu", {s}, absl::StrCat("r", i)) +
                NodeText("Mul", {absl::StrCat("r", i), prev}, a);
    } else {
      m.text += NodeText("Relu", {s}, a);
    }
    prev = a;
  }
  m.text += OutputText(prev);
  m.wrt = absl::StrJoin(wrt, ";");
  return m;
}

std::vector<PassSpec> TrainingPipeline(const Mlp& m, const std::string& loss,
                                       std::vector<PassSpec> remat, bool plan) {
  std::vector<PassSpec> specs = {{"infer_type", {}},
                                 {"infer_shape", {}},
                                 {"gradient", {{"wrt", m.wrt}, {"loss", loss}}}};
  for (PassSpec& s : remat) specs.push_back(std::move(s));
  if (plan) {
    specs.push_back({"schedule", {}});
    specs.push_back({"plan_memory", {}});
  }
  return specs;
}

int64_t ArenaBytes(const v1::Graph& g) {
  return g.has_memory_plan() && g.memory_plan().arenas_size() == 1
             ? g.memory_plan().arenas(0).size_bytes()
             : -1;
}

int CountRemat(const v1::Graph& g) {
  int n = 0;
  for (const v1::Node& node : g.nodes()) n += IsBackwardNodeName(node.name()) &&
                                               absl::EndsWith(node.name(), kRematSuffix);
  return n;
}

// Runs the training graph with and without rematerialization (and each also scheduled and
// planned, as the executor runs them) and checks that every output, gradients included, is
// bit-identical; returns the two arena sizes.
void CheckBitIdentical(const Mlp& m, const std::string& loss, const PassSpec& remat,
                       int64_t* arena_before, int64_t* arena_after, int* clones,
                       PipelineResult* remat_result = nullptr) {
  PassTestEnv env;
  TestRuntime runtime;
  absl::StatusOr<v1::Graph> base = env.RunSpecs(m.text, TrainingPipeline(m, loss, {}, false));
  ASSERT_TRUE(base.ok()) << base.status();
  absl::StatusOr<std::vector<runtime::Tensor>> want = runtime.Run(*base, m.inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_GT(want->size(), 1u);
  for (bool plan : {false, true}) {
    absl::StatusOr<v1::Graph> before = env.RunSpecs(m.text, TrainingPipeline(m, loss, {}, plan));
    ASSERT_TRUE(before.ok()) << before.status();
    absl::StatusOr<v1::Graph> after =
        env.RunSpecs(m.text, TrainingPipeline(m, loss, {remat}, plan), remat_result);
    ASSERT_TRUE(after.ok()) << after.status();
    for (const v1::Graph* g : {&*before, &*after}) {
      absl::StatusOr<std::vector<runtime::Tensor>> got = runtime.Run(*g, m.inputs);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(CompareOutputs(*got, *want, /*bit_exact=*/true), "") << "plan " << plan;
    }
    if (plan) {
      *arena_before = ArenaBytes(*before);
      *arena_after = ArenaBytes(*after);
      *clones = CountRemat(*after);
    }
  }
}

TEST(RematerializePassTest, DeepMlpGradientsBitIdenticalAndPeakLower) {
  const Mlp m = DeepMlp(50, 32, 64);
  int64_t before = 0, after = 0;
  int clones = 0;
  PipelineResult result;
  CheckBitIdentical(m, "a49", {"rematerialize", {}}, &before, &after, &clones, &result);
  EXPECT_GT(clones, 0);
  ASSERT_GT(before, 0);
  ASSERT_GT(after, 0);
  // Every layer keeps four [32, 64] values for the backward part without recomputation; sqrt(n)
  // segments keep a few per segment.
  EXPECT_GE(static_cast<double>(before) / after, 2.5) << before << " -> " << after;
  std::cout << "50-layer MLP: arena " << before << " -> " << after << " bytes, " << clones
            << " clones\n";
  std::string notes;
  for (const auto& run : result.runs) {
    if (run.name == "rematerialize") notes = absl::StrJoin(run.messages, "\n");
  }
  std::cout << notes << "\n";
  EXPECT_THAT(notes, HasSubstr("budget auto"));
  EXPECT_THAT(notes, HasSubstr("extra flops"));
  EXPECT_THAT(notes, HasSubstr("peak of live planned bytes"));
}

TEST(RematerializePassTest, ExtraFlopsStayWithinTheLimit) {
  const Mlp m = DeepMlp(20, 16, 32);
  PassTestEnv env;
  PipelineResult result;
  absl::StatusOr<v1::Graph> g = env.RunSpecs(
      m.text,
      TrainingPipeline(m, "a19", {{"rematerialize", {{"max_extra_flops_percent", "0"}}}}, false),
      &result);
  ASSERT_TRUE(g.ok()) << g.status();
  // With no extra flops allowed beyond the cheap ones, no MatMul is recomputed.
  for (const v1::Node& n : g->nodes()) {
    if (absl::EndsWith(n.name(), kRematSuffix)) {
      EXPECT_NE(n.op_type(), "MatMul") << n.name();
    }
  }
}

TEST(RematerializePassTest, SmallerBudgetRecomputesMore) {
  const Mlp m = DeepMlp(20, 16, 32);
  PassTestEnv env;
  auto clones_for = [&](const std::string& budget) {
    absl::StatusOr<v1::Graph> g = env.RunSpecs(
        m.text, TrainingPipeline(m, "a19", {{"rematerialize", {{"budget_bytes", budget}}}}, false));
    EXPECT_TRUE(g.ok()) << g.status();
    int matmuls = 0;
    for (const v1::Node& n : g->nodes()) {
      matmuls += absl::EndsWith(n.name(), kRematSuffix) && n.op_type() == "MatMul";
    }
    return matmuls;
  };
  const int generous = clones_for("100000000");
  const int tight = clones_for("0");
  EXPECT_EQ(generous, 0);
  EXPECT_GT(tight, 0);
}

TEST(RematerializePassTest, BudgetBytesIsBitIdenticalToo) {
  const Mlp m = DeepMlp(12, 8, 16);
  int64_t before = 0, after = 0;
  int clones = 0;
  CheckBitIdentical(m, "a11", {"rematerialize", {{"budget_bytes", "0"}}}, &before, &after,
                    &clones);
  EXPECT_GT(clones, 0);
  EXPECT_LT(after, before);
}

TEST(RematerializePassTest, ClonesRunRightBeforeTheirFirstBackwardReader) {
  const Mlp m = DeepMlp(10, 8, 16);
  PassTestEnv env;
  absl::StatusOr<v1::Graph> g =
      env.RunSpecs(m.text, TrainingPipeline(m, "a9", {{"rematerialize", {}}}, false));
  ASSERT_TRUE(g.ok()) << g.status();
  // The graph is written in the recorded order: no clone runs before the backward part starts,
  // and the clones are spread over it (each segment's right before its backward nodes).
  int first_backward = -1;
  std::vector<int> clone_positions;
  for (int i = 0; i < g->nodes_size(); ++i) {
    const std::string& name = g->nodes(i).name();
    if (absl::EndsWith(name, kRematSuffix)) {
      clone_positions.push_back(i);
    } else if (first_backward < 0 && IsBackwardNodeName(name)) {
      first_backward = i;
    }
  }
  ASSERT_FALSE(clone_positions.empty());
  ASSERT_GE(first_backward, 0);
  for (int p : clone_positions) EXPECT_GT(p, first_backward);
  // Clones are spread over the backward part, not bunched at its start.
  EXPECT_GT(clone_positions.back() - clone_positions.front(), (g->nodes_size() - first_backward) / 2);
}

TEST(RematerializePassTest, WithoutBackwardNodesUnchanged) {
  PassTestEnv env;
  PipelineResult result;
  const std::string text = InputText("x", {4}) + NodeText("Relu", {"x"}, "y") +
                           NodeText("Relu", {"y"}, "z") + OutputText("z");
  absl::StatusOr<v1::Graph> g = env.RunSpecs(
      text, {{"infer_type", {}}, {"infer_shape", {}}, {"rematerialize", {}}}, &result);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes_size(), 2);
  EXPECT_FALSE(result.runs.back().changed);
}

// A layer of DeepMlp whose Relu is op `op` of `domain` instead (its output s2 kept out of the
// gradient): the backward part needs s2's readers' values, which are worth recomputing.
std::vector<std::string> ClonedNodes(const std::string& op, const std::string& domain) {
  PassTestEnv env;
  AddEffectOps(env);
  Mlp m = DeepMlp(8, 16, 32);
  const std::string relu = NodeText("Relu", {"s2"}, "a2");
  const size_t at = m.text.find(relu);
  EXPECT_NE(at, std::string::npos);
  m.text.replace(at, relu.size(),
                 NodeText(op, {"s2"}, "a2", domain.empty() ? "" : "domain: \"" + domain + "\""));
  absl::StatusOr<v1::Graph> g = env.RunSpecs(
      m.text, {{"infer_type", {}},
               {"infer_shape", {}},
               {"gradient", {{"wrt", "w3;w4;w5;w6;w7"}, {"loss", "a7"}, {"stop_gradient", "a2"}}},
               {"rematerialize", {}}});
  EXPECT_TRUE(g.ok()) << g.status();
  std::vector<std::string> cloned;
  if (!g.ok()) return cloned;
  for (const v1::Node& n : g->nodes()) {
    if (absl::EndsWith(n.name(), kRematSuffix)) cloned.push_back(n.name());
  }
  return cloned;
}

TEST(RematerializePassTest, NondeterministicNodesAreNeverCloned) {
  // Deterministic, a2's producer is recomputed; Sample (nondeterministic: recomputing it could
  // give other bits) never is.
  EXPECT_THAT(ClonedNodes("Relu", ""), ::testing::Contains("a2_node/remat"));
  EXPECT_THAT(ClonedNodes("Sample", "my.ops"),
              ::testing::Not(::testing::Contains("a2_node/remat")));
}

TEST(RematerializePassTest, BadOptionsAreErrors) {
  const Mlp m = DeepMlp(2, 2, 2);
  PassTestEnv env;
  for (const PassOptions& o :
       std::vector<PassOptions>{{{"budget", "lots"}},
                                {{"budget_bytes", "-1"}},
                                {{"budget", "auto"}, {"budget_bytes", "5"}},
                                {{"max_extra_flops_percent", "x"}}}) {
    absl::StatusOr<v1::Graph> g =
        env.RunSpecs(m.text, TrainingPipeline(m, "a1", {{"rematerialize", o}}, false));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument) << g.status();
  }
}

TEST(RematerializePassTest, NodeNamesDecideBackward) {
  EXPECT_TRUE(IsBackwardNodeName("conv1/grad/MatMul"));
  EXPECT_TRUE(IsBackwardNodeName("grad/ConstantOfShape"));
  EXPECT_TRUE(IsBackwardNodeName("relu3/remat"));
  EXPECT_FALSE(IsBackwardNodeName("gradual"));
  EXPECT_FALSE(IsBackwardNodeName("layer1/conv"));
}

}  // namespace
}  // namespace graphopt
