#include "fuzz/fuzz_util.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/stubs/logging.h"
#include "ops/builtin_ops.h"

namespace graphopt {
namespace fuzz {
namespace {

const char* const kRuleFuzzOps[] = {
    // rules/dogfood/onnx_ops.pbtxt (and rules/example_rules.h: Conv, Concat, Reshape, Gemm,
    // Softmax, Add).
    "Add", "MatMul", "Gemm", "Conv", "Transpose", "Concat", "Reshape", "ReduceMean", "Softmax",
    "Gather",
    // More argument layouts: unary, variadic outputs, optional inputs, shape tensors.
    "Relu", "Split", "Slice", "Expand", "Unsqueeze", "Pad", "TopK", "Cast", "ConstantOfShape",
    "Range", "Where", "Tile", "MaxPool", "LSTM",
};
constexpr size_t kNumRuleFuzzOps = sizeof(kRuleFuzzOps) / sizeof(kRuleFuzzOps[0]);

// One input's shape in a scenario. `constant` makes it an int64 initializer holding `values`
// (1-D) when the input's constraint allows int64.
struct InputPreset {
  bool ranked = true;
  // Dims: a size >= 0, -1 unknown, -2 the symbol "batch", -3 the symbol "n".
  std::vector<int64_t> dims;
  bool constant = false;
  std::vector<int64_t> values;
};

const std::vector<InputPreset>& Presets() {
  static const auto* const kPresets = new std::vector<InputPreset>{
      {true, {2, 3, 4, 5}},
      {true, {-2, 3, 8, 8}},
      {true, {}},
      {false, {}},
      {true, {3}, true, {2, -1, 4}},
      {true, {1, 3, 1, 5}},
      {true, {-3, -1}},
      {true, {4}, true, {0, 1, 2, 3}},
      {true, {2, 3}},
      {true, {1}, true, {1}},
      {true, {0, 3}},
      {true, {2}, true, {-1, 0}},
  };
  return *kPresets;
}

void SetDims(const std::vector<int64_t>& dims, v1::Shape* shape) {
  for (int64_t d : dims) {
    v1::Dim* dim = shape->add_dims();
    if (d >= 0) {
      dim->set_size(d);
    } else if (d == -2) {
      dim->set_symbol("batch");
    } else if (d == -3) {
      dim->set_symbol("n");
    }
  }
}

// The dtype an argument gets: int64 when wanted and allowed, else the constraint's first.
v1::DataType ArgDType(const v1::OpDescriptor& op, const v1::ArgSpec& arg, bool want_int64,
                      bool* int64_allowed) {
  *int64_allowed = false;
  for (const v1::TypeConstraint& c : op.type_constraints()) {
    if (c.name() != arg.type_constraint()) continue;
    for (int dt : c.allowed()) *int64_allowed |= dt == v1::DT_INT64;
    if (want_int64 && *int64_allowed) return v1::DT_INT64;
    if (c.allowed_size() > 0) return static_cast<v1::DataType>(c.allowed(0));
  }
  return v1::DT_FLOAT32;
}

void FillAttribute(const v1::AttributeSpec& spec, int scenario, v1::Attribute* a) {
  a->set_name(spec.name());
  const int64_t small = scenario % 3;  // 0, 1, 2: axes, flags, counts
  switch (spec.type()) {
    case v1::ATTR_INT:
      a->set_i(small);
      break;
    case v1::ATTR_FLOAT:
      a->set_f(0.5f);
      break;
    case v1::ATTR_STRING:
      a->set_s(scenario % 2 ? "NOTSET" : "");
      break;
    case v1::ATTR_TENSOR: {
      v1::Tensor* t = a->mutable_t();
      t->set_dtype(v1::DT_INT64);
      t->set_raw_data(std::string(8, '\0'));
      break;
    }
    case v1::ATTR_GRAPH:
      a->mutable_g()->set_name("body");
      break;
    case v1::ATTR_INTS:
      for (int i = 0; i < 2 + small; ++i) a->mutable_ints()->add_values(1);
      break;
    case v1::ATTR_FLOATS:
      a->mutable_floats()->add_values(1.0f);
      break;
    case v1::ATTR_STRINGS:
      a->mutable_strings()->add_values("a");
      break;
    case v1::ATTR_TENSORS:
      a->mutable_tensors()->add_values()->set_dtype(v1::DT_FLOAT32);
      break;
    case v1::ATTR_GRAPHS:
      a->mutable_graphs();
      break;
    case v1::ATTR_DTYPE:
      a->set_dtype(v1::DT_FLOAT32);
      break;
    case v1::ATTR_SHAPE:
      SetDims({2, 3}, a->mutable_shape());
      break;
    default:
      a->set_i(0);
      break;
  }
}

}  // namespace

void QuietProtobuf() { google::protobuf::SetLogHandler(nullptr); }

const OpRegistry& BuiltinOps() {
  static const OpRegistry* const kOps = [] {
    auto* ops = new OpRegistry();
    if (absl::Status s = RegisterBuiltinOps(ops); !s.ok()) {
      std::fprintf(stderr, "fuzz: registering the builtin ops: %s\n", s.ToString().c_str());
      std::abort();
    }
    return ops;
  }();
  return *kOps;
}

const char* const* RuleFuzzOps(size_t* count) {
  *count = kNumRuleFuzzOps;
  return kRuleFuzzOps;
}

int RuleFuzzOpIndex(const char* name) {
  for (size_t i = 0; i < kNumRuleFuzzOps; ++i) {
    if (std::strcmp(kRuleFuzzOps[i], name) == 0) return static_cast<int>(i);
  }
  return -1;
}

v1::Graph OneNodeGraph(const v1::OpDescriptor& op, int scenario, int64_t opset_version) {
  scenario = ((scenario % kNumScenarios) + kNumScenarios) % kNumScenarios;
  const std::vector<InputPreset>& presets = Presets();
  v1::Graph g;
  g.set_name("fuzz");
  if (opset_version > 0) {
    v1::OpsetImport* o = g.add_opset_imports();
    o->set_domain(op.domain());
    o->set_version(opset_version);
  }
  v1::Node* node = g.add_nodes();
  node->set_name("n");
  node->set_op_type(op.name());
  node->set_domain(op.domain());

  int next_input = 0;
  auto add_input = [&](const v1::ArgSpec& arg) {
    const std::string name = absl::StrCat("in", next_input);
    const InputPreset& p = presets[(scenario * 5 + next_input * 7) % presets.size()];
    ++next_input;
    bool int64_allowed = false;
    const v1::DataType dtype = ArgDType(op, arg, p.constant, &int64_allowed);
    node->add_inputs(name);
    if (p.constant && dtype == v1::DT_INT64) {
      v1::Tensor* t = g.add_initializers();
      t->set_name(name);
      t->set_dtype(v1::DT_INT64);
      t->add_dims(static_cast<int64_t>(p.values.size()));
      std::string raw(p.values.size() * sizeof(int64_t), '\0');
      if (!raw.empty()) std::memcpy(raw.data(), p.values.data(), raw.size());
      t->set_raw_data(raw);
      return;
    }
    v1::ValueInfo* vi = g.add_inputs();
    vi->set_name(name);
    vi->mutable_type()->set_dtype(dtype);
    if (p.ranked) SetDims(p.dims, vi->mutable_type()->mutable_shape());
  };
  for (int i = 0; i < op.inputs_size(); ++i) {
    const v1::ArgSpec& arg = op.inputs(i);
    switch (arg.arity()) {
      case v1::ARITY_OPTIONAL:
        // Omitted in odd scenarios: an empty name keeps the later inputs in place.
        if (scenario % 2 == 1) {
          node->add_inputs("");
        } else {
          add_input(arg);
        }
        break;
      case v1::ARITY_VARIADIC: {
        const int n = std::max<int>(arg.min_count(), 1 + scenario % 3);
        for (int k = 0; k < n && k < 8; ++k) add_input(arg);
        break;
      }
      default:
        add_input(arg);
        break;
    }
  }
  // Trailing omitted inputs are dropped, as writers of graphs do.
  while (node->inputs_size() > 0 && node->inputs(node->inputs_size() - 1).empty()) {
    node->mutable_inputs()->RemoveLast();
  }

  int next_output = 0;
  for (int i = 0; i < op.outputs_size(); ++i) {
    const v1::ArgSpec& arg = op.outputs(i);
    int n = 1;
    if (arg.arity() == v1::ARITY_VARIADIC) n = std::max<int>(arg.min_count(), 1 + scenario % 3);
    if (arg.arity() == v1::ARITY_OPTIONAL && scenario % 3 == 2) n = 0;
    for (int k = 0; k < n && k < 8; ++k) {
      const std::string name = absl::StrCat("out", next_output++);
      node->add_outputs(name);
      g.add_outputs()->set_name(name);
    }
  }
  if (node->outputs_size() == 0 && op.outputs_size() > 0) {
    node->add_outputs("out0");
    g.add_outputs()->set_name("out0");
  }

  for (const v1::AttributeSpec& spec : op.attributes()) {
    if (spec.required() || scenario >= 3) FillAttribute(spec, scenario, node->add_attributes());
  }
  return g;
}

}  // namespace fuzz
}  // namespace graphopt

// libFuzzer calls it once before the first input, in every target binary (they all link this
// library).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  graphopt::fuzz::QuietProtobuf();
  return 0;
}
