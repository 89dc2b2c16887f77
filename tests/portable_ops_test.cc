// Each graphopt-domain op written as portable ONNX (a model-local function of standard ops) and
// read back (the function inlined) computes on graphopt's CPU kernels what the op computes
// natively, within 1e-4. The ONNX Runtime side of the same bodies is tests/portable_onnx_test.py.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"
#include "passes/runtime_test_util.h"
#include "proto/graph.pb.h"

namespace graphopt {
namespace {

using testing::FloatTensor;
using testing::Int64TensorProto;
using testing::SeededFloats;

v1::Attribute Ints(const std::string& name, const std::vector<int64_t>& v) {
  v1::Attribute a;
  a.set_name(name);
  for (int64_t x : v) a.mutable_ints()->add_values(x);
  return a;
}
v1::Attribute Int(const std::string& name, int64_t v) {
  v1::Attribute a;
  a.set_name(name);
  a.set_i(v);
  return a;
}
v1::Attribute Str(const std::string& name, const std::string& v) {
  v1::Attribute a;
  a.set_name(name);
  a.set_s(v);
  return a;
}

void Declare(const std::string& name, const std::vector<int64_t>& dims, v1::ValueInfo* out) {
  out->set_name(name);
  out->mutable_type()->set_dtype(v1::DT_FLOAT32);
  for (int64_t d : dims) out->mutable_type()->mutable_shape()->add_dims()->set_size(d);
}

v1::Node* AddNode(v1::Graph* g, const std::string& op, const std::string& domain,
                  const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                  const std::vector<v1::Attribute>& attrs) {
  v1::Node* n = g->add_nodes();
  n->set_name(op + "_node");
  n->set_op_type(op);
  n->set_domain(domain);
  for (const std::string& i : inputs) n->add_inputs(i);
  for (const std::string& o : outputs) n->add_outputs(o);
  for (const v1::Attribute& a : attrs) *n->add_attributes() = a;
  return n;
}

// A graph of one op: float inputs (declared with shapes), int64 initializers, one output.
struct Case {
  std::string label;
  v1::Graph graph;
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs;
};

Case OneOp(const std::string& label, const std::string& op,
           std::vector<std::pair<std::string, std::vector<int64_t>>> inputs,
           std::vector<v1::Tensor> initializers, std::vector<v1::Attribute> attrs) {
  Case c;
  c.label = label;
  c.inputs = inputs;
  std::vector<std::string> names;
  for (const auto& [name, dims] : inputs) {
    Declare(name, dims, c.graph.add_inputs());
    names.push_back(name);
  }
  for (v1::Tensor& t : initializers) {
    names.push_back(t.name());
    *c.graph.add_initializers() = std::move(t);
  }
  AddNode(&c.graph, op, "graphopt", names, {"y"}, attrs);
  c.graph.add_outputs()->set_name("y");
  c.graph.add_opset_imports()->set_version(17);
  return c;
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back(OneOp("NhwcConvGroupedStrided", "NhwcConv",
                        {{"x", {2, 7, 6, 4}}, {"w", {6, 2, 3, 3}}, {"b", {6}}}, {},
                        {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 1}),
                         Ints("pads", {1, 0, 1, 2}), Int("group", 2), Int("winograd", 0)}));
  cases.push_back(OneOp("NhwcConvSameUpper", "NhwcConv", {{"x", {1, 5, 5, 3}}, {"w", {4, 3, 2, 2}}},
                        {}, {Str("auto_pad", "SAME_UPPER"), Ints("dilations", {2, 1})}));
  cases.push_back(OneOp("NhwcMaxPool", "NhwcMaxPool", {{"x", {2, 7, 7, 3}}},
                        {}, {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}),
                             Ints("pads", {1, 1, 1, 1}), Int("ceil_mode", 1)}));
  cases.push_back(OneOp("NhwcAveragePool", "NhwcAveragePool", {{"x", {1, 6, 5, 2}}}, {},
                        {Ints("kernel_shape", {3, 2}), Ints("pads", {1, 1, 1, 0}),
                         Int("count_include_pad", 0)}));
  cases.push_back(OneOp("NhwcGlobalAveragePool", "NhwcGlobalAveragePool", {{"x", {2, 4, 3, 5}}},
                        {}, {}));
  cases.push_back(OneOp("NhwcGlobalMaxPool", "NhwcGlobalMaxPool", {{"x", {2, 4, 3, 5}}}, {}, {}));
  cases.push_back(OneOp("SumToShape", "SumToShape", {{"g", {2, 3, 4, 5}}},
                        {Int64TensorProto("s", {3}, {3, 1, 5})}, {}));
  cases.push_back(OneOp("ConvGradDataStrided", "ConvGradData", {{"dy", {2, 4, 4, 3}}, {"w", {4, 3, 3, 3}}},
                        {Int64TensorProto("xs", {4}, {2, 3, 8, 7})},
                        {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}),
                         Ints("pads", {1, 1, 1, 0})}));
  cases.push_back(OneOp("ConvGradDataGroupedSame", "ConvGradData",
                        {{"dy", {1, 4, 3, 3}}, {"w", {4, 1, 3, 3}}},
                        {Int64TensorProto("xs", {4}, {1, 4, 6, 5})},
                        {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}), Int("group", 4),
                         Str("auto_pad", "SAME_LOWER")}));
  cases.push_back(OneOp("ConvGradWeightGroupedDilated", "ConvGradWeight",
                        {{"x", {2, 4, 9, 8}}, {"dy", {2, 6, 3, 3}}},
                        {Int64TensorProto("ws", {4}, {6, 2, 3, 2})},
                        {Ints("kernel_shape", {3, 2}), Ints("strides", {2, 3}),
                         Ints("dilations", {2, 1}), Ints("pads", {1, 0, 0, 1}), Int("group", 2)}));
  cases.push_back(OneOp("MaxPoolGradOverlapping", "MaxPoolGrad",
                        {{"dy", {2, 3, 4, 4}}, {"x", {2, 3, 7, 7}}}, {},
                        {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}),
                         Ints("pads", {1, 1, 1, 1})}));
  cases.push_back(OneOp("MaxPoolGradCeil", "MaxPoolGrad", {{"dy", {1, 2, 3, 3}}, {"x", {1, 2, 6, 6}}},
                        {}, {Ints("kernel_shape", {2, 2}), Ints("strides", {2, 2}),
                             Int("ceil_mode", 1), Ints("pads", {0, 0, 1, 1})}));
  cases.push_back(OneOp("AveragePoolGradExcludePad", "AveragePoolGrad", {{"dy", {2, 3, 4, 4}}},
                        {Int64TensorProto("xs", {4}, {2, 3, 7, 7})},
                        {Ints("kernel_shape", {3, 3}), Ints("strides", {2, 2}),
                         Ints("pads", {1, 1, 1, 1})}));
  cases.push_back(OneOp("AveragePoolGradIncludePadCeil", "AveragePoolGrad",
                        {{"dy", {1, 2, 4, 3}}}, {Int64TensorProto("xs", {4}, {1, 2, 7, 6})},
                        {Ints("kernel_shape", {3, 2}), Ints("strides", {2, 2}),
                         Ints("pads", {1, 0, 1, 0}), Int("count_include_pad", 1),
                         Int("ceil_mode", 1)}));
  {
    // A fused group: a channels-last convolution with a bias and Relu, its body typed.
    Case c;
    c.label = "FusedGroupWithNhwcConv";
    c.inputs = {{"x", {1, 5, 5, 3}}, {"w", {4, 3, 3, 3}}, {"b", {4}}};
    v1::Graph body;
    body.set_name("group");
    for (const auto& [name, dims] : c.inputs) {
      Declare(name, dims, body.add_inputs());
      Declare(name, dims, c.graph.add_inputs());
    }
    AddNode(&body, "NhwcConv", "graphopt", {"x", "w", "b"}, {"conv"},
            {Ints("kernel_shape", {3, 3}), Ints("pads", {1, 1, 1, 1})});
    AddNode(&body, "Relu", "", {"conv"}, {"y"}, {});
    Declare("conv", {1, 5, 5, 4}, body.add_value_info());
    Declare("y", {1, 5, 5, 4}, body.add_outputs());
    v1::Attribute g;
    g.set_name("body");
    *g.mutable_g() = body;
    AddNode(&c.graph, "FusedGroup", "graphopt", {"x", "w", "b"}, {"y"},
            {g, Str("pattern", "conv_epilogue")});
    Declare("y", {1, 5, 5, 4}, c.graph.add_outputs());
    c.graph.add_opset_imports()->set_version(17);
    cases.push_back(std::move(c));
  }
  return cases;
}

class PortableOpsTest : public ::testing::TestWithParam<int> {};

TEST_P(PortableOpsTest, PortableFormComputesWhatTheNativeOpComputes) {
  Case c = Cases()[GetParam()];
  SCOPED_TRACE(c.label);
  std::vector<std::pair<std::string, runtime::Tensor>> inputs;
  uint32_t seed = 1;
  for (const auto& [name, dims] : c.inputs) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    inputs.emplace_back(name, FloatTensor(dims, SeededFloats(count, seed++)));
  }
  testing::TestRuntime rt;
  absl::StatusOr<std::vector<runtime::Tensor>> native = rt.Run(c.graph, inputs);
  ASSERT_TRUE(native.ok()) << native.status();

  absl::StatusOr<onnx::ModelProto> portable = GraphToOnnx(c.graph);
  ASSERT_TRUE(portable.ok()) << portable.status();
  ASSERT_GE(portable->functions_size(), 1);
  EXPECT_GE(portable->ir_version(), 8);
  for (const onnx::FunctionProto& f : portable->functions()) {
    EXPECT_EQ(f.domain(), "graphopt");
    for (const onnx::NodeProto& n : f.node()) {
      // Standard ops, or calls of other functions of the model.
      if (n.domain().empty()) continue;
      bool defined = false;
      for (const onnx::FunctionProto& g : portable->functions()) {
        defined |= g.domain() == n.domain() && g.name() == n.op_type();
      }
      EXPECT_TRUE(defined) << f.name() << " calls " << n.domain() << "::" << n.op_type();
    }
  }
  const onnx::NodeProto& call = portable->graph().node(0);
  EXPECT_EQ(call.domain(), "graphopt");
  EXPECT_EQ(call.attribute_size(), 0);

  absl::StatusOr<v1::Graph> back = GraphFromOnnx(*portable);
  ASSERT_TRUE(back.ok()) << back.status();
  for (const v1::Node& n : back->nodes()) EXPECT_EQ(n.domain(), "") << n.op_type();
  absl::StatusOr<std::vector<runtime::Tensor>> got = rt.Run(*back, inputs);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(testing::CompareOutputs(*got, *native, /*bit_exact=*/false, 1e-4), "");

  absl::StatusOr<onnx::ModelProto> native_onnx = GraphToOnnx(c.graph, {.native_ops = true});
  ASSERT_TRUE(native_onnx.ok()) << native_onnx.status();
  EXPECT_EQ(native_onnx->functions_size(), 0);
  EXPECT_EQ(native_onnx->graph().node(0).op_type(), c.graph.nodes(0).op_type());
}

INSTANTIATE_TEST_SUITE_P(AllOps, PortableOpsTest, ::testing::Range(0, static_cast<int>(Cases().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return Cases()[info.param].label;
                         });

}  // namespace
}  // namespace graphopt
