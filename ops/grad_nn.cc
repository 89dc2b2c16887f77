// Gradients of the neural-network ops (ops/nn.cc) and of the nn family's backward ops
// (ops/nn_grad.cc): matrix products and convolutions here, pools and normalisations in
// grad_nn_norm.cc.
//
// Second order: every gradient here is written in ops that have gradients themselves. MatMul
// and Gemm are bilinear (their gradients are MatMul/Gemm/Transpose/Reshape/ReduceSum); Conv's
// gradients are ConvGradData and ConvGradWeight, which are bilinear in (dY, W) and (X, dY) and
// whose gradients are Conv, ConvGradData and ConvGradWeight again; so double backward and
// Hessian-vector products through CNNs stay on these kernels.

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/gradient.h"
#include "ops/grad_nn_internal.h"
#include "ops/grad_table.h"
#include "ops/nn_grad_ops.h"

namespace graphopt {
namespace builtin_internal {

// --- GradEmitter ------------------------------------------------------------------------------

ValueId GradEmitter::Op(absl::string_view type, std::initializer_list<ValueId> inputs,
                        AttributeMap attrs, absl::string_view domain) {
  if (!ok()) return ValueId();
  absl::StatusOr<std::vector<ValueId>> r =
      ctx_.Emit(type, std::vector<ValueId>(inputs), std::move(attrs), 1, domain);
  if (!r.ok()) {
    Fail(r.status());
    return ValueId();
  }
  return (*r)[0];
}

std::vector<ValueId> GradEmitter::OpN(absl::string_view type,
                                      std::initializer_list<ValueId> inputs, int n,
                                      AttributeMap attrs, absl::string_view domain) {
  if (!ok()) return {};
  absl::StatusOr<std::vector<ValueId>> r =
      ctx_.Emit(type, std::vector<ValueId>(inputs), std::move(attrs), n, domain);
  if (!r.ok()) {
    Fail(r.status());
    return {};
  }
  return *std::move(r);
}

ValueId GradEmitter::Take(absl::StatusOr<ValueId> r) {
  if (!r.ok()) {
    Fail(r.status());
    return ValueId();
  }
  return *r;
}

ValueId GradEmitter::Scalar(double v, ValueId like) {
  if (!ok()) return ValueId();
  return ScalarConstant(ctx_, v, ctx_.dtype(like));
}

int GradEmitter::Rank(ValueId v) const {
  if (!v.valid()) return -1;
  const std::optional<Dims>& s = ctx_.shape(v);
  return s ? static_cast<int>(s->size()) : -1;
}

std::optional<std::vector<int64_t>> GradEmitter::StaticDims(ValueId v) const {
  if (!v.valid()) return std::nullopt;
  const std::optional<Dims>& s = ctx_.shape(v);
  if (!s) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *s) {
    if (!d.is_known()) return std::nullopt;
    out.push_back(d.size());
  }
  return out;
}

ValueId GradEmitter::ShapeValue(ValueId x) {
  if (!ok()) return ValueId();
  if (std::optional<std::vector<int64_t>> dims = StaticDims(x)) return Ints(*dims);
  return Take(ShapeOf(ctx_, x));
}

ValueId GradEmitter::ReduceMean(ValueId x, absl::Span<const int64_t> axes, bool keepdims) {
  if (!ok()) return ValueId();
  AttributeMap attrs;
  attrs["keepdims"] = IntAttr(keepdims ? 1 : 0);
  const int64_t opset = ctx_.opset_version();
  if (opset != 0 && opset < 18) {
    attrs["axes"] = IntsAttr(axes);
    return Op("ReduceMean", {x}, std::move(attrs));
  }
  return Op("ReduceMean", {x, Ints(axes)}, std::move(attrs));
}

ValueId GradEmitter::CountRatio(ValueId big, ValueId small, ValueId like) {
  if (!ok()) return ValueId();
  const std::optional<std::vector<int64_t>> b = StaticDims(big), s = StaticDims(small);
  if (b && s) {
    int64_t nb = 1, ns = 1;
    for (int64_t d : *b) nb *= d;
    for (int64_t d : *s) ns *= d;
    return Scalar(ns == 0 ? 0.0 : static_cast<double>(nb) / static_cast<double>(ns), like);
  }
  AttributeMap to;
  to["to"] = IntAttr(ctx_.dtype(like));
  const ValueId nb = Op("Cast", {Op("Size", {big})}, to);
  const ValueId ns = Op("Cast", {Op("Size", {small})}, to);
  return Op("Div", {nb, ns});
}

AttributeMap GradEmitter::CopyAttrs(std::initializer_list<absl::string_view> names) const {
  AttributeMap out;
  for (absl::string_view name : names) {
    auto it = ctx_.node().attributes.find(std::string(name));
    if (it != ctx_.node().attributes.end()) out[it->first] = it->second;
  }
  return out;
}

absl::Status GradEmitter::Give(int i, ValueId grad) {
  if (!ok()) return status_;
  if (!grad.valid()) return ctx_.Error("no gradient was built for input ", i);
  return ctx_.AddInputGrad(i, grad);
}

namespace {

// perm swapping the last two of `rank` axes.
AttributeMap SwapLastTwo(int rank) {
  std::vector<int64_t> perm;
  for (int i = 0; i < rank - 2; ++i) perm.push_back(i);
  perm.push_back(rank - 1);
  perm.push_back(rank - 2);
  AttributeMap a;
  a["perm"] = IntsAttr(perm);
  return a;
}

// --- MatMul, Gemm -----------------------------------------------------------------------------

// MatMul(a, b) with numpy.matmul's rules. With both operands at least 2-D:
//   da = SumToShape(dy b^T, a), db = SumToShape(a^T dy, b)
// (the batch dims broadcast, so each gradient sums over the batch dims its operand lacks). A
// 1-D a is [1, K] whose M axis the result drops (dy gets it back as a 1 before N); a 1-D b is
// [K, 1] likewise. Both 1-D: a dot product, da = dy b, db = dy a.
absl::Status MatMulGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId a = ctx.input(0), b = ctx.input(1);
  const int ra = e.Rank(a), rb = e.Rank(b);
  if (ra < 1 || rb < 1) return ctx.Error("MatMul needs operands of known rank >= 1");
  if (ra == 1 && rb == 1) {
    if (ctx.needs_input_grad(0)) {
      if (absl::Status s = e.Give(0, e.Op("Mul", {dy, b})); !s.ok()) return s;
    }
    if (ctx.needs_input_grad(1)) return e.Give(1, e.Op("Mul", {dy, a}));
    return absl::OkStatus();
  }
  ValueId a2 = a, b2 = b, g = dy;
  if (ra == 1) {
    a2 = e.Unsqueeze(a, {0});
    g = e.Unsqueeze(g, {rb - 2});  // dy is batch(b) + [N]: M goes before N
  }
  if (rb == 1) {
    b2 = e.Unsqueeze(b, {1});
    g = e.Unsqueeze(g, {e.Rank(g)});
  }
  if (!e.ok()) return e.status();
  const int r2a = e.Rank(a2), r2b = e.Rank(b2);
  if (ctx.needs_input_grad(0)) {
    ValueId da = e.Op("MatMul", {g, e.Op("Transpose", {b2}, SwapLastTwo(r2b))});
    da = e.Take(SumToShape(ctx, da, a2));
    if (ra == 1) da = e.Take(ReshapeLike(ctx, da, a));
    if (absl::Status s = e.Give(0, da); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) {
    ValueId db;
    const std::optional<std::vector<int64_t>> bd = e.StaticDims(b2);
    if (r2b == 2 && r2a > 2 && bd) {
      // A shared weight [K, N] of batched activations: one product over the flattened batch,
      // not a batch of [K, N] products summed afterwards.
      const ValueId a_rows = e.Op("Reshape", {a2, e.Ints({-1, (*bd)[0]})});
      const ValueId g_rows = e.Op("Reshape", {g, e.Ints({-1, (*bd)[1]})});
      db = e.Op("MatMul", {e.Op("Transpose", {a_rows}, SwapLastTwo(2)), g_rows});
    } else {
      db = e.Op("MatMul", {e.Op("Transpose", {a2}, SwapLastTwo(r2a)), g});
      db = e.Take(SumToShape(ctx, db, b2));
    }
    if (rb == 1) db = e.Take(ReshapeLike(ctx, db, b));
    return e.Give(1, db);
  }
  return absl::OkStatus();
}

// Gemm: Y = alpha op(A) op(B) + beta C. With op(A) [M, K], op(B) [K, N]:
//   d op(A) = alpha dY op(B)^T, d op(B) = alpha op(A)^T dY, dC = SumToShape(beta dY, C);
// each written as one Gemm with the transpositions as its flags.
absl::Status GemmGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  absl::StatusOr<float> alpha = ctx.GetFloat("alpha", 1.0f);
  if (!alpha.ok()) return alpha.status();
  absl::StatusOr<float> beta = ctx.GetFloat("beta", 1.0f);
  if (!beta.ok()) return beta.status();
  absl::StatusOr<int64_t> ta = ctx.GetInt("transA", 0);
  if (!ta.ok()) return ta.status();
  absl::StatusOr<int64_t> tb = ctx.GetInt("transB", 0);
  if (!tb.ok()) return tb.status();
  const ValueId a = ctx.input(0), b = ctx.input(1);
  // Gemm's C is optional from opset 11; before, a zero scalar stands in.
  const int64_t opset = ctx.opset_version();
  const ValueId no_c = opset != 0 && opset < 11 ? e.Scalar(0.0, dy) : ValueId();
  auto gemm = [&](ValueId p, ValueId q, bool tp, bool tq) {
    AttributeMap attrs;
    if (*alpha != 1.0f) attrs["alpha"] = FloatAttr(*alpha);
    if (tp) attrs["transA"] = IntAttr(1);
    if (tq) attrs["transB"] = IntAttr(1);
    return no_c.valid() ? e.Op("Gemm", {p, q, no_c}, std::move(attrs))
                        : e.Op("Gemm", {p, q}, std::move(attrs));
  };
  if (ctx.needs_input_grad(0)) {
    // A = op(A) (no transA): alpha dY op(B)^T; A = op(A)^T (transA): alpha op(B) dY^T.
    const ValueId da = *ta == 0 ? gemm(dy, b, false, *tb == 0) : gemm(b, dy, *tb != 0, true);
    if (absl::Status s = e.Give(0, da); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) {
    // B = op(B): alpha op(A)^T dY; B = op(B)^T: alpha dY^T op(A).
    const ValueId db = *tb == 0 ? gemm(a, dy, *ta == 0, false) : gemm(dy, a, true, *ta != 0);
    if (absl::Status s = e.Give(1, db); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(2)) {
    ValueId dc = dy;
    if (*beta != 1.0f) dc = e.Op("Mul", {dy, e.Scalar(*beta, dy)});
    return e.Give(2, e.Take(SumToShape(ctx, dc, ctx.input(2))));
  }
  return absl::OkStatus();
}

// --- Convolutions -----------------------------------------------------------------------------

// Conv's window attributes, as the backward ops take them.
AttributeMap ConvAttrs(const GradEmitter& e) {
  return e.CopyAttrs({"auto_pad", "pads", "strides", "dilations", "group", "kernel_shape"});
}

// The bias gradient of a convolution: dY summed over every axis but the channels'.
ValueId BiasGrad(GradEmitter& e, ValueId dy, int rank) {
  std::vector<int64_t> axes = {0};
  for (int i = 2; i < rank; ++i) axes.push_back(i);
  return e.ReduceSum(dy, axes, false);
}

// Conv(X, W, B): dX = ConvGradData(dY, W, Shape(X)), dW = ConvGradWeight(X, dY, Shape(W)),
// dB = dY summed over N and the spatial axes.
absl::Status ConvGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0), w = ctx.input(1);
  if (ctx.needs_input_grad(0)) {
    const ValueId dx =
        e.Op(kConvGradDataOp, {dy, w, e.ShapeValue(x)}, ConvAttrs(e), kNnGradDomain);
    if (absl::Status s = e.Give(0, dx); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) {
    const ValueId dw =
        e.Op(kConvGradWeightOp, {x, dy, e.ShapeValue(w)}, ConvAttrs(e), kNnGradDomain);
    if (absl::Status s = e.Give(1, dw); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(2)) {
    const int rank = std::max(e.Rank(dy), e.Rank(x));
    if (rank < 3) return ctx.Error("Conv's bias gradient needs the output's rank");
    return e.Give(2, BiasGrad(e, dy, rank));
  }
  return absl::OkStatus();
}

// ConvTranspose(X, W, B) is the adjoint in its input of a Conv with W [C, M/group, k...]
// mapping [N, M, out...] to [N, C, in...], with the pads the transposed convolution resolved
// (from pads, auto_pad, output_shape and output_padding; needs static spatial dims). So:
//   dX = Conv(dY, W, pads), dW = ConvGradWeight(dY, X, Shape(W), pads), dB as Conv's.
// The Conv's floor division drops output_padding's extra positions, as the adjoint must.
absl::Status ConvTransposeGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0), w = ctx.input(1);
  const std::optional<std::vector<int64_t>> xd = e.StaticDims(x), wd = e.StaticDims(w);
  if (!xd || !wd || xd->size() < 3 || xd->size() != wd->size()) {
    return ctx.Error("ConvTranspose is differentiated for static shapes of X and W only");
  }
  const size_t nd = xd->size() - 2;
  auto per_dim = [&](absl::string_view name, int64_t fill, size_t n)
      -> absl::StatusOr<std::vector<int64_t>> {
    absl::StatusOr<std::vector<int64_t>> v = ctx.GetInts(name, std::vector<int64_t>(n, fill));
    if (!v.ok()) return v.status();
    if (v->empty()) v->assign(n, fill);
    if (v->size() != n) return ctx.Error("attribute '", name, "' has ", v->size(), " values");
    return v;
  };
  absl::StatusOr<std::vector<int64_t>> strides = per_dim("strides", 1, nd);
  if (!strides.ok()) return strides.status();
  absl::StatusOr<std::vector<int64_t>> dil = per_dim("dilations", 1, nd);
  if (!dil.ok()) return dil.status();
  absl::StatusOr<std::vector<int64_t>> opad = per_dim("output_padding", 0, nd);
  if (!opad.ok()) return opad.status();
  absl::StatusOr<std::vector<int64_t>> pads = per_dim("pads", 0, 2 * nd);
  if (!pads.ok()) return pads.status();
  absl::StatusOr<std::string> auto_pad = ctx.GetString("auto_pad", "NOTSET");
  if (!auto_pad.ok()) return auto_pad.status();
  absl::StatusOr<std::vector<int64_t>> output_shape = ctx.GetInts("output_shape", {});
  if (!output_shape.ok()) return output_shape.status();
  const bool same = *auto_pad == "SAME_UPPER" || *auto_pad == "SAME_LOWER";
  std::vector<int64_t> resolved(2 * nd, 0);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t in = (*xd)[i + 2], k = (*wd)[i + 2], s = (*strides)[i];
    const int64_t full = s * (in - 1) + (*opad)[i] + (k - 1) * (*dil)[i] + 1;
    int64_t target = -1;
    if (!output_shape->empty()) {
      if (output_shape->size() < nd) return ctx.Error("attribute 'output_shape' is too short");
      target = (*output_shape)[output_shape->size() - nd + i];
    } else if (same) {
      target = in * s;
    }
    if (target >= 0) {
      const int64_t total = full - target;
      if (total < 0) {
        return ctx.Error("an output_shape beyond the full transposed convolution is not "
                         "differentiated");
      }
      const int64_t upper = *auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      resolved[i] = upper;
      resolved[i + nd] = total - upper;
    } else if (*auto_pad == "NOTSET") {
      resolved[i] = (*pads)[i];
      resolved[i + nd] = (*pads)[i + nd];
    }
  }
  AttributeMap attrs = e.CopyAttrs({"strides", "dilations", "group"});
  attrs["pads"] = IntsAttr(resolved);
  if (ctx.needs_input_grad(0)) {
    if (absl::Status s = e.Give(0, e.Op("Conv", {dy, w}, attrs)); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) {
    const ValueId dw =
        e.Op(kConvGradWeightOp, {dy, x, e.ShapeValue(w)}, attrs, kNnGradDomain);
    if (absl::Status s = e.Give(1, dw); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(2)) return e.Give(2, BiasGrad(e, dy, static_cast<int>(nd + 2)));
  return absl::OkStatus();
}

// ConvGradData(dY, W, X_shape) = dX is bilinear: with ddX the gradient of dX,
//   d dY = Conv(ddX, W), d W = ConvGradWeight(ddX, dY, Shape(W)).
absl::Status ConvGradDataGradient(GradientContext& ctx) {
  const ValueId ddx = ctx.output_grad(0);
  if (!ddx.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId dy = ctx.input(0), w = ctx.input(1);
  if (ctx.needs_input_grad(0)) {
    if (absl::Status s = e.Give(0, e.Op("Conv", {ddx, w}, ConvAttrs(e))); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) {
    return e.Give(1, e.Op(kConvGradWeightOp, {ddx, dy, e.ShapeValue(w)}, ConvAttrs(e),
                          kNnGradDomain));
  }
  return absl::OkStatus();
}

// ConvGradWeight(X, dY, W_shape) = dW is bilinear: with ddW the gradient of dW,
//   d X = ConvGradData(dY, ddW, Shape(X)), d dY = Conv(X, ddW).
absl::Status ConvGradWeightGradient(GradientContext& ctx) {
  const ValueId ddw = ctx.output_grad(0);
  if (!ddw.valid()) return absl::OkStatus();
  GradEmitter e(ctx);
  const ValueId x = ctx.input(0), dy = ctx.input(1);
  if (ctx.needs_input_grad(0)) {
    const ValueId dx =
        e.Op(kConvGradDataOp, {dy, ddw, e.ShapeValue(x)}, ConvAttrs(e), kNnGradDomain);
    if (absl::Status s = e.Give(0, dx); !s.ok()) return s;
  }
  if (ctx.needs_input_grad(1)) return e.Give(1, e.Op("Conv", {x, ddw}, ConvAttrs(e)));
  return absl::OkStatus();
}

std::string GraphoptKey(absl::string_view op) { return absl::StrCat(kNnGradDomain, "::", op); }

}  // namespace

void AddNnGradients(GradientTable* table) {
  (*table)["MatMul"] = {MatMulGradient, {}};
  (*table)["Gemm"] = {GemmGradient, {}};
  (*table)["Conv"] = {ConvGradient, {}};
  (*table)["ConvTranspose"] = {ConvTransposeGradient, {}};
  (*table)[GraphoptKey(kConvGradDataOp)] = {ConvGradDataGradient, {2}};
  (*table)[GraphoptKey(kConvGradWeightOp)] = {ConvGradWeightGradient, {2}};
  AddNnPoolNormGradients(table);
}

}  // namespace builtin_internal
}  // namespace graphopt
