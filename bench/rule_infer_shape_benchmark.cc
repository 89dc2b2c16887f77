// The infer_shape pass with the builtin C++ shape functions ("cpp") against the same pass with
// ten of them (Add, MatMul, Gemm, Conv, Transpose, Concat, Reshape, ReduceMean, Softmax,
// Gather) replaced by the rule-language shape rules of rules/dogfood/onnx_ops.pbtxt ("rule").
// Target (issue 4, item 9): rule evaluation adds at most 2x to infer_shape time.
//
//   rule_infer_shape_benchmark [--ops=rules/dogfood/onnx_ops.pbtxt]
//       [--corpus_dir=.bazel/bin/models/corpus] [benchmark flags]
//
// Graphs: resnet50, mobilenet_v2, transformer_encoder and mlp from //models:corpus, as exported
// and with their input dims made symbolic ("@sym"), and a synthetic graph made of the ten ops
// (24 of every 25 nodes; symbolic batch, and "@static" with batch 8); and, on the synthetic
// graph, the nodes of each op alone ("InferShapeOfOp"). bench/rules_vs_cpp.sh runs it and
// prints the medians and the rule/cpp ratios; --loop (below) is for counting instructions.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "graph/proto_convert.h"
#include "onnx/onnx_pb.h"
#include "ops/builtin_ops.h"
#include "passes/infer_shape_pass.h"
#include "passes/pass.h"
#include "rules/dogfood/onnx_ops.h"
#include "tools/shape_agreement/agreement.h"
#include "valgrind/callgrind.h"

namespace graphopt {
namespace {

constexpr int64_t kWidth = 64;

v1::Attribute Ints(const char* name, std::vector<int64_t> v) {
  v1::Attribute a;
  a.set_name(name);
  for (int64_t x : v) a.mutable_ints()->add_values(x);
  return a;
}

v1::Attribute Int(const char* name, int64_t v) {
  v1::Attribute a;
  a.set_name(name);
  a.set_i(v);
  return a;
}

void AddNode(v1::Graph& g, const char* op, std::vector<std::string> inputs, std::string output,
             std::vector<v1::Attribute> attrs = {}) {
  v1::Node* n = g.add_nodes();
  n->set_op_type(op);
  for (std::string& in : inputs) n->add_inputs(std::move(in));
  n->add_outputs(std::move(output));
  for (v1::Attribute& a : attrs) *n->add_attributes() = std::move(a);
}

void AddFloats(v1::Graph& g, const char* name, std::vector<int64_t> dims) {
  v1::Tensor* t = g.add_initializers();
  t->set_name(name);
  t->set_dtype(v1::DT_FLOAT32);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  t->set_raw_data(std::string(n * 4, '\0'));
}

void AddInts(v1::Graph& g, const char* name, std::vector<int64_t> values) {
  v1::Tensor* t = g.add_initializers();
  t->set_name(name);
  t->set_dtype(v1::DT_INT64);
  t->add_dims(static_cast<int64_t>(values.size()));
  t->set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), values.size() * 8));
}

// Blocks of 25 nodes, all but one (Shape) of the ten ops, over h: float32[batch, 16, 64] and
// tokens: int64[batch, 16]:
//   attention-like: MatMul, Add, Reshape, Transpose x2, MatMul, Softmax, MatMul, Transpose,
//   Reshape (0, 0, -1); ReduceMean, Concat, MatMul; an embedding Gather and Add; Reshape to
//   NCHW, Conv; Shape -> Gather -> Concat -> Reshape back (shape-tensor contents); Reshape to
//   [batch, 1024], Gemm, Reshape to [batch, 1, 64], Add (broadcasting). Every dim stays known
//   (or the symbol batch).
v1::Graph MakeRuleOpsGraph(int64_t blocks, bool symbolic_batch) {
  v1::Graph g;
  g.set_name("rule_ops");
  v1::OpsetImport* opset = g.add_opset_imports();
  opset->set_version(17);
  for (const auto& [name, dtype, width] :
       {std::tuple<const char*, v1::DataType, int64_t>{"x", v1::DT_FLOAT32, kWidth},
        std::tuple<const char*, v1::DataType, int64_t>{"tokens", v1::DT_INT64, 0}}) {
    v1::ValueInfo* in = g.add_inputs();
    in->set_name(name);
    in->mutable_type()->set_dtype(dtype);
    v1::Shape* shape = in->mutable_type()->mutable_shape();
    if (symbolic_batch) {
      shape->add_dims()->set_symbol("batch");
    } else {
      shape->add_dims()->set_size(8);
    }
    shape->add_dims()->set_size(16);
    if (width > 0) shape->add_dims()->set_size(width);
  }
  AddFloats(g, "w", {kWidth, kWidth});
  AddFloats(g, "w65", {kWidth + 1, kWidth});
  AddFloats(g, "w2", {kWidth, 16 * kWidth});
  AddFloats(g, "bias", {kWidth});
  AddFloats(g, "table", {100, kWidth});
  AddFloats(g, "cw", {kWidth, kWidth, 3, 3});
  AddInts(g, "zero", {0});
  AddInts(g, "heads", {0, 16, 4, 16});
  AddInts(g, "merge", {0, 0, -1});
  AddInts(g, "nchw", {0, kWidth, 4, 4});
  AddInts(g, "rest", {16, kWidth});
  AddInts(g, "flat", {-1, 16 * kWidth});
  AddInts(g, "row", {0, 1, kWidth});
  std::string h = "x";
  for (int64_t i = 0; i < blocks; ++i) {
    const std::string p = absl::StrCat("b", i, "_");
    AddNode(g, "MatMul", {h, "w"}, p + "q");
    AddNode(g, "Add", {p + "q", "bias"}, p + "q1");
    AddNode(g, "Reshape", {p + "q1", "heads"}, p + "r");
    AddNode(g, "Transpose", {p + "r"}, p + "qt", {Ints("perm", {0, 2, 1, 3})});
    AddNode(g, "Transpose", {p + "r"}, p + "kt", {Ints("perm", {0, 2, 3, 1})});
    AddNode(g, "MatMul", {p + "qt", p + "kt"}, p + "s");
    AddNode(g, "Softmax", {p + "s"}, p + "sm", {Int("axis", -1)});
    AddNode(g, "MatMul", {p + "sm", p + "qt"}, p + "o");
    AddNode(g, "Transpose", {p + "o"}, p + "ot", {Ints("perm", {0, 2, 1, 3})});
    AddNode(g, "Reshape", {p + "ot", "merge"}, p + "f");
    AddNode(g, "ReduceMean", {p + "f"}, p + "m", {Ints("axes", {-1})});
    AddNode(g, "Concat", {p + "f", p + "m"}, p + "c", {Int("axis", -1)});
    AddNode(g, "MatMul", {p + "c", "w65"}, p + "c2");
    AddNode(g, "Gather", {"table", "tokens"}, p + "e");
    AddNode(g, "Add", {p + "c2", p + "e"}, p + "g");
    AddNode(g, "Reshape", {p + "g", "nchw"}, p + "x4");
    AddNode(g, "Conv", {p + "x4", "cw", "bias"}, p + "cv", {Ints("pads", {1, 1, 1, 1})});
    AddNode(g, "Shape", {h}, p + "sh");
    AddNode(g, "Gather", {p + "sh", "zero"}, p + "bd");
    AddNode(g, "Concat", {p + "bd", "rest"}, p + "tgt", {Int("axis", 0)});
    AddNode(g, "Reshape", {p + "cv", p + "tgt"}, p + "y");
    AddNode(g, "Reshape", {p + "y", "flat"}, p + "y2");
    AddNode(g, "Gemm", {p + "y2", "w2", "bias"}, p + "gm", {Int("transB", 1)});
    AddNode(g, "Reshape", {p + "gm", "row"}, p + "gr");
    AddNode(g, "Add", {p + "y", p + "gr"}, p + "out");
    h = p + "out";
  }
  g.add_outputs()->set_name(h);
  return g;
}

struct Fixture {
  std::string name;
  Graph graph;
};

// Types are inferred once (the infer_type pass runs before infer_shape in every pipeline).
bool InferTypes(Graph& graph, const OpRegistry& ops) {
  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  if (!order.ok()) return false;
  for (NodeId id : *order) {
    const Node& n = graph.node(id);
    const OpDef* op = ops.Find(n.domain, n.op_type);
    if (op == nullptr || !InferNodeTypes(graph, id, *op).ok()) return false;
  }
  return true;
}

void BM_InferShape(benchmark::State& state, Graph* graph, const OpRegistry* ops) {
  absl::StatusOr<std::unique_ptr<Pass>> pass = InferShapePassInfo().factory({});
  if (!pass.ok()) std::abort();
  PassContext context;
  context.ops = ops;
  for (auto _ : state) {
    absl::StatusOr<bool> r = (*pass)->Run(*graph, context);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(r);
  }
  const double nodes = graph->num_live_nodes();
  state.counters["nodes"] = nodes;
  state.counters["per_node"] = benchmark::Counter(
      nodes, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// InferNodeShapes over the nodes of one op only (their inputs as the C++ functions inferred
// them): the per-op cost of a rule against its C++ function.
void BM_InferShapeOfOp(benchmark::State& state, Graph* graph, std::vector<NodeId> nodes,
                       const OpDef* op, DimsValueTable dims_values) {
  for (auto _ : state) {
    for (NodeId id : nodes) {
      absl::Status s = InferNodeShapes(*graph, id, *op, &dims_values);
      if (!s.ok()) {
        state.SkipWithError(std::string(s.message()).c_str());
        return;
      }
    }
  }
  state.counters["per_node"] = benchmark::Counter(
      static_cast<double>(nodes.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Registers BM_InferShapeOfOp for every op of `ops_of_interest` occurring in `graph`.
bool RegisterPerOp(const std::string& name, Graph* graph, const OpRegistry& cpp,
                   const OpRegistry& rule, const std::vector<std::string>& ops_of_interest) {
  absl::StatusOr<std::vector<NodeId>> order = graph->TopologicalOrder();
  if (!order.ok()) return false;
  DimsValueTable dims_values = InitialDimsValues(*graph);
  for (NodeId id : *order) {
    const Node& n = graph->node(id);
    if (!InferNodeShapes(*graph, id, *cpp.Find(n.domain, n.op_type), &dims_values).ok()) {
      return false;
    }
  }
  for (const std::string& op : ops_of_interest) {
    std::vector<NodeId> nodes;
    for (NodeId id : *order) {
      if (graph->node(id).domain.empty() && graph->node(id).op_type == op) nodes.push_back(id);
    }
    if (nodes.empty()) continue;
    for (const auto& [label, ops] : {std::pair<const char*, const OpRegistry*>{"cpp", &cpp},
                                     std::pair<const char*, const OpRegistry*>{"rule", &rule}}) {
      benchmark::RegisterBenchmark(absl::StrCat("InferShapeOfOp/", name, "/", op, "/", label)
                                       .c_str(),
                                   BM_InferShapeOfOp, graph, nodes, ops->Find("", op),
                                   dims_values)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
  return true;
}

// The fixture graphs: "resnet50", "resnet50@sym", ... (the corpus models, as exported and with
// symbolic input dims), "rule_ops_synthetic" (symbolic batch) and "rule_ops_synthetic@static".
// Only the named ones are built when `only` is non-empty.
bool MakeFixtures(const std::string& corpus_dir, const std::string& only,
                  std::vector<std::unique_ptr<Fixture>>* fixtures) {
  for (const char* model : {"resnet50", "mobilenet_v2", "transformer_encoder", "mlp"}) {
    if (!only.empty() && only != model && only != absl::StrCat(model, "@sym")) continue;
    const std::string path = absl::StrCat(corpus_dir, "/", model, "/model.onnx");
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    onnx::ModelProto proto;
    if (!in || !proto.ParseFromString(bytes.str())) {
      std::fprintf(stderr, "error: cannot read %s (build //models:corpus; pass --corpus_dir)\n",
                   path.c_str());
      return false;
    }
    for (bool symbolic : {false, true}) {
      const std::string name = absl::StrCat(model, symbolic ? "@sym" : "");
      if (!only.empty() && only != name) continue;
      absl::StatusOr<Graph> g = shape_agreement::ImportForInference(
          symbolic ? shape_agreement::SymbolizeInputs(proto) : proto);
      if (!g.ok()) {
        std::fprintf(stderr, "error: %s: %s\n", model, g.status().ToString().c_str());
        return false;
      }
      fixtures->push_back(std::make_unique<Fixture>(Fixture{name, *std::move(g)}));
    }
  }
  for (bool symbolic : {true, false}) {
    const std::string name = symbolic ? "rule_ops_synthetic" : "rule_ops_synthetic@static";
    if (!only.empty() && only != name) continue;
    absl::StatusOr<Graph> g = GraphFromProto(MakeRuleOpsGraph(40, symbolic));
    if (!g.ok()) {
      std::fprintf(stderr, "error: synthetic graph: %s\n", g.status().ToString().c_str());
      return false;
    }
    fixtures->push_back(std::make_unique<Fixture>(Fixture{name, *std::move(g)}));
  }
  if (fixtures->empty()) {
    std::fprintf(stderr, "error: no fixture named '%s'\n", only.c_str());
    return false;
  }
  return true;
}

// `--loop=GRAPH,IMPL,N` (IMPL: cpp or rule) runs the infer_shape pass N times over GRAPH, and
// `--loop=GRAPH,OP,IMPL,N` InferNodeShapes over GRAPH's OP nodes N times, with callgrind's
// instrumentation on only around the loop (bench/rule_instructions.sh).
int Loop(const std::string& spec, const std::string& corpus_dir, const OpRegistry& cpp,
         const OpRegistry& rule) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t comma = spec.find(',', start);
    parts.push_back(spec.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (parts.size() != 3 && parts.size() != 4) {
    std::fprintf(stderr, "error: --loop=GRAPH[,OP],cpp|rule,N\n");
    return 2;
  }
  const std::string& impl = parts[parts.size() - 2];
  const long n = std::atol(parts.back().c_str());
  const OpRegistry* ops = impl == "rule" ? &rule : &cpp;
  std::vector<std::unique_ptr<Fixture>> fixtures;
  if (!MakeFixtures(corpus_dir, parts[0], &fixtures)) return 1;
  Graph& graph = fixtures[0]->graph;
  if (!InferTypes(graph, cpp)) return 1;
  if (parts.size() == 3) {
    absl::StatusOr<std::unique_ptr<Pass>> pass = InferShapePassInfo().factory({});
    if (!pass.ok()) return 1;
    PassContext context;
    context.ops = ops;
    CALLGRIND_START_INSTRUMENTATION;
    for (long i = 0; i < n; ++i) {
      absl::StatusOr<bool> r = (*pass)->Run(graph, context);
      if (!r.ok()) {
        std::fprintf(stderr, "error: %s\n", r.status().ToString().c_str());
        return 1;
      }
      benchmark::DoNotOptimize(r);
    }
    CALLGRIND_STOP_INSTRUMENTATION;
    return 0;
  }
  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  if (!order.ok()) return 1;
  DimsValueTable dims_values = InitialDimsValues(graph);
  std::vector<NodeId> nodes;
  for (NodeId id : *order) {
    const Node& node = graph.node(id);
    if (!InferNodeShapes(graph, id, *cpp.Find(node.domain, node.op_type), &dims_values).ok()) {
      return 1;
    }
    if (node.domain.empty() && node.op_type == parts[1]) nodes.push_back(id);
  }
  const OpDef* op = ops->Find("", parts[1]);
  if (op == nullptr || nodes.empty()) {
    std::fprintf(stderr, "error: no %s nodes\n", parts[1].c_str());
    return 1;
  }
  CALLGRIND_START_INSTRUMENTATION;
  for (long i = 0; i < n; ++i) {
    for (NodeId id : nodes) {
      absl::Status s = InferNodeShapes(graph, id, *op, &dims_values);
      if (!s.ok()) {
        std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
        return 1;
      }
    }
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  std::printf("nodes %zu\n", nodes.size());
  return 0;
}

int Main(int argc, char** argv) {
  std::string ops_path = "rules/dogfood/onnx_ops.pbtxt";
  std::string corpus_dir = ".bazel/bin/models/corpus";
  std::string loop;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--ops=", 0) == 0) {
      ops_path = a.substr(6);
    } else if (a.rfind("--corpus_dir=", 0) == 0) {
      corpus_dir = a.substr(13);
    } else if (a.rfind("--loop=", 0) == 0) {
      loop = a.substr(7);
    } else {
      rest.push_back(argv[i]);
    }
  }
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;

  OpRegistry cpp;
  if (!RegisterBuiltinOps(&cpp).ok()) std::abort();
  absl::StatusOr<v1::OpDescriptorList> list = dogfood::ReadOpDescriptorList(ops_path);
  if (!list.ok()) {
    std::fprintf(stderr, "error: %s (pass --ops=PATH)\n", list.status().ToString().c_str());
    return 1;
  }
  OpRegistry rule;
  if (absl::Status s = dogfood::RegisterWithRuleOps(cpp, *list, &rule); !s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.ToString().c_str());
    return 1;
  }
  if (!loop.empty()) return Loop(loop, corpus_dir, cpp, rule);

  std::vector<std::unique_ptr<Fixture>> fixtures;
  if (!MakeFixtures(corpus_dir, "", &fixtures)) return 1;
  for (auto& f : fixtures) {
    if (!InferTypes(f->graph, cpp)) {
      std::fprintf(stderr, "error: %s: type inference failed\n", f->name.c_str());
      return 1;
    }
    for (const auto& [label, ops] : {std::pair<const char*, const OpRegistry*>{"cpp", &cpp},
                                     std::pair<const char*, const OpRegistry*>{"rule", &rule}}) {
      benchmark::RegisterBenchmark(absl::StrCat("InferShape/", f->name, "/", label).c_str(),
                                   BM_InferShape, &f->graph, ops)
          ->Unit(benchmark::kMicrosecond)
          ->UseRealTime();
    }
  }
  for (auto& f : fixtures) {
    if (f->name.rfind("rule_ops_synthetic", 0) != 0) continue;
    if (!RegisterPerOp(f->name, &f->graph, cpp, rule, dogfood::DogfoodOps())) {
      std::fprintf(stderr, "error: %s: shape inference failed\n", f->name.c_str());
      return 1;
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
