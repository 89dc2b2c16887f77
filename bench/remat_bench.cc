// Rematerialization figures on training graphs: for each model, the training graph (the
// gradient pass with loss = the sum of the first output, with respect to every float
// initializer and graph input), scheduled and memory-planned (schedule + plan_memory) without
// and with the rematerialize pass; prints the planned arena (peak planned activation memory)
// before and after and the extra flops.
//
//   remat_bench [--batch N] [--explain] [--no_biases] [--remat OPT=VALUE ...] [mlp50 | MODEL_DIR | MODEL.onnx] ...
//
// MODEL_DIR is a corpus model directory (.bazel/bin/models/corpus/resnet50 after
// `bazel build //models:resnet50`); its graph inputs get batch N (default 8). `mlp50` is a
// built-in 50-layer MLP (MatMul, Add, Relu; batch 32 N, width 512: activations, not weights,
// dominate its memory, as in a convolutional net). Default: mlp50.
// --explain lists the values live where the planned bytes peak; --no_biases differentiates with
// respect to the weights of rank 2 and more only (and the inputs).
// Flops are the cost model's (passes/cost_model.h: MatMul, Gemm, Conv; elementwise ops have
// no figure), summed over the graph; the pass's own note also weighs elementwise work.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/corpus_model.h"
#include "graph/liveness.h"
#include "graph/proto_convert.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/cost_model.h"
#include "passes/memory_util.h"
#include "passes/pipeline.h"

namespace graphopt {
namespace {

v1::ValueInfo FloatInfo(const std::string& name, const std::vector<int64_t>& dims) {
  v1::ValueInfo info;
  info.set_name(name);
  info.mutable_type()->set_dtype(v1::DT_FLOAT32);
  v1::Shape* shape = info.mutable_type()->mutable_shape();
  for (int64_t d : dims) shape->add_dims()->set_size(d);
  return info;
}

v1::Node MakeNode(const std::string& op, std::vector<std::string> in, const std::string& out) {
  v1::Node n;
  n.set_name(out + "_node");
  n.set_op_type(op);
  for (std::string& s : in) n.add_inputs(std::move(s));
  n.add_outputs(out);
  return n;
}

// a_i = Relu(a_{i-1} W_i + b_i); weights as graph inputs (their values do not matter here).
v1::Graph DeepMlp(int layers, int64_t batch, int64_t width) {
  v1::Graph g;
  g.set_name("mlp50");
  *g.add_inputs() = FloatInfo("x", {batch, width});
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string w = absl::StrCat("w", i), b = absl::StrCat("b", i);
    *g.add_inputs() = FloatInfo(w, {width, width});
    *g.add_inputs() = FloatInfo(b, {width});
    const std::string h = absl::StrCat("h", i), s = absl::StrCat("s", i),
                      a = absl::StrCat("a", i);
    *g.add_nodes() = MakeNode("MatMul", {prev, w}, h);
    *g.add_nodes() = MakeNode("Add", {h, b}, s);
    *g.add_nodes() = MakeNode("Relu", {s}, a);
    prev = a;
  }
  *g.add_outputs() = FloatInfo(prev, {batch, width});
  return g;
}

// Graph inputs (not initializers) get `batch` as their first dim; inferred types are dropped
// so that inference recomputes them for that batch.
void SetBatch(v1::Graph& g, int64_t batch) {
  for (v1::ValueInfo& in : *g.mutable_inputs()) {
    v1::Shape* shape = in.mutable_type()->mutable_shape();
    if (shape->dims_size() > 0) shape->mutable_dims(0)->set_size(batch);
  }
  for (v1::ValueInfo& out : *g.mutable_outputs()) out.mutable_type()->clear_shape();
  g.clear_value_info();
}

// Every float graph input and weight (float initializer of rank `min_rank` or more: 2 leaves
// biases out), ';'-separated.
std::string AllTrainable(const v1::Graph& g, int min_rank) {
  std::vector<std::string> names;
  for (const v1::ValueInfo& in : g.inputs()) {
    if (in.type().dtype() == v1::DT_FLOAT32) names.push_back(in.name());
  }
  for (const v1::Tensor& t : g.initializers()) {
    if (t.dtype() == v1::DT_FLOAT32 && t.dims_size() >= min_rank) names.push_back(t.name());
  }
  return absl::StrJoin(names, ";");
}

// The values live at the step where the planned bytes peak, largest first (at most `limit`).
std::vector<std::string> ExplainPeak(const Graph& graph, int limit) {
  const std::vector<NodeId> order = *graph.TopologicalOrder();
  const Liveness live = ComputeLiveness(graph, order);
  std::vector<int64_t> bytes(graph.num_value_slots(), 0);
  std::vector<int64_t> at_step(order.size() + 1, 0);
  std::string why;
  for (int v = 0; v < graph.num_value_slots(); ++v) {
    const Value& value = graph.value(ValueId(v));
    if (!value.alive || !value.producer.valid() || value.graph_output_count > 0) continue;
    if (live.def_step[v] < 0) continue;
    bytes[v] = BoundedBytes(value.type, DimBounds(), &why).value_or(0);
    const int32_t last = std::max(live.def_step[v], live.last_use[v]);
    at_step[live.def_step[v]] += bytes[v];
    at_step[last + 1] -= bytes[v];
  }
  int64_t running = 0, peak = -1;
  int32_t peak_step = 0;
  for (size_t s = 0; s < order.size(); ++s) {
    running += at_step[s];
    if (running > peak) {
      peak = running;
      peak_step = static_cast<int32_t>(s);
    }
  }
  std::vector<std::pair<int64_t, int>> live_values;
  for (int v = 0; v < graph.num_value_slots(); ++v) {
    if (bytes[v] == 0) continue;
    const int32_t last = std::max(live.def_step[v], live.last_use[v]);
    if (live.def_step[v] <= peak_step && peak_step <= last) live_values.emplace_back(-bytes[v], v);
  }
  std::sort(live_values.begin(), live_values.end());
  std::vector<std::string> out = {absl::StrCat(
      "peak ", peak, " bytes at step ", peak_step, " of ", order.size(), " (",
      graph.node(order[peak_step]).name.str(), "), ", live_values.size(), " values live:")};
  for (int i = 0; i < static_cast<int>(live_values.size()) && i < limit; ++i) {
    const Value& value = graph.value(ValueId(live_values[i].second));
    const Node& p = graph.node(value.producer);
    out.push_back(absl::StrCat("  ", -live_values[i].first, " ", value.name, " (",
                               p.op_type.str(), ", steps ", live.def_step[live_values[i].second],
                               "-", live.last_use[live_values[i].second], ")"));
  }
  return out;
}

struct Figures {
  int64_t arena = 0;
  int64_t flops = 0;
  int64_t nodes = 0;
  int64_t remat_us = 0;
  std::vector<std::string> notes;
  std::vector<std::string> explain;
};

absl::StatusOr<Figures> Measure(const v1::Graph& proto, const OpRegistry& ops,
                                const PassRegistry& passes, const PassOptions* remat,
                                bool explain, int min_rank) {
  absl::StatusOr<Graph> graph = GraphFromProto(proto);
  if (!graph.ok()) return graph.status();
  std::vector<PassSpec> specs = {
      {"infer_type", {}},
      {"infer_shape", {}},
      {"gradient", {{"wrt", AllTrainable(proto, min_rank)}, {"loss", proto.outputs(0).name()}}}};
  if (remat != nullptr) specs.push_back({"rematerialize", *remat});
  specs.push_back({"schedule", {}});
  specs.push_back({"plan_memory", {}});
  absl::StatusOr<PipelineResult> result = RunPipeline(*graph, specs, passes, ops);
  if (!result.ok()) return result.status();
  Figures f;
  if (!graph->memory_plan || graph->memory_plan->arenas_size() != 1) {
    return absl::InternalError("expected one arena in the memory plan");
  }
  f.arena = graph->memory_plan->arenas(0).size_bytes();
  const CostTotals totals = SumCosts(*graph, EstimateCosts(*graph, ops));
  f.flops = totals.flops;
  f.nodes = graph->num_live_nodes();
  if (explain) f.explain = ExplainPeak(*graph, 25);
  for (const PassRun& run : result->runs) {
    if (run.name == "rematerialize") {
      f.notes = run.messages;
      f.remat_us = run.wall_time_us;
    }
    if (run.name == "plan_memory" || run.name == "schedule" || run.name == "gradient") {
      for (const std::string& m : run.messages) f.notes.push_back(run.name + ": " + m);
    }
  }
  return f;
}

int Main(int argc, char** argv) {
  int64_t batch = 8;
  PassOptions remat;
  bool explain = false;
  int min_rank = 1;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      batch = std::atoll(argv[++i]);
    } else if (std::strcmp(argv[i], "--no_biases") == 0) {
      min_rank = 2;
    } else if (std::strcmp(argv[i], "--explain") == 0) {
      explain = true;
    } else if (std::strcmp(argv[i], "--remat") == 0 && i + 1 < argc) {
      std::pair<std::string, std::string> kv = absl::StrSplit(argv[++i], absl::MaxSplits('=', 1));
      remat[kv.first] = kv.second;
    } else {
      models.push_back(argv[i]);
    }
  }
  if (models.empty()) models.push_back("mlp50");
  OpRegistry ops;
  PassRegistry passes;
  if (absl::Status s = RegisterBuiltinOps(&ops); !s.ok()) return 1;
  if (absl::Status s = RegisterBuiltinPasses(&passes); !s.ok()) return 1;
  int failures = 0;
  for (const std::string& model : models) {
    v1::Graph proto;
    if (model == "mlp50") {
      proto = DeepMlp(50, 32 * batch, 512);
    } else {
      std::string dir = model;
      if (absl::EndsWith(dir, "/model.onnx")) dir.resize(dir.size() - 11);
      absl::StatusOr<CorpusModel> m = LoadCorpusModel(dir);
      if (!m.ok()) {
        std::fprintf(stderr, "%s: %s\n", model.c_str(), m.status().ToString().c_str());
        ++failures;
        continue;
      }
      proto = std::move(m->graph);
      SetBatch(proto, batch);
    }
    absl::StatusOr<Figures> before = Measure(proto, ops, passes, nullptr, explain, min_rank);
    absl::StatusOr<Figures> after =
        before.ok() ? Measure(proto, ops, passes, &remat, explain, min_rank) : before.status();
    if (!after.ok()) {
      std::fprintf(stderr, "%s: %s\n", model.c_str(), after.status().ToString().c_str());
      ++failures;
      continue;
    }
    const double mib = 1024.0 * 1024.0;
    std::printf("%s (batch %lld): training graph %lld nodes -> %lld with rematerialization\n",
                model.c_str(), static_cast<long long>(batch),
                static_cast<long long>(before->nodes), static_cast<long long>(after->nodes));
    std::printf("  peak planned activation memory (arena): %.1f MiB -> %.1f MiB (%.2fx lower)\n",
                before->arena / mib, after->arena / mib,
                after->arena > 0 ? static_cast<double>(before->arena) / after->arena : 0.0);
    std::printf("  flops (cost model): %.3f G -> %.3f G (+%.3f G, +%.1f%%)\n", before->flops / 1e9,
                after->flops / 1e9, (after->flops - before->flops) / 1e9,
                before->flops > 0 ? 100.0 * (after->flops - before->flops) / before->flops : 0.0);
    std::printf("  rematerialize pass: %lld us\n", static_cast<long long>(after->remat_us));
    for (const std::string& note : after->notes) std::printf("  | %s\n", note.c_str());
    for (const std::string& note : before->notes) std::printf("  | before: %s\n", note.c_str());
    for (const std::string& line : before->explain) std::printf("  before: %s\n", line.c_str());
    for (const std::string& line : after->explain) std::printf("  after: %s\n", line.c_str());
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
