#include "client/model_summary.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

TEST(ModelSummaryTest, Sections) {
  v1::Graph g;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(R"pb(
    name: "net"
    model { ir_version: 8 producer_name: "pytorch" producer_version: "1.13.1" }
    opset_imports { version: 13 }
    inputs { name: "x" type { dtype: DT_FLOAT32 shape { dims { symbol: "batch" } dims { size: 4 } dims {} } } }
    inputs { name: "w" type { dtype: DT_FLOAT32 } }
    outputs { name: "y" type { dtype: DT_FLOAT32 } }
    initializers { name: "w" dtype: DT_FLOAT32 dims: 1000 dims: 1000 }
    initializers { name: "s" dtype: DT_INT64 dims: 2 }
    nodes { op_type: "MatMul" }
    nodes { op_type: "Relu" }
    nodes { op_type: "Relu" }
    nodes { op_type: "Constant" attributes { name: "value" t { dtype: DT_FLOAT32 dims: 10 } } }
    nodes { op_type: "Mine" domain: "my.ops" }
  )pb", &g));
  const std::string s = FormatModelSummary(g, "net.onnx (ONNX)");
  EXPECT_THAT(s, HasSubstr("model: net.onnx (ONNX)\n"));
  EXPECT_THAT(s, HasSubstr("producer: pytorch 1.13.1, ONNX IR version 8"));
  EXPECT_THAT(s, HasSubstr("opsets: ai.onnx 13"));
  EXPECT_THAT(s, HasSubstr("graph: net, 5 nodes"));
  EXPECT_THAT(s, HasSubstr("inputs (1):\n  x  float32[batch,4,?]\n"));
  EXPECT_THAT(s, HasSubstr("(and 1 initializers also listed as inputs)"));
  EXPECT_THAT(s, HasSubstr("outputs (1):\n  y  float32[?..]\n"));
  EXPECT_THAT(s, HasSubstr("parameters: 1,000,002 (3.8 MiB) in 2 initializers"));
  EXPECT_THAT(s, HasSubstr("float32         1,000,000  3.8 MiB"));
  EXPECT_THAT(s, HasSubstr("constants: 1 Constant nodes holding 40 B"));
  EXPECT_THAT(s, HasSubstr("ops (4 types):\n  Relu                2\n"));
  EXPECT_THAT(s, HasSubstr("  my.ops::Mine        1\n"));
}

}  // namespace
}  // namespace graphopt
