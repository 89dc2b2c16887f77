#ifndef GRAPHOPT_OPS_BUILTIN_OPS_TEST_UTIL_H_
#define GRAPHOPT_OPS_BUILTIN_OPS_TEST_UTIL_H_

// The fixture of the builtin ops' tests: builds a small graph node by node from typed inputs
// and initializers, runs type and shape inference with the builtin registry, and reads the
// results back as strings ("float32[batch,3]").

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "gtest/gtest.h"
#include "ops/builtin_ops.h"

namespace graphopt {

// "float32[batch,3,?]", "int64[]" (scalar), "float32[?..]" (rank unknown), "?" (nothing known).
inline TensorType ParseType(const std::string& s) {
  TensorType t;
  if (s == "?") return t;
  const size_t bracket = s.find('[');
  t.dtype = *ParseDataType(s.substr(0, bracket));
  const std::string dims = s.substr(bracket + 1, s.size() - bracket - 2);
  if (dims == "?..") return t;
  t.shape.emplace();
  if (dims.empty()) return t;
  for (absl::string_view d : absl::StrSplit(dims, ',')) {
    int64_t n;
    if (d == "?") {
      t.shape->push_back(Dim::Unknown());
    } else if (absl::SimpleAtoi(d, &n)) {
      t.shape->push_back(Dim::Known(n));
    } else {
      t.shape->push_back(Dim::Symbol(std::string(d)));
    }
  }
  return t;
}

// A tensor of `dtype` and `dims` whose raw data is `values` (of the element type's size).
template <typename T>
v1::Tensor RawTensor(v1::DataType dtype, const std::vector<T>& values,
                     std::vector<int64_t> dims) {
  v1::Tensor t;
  t.set_dtype(dtype);
  for (int64_t d : dims) t.add_dims(d);
  std::string raw(values.size() * sizeof(T), '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(raw);
  return t;
}

inline v1::Tensor Int64Tensor(const std::vector<int64_t>& values, bool scalar = false) {
  return RawTensor(v1::DT_INT64, values,
                   scalar ? std::vector<int64_t>{} : std::vector<int64_t>{
                                                         static_cast<int64_t>(values.size())});
}

inline v1::Tensor FloatTensor(const std::vector<float>& values, std::vector<int64_t> dims) {
  return RawTensor(v1::DT_FLOAT32, values, std::move(dims));
}

inline v1::Attribute AInt(int64_t v) {
  v1::Attribute a;
  a.set_i(v);
  return a;
}
inline v1::Attribute AFloat(float v) {
  v1::Attribute a;
  a.set_f(v);
  return a;
}
inline v1::Attribute AInts(const std::vector<int64_t>& v) {
  v1::Attribute a;
  for (int64_t x : v) a.mutable_ints()->add_values(x);
  return a;
}
inline v1::Attribute AFloats(const std::vector<float>& v) {
  v1::Attribute a;
  for (float x : v) a.mutable_floats()->add_values(x);
  return a;
}
inline v1::Attribute AString(const std::string& v) {
  v1::Attribute a;
  a.set_s(v);
  return a;
}
inline v1::Attribute AStrings(const std::vector<std::string>& v) {
  v1::Attribute a;
  for (const std::string& x : v) a.mutable_strings()->add_values(x);
  return a;
}
inline v1::Attribute ATensor(v1::Tensor t) {
  v1::Attribute a;
  *a.mutable_t() = std::move(t);
  return a;
}
inline v1::Attribute AGraph(v1::Graph g) {
  v1::Attribute a;
  *a.mutable_g() = std::move(g);
  return a;
}

// Imports the default domain at `version` (graphs without an import get the newest semantics).
inline void SetOpset(Graph& g, int64_t version) {
  v1::OpsetImport o;
  o.set_version(version);
  g.opset_imports = {o};
}

class BuiltinOpsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(RegisterBuiltinOps(&registry_).ok()); }

  ValueId Value(const std::string& name) {
    ValueId id = graph_.FindValue(name);
    if (id.valid()) return id;
    return *graph_.AddValue(name);
  }

  // A graph input of the given type ("float32[batch,3]").
  void In(const std::string& name, const std::string& type) {
    ValueId id = Value(name);
    graph_.AddGraphInput(id);
    graph_.mutable_value(id).type = ParseType(type);
  }

  // An initializer (not a graph input), typed like its tensor.
  void Init(const std::string& name, v1::Tensor t) {
    ValueId id = Value(name);
    TensorType type;
    type.dtype = t.dtype();
    type.shape = ShapeFromDimsList(t);
    graph_.mutable_value(id).type = type;
    graph_.SetInitializer(id, std::move(t));
  }
  void Ints(const std::string& name, const std::vector<int64_t>& v) { Init(name, Int64Tensor(v)); }
  void Scalar(const std::string& name, int64_t v) { Init(name, Int64Tensor({v}, true)); }

  // The graph imports the default domain at `version`.
  void Opset(int64_t version) {
    v1::OpsetImport o;
    o.set_version(version);
    graph_.opset_imports.push_back(o);
  }

  // Adds a node of `domain`; "" among inputs or outputs omits an optional one.
  void DomainNode(const std::string& domain, const std::string& op,
                  const std::vector<std::string>& inputs, const std::vector<std::string>& outputs,
                  AttributeMap attrs = {}) {
    std::vector<ValueId> in, out;
    for (const std::string& s : inputs) in.push_back(s.empty() ? ValueId() : Value(s));
    for (const std::string& s : outputs) out.push_back(s.empty() ? ValueId() : Value(s));
    absl::StatusOr<NodeId> id = graph_.AddNode(
        "n" + std::to_string(graph_.num_node_slots()) + "_" + op, op, domain, in, out,
        std::move(attrs));
    ASSERT_TRUE(id.ok()) << id.status();
  }
  void Node(const std::string& op, const std::vector<std::string>& inputs,
            const std::vector<std::string>& outputs, AttributeMap attrs = {}) {
    DomainNode("", op, inputs, outputs, std::move(attrs));
  }

  // Type and shape inference over every node, in insertion order.
  absl::Status Run() {
    dims_.assign(graph_.num_value_slots(), std::nullopt);
    for (int i = 0; i < graph_.num_node_slots(); ++i) {
      NodeId id(i);
      const graphopt::Node& n = graph_.node(id);
      const OpDef* op = registry_.Find(n.domain, n.op_type);
      if (op == nullptr) return absl::NotFoundError(n.op_type);
      if (absl::Status s = InferNodeTypes(graph_, id, *op); !s.ok()) return s;
      if (absl::Status s = InferNodeShapes(graph_, id, *op, &dims_); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  std::string T(const std::string& name) {
    return TensorTypeToString(graph_.value(graph_.FindValue(name)).type);
  }
  std::string DimsValue(const std::string& name) {
    const std::optional<Dims>& v = dims_[graph_.FindValue(name).value()];
    return v ? ShapeToString(*v) : "none";
  }

  // Runs and expects INVALID_ARGUMENT whose message contains every fragment.
  void ExpectError(const std::vector<std::string>& fragments) {
    absl::Status s = Run();
    ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    for (const std::string& f : fragments) {
      EXPECT_NE(std::string(s.message()).find(f), std::string::npos)
          << "'" << f << "' not in: " << s.message();
    }
  }

  Graph graph_;
  OpRegistry registry_;
  DimsValueTable dims_;
};

#define RUN_OK() ASSERT_TRUE(Run().ok()) << Run()

}  // namespace graphopt

#endif  // GRAPHOPT_OPS_BUILTIN_OPS_TEST_UTIL_H_
