#ifndef GRAPHOPT_TESTS_DIFFERENTIAL_DIFFERENTIAL_H_
#define GRAPHOPT_TESTS_DIFFERENTIAL_DIFFERENTIAL_H_

// Differential testing of the passes: a graph runs on the runtime as it is and again after a
// pipeline; the outputs must agree (bit for bit for structural passes, within a relative
// tolerance for passes that reassociate float math).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "passes/pass.h"
#include "passes/pipeline.h"
#include "proto/graph.pb.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt::differential {

// Whether pass `name` changes how float values are computed (folded weights, fused loops,
// oneDNN's channels-last convolutions, which sum in another order; recurrent ops unrolled into
// MatMuls, which sum each step's products in another order than the RNN kernels; a Gemm, which
// sums its bias in with the products instead of adding it after them).
bool ReassociatesFloatMath(const std::string& name);

using NamedTensors = std::vector<std::pair<std::string, runtime::Tensor>>;

// The builtin ops, passes and CPU kernels.
class Env {
 public:
  static absl::StatusOr<std::unique_ptr<Env>> Create();
  const OpRegistry& ops() const { return ops_; }
  const PassRegistry& passes() const { return passes_; }
  // For tests of the harness itself (registering a deliberately wrong pass).
  PassRegistry& mutable_passes() { return passes_; }
  const runtime::KernelRegistry& kernels() const { return kernels_; }

 private:
  Env() = default;
  OpRegistry ops_;
  PassRegistry passes_;
  runtime::KernelRegistry kernels_;
};

// A pipeline to check, with how closely it must preserve the outputs.
struct Check {
  std::string name;  // "pass constant_fold", "-O2"
  std::vector<PassSpec> pipeline;
  // Bit-exact when true; otherwise |got - want| <= atol + rtol * |want| per element.
  bool exact = true;
  // Bit-exact all the same on graphs without BatchNormalization nodes: the pipeline's only
  // pass that reassociates is fold_batchnorm (README.md's claim for -O2).
  bool exact_without_batchnorm = false;
  double rtol = 1e-4;
  double atol = 1e-5;
};

// One check per registered pass (each run alone; the pipeline adds the analyses it needs) and
// one per optimization level 1..kMaxOptLevel. Passes that reassociate float math
// (fold_batchnorm, fuse_ops) and the levels that include them are compared with tolerance.
std::vector<Check> AllChecks(const PassRegistry& passes);

// The graph's outputs (in graph order) computed by the runtime.
absl::StatusOr<std::vector<runtime::Tensor>> Execute(const Env& env, v1::Graph graph,
                                                     const NamedTensors& inputs);

// Optimizes a copy of `graph` with check.pipeline and compares its outputs with `reference`
// (the unoptimized outputs). OK when they agree; otherwise an error saying what differs
// (the pipeline failing, an output missing, renamed, of another type or shape, or the first
// element out of tolerance).
absl::Status CompareAfter(const Env& env, const v1::Graph& graph, const NamedTensors& inputs,
                          const std::vector<runtime::Tensor>& reference, const Check& check);

// "" when `got` equals `want` (bitwise, NaNs equal) or is within tolerance; else a description.
std::string CompareTensors(const runtime::Tensor& got, const runtime::Tensor& want, bool exact,
                           double rtol, double atol);

}  // namespace graphopt::differential

#endif  // GRAPHOPT_TESTS_DIFFERENTIAL_DIFFERENTIAL_H_
