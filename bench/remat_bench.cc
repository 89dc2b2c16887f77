// Rematerialization figures on training graphs: for each model, the training graph (the
// gradient pass with loss = the sum of the first output, with respect to every float
// initializer and graph input), scheduled and memory-planned (schedule + plan_memory) without
// and with the rematerialize pass; prints the planned arena (peak planned activation memory)
// before and after and the extra flops.
//
//   remat_bench [--batch N] [--remat OPT=VALUE ...] [mlp50 | MODEL_DIR | MODEL.onnx] ...
//
// MODEL_DIR is a corpus model directory (.bazel/bin/models/corpus/resnet50 after
// `bazel build //models:resnet50`); its graph inputs get batch N (default 8). `mlp50` is a
// built-in 50-layer MLP (MatMul, Add, Relu; batch 32 N, width 512: activations, not weights,
// dominate its memory, as in a convolutional net). Default: mlp50.
// Flops are the cost model's (passes/cost_model.h: MatMul, Gemm, Conv; elementwise ops have
// no figure), summed over the graph; the pass's own note also weighs elementwise work.
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
#include "graph/proto_convert.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "passes/cost_model.h"
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

// Every float initializer and graph input, ';'-separated.
std::string AllTrainable(const v1::Graph& g) {
  std::vector<std::string> names;
  for (const v1::ValueInfo& in : g.inputs()) {
    if (in.type().dtype() == v1::DT_FLOAT32) names.push_back(in.name());
  }
  for (const v1::Tensor& t : g.initializers()) {
    if (t.dtype() == v1::DT_FLOAT32 && t.dims_size() > 0) names.push_back(t.name());
  }
  return absl::StrJoin(names, ";");
}

struct Figures {
  int64_t arena = 0;
  int64_t flops = 0;
  int64_t nodes = 0;
  int64_t remat_us = 0;
  std::vector<std::string> notes;
};

absl::StatusOr<Figures> Measure(const v1::Graph& proto, const OpRegistry& ops,
                                const PassRegistry& passes, const PassOptions* remat) {
  absl::StatusOr<Graph> graph = GraphFromProto(proto);
  if (!graph.ok()) return graph.status();
  std::vector<PassSpec> specs = {
      {"infer_type", {}},
      {"infer_shape", {}},
      {"gradient", {{"wrt", AllTrainable(proto)}, {"loss", proto.outputs(0).name()}}}};
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
  for (const PassRun& run : result->runs) {
    if (run.name == "rematerialize") {
      f.notes = run.messages;
      f.remat_us = run.wall_time_us;
    }
    if (run.name == "plan_memory" || run.name == "schedule") {
      for (const std::string& m : run.messages) f.notes.push_back(run.name + ": " + m);
    }
  }
  return f;
}

int Main(int argc, char** argv) {
  int64_t batch = 8;
  PassOptions remat;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
      batch = std::atoll(argv[++i]);
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
    absl::StatusOr<Figures> before = Measure(proto, ops, passes, nullptr);
    absl::StatusOr<Figures> after =
        before.ok() ? Measure(proto, ops, passes, &remat) : before.status();
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
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace graphopt

int main(int argc, char** argv) { return graphopt::Main(argc, argv); }
