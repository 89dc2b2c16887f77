// Builtin gradients of the elementwise ops against finite differences (passes/gradient_check.h),
// in float32 and float64, with numpy and legacy (opset < 7) broadcasting, and second order: the
// gradient pass run on its own output against finite differences of the first gradient.

#include <cmath>
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
#include "passes/runtime_test_util.h"

namespace graphopt {
namespace {

using ::graphopt::testing::CheckGradients;
using ::graphopt::testing::GradientCheckOptions;
using ::graphopt::testing::InputText;
using ::graphopt::testing::NodeText;
using ::graphopt::testing::OutputText;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::RandomTensor;
using ::testing::HasSubstr;

using Feed = std::vector<std::pair<std::string, runtime::Tensor>>;

const char* DtypeName(v1::DataType d) { return d == v1::DT_FLOAT64 ? "DT_FLOAT64" : "DT_FLOAT32"; }

std::string FloatAttr(const std::string& name, double v) {
  return absl::StrCat("attributes { name: \"", name, "\" f: ", v, " }");
}
std::string IntAttrText(const std::string& name, int64_t v) {
  return absl::StrCat("attributes { name: \"", name, "\" i: ", v, " }");
}
std::string Opset(int version) {
  return absl::StrCat("opset_imports { domain: \"\" version: ", version, " }\n");
}

double Get(const runtime::Tensor& t, int64_t i) {
  return t.dtype() == v1::DT_FLOAT64 ? t.data<double>()[i] : t.data<float>()[i];
}
void Set(runtime::Tensor& t, int64_t i, double v) {
  if (t.dtype() == v1::DT_FLOAT64) {
    t.data<double>()[i] = v;
  } else {
    t.data<float>()[i] = static_cast<float>(v);
  }
}

// Random values in [lo, hi) kept at least `margin` away from each kink, where finite
// differences would straddle a point without a derivative.
runtime::Tensor Away(v1::DataType dtype, const std::vector<int64_t>& dims, uint32_t seed,
                     double lo, double hi, const std::vector<double>& kinks,
                     double margin = 0.05) {
  runtime::Tensor t = RandomTensor(dtype, dims, seed, lo, hi);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    double v = Get(t, i);
    for (double k : kinks) {
      if (std::fabs(v - k) < margin) v = v < k ? k - margin : k + margin;
    }
    Set(t, i, v);
  }
  return t;
}

// A float initializer tensor in text form: name, dims, values.
std::string Initializer(const std::string& name, const std::vector<int64_t>& dims,
                        const std::vector<float>& values) {
  v1::Tensor t = testing::FloatTensorProto(name, dims, values);
  std::string text;
  google::protobuf::TextFormat::PrintToString(t, &text);
  return absl::StrCat("initializers { ", text, " }\n");
}

// --- Unary ops ---------------------------------------------------------------------------------

struct UnaryCase {
  const char* op;
  double lo, hi;
  std::vector<double> kinks;
  std::string attrs;
  bool float64 = true;  // the kernel takes float64
};

std::vector<UnaryCase> UnaryCases() {
  return {
      {"Identity", -1, 1, {}},
      {"Neg", -1, 1, {}},
      {"Abs", -1, 1, {0}},
      {"Sqrt", 0.5, 2, {}},
      {"Reciprocal", 0.5, 2, {}},
      {"Reciprocal", -2, -0.5, {}},
      {"Exp", -1, 1, {}},
      {"Log", 0.5, 2, {}},
      {"Erf", -1.5, 1.5, {}},
      {"Tanh", -2, 2, {}},
      {"Sigmoid", -3, 3, {}},
      {"Relu", -1, 1, {0}},
      {"LeakyRelu", -1, 1, {0}, FloatAttr("alpha", 0.1)},
      {"LeakyRelu", -1, 1, {0}},
      {"Elu", -2, 2, {0}, FloatAttr("alpha", 0.7)},
      {"Selu", -2, 2, {0}},
      {"Selu", -2, 2, {0}, FloatAttr("alpha", 1.5) + FloatAttr("gamma", 2.0)},
      {"Celu", -2, 2, {0}, FloatAttr("alpha", 1.3), false},
      {"Celu", -2, 2, {0}, "", false},
      {"ThresholdedRelu", -1, 2, {0.5}, FloatAttr("alpha", 0.5)},
      {"HardSigmoid", -4, 4, {-2.5, 2.5}},
      {"HardSigmoid", -2, 2, {-1, 1}, FloatAttr("alpha", 0.5) + FloatAttr("beta", 0.5)},
      {"HardSwish", -4.5, 4.5, {-3, 3}},
      {"Softplus", -3, 3, {}},
      {"Softsign", -3, 3, {}},
      {"Shrink", -2, 2, {-0.5, 0.5}, FloatAttr("bias", 0.2)},
      {"Sin", -2, 2, {}},
      {"Cos", -2, 2, {}},
      {"Tan", -1, 1, {}},
      {"Asin", -0.8, 0.8, {}},
      {"Acos", -0.8, 0.8, {}},
      {"Atan", -2, 2, {}},
      {"Sinh", -2, 2, {}},
      {"Cosh", -2, 2, {}},
      {"Asinh", -2, 2, {}},
      {"Acosh", 1.2, 3, {}},
      {"Atanh", -0.8, 0.8, {}},
  };
}

TEST(ElementwiseGradTest, UnaryOpsFloat32) {
  PassTestEnv env;
  for (const UnaryCase& c : UnaryCases()) {
    SCOPED_TRACE(absl::StrCat(c.op, " ", c.attrs));
    const std::string text = InputText("x", {3, 5}) + NodeText(c.op, {"x"}, "y", c.attrs) +
                             OutputText("y");
    absl::Status s = CheckGradients(
        env, text, {{"x", Away(v1::DT_FLOAT32, {3, 5}, 11, c.lo, c.hi, c.kinks)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(ElementwiseGradTest, UnaryOpsFloat64) {
  PassTestEnv env;
  GradientCheckOptions tight;
  tight.eps = 1e-6;
  tight.rtol = 1e-6;
  tight.atol = 1e-8;
  for (const UnaryCase& c : UnaryCases()) {
    if (!c.float64) continue;
    SCOPED_TRACE(absl::StrCat(c.op, " ", c.attrs));
    const std::string text = InputText("x", {3, 5}, "DT_FLOAT64") +
                             NodeText(c.op, {"x"}, "y", c.attrs) + OutputText("y");
    absl::Status s = CheckGradients(
        env, text, {{"x", Away(v1::DT_FLOAT64, {3, 5}, 12, c.lo, c.hi, c.kinks)}}, tight);
    EXPECT_TRUE(s.ok()) << s;
  }
}

// Sign, Floor, Ceil and Round contribute nothing: y = op(x) + x has derivative 1.
TEST(ElementwiseGradTest, PiecewiseConstantOpsHaveZeroDerivative) {
  PassTestEnv env;
  for (const char* op : {"Sign", "Floor", "Ceil", "Round"}) {
    SCOPED_TRACE(op);
    const std::string text = InputText("x", {2, 3}) + NodeText(op, {"x"}, "f") +
                             NodeText("Add", {"f", "x"}, "y") + OutputText("y");
    absl::Status s = CheckGradients(env, text, {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3}, 3, 1.1, 1.4)}});
    EXPECT_TRUE(s.ok()) << s;
  }
  // Through one of them alone the gradient is zero, not an error.
  const std::string text = InputText("x", {2, 3}) + NodeText("Floor", {"x"}, "y") + OutputText("y");
  absl::Status s = CheckGradients(env, text, {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3}, 3, 1.1, 1.4)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Binary ops with broadcasting --------------------------------------------------------------

struct BinaryCase {
  const char* op;
  double a_lo, a_hi, b_lo, b_hi;
  std::string attrs;
};

TEST(ElementwiseGradTest, BinaryOpsBroadcast) {
  PassTestEnv env;
  const std::vector<BinaryCase> cases = {
      {"Add", -1, 1, -1, 1, ""},
      {"Sub", -1, 1, -1, 1, ""},
      {"Mul", -1, 1, -1, 1, ""},
      {"Div", -1, 1, 0.5, 2, ""},
      {"Div", -1, 1, -2, -0.5, ""},
      {"Pow", 0.5, 2, -1.5, 1.5, ""},
      {"Mod", 2.1, 2.9, 1.5, 1.9, IntAttrText("fmod", 1)},
      {"Mod", -2.9, -2.1, 1.5, 1.9, IntAttrText("fmod", 1)},
  };
  const std::vector<std::pair<std::vector<int>, std::vector<int>>> shapes = {
      {{4, 3}, {4, 3}}, {{4, 3}, {3}}, {{4, 3}, {1, 3}}, {{4, 3}, {}},
      {{3}, {4, 3}},    {{4, 1}, {1, 3}}, {{}, {2, 3}}};
  for (v1::DataType dtype : {v1::DT_FLOAT32, v1::DT_FLOAT64}) {
    for (const BinaryCase& c : cases) {
      for (const auto& [sa, sb] : shapes) {
        SCOPED_TRACE(absl::StrCat(c.op, " ", c.attrs, " [", absl::StrJoin(sa, ","), "] [",
                                  absl::StrJoin(sb, ","), "] ", DtypeName(dtype)));
        const std::string text = InputText("a", sa, DtypeName(dtype)) +
                                 InputText("b", sb, DtypeName(dtype)) +
                                 NodeText(c.op, {"a", "b"}, "y", c.attrs) + OutputText("y");
        std::vector<int64_t> da(sa.begin(), sa.end()), db(sb.begin(), sb.end());
        absl::Status s = CheckGradients(env, text,
                                        {{"a", RandomTensor(dtype, da, 21, c.a_lo, c.a_hi)},
                                         {"b", RandomTensor(dtype, db, 22, c.b_lo, c.b_hi)}});
        EXPECT_TRUE(s.ok()) << s;
      }
    }
  }
}

// The same input on both sides: contributions are summed.
TEST(ElementwiseGradTest, SameInputTwice) {
  PassTestEnv env;
  for (const char* op : {"Mul", "Div", "Pow", "Sub", "Max"}) {
    SCOPED_TRACE(op);
    const std::string text = InputText("x", {2, 3}) + NodeText(op, {"x", "x"}, "y") +
                             OutputText("y");
    absl::Status s = CheckGradients(env, text, {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3}, 4, 0.5, 2)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

// Pow with constant exponents (initializers): x^2, x^0.5, x^3 of negative x, x^1, x^0.
TEST(ElementwiseGradTest, PowConstantExponent) {
  PassTestEnv env;
  const std::vector<std::pair<float, std::pair<double, double>>> cases = {
      {2.0f, {-2, 2}}, {0.5f, {0.5, 2}}, {3.0f, {-2, -0.5}}, {1.0f, {-1, 1}}, {0.0f, {-1, 1}},
      {-1.5f, {0.5, 2}}};
  for (const auto& [e, range] : cases) {
    SCOPED_TRACE(e);
    const std::string text = InputText("x", {2, 3}) + Initializer("e", {}, {e}) +
                             NodeText("Pow", {"x", "e"}, "p") +
                             NodeText("Add", {"p", "x"}, "y") + OutputText("y");
    absl::Status s = CheckGradients(
        env, text, {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3}, 5, range.first, range.second)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

// Pow's exponent gradient is 0 (not NaN) where the base is not positive, and the base's
// gradient 0 (not 0 * inf) where the exponent is 0.
TEST(ElementwiseGradTest, PowGradientsAreFiniteAtTheEdges) {
  PassTestEnv env;
  const std::string text = InputText("x", {4}) + InputText("e", {4}) +
                           NodeText("Pow", {"x", "e"}, "y") + OutputText("y");
  auto out = env.RunSpecs(text, {{"infer_type", {}}, {"infer_shape", {}},
                                 {"gradient", {{"wrt", "x;e"}, {"loss", "y"}}}});
  ASSERT_TRUE(out.ok()) << out.status();
  testing::TestRuntime runtime;
  auto grads = runtime.Run(*out, {{"x", testing::FloatTensor({4}, {0.0f, -2.0f, 0.0f, 2.0f})},
                                  {"e", testing::FloatTensor({4}, {0.0f, 2.0f, 2.0f, 3.0f})}});
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_EQ(grads->size(), 3u);
  const runtime::Tensor& dx = (*grads)[1];
  const runtime::Tensor& de = (*grads)[2];
  const float want_dx[] = {0, -4, 0, 12};
  const float want_de[] = {0, 0, 0, 8 * std::log(2.0f)};
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(dx.data<float>()[i], want_dx[i]) << i;
    EXPECT_FLOAT_EQ(de.data<float>()[i], want_de[i]) << i;
  }
}

// Opsets < 7 broadcast B into A from 'axis' (or the trailing dims) with broadcast=1.
TEST(ElementwiseGradTest, LegacyBroadcastOpset6) {
  PassTestEnv env;
  struct Case {
    std::vector<int> b;
    std::string attrs;
  };
  const std::vector<Case> cases = {
      {{4}, IntAttrText("broadcast", 1) + IntAttrText("axis", 0)},
      {{3}, IntAttrText("broadcast", 1)},
      {{4, 1}, IntAttrText("broadcast", 1) + IntAttrText("axis", 0)},
      {{}, IntAttrText("broadcast", 1)},
      {{1}, IntAttrText("broadcast", 1)},
      {{4, 3}, ""}};
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(absl::StrCat(op, " [", absl::StrJoin(c.b, ","), "] ", c.attrs));
      const std::string text = Opset(6) + InputText("a", {4, 3}) + InputText("b", c.b) +
                               NodeText(op, {"a", "b"}, "y", c.attrs) + OutputText("y");
      std::vector<int64_t> db(c.b.begin(), c.b.end());
      absl::Status s = CheckGradients(
          env, text, {{"a", RandomTensor(v1::DT_FLOAT32, {4, 3}, 31, 0.5, 2)},
                      {"b", RandomTensor(v1::DT_FLOAT32, db, 32, 0.5, 1.5)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
  // The unary gradients' constants broadcast under opset 6 too.
  for (const char* op : {"Tanh", "Sigmoid", "Sqrt", "LeakyRelu", "Elu", "HardSigmoid"}) {
    SCOPED_TRACE(op);
    const std::string text = Opset(6) + InputText("x", {2, 3}) + NodeText(op, {"x"}, "y") +
                             OutputText("y");
    absl::Status s = CheckGradients(env, text, {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3}, 33, 0.3, 1.5)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(ElementwiseGradTest, PReluSlopeBroadcast) {
  PassTestEnv env;
  const std::vector<std::vector<int>> slopes = {{3, 1}, {4}, {1}, {2, 3, 4}, {}, {1, 3, 1}};
  for (const auto& sd : slopes) {
    SCOPED_TRACE(absl::StrJoin(sd, ","));
    const std::string text = InputText("x", {2, 3, 4}) + InputText("s", sd) +
                             NodeText("PRelu", {"x", "s"}, "y") + OutputText("y");
    std::vector<int64_t> ds(sd.begin(), sd.end());
    absl::Status s = CheckGradients(env, text,
                                    {{"x", Away(v1::DT_FLOAT32, {2, 3, 4}, 41, -1, 1, {0})},
                                     {"s", RandomTensor(v1::DT_FLOAT32, ds, 42, 0.1, 0.5)}});
    EXPECT_TRUE(s.ok()) << s;
  }
  // Opset 6: a 1-D slope of the channel count applies along axis 1.
  const std::string legacy = Opset(6) + InputText("x", {2, 3, 4}) + InputText("s", {3}) +
                             NodeText("PRelu", {"x", "s"}, "y") + OutputText("y");
  absl::Status s = CheckGradients(env, legacy,
                                  {{"x", Away(v1::DT_FLOAT32, {2, 3, 4}, 43, -1, 1, {0})},
                                   {"s", RandomTensor(v1::DT_FLOAT32, {3}, 44, 0.1, 0.5)}});
  EXPECT_TRUE(s.ok()) << s;
}

// --- Variadic, Where, Cast, Clip ---------------------------------------------------------------

TEST(ElementwiseGradTest, VariadicOpsBroadcast) {
  PassTestEnv env;
  for (v1::DataType dtype : {v1::DT_FLOAT32, v1::DT_FLOAT64}) {
    for (const char* op : {"Sum", "Mean", "Min", "Max"}) {
      SCOPED_TRACE(absl::StrCat(op, " ", DtypeName(dtype)));
      const std::string text =
          InputText("a", {4, 3}, DtypeName(dtype)) + InputText("b", {3}, DtypeName(dtype)) +
          InputText("c", {4, 1}, DtypeName(dtype)) + NodeText(op, {"a", "b", "c"}, "y") +
          OutputText("y");
      absl::Status s = CheckGradients(env, text,
                                      {{"a", RandomTensor(dtype, {4, 3}, 51)},
                                       {"b", RandomTensor(dtype, {3}, 52)},
                                       {"c", RandomTensor(dtype, {4, 1}, 53)}});
      EXPECT_TRUE(s.ok()) << s;
    }
    for (const char* op : {"Sum", "Mean", "Min", "Max"}) {
      SCOPED_TRACE(absl::StrCat(op, " one input"));
      const std::string text = InputText("a", {4, 3}, DtypeName(dtype)) +
                               NodeText(op, {"a"}, "y") + OutputText("y");
      absl::Status s = CheckGradients(env, text, {{"a", RandomTensor(dtype, {4, 3}, 54)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

// Ties split the gradient evenly: d/da max(a, b) at a == b is 1/2 (the central difference).
TEST(ElementwiseGradTest, MaxTiesSplitEvenly) {
  PassTestEnv env;
  const std::string text = InputText("a", {3}) + InputText("b", {3}) +
                           NodeText("Max", {"a", "b"}, "y") + OutputText("y");
  runtime::Tensor a = testing::FloatTensor({3}, {0.5f, -1.0f, 2.0f});
  runtime::Tensor b = testing::FloatTensor({3}, {0.5f, -1.0f, 2.0f});
  absl::Status s = CheckGradients(env, text, {{"a", std::move(a)}, {"b", std::move(b)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ElementwiseGradTest, WhereBroadcast) {
  PassTestEnv env;
  for (v1::DataType dtype : {v1::DT_FLOAT32, v1::DT_FLOAT64}) {
    SCOPED_TRACE(DtypeName(dtype));
    const std::string text =
        InputText("c", {4, 3}, "DT_BOOL") + InputText("x", {3}, DtypeName(dtype)) +
        InputText("y", {4, 1}, DtypeName(dtype)) + NodeText("Where", {"c", "x", "y"}, "z") +
        OutputText("z");
    runtime::Tensor c = *runtime::Tensor::Allocate(v1::DT_BOOL, runtime::Shape{4, 3});
    for (int i = 0; i < 12; ++i) c.data<bool>()[i] = (i * 7) % 3 == 0;
    absl::Status s = CheckGradients(env, text,
                                    {{"c", std::move(c)},
                                     {"x", RandomTensor(dtype, {3}, 61)},
                                     {"y", RandomTensor(dtype, {4, 1}, 62)}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(ElementwiseGradTest, CastBackToTheInputType) {
  PassTestEnv env;
  // float32 -> float64 -> Mul -> float32; the int path (Cast to int32 and back) is pruned.
  const std::string text =
      InputText("x", {2, 3}) + InputText("w", {2, 3}, "DT_FLOAT64") +
      NodeText("Cast", {"x"}, "x64", IntAttrText("to", v1::DT_FLOAT64)) +
      NodeText("Mul", {"x64", "w"}, "m") +
      NodeText("Cast", {"m"}, "m32", IntAttrText("to", v1::DT_FLOAT32)) +
      NodeText("Cast", {"x"}, "xi", IntAttrText("to", v1::DT_INT32)) +
      NodeText("Cast", {"xi"}, "xf", IntAttrText("to", v1::DT_FLOAT32)) +
      NodeText("Add", {"m32", "xf"}, "y") + NodeText("CastLike", {"y", "w"}, "y64") +
      OutputText("y64");
  absl::Status s = CheckGradients(env, text,
                                  {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3}, 71, 0.1, 0.9)},
                                   {"w", RandomTensor(v1::DT_FLOAT64, {2, 3}, 72)}});
  EXPECT_TRUE(s.ok()) << s;
}

TEST(ElementwiseGradTest, ClipBoundsAsInputs) {
  PassTestEnv env;
  // min and max are differentiable inputs; x spans both sides of both bounds.
  struct Case {
    std::vector<std::string> inputs;
    float lo, hi;
  };
  const std::vector<Case> cases = {{{"x", "lo", "hi"}, -0.5f, 0.5f},
                                   {{"x", "lo"}, -0.5f, 0.5f},
                                   {{"x", "", "hi"}, -0.5f, 0.5f},
                                   {{"x"}, -0.5f, 0.5f},
                                   {{"x", "lo", "hi"}, 0.3f, -0.3f}};  // min > max: all max
  for (const Case& c : cases) {
    SCOPED_TRACE(absl::StrCat(absl::StrJoin(c.inputs, ","), " ", c.lo, " ", c.hi));
    const std::string text = InputText("x", {4, 5}) + InputText("lo", {}) + InputText("hi", {}) +
                             NodeText("Clip", c.inputs, "y") + OutputText("y");
    absl::Status s = CheckGradients(
        env, text,
        {{"x", Away(v1::DT_FLOAT32, {4, 5}, 81, -1, 1, {c.lo, c.hi})},
         {"lo", testing::FloatTensor({}, {c.lo})},
         {"hi", testing::FloatTensor({}, {c.hi})}},
        GradientCheckOptions{{"x", "lo", "hi"}});
    EXPECT_TRUE(s.ok()) << s;
  }
}

TEST(ElementwiseGradTest, ClipBoundsAsAttributes) {
  PassTestEnv env;
  const std::vector<std::pair<std::string, std::vector<double>>> cases = {
      {FloatAttr("min", -0.5) + FloatAttr("max", 0.4), {-0.5, 0.4}},
      {FloatAttr("min", -0.5), {-0.5}},
      {FloatAttr("max", 0.4), {0.4}},
      {"", {}},
      {FloatAttr("min", 0.4) + FloatAttr("max", -0.5), {0.4, -0.5}}};
  for (int opset : {6, 10}) {
    for (const auto& [attrs, kinks] : cases) {
      SCOPED_TRACE(absl::StrCat("opset ", opset, " ", attrs));
      const std::string text = Opset(opset) + InputText("x", {4, 5}) +
                               NodeText("Clip", {"x"}, "y", attrs) + OutputText("y");
      absl::Status s =
          CheckGradients(env, text, {{"x", Away(v1::DT_FLOAT32, {4, 5}, 82, -1, 1, kinks)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

// --- Second order ------------------------------------------------------------------------------

// The first gradient (suffix _d1, seeded by the input y_d1) as a graph of its own, whose
// outputs (y and x_d1) CheckGradients differentiates again: Hessian-vector products against
// finite differences of the first gradient.
absl::StatusOr<std::string> FirstGradient(const PassTestEnv& env, const std::string& text,
                                          const std::string& wrt) {
  absl::StatusOr<v1::Graph> g = env.RunSpecs(
      text, {{"infer_type", {}}, {"infer_shape", {}},
             {"gradient", {{"wrt", wrt}, {"suffix", "_d1"}}}});
  if (!g.ok()) return g.status();
  v1::Graph clean = *g;
  clean.clear_value_info();
  std::string out;
  if (!google::protobuf::TextFormat::PrintToString(clean, &out)) {
    return absl::InternalError("cannot print the first gradient");
  }
  return out;
}

TEST(ElementwiseGradTest, SecondOrderUnary) {
  PassTestEnv env;
  const std::vector<UnaryCase> cases = {
      {"Tanh", -2, 2, {}},     {"Sigmoid", -3, 3, {}}, {"Exp", -1, 1, {}},
      {"Log", 0.5, 2, {}},     {"Sqrt", 0.5, 2, {}},   {"Reciprocal", 0.5, 2, {}},
      {"Erf", -1.5, 1.5, {}},  {"Softplus", -2, 2, {}}, {"Sin", -2, 2, {}},
      {"Abs", -1, 1, {0}},     {"Elu", -2, 2, {0}},    {"Softsign", -2, 2, {0}},
      {"Atan", -2, 2, {}},     {"Relu", -1, 1, {0}}};
  for (v1::DataType dtype : {v1::DT_FLOAT32, v1::DT_FLOAT64}) {
    for (const UnaryCase& c : cases) {
      SCOPED_TRACE(absl::StrCat(c.op, " ", DtypeName(dtype)));
      const std::string text = InputText("x", {3, 4}, DtypeName(dtype)) +
                               NodeText(c.op, {"x"}, "y") + OutputText("y");
      absl::StatusOr<std::string> first = FirstGradient(env, text, "x");
      ASSERT_TRUE(first.ok()) << first.status();
      absl::Status s = CheckGradients(
          env, *first,
          {{"x", Away(dtype, {3, 4}, 101, c.lo, c.hi, c.kinks)},
           {"y_d1", RandomTensor(dtype, {3, 4}, 102)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

TEST(ElementwiseGradTest, SecondOrderBinary) {
  PassTestEnv env;
  const std::vector<BinaryCase> cases = {
      {"Mul", -1, 1, -1, 1, ""}, {"Div", -1, 1, 0.5, 2, ""}, {"Pow", 0.5, 2, -1.5, 1.5, ""},
      {"Sub", -1, 1, -1, 1, ""}, {"Max", -1, 1, -1, 1, ""}};
  for (v1::DataType dtype : {v1::DT_FLOAT32, v1::DT_FLOAT64}) {
    for (const BinaryCase& c : cases) {
      SCOPED_TRACE(absl::StrCat(c.op, " ", DtypeName(dtype)));
      const std::string text = InputText("a", {3, 4}, DtypeName(dtype)) +
                               InputText("b", {3, 4}, DtypeName(dtype)) +
                               NodeText(c.op, {"a", "b"}, "y") + OutputText("y");
      absl::StatusOr<std::string> first = FirstGradient(env, text, "a;b");
      ASSERT_TRUE(first.ok()) << first.status();
      absl::Status s = CheckGradients(
          env, *first,
          {{"a", RandomTensor(dtype, {3, 4}, 111, c.a_lo, c.a_hi)},
           {"b", RandomTensor(dtype, {3, 4}, 112, c.b_lo, c.b_hi)},
           {"y_d1", RandomTensor(dtype, {3, 4}, 113)}});
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

// A gradient norm: d/dx sum((d/dx sum(tanh(x) * sigmoid(x)))^2), a chain of several ops.
TEST(ElementwiseGradTest, SecondOrderChain) {
  PassTestEnv env;
  const std::string text = InputText("x", {2, 3}) + InputText("w", {2, 3}) +
                           NodeText("Tanh", {"x"}, "t") + NodeText("Sigmoid", {"x"}, "s") +
                           NodeText("Mul", {"t", "s"}, "m") + NodeText("Mul", {"m", "w"}, "p") +
                           NodeText("Exp", {"p"}, "y") + OutputText("y");
  absl::StatusOr<std::string> first = FirstGradient(env, text, "x;w");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::Status s = CheckGradients(env, *first,
                                  {{"x", RandomTensor(v1::DT_FLOAT32, {2, 3}, 121)},
                                   {"w", RandomTensor(v1::DT_FLOAT32, {2, 3}, 122)},
                                   {"y_d1", RandomTensor(v1::DT_FLOAT32, {2, 3}, 123)}});
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace graphopt
