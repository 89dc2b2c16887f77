#include "passes/training_step_pass.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/proto_convert.h"
#include "graph/verifier.h"
#include "passes/pass_test_util.h"
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::FloatTensor;
using ::graphopt::testing::FloatTensorProto;
using ::graphopt::testing::InputText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::SeededFloats;
using ::graphopt::testing::TestRuntime;
using ::graphopt::testing::WithInitializers;
using ::testing::HasSubstr;

constexpr int kBatch = 4, kIn = 3, kOut = 2;

// loss = sum((x w + b)^2): the gradient pass seeds 'loss' with ones.
// In float64 (`dtype`), the same float values widened.
v1::Tensor ParamProto(const std::string& name, const std::vector<int64_t>& dims,
                      const std::vector<float>& values, v1::DataType dtype) {
  v1::Tensor t = FloatTensorProto(name, dims, values);
  if (dtype != v1::DT_FLOAT64) return t;
  const std::vector<double> wide(values.begin(), values.end());
  t.set_dtype(v1::DT_FLOAT64);
  t.set_raw_data(wide.data(), wide.size() * sizeof(double));
  return t;
}

runtime::Tensor ParamTensor(const std::vector<int64_t>& dims, const std::vector<float>& values,
                            v1::DataType dtype) {
  return *runtime::Tensor::FromProto(ParamProto("", dims, values, dtype), "x");
}

std::string Model(const std::vector<float>& w, const std::vector<float>& b,
                  v1::DataType dtype = v1::DT_FLOAT32) {
  return WithInitializers(
      InputText("x", {kBatch, kIn}, v1::DataType_Name(dtype)) +
          NodeText("MatMul", {"x", "w"}, "xw") + NodeText("Add", {"xw", "b"}, "y") +
          NodeText("Mul", {"y", "y"}, "loss") + OutputText("loss"),
      {ParamProto("w", {kIn, kOut}, w, dtype), ParamProto("b", {kOut}, b, dtype)});
}

absl::StatusOr<v1::Graph> TrainingStep(const std::vector<float>& w, const std::vector<float>& b,
                                       PassOptions step_options,
                                       PipelineResult* result = nullptr,
                                       v1::DataType dtype = v1::DT_FLOAT32) {
  PassTestEnv env;
  return env.RunSpecs(Model(w, b, dtype),
                      {{"infer_type", {}},
                       {"infer_shape", {}},
                       {"gradient", {{"wrt", "w;b"}, {"loss", "loss"}}},
                       {"training_step", std::move(step_options)}},
                      result);
}

// Runs `steps` executions of the training step, each with its own x, carrying the state as a
// worker session does; returns the final state by name.
absl::StatusOr<std::map<std::string, runtime::Tensor>> Train(
    const v1::Graph& graph, const std::vector<std::vector<float>>& xs,
    v1::DataType dtype = v1::DT_FLOAT32) {
  TestRuntime rt;
  std::map<std::string, runtime::Tensor> state;
  for (const v1::StateUpdate& u : graph.state_updates()) {
    for (const v1::Tensor& t : graph.initializers()) {
      if (t.name() != u.state()) continue;
      absl::StatusOr<runtime::Tensor> init = runtime::Tensor::FromProto(t, t.name());
      if (!init.ok()) return init.status();
      state.emplace(u.state(), *std::move(init));
    }
  }
  for (const std::vector<float>& x : xs) {
    std::vector<std::pair<std::string, runtime::Tensor>> inputs = {
        {"x", ParamTensor({kBatch, kIn}, x, dtype)}};
    for (const auto& [name, t] : state) inputs.emplace_back(name, t);
    absl::StatusOr<std::vector<runtime::Tensor>> out = rt.Run(graph, inputs);
    if (!out.ok()) return out.status();
    std::map<std::string, runtime::Tensor> next;
    for (const v1::StateUpdate& u : graph.state_updates()) {
      for (int i = 0; i < graph.outputs_size(); ++i) {
        if (graph.outputs(i).name() == u.update()) next.emplace(u.state(), (*out)[i]);
      }
    }
    state = std::move(next);
  }
  return state;
}

// The reference: torch.optim's updates in double precision.
struct Reference {
  std::string optimizer;
  double lr = 0.05, momentum = 0.9, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0;
  bool nesterov = false;
  std::vector<double> w, b, mw, mb, vw, vb;
  int t = 0;

  void Step(const std::vector<float>& x) {
    std::vector<double> gy(kBatch * kOut);
    for (int r = 0; r < kBatch; ++r) {
      for (int c = 0; c < kOut; ++c) {
        double y = b[c];
        for (int k = 0; k < kIn; ++k) y += x[r * kIn + k] * w[k * kOut + c];
        gy[r * kOut + c] = 2 * y;
      }
    }
    std::vector<double> gw(kIn * kOut, 0), gb(kOut, 0);
    for (int r = 0; r < kBatch; ++r) {
      for (int c = 0; c < kOut; ++c) {
        gb[c] += gy[r * kOut + c];
        for (int k = 0; k < kIn; ++k) gw[k * kOut + c] += x[r * kIn + k] * gy[r * kOut + c];
      }
    }
    ++t;
    Update(w, gw, mw, vw);
    Update(b, gb, mb, vb);
  }

  void Update(std::vector<double>& p, std::vector<double> g, std::vector<double>& m,
              std::vector<double>& v) {
    if (m.empty()) m.assign(p.size(), 0), v.assign(p.size(), 0);
    for (size_t i = 0; i < p.size(); ++i) {
      g[i] += wd * p[i];
      if (optimizer == "sgd") {
        p[i] -= lr * g[i];
      } else if (optimizer == "momentum") {
        m[i] = t == 1 ? g[i] : momentum * m[i] + g[i];
        p[i] -= lr * (nesterov ? g[i] + momentum * m[i] : m[i]);
      } else if (optimizer == "adam") {
        m[i] = beta1 * m[i] + (1 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
        const double bc1 = 1 - std::pow(beta1, t), bc2 = 1 - std::pow(beta2, t);
        p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
      } else if (optimizer == "adagrad") {
        v[i] += g[i] * g[i];
        p[i] -= lr * g[i] / (std::sqrt(v[i]) + 1e-10);
      }
    }
  }
};

void ExpectNear(const runtime::Tensor& got, const std::vector<double>& want,
                const std::string& what) {
  ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want.size())) << what;
  double scale = 0;
  for (double v : want) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], want[i], 1e-5 * scale + 1e-7) << what << "[" << i << "]";
  }
}

class TrainingStepOptimizerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TrainingStepOptimizerTest, TenStepsMatchTheReference) {
  const std::vector<float> w = SeededFloats(kIn * kOut, 1), b = SeededFloats(kOut, 2);
  Reference ref;
  ref.optimizer = GetParam();
  ref.wd = 0.01;
  ref.w.assign(w.begin(), w.end());
  ref.b.assign(b.begin(), b.end());
  absl::StatusOr<v1::Graph> graph = TrainingStep(
      w, b, {{"optimizer", GetParam()}, {"lr", "0.05"}, {"weight_decay", "0.01"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::vector<float>> xs;
  for (int i = 0; i < 10; ++i) {
    xs.push_back(SeededFloats(kBatch * kIn, 100 + i));
    ref.Step(xs.back());
  }
  absl::StatusOr<std::map<std::string, runtime::Tensor>> state = Train(*graph, xs);
  ASSERT_TRUE(state.ok()) << state.status();
  ExpectNear(state->at("w"), ref.w, GetParam() + " w");
  ExpectNear(state->at("b"), ref.b, GetParam() + " b");
  EXPECT_EQ(state->at(kTrainingStepName).ElementAsInt64(0), 10);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, TrainingStepOptimizerTest,
                         ::testing::Values("sgd", "momentum", "adam", "adagrad"));

// A float64 step keeps every scalar in float64: momentum 0.9 is not rounded to 0.9f (ONNX
// Momentum's alpha is a float32 attribute, which would part from the reference by ~1e-8 within
// ten steps), so it agrees with the double-precision reference to rounding.
TEST(TrainingStepPassTest, Float64MomentumMatchesTheReferenceToRounding) {
  for (const bool nesterov : {false, true}) {
    const std::vector<float> w = SeededFloats(kIn * kOut, 1), b = SeededFloats(kOut, 2);
    Reference ref;
    ref.optimizer = "momentum";
    ref.nesterov = nesterov;
    ref.wd = 0.01;
    ref.w.assign(w.begin(), w.end());
    ref.b.assign(b.begin(), b.end());
    absl::StatusOr<v1::Graph> graph =
        TrainingStep(w, b,
                     {{"optimizer", "momentum"}, {"lr", "0.05"}, {"weight_decay", "0.01"},
                      {"nesterov", nesterov ? "1" : "0"}},
                     nullptr, v1::DT_FLOAT64);
    ASSERT_TRUE(graph.ok()) << graph.status();
    std::vector<std::vector<float>> xs;
    for (int i = 0; i < 10; ++i) {
      xs.push_back(SeededFloats(kBatch * kIn, 100 + i));
      ref.Step(xs.back());
    }
    absl::StatusOr<std::map<std::string, runtime::Tensor>> state =
        Train(*graph, xs, v1::DT_FLOAT64);
    ASSERT_TRUE(state.ok()) << state.status();
    for (const auto& [name, want] : {std::pair<std::string, const std::vector<double>*>{"w", &ref.w},
                                     {"b", &ref.b}}) {
      const runtime::Tensor& got = state->at(name);
      ASSERT_EQ(got.dtype(), v1::DT_FLOAT64) << name;
      ASSERT_EQ(got.num_elements(), static_cast<int64_t>(want->size())) << name;
      double scale = 0;
      for (double v : *want) scale = std::max(scale, std::abs(v));
      for (size_t i = 0; i < want->size(); ++i) {
        EXPECT_NEAR(got.data<double>()[i], (*want)[i], 1e-12 * scale)
            << name << "[" << i << "] nesterov=" << nesterov;
      }
    }
  }
}

TEST(TrainingStepPassTest, RecordsStateUpdatesAndReplacesGradientOutputs) {
  PipelineResult result;
  absl::StatusOr<v1::Graph> graph =
      TrainingStep(SeededFloats(6, 1), SeededFloats(2, 2), {{"optimizer", "momentum"}}, &result);
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> outputs, updates;
  for (const v1::ValueInfo& o : graph->outputs()) outputs.push_back(o.name());
  for (const v1::StateUpdate& u : graph->state_updates()) {
    updates.push_back(u.state() + "<-" + u.update());
  }
  EXPECT_THAT(outputs, ::testing::ElementsAre("loss", "w.next", "b.next", "w.momentum.next",
                                              "b.momentum.next", "training.step.next"));
  EXPECT_THAT(updates, ::testing::ElementsAre("w<-w.next", "b<-b.next",
                                              "w.momentum<-w.momentum.next",
                                              "b.momentum<-b.momentum.next",
                                              "training.step<-training.step.next"));
  // Every state tensor is a graph input (so never a constant to other passes).
  std::vector<std::string> inputs;
  for (const v1::ValueInfo& i : graph->inputs()) inputs.push_back(i.name());
  EXPECT_THAT(inputs, ::testing::IsSupersetOf({"w", "b", "w.momentum", "b.momentum",
                                               "training.step", "training.lr"}));
  EXPECT_THAT(result.runs.back().messages,
              ::testing::Contains(HasSubstr("momentum step for 2 parameters (w, b)")));
}

TEST(TrainingStepPassTest, LearningRateCanBeFedPerRun) {
  absl::StatusOr<v1::Graph> graph =
      TrainingStep(SeededFloats(6, 1), SeededFloats(2, 2), {{"optimizer", "sgd"}, {"lr", "1"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  TestRuntime rt;
  absl::StatusOr<std::vector<runtime::Tensor>> out =
      rt.Run(*graph, {{"x", FloatTensor({kBatch, kIn}, SeededFloats(kBatch * kIn, 3))},
                      {kTrainingLrName, FloatTensor({}, {0})}});
  ASSERT_TRUE(out.ok()) << out.status();
  // lr 0: the weights come back unchanged.
  const std::vector<float> w = SeededFloats(6, 1);
  for (int i = 0; i < 6; ++i) EXPECT_EQ((*out)[1].data<float>()[i], w[i]);
}

TEST(TrainingStepPassTest, ParamsOptionSelects) {
  absl::StatusOr<v1::Graph> graph =
      TrainingStep(SeededFloats(6, 1), SeededFloats(2, 2), {{"params", "b"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  std::vector<std::string> states;
  for (const v1::StateUpdate& u : graph->state_updates()) states.push_back(u.state());
  EXPECT_THAT(states, ::testing::ElementsAre("b", "training.step"));
  // w's gradient stays an output: it is not trained here.
  bool has_w_grad = false;
  for (const v1::ValueInfo& o : graph->outputs()) has_w_grad |= o.name() == "w_grad";
  EXPECT_TRUE(has_w_grad);
}

TEST(TrainingStepPassTest, BadRequestsAreNamed) {
  auto error = [](PassOptions options) {
    absl::StatusOr<v1::Graph> g =
        TrainingStep(SeededFloats(6, 1), SeededFloats(2, 2), std::move(options));
    return g.ok() ? std::string("ok") : std::string(g.status().message());
  };
  EXPECT_THAT(error({{"optimizer", "lbfgs"}}), HasSubstr("optimizer 'lbfgs'"));
  EXPECT_THAT(error({{"lr", "fast"}}), HasSubstr("option lr='fast'"));
  EXPECT_THAT(error({{"params", "x"}}), HasSubstr("parameter 'x' is not an initializer"));

  PassTestEnv env;
  absl::StatusOr<v1::Graph> no_grad =
      env.RunSpecs(Model(SeededFloats(6, 1), SeededFloats(2, 2)),
                   {{"infer_type", {}}, {"infer_shape", {}}, {"training_step", {}}});
  ASSERT_FALSE(no_grad.ok());
  EXPECT_THAT(std::string(no_grad.status().message()), HasSubstr("run the gradient pass"));
}

TEST(TrainingStepPassTest, StateUpdatesRoundTripAndAreVerified) {
  absl::StatusOr<v1::Graph> graph =
      TrainingStep(SeededFloats(6, 1), SeededFloats(2, 2), {{"optimizer", "adam"}});
  ASSERT_TRUE(graph.ok()) << graph.status();
  PassTestEnv env;
  v1::Graph copy = *graph;
  absl::StatusOr<Graph> ir = GraphFromProto(copy);
  ASSERT_TRUE(ir.ok()) << ir.status();
  EXPECT_TRUE(VerifyGraph(*ir, env.ops()).ok());
  EXPECT_EQ(GraphToProto(*ir).state_updates_size(), graph->state_updates_size());

  // An update that is not a graph output, and a state that is no initializer, are refused.
  v1::Graph bad = *graph;
  bad.mutable_state_updates(0)->set_update("xw");
  ir = GraphFromProto(bad);
  ASSERT_TRUE(ir.ok());
  EXPECT_THAT(std::string(VerifyGraph(*ir, env.ops()).message()),
              HasSubstr("the update must be a graph output"));
  bad = *graph;
  bad.mutable_state_updates(0)->set_state("x");
  ir = GraphFromProto(bad);
  ASSERT_TRUE(ir.ok());
  EXPECT_THAT(std::string(VerifyGraph(*ir, env.ops()).message()),
              HasSubstr("the state must be an initializer"));
}

}  // namespace
}  // namespace graphopt
