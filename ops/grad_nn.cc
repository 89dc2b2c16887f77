// Gradients of the neural-network ops (ops/nn.cc).

#include "absl/status/status.h"
#include "graph/gradient.h"
#include "ops/grad_table.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// MatMul(a, b) for rank-2 operands: da = dy b^T, db = a^T dy.
// TODO(grad-nn): batched and 1-D operands (numpy matmul rules) with SumToShape for broadcast batch dims.
absl::Status MatMulGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  const ValueId a = ctx.input(0);
  const ValueId b = ctx.input(1);
  const auto rank = [&](ValueId v) { return ctx.shape(v) ? static_cast<int>(ctx.shape(v)->size()) : -1; };
  if (rank(a) != 2 || rank(b) != 2) {
    return ctx.Error("only rank-2 MatMul operands are differentiated so far");
  }
  AttributeMap perm;
  perm["perm"] = IntsAttr({1, 0});
  if (ctx.needs_input_grad(0)) {
    absl::StatusOr<ValueId> bt = ctx.Emit1("Transpose", {b}, perm);
    if (!bt.ok()) return bt.status();
    absl::StatusOr<ValueId> g = ctx.Emit1("MatMul", {dy, *bt});
    if (!g.ok()) return g.status();
    if (absl::Status s = ctx.AddInputGrad(0, *g); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) {
    absl::StatusOr<ValueId> at = ctx.Emit1("Transpose", {a}, perm);
    if (!at.ok()) return at.status();
    absl::StatusOr<ValueId> g = ctx.Emit1("MatMul", {*at, dy});
    if (!g.ok()) return g.status();
    if (absl::Status s = ctx.AddInputGrad(1, *g); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace

void AddNnGradients(GradientTable* table) { (*table)["MatMul"] = {MatMulGradient, {}}; }

}  // namespace builtin_internal
}  // namespace graphopt
