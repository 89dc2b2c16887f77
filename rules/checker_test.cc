// Static checking of rules against their descriptor: every error class, its message and its
// position. Rules are compiled through CompileRule.

#include <random>
#include <string>

#include "gtest/gtest.h"
#include "rules/rule.h"
#include "rules/test_util.h"

namespace graphopt {
namespace {

using rules_testing::AInt;
using rules_testing::AString;
using rules_testing::AttrSpec;
using rules_testing::Descriptor;

v1::OpDescriptor Foo() {
  v1::OpDescriptor d = Descriptor(
      "Foo", {"X", "W", "B?"}, {"Out"},
      {AttrSpec("axis", v1::ATTR_INT, AInt(1)), AttrSpec("kernel_shape", v1::ATTR_INTS),
       AttrSpec("mode", v1::ATTR_STRING, AString("a")), AttrSpec("alpha", v1::ATTR_FLOAT),
       AttrSpec("to", v1::ATTR_INT), AttrSpec("names", v1::ATTR_STRINGS)});
  d.set_domain("my.ops");
  return d;
}

v1::OpDescriptor Cat() {
  return Descriptor("Cat", {"inputs*"}, {"out", "extra?"}, {AttrSpec("axis", v1::ATTR_INT)});
}

std::string Error(const std::string& text, RuleKind kind = RuleKind::kShape,
                  const v1::OpDescriptor& op = Foo()) {
  absl::StatusOr<std::shared_ptr<const CompiledRule>> r =
      CompileRule(text, kind, op, kind == RuleKind::kShape  ? "shape_rule"
                                  : kind == RuleKind::kType ? "type_rule"
                                                            : "cost.flops");
  EXPECT_FALSE(r.ok()) << text;
  if (r.ok()) return "<compiled>";
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(r.status().message());
}

bool Compiles(const std::string& text, RuleKind kind = RuleKind::kShape,
              const v1::OpDescriptor& op = Foo()) {
  absl::StatusOr<std::shared_ptr<const CompiledRule>> r = CompileRule(text, kind, op, "rule");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok();
}

TEST(CheckerTest, UnknownInputNamesTheDescriptorRuleAndPosition) {
  EXPECT_EQ(Error("let x = shape(X);\nlet w = shape(W);\nlet r = rank(Y) + 1;\noutput[0] = x;"),
            "op 'my.ops::Foo' shape_rule 3:14: unknown input 'Y' (inputs: X, W, B)");
}

TEST(CheckerTest, NameResolution) {
  EXPECT_EQ(Error("output[0] = [y];"), "op 'my.ops::Foo' shape_rule 1:14: unknown name 'y'");
  EXPECT_EQ(Error("let a = 1;\noutput[0] = [b];"),
            "op 'my.ops::Foo' shape_rule 2:14: unknown name 'b' (defined: a)");
  EXPECT_EQ(Error("output[0] = X;"),
            "op 'my.ops::Foo' shape_rule 1:13: input 'X' is not a value; use shape(X), rank(X), "
            "dim(X, i), value(X) or dtype(X)");
  EXPECT_EQ(Error("output[0] = [axis];"),
            "op 'my.ops::Foo' shape_rule 1:14: unknown name 'axis'; the attribute is read with "
            "attr.axis");
  EXPECT_EQ(Error("output[0] = [attr.axs];"),
            "op 'my.ops::Foo' shape_rule 1:14: unknown attribute 'axs' (attributes: axis, "
            "kernel_shape, mode, alpha, to, names)");
  EXPECT_EQ(Error("output[0] = [attr.alpha];"),
            "op 'my.ops::Foo' shape_rule 1:14: attribute 'alpha' is a float attribute, which "
            "rules cannot read (they read int, ints, string, strings, dtype and shape "
            "attributes)");
  EXPECT_EQ(Error("output[0] = [Out];"),
            "op 'my.ops::Foo' shape_rule 1:14: output 'Out' cannot be read; rules compute outputs "
            "from inputs and attributes");
  EXPECT_EQ(Error("output[0] = [T];"),
            "op 'my.ops::Foo' shape_rule 1:14: type constraint 'T' is not a value; its type is "
            "dtype(T)");
  EXPECT_EQ(Error("let a = 1;\nlet a = 2;\noutput[0] = [a];"),
            "op 'my.ops::Foo' shape_rule 2:5: 'a' is already defined");
  EXPECT_EQ(Error("let X = 1;\noutput[0] = [];"),
            "op 'my.ops::Foo' shape_rule 1:5: 'X' is an input of the op; choose another name");
  EXPECT_EQ(Error("let i = 1;\noutput[0] = [i for i in range(3)];"),
            "op 'my.ops::Foo' shape_rule 2:13: 'i' is already defined");
  // Comprehension variables are local: the same name may be reused afterwards.
  EXPECT_TRUE(Compiles("let a = [i for i in range(2)] ++ [i * 2 for i in range(3)];\n"
                       "output[0] = a;"));
  // Lets are sequential.
  EXPECT_EQ(Error("let a = b;\nlet b = 1;\noutput[0] = [a];"),
            "op 'my.ops::Foo' shape_rule 1:9: unknown name 'b'");
  // Data type names are values.
  EXPECT_TRUE(Compiles("output[0] = dtype(X) | float32;", RuleKind::kType));
}

TEST(CheckerTest, Functions) {
  EXPECT_EQ(Error("output[0] = frob(X);"),
            "op 'my.ops::Foo' shape_rule 1:13: unknown function 'frob'");
  EXPECT_EQ(Error("output[0] = shape(X, W);"),
            "op 'my.ops::Foo' shape_rule 1:13: shape() takes 1 argument, got 2");
  EXPECT_EQ(Error("output[0] = range();"),
            "op 'my.ops::Foo' shape_rule 1:13: range() takes 1 to 3 arguments, got 0");
  EXPECT_EQ(Error("output[0] = [max()];"),
            "op 'my.ops::Foo' shape_rule 1:14: max() takes at least 1 argument, got 0");
  EXPECT_EQ(Error("output[0] = [rank(attr.axis)];"),
            "op 'my.ops::Foo' shape_rule 1:19: rank() expects an input name (inputs: X, W, B), "
            "not 'attr.axis'");
  EXPECT_EQ(Error("let l = [1];\noutput[0] = [rank(l)];"),
            "op 'my.ops::Foo' shape_rule 2:19: rank() expects an input name (inputs: X, W, B), "
            "not 'l'");
  EXPECT_EQ(Error("output[0] = [dim(X, \"a\")];"),
            "op 'my.ops::Foo' shape_rule 1:21: dim() expects int, got string");
  EXPECT_EQ(Error("output[0] = if has(X) then [] else [];"),
            "op 'my.ops::Foo' shape_rule 1:20: has() is for optional inputs; input 'X' is "
            "required");
  EXPECT_TRUE(Compiles("output[0] = if has(B) then shape(B) else [];"));
  EXPECT_EQ(Error("output[0] = [has_attr(axis)];"),
            "op 'my.ops::Foo' shape_rule 1:23: has_attr() takes the attribute name as a string "
            "literal, e.g. has_attr(\"axis\")");
  EXPECT_EQ(Error("output[0] = [has_attr(\"nope\")];"),
            "op 'my.ops::Foo' shape_rule 1:23: unknown attribute 'nope' (attributes: axis, "
            "kernel_shape, mode, alpha, to, names)");
  // has_attr reads presence only: a float attribute is fine.
  EXPECT_TRUE(Compiles("output[0] = if has_attr(\"alpha\") then [1] else [];"));
  EXPECT_EQ(Error("output[0] = attr_dtype(\"mode\");", RuleKind::kType),
            "op 'my.ops::Foo' type_rule 1:24: attr_dtype() reads an int or dtype attribute; "
            "'mode' is a string attribute");
  EXPECT_TRUE(Compiles("output[0] = attr_dtype(\"to\") | dtype(X);", RuleKind::kType));
  EXPECT_EQ(Error("output[0] = [attr(\"axis\", \"x\")];"),
            "op 'my.ops::Foo' shape_rule 1:27: the fallback of attribute 'axis' (int) has type "
            "string");
  EXPECT_EQ(Error("output[0] = broadcast(shape(X), 1);"),
            "op 'my.ops::Foo' shape_rule 1:33: broadcast() expects list<int>, got int");
  EXPECT_EQ(Error("output[0] = [sum(1)];"),
            "op 'my.ops::Foo' shape_rule 1:18: sum() expects list<int>, got int");
  EXPECT_EQ(Error("output[0] = [len(1)];"),
            "op 'my.ops::Foo' shape_rule 1:18: len() expects a list, got int");
  EXPECT_EQ(Error("output[0] = flatten(shape(X));"),
            "op 'my.ops::Foo' shape_rule 1:21: flatten() expects a list of lists, got list<int>");
}

TEST(CheckerTest, VariadicInputs) {
  EXPECT_EQ(Error("output[0] = shape(inputs);", RuleKind::kShape, Cat()),
            "op 'test.rules::Cat' shape_rule 1:19: variadic input 'inputs' needs an index: "
            "shape(inputs[k]), or shapes(inputs) for all of them");
  EXPECT_EQ(Error("output[0] = [rank(inputs)];", RuleKind::kShape, Cat()),
            "op 'test.rules::Cat' shape_rule 1:19: variadic input 'inputs' needs an index: "
            "rank(inputs[k])");
  EXPECT_EQ(Error("output[0] = shapes(X)[0];"),
            "op 'my.ops::Foo' shape_rule 1:20: shapes() expects a variadic input; 'X' is not "
            "variadic (use shape(X))");
  EXPECT_EQ(Error("output[0] = shape(X[0]);"),
            "op 'my.ops::Foo' shape_rule 1:20: input 'X' is not variadic; write shape(X)");
  EXPECT_EQ(Error("output[0] = [count(X)];"),
            "op 'my.ops::Foo' shape_rule 1:20: count() expects a variadic input or output; 'X' "
            "is not variadic");
  EXPECT_EQ(Error("output[0] = shape(inputs[\"a\"]);", RuleKind::kShape, Cat()),
            "op 'test.rules::Cat' shape_rule 1:26: an input index expects int, got string");
  EXPECT_TRUE(Compiles("let n = count(inputs);\noutput[0] = shape(inputs[n - 1]) ++ "
                       "flatten(shapes(inputs));",
                       RuleKind::kShape, Cat()));
}

TEST(CheckerTest, StaticTypes) {
  EXPECT_EQ(Error("output[0] = [1 + [2]];"),
            "op 'my.ops::Foo' shape_rule 1:16: '+' expects int operands, got int and list<int>");
  EXPECT_EQ(Error("output[0] = [if 1 then 2 else 3];"),
            "op 'my.ops::Foo' shape_rule 1:17: the condition of 'if' expects bool, got int");
  EXPECT_EQ(Error("output[0] = [if true then 2 else [3]];"),
            "op 'my.ops::Foo' shape_rule 1:14: the branches of 'if' differ in type: int and "
            "list<int>");
  EXPECT_EQ(Error("output[0] = [attr.axis[0]];"),
            "op 'my.ops::Foo' shape_rule 1:23: cannot index int (only lists)");
  EXPECT_EQ(Error("output[0] = [X[0]];"),
            "op 'my.ops::Foo' shape_rule 1:15: input 'X' is not a list; its shape is shape(X)");
  EXPECT_EQ(Error("output[0] = [1, [2]];"),
            "op 'my.ops::Foo' shape_rule 1:17: list elements differ in type: int and list<int>");
  EXPECT_EQ(Error("output[0] = [1 == \"a\"];"),
            "op 'my.ops::Foo' shape_rule 1:16: '==' needs operands of one type, got int and "
            "string");
  EXPECT_EQ(Error("output[0] = [1] ++ 2;"),
            "op 'my.ops::Foo' shape_rule 1:17: '++' needs operands of one type, got list<int> "
            "and int");
  EXPECT_EQ(Error("output[0] = 1 ++ 2;"),
            "op 'my.ops::Foo' shape_rule 1:15: '++' concatenates lists, got int and int");
  EXPECT_EQ(Error("assert 1, \"x\";\noutput[0] = [];"),
            "op 'my.ops::Foo' shape_rule 1:8: assert expects bool, got int");
  EXPECT_EQ(Error("output[0] = [not 1];"),
            "op 'my.ops::Foo' shape_rule 1:18: 'not' expects bool, got int");
  EXPECT_EQ(Error("output[0] = [x for x in 3];"),
            "op 'my.ops::Foo' shape_rule 1:25: a comprehension iterates over a list (e.g. "
            "range(n)), got int");
  EXPECT_EQ(Error("output[0] = [x for x in range(3) if x];"),
            "op 'my.ops::Foo' shape_rule 1:37: the filter of a comprehension expects bool, got "
            "int");
  EXPECT_EQ(Error("output[0] = [attr.mode];"),
            "op 'my.ops::Foo' shape_rule 1:13: output[0] expects list<int>, got list<string>");
  EXPECT_EQ(Error("output[0] = [1 in {\"a\"}];"),
            "op 'my.ops::Foo' shape_rule 1:20: 'in' compares int with a member of type string");
  // `unknown` and [] fit anywhere; the empty list unifies with any list type.
  EXPECT_TRUE(Compiles("let e = [];\nlet a = e ++ [1];\nlet b = [] ++ [[1]];\n"
                       "output[0] = if true then unknown else a ++ flatten(b);"));
  EXPECT_TRUE(Compiles("output[0] = [if attr.mode in {\"a\", \"b\"} then 1 else 2] ++ "
                       "[len(attr.names)];"));
  EXPECT_TRUE(Compiles("output[0] = [fail(\"no\")];"));
}

TEST(CheckerTest, Outputs) {
  EXPECT_EQ(Error("output[5] = shape(X);"),
            "op 'my.ops::Foo' shape_rule 1:1: output[5] is out of range: op 'my.ops::Foo' "
            "declares 1 output (Out)");
  EXPECT_EQ(Error("output[Z] = shape(X);"),
            "op 'my.ops::Foo' shape_rule 1:1: unknown output 'Z' (outputs: Out)");
  EXPECT_TRUE(Compiles("output[Out] = shape(X);"));
  EXPECT_EQ(Error("let a = 1;\n"),
            "op 'my.ops::Foo' shape_rule 2:1: output[0] (Out) is never assigned (every required "
            "output needs an output[0] = ... statement)");
  EXPECT_EQ(Error("output[0] = shape(X);\noutput[Out] = shape(W);"),
            "op 'my.ops::Foo' shape_rule 2:1: output[0] is assigned twice");
  EXPECT_EQ(Error("output[0] = shape(X);\noutput[*] = [shape(W)];"),
            "op 'my.ops::Foo' shape_rule 2:1: output[*] assigns every output; it cannot be "
            "combined with other output[...] statements");
  // An optional output need not be assigned; a variadic last output allows any index.
  EXPECT_TRUE(Compiles("output[0] = shape(inputs[0]);", RuleKind::kShape, Cat()));
  EXPECT_TRUE(Compiles("output[*] = shapes(inputs);", RuleKind::kShape, Cat()));
  EXPECT_TRUE(Compiles("output[0] = shape(X);\noutput[0].value = [1];"));
  EXPECT_EQ(Error("output[0] = float32;", RuleKind::kShape),
            "op 'my.ops::Foo' shape_rule 1:13: output[0] expects list<int>, got dtype");
  EXPECT_EQ(Error("output[0] = shape(X);", RuleKind::kType),
            "op 'my.ops::Foo' type_rule 1:13: output[0] expects dtype, got list<int>");
  EXPECT_EQ(Error("output[0].value = [1];", RuleKind::kType),
            "op 'my.ops::Foo' type_rule 1:1: output[I].value belongs in shape rules");
  // Type rules need not assign every output.
  EXPECT_TRUE(Compiles("T in {float32, float16};", RuleKind::kType));
}

TEST(CheckerTest, RuleKinds) {
  EXPECT_EQ(Error("X in {float32};\noutput[0] = shape(X);"),
            "op 'my.ops::Foo' shape_rule 1:1: 'X in {...}' constrains types; it belongs in type "
            "rules");
  EXPECT_EQ(Error("Q in {float32};", RuleKind::kType),
            "op 'my.ops::Foo' type_rule 1:1: unknown input or type constraint 'Q' (inputs: X, W, "
            "B; type constraints: T)");
  EXPECT_EQ(Error("T in {float32, 3};", RuleKind::kType),
            "op 'my.ops::Foo' type_rule 1:16: a type set expects dtype, got int");
  EXPECT_EQ(Error("rank(X) + 1", RuleKind::kShape),
            "op 'my.ops::Foo' shape_rule 1:1: a shape rule is made of statements (let, assert, "
            "output[I] = ...); found a bare expression");
  EXPECT_EQ(Error("let a = 1;", RuleKind::kCost),
            "op 'my.ops::Foo' cost.flops 1:11: a cost rule must end with an int expression (the "
            "cost)");
  EXPECT_EQ(Error("output[0] = shape(X);", RuleKind::kCost),
            "op 'my.ops::Foo' cost.flops 1:1: a cost rule has no outputs to assign; it ends with "
            "its cost expression");
  EXPECT_EQ(Error("shape(X)", RuleKind::kCost),
            "op 'my.ops::Foo' cost.flops 1:1: a cost rule expects int, got list<int>");
  EXPECT_EQ(Error("1;\n2", RuleKind::kCost),
            "op 'my.ops::Foo' cost.flops 1:1: the cost expression must be the last statement");
  EXPECT_TRUE(Compiles("let n = prod(shape(X));\nassert n >= 0;\n2 * n", RuleKind::kCost));
  EXPECT_TRUE(Compiles("2 * prod(shape(X));", RuleKind::kCost));
}

// Garbage never crashes the compiler: every random text either compiles or is refused with
// INVALID_ARGUMENT.
TEST(CheckerTest, GarbageIsRefusedCleanly) {
  const std::string alphabet =
      "abXWB()[]{},;:.=+-*/%<>!|\"#\n 0123456789 let assert output if then else for in and or "
      "not true false unknown attr shape rank dim value range len";
  std::mt19937 rng(7);
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    const int n = static_cast<int>(rng() % 60);
    for (int k = 0; k < n; ++k) {
      if (rng() % 4 == 0) {
        static const char* kWords[] = {"let ", "output[0] = ", "shape(X)", "[", "]", "(", ")",
                                       "if ", " then ", " else ", "for ", " in ", "attr.axis",
                                       ";", ",", "1", "x", "++", "//", "unknown", "\"s\""};
        text += kWords[rng() % (sizeof(kWords) / sizeof(kWords[0]))];
      } else {
        text += alphabet[rng() % alphabet.size()];
      }
    }
    absl::StatusOr<std::shared_ptr<const CompiledRule>> r =
        CompileRule(text, static_cast<RuleKind>(rng() % 3), Foo(), "r");
    if (!r.ok()) {
      ++refused;
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << text;
    }
  }
  EXPECT_GT(refused, 2900);
  // Random bytes, including NUL and high bytes.
  for (int i = 0; i < 1000; ++i) {
    std::string text(rng() % 40, '\0');
    for (char& c : text) c = static_cast<char>(rng() % 256);
    absl::StatusOr<std::shared_ptr<const CompiledRule>> r =
        CompileRule(text, RuleKind::kShape, Foo(), "r");
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace graphopt
