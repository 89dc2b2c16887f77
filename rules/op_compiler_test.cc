#include "rules/op_compiler.h"

#include <string>

#include "ops/builtin_ops.h"
#include "gtest/gtest.h"
#include "rules/test_util.h"

namespace graphopt {
namespace {

using rules_testing::AInt;
using rules_testing::AttrSpec;
using rules_testing::Descriptor;
using rules_testing::TestGraph;

class OpCompilerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinOps(&builtins_).ok()); }
  OpRegistry builtins_;
};

TEST_F(OpCompilerTest, ExprRulesBecomeShapeAndTypeFunctions) {
  v1::OpDescriptor d = Descriptor("Twice", {"X"}, {"Y", "Idx?"},
                                  {AttrSpec("k", v1::ATTR_INT, AInt(2))});
  d.mutable_shape_rule()->set_expr(
      "output[0] = [dim(X, 0) * attr.k] ++ shape(X)[1:];\noutput[1] = [rank(X)];");
  d.mutable_type_rule()->set_expr("output[1] = int64;");
  d.mutable_cost()->mutable_flops()->set_expr("prod(shape(X))");
  absl::StatusOr<CompiledOp> op = CompileOp(d, builtins_);
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_NE(op->cost.flops, nullptr);
  EXPECT_EQ(op->cost.bytes_moved, nullptr);
  EXPECT_EQ(op->cost.flops->kind(), RuleKind::kCost);
  EXPECT_TRUE(ValidateOpDef(op->def).ok());

  OpRegistry registry;
  ASSERT_TRUE(registry.Register(std::move(op->def)).ok());
  TestGraph g(&registry);
  g.In("x", "float32[batch,3]");
  g.Node("Twice", {"x"}, {"y", "i"}, {}, "test.rules");
  ASSERT_TRUE(g.Run().ok());
  EXPECT_EQ(g.T("y"), "float32[2*batch,3]");
  EXPECT_EQ(g.T("i"), "int64[2]");
}

TEST_F(OpCompilerTest, BuiltinRulesReuseTheCppFunctions) {
  v1::OpDescriptor d = Descriptor("MyRelu", {"X"}, {"Y"});
  d.mutable_shape_rule()->set_builtin("Relu");
  absl::StatusOr<OpDef> def = CompileOpDescriptor(d, builtins_);
  ASSERT_TRUE(def.ok()) << def.status();
  OpRegistry registry;
  ASSERT_TRUE(registry.Register(*std::move(def)).ok());
  TestGraph g(&registry);
  g.In("x", "float16[n,7]");
  g.Node("MyRelu", {"x"}, {"y"}, {}, "test.rules");
  ASSERT_TRUE(g.Run().ok());
  EXPECT_EQ(g.T("y"), "float16[n,7]");

  d.mutable_shape_rule()->set_builtin("NoSuchOp");
  absl::StatusOr<OpDef> bad = CompileOpDescriptor(d, builtins_);
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "op 'test.rules::MyRelu' shape_rule: there is no builtin shape rule 'NoSuchOp' (a "
            "builtin rule names a builtin op of the default domain)");
  d.mutable_shape_rule()->set_builtin("Relu");
  d.mutable_type_rule()->set_builtin("Nope");
  EXPECT_EQ(CompileOpDescriptor(d, builtins_).status().message(),
            "op 'test.rules::MyRelu' type_rule: there is no builtin type rule 'Nope'");
  d.mutable_type_rule()->set_builtin("LayerNormalization");  // has a type_fn
  EXPECT_TRUE(CompileOpDescriptor(d, builtins_).ok());
}

TEST_F(OpCompilerTest, BodyWithoutShapeRule) {
  v1::OpDescriptor d = Descriptor("Composite", {"X"}, {"Y"});
  EXPECT_EQ(CompileOpDescriptor(d, builtins_).status().message(),
            "op 'test.rules::Composite': shape_rule is required (or a body to decompose the op "
            "into)");
  v1::Node* n = d.mutable_body()->add_nodes();
  n->set_op_type("Relu");
  n->add_inputs("X");
  n->add_outputs("Y");
  absl::StatusOr<OpDef> def = CompileOpDescriptor(d, builtins_);
  ASSERT_TRUE(def.ok()) << def.status();
  OpRegistry registry;
  ASSERT_TRUE(registry.Register(*std::move(def)).ok());
  TestGraph g(&registry);
  g.In("x", "float32[2]");
  g.Node("Composite", {"x"}, {"y"}, {}, "test.rules");
  ASSERT_TRUE(g.Run().ok());
  EXPECT_EQ(g.T("y"), "float32[?..]");
}

TEST_F(OpCompilerTest, ErrorsNameTheOpRuleAndPosition) {
  v1::OpDescriptor d = Descriptor("Foo", {"X", "W"}, {"Y"});
  d.set_domain("my.ops");
  d.mutable_shape_rule()->set_expr("let x = shape(X);\nlet w = shape(W);\nlet r = rank(Y) + 1;\n"
                                   "output[0] = x;");
  absl::Status s = CompileOpDescriptor(d, builtins_).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "op 'my.ops::Foo' shape_rule 3:14: rank() reads inputs; 'Y' is an output");
  d.mutable_shape_rule()->set_expr("output[0] = shape(X);");
  d.mutable_type_rule()->set_expr("output[0] = 1;");
  EXPECT_EQ(CompileOpDescriptor(d, builtins_).status().message(),
            "op 'my.ops::Foo' type_rule 1:13: output[0] expects dtype, got int");
  d.clear_type_rule();
  d.mutable_cost()->mutable_bytes_moved()->set_expr("shape(X)");
  EXPECT_EQ(CompileOpDescriptor(d, builtins_).status().message(),
            "op 'my.ops::Foo' cost.bytes_moved 1:1: a cost rule expects int, got list<int>");
  d.mutable_cost()->mutable_bytes_moved()->set_builtin("memcpy");
  EXPECT_EQ(CompileOpDescriptor(d, builtins_).status().message(),
            "op 'my.ops::Foo' cost.bytes_moved: builtin cost rule 'memcpy' is unknown (there are "
            "no builtin cost rules; write the cost in the rule language)");
  d.clear_cost();
  // ValidateOpDef still runs.
  d.set_name("bad name");
  EXPECT_EQ(CompileOpDescriptor(d, builtins_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(OpCompilerTest, RuntimeErrorsComeFromInference) {
  v1::OpDescriptor d = Descriptor("Checked", {"X"}, {"Y"});
  d.mutable_shape_rule()->set_expr(
      "assert rank(X) == 2, \"X must be 2-D, got \", shape(X);\noutput[0] = shape(X);");
  absl::StatusOr<OpDef> def = CompileOpDescriptor(d, builtins_);
  ASSERT_TRUE(def.ok());
  OpRegistry registry;
  ASSERT_TRUE(registry.Register(*std::move(def)).ok());
  TestGraph g(&registry);
  g.In("x", "float32[1,2,3]");
  g.Node("Checked", {"x"}, {"y"}, {}, "test.rules");
  absl::Status s = g.Run();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "node 'n0_Checked' (test.rules::Checked): shape_rule 1:1: X must be 2-D, got [1,2,3]");
}

}  // namespace
}  // namespace graphopt
