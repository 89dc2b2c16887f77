// Gradients of the elementwise ops (ops/elementwise.cc). (Dropout's is in grad_tensor.cc.)
//
// Every gradient is written in differentiable ops (arithmetic, Where over comparisons, Cast, the
// unary functions), so that the gradient pass can run on its own output. Masks come from
// comparisons (bool, so no gradient flows into them) and Where selects between dy and zero
// without arithmetic on the unselected branch, so no NaN or infinity of a masked-out branch leaks
// into a gradient. Where the output is at hand it is reused (Exp, Sigmoid, Tanh, Sqrt, Elu...),
// which costs no recomputation and is numerically the form the reference frameworks use.
//
// Broadcasting operands get their gradients summed back to their own shapes: numpy rules
// (SumToShape) from opset 7, ONNX's legacy 'broadcast'/'axis' placement before it. Emitted
// binary ops carry broadcast=1 under opsets < 7, where ONNX broadcasts only with it.
//
// Piecewise functions take the derivative of the branch the kernel evaluates at a point
// (runtime/kernels/elementwise_unary.cc): Relu/LeakyRelu/PRelu/Elu pass dy at x == 0 where the
// kernel takes the x >= 0 branch; Clip passes dy at x == min and x == max (as torch.clamp).
// Sign, Floor, Ceil and Round have a zero derivative wherever it exists: their gradient
// functions add no contribution, so the pass treats them as constants rather than failing.

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "graph/constant_view.h"
#include "graph/gradient.h"
#include "ops/grad_table.h"

namespace graphopt {
namespace builtin_internal {
namespace {

// Emits backward nodes for one forward node, keeping the first error: a chain of emissions
// reads as the formula it computes, and the caller checks status() once at the end. After an
// error every emission returns an invalid id and emits nothing.
class Emitter {
 public:
  explicit Emitter(GradientContext& ctx) : ctx_(ctx) {
    const int64_t opset = ctx.opset_version();
    legacy_broadcast_ = opset > 0 && opset < 7;
  }

  GradientContext& ctx() { return ctx_; }
  const absl::Status& status() const { return status_; }
  bool ok() const { return status_.ok(); }

  ValueId Op(absl::string_view op_type, std::vector<ValueId> inputs, AttributeMap attrs = {}) {
    if (!status_.ok()) return ValueId();
    for (ValueId v : inputs) {
      if (!v.valid()) {
        status_ = ctx_.Error("internal: ", op_type, " emitted with an invalid operand");
        return ValueId();
      }
    }
    absl::StatusOr<ValueId> out = ctx_.Emit1(op_type, inputs, std::move(attrs));
    if (!out.ok()) {
      status_ = out.status();
      return ValueId();
    }
    return *out;
  }

  // A broadcasting binary op whose result has `a`'s shape or a broadcast of both. Under opsets
  // < 7 `a` must be the larger operand: ONNX's legacy rule broadcasts only B, and only with
  // broadcast=1 (harmless when the shapes are equal).
  ValueId Bin(absl::string_view op_type, ValueId a, ValueId b) {
    AttributeMap attrs;
    if (legacy_broadcast_) attrs["broadcast"] = IntAttr(1);
    return Op(op_type, {a, b}, std::move(attrs));
  }
  // The same with the forward node's own legacy placement of B ('broadcast' and 'axis'), for a
  // B operand that is the forward node's input 1.
  ValueId BinLikeForward(absl::string_view op_type, ValueId a, ValueId b) {
    if (!legacy_broadcast_) return Op(op_type, {a, b});
    AttributeMap attrs;
    for (const char* name : {"broadcast", "axis"}) {
      if (const v1::Attribute* at = ctx_.attr(name)) attrs[name] = *at;
    }
    return Op(op_type, {a, b}, std::move(attrs));
  }

  ValueId Add(ValueId a, ValueId b) { return Bin("Add", a, b); }
  ValueId Sub(ValueId a, ValueId b) { return Bin("Sub", a, b); }
  ValueId Mul(ValueId a, ValueId b) { return Bin("Mul", a, b); }
  ValueId Div(ValueId a, ValueId b) { return Bin("Div", a, b); }
  ValueId Greater(ValueId a, ValueId b) { return Bin("Greater", a, b); }
  ValueId Less(ValueId a, ValueId b) { return Bin("Less", a, b); }
  ValueId Equal(ValueId a, ValueId b) { return Bin("Equal", a, b); }
  ValueId Or(ValueId a, ValueId b) { return Bin("Or", a, b); }
  ValueId And(ValueId a, ValueId b) { return Bin("And", a, b); }
  ValueId Neg(ValueId a) { return Op("Neg", {a}); }
  ValueId Where(ValueId c, ValueId a, ValueId b) { return Op("Where", {c, a, b}); }
  ValueId Unary(absl::string_view op_type, ValueId a) { return Op(op_type, {a}); }
  // c - a, with the tensor operand first under the legacy rule.
  ValueId Rsub(double c, ValueId a) {
    if (!legacy_broadcast_) return Sub(Scalar(c, a), a);
    return Add(Neg(a), Scalar(c, a));
  }
  ValueId MulScalar(ValueId a, double c) { return Mul(a, Scalar(c, a)); }
  ValueId AddScalar(ValueId a, double c) { return Add(a, Scalar(c, a)); }
  ValueId Cast(ValueId a, v1::DataType to) {
    if (!a.valid() || ctx_.dtype(a) == to) return a;
    AttributeMap attrs;
    attrs["to"] = IntAttr(to);
    return Op("Cast", {a}, std::move(attrs));
  }
  // A rank-0 constant of `like`'s element type.
  ValueId Scalar(double value, ValueId like) {
    if (!status_.ok() || !like.valid()) return ValueId();
    return ScalarConstant(ctx_, value, ctx_.dtype(like));
  }

  // `grad` (of the broadcast result's shape) summed to the shape of the forward node's input i.
  ValueId SumToInput(ValueId grad, int i);

  // Hands `grad` to input i when it is wanted.
  void Grad(int i, ValueId grad) {
    if (!status_.ok() || !ctx_.needs_input_grad(i)) return;
    if (!grad.valid()) {
      status_ = ctx_.Error("internal: invalid gradient for input ", i);
      return;
    }
    status_ = ctx_.AddInputGrad(i, grad);
  }

  void Fail(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
  }

 private:
  // Input 1 under the legacy rule: `grad` has input 0's shape; B's dims sit at A's axes
  // [start, start + rank(B)), a B dim of 1 repeating. Sums over every other axis and the
  // repeated ones, then takes B's shape.
  ValueId LegacySumToB(ValueId grad);

  GradientContext& ctx_;
  absl::Status status_;
  bool legacy_broadcast_ = false;
};

ValueId Emitter::SumToInput(ValueId grad, int i) {
  if (!status_.ok() || !grad.valid()) return ValueId();
  if (legacy_broadcast_ && ctx_.attr("broadcast") != nullptr) {
    absl::StatusOr<int64_t> b = ctx_.GetInt("broadcast", 0);
    if (!b.ok()) {
      Fail(b.status());
      return ValueId();
    }
    // Input 0 has the result's shape; with broadcast=0 so has input 1.
    if (i == 0 || *b == 0) return grad;
    return LegacySumToB(grad);
  }
  absl::StatusOr<ValueId> r = SumToShape(ctx_, grad, ctx_.input(i));
  if (!r.ok()) {
    Fail(r.status());
    return ValueId();
  }
  return *r;
}

ValueId Emitter::LegacySumToB(ValueId grad) {
  const ValueId b = ctx_.input(1);
  const std::optional<Dims>& a_shape = ctx_.shape(grad);
  const std::optional<Dims>& b_shape = ctx_.shape(b);
  if (!a_shape || !b_shape) {
    Fail(ctx_.Error("opset ", ctx_.opset_version(),
                    " broadcasting needs the ranks of both operands"));
    return ValueId();
  }
  const int64_t ra = static_cast<int64_t>(a_shape->size());
  const int64_t rb = static_cast<int64_t>(b_shape->size());
  bool one_element = true;
  for (const Dim& d : *b_shape) one_element &= d.is_known() && d.size() == 1;
  std::vector<int64_t> axes;
  if (one_element) {
    for (int64_t k = 0; k < ra; ++k) axes.push_back(k);
  } else {
    int64_t start = ra - rb;
    if (ctx_.attr("axis") != nullptr) {
      absl::StatusOr<int64_t> axis = ctx_.GetInt("axis", start);
      if (!axis.ok()) {
        Fail(axis.status());
        return ValueId();
      }
      start = *axis < 0 ? *axis + ra : *axis;
    }
    if (start < 0 || start + rb > ra) {
      Fail(ctx_.Error("attribute 'axis' does not place B ", ShapeToString(b_shape), " in A ",
                      ShapeToString(a_shape)));
      return ValueId();
    }
    for (int64_t k = 0; k < ra; ++k) {
      const bool inside = k >= start && k < start + rb;
      if (!inside) {
        axes.push_back(k);
        continue;
      }
      const Dim& db = (*b_shape)[k - start];
      const Dim& da = (*a_shape)[k];
      if (db.is_known() && db.size() == 1 && !(da.is_known() && da.size() == 1)) {
        axes.push_back(k);
      }
    }
  }
  if (axes.empty() && ra == rb) return grad;
  ValueId sum = grad;
  if (!axes.empty()) {
    absl::StatusOr<ValueId> s = ReduceSumAxes(ctx_, grad, axes, /*keepdims=*/true);
    if (!s.ok()) {
      Fail(s.status());
      return ValueId();
    }
    sum = *s;
  }
  absl::StatusOr<ValueId> r = ReshapeLike(ctx_, sum, b);
  if (!r.ok()) {
    Fail(r.status());
    return ValueId();
  }
  return *r;
}

// The attribute, or the fallback; records a bad attribute kind in `e`.
float FloatAttrOr(Emitter& e, absl::string_view name, float fallback) {
  absl::StatusOr<float> v = e.ctx().GetFloat(name, fallback);
  if (!v.ok()) {
    e.Fail(v.status());
    return fallback;
  }
  return *v;
}

// The single element of a constant operand (an initializer that is not a graph input, or a
// Constant node's value); nullopt when `v` is not such a constant.
std::optional<double> ScalarConstantValue(const GradientContext& ctx, ValueId v) {
  if (!v.valid()) return std::nullopt;
  std::optional<ConstantView> c = ConstantView::Of(ctx.graph(), v, /*max_elements=*/1);
  if (!c || c->num_elements() != 1) return std::nullopt;
  return c->AsDouble(0);
}

// --- Unary ops ---------------------------------------------------------------------------------

// dx = fn(e, x, y, dy) for a one-input, one-output op.
template <typename Fn>
absl::Status UnaryGradient(GradientContext& ctx, Fn fn) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  Emitter e(ctx);
  const ValueId g = fn(e, ctx.input(0), ctx.output(0), dy);
  e.Grad(0, g);
  return e.status();
}

// The derivative of each unary op given x, y = f(x) and dy.
using UnaryFormula = ValueId (*)(Emitter&, ValueId x, ValueId y, ValueId dy);

// Relu(x) = max(x, 0): dy where x > 0.
ValueId ReluGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  const ValueId zero = e.Scalar(0, x);
  return e.Where(e.Greater(x, zero), dy, zero);
}
ValueId IdentityGrad(Emitter&, ValueId, ValueId, ValueId dy) { return dy; }
ValueId NegGrad(Emitter& e, ValueId, ValueId, ValueId dy) { return e.Neg(dy); }
// |x|' = sign(x) (0 at 0, the subgradient torch also takes).
ValueId AbsGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Mul(dy, e.Unary("Sign", x));
}
// sqrt(x)' = 1 / (2 y).
ValueId SqrtGrad(Emitter& e, ValueId, ValueId y, ValueId dy) {
  return e.Div(e.MulScalar(dy, 0.5), y);
}
// (1/x)' = -y^2.
ValueId ReciprocalGrad(Emitter& e, ValueId, ValueId y, ValueId dy) {
  return e.Neg(e.Mul(dy, e.Mul(y, y)));
}
ValueId ExpGrad(Emitter& e, ValueId, ValueId y, ValueId dy) { return e.Mul(dy, y); }
ValueId LogGrad(Emitter& e, ValueId x, ValueId, ValueId dy) { return e.Div(dy, x); }
// erf(x)' = 2 / sqrt(pi) exp(-x^2).
ValueId ErfGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  const ValueId g = e.Unary("Exp", e.Neg(e.Mul(x, x)));
  return e.Mul(dy, e.MulScalar(g, 2.0 / std::sqrt(M_PI)));
}
// tanh' = 1 - y^2.
ValueId TanhGrad(Emitter& e, ValueId, ValueId y, ValueId dy) {
  return e.Mul(dy, e.Rsub(1, e.Mul(y, y)));
}
// sigmoid' = y (1 - y).
ValueId SigmoidGrad(Emitter& e, ValueId, ValueId y, ValueId dy) {
  return e.Mul(dy, e.Mul(y, e.Rsub(1, y)));
}
// softplus' = sigmoid(x).
ValueId SoftplusGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Mul(dy, e.Unary("Sigmoid", x));
}
// softsign' = 1 / (1 + |x|)^2.
ValueId SoftsignGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  const ValueId d = e.AddScalar(e.Unary("Abs", x), 1);
  return e.Div(dy, e.Mul(d, d));
}
// HardSwish = x relu6(x + 3) / 6: 0 below -3, 1 above 3, x / 3 + 1/2 between (both ends
// inclusive, as the kernel's clamp).
ValueId HardSwishGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  const ValueId zero = e.Scalar(0, x);
  const ValueId mid = e.Mul(dy, e.AddScalar(e.MulScalar(x, 1.0 / 3.0), 0.5));
  const ValueId upper = e.Where(e.Greater(x, e.Scalar(3, x)), dy, mid);
  return e.Where(e.Less(x, e.Scalar(-3, x)), zero, upper);
}
ValueId SinGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Mul(dy, e.Unary("Cos", x));
}
ValueId CosGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Neg(e.Mul(dy, e.Unary("Sin", x)));
}
// tan' = 1 + y^2.
ValueId TanGrad(Emitter& e, ValueId, ValueId y, ValueId dy) {
  return e.Mul(dy, e.AddScalar(e.Mul(y, y), 1));
}
// asin' = 1 / sqrt(1 - x^2); acos' its negation.
ValueId AsinGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Div(dy, e.Unary("Sqrt", e.Rsub(1, e.Mul(x, x))));
}
ValueId AcosGrad(Emitter& e, ValueId x, ValueId y, ValueId dy) {
  return e.Neg(AsinGrad(e, x, y, dy));
}
// atan' = 1 / (1 + x^2).
ValueId AtanGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Div(dy, e.AddScalar(e.Mul(x, x), 1));
}
ValueId SinhGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Mul(dy, e.Unary("Cosh", x));
}
ValueId CoshGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Mul(dy, e.Unary("Sinh", x));
}
// asinh' = 1 / sqrt(x^2 + 1); acosh' = 1 / sqrt(x^2 - 1); atanh' = 1 / (1 - x^2).
ValueId AsinhGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Div(dy, e.Unary("Sqrt", e.AddScalar(e.Mul(x, x), 1)));
}
ValueId AcoshGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Div(dy, e.Unary("Sqrt", e.AddScalar(e.Mul(x, x), -1)));
}
ValueId AtanhGrad(Emitter& e, ValueId x, ValueId, ValueId dy) {
  return e.Div(dy, e.Rsub(1, e.Mul(x, x)));
}

// LeakyRelu: alpha dy where x < 0 (the kernel's test), else dy.
absl::Status LeakyReluGradient(GradientContext& ctx) {
  return UnaryGradient(ctx, [](Emitter& e, ValueId x, ValueId, ValueId dy) {
    const float alpha = FloatAttrOr(e, "alpha", 0.01f);
    return e.Where(e.Less(x, e.Scalar(0, x)), e.MulScalar(dy, alpha), dy);
  });
}

// Elu: for x < 0, y = alpha (exp(x) - 1), so y' = y + alpha.
absl::Status EluGradient(GradientContext& ctx) {
  return UnaryGradient(ctx, [](Emitter& e, ValueId x, ValueId y, ValueId dy) {
    const float alpha = FloatAttrOr(e, "alpha", 1.0f);
    return e.Where(e.Less(x, e.Scalar(0, x)), e.Mul(dy, e.AddScalar(y, alpha)), dy);
  });
}

// Selu: gamma for x > 0; for x <= 0, y = gamma alpha (exp(x) - 1), so y' = y + gamma alpha.
absl::Status SeluGradient(GradientContext& ctx) {
  return UnaryGradient(ctx, [](Emitter& e, ValueId x, ValueId y, ValueId dy) {
    const float alpha = FloatAttrOr(e, "alpha", 1.67326319217681884765625f);
    const float gamma = FloatAttrOr(e, "gamma", 1.05070102214813232421875f);
    return e.Where(e.Greater(x, e.Scalar(0, x)), e.MulScalar(dy, gamma),
                   e.Mul(dy, e.AddScalar(y, static_cast<double>(gamma) * alpha)));
  });
}

// Celu: 1 for x > 0; for x <= 0, y = alpha (exp(x / alpha) - 1), so y' = y / alpha + 1.
absl::Status CeluGradient(GradientContext& ctx) {
  return UnaryGradient(ctx, [](Emitter& e, ValueId x, ValueId y, ValueId dy) {
    const float alpha = FloatAttrOr(e, "alpha", 1.0f);
    if (alpha == 0) e.Fail(e.ctx().Error("attribute 'alpha' must not be 0"));
    return e.Where(e.Greater(x, e.Scalar(0, x)), dy,
                   e.Mul(dy, e.AddScalar(e.MulScalar(y, 1.0 / alpha), 1)));
  });
}

// ThresholdedRelu: dy where x > alpha.
absl::Status ThresholdedReluGradient(GradientContext& ctx) {
  return UnaryGradient(ctx, [](Emitter& e, ValueId x, ValueId, ValueId dy) {
    const float alpha = FloatAttrOr(e, "alpha", 1.0f);
    return e.Where(e.Greater(x, e.Scalar(alpha, x)), dy, e.Scalar(0, x));
  });
}

// HardSigmoid: alpha dy where 0 < y < 1 (the linear part), else 0.
absl::Status HardSigmoidGradient(GradientContext& ctx) {
  return UnaryGradient(ctx, [](Emitter& e, ValueId x, ValueId y, ValueId dy) {
    const float alpha = FloatAttrOr(e, "alpha", 0.2f);
    const ValueId linear = e.And(e.Greater(y, e.Scalar(0, y)), e.Less(y, e.Scalar(1, y)));
    return e.Where(linear, e.MulScalar(dy, alpha), e.Scalar(0, x));
  });
}

// Shrink: dy where |x| > lambd (x < -lambd or x > lambd, the kernel's tests).
absl::Status ShrinkGradient(GradientContext& ctx) {
  return UnaryGradient(ctx, [](Emitter& e, ValueId x, ValueId, ValueId dy) {
    const float lambd = FloatAttrOr(e, "lambd", 0.5f);
    const ValueId outside =
        e.Or(e.Less(x, e.Scalar(-lambd, x)), e.Greater(x, e.Scalar(lambd, x)));
    return e.Where(outside, dy, e.Scalar(0, x));
  });
}

// Sign, Floor, Ceil, Round: the derivative is zero wherever it exists, so nothing flows back.
// Declaring that (instead of having no gradient) lets the pass differentiate through them,
// e.g. the Sign in Abs's gradient when it differentiates its own output.
absl::Status ZeroGradient(GradientContext&) { return absl::OkStatus(); }

// --- Binary arithmetic -------------------------------------------------------------------------

// Add(a, b): da = dy, db = dy. Sub negates db.
absl::Status AddSubGradient(GradientContext& ctx, bool subtract) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  if (ctx.needs_input_grad(0)) e.Grad(0, e.SumToInput(dy, 0));
  if (ctx.needs_input_grad(1)) e.Grad(1, e.SumToInput(subtract ? e.Neg(dy) : dy, 1));
  return e.status();
}

// Mul(a, b): da = dy b, db = dy a.
absl::Status MulGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  if (ctx.needs_input_grad(0)) e.Grad(0, e.SumToInput(e.BinLikeForward("Mul", dy, ctx.input(1)), 0));
  if (ctx.needs_input_grad(1)) e.Grad(1, e.SumToInput(e.Mul(dy, ctx.input(0)), 1));
  return e.status();
}

// Div(a, b) = c: da = dy / b, db = -dy c / b (from the output: no b^2 to overflow).
absl::Status DivGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  const ValueId b = ctx.input(1);
  if (ctx.needs_input_grad(0)) e.Grad(0, e.SumToInput(e.BinLikeForward("Div", dy, b), 0));
  if (ctx.needs_input_grad(1)) {
    const ValueId q = e.BinLikeForward("Div", e.Mul(dy, ctx.output(0)), b);
    e.Grad(1, e.SumToInput(e.Neg(q), 1));
  }
  return e.status();
}

// Pow(x, y) = z: dx = dy y x^(y-1), zero where y == 0 (z is then the constant 1; the formula
// would give 0 * inf at x == 0); dy_exp = dy z log(x) where x > 0, else 0 (x^y has no real
// derivative in y for x < 0, and its limit at x == 0 is 0 for y > 0). log reads x with the
// non-positive elements replaced by 1, so no NaN enters even the masked-out elements (their
// gradients in a second pass would be NaN otherwise). The exponent may have another element
// type than x (T1): it is cast to x's for the arithmetic and its gradient back to its own.
absl::Status PowGradient(GradientContext& ctx) {
  const ValueId dz = ctx.output_grad(0);
  if (!dz.valid()) return absl::OkStatus();
  Emitter e(ctx);
  const ValueId x = ctx.input(0);
  const ValueId y = ctx.input(1);
  const v1::DataType t = ctx.dtype(x);
  if (ctx.needs_input_grad(0)) {
    // A constant exponent (x^2, x^0.5...) gives a smaller graph; not when the exponent is
    // itself differentiated, where baking its value in would cut its second derivative.
    const std::optional<double> c =
        ctx.needs_input_grad(1) ? std::nullopt : ScalarConstantValue(ctx, y);
    ValueId g;
    if (c && *c == 0) {
      g = ValueId();  // z = 1: no gradient
    } else if (c && *c == 1) {
      g = dz;
    } else if (c && *c == 2) {
      g = e.Mul(dz, e.MulScalar(x, 2));
    } else if (c) {
      g = e.Mul(dz, e.MulScalar(e.Bin("Pow", x, e.Scalar(*c - 1, x)), *c));
    } else {
      // y x^(y'-1) with y' = 1 where y == 0: 0 there instead of 0 * x^-1. The select is over
      // the exponent's own shape (the forward node's legacy placement applies to it as is).
      const ValueId yt = e.Cast(y, t);
      const ValueId safe_y = e.Where(e.Equal(yt, e.Scalar(0, yt)), e.Scalar(1, yt), yt);
      const ValueId power = e.BinLikeForward("Pow", x, e.AddScalar(safe_y, -1));
      g = e.Mul(dz, e.BinLikeForward("Mul", power, yt));
    }
    if (g.valid() || !e.ok()) e.Grad(0, e.SumToInput(g, 0));
  }
  if (ctx.needs_input_grad(1)) {
    const ValueId zero = e.Scalar(0, x);
    const ValueId positive = e.Greater(x, zero);
    const ValueId safe_x = e.Where(positive, x, e.Scalar(1, x));
    const ValueId g = e.Mul(dz, e.Mul(ctx.output(0), e.Unary("Log", safe_x)));
    e.Grad(1, e.Cast(e.SumToInput(g, 1), ctx.dtype(y)));
  }
  return e.status();
}

// Mod(a, b) with fmod=1 (the only float form): c = a - b trunc(a / b), so da = dy and
// db = -dy trunc(a / b), where trunc(a / b) = round((a - c) / b) exactly (an integer).
absl::Status ModGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  if (ctx.needs_input_grad(0)) e.Grad(0, e.SumToInput(dy, 0));
  if (ctx.needs_input_grad(1)) {
    const ValueId a = ctx.input(0);
    const ValueId b = ctx.input(1);
    const ValueId q = e.Unary("Round", e.Div(e.Sub(a, ctx.output(0)), b));
    e.Grad(1, e.SumToInput(e.Neg(e.Mul(dy, q)), 1));
  }
  return e.status();
}

// PRelu(x, slope): dx = dy slope where x < 0, else dy; dslope = dy x where x < 0, summed to
// the slope's shape. Before opset 7 a 1-D slope of x's channel count applies along axis 1 (as
// the kernel reads it): the slope is viewed as [C, 1, ...] for the arithmetic.
absl::Status PReluGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  const ValueId x = ctx.input(0);
  const ValueId slope = ctx.input(1);
  ValueId view = slope;
  const int64_t opset = ctx.opset_version();
  const std::optional<Dims>& xs = ctx.shape(x);
  const std::optional<Dims>& ss = ctx.shape(slope);
  if (opset > 0 && opset < 7 && xs && ss && xs->size() > 2 && ss->size() == 1 &&
      Dim::SameSize((*ss)[0], (*xs)[1]) && (*ss)[0].is_known()) {
    std::vector<int64_t> dims(xs->size() - 1, 1);
    dims[0] = (*ss)[0].size();
    view = e.Op("Reshape", {slope, Int64Constant(ctx, dims)});
  }
  const ValueId negative = e.Less(x, e.Scalar(0, x));
  if (ctx.needs_input_grad(0)) e.Grad(0, e.Where(negative, e.Mul(dy, view), dy));
  if (ctx.needs_input_grad(1) && e.ok()) {
    const ValueId g = e.Where(negative, e.Mul(dy, x), e.Scalar(0, x));
    absl::StatusOr<ValueId> r = SumToShape(ctx, g, view);
    if (!r.ok()) return r.status();
    ValueId out = *r;
    if (view != slope) {
      absl::StatusOr<ValueId> back = ReshapeLike(ctx, out, slope);
      if (!back.ok()) return back.status();
      out = *back;
    }
    e.Grad(1, out);
  }
  return e.status();
}

// --- Variadic, selection, conversion -----------------------------------------------------------

// Sum: each input gets dy; Mean: dy / n. Summed to each input's shape.
absl::Status SumMeanGradient(GradientContext& ctx, bool mean) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  const int n = ctx.num_inputs();
  const ValueId g = mean && n > 1 ? e.MulScalar(dy, 1.0 / n) : dy;
  for (int i = 0; i < n; ++i) {
    if (ctx.needs_input_grad(i)) e.Grad(i, e.SumToInput(g, i));
  }
  return e.status();
}

// Min/Max: dy goes to the inputs equal to the result, split evenly among ties (as torch's
// amax/amin and maximum/minimum do), summed to each input's shape.
absl::Status MinMaxGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  const int n = ctx.num_inputs();
  if (n == 1) {
    e.Grad(0, dy);
    return e.status();
  }
  const ValueId y = ctx.output(0);
  const v1::DataType t = ctx.dtype(y);
  std::vector<ValueId> hits(n);
  ValueId count;
  for (int i = 0; i < n; ++i) {
    hits[i] = e.Cast(e.Equal(y, ctx.input(i)), t);
    count = count.valid() ? e.Add(count, hits[i]) : hits[i];
    if (!e.ok()) return e.status();
  }
  const ValueId share = e.Div(dy, count);  // count >= 1 wherever y is not NaN
  for (int i = 0; i < n; ++i) {
    if (ctx.needs_input_grad(i)) e.Grad(i, e.SumToInput(e.Mul(share, hits[i]), i));
  }
  return e.status();
}

// Where(c, a, b): da = dy where c, db = dy where not c; c gets none.
absl::Status WhereGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  const ValueId c = ctx.input(0);
  const ValueId zero = e.Scalar(0, dy);
  if (ctx.needs_input_grad(1)) e.Grad(1, e.SumToInput(e.Where(c, dy, zero), 1));
  if (ctx.needs_input_grad(2)) e.Grad(2, e.SumToInput(e.Where(c, zero, dy), 2));
  return e.status();
}

// Cast and CastLike: the gradient cast back to the input's type. (An integer or bool output
// has no gradient: the pass prunes it before reaching here.)
absl::Status CastGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid() || !ctx.needs_input_grad(0)) return absl::OkStatus();
  Emitter e(ctx);
  e.Grad(0, e.Cast(dy, ctx.dtype(ctx.input(0))));
  return e.status();
}

// Clip(x, min, max): the kernel computes v = max(x, min), then min(v, max), so
//   hi = max(x, min) > max   (the result is max),
//   lo = x < min and not hi  (the result is min),
// and x passes where neither holds (inclusive bounds, as torch.clamp). min and max given as
// inputs (opset 11+) get the sum of the gradients where they were selected; this makes a Clip
// with tensor bounds differentiable in them (torch.clamp with tensor bounds does the same).
// Bounds given as attributes (opsets < 11) are constants.
absl::Status ClipGradient(GradientContext& ctx) {
  const ValueId dy = ctx.output_grad(0);
  if (!dy.valid()) return absl::OkStatus();
  Emitter e(ctx);
  const ValueId x = ctx.input(0);
  const int64_t opset = ctx.opset_version();
  const bool attribute_bounds = opset > 0 && opset < 11;
  ValueId lo, hi;
  bool always_hi = false;
  if (attribute_bounds) {
    // Absent attributes are the type's extremes: no bound on that side.
    const v1::Attribute* a_lo = ctx.attr("min");
    const v1::Attribute* a_hi = ctx.attr("max");
    const float f_lo = a_lo ? FloatAttrOr(e, "min", 0) : 0;
    const float f_hi = a_hi ? FloatAttrOr(e, "max", 0) : 0;
    if (a_lo) lo = e.Scalar(f_lo, x);
    if (a_hi) hi = e.Scalar(f_hi, x);
    always_hi = a_lo && a_hi && f_lo > f_hi;
  } else {
    lo = ctx.input(1);
    hi = ctx.input(2);
  }
  if (always_hi) return e.status();  // min > max: every element is max, a constant
  const ValueId zero = e.Scalar(0, x);
  const ValueId below = lo.valid() ? e.Less(x, lo) : ValueId();
  ValueId above;
  if (hi.valid()) {
    above = lo.valid() && !attribute_bounds ? e.Greater(e.Op("Max", {x, lo}), hi)
                                            : e.Greater(x, hi);
  }
  if (ctx.needs_input_grad(0)) {
    const ValueId clipped = below.valid() && above.valid() ? e.Or(below, above)
                                                           : (below.valid() ? below : above);
    e.Grad(0, clipped.valid() ? e.Where(clipped, zero, dy) : dy);
  }
  if (!attribute_bounds && ctx.needs_input_grad(1) && below.valid()) {
    const ValueId at_lo = above.valid() ? e.And(below, e.Unary("Not", above)) : below;
    e.Grad(1, e.SumToInput(e.Where(at_lo, dy, zero), 1));
  }
  if (!attribute_bounds && ctx.needs_input_grad(2) && above.valid()) {
    e.Grad(2, e.SumToInput(e.Where(above, dy, zero), 2));
  }
  return e.status();
}

// The unary ops whose gradient is a formula of (x, y, dy).
struct UnaryEntry {
  const char* op;
  UnaryFormula formula;
};

constexpr UnaryEntry kUnary[] = {
    {"Relu", ReluGrad},         {"Identity", IdentityGrad},     {"Neg", NegGrad},
    {"Abs", AbsGrad},           {"Sqrt", SqrtGrad},             {"Reciprocal", ReciprocalGrad},
    {"Exp", ExpGrad},           {"Log", LogGrad},               {"Erf", ErfGrad},
    {"Tanh", TanhGrad},         {"Sigmoid", SigmoidGrad},       {"Softplus", SoftplusGrad},
    {"Softsign", SoftsignGrad}, {"HardSwish", HardSwishGrad},   {"Sin", SinGrad},
    {"Cos", CosGrad},           {"Tan", TanGrad},               {"Asin", AsinGrad},
    {"Acos", AcosGrad},         {"Atan", AtanGrad},             {"Sinh", SinhGrad},
    {"Cosh", CoshGrad},         {"Asinh", AsinhGrad},           {"Acosh", AcoshGrad},
    {"Atanh", AtanhGrad},
};

}  // namespace

void AddElementwiseGradients(GradientTable* table) {
  for (const UnaryEntry& u : kUnary) {
    (*table)[u.op] = {[f = u.formula](GradientContext& ctx) { return UnaryGradient(ctx, f); }, {}};
  }
  (*table)["LeakyRelu"] = {LeakyReluGradient, {}};
  (*table)["Elu"] = {EluGradient, {}};
  (*table)["Selu"] = {SeluGradient, {}};
  (*table)["Celu"] = {CeluGradient, {}};
  (*table)["ThresholdedRelu"] = {ThresholdedReluGradient, {}};
  (*table)["HardSigmoid"] = {HardSigmoidGradient, {}};
  (*table)["Shrink"] = {ShrinkGradient, {}};
  for (const char* op : {"Sign", "Floor", "Ceil", "Round"}) (*table)[op] = {ZeroGradient, {}};
  (*table)["Add"] = {[](GradientContext& ctx) { return AddSubGradient(ctx, false); }, {}};
  (*table)["Sub"] = {[](GradientContext& ctx) { return AddSubGradient(ctx, true); }, {}};
  (*table)["Mul"] = {MulGradient, {}};
  (*table)["Div"] = {DivGradient, {}};
  (*table)["Pow"] = {PowGradient, {}};
  (*table)["Mod"] = {ModGradient, {}};
  (*table)["PRelu"] = {PReluGradient, {}};
  (*table)["Sum"] = {[](GradientContext& ctx) { return SumMeanGradient(ctx, false); }, {}};
  (*table)["Mean"] = {[](GradientContext& ctx) { return SumMeanGradient(ctx, true); }, {}};
  (*table)["Min"] = {MinMaxGradient, {}};
  (*table)["Max"] = {MinMaxGradient, {}};
  (*table)["Where"] = {WhereGradient, {0}};
  (*table)["Cast"] = {CastGradient, {}};
  (*table)["CastLike"] = {CastGradient, {1}};
  (*table)["Clip"] = {ClipGradient, {}};
}

}  // namespace builtin_internal
}  // namespace graphopt
