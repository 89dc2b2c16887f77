#include "service/verify.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "graph/graph.h"
#include "graph/proto_convert.h"
#include "graph/types.h"
#include "runtime/executor.h"
#include "runtime/float16.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/memory_budget.h"
#include "runtime/tensor.h"

namespace graphopt {
namespace {

using runtime::Tensor;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

int64_t InitializerBytes(const v1::Graph& graph) {
  int64_t bytes = 0;
  for (const v1::Tensor& t : graph.initializers()) {
    bytes += static_cast<int64_t>(t.raw_data().size());
    for (const std::string& s : t.string_data()) bytes += static_cast<int64_t>(s.size());
  }
  return bytes;
}

// Seeded values for one graph input of the original graph.
// Elements filled between two polls of the stop token: a large input takes seconds to fill.
constexpr int64_t kElementsPerStopCheck = int64_t{1} << 20;

absl::Status CheckStopAt(const StopToken* stop, int64_t i, absl::string_view what) {
  if (stop == nullptr || i % kElementsPerStopCheck != 0) return absl::OkStatus();
  return CheckStop(stop, what);
}

absl::StatusOr<Tensor> RandomInput(const Value& value,
                                   const std::map<std::string, int64_t>& bindings,
                                   std::mt19937_64& rng,
                                   const std::shared_ptr<runtime::MemoryBudget>& budget,
                                   const StopToken* stop) {
  const TensorType& type = value.type;
  if (type.dtype == v1::DT_UNDEFINED || !type.shape.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "verify: input '", value.name, "' has no declared ",
        type.dtype == v1::DT_UNDEFINED ? "type" : "rank", ": give it in verify.inputs"));
  }
  runtime::Shape shape;
  for (size_t i = 0; i < type.shape->size(); ++i) {
    const Dim& d = (*type.shape)[i];
    if (d.is_known()) {
      shape.push_back(d.size());
    } else if (d.is_symbol() && bindings.count(d.symbol()) > 0) {
      shape.push_back(bindings.at(d.symbol()));
    } else if (d.is_symbol()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "verify: input '", value.name, "' dim ", i, " is symbolic '", d.symbol(),
          "': bind it in dim_bindings (graphopt optimize --bind ", d.symbol(),
          "=N) or give the input in verify.inputs"));
    } else {
      return absl::InvalidArgumentError(absl::StrCat("verify: input '", value.name, "' dim ", i,
                                                     " is unknown (", TensorTypeToString(type),
                                                     "): give the input in verify.inputs"));
    }
  }
  switch (type.dtype) {
    case v1::DT_FLOAT32:
    case v1::DT_FLOAT64:
    case v1::DT_FLOAT16:
    case v1::DT_BFLOAT16:
    case v1::DT_BOOL:
    case v1::DT_INT64:
    case v1::DT_INT32:
    case v1::DT_INT8:
    case v1::DT_UINT8:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "verify: input '", value.name, "' is ", DataTypeName(type.dtype),
          ": no random values for it; give it in verify.inputs"));
  }
  absl::StatusOr<Tensor> t = Tensor::Allocate(type.dtype, shape, budget, [&] {
    return absl::StrCat("verify: generated input '", value.name, "'");
  });
  if (!t.ok()) return t.status();
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 3);
  const int64_t n = t->num_elements();
  const std::string where = absl::StrCat("verify: generating input '", value.name, "'");
  for (int64_t i = 0; i < n; ++i) {
    if (absl::Status s = CheckStopAt(stop, i, where); !s.ok()) return s;
    switch (type.dtype) {
      case v1::DT_FLOAT32:
        t->data<float>()[i] = normal(rng);
        break;
      case v1::DT_FLOAT64:
        t->data<double>()[i] = normal(rng);
        break;
      case v1::DT_FLOAT16:
        t->data<runtime::Float16>()[i] = runtime::Float16(normal(rng));
        break;
      case v1::DT_BFLOAT16:
        t->data<runtime::BFloat16>()[i] = runtime::BFloat16(normal(rng));
        break;
      case v1::DT_BOOL:
        t->data<bool>()[i] = small(rng) >= 2;
        break;
      case v1::DT_INT64:
        t->data<int64_t>()[i] = small(rng);
        break;
      case v1::DT_INT32:
        t->data<int32_t>()[i] = small(rng);
        break;
      case v1::DT_INT8:
      case v1::DT_UINT8:
        t->data<uint8_t>()[i] = static_cast<uint8_t>(small(rng));
        break;
      default:
        break;  // refused before the allocation
    }
  }
  return t;
}

// The inputs of one run of `original`: given ones first, the rest generated in graph order.
absl::StatusOr<NamedTensors> PrepareInputs(const Graph& original, const v1::VerifyOptions& options,
                                           const std::map<std::string, int64_t>& bindings,
                                           const std::shared_ptr<runtime::MemoryBudget>& budget,
                                           const StopToken* stop, v1::VerifyReport* report) {
  absl::flat_hash_map<std::string, int> given;
  for (int i = 0; i < options.inputs_size(); ++i) given[options.inputs(i).name()] = i;
  absl::flat_hash_set<std::string> input_names;
  for (ValueId v : original.inputs()) input_names.insert(original.value(v).name);
  for (int i = 0; i < options.inputs_size(); ++i) {
    if (!input_names.contains(options.inputs(i).name())) {
      return absl::InvalidArgumentError(absl::StrCat("verify.inputs[", i, "]: the model has no input '",
                                                     options.inputs(i).name(), "'"));
    }
  }
  std::mt19937_64 rng(options.seed());
  NamedTensors out;
  for (ValueId v : original.inputs()) {
    const Value& value = original.value(v);
    auto it = given.find(value.name);
    if (it != given.end()) {
      const v1::Tensor& proto = options.inputs(it->second);
      absl::StatusOr<Tensor> t =
          Tensor::FromProto(proto, absl::StrCat("verify.inputs[", it->second, "] ('", value.name, "')"));
      if (!t.ok()) return t.status();
      // Charged like generated inputs, so the bound covers everything verification holds.
      absl::StatusOr<Tensor> charged = t->Clone(budget, [&] {
        return absl::StrCat("verify: input '", value.name, "'");
      });
      if (!charged.ok()) return charged.status();
      out.emplace_back(value.name, *std::move(charged));
      continue;
    }
    if (value.initializer >= 0) continue;
    absl::StatusOr<Tensor> t = RandomInput(value, bindings, rng, budget, stop);
    if (!t.ok()) return t.status();
    report->add_generated_inputs(value.name);
    out.emplace_back(value.name, *std::move(t));
  }
  return out;
}

absl::Status Prefixed(const absl::Status& s, absl::string_view which) {
  return absl::Status(s.code(), absl::StrCat("verify: ", which, " graph: ", s.message()));
}

struct RunOutputs {
  std::vector<std::string> names;
  std::vector<Tensor> tensors;
  int64_t run_us = 0;
};

// Builds `graph`'s plan and runs it once on the inputs it has of `inputs`. `weights` holds the
// graph's weight bytes against the budget: the runtime does not charge a plan's constants (they
// exist before a run), verification does, for as long as the plan lives.
absl::StatusOr<RunOutputs> RunGraph(Graph graph, runtime::MemoryReservation weights,
                                    absl::string_view which, const NamedTensors& inputs,
                                    const runtime::KernelRegistry& kernels,
                                    const VerifyLimits& limits,
                                    const std::shared_ptr<runtime::MemoryBudget>& budget,
                                    const StopToken* stop) {
  RunOutputs out;
  absl::flat_hash_set<std::string> wanted;
  for (ValueId v : graph.inputs()) wanted.insert(graph.value(v).name);
  for (ValueId v : graph.outputs()) out.names.push_back(graph.value(v).name);
  NamedTensors fed;
  for (const auto& [name, tensor] : inputs) {
    if (wanted.contains(name)) fed.emplace_back(name, tensor);
  }
  runtime::ExecutorOptions options;
  options.num_threads = std::max(1, limits.num_threads);
  absl::StatusOr<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::Create(std::move(graph), kernels, options);
  if (!executor.ok()) return Prefixed(executor.status(), which);
  runtime::RunOptions run;
  run.stop = stop;
  run.memory = budget;
  const absl::Time start = absl::Now();
  absl::StatusOr<runtime::RunResult> result = (*executor)->Run(fed, run);
  out.run_us = absl::ToInt64Microseconds(absl::Now() - start);
  if (!result.ok()) return Prefixed(result.status(), which);
  out.tensors = std::move(result->outputs);
  return out;
}

bool IsNumeric(v1::DataType t) { return t != v1::DT_STRING && t != v1::DT_UNDEFINED; }

absl::StatusOr<v1::OutputComparison> Compare(const std::string& name, const Tensor& want,
                                             const Tensor& got, double rtol, double atol,
                                             const StopToken* stop) {
  v1::OutputComparison c;
  c.set_name(name);
  if (want.dtype() != got.dtype() || want.shape() != got.shape()) {
    c.set_problem(absl::StrCat("the original gives ", want.DebugString(), ", the optimized ",
                               got.DebugString()));
    return c;
  }
  const int64_t n = want.num_elements();
  if (!IsNumeric(want.dtype())) {
    for (int64_t i = 0; i < n; ++i) {
      if (want.strings()[i] != got.strings()[i]) {
        c.set_problem(absl::StrCat("element ", i, " differs"));
        return c;
      }
    }
    c.set_passed(true);
    return c;
  }
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double max_abs = 0, max_orig = 0;
  const std::string where = absl::StrCat("verify: comparing output '", name, "'");
  for (int64_t i = 0; i < n; ++i) {
    if (absl::Status s = CheckStopAt(stop, i, where); !s.ok()) return s;
    const double a = want.ElementAsDouble(i), b = got.ElementAsDouble(i);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) max_abs = kInf;
      continue;
    }
    max_orig = std::max(max_orig, std::fabs(a));
    if (a == b) continue;  // equal infinities too
    max_abs = std::max(max_abs, std::fabs(a - b));
  }
  c.set_max_abs_error(max_abs);
  c.set_max_rel_error(max_abs == 0 ? 0 : (max_orig > 0 ? max_abs / max_orig : kInf));
  c.set_passed(max_abs <= atol + rtol * max_orig);
  return c;
}

}  // namespace

absl::Status CheckVerifyOptions(const v1::VerifyOptions& options) {
  for (const auto& [field, v] : {std::pair<const char*, double>{"rtol", options.rtol()},
                                 std::pair<const char*, double>{"atol", options.atol()}}) {
    if (!std::isfinite(v) || v < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("verify.", field, " must be finite and >= 0, got ", v));
    }
  }
  absl::flat_hash_set<std::string> names;
  for (int i = 0; i < options.inputs_size(); ++i) {
    const std::string& name = options.inputs(i).name();
    if (name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("verify.inputs[", i, "]: no name"));
    }
    if (!names.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("verify.inputs[", i, "]: input '", name, "' is given twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::VerifyReport> VerifyOptimization(
    v1::Graph original, v1::Graph optimized, const v1::VerifyOptions& options,
    const std::map<std::string, int64_t>& dim_bindings, const VerifyLimits& limits,
    const StopToken* stop) {
  if (absl::Status s = CheckVerifyOptions(options); !s.ok()) return s;
  v1::VerifyReport report;
  const double rtol = options.rtol() > 0 ? options.rtol() : kDefaultVerifyRtol;
  const double atol = options.atol() > 0 ? options.atol() : kDefaultVerifyAtol;
  report.set_rtol(rtol);
  report.set_atol(atol);
  report.set_seed(options.seed());
  runtime::KernelRegistry kernels;
  if (absl::Status s = runtime::RegisterCpuKernels(kernels); !s.ok()) return s;
  auto budget = std::make_shared<runtime::MemoryBudget>(std::max<int64_t>(1, limits.max_memory_bytes));

  // Each graph is converted (and its weights charged) just before it runs; the original's
  // plan is gone before the optimized one is built.
  auto convert = [&](v1::Graph proto, absl::string_view which,
                     runtime::MemoryReservation* weights) -> absl::StatusOr<Graph> {
    if (absl::Status s = weights->Add(InitializerBytes(proto), absl::StrCat(which, " graph's weights"));
        !s.ok()) {
      return Prefixed(s, which);
    }
    absl::StatusOr<Graph> graph = GraphFromProto(std::move(proto));
    if (!graph.ok()) return Prefixed(graph.status(), which);
    return graph;
  };
  NamedTensors inputs;
  absl::StatusOr<RunOutputs> want = [&]() -> absl::StatusOr<RunOutputs> {
    runtime::MemoryReservation weights(budget);
    absl::StatusOr<Graph> graph = convert(std::move(original), "original", &weights);
    if (!graph.ok()) return graph.status();
    absl::StatusOr<NamedTensors> prepared =
        PrepareInputs(*graph, options, dim_bindings, budget, stop, &report);
    if (!prepared.ok()) return prepared.status();
    inputs = *std::move(prepared);
    return RunGraph(*std::move(graph), std::move(weights), "original", inputs, kernels, limits,
                    budget, stop);
  }();
  if (!want.ok()) return want.status();
  report.set_original_run_us(want->run_us);
  absl::StatusOr<RunOutputs> got = [&]() -> absl::StatusOr<RunOutputs> {
    runtime::MemoryReservation weights(budget);
    absl::StatusOr<Graph> graph = convert(std::move(optimized), "optimized", &weights);
    if (!graph.ok()) return graph.status();
    return RunGraph(*std::move(graph), std::move(weights), "optimized", inputs, kernels, limits,
                    budget, stop);
  }();
  if (!got.ok()) return got.status();
  report.set_optimized_run_us(got->run_us);

  absl::flat_hash_map<std::string, size_t> got_index;
  for (size_t i = 0; i < got->names.size(); ++i) got_index.emplace(got->names[i], i);
  bool passed = true;
  for (size_t i = 0; i < want->names.size(); ++i) {
    const std::string& name = want->names[i];
    auto it = got_index.find(name);
    v1::OutputComparison c;
    if (it == got_index.end()) {
      c.set_name(name);
      c.set_problem("the optimized graph has no output of this name");
    } else {
      absl::StatusOr<v1::OutputComparison> compared =
          Compare(name, want->tensors[i], got->tensors[it->second], rtol, atol, stop);
      if (!compared.ok()) return compared.status();
      c = *std::move(compared);
    }
    passed = passed && c.passed();
    *report.add_outputs() = std::move(c);
  }
  report.set_passed(passed);
  return report;
}

absl::Status VerifyFailure(const v1::VerifyReport& report) {
  if (report.passed()) return absl::OkStatus();
  std::string message = "verification failed:";
  int failed = 0;
  for (const v1::OutputComparison& c : report.outputs()) {
    if (c.passed()) continue;
    absl::StrAppend(&message, failed++ > 0 ? ";" : "", " output '", c.name(), "' ");
    if (!c.problem().empty()) {
      absl::StrAppend(&message, c.problem());
    } else {
      absl::StrAppend(&message, absl::StrFormat("max abs error %.3g, max rel error %.3g",
                                                c.max_abs_error(), c.max_rel_error()));
    }
  }
  absl::StrAppend(&message,
                  absl::StrFormat(" (tolerance: atol %.3g + rtol %.3g * max |original|; seed %u)",
                                  report.atol(), report.rtol(), report.seed()));
  return absl::FailedPreconditionError(message);
}

}  // namespace graphopt
