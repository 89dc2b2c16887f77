// Unary math and activations, Clip, PRelu, IsNaN and IsInf.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/elementwise_util.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {
namespace {

// Which element types a unary op takes.
enum class Types { kFloat, kNumeric, kSigned };

template <typename T>
constexpr bool kSignedOrFloat = std::is_signed_v<ComputeType<T>>;

// y = fn(x) elementwise, x and y of one dtype; fn takes and returns the compute type
// (float for float16/bfloat16).
template <Types kTypes, typename Fn>
absl::Status Unary(KernelContext& ctx, Fn fn) {
  absl::StatusOr<const Tensor*> in = RequireInput(ctx, 0);
  if (!in.ok()) return in.status();
  const Tensor& x = **in;
  auto run = [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (kTypes == Types::kSigned && !kSignedOrFloat<T>) {
      return ctx.info().Unimplemented(absl::StrCat(
          "element type ", DataTypeName(x.dtype()), " is not supported (signed types only)"));
    } else {
      absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), x.shape());
      if (!out.ok()) return out.status();
      MapElements(ctx, x.data<T>(), (*out)->template data<T>(), x.num_elements(),
                  [fn](T v) { return FromCompute<T>(fn(ToCompute(v))); });
      return absl::OkStatus();
    }
  };
  if constexpr (kTypes == Types::kFloat) {
    return Labeled(ctx, DispatchFloat(x.dtype(), run));
  } else {
    return Labeled(ctx, DispatchNumeric(x.dtype(), run));
  }
}

// The compute type of the argument of a generic lambda.
#define GRAPHOPT_C(v) std::remove_cv_t<std::remove_reference_t<decltype(v)>>

absl::Status AbsKernel(KernelContext& ctx) {
  return Unary<Types::kNumeric>(ctx, [](auto v) {
    using C = GRAPHOPT_C(v);
    if constexpr (std::is_unsigned_v<C>) {
      return v;
    } else if constexpr (std::is_integral_v<C>) {
      return v < 0 ? static_cast<C>(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(v)) : v;
    } else {
      return std::abs(v);
    }
  });
}

absl::Status NegKernel(KernelContext& ctx) {
  return Unary<Types::kSigned>(ctx, [](auto v) {
    using C = GRAPHOPT_C(v);
    if constexpr (std::is_integral_v<C>) {
      return static_cast<C>(std::make_unsigned_t<C>(0) - std::make_unsigned_t<C>(v));
    } else {
      return -v;
    }
  });
}

absl::Status SignKernel(KernelContext& ctx) {
  return Unary<Types::kNumeric>(ctx, [](auto v) {
    using C = GRAPHOPT_C(v);
    return v > C(0) ? C(1) : (v < C(0) ? static_cast<C>(-1) : v);  // 0 and NaN stay
  });
}

absl::Status ReluKernel(KernelContext& ctx) {
  return Unary<Types::kSigned>(ctx, [](auto v) {
    using C = GRAPHOPT_C(v);
    return v < C(0) ? C(0) : v;  // NaN stays
  });
}

template <typename Fn>
absl::Status FloatUnary(KernelContext& ctx, Fn fn) {
  return Unary<Types::kFloat>(ctx, fn);
}

// FloatUnary whose float32 case runs `vec` (a fast_math.h loop, in place over a block) instead
// of `fn` element by element: the same functions the fused groups use, so that a node gives the
// same bits fused or not.
template <typename Fn, typename Vec>
absl::Status FloatUnaryVec(KernelContext& ctx, Fn fn, Vec vec) {
  const Tensor* x = ctx.input(0);
  if (x == nullptr || x->dtype() != v1::DT_FLOAT32) return Unary<Types::kFloat>(ctx, fn);
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x->dtype(), x->shape());
  if (!out.ok()) return out.status();
  const float* xp = x->data<float>();
  float* yp = (*out)->data<float>();
  ctx.ParallelFor(x->num_elements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    if (yp != xp) std::copy(xp + begin, xp + end, yp + begin);
    vec(yp + begin, end - begin);
  });
  return absl::OkStatus();
}

// An activation of fast_math.h as FloatUnaryVec's block loop.
auto Act(Activation act, float alpha = 0, float beta = 0) {
  return [=](float* p, int64_t n) { ActivationF32(act, alpha, beta, p, n); };
}

absl::Status LeakyReluKernel(KernelContext& ctx) {
  const float alpha = ctx.info().GetFloat("alpha", 0.01f);
  return FloatUnary(ctx, [alpha](auto v) {
    using C = GRAPHOPT_C(v);
    return v < C(0) ? v * C(alpha) : v;
  });
}

absl::Status EluKernel(KernelContext& ctx) {
  const float alpha = ctx.info().GetFloat("alpha", 1.0f);
  return FloatUnaryVec(ctx, [alpha](auto v) {
    using C = GRAPHOPT_C(v);
    return v < C(0) ? C(alpha) * std::expm1(v) : v;
  }, Act(Activation::kElu, alpha));
}

absl::Status SeluKernel(KernelContext& ctx) {
  const float alpha = ctx.info().GetFloat("alpha", 1.67326319217681884765625f);
  const float gamma = ctx.info().GetFloat("gamma", 1.05070102214813232421875f);
  return FloatUnaryVec(ctx, [alpha, gamma](auto v) {
    using C = GRAPHOPT_C(v);
    return v <= C(0) ? C(gamma) * (C(alpha) * std::expm1(v)) : C(gamma) * v;
  }, Act(Activation::kSelu, alpha, gamma));
}

absl::Status CeluKernel(KernelContext& ctx) {
  const float alpha = ctx.info().GetFloat("alpha", 1.0f);
  if (alpha == 0) return ctx.Invalid("attribute 'alpha' must not be 0");
  return FloatUnaryVec(ctx, [alpha](auto v) {
    using C = GRAPHOPT_C(v);
    const C a = C(alpha);
    return (v > C(0) ? v : C(0)) + std::min(C(0), a * std::expm1(v / a));
  }, Act(Activation::kCelu, alpha));
}

absl::Status HardSigmoidKernel(KernelContext& ctx) {
  const float alpha = ctx.info().GetFloat("alpha", 0.2f);
  const float beta = ctx.info().GetFloat("beta", 0.5f);
  return FloatUnary(ctx, [alpha, beta](auto v) {
    using C = GRAPHOPT_C(v);
    const C r = C(alpha) * v + C(beta);
    return r < C(0) ? C(0) : (r > C(1) ? C(1) : r);
  });
}

absl::Status HardSwishKernel(KernelContext& ctx) {
  return FloatUnaryVec(ctx, [](auto v) {
    using C = GRAPHOPT_C(v);
    const C r = v / C(6) + C(0.5);
    return v * (r < C(0) ? C(0) : (r > C(1) ? C(1) : r));
  }, Act(Activation::kHardSwish));
}

absl::Status ThresholdedReluKernel(KernelContext& ctx) {
  const float alpha = ctx.info().GetFloat("alpha", 1.0f);
  return FloatUnary(ctx, [alpha](auto v) {
    using C = GRAPHOPT_C(v);
    return v > C(alpha) ? v : C(0);
  });
}

absl::Status ShrinkKernel(KernelContext& ctx) {
  const float bias = ctx.info().GetFloat("bias", 0.0f);
  const float lambd = ctx.info().GetFloat("lambd", 0.5f);
  return Unary<Types::kNumeric>(ctx, [bias, lambd](auto v) {
    using C = GRAPHOPT_C(v);
    // Compare and shift in double so integer inputs follow the float thresholds.
    // An integer result outside C's range (int64's largest value is 2^63 in double, a large
    // bias) saturates as FromCompute does, where a plain cast would be undefined.
    const double d = static_cast<double>(v);
    if (d < -lambd) return FromCompute<C>(d + bias);
    if (d > lambd) return FromCompute<C>(d - bias);
    return C(0);
  });
}

absl::Status SoftplusKernel(KernelContext& ctx) {
  return FloatUnaryVec(ctx, [](auto v) {
    using C = GRAPHOPT_C(v);
    // log(1 + exp(v)) without overflow for large v.
    return v > C(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
  }, Act(Activation::kSoftplus));
}

// Clip: bounds are attributes before opset 11 and optional scalar inputs from opset 11.
absl::Status ClipKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> in = RequireInput(ctx, 0);
  if (!in.ok()) return in.status();
  const Tensor& x = **in;
  const int64_t opset = ctx.info().opset();
  const bool bounds_are_attributes = opset > 0 && opset < 11;
  for (int i = 1; i <= 2; ++i) {
    const Tensor* b = ctx.input(i);
    if (b == nullptr) continue;
    if (bounds_are_attributes) {
      return ctx.Invalid(absl::StrCat("takes its bounds as attributes at opset ", opset));
    }
    if (b->dtype() != x.dtype()) {
      return ctx.Invalid(absl::StrCat("input ", i, " is ", DataTypeName(b->dtype()),
                                      " but input 0 is ", DataTypeName(x.dtype())));
    }
    if (b->num_elements() != 1) {
      return ctx.Invalid(absl::StrCat("input ", i, " (", i == 1 ? "min" : "max",
                                      ") must be a scalar, not ", ShapeString(b->shape())));
    }
  }
  auto run = [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    C lo = std::numeric_limits<C>::lowest();
    C hi = std::numeric_limits<C>::max();
    if (bounds_are_attributes) {
      if constexpr (std::is_floating_point_v<C>) {
        lo = static_cast<C>(ctx.info().GetFloat("min", std::numeric_limits<float>::lowest()));
        hi = static_cast<C>(ctx.info().GetFloat("max", std::numeric_limits<float>::max()));
      }
    } else {
      if (ctx.input(1) != nullptr) lo = ToCompute(ctx.input(1)->data<T>()[0]);
      if (ctx.input(2) != nullptr) hi = ToCompute(ctx.input(2)->data<T>()[0]);
    }
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), x.shape());
    if (!out.ok()) return out.status();
    MapElements(ctx, x.data<T>(), (*out)->template data<T>(), x.num_elements(), [lo, hi](T t) {
      C v = ToCompute(t);
      v = v < lo ? lo : v;
      v = v > hi ? hi : v;  // min > max gives max
      return FromCompute<T>(v);
    });
    return absl::OkStatus();
  };
  if (bounds_are_attributes) return Labeled(ctx, DispatchFloat(x.dtype(), run));
  return Labeled(ctx, DispatchNumeric(x.dtype(), run));
}

// PRelu: slope broadcasts to X (unidirectionally). Before opset 7 a 1-D slope of X's
// channel count applies along axis 1.
absl::Status PReluKernel(KernelContext& ctx) {
  for (int i = 0; i < 2; ++i) {
    if (ctx.input(i) == nullptr) return ctx.Invalid(absl::StrCat("input ", i, " is required"));
  }
  const Tensor& x = *ctx.input(0);
  Tensor slope = *ctx.input(1);
  if (slope.dtype() != x.dtype()) {
    return ctx.Invalid(absl::StrCat("slope is ", DataTypeName(slope.dtype()), " but X is ",
                                    DataTypeName(x.dtype())));
  }
  const int64_t opset = ctx.info().opset();
  if (opset > 0 && opset < 7 && slope.rank() == 1 && x.rank() > 2 && slope.dim(0) == x.dim(1)) {
    Shape per_channel(x.rank() - 1, 1);
    per_channel[0] = slope.dim(0);
    absl::StatusOr<Tensor> view = slope.Reshaped(std::move(per_channel));
    if (!view.ok()) return ctx.Invalid(view.status().message());
    slope = *std::move(view);
  }
  const Shape shapes[2] = {x.shape(), slope.shape()};
  absl::StatusOr<Shape> shape = BroadcastShapes(shapes);
  if (!shape.ok() || *shape != x.shape()) {
    return ctx.Invalid(absl::StrCat("slope ", ShapeString(slope.shape()),
                                    " does not broadcast to X ", ShapeString(x.shape())));
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!out.ok()) return out.status();
  if (x.num_elements() == 0) return absl::OkStatus();
  return Labeled(ctx, DispatchNumeric(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    BroadcastBinary<T, T, T>(
        x, slope, **out,
        [](T a, T s) {
          const C v = ToCompute(a);
          // Integer products wrap around (two's complement), as numpy's do.
          return v < C(0) ? FromCompute<T>(WrapMul(v, ToCompute(s))) : a;
        },
        &ctx);
    return absl::OkStatus();
  }));
}

// IsNaN / IsInf: floating-point input, bool output.
template <typename Pred>
absl::Status FloatPredicate(KernelContext& ctx, Pred pred) {
  absl::StatusOr<const Tensor*> in = RequireInput(ctx, 0);
  if (!in.ok()) return in.status();
  const Tensor& x = **in;
  return Labeled(ctx, DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_BOOL, x.shape());
    if (!out.ok()) return out.status();
    MapElements(ctx, x.data<T>(), (*out)->template data<bool>(), x.num_elements(),
                [pred](T v) { return pred(ToCompute(v)); });
    return absl::OkStatus();
  }));
}

absl::Status IsNaNKernel(KernelContext& ctx) {
  return FloatPredicate(ctx, [](auto v) { return v != v; });
}

absl::Status IsInfKernel(KernelContext& ctx) {
  const bool negative = ctx.info().GetInt("detect_negative", 1) != 0;
  const bool positive = ctx.info().GetInt("detect_positive", 1) != 0;
  return FloatPredicate(ctx, [negative, positive](auto v) {
    using C = GRAPHOPT_C(v);
    return (positive && v == std::numeric_limits<C>::infinity()) ||
           (negative && v == -std::numeric_limits<C>::infinity());
  });
}

}  // namespace

absl::Status RegisterUnaryKernels(KernelRegistry& registry) {
  absl::Status s;
  // Plain floating-point math.
  s.Update(registry.Register(
      "Sqrt", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::sqrt(v); }); }));
  s.Update(registry.Register(
      "Exp", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::exp(v); }); }));
  s.Update(registry.Register("Log", +[](KernelContext& ctx) {
    return FloatUnaryVec(ctx, [](auto v) { return std::log(v); }, Act(Activation::kLog));
  }));
  s.Update(registry.Register("Reciprocal", +[](KernelContext& ctx) {
    return FloatUnary(ctx, [](auto v) { return GRAPHOPT_C(v)(1) / v; });
  }));
  s.Update(registry.Register(
      "Ceil", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::ceil(v); }); }));
  s.Update(registry.Register("Floor", +[](KernelContext& ctx) {
    return FloatUnary(ctx, [](auto v) { return std::floor(v); });
  }));
  // Half to even (the default rounding mode).
  s.Update(registry.Register("Round", +[](KernelContext& ctx) {
    return FloatUnary(ctx, [](auto v) { return std::nearbyint(v); });
  }));
  s.Update(registry.Register(
      "Erf", +[](KernelContext& ctx) {
        return FloatUnaryVec(ctx, [](auto v) { return std::erf(v); },
                             [](float* p, int64_t n) { ErfF32(p, n); });
      }));
  s.Update(registry.Register(
      "Sin", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::sin(v); }); }));
  s.Update(registry.Register(
      "Cos", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::cos(v); }); }));
  s.Update(registry.Register(
      "Tan", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::tan(v); }); }));
  s.Update(registry.Register(
      "Asin", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::asin(v); }); }));
  s.Update(registry.Register(
      "Acos", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::acos(v); }); }));
  s.Update(registry.Register(
      "Atan", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::atan(v); }); }));
  s.Update(registry.Register(
      "Sinh", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::sinh(v); }); }));
  s.Update(registry.Register(
      "Cosh", +[](KernelContext& ctx) { return FloatUnary(ctx, [](auto v) { return std::cosh(v); }); }));
  s.Update(registry.Register("Asinh", +[](KernelContext& ctx) {
    return FloatUnary(ctx, [](auto v) { return std::asinh(v); });
  }));
  s.Update(registry.Register("Acosh", +[](KernelContext& ctx) {
    return FloatUnary(ctx, [](auto v) { return std::acosh(v); });
  }));
  s.Update(registry.Register("Atanh", +[](KernelContext& ctx) {
    return FloatUnary(ctx, [](auto v) { return std::atanh(v); });
  }));
  s.Update(registry.Register(
      "Tanh", +[](KernelContext& ctx) {
        return FloatUnaryVec(ctx, [](auto v) { return std::tanh(v); },
                             [](float* p, int64_t n) { TanhF32(p, n); });
      }));
  s.Update(registry.Register("Sigmoid", +[](KernelContext& ctx) {
    return FloatUnaryVec(ctx, [](auto v) {
      using C = GRAPHOPT_C(v);
      return C(1) / (C(1) + std::exp(-v));
    }, [](float* p, int64_t n) { SigmoidF32(p, n); });
  }));
  s.Update(registry.Register("Softsign", +[](KernelContext& ctx) {
    return FloatUnaryVec(ctx, [](auto v) {
      using C = GRAPHOPT_C(v);
      return v / (C(1) + std::abs(v));
    }, Act(Activation::kSoftsign));
  }));
  // Numeric types, attributes.
  s.Update(registry.Register("Abs", AbsKernel));
  s.Update(registry.Register("Neg", NegKernel));
  s.Update(registry.Register("Sign", SignKernel));
  s.Update(registry.Register("Relu", ReluKernel));
  s.Update(registry.Register("LeakyRelu", LeakyReluKernel));
  s.Update(registry.Register("Elu", EluKernel));
  s.Update(registry.Register("Selu", SeluKernel));
  s.Update(registry.Register("Celu", CeluKernel));
  s.Update(registry.Register("HardSigmoid", HardSigmoidKernel));
  s.Update(registry.Register("HardSwish", HardSwishKernel));
  s.Update(registry.Register("ThresholdedRelu", ThresholdedReluKernel));
  s.Update(registry.Register("Shrink", ShrinkKernel));
  s.Update(registry.Register("Softplus", SoftplusKernel));
  s.Update(registry.Register("Clip", ClipKernel));
  s.Update(registry.Register("PRelu", PReluKernel));
  s.Update(registry.Register("IsNaN", IsNaNKernel));
  s.Update(registry.Register("IsInf", IsInfKernel));
  return s;
}

#undef GRAPHOPT_C

}  // namespace graphopt::runtime
