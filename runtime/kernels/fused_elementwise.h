#ifndef GRAPHOPT_RUNTIME_KERNELS_FUSED_ELEMENTWISE_H_
#define GRAPHOPT_RUNTIME_KERNELS_FUSED_ELEMENTWISE_H_

// Elementwise programs of the FusedGroup kernel (fused.cc): a run of float32 elementwise and
// broadcast nodes of a group's body evaluated as one loop over the output, tile by tile, so that
// intermediates stay in cache and only the values used after the run are written out.

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"

namespace graphopt::runtime {

enum class EwOp : uint8_t {
  kAdd, kSub, kMul, kDiv, kPow, kMax, kMin,
  kRelu, kLeakyRelu, kClip, kHardSigmoid, kSigmoid, kTanh, kExp, kLog, kSqrt, kNeg, kAbs,
  kReciprocal, kErf, kFloor, kCeil, kSoftplus, kSign, kIdentity,
  kGelu,  // x * 0.5 * (1 + erf(x / sqrt(2))), the five nodes of the pattern in one step
  kElu, kSelu, kCelu, kHardSwish, kSoftsign, kThresholdedRelu, kPRelu,
};

// One step of a program: out = op(a, b); Clip reads its bounds from b and c (program values,
// -1 when absent) or, when those are absent, from p0/p1. LeakyRelu's, Elu's, Celu's and
// ThresholdedRelu's alpha is p0; HardSigmoid's alpha and beta, Selu's alpha and gamma p0 and p1.
struct EwInstr {
  EwOp op = EwOp::kIdentity;
  int a = -1, b = -1, c = -1;
  float p0 = 0, p1 = 0;
  int out = -1;
};

// A compiled run of nodes. Program values 0 .. inputs.size()-1 are the body values the run
// reads; the others are the results of its instructions.
struct EwProgram {
  std::vector<ValueId> inputs;
  int num_values = 0;
  std::vector<EwInstr> code;
  // `code` with each GELU pattern as one kGelu step; used when every guard holds (a program
  // input that must be a one-element tensor of that value). Empty when there is no GELU.
  std::vector<EwInstr> fast;
  std::vector<std::pair<int, double>> guards;
  // Program inputs read only as scalars (Clip's bounds): they must hold one element and take no
  // part in the output shape.
  std::vector<char> scalar_input;
  // Program values written out, with the body value each becomes, and for each the program
  // input whose storage it may take over (-1 for none): every instruction reading that input
  // runs no later than the one producing the output, so writing the output over it tile by
  // tile never overwrites an element still to be read.
  std::vector<ValueId> outputs;
  std::vector<int> output_value;
  std::vector<int> may_overwrite;
};

// True when the runtime can evaluate `node` inside a program (a supported op of the default
// domain on float32 values, in the semantics of `opset`).
bool IsProgramNode(const Graph& body, NodeId node, int64_t opset);

// Compiles `nodes` (program nodes in a topological order) into a program whose outputs are
// the values `needed` marks (by ValueId) among those the nodes produce.
EwProgram CompileProgram(const Graph& body, const std::vector<NodeId>& nodes, int64_t opset,
                         const std::vector<char>& needed);

// Where the program's output k goes: called once per output with the output shape; returns the
// float32 tensor to write (allocated, or an input the program may overwrite).
using OutputAllocator = std::function<absl::StatusOr<Tensor*>(int k, const Shape& shape)>;

// Runs `program` over `inputs` (one tensor per program input). False, with nothing allocated,
// when the program cannot run them (a tensor that is not float32, bounds that are not
// scalars, intermediate results of differing shapes): the caller computes the nodes another way.
absl::StatusOr<bool> RunProgram(const KernelContext& ctx, const EwProgram& program,
                                absl::Span<const Tensor* const> inputs,
                                const OutputAllocator& allocate);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_FUSED_ELEMENTWISE_H_
