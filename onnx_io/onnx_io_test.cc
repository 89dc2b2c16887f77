#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"

namespace graphopt {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

onnx::ModelProto ParseModel(const std::string& text) {
  onnx::ModelProto m;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &m)) << text;
  return m;
}

// A model touching every part the import carries: metadata, opsets (with "ai.onnx" spelled
// out), symbolic dims, typed-field and raw tensors, attributes of every kind, a subgraph,
// doc strings.
constexpr char kModel[] = R"pb(
  ir_version: 8
  producer_name: "test"
  producer_version: "1.0"
  domain: "org.example"
  model_version: 3
  doc_string: "a model"
  metadata_props { key: "b" value: "2" }
  metadata_props { key: "a" value: "1" }
  opset_import { domain: "ai.onnx" version: 13 }
  opset_import { domain: "custom.ops" version: 2 }
  graph {
    name: "g"
    doc_string: "the graph"
    input {
      name: "x"
      doc_string: "input x"
      type { tensor_type { elem_type: 1 shape { dim { dim_param: "batch" } dim { dim_value: 4 } dim {} } } }
    }
    input { name: "w" type { tensor_type { elem_type: 1 shape { dim { dim_value: 2 } } } } }
    output { name: "y" type { tensor_type { elem_type: 1 } } }
    value_info { name: "t" type { tensor_type { elem_type: 1 shape { dim { dim_value: 1 } } } } }
    initializer { name: "w" data_type: 1 dims: 2 float_data: 1.5 float_data: -2 doc_string: "w doc" }
    initializer { name: "h" data_type: 10 dims: 1 int32_data: 15360 }
    initializer { name: "b" data_type: 9 dims: 3 int32_data: 1 int32_data: 0 int32_data: 1 }
    initializer { name: "i8" data_type: 3 dims: 2 int32_data: -1 int32_data: 7 }
    initializer { name: "u32" data_type: 12 dims: 1 uint64_data: 4000000000 }
    initializer { name: "d" data_type: 11 dims: 1 double_data: 0.25 }
    initializer { name: "r" data_type: 7 dims: 1 raw_data: "\x05\x00\x00\x00\x00\x00\x00\x00" }
    initializer { name: "s" data_type: 8 dims: 2 string_data: "ab" string_data: "c" }
    initializer { name: "cond" data_type: 9 raw_data: "\x01" }
    node {
      name: "n0" op_type: "Add" domain: "ai.onnx" input: "x" input: "w" output: "t"
      doc_string: "add doc"
    }
    node {
      name: "n1" op_type: "Custom" domain: "custom.ops" input: "t" input: "" output: "u"
      attribute { name: "f" type: FLOAT f: 0.5 }
      attribute { name: "i" type: INT i: -3 }
      attribute { name: "s" type: STRING s: "str" doc_string: "attr doc" }
      attribute { name: "t" type: TENSOR t { data_type: 7 dims: 2 int64_data: 1 int64_data: 2 } }
      attribute { name: "fs" type: FLOATS floats: 1 floats: 2 }
      attribute { name: "is" type: INTS }
      attribute { name: "ss" type: STRINGS strings: "p" strings: "q" }
      attribute { name: "ts" type: TENSORS tensors { data_type: 1 float_data: 3 } }
      attribute { name: "old_style_int" i: 9 }
      attribute { name: "tp" type: TYPE_PROTO tp { tensor_type { elem_type: 6 } } }
      attribute {
        name: "sp" type: SPARSE_TENSOR
        sparse_tensor { dims: 4 values { data_type: 1 dims: 1 float_data: 1 } indices { data_type: 7 dims: 1 int64_data: 2 } }
      }
    }
    node {
      name: "if" op_type: "If" input: "cond" output: "y"
      attribute {
        name: "then_branch" type: GRAPH
        g {
          name: "then"
          node { op_type: "Identity" input: "u" output: "o1" }
          output { name: "o1" type { tensor_type { elem_type: 1 } } }
        }
      }
      attribute {
        name: "else_branch" type: GRAPH
        g {
          name: "else"
          node { op_type: "Neg" input: "u" output: "o2" }
          output { name: "o2" type { tensor_type { elem_type: 1 } } }
        }
      }
    }
  }
)pb";

TEST(OnnxImportTest, CarriesEveryPart) {
  absl::StatusOr<v1::Graph> g = GraphFromOnnx(ParseModel(kModel));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->name(), "g");
  EXPECT_EQ(g->doc_string(), "the graph");
  EXPECT_EQ(g->model().ir_version(), 8);
  EXPECT_EQ(g->model().producer_name(), "test");
  EXPECT_EQ(g->model().model_version(), 3);
  ASSERT_EQ(g->model().metadata_props_size(), 2);
  EXPECT_EQ(g->model().metadata_props(0).key(), "b");  // original order kept
  ASSERT_EQ(g->opset_imports_size(), 2);
  EXPECT_EQ(g->opset_imports(0).domain(), "");  // "ai.onnx" is the default domain
  EXPECT_EQ(g->opset_imports(0).version(), 13);

  const v1::ValueInfo& x = g->inputs(0);
  EXPECT_EQ(x.doc_string(), "input x");
  ASSERT_EQ(x.type().shape().dims_size(), 3);
  EXPECT_EQ(x.type().shape().dims(0).symbol(), "batch");
  EXPECT_EQ(x.type().shape().dims(1).size(), 4);
  EXPECT_EQ(x.type().shape().dims(2).value_case(), v1::Dim::VALUE_NOT_SET);
  EXPECT_FALSE(g->outputs(0).type().has_shape());  // rank unknown

  // Typed fields become little-endian raw data of the natural element size.
  ASSERT_EQ(g->initializers_size(), 9);
  const v1::Tensor& w = g->initializers(0);
  ASSERT_EQ(w.raw_data().size(), 8u);
  float w1;
  std::memcpy(&w1, w.raw_data().data() + 4, 4);
  EXPECT_EQ(w1, -2.0f);
  EXPECT_EQ(w.doc_string(), "w doc");
  EXPECT_EQ(g->initializers(1).raw_data(), std::string("\x00\x3c", 2));  // float16 1.0
  EXPECT_EQ(g->initializers(2).raw_data(), std::string("\x01\x00\x01", 3));
  EXPECT_EQ(g->initializers(3).raw_data(), std::string("\xff\x07", 2));
  EXPECT_EQ(g->initializers(4).raw_data().size(), 4u);
  EXPECT_EQ(g->initializers(5).raw_data().size(), 8u);
  EXPECT_EQ(g->initializers(7).string_data_size(), 2);

  EXPECT_EQ(g->nodes(0).domain(), "");
  EXPECT_EQ(g->nodes(0).doc_string(), "add doc");
  const v1::Node& custom = g->nodes(1);
  EXPECT_EQ(custom.domain(), "custom.ops");
  ASSERT_EQ(custom.inputs_size(), 2);
  EXPECT_EQ(custom.inputs(1), "");  // omitted optional input kept
  ASSERT_EQ(custom.attributes_size(), 11);
  EXPECT_EQ(custom.attributes(2).doc_string(), "attr doc");
  EXPECT_EQ(custom.attributes(3).t().raw_data().size(), 16u);
  EXPECT_TRUE(custom.attributes(5).has_ints());  // empty list, still an INTS attribute
  EXPECT_EQ(custom.attributes(5).ints().values_size(), 0);
  EXPECT_EQ(custom.attributes(8).i(), 9);  // type inferred from the field that is set
  EXPECT_EQ(custom.attributes(9).opaque().kind(), "onnx.TypeProto");
  EXPECT_EQ(custom.attributes(10).opaque().kind(), "onnx.SparseTensorProto");
  EXPECT_EQ(g->nodes(2).attributes(0).g().nodes(0).op_type(), "Identity");
}

TEST(OnnxImportTest, ExportThenImportIsIdentity) {
  absl::StatusOr<v1::Graph> first = GraphFromOnnx(ParseModel(kModel));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<onnx::ModelProto> exported = GraphToOnnx(*first);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->producer_name(), "test");
  EXPECT_EQ(exported->graph().initializer(0).raw_data().size(), 8u);
  EXPECT_EQ(exported->graph().node(1).attribute(8).type(), onnx::AttributeProto::INT);
  absl::StatusOr<v1::Graph> second = GraphFromOnnx(*exported);
  ASSERT_TRUE(second.ok()) << second.status();
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(*first, *second)) << diff;
}

TEST(OnnxImportTest, StateUpdatesTravelInMetadata) {
  absl::StatusOr<v1::Graph> first = GraphFromOnnx(ParseModel(kModel));
  ASSERT_TRUE(first.ok()) << first.status();
  v1::StateUpdate* u = first->add_state_updates();
  u->set_state("w");
  u->set_update("w.next");
  u = first->add_state_updates();
  u->set_state("odd\tname\n");  // escaped in the metadata
  u->set_update("o");
  absl::StatusOr<onnx::ModelProto> exported = GraphToOnnx(*first);
  ASSERT_TRUE(exported.ok()) << exported.status();
  ASSERT_EQ(exported->metadata_props_size(), 3);
  EXPECT_EQ(exported->metadata_props(2).key(), kStateUpdatesMetadataKey);
  absl::StatusOr<v1::Graph> second = GraphFromOnnx(*exported);
  ASSERT_TRUE(second.ok()) << second.status();
  MessageDifferencer d;
  std::string diff;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(*first, *second)) << diff;

  exported->mutable_metadata_props(2)->set_value("no tab here");
  absl::StatusOr<v1::Graph> bad = GraphFromOnnx(*exported);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("graphopt.state_updates"));
}

TEST(OnnxImportTest, ExportIsDeterministic) {
  absl::StatusOr<v1::Graph> g = GraphFromOnnx(ParseModel(kModel));
  ASSERT_TRUE(g.ok());
  absl::StatusOr<std::string> a = GraphToOnnxBytes(*g);
  absl::StatusOr<std::string> b = GraphToOnnxBytes(*g);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
}

TEST(OnnxImportTest, BlobReferences) {
  onnx::ModelProto m = ParseModel(R"pb(
    ir_version: 8 opset_import { version: 17 }
    graph {
      name: "g"
      initializer {
        name: "w" data_type: 1 dims: 2 dims: 3 data_location: EXTERNAL
        external_data { key: "location" value: "graphopt-blob:sha256:00ff" }
        external_data { key: "length" value: "24" }
      }
    })pb");
  absl::StatusOr<v1::Graph> g = GraphFromOnnx(m);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->initializers(0).blob(), "sha256:00ff");
  EXPECT_TRUE(g->initializers(0).raw_data().empty());
  absl::StatusOr<onnx::ModelProto> back = GraphToOnnx(*g);
  ASSERT_TRUE(back.ok());
  const onnx::TensorProto& t = back->graph().initializer(0);
  EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(t.external_data(0).value(), "graphopt-blob:sha256:00ff");
  EXPECT_EQ(t.external_data(1).value(), "24");

  // A wrong declared length is refused, naming the initializer.
  m.mutable_graph()->mutable_initializer(0)->mutable_external_data(1)->set_value("20");
  absl::Status s = GraphFromOnnx(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("initializer 'w' declares 20 bytes"));
}

TEST(OnnxExportTest, NativeGraphGetsDefaults) {
  v1::Graph g;
  v1::Node* n = g.add_nodes();
  n->set_op_type("Relu");
  n->add_inputs("x");
  n->add_outputs("y");
  v1::Node* c = g.add_nodes();
  c->set_op_type("Mine");
  c->set_domain("my.ops");
  c->add_inputs("y");
  c->add_outputs("z");
  v1::Attribute* to = c->add_attributes();
  to->set_name("to");
  to->set_dtype(v1::DT_FLOAT16);
  absl::StatusOr<onnx::ModelProto> m = GraphToOnnx(g);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->ir_version(), kDefaultOnnxIrVersion);
  EXPECT_EQ(m->producer_name(), "graphopt");
  EXPECT_EQ(m->graph().name(), "graph");
  ASSERT_EQ(m->opset_import_size(), 2);
  EXPECT_EQ(m->opset_import(0).version(), kDefaultOnnxOpset);
  EXPECT_EQ(m->opset_import(1).domain(), "my.ops");
  EXPECT_EQ(m->graph().node(1).attribute(0).type(), onnx::AttributeProto::INT);
  EXPECT_EQ(m->graph().node(1).attribute(0).i(), 10);
}

struct BadModel {
  const char* label;
  const char* text;
  absl::StatusCode code;
  const char* message;
};

class OnnxImportErrorTest : public ::testing::TestWithParam<BadModel> {};

TEST_P(OnnxImportErrorTest, NamesTheCulprit) {
  absl::Status s = GraphFromOnnx(ParseModel(GetParam().text)).status();
  EXPECT_EQ(s.code(), GetParam().code) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Errors, OnnxImportErrorTest,
    ::testing::Values(
        BadModel{"NoGraph", "ir_version: 8", absl::StatusCode::kInvalidArgument, "no graph"},
        BadModel{"UnknownDtype",
                 R"pb(graph { initializer { name: "w" data_type: 42 dims: 1 raw_data: "a" } })pb",
                 absl::StatusCode::kInvalidArgument,
                 "initializer 'w' has data type 42, which ONNX 1.12 does not define"},
        BadModel{"RawSize",
                 R"pb(graph { initializer { name: "w" data_type: 1 dims: 2 raw_data: "abc" } })pb",
                 absl::StatusCode::kInvalidArgument,
                 "initializer 'w' has 3 bytes of raw_data; its dims and type float32 need 8"},
        BadModel{"TypedCount",
                 R"pb(graph { initializer { name: "w" data_type: 7 dims: 3 int64_data: 1 } })pb",
                 absl::StatusCode::kInvalidArgument, "initializer 'w' has 1 data entries"},
        BadModel{"NegativeDim",
                 R"pb(graph { input { name: "x" type { tensor_type { elem_type: 1 shape { dim { dim_value: -2 } } } } } })pb",
                 absl::StatusCode::kInvalidArgument, "graph input 'x' has negative dim -2 at axis 0"},
        BadModel{"MapInput",
                 R"pb(graph { input { name: "m" type { map_type { key_type: 7 value_type { tensor_type { elem_type: 1 } } } } } })pb",
                 absl::StatusCode::kUnimplemented, "graph input 'm' has a map type"},
        BadModel{"NestedSequenceInput",
                 R"pb(graph { input { name: "s" type { sequence_type { elem_type { sequence_type { elem_type { tensor_type { elem_type: 1 } } } } } } } })pb",
                 absl::StatusCode::kUnimplemented, "graph input 's' has a sequence type inside"},
        BadModel{"ExternalFile",
                 R"pb(graph { initializer { name: "w" data_type: 1 dims: 1 data_location: EXTERNAL external_data { key: "location" value: "weights.bin" } } })pb",
                 absl::StatusCode::kUnimplemented,
                 "initializer 'w' keeps its data in external file 'weights.bin'"},
        BadModel{"SparseInitializer",
                 R"pb(graph { name: "g" sparse_initializer { values { name: "sp" data_type: 1 } } })pb",
                 absl::StatusCode::kUnimplemented, "sparse initializer 'sp' of graph 'g'"},
        BadModel{"FunctionAtOtherOpset",
                 R"pb(opset_import { version: 17 } graph {} functions { name: "f" domain: "d" opset_import { version: 13 } })pb",
                 absl::StatusCode::kUnimplemented, "function 'f' imports default-domain opset 13, the model 17"},
        BadModel{"FunctionsNestedTooDeep",
                 R"pb(graph { node { op_type: "f" domain: "d" input: "x" output: "y" } } functions { name: "f" domain: "d" input: "a" output: "b" node { op_type: "f" domain: "d" input: "a" output: "b" } })pb",
                 absl::StatusCode::kInvalidArgument, "calls nest more than 64 deep (at 'f')"},
        BadModel{"UnnamedAttribute",
                 R"pb(graph { node { name: "n" op_type: "Relu" attribute { type: INT i: 1 } } })pb",
                 absl::StatusCode::kInvalidArgument, "node 'n' (Relu) has an attribute without a name"},
        BadModel{"EmptyAttribute",
                 R"pb(graph { node { op_type: "Relu" attribute { name: "a" } } })pb",
                 absl::StatusCode::kInvalidArgument, "attribute 'a' of node #0 (Relu) has no value"},
        BadModel{"BadSubgraph",
                 R"pb(graph { node { name: "if" op_type: "If" attribute { name: "then_branch" type: GRAPH g { initializer { name: "c" data_type: 99 } } } } })pb",
                 absl::StatusCode::kInvalidArgument,
                 "in attribute 'then_branch' of node 'if' (If): initializer 'c' has data type 99"}),
    [](const ::testing::TestParamInfo<BadModel>& info) { return info.param.label; });

TEST(OnnxImportTest, UnparsableBytes) {
  absl::Status s = GraphFromOnnxBytes("\xff\xff\xff garbage").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("do not parse as onnx.ModelProto"));
}

// Linear in the node's name times nothing: a node with a 1 MB name and 100,000 attributes (and
// an attribute holding 100,000 tensors) converts in well under a second; a label per attribute
// or tensor would copy 10^11 bytes.
TEST(OnnxImportTest, LongNodeNamesCostNothingPerAttribute) {
  onnx::ModelProto m;
  onnx::NodeProto* n = m.mutable_graph()->add_node();
  n->set_name(std::string(1 << 20, 'n'));
  n->set_op_type("Custom");
  for (int i = 0; i < 100000; ++i) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(absl::StrCat("a", i));
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(i);
  }
  onnx::AttributeProto* list = n->add_attribute();
  list->set_name("tensors");
  list->set_type(onnx::AttributeProto::TENSORS);
  for (int i = 0; i < 100000; ++i) {
    onnx::TensorProto* t = list->add_tensors();
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(0);  // empty
  }
  absl::StatusOr<v1::Graph> g = GraphFromOnnx(m);
  ASSERT_TRUE(g.ok()) << g.status().message().substr(0, 200);
  EXPECT_EQ(g->nodes(0).attributes_size(), 100001);
  // Errors still name the attribute and the node.
  list->mutable_tensors(99999)->set_data_type(99);
  absl::Status s = GraphFromOnnx(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("attribute 'tensors' of node 'nnn"));
  EXPECT_THAT(std::string(s.message()), HasSubstr(" tensor 99999 has data type 99"));
}

TEST(OnnxImportTest, DeepSubgraphNestingIsRefused) {
  onnx::ModelProto m;
  onnx::GraphProto* g = m.mutable_graph();
  for (int i = 0; i < 70; ++i) {
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("If");
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name("then_branch");
    a->set_type(onnx::AttributeProto::GRAPH);
    g = a->mutable_g();
  }
  absl::Status s = GraphFromOnnx(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("nested more than 64 subgraphs deep"));
}

}  // namespace
}  // namespace graphopt
