#ifndef GRAPHOPT_PASSES_RNN_UNROLL_H_
#define GRAPHOPT_PASSES_RNN_UNROLL_H_

// The unrolling of ONNX RNN, GRU and LSTM nodes into differentiable primitives, for the
// decompose_rnn pass (passes/decompose_rnn_pass.h): what one node computes, as
// runtime/kernels/rnn.cc computes it, step by step.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/op_registry.h"
#include "graph/opset.h"

namespace graphopt {
namespace rnn_unroll {

enum class Cell { kRnn = 0, kGru = 1, kLstm = 2 };
constexpr int kNumCells = 3;
constexpr Cell kCells[kNumCells] = {Cell::kRnn, Cell::kGru, Cell::kLstm};

inline const char* CellName(Cell c) {
  return c == Cell::kRnn ? "RNN" : c == Cell::kGru ? "GRU" : "LSTM";
}
inline int NumGates(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }
inline int NumActivations(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 2 : 3; }

// One activation of the recurrence as runtime/kernels/rnn.cc applies it, with its parameters.
struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  };
  Kind kind = kTanh;
  float alpha = 0;
  float beta = 0;
};

// Everything about one recurrent node that the unrolling needs, checked before any edit.
struct Plan {
  NodeId node;
  Cell cell = Cell::kRnn;
  // Names of the new nodes and values start with it: the node's name, or "<Op>#<id>".
  std::string prefix;
  v1::DataType dtype = v1::DT_FLOAT32;
  int64_t seq = 0;
  int64_t hidden = 0;
  int dirs = 1;
  bool reverse_only = false;
  int64_t layout = 0;
  float clip = 0;  // 0: none
  bool linear_before_reset = false;
  bool input_forget = false;
  std::vector<Activation> activations;  // NumActivations(cell) per direction
};

// Adds the nodes of one unrolled recurrent node, each typed and shaped as it is added.
class Unroller {
 public:
  Unroller(Graph& graph, const OpRegistry& ops, DimsValueTable* dims)
      : g_(graph), ops_(ops), dims_(dims), opset_(DefaultDomainOpset(graph)) {}

  // Replaces plan.node by its unrolled graph; returns how many nodes it added. Per direction,
  // W, R, B and P are cut and transposed once; per step, x_t W^T + b (+ h R^T) is split into
  // the gates, which follow the kernel's formulas (a state that is absent, hence zero, drops
  // its terms); Y, Y_h and Y_c are built only when read, and take the node's output values.
  // Node and value names are "<prefix>/t<k>/..." ("<prefix>/t<k>/d<dir>/..." when
  // bidirectional). The plan must come from a check of the node (the pass's MakePlan).
  absl::StatusOr<int64_t> Unroll(const Plan& plan);

 private:
  bool NewForms(int64_t since) const { return opset_ == 0 || opset_ >= since; }

  // Adds node "<prefix>/<name>" with `num_outputs` new values named like it, or producing
  // `into` (a detached output of the recurrent node) when valid.
  absl::StatusOr<std::vector<ValueId>> Emit(const std::string& name, const char* op_type,
                                            std::vector<ValueId> inputs, AttributeMap attrs,
                                            int num_outputs, ValueId into = ValueId());
  absl::StatusOr<ValueId> Emit1(const std::string& name, const char* op_type,
                                std::vector<ValueId> inputs, AttributeMap attrs = {},
                                ValueId into = ValueId()) {
    absl::StatusOr<std::vector<ValueId>> out =
        Emit(name, op_type, std::move(inputs), std::move(attrs), 1, into);
    if (!out.ok()) return out.status();
    return (*out)[0];
  }
  ValueId AddConstant(v1::Tensor tensor);
  // int64 [values.size()] constants and scalars of the plan's dtype, one per distinct value.
  ValueId Ints(const std::vector<int64_t>& values);
  ValueId Scalar(float value);

  absl::StatusOr<ValueId> Squeeze(const std::string& name, ValueId x, std::vector<int64_t> axes);
  absl::StatusOr<ValueId> Unsqueeze(const std::string& name, ValueId x, std::vector<int64_t> axes,
                                    ValueId into = ValueId());
  absl::StatusOr<std::vector<ValueId>> Split(const std::string& name, ValueId x, int64_t axis,
                                             const std::vector<int64_t>& sizes);
  // The `count` slices of x along `axis` with that axis removed.
  absl::StatusOr<std::vector<ValueId>> Unstack(const std::string& name, ValueId x, int64_t axis,
                                               int64_t count);
  // Inverse of Unstack: `parts` given `axes` (Unsqueeze) and joined along `axis`; into `into`.
  absl::StatusOr<ValueId> Stack(const std::string& name, const std::vector<ValueId>& parts,
                                std::vector<int64_t> axes, int64_t axis, ValueId into);
  // act(clip(x)), clipping unless `clip` is false (LSTM's output activation).
  absl::StatusOr<ValueId> Activate(const std::string& name, ValueId x, const Activation& act,
                                   bool clip);

  // One time step of direction d: the new hidden state (and cell state for LSTM).
  absl::Status Step(const std::string& at, int d, ValueId x, ValueId* h, ValueId* c);

  Graph& g_;
  const OpRegistry& ops_;
  DimsValueTable* dims_;
  const int64_t opset_;
  // Per node being unrolled:
  const Plan* plan_ = nullptr;
  std::string device_;
  int64_t added_ = 0;
  std::map<std::vector<int64_t>, ValueId> ints_;
  std::map<float, ValueId> scalars_;
  // Per direction: W^T [in, GH], R^T [H, GH] (GRU: split as [H, 2H] and [H, H]), the bias
  // added to the input projection, GRU's Rbh under linear_before_reset, LSTM's peepholes.
  struct Weights {
    ValueId wt, rt, rt_zr, rt_h, bias, rbh, p_i, p_o, p_f;
  };
  Weights w_[2];
};

}  // namespace rnn_unroll
}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_RNN_UNROLL_H_
