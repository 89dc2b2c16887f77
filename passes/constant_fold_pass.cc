#include "passes/constant_fold_pass.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/inference.h"
#include "passes/effects.h"
#include "passes/rewrite_util.h"
#include "runtime/executor.h"

namespace graphopt {
namespace {

// Beyond max_folded_bytes, what a fold's run may charge for its buffers' bookkeeping
// (runtime::kBufferOverheadBytes each): an output of exactly max_folded_bytes still folds.
constexpr int64_t kFoldBookkeepingBytes = 64 << 10;

struct Options {
  int64_t max_folded_bytes = kDefaultMaxFoldedBytes;
  int64_t max_growth_bytes = kDefaultMaxFoldGrowthBytes;
};

// ONNX ops that draw random numbers: never folded, whatever a tenant's descriptor says.
bool IsRandomOp(const Node& n) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return false;
  for (const char* op : {"RandomNormal", "RandomNormalLike", "RandomUniform",
                         "RandomUniformLike", "Multinomial", "Bernoulli"}) {
    if (n.op_type == op) return true;
  }
  return false;
}

bool HasSubgraph(const Node& n) {
  for (const auto& [name, attr] : n.attributes) {
    if (attr.value_case() == v1::Attribute::kG || attr.value_case() == v1::Attribute::kGraphs) {
      return true;
    }
  }
  return false;
}

int64_t RuntimeTensorBytes(const runtime::Tensor& t) {
  if (t.dtype() != v1::DT_STRING) return static_cast<int64_t>(t.byte_size());
  int64_t bytes = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) bytes += static_cast<int64_t>(t.strings()[i].size());
  return bytes;
}

bool MatchesType(const runtime::Tensor& t, const TensorType& type) {
  if (t.dtype() != type.dtype || !type.shape || t.rank() != static_cast<int>(type.shape->size())) {
    return false;
  }
  for (int i = 0; i < t.rank(); ++i) {
    if ((*type.shape)[i].size() != t.dim(i)) return false;
  }
  return true;
}

// What the pass did and why it left nodes alone; becomes the report messages.
struct Stats {
  int64_t folded = 0;
  int64_t constants_converted = 0;
  int64_t identities_forwarded = 0;
  int64_t bytes_added = 0;
  int64_t bytes_removed = 0;
  int64_t effects = 0;
  int64_t subgraphs = 0;
  int64_t not_static = 0;
  int64_t containers = 0;
  int64_t blobs = 0;
  absl::btree_map<std::string, int64_t> no_kernel;  // op label -> nodes
  std::vector<std::string> over_budget;              // "node 'x' (Op): why"
  std::vector<std::string> failed;                   // kernel errors

  void Report(const PassContext& context, const Options& options) const {
    context.Note(absl::StrCat("folded ", folded, " nodes into initializers (+", bytes_added,
                              " bytes, -", bytes_removed, " bytes of constants no longer read, net ",
                              bytes_added - bytes_removed >= 0 ? "+" : "",
                              bytes_added - bytes_removed, " of at most +",
                              options.max_growth_bytes, "); ", constants_converted,
                              " Constant nodes became initializers",
                              identities_forwarded > 0
                                  ? absl::StrCat("; ", identities_forwarded,
                                                 " Identity nodes of constants forwarded")
                                  : ""));
    if (!over_budget.empty()) {
      constexpr size_t kShown = 5;
      std::vector<std::string> shown(over_budget.begin(),
                                     over_budget.begin() + std::min(kShown, over_budget.size()));
      context.Note(absl::StrCat("refused ", over_budget.size(),
                                " folds over the size budget: ", absl::StrJoin(shown, "; "),
                                over_budget.size() > kShown ? "; ..." : ""));
    }
    if (!no_kernel.empty()) {
      int64_t total = 0;
      for (const auto& [op, count] : no_kernel) total += count;
      context.Note(absl::StrCat(
          "left ", total, " nodes with constant inputs that have no CPU kernel: ",
          absl::StrJoin(no_kernel, ", ", [](std::string* out, const auto& kv) {
            absl::StrAppend(out, kv.first, " (", kv.second, ")");
          })));
    }
    if (effects > 0) {
      context.Note(absl::StrCat("left ", effects,
                                " nodes of unknown ops or with side effects, mutated inputs or "
                                "randomness"));
    }
    if (subgraphs + not_static + blobs > 0) {
      context.Note(absl::StrCat("left ", subgraphs, " nodes with subgraphs, ", not_static,
                                " with outputs of no static type, ", blobs,
                                " reading constants held as blob references"));
    }
    if (containers > 0) {
      context.Note(absl::StrCat("left ", containers,
                                " nodes producing sequences or optionals (no initializer can "
                                "hold one)"));
    }
    if (!failed.empty()) {
      context.Note(absl::StrCat("left ", failed.size(), " nodes whose kernel failed; first: ",
                                failed.front()));
    }
  }
};

// Evaluates nodes whose inputs are all constants (initializers that are not graph inputs, and
// Constant nodes) with the runtime's CPU kernels and replaces their outputs by initializers, in
// one walk in topological order, so that whole constant subgraphs fold in one run. The outputs
// keep their names. A node is evaluated on its own, exactly as the executor would run it in the
// unfolded graph (inputs that were initializers are constants of its plan, computed ones are
// not), so the folded values are the runtime's bit for bit.
//
// Left alone: nodes with side effects, mutated inputs or outputs, or randomness (descriptor extension
// 'nondeterministic', and ONNX's random ops by name), nodes with subgraphs, nodes whose outputs
// have no static type, nodes without a CPU kernel, nodes whose kernel fails, nodes reading
// constants held as blob references, and folds over the size budget: an output larger than
// max_folded_bytes (checked against the inferred shape before anything is computed, a string
// counting its object), a fold whose kernel run needs more than max_folded_bytes in all
// (everything it allocates is charged to a runtime::MemoryBudget of that size: strings by their
// characters, temporaries), or a fold that would take the model's growth (new initializer bytes
// minus bytes of constants nothing reads any more) past max_growth_bytes. Constant nodes become
// initializers without growth, and Identity nodes of constants are bypassed rather than copied.
// The request's stop token is polled per node and inside the kernels (PassContext::stop).
class ConstantFoldPass : public Pass {
 public:
  ConstantFoldPass(std::shared_ptr<const runtime::KernelRegistry> kernels, Options options)
      : kernels_(std::move(kernels)), options_(options) {}

  absl::StatusOr<bool> Run(Graph& graph, const PassContext& context) override {
    absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
    if (!order.ok()) return order.status();
    const int num_values = graph.num_value_slots();
    constant_.assign(num_values, 0);
    computed_.assign(num_values, 0);
    tensors_.clear();
    hidden_.emplace(graph, *context.ops);
    // The initializers (not every value slot): those that are no graph input and that no node
    // writes are the constants to start from.
    for (ValueId id : graph.InitializerValues()) {
      const Value& v = graph.value(id);
      constant_[id.value()] = v.alive && !v.is_graph_input && !hidden_->mutated(id);
    }
    Stats stats;
    int64_t visited = 0;
    for (NodeId id : *order) {
      if (absl::Status s = context.CheckStopEvery(visited++); !s.ok()) return s;
      const Node& n = graph.node(id);
      if (!n.alive) continue;
      bool all_constant = true;
      for (ValueId in : n.inputs) {
        if (in.valid() && !constant_[in.value()]) {
          all_constant = false;
          break;
        }
      }
      if (!all_constant) continue;
      if (absl::Status s = Fold(graph, id, context, stats); !s.ok()) return s;
    }
    stats.Report(context, options_);
    tensors_.clear();
    return stats.folded + stats.constants_converted + stats.identities_forwarded > 0;
  }

 private:
  // Folds one node whose inputs are all constants, or records why not. Errors only when the
  // request's stop token fires (the pass then stops).
  absl::Status Fold(Graph& graph, NodeId id, const PassContext& context, Stats& stats) {
    const Node& n = graph.node(id);
    const OpDef* op = context.ops->Find(n.domain, n.op_type);
    if (op == nullptr || HasEffects(*op) || IsNondeterministic(*op) || IsRandomOp(n)) {
      ++stats.effects;
      return absl::OkStatus();
    }
    if (HasSubgraph(n)) {
      ++stats.subgraphs;
      return absl::OkStatus();
    }
    for (ValueId out : n.outputs) {
      if (out.valid() && !graph.value(out).type.is_tensor()) {
        ++stats.containers;
        return absl::OkStatus();
      }
    }
    for (ValueId out : n.outputs) {
      // Written in place by some node: it must stay a computed value.
      if (hidden_->mutated(out)) {
        ++stats.effects;
        return absl::OkStatus();
      }
    }
    if (n.op_type == "Identity" && n.domain.empty() && n.inputs.size() == 1 &&
        n.inputs[0].valid() && ReplaceNodeByValue(graph, id, n.inputs[0], *hidden_)) {
      // A copy of a constant (torch writes one per shared weight): its readers read the
      // constant itself, so no bytes are duplicated.
      ++stats.identities_forwarded;
      return absl::OkStatus();
    }
    if (n.op_type == "Constant" && n.domain.empty()) {
      auto it = n.attributes.find("value");
      if (it != n.attributes.end() && it->second.value_case() == v1::Attribute::kT &&
          n.outputs.size() == 1 && n.outputs[0].valid()) {
        // The tensor moves over as it is: no kernel, no growth (a blob reference stays one).
        v1::Tensor tensor = std::move(*graph.mutable_node(id).attributes["value"].mutable_t());
        const ValueId out = n.outputs[0];
        ReplaceOutputByInitializer(graph, id, 0, std::move(tensor));
        constant_[out.value()] = 1;
        computed_[out.value()] = 1;
        ++stats.constants_converted;
        return absl::OkStatus();
      }
    }
    const v1::DataType first_dtype =
        !n.inputs.empty() && n.inputs[0].valid() ? graph.value(n.inputs[0]).type.dtype
                                                 : v1::DT_UNDEFINED;
    if (kernels_->Find(n.domain, n.op_type, runtime::DeviceKind::kCpu, first_dtype) == nullptr) {
      ++stats.no_kernel[OpLabel(n.domain, n.op_type)];
      return absl::OkStatus();
    }
    // The budget, from the inferred types, before anything is computed. A string counts its
    // object at least (its characters are only known once computed: the kernels run under a
    // MemoryBudget of max_folded_bytes, which counts them).
    int64_t planned_bytes = 0;
    for (ValueId out : n.outputs) {
      if (!out.valid()) continue;
      const TensorType& type = graph.value(out).type;
      const int width = type.dtype == v1::DT_STRING ? static_cast<int>(sizeof(std::string))
                                                    : DataTypeSize(type.dtype);
      std::optional<int64_t> count = type.shape ? NumElements(*type.shape) : std::nullopt;
      if (width == 0 || !count) {
        ++stats.not_static;
        return absl::OkStatus();
      }
      const int64_t bytes = width > 0 && *count > std::numeric_limits<int64_t>::max() / width
                                ? std::numeric_limits<int64_t>::max()
                                : *count * width;
      planned_bytes = std::max(planned_bytes, bytes);
    }
    if (planned_bytes > options_.max_folded_bytes) {
      stats.over_budget.push_back(absl::StrCat(graph.NodeLabel(id), " would compute ",
                                               planned_bytes, " bytes (max_folded_bytes ",
                                               options_.max_folded_bytes, ")"));
      return absl::OkStatus();
    }
    for (ValueId in : n.inputs) {
      if (in.valid() && !computed_[in.value()] && !graph.initializer_of(in)->blob().empty()) {
        ++stats.blobs;
        return absl::OkStatus();
      }
    }

    if (absl::Status s = context.CheckStop(graph.NodeLabel(id)); !s.ok()) return s;
    absl::StatusOr<std::vector<runtime::Tensor>> results = Evaluate(graph, id, context);
    if (!results.ok()) {
      const absl::Status& s = results.status();
      if (context.stop != nullptr && context.stop->ShouldStop()) {
        return context.CheckStop(graph.NodeLabel(id));
      }
      if (s.code() == absl::StatusCode::kFailedPrecondition) {
        ++stats.blobs;
      } else if (s.code() == absl::StatusCode::kResourceExhausted) {
        // Over the memory budget of its kernels (strings, temporaries): refused like a fold
        // over the static estimate.
        stats.over_budget.push_back(std::string(s.message()));
      } else {
        stats.failed.push_back(std::string(s.message()));
      }
      return absl::OkStatus();
    }

    // Check the results against the inferred types and the budget; work out the growth.
    int64_t added = 0;
    size_t k = 0;
    for (ValueId out : n.outputs) {
      if (!out.valid()) continue;
      const runtime::Tensor& t = (*results)[k++];
      if (!t.is_tensor()) {
        // Types not inferred yet: only the kernel shows that the value is a container.
        ++stats.containers;
        return absl::OkStatus();
      }
      if (!MatchesType(t, graph.value(out).type)) {
        stats.failed.push_back(absl::StrCat(graph.NodeLabel(id), ": the kernel gave ",
                                            t.DebugString(), " for '", graph.value(out).name,
                                            "', inferred ",
                                            TensorTypeToString(graph.value(out).type)));
        return absl::OkStatus();
      }
      const int64_t bytes = RuntimeTensorBytes(t);
      if (bytes > options_.max_folded_bytes) {
        stats.over_budget.push_back(absl::StrCat(graph.NodeLabel(id), " computed ", bytes,
                                                 " bytes (max_folded_bytes ",
                                                 options_.max_folded_bytes, ")"));
        return absl::OkStatus();
      }
      if (Needed(graph, out)) added += bytes;
    }
    // Constants read only by this node go away with it.
    // Linear in the node's inputs: a value with more uses than the node has inputs is read
    // elsewhere too, so its uses are only walked when there are few.
    std::vector<ValueId> dying;
    absl::flat_hash_set<int32_t> seen;
    int64_t removed = 0;
    for (ValueId in : n.inputs) {
      if (!in.valid() || !seen.insert(in.value()).second) continue;
      const Value& v = graph.value(in);
      // A subgraph reading it by name keeps it.
      if (v.graph_output_count > 0 || hidden_->captured(in) ||
          v.uses.size() > n.inputs.size()) {
        continue;
      }
      bool only_here = true;
      for (const Use& u : v.uses) only_here &= u.node == id;
      if (!only_here) continue;
      dying.push_back(in);
      removed += TensorBytes(*graph.initializer_of(in));
    }
    const int64_t delta = added - removed;
    if (delta > 0 && growth_ + delta > options_.max_growth_bytes) {
      stats.over_budget.push_back(absl::StrCat(
          graph.NodeLabel(id), " would add ", delta, " bytes (", growth_,
          " added so far, max_growth_bytes ", options_.max_growth_bytes, ")"));
      return absl::OkStatus();
    }
    growth_ += delta;
    stats.bytes_added += added;
    stats.bytes_removed += removed;
    ++stats.folded;

    // Replace: each read output becomes an initializer; the node and its dead outputs go.
    std::vector<std::pair<ValueId, runtime::Tensor>> kept;
    k = 0;
    const int num_outputs = static_cast<int>(n.outputs.size());
    for (int i = 0; i < num_outputs; ++i) {
      const ValueId out = graph.node(id).outputs[i];
      if (!out.valid()) continue;
      runtime::Tensor& t = (*results)[k++];
      if (!Needed(graph, out)) continue;
      graph.DetachOutput(id, i);
      kept.emplace_back(out, std::move(t));
    }
    graph.RemoveNode(id);
    for (auto& [value, tensor] : kept) {
      v1::Tensor proto;
      tensor.ToProto(&proto);
      graph.SetInitializer(value, std::move(proto));
      constant_[value.value()] = 1;
      computed_[value.value()] = 1;
      tensors_[value.value()] = std::move(tensor);
    }
    for (ValueId in : dying) {
      graph.RemoveInitializer(in);
      tensors_.erase(in.value());
    }
    return absl::OkStatus();
  }

  // True when something reads `out`: a node, the graph's outputs or a subgraph by name.
  bool Needed(const Graph& graph, ValueId out) const {
    const Value& v = graph.value(out);
    return !v.uses.empty() || v.graph_output_count > 0 || hidden_->captured(out);
  }

  // Runs node `id` alone on the CPU kernels and returns its present outputs in order: under
  // the request's stop token and a memory budget of max_folded_bytes for everything its
  // kernels allocate (strings by their characters too).
  absl::StatusOr<std::vector<runtime::Tensor>> Evaluate(const Graph& graph, NodeId id,
                                                        const PassContext& context) {
    const Node& n = graph.node(id);
    Graph mini;
    mini.name = "constant_fold";
    mini.opset_imports = graph.opset_imports;
    std::vector<std::pair<std::string, runtime::Tensor>> feeds;
    absl::flat_hash_map<int32_t, ValueId> mapped;
    std::vector<ValueId> inputs, outputs;
    for (ValueId in : n.inputs) {
      if (!in.valid()) {
        inputs.push_back(ValueId());
        continue;
      }
      if (auto it = mapped.find(in.value()); it != mapped.end()) {
        inputs.push_back(it->second);
        continue;
      }
      const Value& v = graph.value(in);
      absl::StatusOr<ValueId> m = mini.AddValue(v.name);
      if (!m.ok()) return m.status();
      mapped[in.value()] = *m;
      inputs.push_back(*m);
      const v1::Tensor& proto = *graph.initializer_of(in);
      TensorType& type = mini.mutable_value(*m).type;
      type.dtype = proto.dtype();
      type.shape = ShapeFromDimsList(proto);
      if (!computed_[in.value()]) {
        // An initializer of the original graph: a constant of the node's plan there too.
        mini.SetInitializer(*m, proto);
        continue;
      }
      // Computed here (or a Constant node's value): an ordinary input at run time.
      mini.AddGraphInput(*m);
      auto cached = tensors_.find(in.value());
      if (cached != tensors_.end()) {
        feeds.emplace_back(v.name, cached->second);
        continue;
      }
      absl::StatusOr<runtime::Tensor> t =
          runtime::Tensor::FromProto(proto, absl::StrCat("constant '", v.name, "'"));
      if (!t.ok()) return t.status();
      tensors_[in.value()] = *t;
      feeds.emplace_back(v.name, *std::move(t));
    }
    for (ValueId out : n.outputs) {
      if (!out.valid()) {
        outputs.push_back(ValueId());
        continue;
      }
      absl::StatusOr<ValueId> m = mini.AddValue(graph.value(out).name);
      if (!m.ok()) return m.status();
      mini.mutable_value(*m).type = graph.value(out).type;
      mini.AddGraphOutput(*m);
      outputs.push_back(*m);
    }
    absl::StatusOr<NodeId> node =
        mini.AddNode(n.name, n.op_type, n.domain, std::move(inputs), std::move(outputs),
                     n.attributes);
    if (!node.ok()) return node.status();
    absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
        runtime::Executor::Create(std::move(mini), *kernels_, runtime::ExecutorOptions{});
    if (!executor.ok()) return executor.status();
    runtime::RunOptions run;
    run.stop = context.stop;
    run.memory = std::make_shared<runtime::MemoryBudget>(options_.max_folded_bytes +
                                                         kFoldBookkeepingBytes);
    absl::StatusOr<runtime::RunResult> result = (*executor)->Run(feeds, run);
    if (!result.ok()) return result.status();
    return std::move(result->outputs);
  }

  std::shared_ptr<const runtime::KernelRegistry> kernels_;
  Options options_;
  // Per run, indexed by ValueId: a constant (initializer that is not a graph input), and one
  // this pass made (folded, or a Constant node's value). Values made by the pass also keep
  // their decoded elements in tensors_ for the nodes that read them next.
  std::vector<char> constant_;
  std::vector<char> computed_;
  std::optional<HiddenAccess> hidden_;
  absl::flat_hash_map<int32_t, runtime::Tensor> tensors_;
  // Bytes the folds of this pass object added so far: across the rounds of a fixpoint group,
  // which run the same object, the budget holds for all of them together.
  int64_t growth_ = 0;
};

absl::Status ParseBytes(const PassOptions& options, const char* key, int64_t* out) {
  auto it = options.find(key);
  if (it == options.end()) return absl::OkStatus();
  if (!absl::SimpleAtoi(it->second, out) || *out < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("option '", key, "': '", it->second, "' is not a byte count >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

PassInfo ConstantFoldPassInfo(std::shared_ptr<const runtime::KernelRegistry> kernels) {
  PassInfo info;
  info.name = "constant_fold";
  info.description =
      "Evaluates nodes whose inputs are all constants with the runtime's CPU kernels and "
      "replaces them by initializers (bit-identical to running them), within a size budget; "
      "never folds ops with side effects or randomness; turns Constant nodes into initializers "
      "and bypasses Identity copies of constants.";
  info.options = {
      {"max_folded_bytes",
       absl::StrCat("largest tensor one fold may compute, in bytes (default ",
                    kDefaultMaxFoldedBytes, ")")},
      {"max_growth_bytes",
       absl::StrCat("how many bytes all folds together may add to the model: new initializers "
                    "minus constants no longer read (default ",
                    kDefaultMaxFoldGrowthBytes, ")")},
  };
  info.budget_options["max_folded_bytes"] = {kDefaultMaxFoldedBytes, nullptr};
  info.budget_options["max_growth_bytes"] = {kDefaultMaxFoldGrowthBytes, nullptr};
  // Output types come from inference: a fold is refused before it computes anything too large.
  info.requires_analyses = {Analysis::kTypes, Analysis::kShapes};
  // Folded values keep their (now exactly known) types.
  info.preserves = AnalysisSet::All();
  info.min_opt_level = 2;
  info.repeat_to_fixpoint = true;
  info.factory = [kernels = std::move(kernels)](
                     const PassOptions& options) -> absl::StatusOr<std::unique_ptr<Pass>> {
    Options o;
    if (absl::Status s = ParseBytes(options, "max_folded_bytes", &o.max_folded_bytes); !s.ok()) {
      return s;
    }
    if (absl::Status s = ParseBytes(options, "max_growth_bytes", &o.max_growth_bytes); !s.ok()) {
      return s;
    }
    return std::unique_ptr<Pass>(std::make_unique<ConstantFoldPass>(kernels, o));
  };
  return info;
}

}  // namespace graphopt
