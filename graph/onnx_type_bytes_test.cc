#include "graph/onnx_type_bytes.h"

#include <string>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"

namespace graphopt {
namespace {

std::string Bytes(const onnx::TypeProto& t) { return t.SerializeAsString(); }

TEST(OnnxTypeBytesTest, Tensor) {
  onnx::TypeProto t;
  t.mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  auto* shape = t.mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_value(3);
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim();
  absl::StatusOr<TensorType> got = TensorTypeFromOnnxTypeBytes(Bytes(t));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(TensorTypeToString(*got), "int64[3,batch,?]");
}

TEST(OnnxTypeBytesTest, SequenceAndOptionals) {
  onnx::TypeProto tensor;
  tensor.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TypeProto seq;
  *seq.mutable_sequence_type()->mutable_elem_type() = tensor;
  onnx::TypeProto opt_seq;
  *opt_seq.mutable_optional_type()->mutable_elem_type() = seq;
  onnx::TypeProto opt_tensor;
  *opt_tensor.mutable_optional_type()->mutable_elem_type() = tensor;
  absl::StatusOr<TensorType> s = TensorTypeFromOnnxTypeBytes(Bytes(seq));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(TensorTypeToString(*s), "sequence(float32[?..])");
  absl::StatusOr<TensorType> os = TensorTypeFromOnnxTypeBytes(Bytes(opt_seq));
  ASSERT_TRUE(os.ok()) << os.status();
  EXPECT_EQ(os->kind, v1::VALUE_OPTIONAL_SEQUENCE);
  absl::StatusOr<TensorType> ot = TensorTypeFromOnnxTypeBytes(Bytes(opt_tensor));
  ASSERT_TRUE(ot.ok()) << ot.status();
  EXPECT_EQ(ot->kind, v1::VALUE_OPTIONAL_TENSOR);
  EXPECT_EQ(ot->dtype, v1::DT_FLOAT32);
}

TEST(OnnxTypeBytesTest, RefusesWhatIsNotCarried) {
  onnx::TypeProto map;
  map.mutable_map_type()->set_key_type(onnx::TensorProto::INT64);
  EXPECT_EQ(TensorTypeFromOnnxTypeBytes(Bytes(map)).status().code(),
            absl::StatusCode::kUnimplemented);
  onnx::TypeProto tensor;
  tensor.mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TypeProto nested;
  *nested.mutable_sequence_type()->mutable_elem_type()->mutable_sequence_type()
       ->mutable_elem_type() = tensor;
  EXPECT_EQ(TensorTypeFromOnnxTypeBytes(Bytes(nested)).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(TensorTypeFromOnnxTypeBytes("\xff\xff\xff").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TensorTypeFromOnnxTypeBytes("").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace graphopt
