// Shape inference of one node through a rule-language shape rule vs the builtin C++ shape
// function of the same op (the example rules of rules/example_rules.h, which reproduce the
// builtins). Both sides run InferNodeShapes on the same graph, so the context set-up is the
// same; report the rule/builtin time ratio per op.
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "ops/builtin_ops.h"
#include "rules/example_rules.h"
#include "rules/op_compiler.h"

namespace graphopt {

// The builtin ops plus the rule versions of six of them (domain "rules").
const OpRegistry& Registry() {
  static const OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    if (!RegisterBuiltinOps(r).ok()) std::abort();
    const std::pair<const char*, const char*> rules[] = {
        {"Conv", example_rules::kConvRule},       {"Concat", example_rules::kConcatRule},
        {"Reshape", example_rules::kReshapeRule}, {"Gemm", example_rules::kGemmRule},
        {"Softmax", example_rules::kSoftmaxRule}, {"Add", example_rules::kAddRule}};
    for (const auto& [name, text] : rules) {
      v1::OpDescriptor d = r->Find("", name)->descriptor;
      d.set_domain("rules");
      d.mutable_shape_rule()->set_expr(text);
      absl::StatusOr<OpDef> def = CompileOpDescriptor(d, *r);
      if (!def.ok() || !r->Register(*std::move(def)).ok()) std::abort();
    }
    return r;
  }();
  return *registry;
}

Dims ParseDims(const std::string& s) {
  Dims dims;
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string d = s.substr(pos, comma - pos);
    if (!d.empty() && (std::isdigit(static_cast<unsigned char>(d.back())) != 0)) {
      dims.push_back(Dim::Known(std::stoll(d)));
    } else {
      dims.push_back(Dim::Symbol(d));
    }
    pos = comma + 1;
  }
  return dims;
}

v1::Attribute Ints(std::vector<int64_t> v) {
  v1::Attribute a;
  for (int64_t x : v) a.mutable_ints()->add_values(x);
  return a;
}
v1::Attribute Int(int64_t v) {
  v1::Attribute a;
  a.set_i(v);
  return a;
}

struct Case {
  const char* op;
  std::vector<std::string> inputs;  // "batch,64,56,56" or "=0,-1" (int64 constant)
  AttributeMap attrs;
};

Case GetCase(const std::string& name) {
  if (name == "conv") {
    return {"Conv", {"batch,64,56,56", "64,64,3,3", "64"},
            {{"pads", Ints({1, 1, 1, 1})}, {"strides", Ints({1, 1})}}};
  }
  if (name == "conv_known") {
    return {"Conv", {"1,64,56,56", "128,64,3,3", "128"},
            {{"pads", Ints({1, 1, 1, 1})}, {"strides", Ints({2, 2})}}};
  }
  if (name == "concat") {
    return {"Concat",
            {"batch,16,28,28", "batch,32,28,28", "batch,16,28,28", "batch,64,28,28"},
            {{"axis", Int(1)}}};
  }
  if (name == "reshape") return {"Reshape", {"batch,3,4", "=0,-1"}, {}};
  if (name == "gemm") return {"Gemm", {"batch,512", "1000,512", "1000"}, {{"transB", Int(1)}}};
  if (name == "softmax") return {"Softmax", {"batch,seq,64"}, {}};
  if (name == "add") return {"Add", {"batch,seq,64", "64"}, {}};
  std::abort();
}

// One node of `case_name` (builtin or rule version) in its own graph, inferred once.
struct Setup {
  Graph graph;
  NodeId node;
  ValueId out;
  const OpDef* op = nullptr;
  DimsValueTable dims;
  absl::Status status;
};

std::unique_ptr<Setup> MakeSetup(const std::string& case_name, bool rule) {
  const OpRegistry& registry = Registry();
  const Case c = GetCase(case_name);
  auto s = std::make_unique<Setup>();
  Graph& g = s->graph;
  std::vector<ValueId> inputs;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    ValueId v = *g.AddValue("in" + std::to_string(i));
    const std::string& spec = c.inputs[i];
    if (spec[0] == '=') {
      Dims values = ParseDims(spec.substr(1));
      v1::Tensor t;
      t.set_dtype(v1::DT_INT64);
      t.add_dims(static_cast<int64_t>(values.size()));
      std::string raw(values.size() * 8, '\0');
      for (size_t k = 0; k < values.size(); ++k) {
        const int64_t x = values[k].size();
        std::memcpy(&raw[k * 8], &x, 8);
      }
      t.set_raw_data(raw);
      g.mutable_value(v).type.dtype = v1::DT_INT64;
      g.mutable_value(v).type.shape = Dims{Dim::Known(static_cast<int64_t>(values.size()))};
      g.SetInitializer(v, std::move(t));
    } else {
      g.AddGraphInput(v);
      g.mutable_value(v).type.dtype = v1::DT_FLOAT32;
      g.mutable_value(v).type.shape = ParseDims(spec);
    }
    inputs.push_back(v);
  }
  s->out = *g.AddValue("y");
  const std::string domain = rule ? "rules" : "";
  s->node = *g.AddNode("n", c.op, domain, inputs, {s->out}, c.attrs);
  s->op = registry.Find(domain, c.op);
  s->dims = InitialDimsValues(g);
  s->status = InferNodeShapes(g, s->node, *s->op, &s->dims);
  return s;
}

void BM_ShapeInference(benchmark::State& state, const std::string& case_name, bool rule) {
  std::unique_ptr<Setup> s = MakeSetup(case_name, rule);
  if (!s->status.ok()) {
    state.SkipWithError(std::string(s->status.message()).c_str());
    return;
  }
  for (auto _ : state) {
    absl::Status st = InferNodeShapes(s->graph, s->node, *s->op, &s->dims);
    benchmark::DoNotOptimize(st);
  }
  state.SetLabel(TensorTypeToString(s->graph.value(s->out).type));
}

#define RULE_BENCHMARKS(name)                                            \
  BENCHMARK_CAPTURE(BM_ShapeInference, name##_builtin, #name, false);    \
  BENCHMARK_CAPTURE(BM_ShapeInference, name##_rule, #name, true)

RULE_BENCHMARKS(conv);
RULE_BENCHMARKS(conv_known);
RULE_BENCHMARKS(concat);
RULE_BENCHMARKS(reshape);
RULE_BENCHMARKS(gemm);
RULE_BENCHMARKS(softmax);
RULE_BENCHMARKS(add);

}  // namespace graphopt

// `--loop=CASE,rule|builtin,N` runs N inferences without the benchmark library, for counting
// instructions per call under callgrind (difference of two N). Otherwise Google Benchmark.
int main(int argc, char** argv) {
  if (argc == 2 && std::strncmp(argv[1], "--loop=", 7) == 0) {
    const std::string arg = argv[1] + 7;
    const size_t a = arg.find(','), b = arg.rfind(',');
    std::unique_ptr<graphopt::Setup> s =
        graphopt::MakeSetup(arg.substr(0, a), arg.substr(a + 1, b - a - 1) == "rule");
    if (!s->status.ok()) return 1;
    const long n = std::stol(arg.substr(b + 1));
    for (long i = 0; i < n; ++i) {
      absl::Status st = graphopt::InferNodeShapes(s->graph, s->node, *s->op, &s->dims);
      benchmark::DoNotOptimize(st);
    }
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
