// The VM (evaluator.h, running the bytecode PrepareProgram compiles) against the reference
// interpreter (interpreter.h, evaluating the same program node by node): the same outputs, dims
// values and errors, and for every step budget up to what the rule needs, the same budget error
// at the same position. Over the dogfood rules of onnx_ops.pbtxt on nodes like real models'
// (known, symbolic and unknown dims, errors), and over expressions exercising each construct.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"
#include "rules/dogfood/onnx_ops.h"
#include "rules/evaluator.h"
#include "rules/example_rules.h"
#include "rules/interpreter.h"
#include "rules/rule.h"
#include "rules/test_util.h"

namespace graphopt {
namespace {

using rules_testing::AInt;
using rules_testing::AInts;
using rules_testing::AString;
using rules_testing::Descriptor;
using rules_testing::TestGraph;

struct Case {
  std::vector<std::string> inputs;  // "float32[2,batch]", "const:1,2" (int64), "" (absent)
  AttributeMap attrs = {};
  int64_t opset = 0;
};

class VmDifferentialTest : public ::testing::Test {
 protected:
  // Registers `d` (domain test.rules) with shape rule `rule`, evaluated as the fixture says.
  void Define(v1::OpDescriptor d, const std::string& rule) {
    d.set_domain("test.rules");
    absl::StatusOr<std::shared_ptr<const CompiledRule>> compiled =
        CompileRule(rule, RuleKind::kShape, d, "shape_rule");
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    ASSERT_NE((*compiled)->program().bytecode, nullptr);
    OpDef def;
    def.descriptor = d;
    def.descriptor.mutable_shape_rule()->set_expr(rule);
    def.shape_fn = [this, compiled = *compiled](InferenceContext& ctx) {
      return vm_ ? rules::EvaluateShape(compiled->program(), limits_, ctx)
                 : rules::InterpretShape(compiled->program(), limits_, ctx);
    };
    ASSERT_TRUE(registry_.Register(std::move(def)).ok());
  }

  // "float32[2,3] value=[2,3]" (every output), or "ERROR <message>".
  std::string Run(const std::string& op, const Case& c, int num_outputs) {
    TestGraph g(&registry_);
    if (c.opset > 0) g.SetOpset(c.opset, "test.rules");
    const std::vector<std::string> in = g.Inputs(c.inputs);
    std::vector<std::string> out;
    for (int i = 0; i < num_outputs; ++i) out.push_back(absl::StrCat("y", i));
    g.Node(op, in, out, c.attrs, "test.rules");
    absl::Status s = g.Run();
    if (!s.ok()) return absl::StrCat("ERROR ", s.message());
    std::string r;
    for (const std::string& o : out) absl::StrAppend(&r, g.T(o), " value=", g.DimsValue(o), " ");
    return r;
  }

  // Both ways agree with the default limits and with every smaller budget; returns the result.
  std::string ExpectAgree(const std::string& op, const Case& c, int num_outputs = 1) {
    limits_ = RuleLimits();
    vm_ = true;
    const std::string vm = Run(op, c, num_outputs);
    vm_ = false;
    const std::string interpreted = Run(op, c, num_outputs);
    EXPECT_EQ(vm, interpreted) << op;
    for (int64_t budget = 0; budget < 100000; ++budget) {
      limits_.max_steps = budget;
      vm_ = true;
      const std::string a = Run(op, c, num_outputs);
      vm_ = false;
      const std::string b = Run(op, c, num_outputs);
      EXPECT_EQ(a, b) << op << " with a budget of " << budget << " steps";
      if (a != b || a.find("exceeded the budget") == std::string::npos) break;
      ++budget_errors_;
    }
    return vm;
  }

  OpRegistry registry_;
  RuleLimits limits_;
  bool vm_ = true;
  int64_t budget_errors_ = 0;
};

TEST_F(VmDifferentialTest, DogfoodRules) {
  absl::StatusOr<v1::OpDescriptorList> list =
      dogfood::ReadOpDescriptorList("rules/dogfood/onnx_ops.pbtxt");
  ASSERT_TRUE(list.ok()) << list.status();
  for (const v1::OpDescriptor& d : list->ops()) Define(d, d.shape_rule().expr());
  const std::vector<std::pair<std::string, Case>> cases = {
      {"Add", {{"float32[batch,16,64]", "float32[64]"}}},
      {"Add", {{"float32[2,3]", "float32[3,2]"}}},
      {"Add", {{"const:2,3", "const:0,1"}}},
      {"Add", {{"const:2", "int64[batch]"}}},
      {"Add", {{"float32[2,3]", "float32[3]"}, {{"broadcast", AInt(1)}}, 6}},
      {"Add", {{"float32[2,3]", "float32[2]"}, {{"broadcast", AInt(1)}}, 6}},
      {"MatMul", {{"float32[batch,16,64]", "float32[64,64]"}}},
      {"MatMul", {{"float32[3]", "float32[3,4]"}}},
      {"MatMul", {{"float32[2,3]", "float32[4,5]"}}},
      {"MatMul", {{"float32[?..]", "float32[4,5]"}}},
      {"Gemm", {{"float32[batch,1024]", "float32[64,1024]", "float32[64]"}, {{"transB", AInt(1)}}}},
      {"Gemm", {{"float32[4,5]", "float32[6,7]"}}},
      {"Gemm", {{"float32[4,5]", "float32[5,7]", "float32[3,7]"}}},
      {"Conv", {{"float32[batch,64,4,4]", "float32[64,64,3,3]", "float32[64]"},
                {{"pads", AInts({1, 1, 1, 1})}}}},
      {"Conv", {{"float32[1,3,224,224]", "float32[8,3,7,7]"},
                {{"strides", AInts({2, 2})}, {"auto_pad", AString("SAME_UPPER")}}}},
      {"Conv", {{"float32[1,3,h,w]", "float32[8,3,3,3]"}, {{"auto_pad", AString("VALID")}}}},
      {"Conv", {{"float32[1,4,8,8]", "float32[8,3,3,3]"}, {{"group", AInt(2)}}}},
      {"Conv", {{"float32[1,4,2,2]", "float32[8,4,3,3]"}}},
      {"Conv", {{"float32[?..]", "float32[8,4,?,3]"}}},
      {"Transpose", {{"float32[batch,16,4,16]"}, {{"perm", AInts({0, 2, 1, 3})}}}},
      {"Transpose", {{"float32[2,3,?]"}}},
      {"Transpose", {{"float32[2,3]"}, {{"perm", AInts({0, 0})}}}},
      {"Concat", {{"float32[batch,16,64]", "float32[batch,16,1]"}, {{"axis", AInt(-1)}}}},
      {"Concat", {{"const:0", "const:16,64"}, {{"axis", AInt(0)}}}},
      {"Concat", {{"float32[2,3]", "float32[2,?]", "float32[?..]"}, {{"axis", AInt(1)}}}},
      {"Concat", {{"float32[2,3]", "float32[3,3,1]"}, {{"axis", AInt(0)}}}},
      {"Reshape", {{"float32[batch,16,64]", "const:0,16,4,16"}}},
      {"Reshape", {{"float32[batch,4,16,16]", "const:0,0,-1"}}},
      {"Reshape", {{"float32[batch,16,64]", "const:-1,1024"}}},
      {"Reshape", {{"float32[batch,16,64]", "int64[3]"}}},
      {"Reshape", {{"float32[6,4]", "const:-1,5"}}},
      {"Reshape", {{"float32[6,4]", "const:-1,-1"}}},
      {"Reshape", {{"float32[0,4]", "const:0,-1"}, {{"allowzero", AInt(1)}}}},
      {"Reshape", {{"float32[2,seq,8]", "const:2,-1,4"}}},
      {"ReduceMean", {{"float32[batch,16,64]"}, {{"axes", AInts({-1})}}}},
      {"ReduceMean", {{"float32[2,3,4]"}, {{"axes", AInts({0, 2})}, {"keepdims", AInt(0)}}}},
      {"ReduceMean", {{"float32[2,3,4]", "const:1"}, {}, 18}},
      {"ReduceMean", {{"float32[2,3,4]"}, {{"axes", AInts({5})}}}},
      {"Softmax", {{"float32[batch,4,16,16]"}, {{"axis", AInt(-1)}}}},
      {"Softmax", {{"float32[2,3]"}, {{"axis", AInt(2)}}, 10}},
      {"Softmax", {{"float32[2,3]"}, {{"axis", AInt(3)}}}},
      {"Gather", {{"float32[100,64]", "int64[batch,16]"}}},
      {"Gather", {{"const:7,16,64", "const:0"}}},
      {"Gather", {{"float32[5,6]", "const:7"}, {{"axis", AInt(0)}}}},
  };
  for (const auto& [op, c] : cases) ExpectAgree(op, c);
  EXPECT_GT(budget_errors_, 1000);
}

// The example rules (example_rules.h) on the builtin ops' descriptors.
TEST_F(VmDifferentialTest, ExampleRules) {
  OpRegistry builtins;
  ASSERT_TRUE(RegisterBuiltinOps(&builtins).ok());
  for (const auto& [name, rule] : std::vector<std::pair<std::string, std::string>>{
           {"Conv", example_rules::kConvRule},
           {"Concat", example_rules::kConcatRule},
           {"Reshape", example_rules::kReshapeRule},
           {"Gemm", example_rules::kGemmRule},
           {"Softmax", example_rules::kSoftmaxRule},
           {"Add", example_rules::kAddRule}}) {
    Define(builtins.Find("", name)->descriptor, rule);
  }
  const std::vector<std::pair<std::string, Case>> cases = {
      {"Conv", {{"float32[1,3,224,224]", "float32[8,3,7,7]"},
                {{"strides", AInts({2, 2})}, {"pads", AInts({3, 3, 3, 3})}}}},
      {"Conv", {{"float32[batch,64,h,w]", "float32[64,64,3,3]", "float32[64]"},
                {{"auto_pad", AString("SAME_UPPER")}}}},
      {"Conv", {{"float32[1,4,8,8]", "float32[8,3,3,3]"}, {{"group", AInt(2)}}}},
      {"Conv", {{"float32[?..]", "float32[8,4,3,3]"}, {{"auto_pad", AString("BAD")}}}},
      {"Concat", {{"float32[batch,16,64]", "float32[batch,16,1]"}, {{"axis", AInt(-1)}}}},
      {"Concat", {{"float32[2,3]", "float32[3,3,1]"}, {{"axis", AInt(0)}}}},
      {"Reshape", {{"float32[batch,16,64]", "const:0,16,4,16"}}},
      {"Reshape", {{"float32[6,4]", "const:-1,5"}}},
      {"Reshape", {{"float32[2,seq,8]", "const:2,-1,4"}}},
      {"Gemm", {{"float32[batch,1024]", "float32[64,1024]", "float32[64]"},
                {{"transB", AInt(1)}}}},
      {"Gemm", {{"float32[4,5]", "float32[6,7]"}}},
      {"Softmax", {{"float32[batch,4,16,16]"}, {{"axis", AInt(-1)}}}},
      {"Softmax", {{"float32[2,3]"}, {{"axis", AInt(3)}}}},
      {"Add", {{"float32[batch,16,64]", "float32[64]"}}},
      {"Add", {{"const:2,3", "const:0,1"}}},
      {"Add", {{"float32[2,3]", "float32[4]"}}},
  };
  for (const auto& [op, c] : cases) {
    const std::string r = ExpectAgree(op, c);
    if (op == "Conv" && c.inputs[0] == "float32[1,3,224,224]") {
      EXPECT_EQ(r, "float32[1,8,112,112] value=none ");
    }
  }
}

// output[0] = EXPR on X.
TEST_F(VmDifferentialTest, Expressions) {
  v1::OpDescriptor d = Descriptor("E", {"X"}, {"Y"});
  const std::vector<std::string> exprs = {
      "shape(X)",
      "[if known(dim(X, 0)) then 1 else 2]",
      "[x for x in shape(X) if known(x)]",
      "[x * 2 + 1 for x in shape(X)]",
      "[i for i in range(rank(X)) if dim(X, i) > 2]",
      "flatten([[i * 10 + j for j in range(2)] for i in range(rank(X))])",
      "shape(X)[1:] ++ shape(X)[:1]",
      "shape(X)[-2:] ++ shape(X)[1:2] ++ shape(X)[:]",
      "shape(X)[dim(X, 0):] ++ [1]",
      "shape(X)[:dim(X, 0)]",
      "shape(X)[rank(X):dim(X, 1)]",
      "[dim(X, 0) | 7, dim(X, 1) | dim(X, 2)]",
      "[if dim(X, 0) == 2 and dim(X, 1) == 3 then 1 else 0]",
      "[if dim(X, 0) == 2 or not (dim(X, 1) < 3) then 1 else 0]",
      "[if (dim(X, 0) > 1 or dim(X, 1) > 1) and not known(dim(X, 2)) then 1 else 0]",
      "[max(shape(X)), min(shape(X)), sum(shape(X)), prod(shape(X))]",
      "[max(dim(X, 0), 3), min(2, dim(X, 1)), merge(dim(X, 2), dim(X, 2))]",
      "broadcast(shape(X), [1, 4])",
      "broadcast([shape(X), [4], [1, 1, 1]])",
      "[len(shape(X)), rank(X) * 2 - 1, -dim(X, 0), abs(-dim(X, 1))]",
      "[dim(X, 0) * 3 + dim(X, 0) * 2, dim(X, 0) * 4 - 4 * dim(X, 0), dim(X, 0) * 0]",
      "[dim(X, 0) // 2, dim(X, 0) % 2, cdiv(dim(X, 0), 2), dim(X, 0) // 0]",
      "[dim(X, 0) * 4611686018427387904 * 4]",
      "[dim(X, 0) * 9223372036854775807 + dim(X, 0)]",
      "[shape(X)[5]]",
      "[sum([y for y in shape(X) if y != x]) for x in shape(X)]",
      "[if dim(X, 0) in {2, 3} then 1 else 0, if dim(X, 1) in {dim(X, 0)} then 1 else 0]",
      "[if all([x > 1 for x in shape(X)]) then 1 else 0, if any([x == 4 for x in shape(X)]) "
      "then 1 else 0]",
      "flatten([shape(X), [1], []])",
      "[if distinct(shape(X)) then 1 else 0]",
      "[normalize_axis(-1, rank(X)), normalize_axis(rank(X), rank(X))]",
      "range(dim(X, 0)) ++ range(1, 3) ++ range(5, 0, -2)",
      "[x for x in range(dim(X, 1)) if x < dim(X, 0)]",
      "[unknown for i in range(2)] ++ (shape(X) | [1])",
      "if rank(X) == 3 then [dim(X, 2)] else fail(\"rank \", rank(X), \" of \", shape(X))",
      "[x for x in [dim(X, 0), unknown, 3] if x > 2]",
  };
  const std::vector<std::string> inputs = {"float32[2,3,4]", "float32[batch,3,4]",
                                           "float32[?,3,?]", "float32[?..]", "float32[4]"};
  int k = 0;
  for (const std::string& e : exprs) {
    d.set_name(absl::StrCat("E", k++));
    Define(d, absl::StrCat("output[0] = ", e, ";"));
    for (const std::string& x : inputs) ExpectAgree(d.name(), {{x}});
  }
}

// Statements: lets feeding later ones, asserts (with and without a message), several outputs.
TEST_F(VmDifferentialTest, Statements) {
  v1::OpDescriptor d = Descriptor("S", {"X", "B?"}, {"Y", "Z"});
  Define(d,
         "let s = shape(X);\n"
         "let n = len(s) | 0;\n"
         "let b = if has(B) then shape(B) else [];\n"
         "assert n != 1, \"rank \", n, \" of \", s, \" is 1\";\n"
         "assert not known(s) or all([v >= 0 for v in s]);\n"
         "let t = [v * 2 for v in s if v != 3] | [];\n"
         "output[0] = t ++ b;\n"
         "output[1] = if n > 2 then s[1:] else s;\n"
         "output[1].value = [n];\n");
  for (const Case& c : std::vector<Case>{{{"float32[2,3,4]", "float32[5]"}},
                                         {{"float32[batch,3]", ""}},
                                         {{"float32[7]", ""}},
                                         {{"float32[?..]", "float32[1,?]"}}}) {
    ExpectAgree("S", c, 2);
  }
}

// Variadic inputs (an unknown item index makes the call unknown), attributes with and without
// fallbacks, and dims read after their shape.
TEST_F(VmDifferentialTest, VariadicInputsAndAttributes) {
  v1::OpDescriptor d = Descriptor("V", {"Xs*"}, {"Y"},
                                  {rules_testing::AttrSpec("k", v1::ATTR_INT),
                                   rules_testing::AttrSpec("axes", v1::ATTR_INTS)});
  Define(d,
         "let n = count(Xs);\n"
         "let r = [rank(Xs[i]) for i in range(n)];\n"
         "let last = [dim(Xs[i], -1) for i in range(n)];\n"
         "let present = [if has(Xs[i]) then 1 else 0 for i in range(n + 1)];\n"
         "let pick = dim(Xs[dim(Xs[0], 0) % n], 0);\n"
         "assert len(attr(\"axes\", [])) < 3, \"axes \", attr.axes, \" for \", shapes(Xs);\n"
         "output[0] = shapes(Xs)[0] ++ r ++ last ++ present ++\n"
         "            [attr(\"k\", 2 + n), pick, len(value(Xs[n - 1]) | [])];\n");
  for (const Case& c : std::vector<Case>{
           {{"float32[2,3]", "float32[4]"}},
           {{"float32[batch,3]", "float32[?..]", "float32[2]"}, {{"k", AInt(7)}}},
           {{"float32[3,3]"}, {{"axes", AInts({0, 1, 2})}}},
           {{"float32[5,2]", "float32[1]"}, {{"axes", AInts({1})}}},
           {{"float32[?..]"}}}) {
    ExpectAgree("V", c);
  }
}

}  // namespace
}  // namespace graphopt
