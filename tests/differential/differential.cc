#include "tests/differential/differential.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "graph/proto_convert.h"
#include "graph/types.h"
#include "ops/builtin_ops.h"
#include "passes/builtin_passes.h"
#include "runtime/executor.h"
#include "runtime/kernels/cpu_kernels.h"

namespace graphopt::differential {

absl::StatusOr<std::unique_ptr<Env>> Env::Create() {
  std::unique_ptr<Env> env(new Env());
  if (absl::Status s = RegisterBuiltinOps(&env->ops_); !s.ok()) return s;
  if (absl::Status s = RegisterBuiltinPasses(&env->passes_); !s.ok()) return s;
  if (absl::Status s = runtime::RegisterCpuKernels(env->kernels_); !s.ok()) return s;
  return env;
}

bool ReassociatesFloatMath(const std::string& name) {
  return name == "fold_batchnorm" || name == "fuse_ops" || name == "channels_last" ||
         name == "decompose_rnn" || name == "fuse_matmul_add";
}

std::vector<Check> AllChecks(const PassRegistry& passes) {
  // Passes that change what a graph computes by design, and only when asked with options: a
  // training step adds the optimizer's updates of weights a gradient pass differentiated.
  auto transforms = [](const std::string& name) { return name == "training_step"; };
  std::vector<Check> checks;
  for (const PassInfo* info : passes.List()) {
    if (transforms(info->name)) continue;
    Check c;
    c.name = absl::StrCat("pass ", info->name);
    c.pipeline = {{info->name, {}}};
    c.exact = !ReassociatesFloatMath(info->name);
    c.exact_without_batchnorm = info->name == "fold_batchnorm";
    checks.push_back(std::move(c));
  }
  for (int level = 1; level <= kMaxOptLevel; ++level) {
    absl::StatusOr<std::vector<PassSpec>> pipeline = PipelineForLevel(passes, level);
    if (!pipeline.ok()) continue;
    Check c;
    c.name = absl::StrCat("-O", level);
    c.pipeline = *std::move(pipeline);
    c.exact = true;
    c.exact_without_batchnorm = true;
    for (const PassSpec& spec : c.pipeline) {
      c.exact = c.exact && !ReassociatesFloatMath(spec.name);
      c.exact_without_batchnorm =
          c.exact_without_batchnorm && (spec.name == "fold_batchnorm" || !ReassociatesFloatMath(spec.name));
    }
    checks.push_back(std::move(c));
  }
  return checks;
}

absl::StatusOr<std::vector<runtime::Tensor>> Execute(const Env& env, v1::Graph graph,
                                                     const NamedTensors& inputs) {
  absl::StatusOr<Graph> ir = GraphFromProto(std::move(graph));
  if (!ir.ok()) return ir.status();
  absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::Create(*std::move(ir), env.kernels(), runtime::ExecutorOptions{});
  if (!executor.ok()) return executor.status();
  absl::StatusOr<runtime::RunResult> result = (*executor)->Run(inputs);
  if (!result.ok()) return result.status();
  return std::move(result->outputs);
}

std::string CompareTensors(const runtime::Tensor& got, const runtime::Tensor& want, bool exact,
                           double rtol, double atol) {
  if (got.kind() != want.kind() || got.items().size() != want.items().size()) {
    return absl::StrCat(got.DebugString(), " != expected ", want.DebugString());
  }
  if (!want.is_tensor()) {
    // A sequence or optional: item by item.
    for (size_t i = 0; i < want.items().size(); ++i) {
      std::string diff = CompareTensors(got.items()[i], want.items()[i], exact, rtol, atol);
      if (!diff.empty()) return absl::StrCat("item ", i, ": ", diff);
    }
    return "";
  }
  if (got.dtype() != want.dtype() || got.shape() != want.shape()) {
    return absl::StrCat(got.DebugString(), " != expected ", want.DebugString());
  }
  if (want.dtype() == v1::DT_STRING) {
    for (int64_t i = 0; i < want.num_elements(); ++i) {
      if (got.strings()[i] != want.strings()[i]) return absl::StrCat("string element ", i, " differs");
    }
    return "";
  }
  const bool floating = IsFloatingPoint(want.dtype());
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    const double g = got.ElementAsDouble(i), w = want.ElementAsDouble(i);
    if (std::isnan(g) && std::isnan(w)) continue;
    if (exact || !floating) {
      // Bitwise for every element (so -0 != +0 and NaN payloads aside, as computed).
      const size_t size = want.element_size();
      if (std::memcmp(static_cast<const char*>(got.raw_data()) + i * size,
                      static_cast<const char*>(want.raw_data()) + i * size, size) == 0) {
        continue;
      }
      return absl::StrCat("element ", i, ": ", g, " != expected ", w, " (bit-exact check)");
    }
    if (std::isinf(w) || std::isinf(g)) {
      if (g == w) continue;
    } else if (std::fabs(g - w) <= atol + rtol * std::fabs(w)) {
      continue;
    }
    return absl::StrCat("element ", i, ": ", g, " != expected ", w, " (rtol ", rtol, ", atol ",
                        atol, ")");
  }
  return "";
}

absl::Status CompareAfter(const Env& env, const v1::Graph& graph, const NamedTensors& inputs,
                          const std::vector<runtime::Tensor>& reference, const Check& check) {
  absl::StatusOr<Graph> ir = GraphFromProto(graph);
  if (!ir.ok()) return ir.status();
  PipelineOptions options;
  options.verify_each_pass = true;
  absl::StatusOr<PipelineResult> run =
      RunPipeline(*ir, check.pipeline, env.passes(), env.ops(), options);
  if (!run.ok()) return absl::InternalError(absl::StrCat("pipeline failed: ", run.status().ToString()));
  v1::Graph optimized = GraphToProto(*std::move(ir));
  if (optimized.outputs_size() != graph.outputs_size()) {
    return absl::InternalError(absl::StrCat(optimized.outputs_size(), " outputs after, ",
                                            graph.outputs_size(), " before"));
  }
  for (int i = 0; i < graph.outputs_size(); ++i) {
    if (optimized.outputs(i).name() != graph.outputs(i).name()) {
      return absl::InternalError(absl::StrCat("output ", i, " is '", optimized.outputs(i).name(),
                                              "' after, '", graph.outputs(i).name(), "' before"));
    }
  }
  bool exact = check.exact;
  if (!exact && check.exact_without_batchnorm) {
    exact = std::none_of(graph.nodes().begin(), graph.nodes().end(), [](const v1::Node& n) {
      return n.op_type() == "BatchNormalization" && n.domain().empty();
    });
  }
  absl::StatusOr<std::vector<runtime::Tensor>> got = Execute(env, std::move(optimized), inputs);
  if (!got.ok()) {
    return absl::InternalError(absl::StrCat("the optimized graph does not run: ",
                                            got.status().ToString()));
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    std::string diff = CompareTensors((*got)[i], reference[i], exact, check.rtol, check.atol);
    if (!diff.empty()) {
      return absl::InternalError(
          absl::StrCat("output '", graph.outputs(static_cast<int>(i)).name(), "': ", diff));
    }
  }
  return absl::OkStatus();
}

}  // namespace graphopt::differential
