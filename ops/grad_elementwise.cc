// Gradients of the elementwise ops (ops/elementwise.cc). Broadcasting operands get their
// gradients summed back to their own shapes (SumToShape).

#include "absl/status/status.h"
#include "graph/gradient.h"
#include "ops/grad_table.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Add(a, b): da = dy, db = dy (each summed to its operand's shape). Sub negates db.
absl::Status AddSubGradient(GradientContext& ctx, bool subtract) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  if (ctx.needs_input_grad(0)) {
    absl::StatusOr<ValueId> g = SumToShape(ctx, dy, ctx.input(0));
    if (!g.ok()) return g.status();
    if (absl::Status s = ctx.AddInputGrad(0, *g); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) {
    ValueId g = dy;
    if (subtract) {
      absl::StatusOr<ValueId> neg = ctx.Emit1("Neg", {dy});
      if (!neg.ok()) return neg.status();
      g = *neg;
    }
    absl::StatusOr<ValueId> r = SumToShape(ctx, g, ctx.input(1));
    if (!r.ok()) return r.status();
    if (absl::Status s = ctx.AddInputGrad(1, *r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Mul(a, b): da = dy * b, db = dy * a.
absl::Status MulGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  for (int i = 0; i < 2; ++i) {
    if (!ctx.needs_input_grad(i)) continue;
    absl::StatusOr<ValueId> g = ctx.Emit1("Mul", {dy, ctx.input(1 - i)});
    if (!g.ok()) return g.status();
    absl::StatusOr<ValueId> r = SumToShape(ctx, *g, ctx.input(i));
    if (!r.ok()) return r.status();
    if (absl::Status s = ctx.AddInputGrad(i, *r); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Relu(x) = max(x, 0): dx = dy where x > 0, else 0. Written as Where over Greater so that the
// gradient is itself differentiable (in dy; the mask is piecewise constant).
absl::Status ReluGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  const ValueId x = ctx.input(0);
  const ValueId zero = ScalarConstant(ctx, 0.0, ctx.dtype(x));
  absl::StatusOr<ValueId> mask = ctx.Emit1("Greater", {x, zero});
  if (!mask.ok()) return mask.status();
  absl::StatusOr<ValueId> g = ctx.Emit1("Where", {*mask, dy, zero});
  if (!g.ok()) return g.status();
  return ctx.AddInputGrad(0, *g);
}

// Identity: dx = dy.
absl::Status IdentityGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  return ctx.AddInputGrad(0, dy);
}

}  // namespace

void AddElementwiseGradients(GradientTable* table) {
  (*table)["Add"] = {[](GradientContext& ctx) { return AddSubGradient(ctx, false); }, {}};
  (*table)["Sub"] = {[](GradientContext& ctx) { return AddSubGradient(ctx, true); }, {}};
  (*table)["Mul"] = {MulGradient, {}};
  (*table)["Relu"] = {ReluGradient, {}};
  (*table)["Identity"] = {IdentityGradient, {}};
}

}  // namespace builtin_internal
}  // namespace graphopt
