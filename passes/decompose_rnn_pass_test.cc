#include "passes/decompose_rnn_pass.h"

#include <algorithm>
#include <cstdint>
#include <map>
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
using ::graphopt::testing::OpTypes;
using ::graphopt::testing::OptimizeAndCompare;
using ::graphopt::testing::PassTestEnv;
using ::graphopt::testing::RandomTensor;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

using Feeds = std::vector<std::pair<std::string, runtime::Tensor>>;

// One recurrent node with its inputs as graph inputs (so that gradients reach them all).
struct Case {
  std::string op = "LSTM";
  int64_t seq = 3;
  int64_t batch = 2;
  int64_t input = 4;
  int64_t hidden = 3;
  std::string direction = "forward";
  int layout = 0;
  bool bias = true;
  bool initial_h = true;
  bool initial_c = true;
  bool peepholes = false;
  bool symbolic_batch = true;
  bool symbolic_seq = false;
  int opset = 14;
  // Graph outputs, by output index (Y, Y_h, Y_c).
  std::vector<int> outputs = {0, 1, 2};
  // Attribute text besides hidden_size and direction.
  std::string attrs;
  // sequence_lens as an int32 initializer, when not empty.
  std::vector<int32_t> sequence_lens;
  v1::DataType dtype = v1::DT_FLOAT32;
};

int Dirs(const Case& c) { return c.direction == "bidirectional" ? 2 : 1; }
int Gates(const Case& c) { return c.op == "RNN" ? 1 : c.op == "GRU" ? 3 : 4; }
bool IsLstm(const Case& c) { return c.op == "LSTM"; }

struct Input {
  std::string name;
  std::vector<int64_t> dims;  // -1: the symbolic batch
};

std::vector<Input> Inputs(const Case& c) {
  const int64_t d = Dirs(c), gh = Gates(c) * c.hidden, b = c.symbolic_batch ? -1 : c.batch;
  std::vector<Input> in;
  const int64_t s = c.symbolic_seq ? -2 : c.seq;
  in.push_back({"X", c.layout == 0 ? std::vector<int64_t>{s, b, c.input}
                                   : std::vector<int64_t>{b, s, c.input}});
  in.push_back({"W", {d, gh, c.input}});
  in.push_back({"R", {d, gh, c.hidden}});
  if (c.bias) in.push_back({"B", {d, 2 * gh}});
  const std::vector<int64_t> state =
      c.layout == 0 ? std::vector<int64_t>{d, b, c.hidden} : std::vector<int64_t>{b, d, c.hidden};
  if (c.initial_h) in.push_back({"initial_h", state});
  if (IsLstm(c) && c.initial_c) in.push_back({"initial_c", state});
  if (IsLstm(c) && c.peepholes) in.push_back({"P", {d, 3 * c.hidden}});
  return in;
}

std::string GraphText(const Case& c) {
  std::string text = absl::StrCat("opset_imports { domain: \"\" version: ", c.opset, " }\n");
  const std::string dtype = c.dtype == v1::DT_FLOAT64 ? "DT_FLOAT64" : "DT_FLOAT32";
  for (const Input& in : Inputs(c)) {
    std::string shape;
    for (int64_t d : in.dims) {
      if (d == -1) {
        absl::StrAppend(&shape, " dims { symbol: \"batch\" }");
      } else if (d == -2) {
        absl::StrAppend(&shape, " dims { symbol: \"seq\" }");
      } else {
        absl::StrAppend(&shape, " dims { size: ", d, " }");
      }
    }
    absl::StrAppend(&text, "inputs { name: \"", in.name, "\" type { dtype: ", dtype, " shape {",
                    shape, " } } }\n");
  }
  std::vector<std::string> ins = {"X", "W", "R", c.bias ? "B" : "",
                                  c.sequence_lens.empty() ? "" : "lens",
                                  c.initial_h ? "initial_h" : ""};
  if (IsLstm(c)) {
    ins.push_back(c.initial_c ? "initial_c" : "");
    ins.push_back(c.peepholes ? "P" : "");
  }
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  const std::vector<std::string> names = {"Y", "Y_h", "Y_c"};
  const int num_outputs = IsLstm(c) ? 3 : 2;
  std::vector<int> used;
  for (int k : c.outputs) {
    if (k < num_outputs) used.push_back(k);
  }
  std::vector<std::string> outs(num_outputs);
  for (int k : used) outs[k] = names[k];
  while (!outs.empty() && outs.back().empty()) outs.pop_back();
  absl::StrAppend(&text, "nodes { op_type: \"", c.op, "\" name: \"rnn\"");
  for (const std::string& i : ins) absl::StrAppend(&text, " inputs: \"", i, "\"");
  for (const std::string& o : outs) absl::StrAppend(&text, " outputs: \"", o, "\"");
  absl::StrAppend(&text, " attributes { name: \"hidden_size\" i: ", c.hidden, " }",
                  " attributes { name: \"direction\" s: \"", c.direction, "\" }");
  if (c.layout != 0) absl::StrAppend(&text, " attributes { name: \"layout\" i: ", c.layout, " }");
  absl::StrAppend(&text, " ", c.attrs, " }\n");
  for (int k : used) absl::StrAppend(&text, "outputs { name: \"", names[k], "\" }\n");
  if (!c.sequence_lens.empty()) {
    v1::Tensor t;
    t.set_name("lens");
    t.set_dtype(v1::DT_INT32);
    t.add_dims(static_cast<int64_t>(c.sequence_lens.size()));
    t.set_raw_data(std::string(reinterpret_cast<const char*>(c.sequence_lens.data()),
                               c.sequence_lens.size() * sizeof(int32_t)));
    text = testing::WithInitializers(text, {t});
  }
  return text;
}

Feeds Values(const Case& c) {
  Feeds feeds;
  uint32_t seed = 11;
  for (const Input& in : Inputs(c)) {
    std::vector<int64_t> dims = in.dims;
    for (int64_t& d : dims) {
      if (d == -1) d = c.batch;
      if (d == -2) d = c.seq;
    }
    // Weights small enough that the gates are not all saturated.
    const double scale = in.name == "X" ? 1.0 : 0.6;
    feeds.push_back({in.name, RandomTensor(c.dtype, dims, seed++, -scale, scale)});
  }
  return feeds;
}

std::vector<PassSpec> Passes(std::map<std::string, std::string> options = {}) {
  return {{"infer_type", {}}, {"infer_shape", {}}, {"decompose_rnn", std::move(options)}};
}

// Decomposes the case's graph and compares with the recurrent kernel; returns the result.
absl::StatusOr<v1::Graph> Decompose(const Case& c, PipelineResult* result = nullptr,
                                    std::map<std::string, std::string> options = {}) {
  PassTestEnv env;
  return OptimizeAndCompare(env, GraphText(c), Passes(std::move(options)), Values(c),
                            /*bit_exact=*/false, /*rtol=*/1e-5, result);
}

void ExpectUnrolled(const Case& c) {
  SCOPED_TRACE(GraphText(c));
  PipelineResult result;
  absl::StatusOr<v1::Graph> g = Decompose(c, &result);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(OpTypes(*g), Not(Contains(c.op)));
  ASSERT_FALSE(result.runs.empty());
  EXPECT_THAT(result.runs.back().messages,
              Contains(HasSubstr(absl::StrCat("unrolled 1 ", c.op, " node (", c.seq * Dirs(c),
                                              " steps) into "))));
}

// --- Every op kind and direction ----------------------------------------------------------

class KindDirectionTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(KindDirectionTest, ComputesWhatTheKernelDoes) {
  Case c;
  c.op = std::get<0>(GetParam());
  c.direction = std::get<1>(GetParam());
  ExpectUnrolled(c);
}

TEST_P(KindDirectionTest, LayoutOne) {
  Case c;
  c.op = std::get<0>(GetParam());
  c.direction = std::get<1>(GetParam());
  c.layout = 1;
  ExpectUnrolled(c);
}

TEST_P(KindDirectionTest, NoBiasNoInitialStates) {
  Case c;
  c.op = std::get<0>(GetParam());
  c.direction = std::get<1>(GetParam());
  c.bias = false;
  c.initial_h = false;
  c.initial_c = false;
  ExpectUnrolled(c);
}

TEST_P(KindDirectionTest, StaticBatchDoubleOneStep) {
  Case c;
  c.op = std::get<0>(GetParam());
  c.direction = std::get<1>(GetParam());
  c.symbolic_batch = false;
  c.dtype = v1::DT_FLOAT64;
  c.seq = 1;
  ExpectUnrolled(c);
}

INSTANTIATE_TEST_SUITE_P(All, KindDirectionTest,
                         ::testing::Combine(::testing::Values("RNN", "GRU", "LSTM"),
                                            ::testing::Values("forward", "reverse",
                                                              "bidirectional")));

// --- Attributes and optional inputs ---------------------------------------------------------

TEST(DecomposeRnnTest, GruLinearBeforeReset) {
  for (bool bias : {true, false}) {
    for (bool h0 : {true, false}) {
      Case c;
      c.op = "GRU";
      c.direction = "bidirectional";
      c.bias = bias;
      c.initial_h = h0;
      c.attrs = "attributes { name: \"linear_before_reset\" i: 1 }";
      ExpectUnrolled(c);
    }
  }
}

TEST(DecomposeRnnTest, LstmPeepholesAndInputForget) {
  for (bool c0 : {true, false}) {
    for (bool input_forget : {false, true}) {
      Case c;
      c.direction = "bidirectional";
      c.peepholes = true;
      c.initial_c = c0;
      if (input_forget) c.attrs = "attributes { name: \"input_forget\" i: 1 }";
      ExpectUnrolled(c);
    }
  }
}

TEST(DecomposeRnnTest, ActivationsWithAlphaAndBeta) {
  Case rnn;
  rnn.op = "RNN";
  rnn.direction = "bidirectional";
  rnn.attrs = R"pb(attributes { name: "activations" strings { values: [ "Relu", "LeakyRelu" ] } }
                   attributes { name: "activation_alpha" floats { values: [ 0.3 ] } })pb";
  ExpectUnrolled(rnn);

  Case gru;
  gru.op = "GRU";
  gru.attrs = R"pb(attributes { name: "activations" strings { values: [ "HardSigmoid", "Softsign" ] } }
                   attributes { name: "activation_alpha" floats { values: [ 0.3 ] } }
                   attributes { name: "activation_beta" floats { values: [ 0.4 ] } })pb";
  ExpectUnrolled(gru);

  // One direction's list serves both; alpha/beta are consumed in order across the list.
  Case lstm;
  lstm.direction = "bidirectional";
  lstm.attrs =
      R"pb(attributes { name: "activations" strings { values: [ "sigmoid", "ScaledTanh", "Affine" ] } }
           attributes { name: "activation_alpha" floats { values: [ 0.9, 0.7 ] } }
           attributes { name: "activation_beta" floats { values: [ 1.1, 0.2 ] } })pb";
  ExpectUnrolled(lstm);

  Case more;
  more.op = "RNN";
  more.direction = "bidirectional";
  more.attrs = R"pb(attributes { name: "activations" strings { values: [ "Elu", "Softplus" ] } })pb";
  ExpectUnrolled(more);
  more.attrs =
      R"pb(attributes { name: "activations" strings { values: [ "ThresholdedRelu", "Tanh" ] } }
           attributes { name: "activation_alpha" floats { values: [ 0.1 ] } })pb";
  ExpectUnrolled(more);
}

TEST(DecomposeRnnTest, Clip) {
  for (const std::string op : {"RNN", "GRU", "LSTM"}) {
    Case c;
    c.op = op;
    c.attrs = "attributes { name: \"clip\" f: 0.3 }";
    ExpectUnrolled(c);
  }
}

// Opset forms: Squeeze/Unsqueeze/Split take attributes before 13, Clip before 11.
TEST(DecomposeRnnTest, OpsetForms) {
  for (int opset : {9, 12, 13, 18}) {
    for (const std::string op : {"GRU", "LSTM"}) {
      Case c;
      c.op = op;
      c.opset = opset;
      c.direction = "bidirectional";
      c.attrs = "attributes { name: \"clip\" f: 0.8 }";
      ExpectUnrolled(c);
    }
  }
}

TEST(DecomposeRnnTest, OnlyUsedOutputsAreBuilt) {
  Case all;
  all.direction = "bidirectional";
  Case last = all;
  last.outputs = {1};
  PipelineResult r_all, r_last;
  absl::StatusOr<v1::Graph> g_all = Decompose(all, &r_all);
  absl::StatusOr<v1::Graph> g_last = Decompose(last, &r_last);
  ASSERT_TRUE(g_all.ok()) << g_all.status();
  ASSERT_TRUE(g_last.ok()) << g_last.status();
  EXPECT_LT(g_last->nodes_size(), g_all->nodes_size());
  // Y_c alone (Y and Y_h omitted).
  Case cell = all;
  cell.outputs = {2};
  ExpectUnrolled(cell);
}

TEST(DecomposeRnnTest, SequenceLensOfFullLengthAccepted) {
  Case c;
  c.symbolic_batch = false;
  c.sequence_lens = {3, 3};
  ExpectUnrolled(c);
}

TEST(DecomposeRnnTest, SequenceLensShorterRefused) {
  Case c;
  c.symbolic_batch = false;
  c.sequence_lens = {3, 2};
  PassTestEnv env;
  absl::StatusOr<v1::Graph> g = env.RunSpecs(GraphText(c), Passes());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("'rnn' (LSTM)"));
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("sequence_lens[1] = 2"));
}

TEST(DecomposeRnnTest, SequenceLensNotConstantRefused) {
  Case c;
  std::string text = GraphText(c);
  // sequence_lens as a graph input.
  const std::string node = "inputs: \"B\"";
  text.replace(text.find(node), node.size(), "inputs: \"B\" inputs: \"lens\"");
  text = absl::StrCat("inputs { name: \"lens\" type { dtype: DT_INT32 shape { dims { symbol: "
                      "\"batch\" } } } }\n",
                      text);
  PassTestEnv env;
  absl::StatusOr<v1::Graph> g = env.RunSpecs(text, Passes());
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("sequence_lens is not a constant"));
}

TEST(DecomposeRnnTest, MaxStepsRefusesLongerSequences) {
  Case c;
  c.seq = 5;
  PassTestEnv env;
  absl::StatusOr<v1::Graph> g = env.RunSpecs(GraphText(c), Passes({{"max_steps", "4"}}));
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("'rnn' (LSTM)"));
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("sequence length 5"));
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("max_steps"));
  EXPECT_TRUE(env.RunSpecs(GraphText(c), Passes({{"max_steps", "5"}})).ok());
  // The server's ceiling bounds the option.
  g = env.RunSpecs(GraphText(c), Passes({{"max_steps", "100000000"}}));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("ceiling"));
  g = env.RunSpecs(GraphText(c), Passes({{"max_steps", "zero"}}));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("max_steps"));
}

TEST(DecomposeRnnTest, OpsOptionSelects) {
  Case c;
  PipelineResult result;
  PassTestEnv env;
  absl::StatusOr<v1::Graph> g = env.RunSpecs(GraphText(c), Passes({{"ops", "GRU;RNN"}}), &result);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(OpTypes(*g), Contains("LSTM"));
  EXPECT_FALSE(result.runs.back().changed);
  c.op = "GRU";
  absl::StatusOr<v1::Graph> gru = Decompose(c, nullptr, {{"ops", "GRU;RNN"}});
  ASSERT_TRUE(gru.ok()) << gru.status();
  EXPECT_THAT(OpTypes(*gru), Not(Contains("GRU")));
  g = env.RunSpecs(GraphText(c), Passes({{"ops", "LSTM;Conv"}}));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("'Conv' is not LSTM, GRU or RNN"));
}

TEST(DecomposeRnnTest, SymbolicSequenceIsLeftWithANote) {
  Case c;
  c.symbolic_seq = true;
  PipelineResult result;
  PassTestEnv env;
  absl::StatusOr<v1::Graph> g = env.RunSpecs(GraphText(c), Passes(), &result);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_THAT(OpTypes(*g), Contains("LSTM"));
  EXPECT_THAT(result.runs.back().messages,
              Contains(AllOf(HasSubstr("'rnn' (LSTM)"), HasSubstr("sequence length"))));
}

TEST(DecomposeRnnTest, DeterministicNamesAndBytes) {
  Case c;
  c.direction = "bidirectional";
  PassTestEnv env;
  absl::StatusOr<v1::Graph> a = env.RunSpecs(GraphText(c), Passes());
  absl::StatusOr<v1::Graph> b = env.RunSpecs(GraphText(c), Passes());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->SerializeAsString(), b->SerializeAsString());
  std::vector<std::string> names;
  for (const v1::Node& n : a->nodes()) names.push_back(n.name());
  EXPECT_THAT(names, Contains("rnn/t0/d0/h"));
  EXPECT_THAT(names, Contains("rnn/t2/d1/h"));
  EXPECT_THAT(names, Contains("rnn/Y"));
}

// The unrolled size is linear in the sequence length: the same nodes for every step.
TEST(DecomposeRnnTest, LinearInSteps) {
  std::vector<int> sizes;
  for (int64_t seq : {8, 16, 32}) {
    Case c;
    c.seq = seq;
    c.input = 2;
    c.hidden = 2;
    PassTestEnv env;
    absl::StatusOr<v1::Graph> g = env.RunSpecs(GraphText(c), Passes());
    ASSERT_TRUE(g.ok()) << g.status();
    sizes.push_back(g->nodes_size());
  }
  EXPECT_GT(sizes[1], sizes[0]);
  EXPECT_EQ(sizes[2] - sizes[1], 2 * (sizes[1] - sizes[0]));
}

// --- Gradients through the decomposition ------------------------------------------------------

// The decomposed graph of `c` as text, for CheckGradients.
std::string DecomposedText(const Case& c) {
  PassTestEnv env;
  absl::StatusOr<v1::Graph> g = env.RunSpecs(GraphText(c), Passes());
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return "";
  std::string text;
  google::protobuf::TextFormat::PrintToString(*g, &text);
  return text;
}

void ExpectGradients(const Case& c) {
  SCOPED_TRACE(absl::StrCat(c.op, " ", c.direction));
  PassTestEnv env;
  GradientCheckOptions options;
  absl::Status s = CheckGradients(env, DecomposedText(c), Values(c), options);
  EXPECT_TRUE(s.ok()) << s;
}

Case SmallGradientCase(const std::string& op, const std::string& direction) {
  Case c;
  c.op = op;
  c.direction = direction;
  c.seq = 3;
  c.batch = 2;
  c.input = 3;
  c.hidden = 2;
  c.dtype = v1::DT_FLOAT64;
  return c;
}

// Disabled until Sigmoid and Tanh have builtin gradients and the gradient pass stops reading a
// forward node through a reference that its own sums (Accumulate) can invalidate.
TEST(DecomposeRnnGradientTest, DISABLED_Lstm) {
  ExpectGradients(SmallGradientCase("LSTM", "bidirectional"));
  Case peep = SmallGradientCase("LSTM", "forward");
  peep.peepholes = true;
  peep.layout = 1;
  ExpectGradients(peep);
  // Without initial states the first step's forget gate is unused (an unread Split output).
  Case no_state = SmallGradientCase("LSTM", "reverse");
  no_state.initial_h = false;
  no_state.initial_c = false;
  ExpectGradients(no_state);
}

TEST(DecomposeRnnGradientTest, DISABLED_Gru) {
  ExpectGradients(SmallGradientCase("GRU", "reverse"));
  Case lbr = SmallGradientCase("GRU", "bidirectional");
  lbr.attrs = "attributes { name: \"linear_before_reset\" i: 1 }";
  ExpectGradients(lbr);
  Case no_state = SmallGradientCase("GRU", "forward");
  no_state.initial_h = false;
  ExpectGradients(no_state);
}

TEST(DecomposeRnnGradientTest, DISABLED_Rnn) {
  ExpectGradients(SmallGradientCase("RNN", "bidirectional"));
  Case no_state = SmallGradientCase("RNN", "forward");
  no_state.initial_h = false;
  no_state.bias = false;
  ExpectGradients(no_state);
}

}  // namespace
}  // namespace graphopt
