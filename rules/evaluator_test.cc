// Evaluation of compiled rules on nodes of a small IR graph: arithmetic, lists, three-valued
// logic, symbolic dims, input and attribute access, runtime errors with their positions,
// limits, and type and cost rules. Every test runs twice: on the VM (the production engine)
// and on the reference interpreter (interpreter.h), against the same expectations.

#include <atomic>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "rules/interpreter.h"
#include "rules/rule.h"
#include "rules/test_util.h"

namespace graphopt {
namespace {

using rules_testing::AInt;
using rules_testing::AInts;
using rules_testing::AString;
using rules_testing::AttrSpec;
using rules_testing::Descriptor;
using rules_testing::TestGraph;

struct OpSpec {
  std::vector<std::string> inputs = {"X"};
  std::vector<std::string> outputs = {"Y"};
  std::vector<v1::AttributeSpec> attrs;
  std::string type_rule;
  RuleLimits limits;
};

enum class Engine { kVm, kInterpreter };

class EvalTest : public ::testing::TestWithParam<Engine> {
 protected:
  // The rule's results on the engine under test.
  static absl::Status Shape(const CompiledRule& rule, InferenceContext& ctx) {
    if (GetParam() == Engine::kVm) return ApplyShapeRule(rule, ctx);
    return rules::InterpretShape(rule.program(), rule.limits(), ctx);
  }
  static absl::Status Types(const CompiledRule& rule, InferenceContext& ctx) {
    if (GetParam() == Engine::kVm) return ApplyTypeRule(rule, ctx);
    return rules::InterpretType(rule.program(), rule.limits(), ctx);
  }
  static absl::StatusOr<std::optional<int64_t>> Cost(const CompiledRule& rule,
                                                     const InferenceContext& ctx) {
    if (GetParam() == Engine::kVm) return EvaluateCostRule(rule, ctx);
    return rules::InterpretCost(rule.program(), rule.limits(), ctx);
  }

  // Registers an op whose shape rule is `shape_rule`; returns its name.
  std::string Define(const std::string& shape_rule, OpSpec spec = OpSpec()) {
    const std::string name = absl::StrCat("Op", ops_++);
    v1::OpDescriptor d = Descriptor(name, spec.inputs, spec.outputs, spec.attrs);
    OpDef def;
    absl::StatusOr<std::shared_ptr<const CompiledRule>> shape =
        CompileRule(shape_rule, RuleKind::kShape, d, "shape_rule", spec.limits);
    EXPECT_TRUE(shape.ok()) << shape.status();
    if (!shape.ok()) return "";
    def.shape_fn = [rule = *shape](InferenceContext& ctx) { return Shape(*rule, ctx); };
    d.mutable_shape_rule()->set_expr(shape_rule);
    if (!spec.type_rule.empty()) {
      absl::StatusOr<std::shared_ptr<const CompiledRule>> type =
          CompileRule(spec.type_rule, RuleKind::kType, d, "type_rule", spec.limits);
      EXPECT_TRUE(type.ok()) << type.status();
      if (!type.ok()) return "";
      def.type_fn = [rule = *type](InferenceContext& ctx) { return Types(*rule, ctx); };
    }
    def.descriptor = d;
    absl::Status s = registry_.Register(std::move(def));
    EXPECT_TRUE(s.ok()) << s;
    return name;
  }

  // Runs one node of `op` whose inputs are typed `types` ("float32[2,batch]"; "const:1,2" for
  // an int64 constant; "" for an absent input). Returns the outputs' types joined by "; ", or
  // the error message.
  std::string Run(const std::string& op, const std::vector<std::string>& types,
                  AttributeMap attrs = {}, int64_t opset = 0, int num_outputs = -1) {
    graph_ = std::make_unique<TestGraph>(&registry_);
    if (opset > 0) graph_->SetOpset(opset, "test.rules");
    const std::vector<std::string> in = graph_->Inputs(types);
    std::vector<std::string> out;
    const OpDef* def = registry_.Find("test.rules", op);
    const int n = num_outputs >= 0 ? num_outputs : def->descriptor.outputs_size();
    for (int i = 0; i < n; ++i) out.push_back(absl::StrCat("out", i));
    graph_->Node(op, in, out, std::move(attrs), "test.rules");
    absl::Status s = graph_->Run();
    if (!s.ok()) return std::string(s.message());
    std::vector<std::string> result;
    for (const std::string& o : out) result.push_back(graph_->T(o));
    return absl::StrJoin(result, "; ");
  }

  // `output[0] = <list expression>;` on X (default float32[2,3,4]): the output's shape.
  std::string List(const std::string& expr, const std::string& x = "float32[2,3,4]",
                   AttributeMap attrs = {}, OpSpec spec = OpSpec()) {
    const std::string op = Define(absl::StrCat("output[0] = ", expr, ";"), spec);
    if (op.empty()) return "<compile error>";
    std::string r = Run(op, {x}, std::move(attrs));
    return absl::StartsWith(r, "float32") ? r.substr(7) : r;
  }
  // `output[0] = [<int expression>];`.
  std::string Int(const std::string& expr, const std::string& x = "float32[2,3,4]") {
    return List(absl::StrCat("[", expr, "]"), x);
  }
  // A bool expression: "true", "false" or "unknown".
  std::string Bool(const std::string& expr, const std::string& x = "float32[2,3,4]") {
    const std::string r = List(absl::StrCat("if ", expr, " then [1] else [0]"), x);
    return r == "[1]" ? "true" : r == "[0]" ? "false" : r == "[?..]" ? "unknown" : r;
  }

  std::string DimsValue(const std::string& name) { return graph_->DimsValue(name); }

  OpRegistry registry_;
  std::unique_ptr<TestGraph> graph_;
  int ops_ = 0;
};

TEST_P(EvalTest, Arithmetic) {
  EXPECT_EQ(Int("1 + 2 * 3 - 4"), "[3]");
  EXPECT_EQ(Int("7 // 2"), "[3]");
  EXPECT_EQ(Int("-7 // 2 + 10"), "[6]");  // floor division: -4
  EXPECT_EQ(Int("-7 % 3"), "[2]");        // Python's modulo
  EXPECT_EQ(Int("cdiv(7, 2)"), "[4]");
  EXPECT_EQ(Int("abs(-5)"), "[5]");
  EXPECT_EQ(Int("min(4, 2, 9)"), "[2]");
  EXPECT_EQ(Int("max([4, 2, 9])"), "[9]");
  EXPECT_EQ(Int("-(-3)"), "[3]");
  EXPECT_EQ(Int("9223372036854775807 - 9223372036854775807"), "[0]");
}

TEST_P(EvalTest, ListsAndComprehensions) {
  EXPECT_EQ(List("shape(X)"), "[2,3,4]");
  EXPECT_EQ(List("shape(X)[1:]"), "[3,4]");
  EXPECT_EQ(List("shape(X)[:-1]"), "[2,3]");
  EXPECT_EQ(List("shape(X)[-10:10]"), "[2,3,4]");
  EXPECT_EQ(List("shape(X)[2:1]"), "[]");
  EXPECT_EQ(List("[shape(X)[-1], shape(X)[0]]"), "[4,2]");
  EXPECT_EQ(List("shape(X) ++ [5] ++ []"), "[2,3,4,5]");
  EXPECT_EQ(List("[d * 2 for d in shape(X)]"), "[4,6,8]");
  EXPECT_EQ(List("[i for i in range(10) if i % 3 == 0]"), "[0,3,6,9]");
  EXPECT_EQ(List("range(5, 1, -2)"), "[5,3]");
  EXPECT_EQ(List("range(2, 2)"), "[]");
  EXPECT_EQ(List("[len(shape(X)), sum(shape(X)), prod(shape(X)), prod([])]"), "[3,9,24,1]");
  EXPECT_EQ(List("flatten([[1], [], [2, 3]])"), "[1,2,3]");
  EXPECT_EQ(List("[x[0] for x in [[1, 2], [3]]]"), "[1,3]");
  EXPECT_EQ(List("[rank(X), dim(X, -1), dim(X, 0)]"), "[3,4,2]");
  EXPECT_EQ(List("[if shape(X) == [2, 3, 4] then 1 else 0]"), "[1]");
  EXPECT_EQ(List("[if shape(X) == [2, 3] then 1 else 0]"), "[0]");
}

TEST_P(EvalTest, Logic) {
  EXPECT_EQ(Bool("1 < 2 and not (2 <= 1) or false"), "true");
  EXPECT_EQ(Bool("3 in {1, 2, 3}"), "true");
  EXPECT_EQ(Bool("4 in {1, 2, 3}"), "false");
  EXPECT_EQ(Bool("all([true, 1 == 1])"), "true");
  EXPECT_EQ(Bool("any([false, 1 == 2])"), "false");
  EXPECT_EQ(Bool("known(dim(X, 0))"), "true");
  // Unknown values make unknown conditions; Kleene logic decides what it can.
  const std::string x = "float32[?,3]";
  EXPECT_EQ(Bool("dim(X, 0) == 2", x), "unknown");
  EXPECT_EQ(Bool("dim(X, 0) == 2 and false", x), "false");
  EXPECT_EQ(Bool("false and dim(X, 0) == 2", x), "false");
  EXPECT_EQ(Bool("dim(X, 0) == 2 or true", x), "true");
  EXPECT_EQ(Bool("not (dim(X, 0) == 2)", x), "unknown");
  EXPECT_EQ(Bool("known(dim(X, 0))", x), "false");
  EXPECT_EQ(Bool("dim(X, 0) in {1, 3}", x), "unknown");
  EXPECT_EQ(Bool("3 in {dim(X, 0), 3}", x), "true");
  EXPECT_EQ(Bool("all([dim(X, 0) == 1, true])", x), "unknown");
  EXPECT_EQ(Bool("all([dim(X, 0) == 1, false])", x), "false");
  EXPECT_EQ(List("if dim(X, 0) == 2 then [1] else [2]", x), "[?..]");
  EXPECT_EQ(List("[dim(X, 0) + 1, dim(X, 1)]", x), "[?,3]");
  EXPECT_EQ(List("[dim(X, 0) * 0]", x), "[0]");
  EXPECT_EQ(List("[min(dim(X, 0), 3)]", x), "[?]");
  EXPECT_EQ(List("[if known(dim(X, 0)) then dim(X, 0) else 7]", x), "[7]");
  EXPECT_EQ(Bool("distinct([2, 0, 1])"), "true");
  EXPECT_EQ(Bool("distinct([])"), "true");
  EXPECT_EQ(Bool("distinct([1, 0, 1])"), "false");
  EXPECT_EQ(Bool("distinct([dim(X, 0), 3])", x), "unknown");
  EXPECT_EQ(Bool("distinct([dim(X, 0), 3, 3])", x), "false");
  EXPECT_EQ(Bool("distinct([dim(X, 1), 2])", x), "true");
}

// The whole truth tables of and, or and not over true, false and unknown (Kleene), with the
// operands as plain values and as results of comparisons.
TEST_P(EvalTest, KleeneTruthTables) {
  const std::string x = "float32[?,3]";
  const std::vector<std::pair<std::string, std::string>> values = {
      {"true", "true"}, {"false", "false"}, {"(dim(X, 0) == 2)", "unknown"},
      {"(dim(X, 1) == 3)", "true"}, {"(dim(X, 1) > 3)", "false"}};
  auto kleene_and = [](const std::string& a, const std::string& b) {
    if (a == "false" || b == "false") return std::string("false");
    if (a == "unknown" || b == "unknown") return std::string("unknown");
    return std::string("true");
  };
  auto kleene_not = [](const std::string& a) {
    return a == "unknown" ? a : std::string(a == "true" ? "false" : "true");
  };
  for (const auto& [a, va] : values) {
    EXPECT_EQ(Bool(absl::StrCat("not ", a), x), kleene_not(va)) << a;
    for (const auto& [b, vb] : values) {
      EXPECT_EQ(Bool(absl::StrCat(a, " and ", b), x), kleene_and(va, vb)) << a << " and " << b;
      EXPECT_EQ(Bool(absl::StrCat(a, " or ", b), x),
                kleene_not(kleene_and(kleene_not(va), kleene_not(vb))))
          << a << " or " << b;
    }
  }
}

TEST_P(EvalTest, UnknownRankPropagates) {
  const std::string x = "float32[?..]";
  EXPECT_EQ(List("shape(X)", x), "[?..]");
  EXPECT_EQ(List("shape(X) ++ [1]", x), "[?..]");
  EXPECT_EQ(List("[rank(X)]", x), "[?]");
  EXPECT_EQ(List("[dim(X, 5)]", x), "[?]");
  EXPECT_EQ(List("[d for d in shape(X)]", x), "[?..]");
  EXPECT_EQ(List("[i for i in range(rank(X))]", x), "[?..]");
  EXPECT_EQ(List("shape(X)[1:]", x), "[?..]");
  EXPECT_EQ(List("[len(shape(X)), sum(shape(X))]", x), "[?,?]");
  EXPECT_EQ(List("unknown"), "[?..]");
  EXPECT_EQ(List("shape(X) | [1, 2]", x), "[1,2]");
  EXPECT_EQ(List("shape(X) | [1, 2]"), "[2,3,4]");
}

TEST_P(EvalTest, SymbolicDims) {
  const std::string x = "float32[batch,seq,4]";
  EXPECT_EQ(List("shape(X)", x), "[batch,seq,4]");
  EXPECT_EQ(List("[dim(X, 0)]", x), "[batch]");
  EXPECT_EQ(List("[dim(X, 1) * 2, 2 * dim(X, 1)]", x), "[2*seq,2*seq]");
  EXPECT_EQ(List("[dim(X, 1) + 1, 1 + dim(X, 1)]", x), "[seq+1,seq+1]");
  EXPECT_EQ(List("[dim(X, 0) * dim(X, 1), dim(X, 1) * dim(X, 0)]", x), "[batch*seq,batch*seq]");
  EXPECT_EQ(List("[dim(X, 1) - dim(X, 1), (dim(X, 1) + 2) - dim(X, 1)]", x), "[0,2]");
  EXPECT_EQ(List("[dim(X, 1) // 2, dim(X, 1) % 2, cdiv(dim(X, 1), 2)]", x), "[?,?,?]");
  EXPECT_EQ(List("[(2 * dim(X, 1) + 1) // 2, (2 * dim(X, 1) + 3) % 2]", x), "[seq,1]");
  EXPECT_EQ(List("[dim(X, 0) * dim(X, 1) // dim(X, 1)]", x), "[batch]");
  EXPECT_EQ(List("[prod(shape(X)) // 4]", x), "[batch*seq]");
  EXPECT_EQ(List("[dim(X, 1) - 1]", x), "[seq-1]");
  EXPECT_EQ(List("[4 - dim(X, 1)]", x), "[-seq+4]");
  EXPECT_EQ(List("[min(dim(X, 1), dim(X, 1) + 1), max(dim(X, 1), dim(X, 1) - 3)]", x),
            "[seq,seq]");
  EXPECT_EQ(List("[min(dim(X, 0), dim(X, 1)), max(dim(X, 0), 1), abs(dim(X, 0))]", x), "[?,?,?]");
  EXPECT_EQ(Bool("dim(X, 1) + 1 > dim(X, 1)", x), "true");
  EXPECT_EQ(Bool("dim(X, 1) == dim(X, 1)", x), "true");
  EXPECT_EQ(Bool("dim(X, 0) == dim(X, 1)", x), "unknown");
  EXPECT_EQ(Bool("dim(X, 0) == 3", x), "unknown");
  EXPECT_EQ(Bool("known(dim(X, 0))", x), "false");
  // Symbol strings in canonical polynomial form are read back as polynomials.
  EXPECT_EQ(List("[dim(X, 0) // 2, dim(X, 1) - 1, dim(X, 2) * 3]", "float32[2*seq,seq+1,N]"),
            "[seq,seq,3*N]");
  // Others are atoms: "seq*2" is not canonical.
  EXPECT_EQ(List("[dim(X, 0) // 2, dim(X, 0)]", "float32[seq*2]"), "[?,seq*2]");
  EXPECT_EQ(List("[dim(X, 0) * 2]", "float32[seq*2]"), "[2*(seq*2)]");
}

// Single-symbol values (coef * atom) take a fast path; results must equal the polynomial ones.
TEST_P(EvalTest, MonomialFastPath) {
  const std::string x = "float32[batch,seq]";
  EXPECT_EQ(List("[dim(X, 0) * 12 // dim(X, 0), 12 * dim(X, 0) // (3 * dim(X, 0)), "
                 "dim(X, 0) * 6 // 3, 0 // dim(X, 0), dim(X, 0) * 4 % 2, "
                 "dim(X, 0) * 3 - dim(X, 0) * 3, 3 * dim(X, 0) + dim(X, 0), -dim(X, 0), "
                 "dim(X, 0) * -2]",
                 x),
            "[12,4,2*batch,0,0,0,4*batch,-batch,-2*batch]");
  EXPECT_EQ(List("[dim(X, 0) * 6 // 4, 12 // dim(X, 0), dim(X, 0) * 6 // dim(X, 1), "
                 "dim(X, 0) * 3 % 2, 3 * dim(X, 0) // (2 * dim(X, 0))]",
                 x),
            "[?,?,?,?,?]");
  EXPECT_EQ(List("[dim(X, 0) + 1, dim(X, 0) * dim(X, 1), dim(X, 0) + dim(X, 1)]", x),
            "[batch+1,batch*seq,batch+seq]");
  EXPECT_EQ(Bool("dim(X, 0) * 2 == 2 * dim(X, 0)", x), "true");
  EXPECT_EQ(Bool("dim(X, 0) * 2 <= 2 * dim(X, 0)", x), "true");
  EXPECT_EQ(Bool("dim(X, 0) * 2 < 2 * dim(X, 0)", x), "false");
  EXPECT_EQ(Bool("dim(X, 0) * 2 == dim(X, 0) * 3", x), "unknown");
  EXPECT_EQ(Bool("dim(X, 0) * 2 == 4", x), "unknown");
  EXPECT_EQ(Bool("dim(X, 0) == dim(X, 1)", x), "unknown");
  EXPECT_EQ(List("[dim(X, 0) * 4611686018427387904 * 2]", x),
            "node 'n0_Op9' (test.rules::Op9): shape_rule 1:46: integer overflow in "
            "4611686018427387904*batch * 2");
}

// c * symbol arithmetic is computed without polynomials: overflow is still detected (with the
// operands in the message), and substituting a size for the symbol gives what the concrete
// evaluation gives.
TEST_P(EvalTest, MonomialFastPathOverflowAndConcreteAgreement) {
  EXPECT_EQ(List("[dim(X, 0) * 4611686018427387904 * 4]", "float32[batch]"),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:46: integer overflow in "
            "4611686018427387904*batch * 4");
  EXPECT_EQ(List("[dim(X, 0) * 4611686018427387904 * 4]", "float32[3]"),
            "node 'n0_Op1' (test.rules::Op1): shape_rule 1:24: integer overflow in 3 * "
            "4611686018427387904");
  EXPECT_EQ(List("[dim(X, 0) * 9223372036854775807 + dim(X, 0)]", "float32[batch]"),
            "node 'n0_Op2' (test.rules::Op2): shape_rule 1:46: integer overflow in "
            "9223372036854775807*batch + batch");
  EXPECT_EQ(List("[-9223372036854775807 * dim(X, 0) - dim(X, 0) * 2]", "float32[batch]"),
            "node 'n0_Op3' (test.rules::Op3): shape_rule 1:47: integer overflow in "
            "-9223372036854775807*batch - 2*batch");
  const std::string exprs =
      "[dim(X, 0) * 3 * 4, 2 * dim(X, 0) + 3 * dim(X, 0), dim(X, 0) * 5 - 2 * dim(X, 0), "
      "prod(shape(X)), prod(shape(X)) // 12, sum([dim(X, 0), dim(X, 0)]), "
      "dim(X, 0) * 4 - dim(X, 0) * 4 + 1, 0 * dim(X, 0), -dim(X, 0) * -3]";
  EXPECT_EQ(List(exprs, "float32[batch,3,4]"),
            "[12*batch,5*batch,3*batch,12*batch,batch,2*batch,1,0,3*batch]");
  EXPECT_EQ(List(exprs, "float32[7,3,4]"), "[84,35,21,84,7,14,1,0,21]");
}

TEST_P(EvalTest, Broadcasting) {
  OpSpec two;
  two.inputs = {"A", "B"};
  const std::string op = Define("output[0] = broadcast(shape(A), shape(B));", two);
  EXPECT_EQ(Run(op, {"float32[2,1,4]", "float32[3,1]"}), "float32[2,3,4]");
  EXPECT_EQ(Run(op, {"float32[batch,1]", "float32[1,3]"}), "float32[batch,3]");
  EXPECT_EQ(Run(op, {"float32[batch,seq]", "float32[batch,1]"}), "float32[batch,seq]");
  EXPECT_EQ(Run(op, {"float32[a]", "float32[b]"}), "float32[?]");
  EXPECT_EQ(Run(op, {"float32[?]", "float32[1]"}), "float32[?]");
  EXPECT_EQ(Run(op, {"float32[?]", "float32[5]"}), "float32[5]");
  EXPECT_EQ(Run(op, {"float32[?..]", "float32[5]"}), "float32[?..]");
  EXPECT_EQ(Run(op, {"float32[]", "float32[5]"}), "float32[5]");
  EXPECT_EQ(Run(op, {"float32[2,3]", "float32[4]"}),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:13: cannot broadcast shapes [2,3] "
            "(operand 0) and [4] (operand 1): dim 3 vs 4 at output axis 1");
  OpSpec var;
  var.inputs = {"xs*"};
  const std::string many = Define("output[0] = broadcast(shapes(xs));", var);
  EXPECT_EQ(Run(many, {"float32[3,1]", "float32[1,4]", "float32[2,1,1]"}), "float32[2,3,4]");
}

TEST_P(EvalTest, Helpers) {
  EXPECT_EQ(Int("normalize_axis(-1, 3)"), "[2]");
  EXPECT_EQ(Int("normalize_axis(-1, rank(X))", "float32[?..]"), "[?]");
  EXPECT_EQ(Int("merge(dim(X, 0), 2)", "float32[?,3]"), "[2]");
  EXPECT_EQ(Int("merge([dim(X, 0), dim(X, 0)])", "float32[n]"), "[n]");
  EXPECT_EQ(Int("merge(dim(X, 0), dim(X, 1))", "float32[n,m]"), "[?]");
  EXPECT_EQ(Int("merge(dim(X, 0), dim(X, 1))", "float32[n,?]"), "[n]");
  EXPECT_EQ(Int("dtype_size(dtype(X))"), "[4]");
}

TEST_P(EvalTest, InputsAttributesAndValues) {
  OpSpec spec;
  spec.inputs = {"data", "shape?", "rest*"};
  spec.attrs = {AttrSpec("axis", v1::ATTR_INT, AInt(3)), AttrSpec("pads", v1::ATTR_INTS),
                AttrSpec("mode", v1::ATTR_STRING, AString("constant"))};
  const std::string op = Define(
      "output[0] = [if has(shape) then 1 else 0, count(rest), num_inputs(), attr.axis,\n"
      "             attr(\"pads\", [7, 7])[1], if attr.mode == \"edge\" then 1 else 0,\n"
      "             if has_attr(\"axis\") then 1 else 0, opset()]\n"
      "            ++ (if has(shape) then value(shape) else [])\n"
      "            ++ [rank(rest[k]) for k in range(count(rest))];",
      spec);
  EXPECT_EQ(Run(op, {"int64[1]"}), "int64[0,0,1,3,7,0,0,0]");
  EXPECT_EQ(Run(op, {"int64[1]", "const:5,6", "int64[1]", "int64[1,2]"},
                {{"axis", AInt(2)}, {"pads", AInts({1, 2})}, {"mode", AString("edge")}}, 13),
            "int64[1,2,4,2,2,1,1,13,5,6,1,2]");
  // Omitted optional input in the middle.
  EXPECT_EQ(Run(op, {"int64[1]", "", "int64[3]"}), "int64[0,1,3,3,7,0,0,0,1]");
  // value() of an input whose contents are not known.
  EXPECT_EQ(Run(op, {"int64[1]", "int64[2]"}), "int64[?..]");
}

TEST_P(EvalTest, DimsValues) {
  OpSpec spec;
  spec.inputs = {"X"};
  const std::string op =
      Define("output[0] = [rank(X)];\noutput[0].value = shape(X) ++ [dim(X, 0) * 2];", spec);
  EXPECT_EQ(Run(op, {"float32[batch,3]"}), "float32[2]");
  EXPECT_EQ(DimsValue("out0"), "[batch,3,2*batch]");
  EXPECT_EQ(Run(op, {"float32[?..]"}), "float32[?]");
  EXPECT_EQ(DimsValue("out0"), "none");
  // value() reads a value another rule computed.
  OpSpec reader;
  reader.inputs = {"S"};
  const std::string read = Define("output[0] = value(S);", reader);
  graph_ = std::make_unique<TestGraph>(&registry_);
  graph_->In("x", "float32[batch,3]");
  graph_->Node(op, {"x"}, {"s"}, {}, "test.rules");
  graph_->Node(read, {"s"}, {"y"}, {}, "test.rules");
  ASSERT_TRUE(graph_->Run().ok());
  EXPECT_EQ(graph_->T("y"), "float32[batch,3,2*batch]");
}

TEST_P(EvalTest, RuntimeErrorsNameNodeRuleAndPosition) {
  const std::string x = "float32[2,3]";
  EXPECT_EQ(List("[9223372036854775807 + dim(X, 0)]", x),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:34: integer overflow in "
            "9223372036854775807 + 2");
  EXPECT_EQ(List("[-9223372036854775807 - 2]", x),
            "node 'n0_Op1' (test.rules::Op1): shape_rule 1:35: integer overflow in "
            "-9223372036854775807 - 2");
  EXPECT_EQ(List("[3037000500 * 3037000500]", x),
            "node 'n0_Op2' (test.rules::Op2): shape_rule 1:25: integer overflow in 3037000500 * "
            "3037000500");
  EXPECT_EQ(List("[dim(X, 0) // (dim(X, 1) - 3)]", x),
            "node 'n0_Op3' (test.rules::Op3): shape_rule 1:24: division by zero");
  EXPECT_EQ(List("[dim(X, 2)]", x),
            "node 'n0_Op4' (test.rules::Op4): shape_rule 1:14: dim(): index 2 is out of range "
            "for input 'X' of rank 2 (shape [2,3])");
  EXPECT_EQ(List("[shape(X)[5]]", x),
            "node 'n0_Op5' (test.rules::Op5): shape_rule 1:22: index 5 is out of range for "
            "[2,3] (length 2)");
  EXPECT_EQ(List("[normalize_axis(3, 2)]", x),
            "node 'n0_Op6' (test.rules::Op6): shape_rule 1:14: axis 3 is out of range for rank "
            "2 (expected [-2, 1])");
  EXPECT_EQ(List("[merge(dim(X, 0), 3)]", x),
            "node 'n0_Op7' (test.rules::Op7): shape_rule 1:14: merge(): sizes 2 and 3 differ");
  EXPECT_EQ(List("[fail(\"bad rank \", rank(X), \" for \", shape(X))]", x),
            "node 'n0_Op8' (test.rules::Op8): shape_rule 1:14: bad rank 2 for [2,3]");
  EXPECT_EQ(List("[min([])]", x),
            "node 'n0_Op9' (test.rules::Op9): shape_rule 1:14: min() of an empty list");
  EXPECT_EQ(List("[0 - dim(X, 0)]", x),
            "node 'n0_Op10' (test.rules::Op10): shape_rule 1:1: output[0] has a negative dim -2 "
            "at index 0: [-2]");
  EXPECT_EQ(List("range(0, 3, 0)", x),
            "node 'n0_Op11' (test.rules::Op11): shape_rule 1:13: range() step must not be zero");
}

TEST_P(EvalTest, Asserts) {
  const std::string op = Define(
      "assert rank(X) >= 2, \"X must have rank >= 2, got \", shape(X);\n"
      "assert dim(X, 0) != 0;\n"
      "output[0] = shape(X);");
  EXPECT_EQ(Run(op, {"float32[2,3]"}), "float32[2,3]");
  EXPECT_EQ(Run(op, {"float32[7]"}),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:1: X must have rank >= 2, got [7]");
  EXPECT_EQ(Run(op, {"float32[0,1]"}),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 2:1: assertion failed: dim(X, 0) != 0");
  // Unknown conditions pass.
  EXPECT_EQ(Run(op, {"float32[?..]"}), "float32[?..]");
  EXPECT_EQ(Run(op, {"float32[n,1]"}), "float32[n,1]");
}

TEST_P(EvalTest, AttributesAtRunTime) {
  OpSpec spec;
  spec.attrs = {AttrSpec("k", v1::ATTR_INT), AttrSpec("names", v1::ATTR_STRINGS),
                AttrSpec("s", v1::ATTR_SHAPE)};
  const std::string op = Define("output[0] = [attr.k, len(attr(\"names\", []))];", spec);
  EXPECT_EQ(Run(op, {"float32[1]"}, {{"k", AInt(4)}}), "float32[4,0]");
  EXPECT_EQ(Run(op, {"float32[1]"}),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:14: attribute 'k' is not set and has "
            "no default (use attr(\"k\", fallback) or has_attr(\"k\"))");
  EXPECT_EQ(Run(op, {"float32[1]"}, {{"k", AString("x")}}),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:14: attribute 'k' must be an int, "
            "got string");
  const std::string shape_attr = Define("output[0] = attr.s;", spec);
  v1::Attribute s;
  s.mutable_shape()->add_dims()->set_size(3);
  s.mutable_shape()->add_dims()->set_symbol("batch");
  s.mutable_shape()->add_dims();
  EXPECT_EQ(Run(shape_attr, {"float32[1]"}, {{"s", s}}), "float32[3,batch,?]");
  EXPECT_EQ(Run(shape_attr, {"float32[1]"}, {{"s", AInts({2, 2})}}), "float32[2,2]");
}

TEST_P(EvalTest, OptionalAndVariadicInputs) {
  OpSpec spec;
  spec.inputs = {"X", "B?"};
  const std::string op = Define("output[0] = shape(B);", spec);
  EXPECT_EQ(Run(op, {"float32[1]"}),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:13: input 'B' is absent (test has(B) "
            "first)");
  OpSpec var;
  var.inputs = {"xs*"};
  const std::string item = Define("output[0] = shape(xs[-1]) ++ shape(xs[2]);", var);
  EXPECT_EQ(Run(item, {"float32[1]", "float32[2]", "float32[3]"}), "float32[3,3]");
  EXPECT_EQ(Run(item, {"float32[1]", "float32[2]"}),
            "node 'n0_Op1' (test.rules::Op1): shape_rule 1:30: index 2 is out of range for the 2 "
            "inputs of 'xs'");
}

TEST_P(EvalTest, OutputsStatements) {
  OpSpec spec;
  spec.inputs = {"X"};
  spec.outputs = {"Y", "Z?"};
  const std::string one = Define("output[0] = shape(X);", spec);
  // An output the rule does not assign gets an unknown rank.
  EXPECT_EQ(Run(one, {"float32[2]"}), "float32[2]; float32[?..]");
  OpSpec split;
  split.inputs = {"X"};
  split.outputs = {"parts*"};
  const std::string all = Define(
      "let n = count(parts);\n"
      "assert dim(X, 0) % n == 0, \"cannot split \", dim(X, 0), \" into \", n;\n"
      "output[*] = [[dim(X, 0) // n] ++ shape(X)[1:] for i in range(n)];",
      split);
  EXPECT_EQ(Run(all, {"float32[6,4]"}, {}, 0, 3), "float32[2,4]; float32[2,4]; float32[2,4]");
  EXPECT_EQ(Run(all, {"float32[2*seq,4]"}, {}, 0, 2), "float32[seq,4]; float32[seq,4]");
  EXPECT_EQ(Run(all, {"float32[7,4]"}, {}, 0, 2),
            "node 'n0_Op1' (test.rules::Op1): shape_rule 2:1: cannot split 7 into 2");
  const std::string wrong = Define("output[*] = [shape(X)];", split);
  EXPECT_EQ(Run(wrong, {"float32[6]"}, {}, 0, 2),
            "node 'n0_Op2' (test.rules::Op2): shape_rule 1:1: output[*] has 1 shapes but the "
            "node has 2 outputs");
}

TEST_P(EvalTest, StepBudgetAndListLimit) {
  OpSpec limited;
  limited.limits.max_steps = 1000;
  EXPECT_EQ(List("[sum([i for i in range(2000)])]", "float32[1]", {}, limited),
            "node 'n0_Op0' (test.rules::Op0): shape_rule 1:30: evaluation exceeded the budget of "
            "1000 steps");
  // The default budget bounds the worst nesting the limits allow.
  EXPECT_NE(List("[sum([sum([sum([i * j * k for k in range(4096)]) for j in range(4096)]) for "
                 "i in range(4096)])]",
                 "float32[1]")
                .find("exceeded the budget of 1000000 steps"),
            std::string::npos);
  EXPECT_EQ(List("range(5000)", "float32[1]"),
            "node 'n0_Op2' (test.rules::Op2): shape_rule 1:13: range() of 5000 elements exceeds "
            "the limit of 4096");
  EXPECT_EQ(List("range(-9223372036854775807, 9223372036854775807)", "float32[1]"),
            "node 'n0_Op3' (test.rules::Op3): shape_rule 1:13: range() of 9223372036854775807 "
            "elements exceeds the limit of 4096");
  // Doubling a list hits the length limit long before memory matters.
  EXPECT_NE(List("[len(l ++ l ++ l ++ l ++ l ++ l ++ l ++ l ++ l) for l in [range(4096)]]",
                 "float32[1]")
                .find("a list of 8192 elements exceeds the limit of 4096"),
            std::string::npos);
}

TEST_P(EvalTest, TypeRules) {
  OpSpec spec;
  spec.inputs = {"X", "W"};
  spec.outputs = {"Y", "Z"};
  spec.attrs = {AttrSpec("to", v1::ATTR_INT)};
  spec.type_rule =
      "T in {float32, float16};\n"
      "output[0] = attr_dtype(\"to\") | dtype(X) | float32;\n"
      "output[1] = if dtype(T) == float16 then float32 else int64;";
  const std::string op = Define("output[0] = shape(X);\noutput[1] = shape(W);", spec);
  EXPECT_EQ(Run(op, {"float32[1]", "float32[2]"}), "float32[1]; int64[2]");
  EXPECT_EQ(Run(op, {"float16[1]", "float16[2]"}), "float16[1]; float32[2]");
  EXPECT_EQ(Run(op, {"float16[1]", "float16[2]"}, {{"to", AInt(v1::DT_INT32)}}),
            "int32[1]; float32[2]");
  EXPECT_EQ(Run(op, {"int64[1]", "int64[2]"}),
            "node 'n0_Op0' (test.rules::Op0): type_rule 1:1: input 'X' has type int64, which 'T "
            "in {...}' does not allow (allowed: float32, float16)");
  EXPECT_EQ(Run(op, {"float32[1]", "float32[2]"}, {{"to", AInt(99)}}),
            "node 'n0_Op0' (test.rules::Op0): type_rule 2:13: attribute 'to' is not a data "
            "type: 99");
  // Unknown input types: the constraint passes and the outputs fall back.
  EXPECT_EQ(Run(op, {"?", "?"}), "float32[?..]; undefined[?..]");
}

TEST_P(EvalTest, CostRules) {
  OpSpec spec;
  spec.inputs = {"A", "B"};
  v1::OpDescriptor d = Descriptor("Costly", spec.inputs, spec.outputs);
  absl::StatusOr<std::shared_ptr<const CompiledRule>> flops = CompileRule(
      "let a = shape(A);\nlet b = shape(B);\nassert a[1] == b[0], \"inner dims differ\";\n"
      "2 * a[0] * a[1] * b[1]",
      RuleKind::kCost, d, "cost.flops");
  ASSERT_TRUE(flops.ok()) << flops.status();
  absl::StatusOr<std::shared_ptr<const CompiledRule>> bytes = CompileRule(
      "(prod(shape(A)) + prod(shape(B))) * dtype_size(dtype(A))", RuleKind::kCost, d,
      "cost.bytes_moved");
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto results = std::make_shared<std::vector<std::string>>();
  OpDef def;
  def.descriptor = d;
  def.descriptor.mutable_shape_rule()->set_builtin("record_cost");
  def.shape_fn = [flops = *flops, bytes = *bytes, results](InferenceContext& ctx) {
    for (const auto& rule : {flops, bytes}) {
      absl::StatusOr<std::optional<int64_t>> c = Cost(*rule, ctx);
      results->push_back(!c.ok() ? std::string(c.status().message())
                         : *c    ? absl::StrCat(**c)
                                 : "unknown");
    }
    // The wrong kind of rule is refused.
    EXPECT_EQ(ApplyShapeRule(*flops, ctx).code(), absl::StatusCode::kFailedPrecondition);
    return absl::OkStatus();
  };
  ASSERT_TRUE(registry_.Register(std::move(def)).ok());
  Run("Costly", {"float32[8,16]", "float32[16,4]"});
  Run("Costly", {"float16[batch,16]", "float16[16,4]"});
  Run("Costly", {"float32[8,16]", "float32[3,4]"});
  EXPECT_EQ(*results, (std::vector<std::string>{
                          "1024", "768", "unknown", "unknown",
                          "node 'n0_Costly' (test.rules::Costly): cost.flops 3:1: inner dims "
                          "differ",
                          "560"}));
}

TEST_P(EvalTest, ConcurrentEvaluationOfOneRule) {
  v1::OpDescriptor d = Descriptor("Conc", {"X"}, {"Y"});
  absl::StatusOr<std::shared_ptr<const CompiledRule>> rule =
      CompileRule("output[0] = [d * 2 for d in shape(X)] ++ [dim(X, 0) + 1];", RuleKind::kShape,
                  d, "shape_rule");
  ASSERT_TRUE(rule.ok());
  OpDef def;
  def.descriptor = d;
  def.descriptor.mutable_shape_rule()->set_expr((*rule)->text());
  def.shape_fn = [r = *rule](InferenceContext& ctx) { return Shape(*r, ctx); };
  ASSERT_TRUE(registry_.Register(std::move(def)).ok());
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        TestGraph g(&registry_);
        g.In("x", absl::StrCat("float32[n", t, ",", i, "]"));
        g.Node("Conc", {"x"}, {"y"}, {}, "test.rules");
        if (!g.Run().ok() ||
            g.T("y") != absl::StrCat("float32[2*n", t, ",", 2 * i, ",n", t, "+1]")) {
          ++wrong;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Engines, EvalTest,
                         ::testing::Values(Engine::kVm, Engine::kInterpreter),
                         [](const ::testing::TestParamInfo<Engine>& info) {
                           return info.param == Engine::kVm ? "Vm" : "Interpreter";
                         });

}  // namespace
}  // namespace graphopt
