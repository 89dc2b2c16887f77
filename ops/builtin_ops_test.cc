// The builtin set as a whole: registration, descriptor conventions, robustness against unknown
// and random inputs.

#include "ops/builtin_ops.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops_test_util.h"
#include "ops/layout_ops.h"

namespace graphopt {
namespace {


TEST_F(BuiltinOpsTest, RegistersAllRequiredOps) {
  const char* kRequired[] = {
      "Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Exp", "Log", "Neg", "Abs", "Relu",
      "LeakyRelu", "Sigmoid", "Tanh", "Erf", "Clip", "Softmax", "MatMul", "Gemm", "Conv",
      "BatchNormalization", "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Reshape",
      "Transpose", "Concat", "Split", "Slice", "Gather", "Squeeze", "Unsqueeze", "Shape",
      "Constant", "Identity", "Dropout", "Cast", "Where", "Expand", "ReduceMean", "ReduceSum",
      "LayerNormalization", "Equal", "Less", "Greater", "Not"};
  EXPECT_EQ(sizeof(kRequired) / sizeof(kRequired[0]), 47u);
  for (const char* name : kRequired) {
    EXPECT_NE(registry_.Find("", name), nullptr) << name;
  }
  const char* kExtra[] = {"ConstantOfShape", "Range", "Tile", "Pad", "ReduceMax", "ReduceMin",
                          "Min", "Max", "Softplus", "HardSigmoid", "Sign", "Floor", "Ceil",
                          "Reciprocal", "GlobalMaxPool", "ArgMax", "ArgMin", "TopK",
                          "RNN", "GRU", "LSTM"};
  for (const char* name : kExtra) EXPECT_NE(registry_.Find("", name), nullptr) << name;
  // Default-domain ops: the required ones, the extra ones above and the rest of the family files
  // of ops/ (see their tests), 12 of them the sequence and optional ops of sequence.cc.
  size_t onnx_ops = 0;
  for (const OpDef* op : registry_.List()) onnx_ops += op->descriptor.domain().empty();
  EXPECT_EQ(onnx_ops, 47u + 21u + 97u + 12u);
}

TEST_F(BuiltinOpsTest, EveryDescriptorValidatesAndReregisters) {
  OpRegistry fresh;
  for (const OpDef* op : registry_.List()) {
    EXPECT_TRUE(ValidateOpDef(*op).ok()) << op->descriptor.name();
    EXPECT_EQ(op->descriptor.shape_rule().builtin(), op->descriptor.name());
    EXPECT_FALSE(op->descriptor.doc().empty()) << op->descriptor.name();
    EXPECT_TRUE(op->shape_fn != nullptr);
    OpDef copy;
    copy.descriptor = op->descriptor;
    copy.shape_fn = op->shape_fn;
    copy.type_fn = op->type_fn;
    EXPECT_TRUE(fresh.Register(std::move(copy)).ok()) << op->descriptor.name();
  }
  // Registering twice is ALREADY_EXISTS, not a silent overwrite.
  EXPECT_EQ(RegisterBuiltinOps(&fresh).code(), absl::StatusCode::kAlreadyExists);
  // No builtin writes its inputs: passes skip the per-node search for written values.
  EXPECT_FALSE(registry_.HasMutatingOps());
  EXPECT_FALSE(registry_.HasOpsWithBodies());
}

TEST_F(BuiltinOpsTest, DescriptorAttributesFollowNnvmConventions) {
  auto desc = [&](const char* name) { return registry_.Find("", name)->descriptor; };
  EXPECT_EQ(desc("Relu").fusion_pattern(), v1::FUSION_ELEMWISE);
  ASSERT_EQ(desc("Relu").inplace_size(), 1);
  EXPECT_EQ(desc("Relu").inplace(0).input(), 0);
  EXPECT_EQ(desc("Add").fusion_pattern(), v1::FUSION_BROADCAST);
  EXPECT_EQ(desc("Conv").fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  EXPECT_EQ(desc("MatMul").fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  EXPECT_EQ(desc("ReduceMean").fusion_pattern(), v1::FUSION_REDUCTION);
  EXPECT_EQ(desc("Reshape").fusion_pattern(), v1::FUSION_INJECTIVE);
  EXPECT_EQ(desc("Shape").fusion_pattern(), v1::FUSION_OPAQUE);
  EXPECT_EQ(desc("Dropout").extensions().at("nondeterministic").i(), 1);
  EXPECT_EQ(desc("Cast").outputs(0).dtype_from_attribute(), "to");
  EXPECT_EQ(desc("Concat").inputs(0).arity(), v1::ARITY_VARIADIC);
  EXPECT_EQ(desc("Split").outputs(0).arity(), v1::ARITY_VARIADIC);
  // Concat's 'axis' is required from opset 4 only; its shape rule enforces that.
  EXPECT_EQ(desc("Concat").attributes(0).name(), "axis");
}

TEST_F(BuiltinOpsTest, UnknownShapesPropagateAsUnknown) {
  In("c", "bool[?..]");
  In("x", "float32[3]");
  In("u", "?");
  Node("Where", {"c", "x", "x"}, {"w"});
  Node("Cast", {"u"}, {"k"}, {{"to", AInt(v1::DT_INT32)}});
  Node("MatMul", {"x", "u"}, {"m"});
  Node("Gather", {"x", "u"}, {"g"});
  RUN_OK();
  EXPECT_EQ(T("w"), "float32[?..]");
  EXPECT_EQ(T("k"), "int32[?..]");
  EXPECT_EQ(T("m"), "float32[?..]");
  EXPECT_EQ(T("g"), "float32[?..]");
}

TEST_F(BuiltinOpsTest, EveryOpToleratesUnknownInputs) {
  // Each op with all declared inputs present but of unknown type: no crash, and either OK or a
  // clean INVALID_ARGUMENT (ops with required attributes).
  for (const OpDef* op : registry_.List()) {
    Graph g;
    std::vector<ValueId> in, out;
    for (int i = 0; i < op->descriptor.inputs_size(); ++i) {
      in.push_back(*g.AddValue("i" + std::to_string(i)));
      g.AddGraphInput(in.back());
    }
    for (int i = 0; i < op->descriptor.outputs_size(); ++i) {
      out.push_back(*g.AddValue("o" + std::to_string(i)));
    }
    NodeId id = *g.AddNode("n", op->descriptor.name(), "", in, out);
    DimsValueTable dims(g.num_value_slots());
    absl::Status s = InferNodeTypes(g, id, *op);
    if (s.ok()) s = InferNodeShapes(g, id, *op, &dims);
    EXPECT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
        << op->descriptor.name() << ": " << s;
  }
}

TEST_F(BuiltinOpsTest, OverflowingDimsGiveUnknownNotCrash) {
  In("x", "float32[4611686018427387904,4]");
  Node("Flatten", {"x"}, {"y"}, {{"axis", AInt(2)}});
  Ints("r", {4, 4});
  Node("Tile", {"x", "r"}, {"t"});
  RUN_OK();
  EXPECT_EQ(T("y"), "float32[?,1]");
  EXPECT_EQ(T("t"), "float32[?,16]");
}

TEST_F(BuiltinOpsTest, OpsetOfTheDefaultDomainInEitherSpelling) {
  v1::OpsetImport other;
  other.set_domain("com.example");
  other.set_version(20);
  v1::OpsetImport onnx;
  onnx.set_domain("ai.onnx");
  onnx.set_version(6);
  graph_.opset_imports = {other, onnx};
  In("s", "float32[n,n]");
  In("k", "float32[2,2]");
  Node("Mul", {"s", "k"}, {"sk"});
  RUN_OK();
  EXPECT_EQ(T("sk"), "float32[n,n]");  // opset 6: A's shape
}

TEST_F(BuiltinOpsTest, DeclaresOlderOpsetsAttributes) {
  const std::pair<const char*, const char*> kAttrs[] = {
      {"Relu", "consumed_inputs"}, {"Add", "broadcast"},      {"Mul", "axis"},
      {"Pow", "broadcast"},        {"Less", "axis"},          {"Max", "consumed_inputs"},
      {"Clip", "consumed_inputs"}, {"Dropout", "is_test"},    {"Reshape", "consumed_inputs"},
      {"Pad", "paddings"},         {"BatchNormalization", "is_test"}};
  for (const auto& [op, attr] : kAttrs) {
    EXPECT_NE(registry_.Find("", op)->attribute_spec(attr), nullptr) << op << " " << attr;
  }
}

// Random but deterministic nodes for every op: dtypes drawn from the type constraints, shapes
// mixing known, symbolic, unknown, zero, negative and huge dims, random constant int operands and
// random attribute values. Inference must return OK or INVALID_ARGUMENT, never crash.
class RandomNodeFuzzer {
 public:
  explicit RandomNodeFuzzer(uint32_t seed) : rng_(seed) {}

  absl::Status RunOnce(const OpDef& op) {
    Graph g;
    const v1::OpDescriptor& d = op.descriptor;
    // One dtype per constraint.
    absl::flat_hash_map<std::string, v1::DataType> bound;
    for (const v1::TypeConstraint& c : d.type_constraints()) {
      bound[c.name()] = static_cast<v1::DataType>(c.allowed(Pick(c.allowed_size())));
    }
    std::vector<ValueId> in;
    int num_inputs = d.inputs_size();
    if (num_inputs > 0 && d.inputs(num_inputs - 1).arity() == v1::ARITY_VARIADIC) {
      num_inputs += Pick(3) - 1;
    }
    for (int i = 0; i < num_inputs; ++i) {
      const v1::ArgSpec* spec = op.input_spec(i);
      if (spec->arity() == v1::ARITY_OPTIONAL && Pick(3) == 0) {
        in.push_back(ValueId());
        continue;
      }
      ValueId v = *g.AddValue("i" + std::to_string(i));
      const v1::DataType dt = spec->type_constraint().empty()
                                  ? v1::DT_FLOAT32
                                  : bound[spec->type_constraint()];
      if ((dt == v1::DT_INT64 || dt == v1::DT_INT32) && Pick(2) == 0) {
        std::vector<int64_t> vals;
        const int n = Pick(5);
        for (int k = 0; k < n; ++k) vals.push_back(RandomInt());
        v1::Tensor t = Int64Tensor(vals, n == 1 && Pick(2) == 0);
        if (dt == v1::DT_INT32) {
          t.set_dtype(v1::DT_INT32);
          std::string raw;
          for (int64_t x : vals) {
            int32_t y = static_cast<int32_t>(x);
            raw.append(reinterpret_cast<const char*>(&y), 4);
          }
          t.set_raw_data(raw);
        }
        g.mutable_value(v).type.dtype = dt;
        if (Pick(2) == 0) g.mutable_value(v).type.shape = ShapeFromDimsList(t);
        g.SetInitializer(v, std::move(t));
      } else {
        g.AddGraphInput(v);
        g.mutable_value(v).type = RandomType(dt);
      }
      in.push_back(v);
    }
    std::vector<ValueId> out;
    int num_outputs = d.outputs_size();
    if (d.outputs(num_outputs - 1).arity() == v1::ARITY_VARIADIC) num_outputs += Pick(3) - 1;
    for (int i = 0; i < num_outputs; ++i) {
      const v1::ArgSpec* spec = op.output_spec(i);
      if (spec->arity() == v1::ARITY_OPTIONAL && Pick(2) == 0) {
        out.push_back(ValueId());
      } else {
        out.push_back(*g.AddValue("o" + std::to_string(i)));
      }
    }
    AttributeMap attrs;
    for (const v1::AttributeSpec& a : d.attributes()) {
      if (a.required() || Pick(2) == 0) attrs[a.name()] = RandomAttr(a.type());
    }
    NodeId id = *g.AddNode("fuzz", d.name(), "", in, out, std::move(attrs));
    // Sometimes an old opset, for the rules whose semantics depend on it.
    if (Pick(3) == 0) {
      v1::OpsetImport opset;
      opset.set_version(1 + Pick(17));
      g.opset_imports.push_back(opset);
    }
    DimsValueTable dims(g.num_value_slots());
    // Sometimes seed dims values for int inputs, as an upstream Shape would.
    for (ValueId v : in) {
      if (v.valid() && Pick(3) == 0) dims[v.value()] = RandomDims();
    }
    absl::Status s = InferNodeTypes(g, id, op);
    if (s.ok()) s = InferNodeShapes(g, id, op, &dims);
    return s;
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  int64_t RandomInt() {
    static constexpr int64_t kValues[] = {-3, -2, -1, 0, 1, 1, 2, 3, 4, 7,
                                          std::numeric_limits<int64_t>::max(),
                                          std::numeric_limits<int64_t>::min()};
    return kValues[Pick(sizeof(kValues) / sizeof(kValues[0]))];
  }
  Dim RandomDim() {
    switch (Pick(9)) {
      case 0:
        return Dim::Unknown();
      case 1:
        return Dim::Symbol("batch");
      case 2:
        return Dim::Symbol("seq");
      case 3:
        return Dim::Known(0);
      case 4:
        return Dim::Known(Pick(10) == 0 ? -1 : int64_t{1} << 62);
      default:
        return Dim::Known(1 + Pick(4));
    }
  }
  Dims RandomDims() {
    Dims d;
    const int n = Pick(5);
    for (int i = 0; i < n; ++i) d.push_back(Pick(2) ? Dim::Known(RandomInt()) : RandomDim());
    return d;
  }
  TensorType RandomType(v1::DataType dt) {
    TensorType t;
    if (Pick(8) == 0) return t;  // nothing known
    t.dtype = dt;
    if (Pick(6) == 0) return t;  // rank unknown
    t.shape.emplace();
    const int rank = Pick(6);
    for (int i = 0; i < rank; ++i) t.shape->push_back(RandomDim());
    return t;
  }
  v1::Attribute RandomAttr(v1::AttributeType type) {
    v1::Attribute a;
    switch (type) {
      case v1::ATTR_INT:
        a.set_i(Pick(4) == 0 ? RandomInt() : Pick(3));
        break;
      case v1::ATTR_FLOAT:
        a.set_f(0.5f);
        break;
      case v1::ATTR_STRING: {
        static constexpr const char* kStrings[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER",
                                                   "VALID",  "constant",   "bogus"};
        a.set_s(kStrings[Pick(6)]);
        break;
      }
      case v1::ATTR_INTS: {
        const int n = Pick(7);
        for (int i = 0; i < n; ++i) {
          a.mutable_ints()->add_values(Pick(3) == 0 ? RandomInt() : Pick(4));
        }
        break;
      }
      case v1::ATTR_FLOATS:
        a.mutable_floats()->add_values(1.0f);
        break;
      case v1::ATTR_STRINGS:
        a.mutable_strings()->add_values("s");
        break;
      case v1::ATTR_TENSOR: {
        std::vector<int64_t> vals;
        const int n = Pick(3);
        for (int i = 0; i < n; ++i) vals.push_back(RandomInt());
        *a.mutable_t() = Int64Tensor(vals, n == 1 && Pick(2) == 0);
        break;
      }
      default:
        a.set_i(0);
        break;
    }
    return a;
  }

  std::mt19937 rng_;
};

TEST(BuiltinOpsFuzzTest, RandomNodesNeverCrash) {
  OpRegistry registry;
  ASSERT_TRUE(RegisterBuiltinOps(&registry).ok());
  RandomNodeFuzzer fuzzer(20240611);
  int ok = 0;
  for (const OpDef* op : registry.List()) {
    for (int i = 0; i < 300; ++i) {
      absl::Status s = fuzzer.RunOnce(*op);
      ASSERT_TRUE(s.ok() || s.code() == absl::StatusCode::kInvalidArgument)
          << op->descriptor.name() << ": " << s;
      ok += s.ok();
    }
  }
  // A good share of the random nodes are valid, so the shape functions themselves ran.
  EXPECT_GT(ok, 65 * 300 / 5);
}

TEST_F(BuiltinOpsTest, MathOpsAreRegisteredWithTheirPatterns) {
  for (const char* name :
       {"Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh",
        "Softsign", "Round", "HardSwish", "Elu", "Selu", "Celu", "ThresholdedRelu", "Shrink"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_ELEMWISE) << name;
    ASSERT_EQ(op->descriptor.inplace_size(), 1) << name;
  }
  for (const char* name : {"And", "Or", "Xor", "GreaterOrEqual", "LessOrEqual", "BitShift",
                           "Mod", "PRelu", "Sum", "Mean"}) {
    const OpDef* op = registry_.Find("", name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_BROADCAST) << name;
  }
  for (const char* name : {"IsNaN", "IsInf", "CastLike", "CumSum", "Det", "Einsum"}) {
    EXPECT_NE(registry_.Find("", name), nullptr) << name;
  }
  EXPECT_EQ(registry_.Find("", "IsNaN")->descriptor.inplace_size(), 0);
  EXPECT_EQ(registry_.Find("", "Einsum")->descriptor.inputs(0).arity(), v1::ARITY_VARIADIC);
}

TEST_F(BuiltinOpsTest, NnExtraOpsAreRegisteredWithTheirPatterns) {
  auto pattern = [&](const char* name) {
    const OpDef* op = registry_.Find("", name);
    EXPECT_NE(op, nullptr) << name;
    return op == nullptr ? v1::FUSION_OPAQUE : op->descriptor.fusion_pattern();
  };
  for (const char* name : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                           "ReduceProd", "ReduceSumSquare", "GlobalLpPool"}) {
    EXPECT_EQ(pattern(name), v1::FUSION_REDUCTION) << name;
  }
  EXPECT_EQ(pattern("ConvTranspose"), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  EXPECT_EQ(pattern("LpPool"), v1::FUSION_OUT_ELEMWISE_FUSABLE);
  for (const char* name : {"MaxUnpool", "InstanceNormalization", "LRN",
                           "MeanVarianceNormalization", "LpNormalization", "LogSoftmax",
                           "Hardmax", "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss",
                           "GridSample", "RoiAlign", "NonMaxSuppression"}) {
    EXPECT_EQ(pattern(name), v1::FUSION_OPAQUE) << name;
  }
  const v1::OpDescriptor& mvn = registry_.Find("", "MeanVarianceNormalization")->descriptor;
  EXPECT_EQ(mvn.attributes(0).default_value().ints().values_size(), 3);
}

TEST_F(BuiltinOpsTest, QuantizationOpsAreRegistered) {
  for (const char* name : {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
                           "ConvInteger", "QLinearConv", "MatMulInteger", "QLinearMatMul"}) {
    EXPECT_NE(registry_.Find("", name), nullptr) << name;
  }
  // The scale and zero point broadcast along 'axis'.
  EXPECT_EQ(registry_.Find("", "QuantizeLinear")->descriptor.fusion_pattern(),
            v1::FUSION_BROADCAST);
}

TEST_F(BuiltinOpsTest, LayoutOpsAreRegisteredInTheGraphoptDomain) {
  for (const char* name : {kNhwcConvOp, kNhwcMaxPoolOp, kNhwcAveragePoolOp}) {
    const OpDef* op = registry_.Find(kLayoutDomain, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_OUT_ELEMWISE_FUSABLE) << name;
    EXPECT_EQ(registry_.Find("", name), nullptr) << name;
  }
  for (const char* name : {kNhwcGlobalAveragePoolOp, kNhwcGlobalMaxPoolOp}) {
    const OpDef* op = registry_.Find(kLayoutDomain, name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->descriptor.fusion_pattern(), v1::FUSION_REDUCTION) << name;
  }
}

}  // namespace
}  // namespace graphopt
