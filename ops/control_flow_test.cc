// Shape and type rules of control_flow.cc (If, Loop, Scan).

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

// A body graph whose inputs and outputs are declared with the given types ("?" for none).
v1::Graph Body(const std::vector<std::string>& inputs, const std::vector<std::string>& outputs) {
  v1::Graph g;
  int n = 0;
  for (const std::string& t : inputs) {
    v1::ValueInfo* v = g.add_inputs();
    v->set_name("in" + std::to_string(n++));
    TensorTypeToProto(ParseType(t), v->mutable_type());
  }
  for (const std::string& t : outputs) {
    v1::ValueInfo* v = g.add_outputs();
    v->set_name("out" + std::to_string(n++));
    TensorTypeToProto(ParseType(t), v->mutable_type());
  }
  return g;
}

TEST_F(BuiltinOpsTest, ControlFlowOpsAreRegistered) {
  for (const char* name : {"If", "Loop", "Scan"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_OPAQUE);
    EXPECT_EQ(op->descriptor.outputs(0).arity(), v1::ARITY_VARIADIC);
    EXPECT_TRUE(op->descriptor.outputs(0).type_constraint().empty()) << "heterogeneous";
  }
}

TEST_F(BuiltinOpsTest, IfTakesTheBranchesTypesAndCommonDims) {
  In("cond", "bool[]");
  Node("If", {"cond"}, {"a", "b"},
       {{"then_branch", AGraph(Body({}, {"float32[batch,5]", "int64[3]"}))},
        {"else_branch", AGraph(Body({}, {"float32[batch,7]", "int64[?..]"}))}});
  RUN_OK();
  EXPECT_EQ(T("a"), "float32[batch,?]");
  EXPECT_EQ(T("b"), "int64[?..]");
}

TEST_F(BuiltinOpsTest, IfReadsAConstantBranchOutput) {
  In("cond", "bool[1]");
  v1::Graph then_branch = Body({}, {"?"});
  v1::Node* c = then_branch.add_nodes();
  c->set_op_type("Constant");
  c->add_outputs(then_branch.outputs(0).name());
  v1::Attribute* value = c->add_attributes();
  value->set_name("value");
  *value->mutable_t() = FloatTensor({1, 2, 3}, {3});
  Node("If", {"cond"}, {"y"}, {{"then_branch", AGraph(then_branch)},
                               {"else_branch", AGraph(Body({}, {"float32[3]"}))}});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[3]");
}

TEST_F(BuiltinOpsTest, IfBranchesMustAgree) {
  In("cond", "bool[]");
  Node("If", {"cond"}, {"y"}, {{"then_branch", AGraph(Body({}, {"float32[5]"}))},
                               {"else_branch", AGraph(Body({}, {"int32[5]"}))}});
  ExpectError({"n0_If", "float32", "int32"});
}

TEST_F(BuiltinOpsTest, IfBranchOutputCountMustMatch) {
  In("cond", "bool[]");
  Node("If", {"cond"}, {"y"}, {{"then_branch", AGraph(Body({}, {"float32[5]", "float32[5]"}))},
                               {"else_branch", AGraph(Body({}, {"float32[5]"}))}});
  ExpectError({"n0_If", "then_branch", "2 outputs"});
}

TEST_F(BuiltinOpsTest, LoopWithAConstantTripCountStacksScanOutputs) {
  Scalar("m", 6);
  In("y", "float32[2]");
  v1::Graph body = Body({"int64[]", "bool[]", "float32[2]"},
                        {"bool[]", "float32[2]", "float32[batch,2]"});
  Node("Loop", {"m", "", "y"}, {"final", "scan"}, {{"body", AGraph(body)}});
  RUN_OK();
  EXPECT_EQ(T("final"), "float32[2]");
  EXPECT_EQ(T("scan"), "float32[6,batch,2]");
}

TEST_F(BuiltinOpsTest, LoopWithAConditionHasAnUnknownTripCount) {
  Scalar("m", 6);
  In("cond", "bool[]");
  In("y", "float32[?..]");
  v1::Graph body = Body({"int64[]", "bool[]", "?"}, {"bool[]", "float32[3]", "int32[4]"});
  Node("Loop", {"m", "cond", "y"}, {"final", "scan"}, {{"body", AGraph(body)}});
  RUN_OK();
  EXPECT_EQ(T("final"), "float32[?..]");
  EXPECT_EQ(T("scan"), "int32[?,4]");
}

TEST_F(BuiltinOpsTest, LoopScanOutputForwardingACarriedValueHasItsType) {
  In("start", "int32[]");
  In("n", "int64[]");
  // The body stacks the carried value as it enters each iteration; nothing is declared.
  v1::Graph body = Body({"int64[]", "bool[]", "?"}, {"bool[]", "?", "?"});
  v1::Node* copy = body.add_nodes();
  copy->set_op_type("Identity");
  copy->add_inputs(body.inputs(2).name());
  copy->add_outputs(body.outputs(2).name());
  Node("Loop", {"n", "", "start"}, {"final", "range"}, {{"body", AGraph(body)}});
  RUN_OK();
  EXPECT_EQ(T("final"), "int32[?..]");
  EXPECT_EQ(T("range"), "int32[?..]");
}

TEST_F(BuiltinOpsTest, LoopBodyMustTakeTheCarriedValues) {
  In("y", "float32[2]");
  Node("Loop", {"", "", "y"}, {"final"},
       {{"body", AGraph(Body({"int64[]", "bool[]"}, {"bool[]", "float32[2]"}))}});
  ExpectError({"n0_Loop", "'body' takes 2 inputs", "carries 1"});
}

TEST_F(BuiltinOpsTest, ScanStacksAlongTheScanAxes) {
  In("state", "float32[d]");
  In("xs", "float32[2,seq]");
  Node("Scan", {"state", "xs"}, {"final", "ys"},
       {{"body", AGraph(Body({"float32[d]", "float32[2]"}, {"float32[4]", "float32[5]"}))},
        {"num_scan_inputs", AInt(1)},
        {"scan_input_axes", AInts({1})},
        {"scan_output_axes", AInts({-1})}});
  RUN_OK();
  EXPECT_EQ(T("final"), "float32[4]");
  EXPECT_EQ(T("ys"), "float32[5,seq]");
}

TEST_F(BuiltinOpsTest, ScanOpset8HasBatchAndSequenceDims) {
  Opset(8);
  In("state", "float32[1,2]");
  In("xs", "float32[1,3,2]");
  Node("Scan", {"", "state", "xs"}, {"final", "ys"},
       {{"body", AGraph(Body({"float32[2]", "float32[2]"}, {"float32[2]", "float32[2]"}))},
        {"num_scan_inputs", AInt(1)}});
  RUN_OK();
  EXPECT_EQ(T("final"), "float32[1,2]");
  EXPECT_EQ(T("ys"), "float32[1,3,2]");
}

TEST_F(BuiltinOpsTest, ScanNumScanInputsMustFit) {
  In("state", "float32[2]");
  Node("Scan", {"state"}, {"final"},
       {{"body", AGraph(Body({"float32[2]"}, {"float32[2]"}))}, {"num_scan_inputs", AInt(2)}});
  ExpectError({"n0_Scan", "'num_scan_inputs'"});
}

}  // namespace
}  // namespace graphopt
