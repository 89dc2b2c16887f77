// Builtin gradients of the nn ops against finite differences (passes/gradient_check.h), in
// float32 on the CPU kernels (oneDNN for the float32 convolutions and their gradients). The
// graphopt backward ops are differentiated themselves too: their gradients are the second-order
// paths (double backward through CNNs).

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "passes/gradient_check.h"
#include "passes/pass_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::CheckGradients;
using ::graphopt::testing::GradientCheckOptions;
using ::graphopt::testing::InputText;
using ::graphopt::testing::IntsText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::RandomTensor;
using ::testing::HasSubstr;

using Inputs = std::vector<std::pair<std::string, runtime::Tensor>>;

GradientCheckOptions Wrt(std::vector<std::string> names) {
  GradientCheckOptions o;
  o.wrt = std::move(names);
  return o;
}

std::string IntText(const std::string& name, int64_t v) {
  return absl::StrCat("attributes { name: \"", name, "\" i: ", v, " }");
}
std::string FloatText(const std::string& name, float v) {
  return absl::StrCat("attributes { name: \"", name, "\" f: ", v, " }");
}
std::string StringText(const std::string& name, const std::string& v) {
  return absl::StrCat("attributes { name: \"", name, "\" s: \"", v, "\" }");
}
// A node with several outputs ("" omits one), named after the first.
std::string NodesText(const std::string& op, const std::vector<std::string>& in,
                      const std::vector<std::string>& out, const std::string& extra = "",
                      const std::string& domain = "") {
  std::string s = absl::StrCat("nodes { op_type: \"", op, "\" name: \"", out[0], "_node\"");
  if (!domain.empty()) absl::StrAppend(&s, " domain: \"", domain, "\"");
  for (const std::string& i : in) absl::StrAppend(&s, " inputs: \"", i, "\"");
  for (const std::string& o : out) absl::StrAppend(&s, " outputs: \"", o, "\"");
  absl::StrAppend(&s, " ", extra, " }\n");
  return s;
}

std::vector<int> Dims32(const std::vector<int64_t>& d) { return std::vector<int>(d.begin(), d.end()); }

// Distinct values at least 2/n apart in [-1, 1), shuffled: a max pool's choice stays put under
// the finite differences' steps (no ties, no near-ties).
runtime::Tensor DistinctTensor(const std::vector<int64_t>& dims, uint32_t seed) {
  runtime::Tensor t = RandomTensor(v1::DT_FLOAT32, dims, seed);
  const int64_t n = t.num_elements();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t i = 0; i < n; ++i) {
    t.data<float>()[i] = -1.0f + 2.0f * static_cast<float>(order[i]) / static_cast<float>(n);
  }
  return t;
}

// One node of `op` on float32 inputs of `dims` (random in [lo, hi)), output y.
struct Case {
  std::string op;
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs;
  std::string extra;
  double lo = -1.0, hi = 1.0;
};

absl::Status Check(const Case& c, const GradientCheckOptions& options = {}) {
  PassTestEnv env;
  std::string text;
  std::vector<std::string> names;
  Inputs inputs;
  uint32_t seed = 11;
  for (const auto& [name, dims] : c.inputs) {
    text += InputText(name, Dims32(dims));
    names.push_back(name);
    inputs.push_back({name, RandomTensor(v1::DT_FLOAT32, dims, seed++, c.lo, c.hi)});
  }
  text += NodeText(c.op, names, "y", c.extra) + OutputText("y");
  return CheckGradients(env, text, inputs, options);
}

// --- MatMul, Gemm -------------------------------------------------------------------------------

TEST(GradNnTest, MatMulRanks) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes = {
      {{3, 4}, {4, 5}},          // plain
      {{2, 3, 4}, {4, 5}},       // shared weight: the flattened product
      {{4, 5}, {2, 5, 3}},       // a broadcast over b's batch
      {{2, 1, 3, 4}, {5, 4, 2}},  // both batches broadcast
      {{4}, {2, 4, 3}},          // 1-D a
      {{2, 3, 4}, {4}},          // 1-D b
      {{4}, {4}},                // dot
      {{4}, {4, 3}},
  };
  for (const auto& [a, b] : shapes) {
    absl::Status s = Check({"MatMul", {{"a", a}, {"b", b}}});
    EXPECT_TRUE(s.ok()) << "a [" << absl::StrJoin(a, ",") << "] b [" << absl::StrJoin(b, ",")
                        << "]: " << s;
  }
}

TEST(GradNnTest, GemmTranspositionsAlphaBetaAndBroadcastC) {
  for (int ta = 0; ta < 2; ++ta) {
    for (int tb = 0; tb < 2; ++tb) {
      const std::vector<int64_t> a = ta ? std::vector<int64_t>{4, 3} : std::vector<int64_t>{3, 4};
      const std::vector<int64_t> b = tb ? std::vector<int64_t>{5, 4} : std::vector<int64_t>{4, 5};
      for (const std::vector<int64_t>& c : {std::vector<int64_t>{5}, std::vector<int64_t>{3, 1},
                                            std::vector<int64_t>{3, 5}}) {
        absl::Status s = Check({"Gemm", {{"a", a}, {"b", b}, {"c", c}},
                                IntText("transA", ta) + IntText("transB", tb) +
                                    FloatText("alpha", 0.7f) + FloatText("beta", -1.5f)});
        EXPECT_TRUE(s.ok()) << "transA " << ta << " transB " << tb << " C ["
                            << absl::StrJoin(c, ",") << "]: " << s;
      }
    }
  }
  EXPECT_TRUE(Check({"Gemm", {{"a", {3, 4}}, {"b", {4, 5}}}}).ok());
}

// --- Convolutions -------------------------------------------------------------------------------

struct ConvCase {
  std::string name;
  std::vector<int64_t> x, w;
  std::string attrs;
  bool bias = true;
  int64_t bias_dim = 0;  // 0: W's first dim (Conv's M)
};

TEST(GradNnTest, ConvWindowsGroupsAndBias) {
  const std::vector<ConvCase> cases = {
      {"plain 3x3", {2, 3, 5, 5}, {4, 3, 3, 3}, ""},
      {"stride 2, pads", {1, 2, 7, 6}, {3, 2, 3, 3}, IntsText("strides", {2, 2}) +
                                                          IntsText("pads", {1, 0, 1, 2})},
      {"dilation 2", {1, 2, 7, 7}, {2, 2, 3, 3}, IntsText("dilations", {2, 2})},
      {"group 2", {1, 4, 5, 5}, {6, 2, 3, 3}, IntText("group", 2) + IntsText("pads", {1, 1, 1, 1})},
      {"depthwise, stride 2", {2, 3, 6, 6}, {3, 1, 3, 3},
       IntText("group", 3) + IntsText("strides", {2, 2}) + IntsText("pads", {1, 1, 1, 1})},
      {"SAME_UPPER, stride 2", {1, 2, 6, 5}, {3, 2, 3, 3},
       StringText("auto_pad", "SAME_UPPER") + IntsText("strides", {2, 2})},
      {"SAME_LOWER", {1, 2, 5, 5}, {2, 2, 2, 2}, StringText("auto_pad", "SAME_LOWER")},
      {"1x1 stride 2, unused rows", {1, 4, 6, 6}, {5, 4, 1, 1}, IntsText("strides", {2, 2}), false},
      {"7x7 stride 2 (a stem)", {1, 3, 11, 11}, {4, 3, 7, 7},
       IntsText("strides", {2, 2}) + IntsText("pads", {3, 3, 3, 3})},
      {"1-D", {2, 3, 9}, {4, 3, 3}, IntsText("strides", {2}) + IntsText("pads", {1, 2})},
      {"3-D", {1, 2, 4, 4, 4}, {3, 2, 2, 3, 2}, IntsText("pads", {1, 0, 1, 0, 1, 1})},
  };
  for (const ConvCase& c : cases) {
    Case k{"Conv", {{"x", c.x}, {"w", c.w}}, c.attrs};
    if (c.bias) k.inputs.push_back({"b", {c.w[0]}});
    absl::Status s = Check(k);
    EXPECT_TRUE(s.ok()) << c.name << ": " << s;
  }
}

TEST(GradNnTest, ConvTranspose) {
  const std::vector<ConvCase> cases = {
      {"plain", {1, 3, 4, 4}, {3, 2, 3, 3}, "", true, 2},
      {"stride 2, pads, output_padding", {2, 2, 3, 4}, {2, 3, 3, 3},
       IntsText("strides", {2, 2}) + IntsText("pads", {1, 0, 1, 1}) +
           IntsText("output_padding", {1, 0}),
       true, 3},
      {"group 2, dilation", {1, 4, 3, 3}, {4, 1, 2, 2},
       IntText("group", 2) + IntsText("dilations", {2, 2}), true, 2},
      {"output_shape", {1, 2, 3, 3}, {2, 2, 3, 3},
       IntsText("strides", {2, 2}) + IntsText("output_shape", {6, 6}), false},
      {"1-D SAME_UPPER", {1, 2, 5}, {2, 3, 4},
       StringText("auto_pad", "SAME_UPPER") + IntsText("strides", {2}), true, 3},
  };
  for (const ConvCase& c : cases) {
    Case k{"ConvTranspose", {{"x", c.x}, {"w", c.w}}, c.attrs};
    if (c.bias) k.inputs.push_back({"b", {c.bias_dim}});
    absl::Status s = Check(k);
    EXPECT_TRUE(s.ok()) << c.name << ": " << s;
  }
}

// The backward ops differentiated themselves: the second-order paths. X_shape / W_shape come
// from Shape of an input that is not differentiated.
TEST(GradNnTest, ConvGradOpsAreDifferentiable) {
  PassTestEnv env;
  const std::string attrs = IntText("group", 2) + IntsText("strides", {2, 1}) +
                            IntsText("pads", {1, 0, 1, 1});
  // Conv X [1, 4, 5, 5] * W [4, 2, 3, 3] -> Y [1, 4, 3, 4].
  const std::string data =
      InputText("dy", {1, 4, 3, 4}) + InputText("w", {4, 2, 3, 3}) + InputText("x", {1, 4, 5, 5}) +
      NodeText("Shape", {"x"}, "xs") +
      NodesText("ConvGradData", {"dy", "w", "xs"}, {"dx"}, attrs, "graphopt") + OutputText("dx");
  absl::Status s = CheckGradients(env, data,
                                  {{"dy", RandomTensor(v1::DT_FLOAT32, {1, 4, 3, 4}, 1)},
                                   {"w", RandomTensor(v1::DT_FLOAT32, {4, 2, 3, 3}, 2)},
                                   {"x", RandomTensor(v1::DT_FLOAT32, {1, 4, 5, 5}, 3)}},
                                  Wrt({"dy", "w"}));
  EXPECT_TRUE(s.ok()) << "ConvGradData: " << s;
  const std::string weight =
      InputText("x", {1, 4, 5, 5}) + InputText("dy", {1, 4, 3, 4}) + InputText("w", {4, 2, 3, 3}) +
      NodeText("Shape", {"w"}, "ws") +
      NodesText("ConvGradWeight", {"x", "dy", "ws"}, {"dw"}, attrs, "graphopt") +
      OutputText("dw");
  s = CheckGradients(env, weight,
                     {{"x", RandomTensor(v1::DT_FLOAT32, {1, 4, 5, 5}, 4)},
                      {"dy", RandomTensor(v1::DT_FLOAT32, {1, 4, 3, 4}, 5)},
                      {"w", RandomTensor(v1::DT_FLOAT32, {4, 2, 3, 3}, 6)}},
                     Wrt({"x", "dy"}));
  EXPECT_TRUE(s.ok()) << "ConvGradWeight: " << s;
}

// Double backward through a Conv: the gradient of sum(dL/dx * r) with respect to w, where the
// gradient pass first builds dL/dx (a ConvGradData) inside the graph.
TEST(GradNnTest, ConvDoubleBackward) {
  PassTestEnv env;
  const std::string text = InputText("x", {1, 2, 5, 5}) + InputText("w", {3, 2, 3, 3}) +
                           NodeText("Conv", {"x", "w"}, "y", IntsText("pads", {1, 1, 1, 1})) +
                           NodeText("Mul", {"y", "y"}, "l") + OutputText("l");
  absl::StatusOr<v1::Graph> first =
      env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                          {"gradient", {{"wrt", "x;w"}, {"loss", "l"}, {"suffix", "_d1"}}}});
  ASSERT_TRUE(first.ok()) << first.status();
  // l = y^2: x_d1 and w_d1 depend on x and w through Conv, ConvGradData and ConvGradWeight.
  v1::Graph g = *first;
  g.clear_outputs();
  g.add_outputs()->set_name("x_d1");
  g.add_outputs()->set_name("w_d1");
  std::string second;
  google::protobuf::TextFormat::PrintToString(g, &second);
  absl::Status s = CheckGradients(env, second,
                                  {{"x", RandomTensor(v1::DT_FLOAT32, {1, 2, 5, 5}, 7)},
                                   {"w", RandomTensor(v1::DT_FLOAT32, {3, 2, 3, 3}, 8)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Pools --------------------------------------------------------------------------------------

absl::Status CheckDistinct(const std::string& op, const std::vector<int64_t>& x,
                           const std::string& attrs, const std::vector<std::string>& outs = {"y"}) {
  PassTestEnv env;
  std::string text = InputText("x", Dims32(x)) + NodesText(op, {"x"}, outs, attrs);
  for (const std::string& o : outs) text += OutputText(o);
  return CheckGradients(env, text, {{"x", DistinctTensor(x, 3)}});
}

TEST(GradNnTest, MaxPool) {
  EXPECT_TRUE(CheckDistinct("MaxPool", {2, 2, 7, 7},
                            IntsText("kernel_shape", {3, 3}) + IntsText("strides", {2, 2}) +
                                IntsText("pads", {1, 1, 1, 1}),
                            {"y", "indices"})
                  .ok());
  EXPECT_TRUE(CheckDistinct("MaxPool", {1, 3, 6, 5},
                            IntsText("kernel_shape", {2, 3}) + IntText("ceil_mode", 1) +
                                IntsText("strides", {2, 2}))
                  .ok());
  EXPECT_TRUE(CheckDistinct("MaxPool", {2, 2, 9},
                            IntsText("kernel_shape", {3}) + IntsText("dilations", {2}) +
                                StringText("auto_pad", "SAME_UPPER"))
                  .ok());
}

TEST(GradNnTest, AveragePool) {
  for (int include = 0; include < 2; ++include) {
    for (int ceil = 0; ceil < 2; ++ceil) {
      absl::Status s = Check({"AveragePool", {{"x", {2, 2, 6, 7}}},
                              IntsText("kernel_shape", {3, 3}) + IntsText("strides", {2, 2}) +
                                  IntsText("pads", {1, 1, 0, 1}) +
                                  IntText("count_include_pad", include) + IntText("ceil_mode", ceil)});
      EXPECT_TRUE(s.ok()) << "count_include_pad " << include << " ceil_mode " << ceil << ": " << s;
    }
  }
  EXPECT_TRUE(Check({"AveragePool", {{"x", {1, 2, 8}}}, IntsText("kernel_shape", {3})}).ok());
}

TEST(GradNnTest, GlobalAndLpPools) {
  EXPECT_TRUE(Check({"GlobalAveragePool", {{"x", {2, 3, 4, 5}}}}).ok());
  EXPECT_TRUE(CheckDistinct("GlobalMaxPool", {2, 3, 4, 5}, "").ok());
  for (int p = 1; p <= 2; ++p) {
    absl::Status s = Check({"LpPool", {{"x", {1, 2, 5, 5}}},
                            IntsText("kernel_shape", {2, 2}) + IntsText("strides", {1, 2}) +
                                IntsText("pads", {1, 0, 0, 1}) + IntText("p", p),
                            0.2, 1.0});
    EXPECT_TRUE(s.ok()) << "p " << p << ": " << s;
  }
}

TEST(GradNnTest, PoolGradOpsAreDifferentiable) {
  PassTestEnv env;
  const std::string attrs = IntsText("kernel_shape", {3, 3}) + IntsText("strides", {2, 2}) +
                            IntsText("pads", {1, 1, 1, 1});
  const std::string max = InputText("dy", {1, 2, 3, 3}) + InputText("x", {1, 2, 6, 6}) +
                          NodesText("MaxPoolGrad", {"dy", "x"}, {"dx"}, attrs, "graphopt") +
                          OutputText("dx");
  absl::Status s = CheckGradients(env, max,
                                  {{"dy", RandomTensor(v1::DT_FLOAT32, {1, 2, 3, 3}, 1)},
                                   {"x", DistinctTensor({1, 2, 6, 6}, 2)}},
                                  Wrt({"dy"}));
  EXPECT_TRUE(s.ok()) << "MaxPoolGrad: " << s;
  const std::string avg =
      InputText("dy", {1, 2, 3, 3}) + InputText("x", {1, 2, 6, 6}) +
      NodeText("Shape", {"x"}, "xs") +
      NodesText("AveragePoolGrad", {"dy", "xs"}, {"dx"}, attrs + IntText("count_include_pad", 1),
                "graphopt") +
      OutputText("dx");
  s = CheckGradients(env, avg,
                     {{"dy", RandomTensor(v1::DT_FLOAT32, {1, 2, 3, 3}, 3)},
                      {"x", RandomTensor(v1::DT_FLOAT32, {1, 2, 6, 6}, 4)}},
                     Wrt({"dy"}));
  EXPECT_TRUE(s.ok()) << "AveragePoolGrad: " << s;
}

// --- Normalisations -----------------------------------------------------------------------------

Inputs BatchNormInputs(const std::vector<int64_t>& x) {
  const int64_t c = x[1];
  return {{"x", RandomTensor(v1::DT_FLOAT32, x, 1)},
          {"scale", RandomTensor(v1::DT_FLOAT32, {c}, 2, 0.5, 1.5)},
          {"bias", RandomTensor(v1::DT_FLOAT32, {c}, 3)},
          {"mean", RandomTensor(v1::DT_FLOAT32, {c}, 4, -0.3, 0.3)},
          {"var", RandomTensor(v1::DT_FLOAT32, {c}, 5, 0.5, 1.5)}};
}

std::string BatchNormText(const std::vector<int64_t>& x, const std::string& extra,
                          const std::vector<std::string>& outs) {
  const int c = static_cast<int>(x[1]);
  return InputText("x", Dims32(x)) + InputText("scale", {c}) + InputText("bias", {c}) +
         InputText("mean", {c}) + InputText("var", {c}) +
         NodesText("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, outs, extra) +
         OutputText("y");
}

TEST(GradNnTest, BatchNormInference) {
  PassTestEnv env;
  for (const std::vector<int64_t>& x : {std::vector<int64_t>{2, 3, 4, 5},
                                         std::vector<int64_t>{4, 3}}) {
    absl::Status s = CheckGradients(env, BatchNormText(x, FloatText("epsilon", 1e-3f), {"y"}),
                                    BatchNormInputs(x));
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(GradNnTest, BatchNormTraining) {
  PassTestEnv env;
  // running_mean and running_var are outputs of the node but not of the graph: they are
  // non-differentiable, and finite differences would see their dependence on x.
  const std::vector<int64_t> x = {3, 2, 3, 4};
  const std::string text = BatchNormText(x, IntText("training_mode", 1) + FloatText("momentum", 0.8f),
                                         {"y", "running_mean", "running_var"});
  absl::Status s = CheckGradients(env, text, BatchNormInputs(x),
                                  Wrt({"x", "scale", "bias"}));
  EXPECT_TRUE(s.ok()) << s;
  // mean and var feed only the running statistics: no gradient reaches them.
  absl::StatusOr<v1::Graph> g = env.RunSpecs(
      text, {{"infer_type", {}}, {"infer_shape", {}}, {"gradient", {{"wrt", "mean"}}}});
  ASSERT_TRUE(g.ok()) << g.status();
}

TEST(GradNnTest, LayerNormWithStatistics) {
  PassTestEnv env;
  for (int axis : {-1, 1}) {
    const std::string text =
        InputText("x", {2, 3, 4}) + InputText("scale", {4}) + InputText("bias", {4}) +
        NodesText("LayerNormalization", {"x", "scale", "bias"}, {"y", "mean", "inv"},
                  IntText("axis", axis)) +
        OutputText("y") + OutputText("mean") + OutputText("inv");
    Inputs in = {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3, 4}, 1)},
                 {"scale", RandomTensor(v1::DT_FLOAT32, {4}, 2)},
                 {"bias", RandomTensor(v1::DT_FLOAT32, {4}, 3)}};
    absl::Status s = CheckGradients(env, text, in);
    EXPECT_TRUE(s.ok()) << "axis " << axis << ": " << s;
  }
  // Y alone, Scale broadcast over two normalised axes.
  absl::Status s = Check({"LayerNormalization", {{"x", {3, 2, 5}}, {"scale", {2, 5}}},
                          IntText("axis", 1)});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(GradNnTest, InstanceNorm) {
  absl::Status s = Check({"InstanceNormalization", {{"x", {2, 3, 4, 3}}, {"scale", {3}}, {"b", {3}}}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Errors -------------------------------------------------------------------------------------

TEST(GradNnTest, LpPoolOfOtherOrdersIsNamed) {
  PassTestEnv env;
  const std::string text = InputText("x", {1, 1, 4, 4}) +
                           NodeText("LpPool", {"x"}, "y", IntsText("kernel_shape", {2, 2}) +
                                                                IntText("p", 3)) +
                           OutputText("y");
  absl::StatusOr<v1::Graph> g =
      env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}}, {"gradient", {{"wrt", "x"}}}});
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("p = 1 or 2"));
}

}  // namespace
}  // namespace graphopt
