#include "onnx_io/onnx_values.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"

namespace graphopt {
namespace {

using runtime::Tensor;
using ::testing::HasSubstr;

onnx::TensorProto FloatProto(float v) {
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(1);
  t.add_float_data(v);
  return t;
}

TEST(OnnxValuesTest, ReadsASequence) {
  onnx::SequenceProto s;
  s.set_name("seq");
  s.set_elem_type(onnx::SequenceProto::TENSOR);
  *s.add_tensor_values() = FloatProto(1);
  *s.add_tensor_values() = FloatProto(2);
  std::string name;
  absl::StatusOr<Tensor> t =
      ValueFromOnnxBytes(s.SerializeAsString(), v1::VALUE_SEQUENCE, "input_0.pb", &name);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(name, "seq");
  EXPECT_EQ(t->kind(), v1::VALUE_SEQUENCE);
  ASSERT_EQ(t->items().size(), 2u);
  EXPECT_EQ(t->items()[1].data<float>()[0], 2.0f);
}

TEST(OnnxValuesTest, ReadsOptionals) {
  onnx::OptionalProto o;
  o.set_elem_type(onnx::OptionalProto::TENSOR);
  *o.mutable_tensor_value() = FloatProto(3);
  absl::StatusOr<Tensor> t =
      ValueFromOnnxBytes(o.SerializeAsString(), v1::VALUE_OPTIONAL_TENSOR, "o");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->kind(), v1::VALUE_OPTIONAL_TENSOR);
  ASSERT_EQ(t->items().size(), 1u);
  EXPECT_EQ(t->items()[0].data<float>()[0], 3.0f);

  // An empty optional takes the declared kind.
  onnx::OptionalProto empty;
  absl::StatusOr<Tensor> e =
      ValueFromOnnxBytes(empty.SerializeAsString(), v1::VALUE_OPTIONAL_SEQUENCE, "e");
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->kind(), v1::VALUE_OPTIONAL_SEQUENCE);
  EXPECT_TRUE(e->items().empty());
}

TEST(OnnxValuesTest, RefusesMapsInASequence) {
  onnx::SequenceProto s;
  s.set_elem_type(onnx::SequenceProto::MAP);
  s.add_map_values();
  absl::StatusOr<Tensor> t = ValueFromOnnxBytes(s.SerializeAsString(), v1::VALUE_SEQUENCE, "m");
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(t.status().message(), HasSubstr("m holds values"));
}

// Sequence and optional value types come in from ONNX and go back out unchanged.
TEST(OnnxValuesTest, ValueTypesRoundTripThroughImportAndExport) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(16);
  onnx::GraphProto* g = model.mutable_graph();
  g->set_name("g");
  onnx::NodeProto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("x");
  n->add_output("y");
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  onnx::TypeProto::Tensor* elem = x->mutable_type()
                                      ->mutable_optional_type()
                                      ->mutable_elem_type()
                                      ->mutable_sequence_type()
                                      ->mutable_elem_type()
                                      ->mutable_tensor_type();
  elem->set_elem_type(onnx::TensorProto::INT32);
  elem->mutable_shape()->add_dim()->set_dim_value(2);
  onnx::ValueInfoProto* y = g->add_output();
  y->set_name("y");
  y->mutable_type()->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()
      ->set_elem_type(onnx::TensorProto::FLOAT);
  absl::StatusOr<v1::Graph> graph = GraphFromOnnx(model);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(graph->inputs(0).type().kind(), v1::VALUE_OPTIONAL_SEQUENCE);
  EXPECT_EQ(graph->inputs(0).type().dtype(), v1::DT_INT32);
  EXPECT_EQ(graph->outputs(0).type().kind(), v1::VALUE_SEQUENCE);
  absl::StatusOr<onnx::ModelProto> back = GraphToOnnx(*graph);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->graph().input(0).type().SerializeAsString(),
            model.graph().input(0).type().SerializeAsString());
  EXPECT_EQ(back->graph().output(0).type().SerializeAsString(),
            model.graph().output(0).type().SerializeAsString());

  // A map type is still refused, by name.
  y->mutable_type()->mutable_map_type()->set_key_type(onnx::TensorProto::INT64);
  absl::StatusOr<v1::Graph> map = GraphFromOnnx(model);
  ASSERT_FALSE(map.ok());
  EXPECT_EQ(map.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(map.status().message(), HasSubstr("'y'"));
}

}  // namespace
}  // namespace graphopt
