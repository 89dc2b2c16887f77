#include "rules/test_util.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace graphopt {
namespace rules_testing {

v1::Tensor Int64Tensor(const std::vector<int64_t>& values, bool scalar) {
  v1::Tensor t;
  t.set_dtype(v1::DT_INT64);
  if (!scalar) t.add_dims(static_cast<int64_t>(values.size()));
  std::string raw(values.size() * 8, '\0');
  if (!values.empty()) std::memcpy(raw.data(), values.data(), raw.size());
  t.set_raw_data(raw);
  return t;
}

v1::Attribute AInt(int64_t v) {
  v1::Attribute a;
  a.set_i(v);
  return a;
}
v1::Attribute AInts(const std::vector<int64_t>& v) {
  v1::Attribute a;
  a.mutable_ints();
  for (int64_t x : v) a.mutable_ints()->add_values(x);
  return a;
}
v1::Attribute AString(const std::string& v) {
  v1::Attribute a;
  a.set_s(v);
  return a;
}
v1::Attribute AFloat(float v) {
  v1::Attribute a;
  a.set_f(v);
  return a;
}

namespace {

void FillArg(const std::string& spec, v1::ArgSpec* arg) {
  std::string name = spec;
  if (!name.empty() && (name.back() == '?' || name.back() == '*')) {
    arg->set_arity(name.back() == '?' ? v1::ARITY_OPTIONAL : v1::ARITY_VARIADIC);
    if (name.back() == '*') arg->set_min_count(1);
    name.pop_back();
  }
  arg->set_name(name);
  arg->set_type_constraint("T");
}

}  // namespace

v1::OpDescriptor Descriptor(const std::string& name, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs,
                            const std::vector<v1::AttributeSpec>& attributes) {
  v1::OpDescriptor d;
  d.set_name(name);
  d.set_domain("test.rules");
  d.set_version(1);
  for (const std::string& in : inputs) FillArg(in, d.add_inputs());
  for (const std::string& out : outputs) FillArg(out, d.add_outputs());
  for (const v1::AttributeSpec& a : attributes) *d.add_attributes() = a;
  v1::TypeConstraint* t = d.add_type_constraints();
  t->set_name("T");
  t->add_allowed(v1::DT_FLOAT32);
  t->add_allowed(v1::DT_FLOAT16);
  t->add_allowed(v1::DT_INT64);
  return d;
}

v1::AttributeSpec AttrSpec(const std::string& name, v1::AttributeType type) {
  v1::AttributeSpec a;
  a.set_name(name);
  a.set_type(type);
  return a;
}

v1::AttributeSpec AttrSpec(const std::string& name, v1::AttributeType type,
                           v1::Attribute default_value) {
  v1::AttributeSpec a = AttrSpec(name, type);
  *a.mutable_default_value() = std::move(default_value);
  return a;
}

ValueId TestGraph::Value(const std::string& name) {
  ValueId id = graph.FindValue(name);
  if (id.valid()) return id;
  return *graph.AddValue(name);
}

void TestGraph::In(const std::string& name, const std::string& type) {
  ValueId id = Value(name);
  graph.AddGraphInput(id);
  graph.mutable_value(id).type = ParseType(type);
}

void TestGraph::Input(const std::string& name, const std::string& spec) {
  if (spec.rfind("const:", 0) != 0) {
    In(name, spec);
    return;
  }
  std::vector<int64_t> v;
  for (absl::string_view x : absl::StrSplit(spec.substr(6), ',', absl::SkipEmpty())) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(x, &n)) std::abort();  // a typo in the test
    v.push_back(n);
  }
  Ints(name, v);
}

std::vector<std::string> TestGraph::Inputs(const std::vector<std::string>& specs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].empty()) {
      names.push_back("");
      continue;
    }
    names.push_back(absl::StrCat("in", i));
    Input(names.back(), specs[i]);
  }
  return names;
}

void TestGraph::Init(const std::string& name, v1::Tensor t) {
  ValueId id = Value(name);
  TensorType type;
  type.dtype = t.dtype();
  type.shape = ShapeFromDimsList(t);
  graph.mutable_value(id).type = type;
  graph.SetInitializer(id, std::move(t));
}

void TestGraph::Node(const std::string& op, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, AttributeMap attrs,
                     const std::string& domain) {
  std::vector<ValueId> in, out;
  for (const std::string& s : inputs) in.push_back(s.empty() ? ValueId() : Value(s));
  for (const std::string& s : outputs) out.push_back(s.empty() ? ValueId() : Value(s));
  absl::StatusOr<NodeId> id = graph.AddNode(
      "n" + std::to_string(graph.num_node_slots()) + "_" + op, op, domain, in, out,
      std::move(attrs));
  if (!id.ok()) std::abort();
}

void TestGraph::SetOpset(int64_t version, const std::string& domain) {
  v1::OpsetImport o;
  o.set_domain(domain);
  o.set_version(version);
  graph.opset_imports = {o};
}

absl::Status TestGraph::Run() {
  dims = InitialDimsValues(graph);
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    NodeId id(i);
    const graphopt::Node& n = graph.node(id);
    const OpDef* op = registry_->Find(n.domain, n.op_type);
    if (op == nullptr) return absl::NotFoundError(n.op_type);
    if (absl::Status s = InferNodeTypes(graph, id, *op); !s.ok()) return s;
    if (absl::Status s = InferNodeShapes(graph, id, *op, &dims); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::string TestGraph::T(const std::string& name) {
  return TensorTypeToString(graph.value(graph.FindValue(name)).type);
}

std::string TestGraph::DimsValue(const std::string& name) {
  const std::optional<Dims>& v = dims[graph.FindValue(name).value()];
  return v ? ShapeToString(*v) : "none";
}

}  // namespace rules_testing
}  // namespace graphopt
