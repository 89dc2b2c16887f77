// Type and shape rules of sequence.cc, and the kinds Identity, If and Loop pass on.

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"

namespace graphopt {
namespace {

class SequenceOpsTest : public BuiltinOpsTest {
 protected:
  // A graph input of `kind` holding tensors of `type` ("float32[?,3]").
  void InKind(const std::string& name, v1::ValueKind kind, const std::string& type) {
    In(name, type);
    graph_.mutable_value(graph_.FindValue(name)).type.kind = kind;
  }
};

TEST_F(SequenceOpsTest, ConstructInsertAtKeepTheCommonShape) {
  In("a", "float32[2,3]");
  In("b", "float32[4,3]");
  In("pos", "int64[]");
  Node("SequenceConstruct", {"a", "b"}, {"s"});
  Node("SequenceInsert", {"s", "a", "pos"}, {"s2"});
  Node("SequenceAt", {"s2", "pos"}, {"t"});
  Node("SequenceLength", {"s2"}, {"n"});
  Node("SequenceErase", {"s2"}, {"s3"});
  RUN_OK();
  EXPECT_EQ(T("s"), "sequence(float32[?,3])");
  EXPECT_EQ(T("s2"), "sequence(float32[?,3])");
  EXPECT_EQ(T("t"), "float32[?,3]");
  EXPECT_EQ(T("n"), "int64[]");
  EXPECT_EQ(T("s3"), "sequence(float32[?,3])");
}

TEST_F(SequenceOpsTest, EmptyTakesItsDType) {
  AttributeMap attrs;
  attrs["dtype"] = AInt(v1::DT_INT32);
  Node("SequenceEmpty", {}, {"s"}, attrs);
  Node("SequenceEmpty", {}, {"f"});
  RUN_OK();
  EXPECT_EQ(T("s"), "sequence(int32[?..])");
  EXPECT_EQ(T("f"), "sequence(float32[?..])");
}

TEST_F(SequenceOpsTest, InsertRefusesAnotherDType) {
  InKind("s", v1::VALUE_SEQUENCE, "float32[3]");
  In("x", "int64[3]");
  Node("SequenceInsert", {"s", "x"}, {"y"});
  ExpectError({"SequenceInsert", "int64", "float32"});
}

TEST_F(SequenceOpsTest, TensorOpsRefuseSequences) {
  InKind("s", v1::VALUE_SEQUENCE, "float32[3]");
  Node("Relu", {"s"}, {"y"});
  ExpectError({"Relu", "'s' is a sequence", "tensors only"});
}

TEST_F(SequenceOpsTest, SequenceOpsRefuseTensorsWhereTheyTakeSequences) {
  In("x", "float32[3]");
  Node("SequenceLength", {"x"}, {"n"});
  ExpectError({"SequenceLength", "is a tensor, expected a sequence"});
}

TEST_F(SequenceOpsTest, SplitToSequenceShapes) {
  In("x", "float32[batch,6]");
  Ints("sizes", {2, 4});
  AttributeMap axis1;
  axis1["axis"] = AInt(1);
  Node("SplitToSequence", {"x", "sizes"}, {"parts"}, axis1);
  AttributeMap squeeze;
  squeeze["axis"] = AInt(1);
  squeeze["keepdims"] = AInt(0);
  Node("SplitToSequence", {"x"}, {"columns"}, squeeze);
  Scalar("three", 3);
  Node("SplitToSequence", {"x", "three"}, {"chunks"}, axis1);
  RUN_OK();
  EXPECT_EQ(T("parts"), "sequence(float32[batch,?])");
  EXPECT_EQ(T("columns"), "sequence(float32[batch])");
  EXPECT_EQ(T("chunks"), "sequence(float32[batch,3])");
}

TEST_F(SequenceOpsTest, ConcatFromSequenceShapes) {
  InKind("s", v1::VALUE_SEQUENCE, "float32[2,3]");
  AttributeMap cat;
  cat["axis"] = AInt(1);
  Node("ConcatFromSequence", {"s"}, {"c"}, cat);
  AttributeMap stack;
  stack["axis"] = AInt(-1);
  stack["new_axis"] = AInt(1);
  Node("ConcatFromSequence", {"s"}, {"k"}, stack);
  RUN_OK();
  EXPECT_EQ(T("c"), "float32[2,?]");
  EXPECT_EQ(T("k"), "float32[2,3,?]");
}

TEST_F(SequenceOpsTest, OptionalWrapsAndUnwraps) {
  In("x", "float32[2]");
  InKind("s", v1::VALUE_SEQUENCE, "int64[?]");
  Node("Optional", {"x"}, {"ox"});
  Node("Optional", {"s"}, {"os"});
  Node("OptionalHasElement", {"ox"}, {"has"});
  Node("OptionalGetElement", {"ox"}, {"x2"});
  Node("OptionalGetElement", {"os"}, {"s2"});
  RUN_OK();
  EXPECT_EQ(T("ox"), "optional(float32[2])");
  EXPECT_EQ(T("os"), "optional(sequence(int64[?]))");
  EXPECT_EQ(T("has"), "bool[]");
  EXPECT_EQ(T("x2"), "float32[2]");
  EXPECT_EQ(T("s2"), "sequence(int64[?])");
}

TEST_F(SequenceOpsTest, EmptyOptionalTakesTheTypeAttribute) {
  // TypeProto{sequence_type{elem_type{tensor_type{elem_type: 1 (float)}}}}.
  v1::Attribute type;
  type.mutable_opaque()->set_kind("onnx.TypeProto");
  type.mutable_opaque()->add_values(std::string("\x22\x06\x0a\x04\x0a\x02\x08\x01", 8));
  AttributeMap attrs;
  attrs["type"] = type;
  Node("Optional", {}, {"o"}, attrs);
  RUN_OK();
  EXPECT_EQ(T("o"), "optional(sequence(float32[?..]))");
}

TEST_F(SequenceOpsTest, IdentityIfAndLoopPassKindsOn) {
  InKind("s", v1::VALUE_SEQUENCE, "float32[3]");
  In("cond", "bool[]");
  In("m", "int64[]");
  Node("Identity", {"s"}, {"s_copy"});
  v1::Graph branch;
  v1::ValueInfo* out = branch.add_outputs();
  out->set_name("b");
  TensorTypeToProto(ParseType("float32[3]"), out->mutable_type());
  out->mutable_type()->set_kind(v1::VALUE_OPTIONAL_TENSOR);
  Node("If", {"cond"}, {"o"}, {{"then_branch", AGraph(branch)}, {"else_branch", AGraph(branch)}});
  v1::Graph body;
  for (const char* name : {"i", "c", "carried"}) body.add_inputs()->set_name(name);
  body.add_outputs()->set_name("c");
  body.add_outputs()->set_name("carried");
  Node("Loop", {"m", "", "s"}, {"final"}, {{"body", AGraph(body)}});
  RUN_OK();
  EXPECT_EQ(T("s_copy"), "sequence(float32[3])");
  EXPECT_EQ(T("o"), "optional(float32[3])");
  EXPECT_EQ(T("final"), "sequence(float32[?..])");  // the body declares no shape
}

TEST_F(SequenceOpsTest, SequenceMapGivesSequencesOfTheBodysOutputs) {
  InKind("s", v1::VALUE_SEQUENCE, "float32[3]");
  v1::Graph body;
  body.add_inputs()->set_name("x");
  v1::ValueInfo* out = body.add_outputs();
  out->set_name("y");
  TensorTypeToProto(ParseType("int64[1]"), out->mutable_type());
  Node("SequenceMap", {"s"}, {"mapped"}, {{"body", AGraph(body)}});
  RUN_OK();
  EXPECT_EQ(T("mapped"), "sequence(int64[1])");
}

}  // namespace
}  // namespace graphopt
