#include "graph/proto_convert.h"

#include "graph/proto_util.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

v1::Graph Parse(const std::string& text) {
  v1::Graph g;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &g));
  return g;
}

constexpr char kGraph[] = R"pb(
  name: "g"
  doc_string: "a test graph"
  opset_imports { domain: "" version: 17 }
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 4 } } } }
  initializers { name: "w" dtype: DT_FLOAT32 dims: 4 raw_data: "\000\000\200?\000\000\200?\000\000\200?\000\000\200?" }
  nodes {
    name: "mul" op_type: "Mul" inputs: "x" inputs: "w" outputs: "m" doc_string: "scale"
    attributes { name: "z_last" i: 1 }
    attributes { name: "a_first" floats { values: 1 values: 2 } }
  }
  nodes { name: "relu" op_type: "Relu" inputs: "m" outputs: "y" }
  outputs { name: "y" doc_string: "result" }
  value_info { name: "m" type { dtype: DT_FLOAT32 } }
)pb";

TEST(ProtoConvertTest, RoundTripKeepsEverything) {
  absl::StatusOr<Graph> g = GraphFromProto(Parse(kGraph));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->num_live_nodes(), 2);
  ValueId x = g->FindValue("x");
  ASSERT_TRUE(x.valid());
  EXPECT_EQ(TensorTypeToString(g->value(x).type), "float32[batch,4]");
  EXPECT_EQ(TensorTypeToString(g->value(g->FindValue("w")).type), "float32[4]");
  v1::Graph out = GraphToProto(*g);
  EXPECT_EQ(out.name(), "g");
  EXPECT_EQ(out.doc_string(), "a test graph");
  ASSERT_EQ(out.nodes_size(), 2);
  // Attributes come out sorted by name.
  EXPECT_EQ(out.nodes(0).attributes(0).name(), "a_first");
  EXPECT_EQ(out.nodes(0).doc_string(), "scale");
  EXPECT_EQ(out.outputs(0).doc_string(), "result");
  ASSERT_EQ(out.initializers_size(), 1);
  EXPECT_EQ(out.initializers(0).raw_data().size(), 16u);
  ASSERT_EQ(out.value_info_size(), 1);
  EXPECT_EQ(out.value_info(0).name(), "m");

  // Converting the output again is a fixed point, byte for byte.
  absl::StatusOr<Graph> again = GraphFromProto(out);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(SerializeDeterministic(GraphToProto(*again)), SerializeDeterministic(out));
}

TEST(ProtoConvertTest, ConsumingWriteMovesInitializersAndMatchesCopy) {
  absl::StatusOr<Graph> g = GraphFromProto(Parse(R"pb(
    name: "g"
    inputs { name: "x" type { dtype: DT_FLOAT32 } }
    initializers { name: "unused" dtype: DT_FLOAT32 dims: 1 raw_data: "\x00\x00\x00\x00" }
    initializers { name: "w" dtype: DT_FLOAT32 dims: 2 raw_data: "\x00\x00\x80\x3f\x00\x00\x00\x40" }
    nodes { name: "add" op_type: "Add" inputs: "x" inputs: "w" outputs: "y" }
    outputs { name: "y" }
    model { producer_name: "p" })pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  g->RemoveInitializer(g->FindValue("unused"));
  const std::string copied = SerializeDeterministic(GraphToProto(*g));
  const v1::Graph moved = GraphToProto(*std::move(g));
  EXPECT_EQ(SerializeDeterministic(moved), copied);
  ASSERT_EQ(moved.initializers_size(), 1);
  EXPECT_EQ(moved.initializers(0).raw_data().size(), 8u);
  EXPECT_EQ(moved.model().producer_name(), "p");
  EXPECT_TRUE(g->initializers().empty());  // the bytes moved out
}

TEST(ProtoConvertTest, NodesComeOutTopologicallySorted) {
  absl::StatusOr<Graph> g = GraphFromProto(Parse(R"pb(
    inputs { name: "x" }
    nodes { name: "second" op_type: "Relu" inputs: "a" outputs: "b" }
    nodes { name: "first" op_type: "Relu" inputs: "x" outputs: "a" }
    outputs { name: "b" })pb"));
  ASSERT_TRUE(g.ok());
  v1::Graph out = GraphToProto(*g);
  EXPECT_EQ(out.nodes(0).name(), "first");
  EXPECT_EQ(out.nodes(1).name(), "second");
}

TEST(ProtoConvertTest, RejectsDuplicateInputs) {
  auto g = GraphFromProto(Parse(R"pb(inputs { name: "x" } inputs { name: "x" })pb"));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("graph input 'x' is listed twice"));
}

TEST(ProtoConvertTest, RejectsDuplicateAttribute) {
  auto g = GraphFromProto(Parse(R"pb(
    inputs { name: "x" }
    nodes {
      name: "n" op_type: "Relu" inputs: "x" outputs: "y"
      attributes { name: "a" i: 1 }
      attributes { name: "a" i: 2 }
    })pb"));
  EXPECT_THAT(g.status().message(), HasSubstr("node 'n' (Relu): attribute 'a' is given twice"));
}

TEST(ProtoConvertTest, RejectsAttributeWithoutValue) {
  auto g = GraphFromProto(Parse(R"pb(
    inputs { name: "x" }
    nodes { name: "n" op_type: "Relu" inputs: "x" outputs: "y" attributes { name: "a" } })pb"));
  EXPECT_THAT(g.status().message(), HasSubstr("node 'n' (Relu): attribute 'a' has no value"));
}

TEST(ProtoConvertTest, RejectsEmptyOpType) {
  auto g = GraphFromProto(Parse(R"pb(nodes { name: "n" outputs: "y" })pb"));
  EXPECT_THAT(g.status().message(), HasSubstr("node 'n' (): empty op_type"));
}

TEST(ProtoConvertTest, RejectsNodeWithRepeatedOutput) {
  auto g = GraphFromProto(Parse(R"pb(
    inputs { name: "x" }
    nodes { name: "n" op_type: "Split" inputs: "x" outputs: "y" outputs: "y" })pb"));
  EXPECT_THAT(g.status().message(), HasSubstr("node 'n' (Split): output 'y' is listed twice"));
}

// A node's outputs are checked for repeats in linear time: a million outputs convert in a
// fraction of a second (a quadratic check would take hours), and a repeat among many is found.
TEST(ProtoConvertTest, NodeWithAMillionOutputsConvertsAndRepeatsAreFound) {
  constexpr int kOutputs = 1000000;
  v1::Graph proto;
  v1::Node* n = proto.add_nodes();
  n->set_name("n");
  n->set_op_type("Split");
  n->add_inputs("x");
  for (int i = 0; i < kOutputs; ++i) n->add_outputs(absl::StrCat("y", i));
  proto.add_inputs()->set_name("x");
  v1::Graph repeated = proto;
  repeated.mutable_nodes(0)->add_outputs("y123456");
  absl::StatusOr<Graph> g = GraphFromProto(std::move(proto));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->node(NodeId(0)).outputs.size(), static_cast<size_t>(kOutputs));
  g = GraphFromProto(std::move(repeated));
  ASSERT_FALSE(g.ok());
  EXPECT_THAT(g.status().message(), HasSubstr("node 'n' (Split): output 'y123456' is listed twice"));
}

// A graph whose node 'if0' holds bodies nested `depth` levels deep (each body an If of the next).
v1::Graph NestedIfs(int depth) {
  v1::Graph leaf;
  v1::Node* id = leaf.add_nodes();
  id->set_op_type("Identity");
  id->add_inputs("c");
  id->add_outputs("y");
  leaf.add_outputs()->set_name("y");
  v1::Graph g = leaf;
  for (int level = depth; level >= 1; --level) {
    v1::Graph outer;
    v1::Node* n = outer.add_nodes();
    n->set_name(absl::StrCat("if", level - 1));
    n->set_op_type("If");
    n->add_inputs("c");
    n->add_outputs("y");
    v1::Attribute* then_branch = n->add_attributes();
    then_branch->set_name("then_branch");
    *then_branch->mutable_g() = std::move(g);
    v1::Attribute* else_branch = n->add_attributes();
    else_branch->set_name("else_branch");
    *else_branch->mutable_g() = leaf;
    outer.add_outputs()->set_name("y");
    g = std::move(outer);
  }
  g.add_inputs()->set_name("c");
  return g;
}

TEST(ProtoConvertTest, SubgraphsNestedTooDeepAreRefused) {
  EXPECT_TRUE(GraphFromProto(NestedIfs(kMaxSubgraphDepth)).ok());
  absl::StatusOr<Graph> g = GraphFromProto(NestedIfs(kMaxSubgraphDepth + 1));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(),
              HasSubstr("node 'if0' (If): attribute 'then_branch': graph attributes nest more "
                        "than 64 levels deep"));
  // Thousands of levels (deeper than the wire decoder's recursion limit allows: built here):
  // refused by the same iterative walk.
  g = GraphFromProto(NestedIfs(2000));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ProtoConvertTest, RejectsNegativeInitializerDim) {
  auto g = GraphFromProto(Parse(R"pb(initializers { name: "w" dtype: DT_FLOAT32 dims: -2 })pb"));
  EXPECT_THAT(g.status().message(), HasSubstr("initializer 'w' has a negative dim -2"));
}

TEST(ProtoConvertTest, RejectsNegativeDeclaredDims) {
  // INT64_MIN as a declared size reached Gather's shape rule, which negates sizes (found by
  // graph_pipeline_fuzzer; UBSan).
  auto g = GraphFromProto(Parse(R"pb(
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: -9223372036854775808 } } } }
  )pb"));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(),
              HasSubstr("graph input 'x': dim 0 has a negative size -9223372036854775808"));
  g = GraphFromProto(Parse(R"pb(
    inputs { name: "x" }
    outputs { name: "x" }
    outputs { name: "y" type { shape { dims { size: 2 } dims { size: -1 } } } }
  )pb"));
  EXPECT_THAT(g.status().message(), HasSubstr("graph output 'y': dim 1 has a negative size -1"));
  g = GraphFromProto(Parse(R"pb(
    inputs { name: "x" }
    nodes { op_type: "Relu" inputs: "x" outputs: "y" }
    outputs { name: "y" }
    value_info { name: "y" type { shape { dims { size: -3 } } } }
  )pb"));
  EXPECT_THAT(g.status().message(), HasSubstr("value_info 'y': dim 0 has a negative size -3"));
}

TEST(ProtoConvertTest, InitializerThatIsAlsoAnInput) {
  auto g = GraphFromProto(Parse(R"pb(
    inputs { name: "w" type { dtype: DT_FLOAT32 } }
    initializers { name: "w" dtype: DT_FLOAT32 dims: 2 raw_data: "\000\000\000\000\000\000\000\000" }
    nodes { op_type: "Relu" inputs: "w" outputs: "y" }
    outputs { name: "y" })pb"));
  ASSERT_TRUE(g.ok()) << g.status();
  const Value& w = g->value(g->FindValue("w"));
  EXPECT_TRUE(w.is_graph_input);
  EXPECT_GE(w.initializer, 0);
  EXPECT_EQ(TensorTypeToString(w.type), "float32[2]");
  v1::Graph out = GraphToProto(*g);
  EXPECT_EQ(out.inputs_size(), 1);
  EXPECT_EQ(out.initializers_size(), 1);
}

}  // namespace
}  // namespace graphopt
