// onnx_ops.pbtxt: in sync with the builtins and canonical; its rules compile; and they agree
// with the C++ shape functions on hand-written nodes that reach the paths the corpus rarely
// does: every error, the opset-dependent forms, symbolic and unknown dims, shape-tensor contents.
// (rule_agreement_test runs the same comparison over the ONNX test corpus and real models.)

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ops/builtin_ops.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "rules/dogfood/onnx_ops.h"
#include "rules/dogfood/rule_agreement.h"
#include "tools/shape_agreement/agreement.h"

namespace graphopt {
namespace dogfood {
namespace {

constexpr char kOpsFile[] = "rules/dogfood/onnx_ops.pbtxt";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// --- A small ONNX model builder ----------------------------------------------------------------

using Attrs = std::vector<onnx::AttributeProto>;

onnx::AttributeProto I(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto Is(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto S(const std::string& name, const std::string& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::STRING);
  a.set_s(v);
  return a;
}

class Model {
 public:
  explicit Model(int64_t opset) {
    proto_.set_ir_version(8);
    proto_.add_opset_import()->set_version(opset);
  }

  // A graph input: "f[N,3,?]" (float; N symbolic, ? unknown), "i[2]" (int64), "f" (rank
  // unknown).
  Model& In(const std::string& name, const std::string& type) {
    onnx::ValueInfoProto* v = proto_.mutable_graph()->add_input();
    v->set_name(name);
    onnx::TypeProto::Tensor* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type[0] == 'i' ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    if (type.size() < 2) return *this;
    onnx::TensorShapeProto* shape = t->mutable_shape();
    const std::string dims = type.substr(2, type.size() - 3);
    if (dims.empty()) return *this;
    for (absl::string_view d : absl::StrSplit(dims, ',')) {
      onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
      int64_t size;
      if (absl::SimpleAtoi(d, &size)) {
        dim->set_dim_value(size);
      } else if (d != "?") {
        dim->set_dim_param(std::string(d));
      }
    }
    return *this;
  }

  // An int64 initializer: 1-D, or a scalar.
  Model& Ints(const std::string& name, const std::vector<int64_t>& v, bool scalar = false) {
    onnx::TensorProto* t = proto_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return *this;
  }

  // A float initializer of the given dims (zeros).
  Model& Floats(const std::string& name, const std::vector<int64_t>& dims) {
    onnx::TensorProto* t = proto_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (int64_t i = 0; i < n; ++i) t->add_float_data(0.0f);
    return *this;
  }

  Model& Node(const std::string& op, const std::vector<std::string>& inputs,
              const std::vector<std::string>& outputs,
              const Attrs& attrs = {}) {
    onnx::NodeProto* n = proto_.mutable_graph()->add_node();
    n->set_op_type(op);
    for (const std::string& s : inputs) n->add_input(s);
    for (const std::string& s : outputs) n->add_output(s);
    for (const onnx::AttributeProto& a : attrs) *n->add_attribute() = a;
    return *this;
  }

  const onnx::ModelProto& proto() const { return proto_; }

 private:
  onnx::ModelProto proto_;
};

class OnnxOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinOps(&builtins_).ok());
    absl::StatusOr<v1::OpDescriptorList> list = ReadOpDescriptorList(kOpsFile);
    ASSERT_TRUE(list.ok()) << list.status();
    list_ = *std::move(list);
    ASSERT_TRUE(RegisterWithRuleOps(builtins_, list_, &rules_).ok());
    for (const v1::OpDescriptor& d : list_.ops()) ops_.insert(d.name());
  }

  // Compares the two registries on `m` as is and with symbolic input dims: no difference, at
  // least one node compared, and `rejected` nodes that both reject (as is).
  void ExpectAgree(const Model& m, int rejected = 0) {
    for (bool symbolic : {false, true}) {
      const onnx::ModelProto model =
          symbolic ? shape_agreement::SymbolizeInputs(m.proto()) : m.proto();
      ModelComparison r = CompareRuleOps(symbolic ? "sym" : "static", model, builtins_, rules_,
                                         ops_);
      ASSERT_TRUE(r.import_error.empty()) << r.import_error;
      OpTally sum;
      for (const auto& [op, t] : r.ops) sum.Add(t);
      EXPECT_GT(sum.nodes, 0);
      for (const Difference& d : r.differences) {
        ADD_FAILURE() << d.model << ": node " << d.node << " (" << d.op << ") " << d.value
                      << ": " << DiffKindName(d.kind) << "\n  C++:  " << d.cpp
                      << "\n  rule: " << d.rule;
      }
      if (!symbolic) {
        EXPECT_EQ(sum.both_rejected, rejected);
      }
    }
  }

  OpRegistry builtins_;
  v1::OpDescriptorList list_;
  OpRegistry rules_;
  absl::flat_hash_set<std::string> ops_;
};

// --- The file ----------------------------------------------------------------------------------

TEST_F(OnnxOpsTest, ListsTheDogfoodOpsInOrder) {
  std::vector<std::string> names;
  for (const v1::OpDescriptor& d : list_.ops()) names.push_back(d.name());
  EXPECT_EQ(names, DogfoodOps());
}

TEST_F(OnnxOpsTest, IsCanonicalAndInSyncWithTheBuiltins) {
  absl::StatusOr<v1::OpDescriptorList> synced = SyncWithBuiltins(list_, builtins_);
  ASSERT_TRUE(synced.ok()) << synced.status();
  EXPECT_EQ(ReadFile(kOpsFile), FormatOpDescriptorList(*synced))
      << "rules/dogfood/onnx_ops.pbtxt is stale or not canonical; run\n"
         "  bazel run //rules/dogfood:sync_onnx_ops -- "
         "--file=$PWD/rules/dogfood/onnx_ops.pbtxt";
  // The canonical text reads back as the same list.
  absl::StatusOr<v1::OpDescriptorList> reparsed =
      ParseOpDescriptorList(FormatOpDescriptorList(*synced));
  ASSERT_TRUE(reparsed.ok()) << reparsed.status();
  EXPECT_EQ(reparsed->SerializeAsString(), synced->SerializeAsString());
}

TEST_F(OnnxOpsTest, RuleOpsReplaceTheBuiltinsAndNothingElse) {
  EXPECT_EQ(rules_.size(), builtins_.size());
  for (const OpDef* b : builtins_.List()) {
    const OpDef* r = rules_.Find(b->descriptor.domain(), b->descriptor.name());
    ASSERT_NE(r, nullptr) << b->descriptor.name();
    v1::OpDescriptor expected = b->descriptor;
    if (ops_.contains(b->descriptor.name())) {
      EXPECT_TRUE(r->descriptor.shape_rule().has_expr()) << b->descriptor.name();
      expected.mutable_shape_rule()->set_expr(r->descriptor.shape_rule().expr());
    }
    EXPECT_EQ(r->descriptor.SerializeAsString(), expected.SerializeAsString())
        << b->descriptor.name();
  }
}

TEST_F(OnnxOpsTest, RejectsWhatIsNotABuiltinOrDoesNotCompile) {
  v1::OpDescriptorList bad = list_;
  bad.mutable_ops(0)->set_name("NoSuchOp");
  OpRegistry out1;
  EXPECT_EQ(RegisterWithRuleOps(builtins_, bad, &out1).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(SyncWithBuiltins(bad, builtins_).status().code(), absl::StatusCode::kNotFound);
  bad = list_;
  bad.mutable_ops(0)->mutable_shape_rule()->set_expr("output[0] = shape(NoSuchInput);");
  OpRegistry out2;
  EXPECT_EQ(RegisterWithRuleOps(builtins_, bad, &out2).code(),
            absl::StatusCode::kInvalidArgument);
}

// The comparison is not vacuous: a rule that differs from the C++ function is caught.
TEST_F(OnnxOpsTest, ComparisonCatchesAWrongRule) {
  v1::OpDescriptorList wrong = list_;
  for (v1::OpDescriptor& d : *wrong.mutable_ops()) {
    if (d.name() == "Transpose") d.mutable_shape_rule()->set_expr("output[0] = shape(data);");
    if (d.name() == "Softmax") {
      d.mutable_shape_rule()->set_expr("assert rank(input) == 1; output[0] = shape(input);");
    }
  }
  OpRegistry registry;
  ASSERT_TRUE(RegisterWithRuleOps(builtins_, wrong, &registry).ok());
  Model m(13);
  m.In("x", "f[2,N,4]")
      .In("u", "f")
      .Node("Transpose", {"x"}, {"t"})
      .Node("Transpose", {"u"}, {"tu"})
      .Node("Softmax", {"x"}, {"s"});
  ModelComparison r = CompareRuleOps("m", m.proto(), builtins_, registry, ops_);
  ASSERT_EQ(r.differences.size(), 2u);
  EXPECT_EQ(r.differences[0].kind, DiffKind::kConflict);
  EXPECT_EQ(r.differences[0].cpp, "float32[4,N,2] value=none");
  EXPECT_EQ(r.differences[0].rule, "float32[2,N,4] value=none");
  EXPECT_EQ(r.differences[1].kind, DiffKind::kOnlyRuleRejects);
  EXPECT_EQ(r.ops["Transpose"].nodes, 2);
  EXPECT_EQ(r.ops["Transpose"].agreed, 1);  // unknown rank on both sides
  EXPECT_EQ(r.ops["Softmax"].disagreed, 1);
}

// --- The rules against the C++ functions, op by op --------------------------------------------

TEST_F(OnnxOpsTest, Add) {
  ExpectAgree(Model(13)
                  .In("a", "f[2,N,3]")
                  .In("b", "f[3]")
                  .In("c", "f[M,1,1]")
                  .In("u", "f")
                  .Node("Add", {"a", "b"}, {"y1"})
                  .Node("Add", {"a", "c"}, {"y2"})
                  .Node("Add", {"a", "u"}, {"y3"})
                  .Node("Add", {"c", "c"}, {"y4"}));
  ExpectAgree(Model(13).In("a", "f[2,3]").In("b", "f[4]").Node("Add", {"a", "b"}, {"y"}), 1);
  // Opsets < 7: B broadcasts to A's shape.
  ExpectAgree(Model(6)
                  .In("a", "f[2,3,4]")
                  .In("b", "f[2,3,4]")
                  .In("one", "f[1]")
                  .In("c", "f[3]")
                  .In("e", "f[4]")
                  .In("f", "f[3,1]")
                  .Node("Add", {"a", "b"}, {"y1"})
                  .Node("Add", {"a", "one"}, {"y2"}, {I("broadcast", 1)})
                  .Node("Add", {"a", "e"}, {"y3"}, {I("broadcast", 1)})
                  .Node("Add", {"a", "c"}, {"y4"}, {I("broadcast", 1), I("axis", 1)})
                  .Node("Add", {"a", "f"}, {"y5"}, {I("broadcast", 1), I("axis", -2)}));
  for (const auto& [b, attrs] : std::vector<std::pair<std::string, Attrs>>{
           {"f[3]", {}},                                       // broadcast=0: shapes differ
           {"f[3]", {I("broadcast", 1)}},                      // trailing dims do not match
           {"f[3]", {I("broadcast", 1), I("axis", 2)}},        // no match from axis 2
           {"f[3]", {I("broadcast", 1), I("axis", 5)}},        // axis out of range
           {"f[2,3,4,5]", {I("broadcast", 1)}}}) {             // higher rank
    ExpectAgree(Model(6).In("a", "f[2,3,4]").In("b", b).Node("Add", {"a", "b"}, {"y"}, attrs), 1);
  }
  // Contents of shape tensors: known + known, x + 0; a symbol plus a size is unknown.
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .Ints("zero", {0, 0, 0})
                  .Ints("one", {1})
                  .Ints("k", {2, 3, 4})
                  .Node("Shape", {"x"}, {"s"})
                  .Node("Add", {"s", "zero"}, {"s0"})
                  .Node("Add", {"s", "one"}, {"s1"})
                  .Node("Add", {"k", "k"}, {"k2"})
                  .Node("Add", {"zero", "s"}, {"s2"})
                  .Node("Reshape", {"x", "s0"}, {"r0"}));
}

TEST_F(OnnxOpsTest, MatMul) {
  ExpectAgree(Model(13)
                  .In("a", "f[N,2,3]")
                  .In("b", "f[3,5]")
                  .In("v", "f[3]")
                  .In("w", "f[1,N,5,3]")
                  .In("a2", "f[N,3,2]")
                  .In("k", "f[K]")
                  .In("u", "f")
                  .Node("MatMul", {"a", "b"}, {"y1"})
                  .Node("MatMul", {"a", "v"}, {"y2"})
                  .Node("MatMul", {"v", "b"}, {"y3"})
                  .Node("MatMul", {"v", "v"}, {"y4"})
                  .Node("MatMul", {"w", "a2"}, {"y5"})
                  .Node("MatMul", {"k", "b"}, {"y6"})
                  .Node("MatMul", {"a", "u"}, {"y7"}));
  ExpectAgree(Model(13).In("a", "f[2,3]").In("b", "f[4,5]").Node("MatMul", {"a", "b"}, {"y"}),
              1);
  ExpectAgree(
      Model(13).In("a", "f[2,2,3]").In("b", "f[3,3,5]").Node("MatMul", {"a", "b"}, {"y"}), 1);
  ExpectAgree(Model(13).In("a", "f[]").In("b", "f[3,5]").Node("MatMul", {"a", "b"}, {"y"}), 1);
}

TEST_F(OnnxOpsTest, Gemm) {
  ExpectAgree(Model(13)
                  .In("a", "f[M,3]")
                  .In("at", "f[3,M]")
                  .In("b", "f[3,5]")
                  .In("bt", "f[5,3]")
                  .In("c", "f[5]")
                  .In("c1", "f[M,1]")
                  .In("u", "f")
                  .Node("Gemm", {"a", "b", "c"}, {"y1"})
                  .Node("Gemm", {"at", "bt", "c1"}, {"y2"}, {I("transA", 1), I("transB", 1)})
                  .Node("Gemm", {"a", "u"}, {"y3"})
                  .Node("Gemm", {"a", "b", ""}, {"y4"}));
  ExpectAgree(Model(13).In("a", "f[2,3]").In("b", "f[4,5]").Node("Gemm", {"a", "b"}, {"y"}), 1);
  ExpectAgree(Model(13).In("a", "f[2,3,1]").In("b", "f[3,5]").Node("Gemm", {"a", "b"}, {"y"}),
              1);
  ExpectAgree(Model(13)
                  .In("a", "f[2,3]")
                  .In("b", "f[3,5]")
                  .In("c", "f[4]")
                  .Node("Gemm", {"a", "b", "c"}, {"y"}),
              1);
  ExpectAgree(Model(13)
                  .In("a", "f[2,3]")
                  .In("b", "f[3,5]")
                  .In("c", "f[1,2,5]")
                  .Node("Gemm", {"a", "b", "c"}, {"y"}),
              1);
}

TEST_F(OnnxOpsTest, Conv) {
  ExpectAgree(Model(13)
                  .In("x", "f[N,4,H,10]")
                  .In("w", "f[8,4,3,3]")
                  .In("dw", "f[8,2,3,3]")
                  .In("b", "f[8]")
                  .In("w1", "f[8,4,1,1]")
                  .In("ws", "f[8,4,K,3]")
                  .In("u", "f")
                  .Node("Conv", {"x", "w", "b"}, {"y1"}, {Is("pads", {1, 1, 1, 1})})
                  .Node("Conv", {"x", "w"}, {"y2"}, {Is("strides", {2, 2})})
                  .Node("Conv", {"x", "w"}, {"y3"}, {Is("dilations", {2, 1})})
                  .Node("Conv", {"x", "dw"}, {"y4"}, {I("group", 2), S("auto_pad", "SAME_UPPER")})
                  .Node("Conv", {"x", "w"}, {"y5"},
                        {S("auto_pad", "SAME_LOWER"), Is("strides", {2, 3})})
                  .Node("Conv", {"x", "w"}, {"y6"}, {S("auto_pad", "VALID")})
                  .Node("Conv", {"x", "w1"}, {"y7"}, {S("auto_pad", "VALID")})
                  .Node("Conv", {"x", "ws"}, {"y8"})
                  .Node("Conv", {"x", "w"}, {"y9"}, {Is("kernel_shape", {3, 3})})
                  .Node("Conv", {"u", "w"}, {"y10"})
                  .Node("Conv", {"u", "u"}, {"y11"})
                  .Node("Conv", {"u", "u"}, {"y12"}, {Is("kernel_shape", {3})})
                  .Node("Conv", {"x", "u"}, {"y13"}, {Is("pads", {0, 1, 2, 1})}));
  const std::vector<std::pair<std::string, Attrs>> bad = {
      {"f[8,3,3,3]", {}},                                 // channels differ
      {"f[8,4,3]", {}},                                   // ranks differ
      {"f[7,2,3,3]", {I("group", 2)}},                    // M not divisible by group
      {"f[8,4,3,3]", {I("group", 0)}},                    // group not positive
      {"f[8,4,3,3]", {S("auto_pad", "SAME")}},            // unknown auto_pad
      {"f[8,4,3,3]", {Is("strides", {1})}},               // strides of the wrong length
      {"f[8,4,3,3]", {Is("pads", {1, 1})}},               // pads of the wrong length
      {"f[8,4,3,3]", {Is("kernel_shape", {3, 3, 3})}},    // kernel_shape of the wrong length
      {"f[8,4,3,3]", {Is("strides", {1, 0})}},            // stride 0
      {"f[8,4,3,3]", {Is("dilations", {-1, 1})}},         // negative dilation
      {"f[8,4,3,3]", {Is("pads", {0, -1, 0, 0})}},        // negative pad
      {"f[8,4,9,3]", {}},                                 // the window does not fit
      {"f[8,4,3,13]", {S("auto_pad", "VALID")}},          // nor here
  };
  for (const auto& [w, attrs] : bad) {
    ExpectAgree(Model(13).In("x", "f[1,4,5,10]").In("w", w).Node("Conv", {"x", "w"}, {"y"}, attrs),
                1);
  }
  ExpectAgree(Model(13)
                  .In("x", "f[1,4,5,10]")
                  .In("w", "f[8,4,3,3]")
                  .In("b", "f[7]")
                  .Node("Conv", {"x", "w", "b"}, {"y"}),
              1);
  ExpectAgree(Model(13).In("x", "f[1,4]").In("w", "f[8,4]").Node("Conv", {"x", "w"}, {"y"}), 1);
}

TEST_F(OnnxOpsTest, Transpose) {
  ExpectAgree(Model(13)
                  .In("x", "f[2,N,4]")
                  .In("u", "f")
                  .Node("Transpose", {"x"}, {"y1"})
                  .Node("Transpose", {"x"}, {"y2"}, {Is("perm", {0, 2, 1})})
                  .Node("Transpose", {"u"}, {"y3"}, {Is("perm", {1, 0})})
                  .Node("Transpose", {"u"}, {"y4"}));
  for (const std::vector<int64_t>& perm :
       std::vector<std::vector<int64_t>>{{0, 0, 1}, {0, 1, 3}, {0, 1}, {-1, 0, 1}}) {
    ExpectAgree(Model(13).In("x", "f[2,3,4]").Node("Transpose", {"x"}, {"y"}, {Is("perm", perm)}),
                1);
  }
}

TEST_F(OnnxOpsTest, Concat) {
  ExpectAgree(Model(13)
                  .In("a", "f[2,N,3]")
                  .In("b", "f[2,N,5]")
                  .In("c", "f[2,?,K]")
                  .In("e", "f[2,4,0]")
                  .In("f", "f[2,4,3]")
                  .In("u", "f")
                  .Node("Concat", {"a", "b"}, {"y1"}, {I("axis", -1)})
                  .Node("Concat", {"a", "c"}, {"y2"}, {I("axis", 2)})
                  .Node("Concat", {"c", "e"}, {"y3"}, {I("axis", 2)})
                  .Node("Concat", {"a", "f"}, {"y4"}, {I("axis", 2)})
                  .Node("Concat", {"a", "u"}, {"y5"}, {I("axis", 2)})
                  .Node("Concat", {"u", "u"}, {"y6"}, {I("axis", 7)})
                  .Node("Concat", {"a", "a", "a"}, {"y7"}, {I("axis", 0)}));
  ExpectAgree(Model(13).In("a", "f[2,3]").In("b", "f[2,3,1]").Node("Concat", {"a", "b"}, {"y"},
                                                                   {I("axis", 0)}),
              1);
  ExpectAgree(Model(13).In("a", "f[2,3]").In("b", "f[3,3]").Node("Concat", {"a", "b"}, {"y"},
                                                                 {I("axis", 1)}),
              1);
  ExpectAgree(Model(13).In("a", "f[2,3]").Node("Concat", {"a", "a"}, {"y"}, {I("axis", 2)}), 1);
  ExpectAgree(Model(13).In("a", "f[2,3]").Node("Concat", {"a", "a"}, {"y"}), 1);
  // Opsets < 4: 'axis' defaults to 1.
  ExpectAgree(Model(3).In("a", "f[2,3]").Node("Concat", {"a", "a"}, {"y"}));
  // Contents: Shape -> Gather -> Concat -> Reshape (negative entries: see below).
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .In("len2", "i[2]")
                  .Ints("i0", {0})
                  .Ints("k12", {12})
                  .Node("Shape", {"x"}, {"s"})
                  .Node("Gather", {"s", "i0"}, {"n"})
                  .Node("Concat", {"n", "k12"}, {"t"}, {I("axis", 0)})
                  .Node("Concat", {"n", "len2"}, {"t2"}, {I("axis", 0)})
                  .Node("Reshape", {"x", "t"}, {"y"})
                  .Node("Reshape", {"x", "t2"}, {"y2"}));
}

TEST_F(OnnxOpsTest, Reshape) {
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .In("u", "f")
                  .In("t3", "i[3]")
                  .In("tu", "i[?]")
                  .Ints("s1", {0, -1})
                  .Ints("s2", {-1, 4})
                  .Ints("s3", {0, 12})
                  .Ints("s4", {2, -1, 2})
                  .Ints("s5", {-1})
                  .Ints("s6", {4, 0, -1})
                  .Node("Reshape", {"x", "s1"}, {"y1"})
                  .Node("Reshape", {"x", "s2"}, {"y2"})
                  .Node("Reshape", {"x", "s3"}, {"y3"})
                  .Node("Reshape", {"x", "s4"}, {"y4"})
                  .Node("Reshape", {"x", "s5"}, {"y5"})
                  .Node("Reshape", {"x", "s6"}, {"y6"})
                  .Node("Reshape", {"u", "s1"}, {"y7"})
                  .Node("Reshape", {"x", "t3"}, {"y8"})
                  .Node("Reshape", {"x", "tu"}, {"y9"}));
  ExpectAgree(Model(13)
                  .In("x", "f[2,0,4]")
                  .Ints("s1", {0, 4, 0})
                  .Ints("s2", {0, 0})
                  .Node("Reshape", {"x", "s1"}, {"y1"}, {I("allowzero", 1)})
                  .Node("Reshape", {"x", "s2"}, {"y2"}));
  for (const auto& [shape, allowzero] : std::vector<std::pair<std::vector<int64_t>, int>>{
           {{-1, -1}, 0},      // two -1
           {{-2, 12}, 0},      // below -1
           {{0, 0, 0, 0}, 0},  // 0 past the input's rank
           {{5, -1}, 0},       // 24 elements not divisible by 5
           {{5, 5}, 0},        // element counts differ
           {{0, -1}, 1}}) {    // 0 and -1 under allowzero
    ExpectAgree(Model(13)
                    .In("x", "f[2,3,4]")
                    .Ints("s", shape)
                    .Node("Reshape", {"x", "s"}, {"y"}, {I("allowzero", allowzero)}),
                1);
  }
  // Empty tensors: 0 times an unknown dim is not a known count.
  ExpectAgree(Model(13)
                  .In("a", "f[0,?,4]")
                  .In("b", "f[0,N]")
                  .In("c", "f[0,3]")
                  .Ints("s1", {-1, 4})
                  .Ints("s2", {-1})
                  .Ints("s3", {-1, 3})
                  .Node("Reshape", {"a", "s1"}, {"y1"})
                  .Node("Reshape", {"b", "s2"}, {"y2"})
                  .Node("Reshape", {"c", "s3"}, {"y3"}));
  // Symbolic target entries: [N, 6] -> [N, 4] has the same symbols but not the same count.
  ExpectAgree(Model(13)
                  .In("x", "f[N,6]")
                  .Ints("i0", {0})
                  .Ints("k4", {4})
                  .Node("Shape", {"x"}, {"s"})
                  .Node("Gather", {"s", "i0"}, {"n"})
                  .Node("Concat", {"n", "k4"}, {"t"}, {I("axis", 0)})
                  .Node("Reshape", {"x", "t"}, {"y"}),
              1);
  // Opset < 5: the target is an attribute.
  ExpectAgree(Model(4).In("x", "f[2,3,4]").Node("Reshape", {"x"}, {"y"}, {Is("shape", {6, -1})}));
  ExpectAgree(Model(13).In("x", "f[2,3,4]").Node("Reshape", {"x"}, {"y"}), 1);
}

TEST_F(OnnxOpsTest, ReduceMean) {
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .In("u", "f")
                  .Node("ReduceMean", {"x"}, {"y1"}, {Is("axes", {1})})
                  .Node("ReduceMean", {"x"}, {"y2"}, {Is("axes", {-1, 0}), I("keepdims", 0)})
                  .Node("ReduceMean", {"x"}, {"y3"})
                  .Node("ReduceMean", {"x"}, {"y4"}, {I("keepdims", 0)})
                  .Node("ReduceMean", {"u"}, {"y5"}, {I("keepdims", 0)})
                  .Node("ReduceMean", {"u"}, {"y6"}, {Is("axes", {1})})
                  .Node("ReduceMean", {"x"}, {"y7"}, {Is("axes", {1, 1})}));
  ExpectAgree(
      Model(13).In("x", "f[2,3]").Node("ReduceMean", {"x"}, {"y"}, {Is("axes", {2})}), 1);
  // Opset 18: 'axes' is an input; unknown contents keep only the known 1s (with keepdims).
  ExpectAgree(Model(18)
                  .In("x", "f[N,1,4]")
                  .In("a", "i[1]")
                  .Ints("a1", {-2})
                  .Ints("none", {})
                  .Node("ReduceMean", {"x", "a1"}, {"y1"})
                  .Node("ReduceMean", {"x", "a"}, {"y2"})
                  .Node("ReduceMean", {"x", "a"}, {"y3"}, {I("keepdims", 0)})
                  .Node("ReduceMean", {"x", "none"}, {"y4"}, {I("noop_with_empty_axes", 1)})
                  .Node("ReduceMean", {"x", "none"}, {"y5"})
                  .Node("ReduceMean", {"x", ""}, {"y6"}, {I("noop_with_empty_axes", 1)}));
  ExpectAgree(Model(18)
                  .In("x", "f[2,3]")
                  .Ints("a1", {0})
                  .Node("ReduceMean", {"x", "a1"}, {"y"}, {Is("axes", {0})}),
              1);
}

TEST_F(OnnxOpsTest, Softmax) {
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .In("u", "f")
                  .Node("Softmax", {"x"}, {"y1"})
                  .Node("Softmax", {"x"}, {"y2"}, {I("axis", -3)})
                  .Node("Softmax", {"u"}, {"y3"}, {I("axis", 9)}));
  ExpectAgree(Model(13).In("x", "f[2,3]").Node("Softmax", {"x"}, {"y"}, {I("axis", 2)}), 1);
  // Opsets < 13 default to axis 1; opsets < 11 also accept axis == rank.
  ExpectAgree(Model(11).In("x", "f[2]").Node("Softmax", {"x"}, {"y"}), 1);
  ExpectAgree(Model(11).In("x", "f[2,3]").Node("Softmax", {"x"}, {"y"}));
  ExpectAgree(Model(11).In("x", "f[2,3]").Node("Softmax", {"x"}, {"y"}, {I("axis", 2)}), 1);
  ExpectAgree(Model(10).In("x", "f[2,3]").Node("Softmax", {"x"}, {"y"}, {I("axis", 2)}));
  ExpectAgree(Model(10).In("x", "f[2,3]").Node("Softmax", {"x"}, {"y"}, {I("axis", 3)}), 1);
}

TEST_F(OnnxOpsTest, Gather) {
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .In("i", "i[B,2]")
                  .In("u", "f")
                  .In("iu", "i")
                  .Ints("k", {2}, /*scalar=*/true)
                  .Ints("ks", {-1, 0})
                  .Node("Gather", {"x", "i"}, {"y1"})
                  .Node("Gather", {"x", "i"}, {"y2"}, {I("axis", -1)})
                  .Node("Gather", {"x", "k"}, {"y3"}, {I("axis", 1)})
                  .Node("Gather", {"x", "ks"}, {"y4"}, {I("axis", 2)})
                  .Node("Gather", {"u", "i"}, {"y5"})
                  .Node("Gather", {"x", "iu"}, {"y6"}, {I("axis", 1)})
                  .Node("Shape", {"x"}, {"s"})
                  .Node("Gather", {"s", "ks"}, {"y7"})
                  .Node("Gather", {"s", "k"}, {"y8"}));
  ExpectAgree(
      Model(13).In("x", "f[2,3]").In("i", "i[2]").Node("Gather", {"x", "i"}, {"y"}, {I("axis", 2)}),
      1);
  ExpectAgree(Model(13)
                  .In("x", "f[2,3]")
                  .Ints("k", {3})
                  .Node("Gather", {"x", "k"}, {"y"}, {I("axis", 1)}),
              1);
  ExpectAgree(Model(13)
                  .In("x", "f[N,3]")
                  .Ints("k", {-2})
                  .Node("Shape", {"x"}, {"s"})
                  .Node("Gather", {"s", "k"}, {"y"})
                  .Node("Gather", {"x", "k"}, {"z"}, {I("axis", 1)}));
}


// Shape tensors holding -1 (Shape -> Gather -> Concat(-1) -> Reshape, the usual "keep the batch,
// flatten the rest" of exported models): output[I].value takes negative entries.
TEST_F(OnnxOpsTest, NegativeShapeTensorContents) {
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .Ints("i0", {0})
                  .Ints("m1", {-1})
                  .Ints("k", {-3, 0})
                  .Ints("two", {2})
                  .Node("Shape", {"x"}, {"s"})
                  .Node("Gather", {"s", "i0"}, {"n"})
                  .Node("Concat", {"n", "m1"}, {"t"}, {I("axis", 0)})
                  .Node("Reshape", {"x", "t"}, {"y"})
                  .Node("Add", {"k", "k"}, {"k2"})
                  .Node("Gather", {"k", "i0"}, {"k3"})
                  .Node("Reshape", {"k", "two"}, {"k4"}));
  // [N, 6] -> [N, 4, -1]: the symbols cancel, the sizes do not divide.
  ExpectAgree(Model(13)
                  .In("x", "f[N,6]")
                  .Ints("i0", {0})
                  .Ints("k", {4, -1})
                  .Node("Shape", {"x"}, {"s"})
                  .Node("Gather", {"s", "i0"}, {"n"})
                  .Node("Concat", {"n", "k"}, {"t"}, {I("axis", 0)})
                  .Node("Reshape", {"x", "t"}, {"y"}),
              1);
  // Symbolic contents in the target: [N, 3*4] -> -1 is N when the known factors cancel.
  ExpectAgree(Model(13)
                  .In("x", "f[N,3,4]")
                  .In("z", "f[N,M,12]")
                  .Ints("i0", {0})
                  .Ints("i1", {1})
                  .Ints("m1", {-1})
                  .Ints("k12", {12})
                  .Ints("k6", {6})
                  .Node("Shape", {"z"}, {"s"})
                  .Node("Gather", {"s", "i0"}, {"n"})
                  .Node("Gather", {"s", "i1"}, {"m"})
                  .Node("Concat", {"m1", "k12"}, {"t1"}, {I("axis", 0)})
                  .Node("Concat", {"n", "m1"}, {"t2"}, {I("axis", 0)})
                  .Node("Concat", {"m", "m1"}, {"t3"}, {I("axis", 0)})
                  .Node("Concat", {"n", "k6", "m1"}, {"t4"}, {I("axis", 0)})
                  .Node("Reshape", {"x", "t1"}, {"y1"})
                  .Node("Reshape", {"x", "t2"}, {"y2"})
                  .Node("Reshape", {"x", "t3"}, {"y3"})
                  .Node("Reshape", {"x", "t4"}, {"y4"})
                  .Node("Reshape", {"z", "t2"}, {"y5"}));
}

}  // namespace
}  // namespace dogfood
}  // namespace graphopt
