#include "onnx_io/onnx_portable.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_util.h"
#include "gtest/gtest.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename Message>
Message Parse(const std::string& text) {
  Message m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

std::vector<std::string> OpTypes(const onnx::FunctionProto& f) {
  std::vector<std::string> ops;
  for (const onnx::NodeProto& n : f.node()) ops.push_back(n.op_type());
  return ops;
}

// Two channels-last convolutions with one window and a third with another, then a global pool.
constexpr char kLayoutGraph[] = R"pb(
  nodes { name: "c1" op_type: "NhwcConv" domain: "graphopt" inputs: "x" inputs: "w" outputs: "a"
          attributes { name: "kernel_shape" ints { values: 3 values: 3 } }
          attributes { name: "pads" ints { values: 1 values: 1 values: 1 values: 1 } }
          attributes { name: "winograd" i: 1 } }
  nodes { name: "c2" op_type: "NhwcConv" domain: "graphopt" inputs: "a" inputs: "w" outputs: "b"
          attributes { name: "kernel_shape" ints { values: 3 values: 3 } }
          attributes { name: "pads" ints { values: 1 values: 1 values: 1 values: 1 } } }
  nodes { name: "c3" op_type: "NhwcConv" domain: "graphopt" inputs: "b" inputs: "w" outputs: "c"
          attributes { name: "kernel_shape" ints { values: 3 values: 3 } } }
  nodes { name: "p" op_type: "NhwcGlobalAveragePool" domain: "graphopt" inputs: "c" outputs: "y" }
  inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 8 } dims { size: 8 } dims { size: 4 } } } }
  inputs { name: "w" type { dtype: DT_FLOAT32 shape { dims { size: 4 } dims { size: 4 } dims { size: 3 } dims { size: 3 } } } }
  outputs { name: "y" type { dtype: DT_FLOAT32 } }
  value_info { name: "c" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 6 } dims { size: 6 } dims { size: 4 } } } }
  model { ir_version: 6 }
  opset_imports { version: 11 }
)pb";

TEST(PortableExportTest, LayoutOpsBecomeDeduplicatedFunctions) {
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(Parse<v1::Graph>(kLayoutGraph));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->ir_version(), 8);  // raised for model-local functions
  ASSERT_EQ(m->functions_size(), 3);
  EXPECT_EQ(m->functions(0).name(), "NhwcConv_1");
  EXPECT_EQ(m->functions(1).name(), "NhwcConv_2");
  EXPECT_EQ(m->functions(2).name(), "NhwcGlobalAveragePool_1");
  EXPECT_THAT(OpTypes(m->functions(0)), ElementsAre("Transpose", "Conv", "Transpose"));
  EXPECT_THAT(OpTypes(m->functions(2)),
              ElementsAre("Transpose", "GlobalAveragePool", "Transpose"));
  for (const onnx::FunctionProto& f : m->functions()) {
    EXPECT_EQ(f.domain(), "graphopt");
    ASSERT_EQ(f.opset_import_size(), 1);
    EXPECT_EQ(f.opset_import(0).domain(), "");
    EXPECT_EQ(f.opset_import(0).version(), 11);  // the model's, as runtimes require
  }
  // The conv body carries the window but not graphopt's own 'winograd'.
  const onnx::NodeProto& conv = m->functions(0).node(1);
  std::vector<std::string> attrs;
  for (const onnx::AttributeProto& a : conv.attribute()) attrs.push_back(a.name());
  EXPECT_THAT(attrs, ElementsAre("kernel_shape", "pads"));
  // c1 and c2 differ only in 'winograd', which the body leaves out: one function.
  EXPECT_EQ(m->graph().node(0).op_type(), "NhwcConv_1");
  EXPECT_EQ(m->graph().node(1).op_type(), "NhwcConv_1");
  EXPECT_EQ(m->graph().node(2).op_type(), "NhwcConv_2");
  for (const onnx::NodeProto& n : m->graph().node()) {
    EXPECT_EQ(n.domain(), "graphopt");
    EXPECT_EQ(n.attribute_size(), 0);
  }
  bool imports_graphopt = false;
  for (const auto& o : m->opset_import()) imports_graphopt |= o.domain() == "graphopt";
  EXPECT_TRUE(imports_graphopt);
}

TEST(PortableExportTest, SameGraphSameBytes) {
  absl::StatusOr<std::string> a = GraphToOnnxBytes(Parse<v1::Graph>(kLayoutGraph));
  absl::StatusOr<std::string> b = GraphToOnnxBytes(Parse<v1::Graph>(kLayoutGraph));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(PortableExportTest, NativeOpsKeepsGraphoptNodes) {
  absl::StatusOr<onnx::ModelProto> m =
      GraphToOnnx(Parse<v1::Graph>(kLayoutGraph), {.native_ops = true});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->functions_size(), 0);
  EXPECT_EQ(m->ir_version(), 6);
  EXPECT_EQ(m->graph().node(0).op_type(), "NhwcConv");
  EXPECT_EQ(m->graph().node(0).attribute_size(), 3);
}

TEST(PortableExportTest, StripValueInfoAfterTheBodiesUsedIt) {
  // The global pool's body needs the rank of 'c', which only value_info declares.
  absl::StatusOr<onnx::ModelProto> m =
      GraphToOnnx(Parse<v1::Graph>(kLayoutGraph), {.strip_value_info = true});
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->graph().value_info_size(), 0);
  EXPECT_EQ(m->functions_size(), 3);
}

TEST(PortableExportTest, ReadBackAsStandardOps) {
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(Parse<v1::Graph>(kLayoutGraph));
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<v1::Graph> back = GraphFromOnnx(*m);
  ASSERT_TRUE(back.ok()) << back.status();
  std::vector<std::string> ops;
  for (const v1::Node& n : back->nodes()) ops.push_back(n.op_type());
  EXPECT_THAT(ops, ElementsAre("Transpose", "Conv", "Transpose", "Transpose", "Conv", "Transpose",
                               "Transpose", "Conv", "Transpose", "Transpose",
                               "GlobalAveragePool", "Transpose"));
  // The call's inputs and outputs keep their names; the body's values are prefixed.
  EXPECT_EQ(back->nodes(0).inputs(0), "x");
  EXPECT_EQ(back->nodes(0).outputs(0), "a/NhwcConv_1/t0");
  EXPECT_EQ(back->nodes(2).outputs(0), "a");
}

TEST(PortableExportTest, FusedGroupBodyRenamedByPosition) {
  // Two groups computing the same thing on differently named values share one function; the
  // NhwcConv inside calls its own function.
  std::string group = R"pb(
    name: "g"
    inputs { name: "IN" type { dtype: DT_FLOAT32 shape { dims { size: 1 } dims { size: 4 } dims { size: 4 } dims { size: 2 } } } }
    inputs { name: "W" }
    outputs { name: "OUT" }
    nodes { op_type: "NhwcConv" domain: "graphopt" inputs: "IN" inputs: "W" outputs: "MID"
            attributes { name: "kernel_shape" ints { values: 1 values: 1 } } }
    nodes { op_type: "Relu" inputs: "MID" outputs: "OUT" })pb";
  auto with_names = [&](const std::string& in, const std::string& mid, const std::string& out) {
    std::string text = group;
    for (auto [from, to] : {std::pair<std::string, std::string>{"IN", in}, {"MID", mid}, {"OUT", out}}) {
      for (size_t p; (p = text.find("\"" + from + "\"")) != std::string::npos;) {
        text.replace(p + 1, from.size(), to);
      }
    }
    return text;
  };
  const std::string text = R"pb(
    nodes { name: "f1" op_type: "FusedGroup" domain: "graphopt" inputs: "x" inputs: "w" outputs: "a"
            attributes { name: "body" g { )pb" + with_names("x", "m1", "a") + R"pb( } }
            attributes { name: "pattern" s: "conv_epilogue" } }
    nodes { name: "f2" op_type: "FusedGroup" domain: "graphopt" inputs: "a" inputs: "w" outputs: "y"
            attributes { name: "body" g { )pb" + with_names("a", "m2", "y") + R"pb( } } }
    inputs { name: "x" } inputs { name: "w" } outputs { name: "y" })pb";
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(Parse<v1::Graph>(text));
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->functions_size(), 2);
  EXPECT_EQ(m->functions(0).name(), "NhwcConv_1");
  const onnx::FunctionProto& f = m->functions(1);
  EXPECT_EQ(f.name(), "FusedGroup_1");
  EXPECT_THAT(f.input(), ElementsAre("x0", "x1"));
  EXPECT_THAT(f.output(), ElementsAre("y0"));
  ASSERT_EQ(f.node_size(), 2);
  EXPECT_EQ(f.node(0).domain(), "graphopt");
  EXPECT_EQ(f.node(0).op_type(), "NhwcConv_1");
  EXPECT_THAT(f.node(0).output(), ElementsAre("t0"));
  EXPECT_EQ(m->graph().node(0).op_type(), "FusedGroup_1");
  EXPECT_EQ(m->graph().node(1).op_type(), "FusedGroup_1");
  bool calls_graphopt = false;
  for (const auto& o : f.opset_import()) calls_graphopt |= o.domain() == "graphopt";
  EXPECT_TRUE(calls_graphopt);

  // Read back: both levels inlined, no graphopt node left.
  absl::StatusOr<v1::Graph> back = GraphFromOnnx(*m);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->nodes_size(), 8);
  for (const v1::Node& n : back->nodes()) EXPECT_EQ(n.domain(), "") << n.op_type();
  EXPECT_EQ(back->nodes(3).outputs(0), "a");
  EXPECT_EQ(back->nodes(7).outputs(0), "y");
}

TEST(PortableExportTest, GraphoptOpWithoutStandardFormIsAnError) {
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(Parse<v1::Graph>(R"pb(
    nodes { name: "n" op_type: "Mystery" domain: "graphopt" inputs: "x" outputs: "y" }
    inputs { name: "x" } outputs { name: "y" })pb"));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(m.status().message(), HasSubstr("node 'n' (graphopt::Mystery)"));
  EXPECT_THAT(m.status().message(), HasSubstr("--native-ops"));
}

TEST(PortableExportTest, UnknownRankIsAnError) {
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(Parse<v1::Graph>(R"pb(
    nodes { name: "p" op_type: "NhwcGlobalMaxPool" domain: "graphopt" inputs: "x" outputs: "y" }
    inputs { name: "x" } outputs { name: "y" })pb"));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("the rank of its input X is not known"));
}

TEST(PortableExportTest, SumToShapeNeedsOpset13) {
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(Parse<v1::Graph>(R"pb(
    nodes { name: "s" op_type: "SumToShape" domain: "graphopt" inputs: "g" inputs: "shape" outputs: "y" }
    inputs { name: "g" } inputs { name: "shape" } outputs { name: "y" }
    opset_imports { version: 12 })pb"));
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(m.status().message(), HasSubstr("opset 13, the model imports opset 12"));
}

TEST(PortableExportTest, DuplicateNodeNamesMadeUnique) {
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(Parse<v1::Graph>(R"pb(
    nodes { name: "n" op_type: "Relu" inputs: "x" outputs: "a" }
    nodes { name: "n" op_type: "Relu" inputs: "a" outputs: "b" }
    nodes { name: "n#2" op_type: "Relu" inputs: "b" outputs: "y" }
    inputs { name: "x" } outputs { name: "y" })pb"));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->graph().node(0).name(), "n");
  EXPECT_EQ(m->graph().node(1).name(), "n#3");
  EXPECT_EQ(m->graph().node(2).name(), "n#2");
}

TEST(InlineFunctionsTest, AttributeReferencesAndSubgraphCalls) {
  onnx::ModelProto m = Parse<onnx::ModelProto>(R"pb(
    ir_version: 8
    opset_import { version: 17 } opset_import { domain: "f" version: 1 }
    graph {
      name: "g"
      input { name: "x" } input { name: "c" } output { name: "y" }
      node { op_type: "If" input: "c" output: "y"
             attribute { name: "then_branch" type: GRAPH g {
               name: "then" output { name: "t" }
               node { op_type: "Clipped" domain: "f" input: "x" output: "t"
                      attribute { name: "hi" type: FLOAT f: 6 } } } }
             attribute { name: "else_branch" type: GRAPH g {
               name: "else" output { name: "e" }
               node { op_type: "Clipped" domain: "f" input: "x" output: "e" } } } }
    }
    functions {
      name: "Clipped" domain: "f" input: "a" output: "b" attribute: "hi"
      opset_import { version: 17 }
      node { op_type: "Relu" input: "a" output: "r" }
      node { op_type: "Clip" input: "r" output: "b"
             attribute { name: "max" type: FLOAT ref_attr_name: "hi" } }
    })pb");
  absl::StatusOr<v1::Graph> g = GraphFromOnnx(m);
  ASSERT_TRUE(g.ok()) << g.status();
  const v1::Graph& then_branch = g->nodes(0).attributes(0).g();
  ASSERT_EQ(then_branch.nodes_size(), 2);
  EXPECT_EQ(then_branch.nodes(0).outputs(0), "t/Clipped/r");
  EXPECT_EQ(then_branch.nodes(1).inputs(0), "t/Clipped/r");
  ASSERT_EQ(then_branch.nodes(1).attributes_size(), 1);
  EXPECT_EQ(then_branch.nodes(1).attributes(0).name(), "max");
  EXPECT_EQ(then_branch.nodes(1).attributes(0).f(), 6);
  const v1::Graph& else_branch = g->nodes(0).attributes(1).g();
  ASSERT_EQ(else_branch.nodes_size(), 2);
  EXPECT_EQ(else_branch.nodes(1).attributes_size(), 0);  // no 'hi' given: left out
}

TEST(InlineFunctionsTest, InlinedNamesAvoidTakenOnes) {
  onnx::ModelProto m = Parse<onnx::ModelProto>(R"pb(
    ir_version: 8 opset_import { version: 17 }
    graph {
      name: "g" input { name: "x" } output { name: "z" }
      node { op_type: "F" domain: "d" input: "x" output: "y" }
      node { op_type: "Relu" input: "y" output: "y/F/t" }
      node { op_type: "Relu" input: "y/F/t" output: "z" }
    }
    functions { name: "F" domain: "d" input: "a" output: "b" opset_import { version: 17 }
      node { op_type: "Neg" input: "a" output: "t" }
      node { op_type: "Neg" input: "t" output: "b" } })pb");
  absl::StatusOr<v1::Graph> g = GraphFromOnnx(m);
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ(g->nodes_size(), 4);
  EXPECT_EQ(g->nodes(0).outputs(0), "y/F/t#1");
  EXPECT_EQ(g->nodes(1).outputs(0), "y");
}

TEST(InlineFunctionsTest, BodyWithSubgraphIsUnimplemented) {
  onnx::ModelProto m = Parse<onnx::ModelProto>(R"pb(
    ir_version: 8 opset_import { version: 17 }
    graph { name: "g" node { op_type: "F" domain: "d" input: "c" output: "y" } }
    functions { name: "F" domain: "d" input: "c" output: "y" opset_import { version: 17 }
      node { name: "if" op_type: "If" input: "c" output: "y"
             attribute { name: "then_branch" type: GRAPH g { name: "t" } } } })pb");
  absl::StatusOr<v1::Graph> g = GraphFromOnnx(m);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(g.status().message(), HasSubstr("function 'F': node 'if' (If) has a subgraph"));
}

}  // namespace
}  // namespace graphopt
