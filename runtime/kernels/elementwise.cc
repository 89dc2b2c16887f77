// Elementwise kernels: binary arithmetic with numpy broadcasting (this file), comparisons,
// logic, Where and the variadic ops (elementwise_logic.cc), unary math and activations
// (elementwise_unary.cc), Cast and quantization (elementwise_cast.cc).
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/elementwise_util.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

absl::Status Labeled(const KernelContext& ctx, absl::Status status) {
  if (status.ok() || status.code() != absl::StatusCode::kUnimplemented) return status;
  if (absl::StartsWith(status.message(), ctx.info().label())) return status;
  return ctx.info().Unimplemented(status.message());
}

absl::StatusOr<Shape> BroadcastInputs(const KernelContext& ctx, int first, int count,
                                      bool same_dtype) {
  std::vector<Shape> shapes;
  shapes.reserve(count);
  const Tensor* t0 = nullptr;
  for (int i = first; i < first + count; ++i) {
    const Tensor* t = ctx.input(i);
    if (t == nullptr) return ctx.Invalid(absl::StrCat("input ", i, " is required"));
    if (t0 == nullptr) {
      t0 = t;
    } else if (same_dtype && t->dtype() != t0->dtype()) {
      return ctx.Invalid(absl::StrCat("input ", i, " is ", DataTypeName(t->dtype()), " but input ",
                                      first, " is ", DataTypeName(t0->dtype())));
    }
    shapes.push_back(t->shape());
  }
  absl::StatusOr<Shape> out = BroadcastShapes(shapes);
  if (!out.ok()) return ctx.Invalid(out.status().message());
  return out;
}

absl::StatusOr<BinaryOperands> PrepareBinary(const KernelContext& ctx, bool same_dtype) {
  for (int i = 0; i < 2; ++i) {
    if (ctx.input(i) == nullptr) return ctx.Invalid(absl::StrCat("input ", i, " is required"));
  }
  BinaryOperands r{*ctx.input(0), *ctx.input(1), {}};
  if (same_dtype && r.a.dtype() != r.b.dtype()) {
    return ctx.Invalid(absl::StrCat("input 1 is ", DataTypeName(r.b.dtype()), " but input 0 is ",
                                    DataTypeName(r.a.dtype())));
  }
  const int64_t opset = ctx.info().opset();
  if (opset > 0 && opset < 7 && ctx.info().GetInt("broadcast", 0) != 0 &&
      ctx.info().has_attr("axis")) {
    const int64_t axis = ctx.info().GetInt("axis", 0);
    const int ra = r.a.rank(), rb = r.b.rank();
    if (axis < 0 || axis + rb > ra) {
      return ctx.Invalid(absl::StrCat("attribute 'axis' (", axis, ") does not fit input 1 ",
                                      ShapeString(r.b.shape()), " into input 0 ",
                                      ShapeString(r.a.shape())));
    }
    Shape padded(r.b.shape().begin(), r.b.shape().end());
    padded.resize(ra - axis, 1);
    absl::StatusOr<Tensor> view = r.b.Reshaped(std::move(padded));
    if (!view.ok()) return ctx.Invalid(view.status().message());
    r.b = *std::move(view);
  }
  const Shape shapes[2] = {r.a.shape(), r.b.shape()};
  absl::StatusOr<Shape> out = BroadcastShapes(shapes);
  if (!out.ok()) return ctx.Invalid(out.status().message());
  r.out = *std::move(out);
  return r;
}

namespace {

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// Integer arithmetic wraps (two's complement) instead of overflowing (kernel_util.h).
struct AddOp {
  template <typename C>
  C operator()(C x, C y) const {
    return WrapAdd(x, y);
  }
};
struct SubOp {
  template <typename C>
  C operator()(C x, C y) const {
    return WrapSub(x, y);
  }
};
struct MulOp {
  template <typename C>
  C operator()(C x, C y) const {
    return WrapMul(x, y);
  }
};
// Integer division truncates; division by zero gives 0 rather than trapping.
struct DivOp {
  template <typename C>
  C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C>) {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return WrapNeg(x);
      }
      return static_cast<C>(x / y);
    } else {
      return x / y;
    }
  }
};
// fmod = 0: the result takes the divisor's sign (integers only); fmod = 1: the dividend's.
// x mod 0 is 0 for integers.
template <bool kFmod>
struct ModOp {
  template <typename C>
  C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C>) {
      if (y == 0) return 0;
      if constexpr (std::is_signed_v<C>) {
        if (y == -1) return 0;
        C r = static_cast<C>(x % y);
        if (!kFmod && r != 0 && ((r < 0) != (y < 0))) r = static_cast<C>(r + y);
        return r;
      } else {
        return static_cast<C>(x % y);
      }
    } else {
      return std::fmod(x, y);
    }
  }
};

// Runs a same-dtype binary op: out[i] = op(a[i'], b[i'']) over the broadcast shape.
template <typename Op, typename Dispatch>
absl::Status SameTypeBinary(KernelContext& ctx, Op op, Dispatch dispatch) {
  absl::StatusOr<BinaryOperands> operands = PrepareBinary(ctx, /*same_dtype=*/true);
  if (!operands.ok()) return operands.status();
  const Tensor& a = operands->a;
  const Tensor& b = operands->b;
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, a.dtype(), operands->out);
  if (!out.ok()) return out.status();
  if ((*out)->num_elements() == 0) return absl::OkStatus();
  return Labeled(ctx, dispatch(a.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (kIsHalf<T>) {
      BroadcastBinary<T, T, T>(
          a, b, **out,
          [op](T x, T y) { return T(op(static_cast<float>(x), static_cast<float>(y))); }, &ctx);
    } else {
      BroadcastBinary<T, T, T>(a, b, **out, op, &ctx);
    }
    return absl::OkStatus();
  }));
}

struct NumericDispatch {
  template <typename F>
  absl::Status operator()(v1::DataType dtype, F&& f) const {
    return DispatchNumeric(dtype, std::forward<F>(f));
  }
};

absl::Status AddKernel(KernelContext& ctx) {
  return SameTypeBinary(ctx, AddOp{}, NumericDispatch{});
}
absl::Status SubKernel(KernelContext& ctx) {
  return SameTypeBinary(ctx, SubOp{}, NumericDispatch{});
}
absl::Status MulKernel(KernelContext& ctx) {
  return SameTypeBinary(ctx, MulOp{}, NumericDispatch{});
}
absl::Status DivKernel(KernelContext& ctx) {
  return SameTypeBinary(ctx, DivOp{}, NumericDispatch{});
}

absl::Status ModKernel(KernelContext& ctx) {
  const int64_t fmod = ctx.info().GetInt("fmod", 0);
  if (fmod != 0 && fmod != 1) {
    return ctx.Invalid(absl::StrCat("attribute 'fmod' must be 0 or 1, not ", fmod));
  }
  if (fmod == 0 && ctx.input(0) != nullptr) {
    const v1::DataType t = ctx.input(0)->dtype();
    if (t == v1::DT_FLOAT32 || t == v1::DT_FLOAT64 || t == v1::DT_FLOAT16 ||
        t == v1::DT_BFLOAT16) {
      return ctx.Invalid(absl::StrCat("attribute 'fmod' must be 1 for ", DataTypeName(t),
                                      " inputs"));
    }
  }
  if (fmod == 1) return SameTypeBinary(ctx, ModOp<true>{}, NumericDispatch{});
  return SameTypeBinary(ctx, ModOp<false>{}, NumericDispatch{});
}

// Pow: base of type T, exponent of any numeric type T1; the output has the base's type.
// Integer powers of integers are exact (wrapping); everything else goes through std::pow.
template <typename B, typename E>
inline B PowElement(B x, E y) {
  if constexpr (std::is_integral_v<B> && std::is_integral_v<E>) {
    if (y < 0) {
      // Only 1 and -1 have integer reciprocals; numpy gives 0 for the rest.
      if (x == 1) return 1;
      if (x == -1) return (y % 2 == 0) ? 1 : static_cast<B>(-1);
      return 0;
    }
    using U = WrapUnsigned<B>;
    U base = static_cast<U>(x), result = 1;
    uint64_t e = static_cast<uint64_t>(y);
    while (e != 0) {
      if (e & 1) result = static_cast<U>(result * base);
      base = static_cast<U>(base * base);
      e >>= 1;
    }
    return static_cast<B>(result);
  } else if constexpr (std::is_integral_v<B>) {
    const double r = std::pow(static_cast<double>(x), static_cast<double>(y));
    if (!(r == r)) return 0;
    if (r >= static_cast<double>(std::numeric_limits<B>::max())) {
      return std::numeric_limits<B>::max();
    }
    if (r <= static_cast<double>(std::numeric_limits<B>::lowest())) {
      return std::numeric_limits<B>::lowest();
    }
    return static_cast<B>(r);
  } else if constexpr (std::is_same_v<B, float> && !std::is_same_v<E, double>) {
    return std::pow(x, static_cast<float>(y));
  } else {
    return static_cast<B>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  }
}

absl::Status PowKernel(KernelContext& ctx) {
  absl::StatusOr<BinaryOperands> operands = PrepareBinary(ctx, /*same_dtype=*/false);
  if (!operands.ok()) return operands.status();
  const Tensor& a = operands->a;
  const Tensor& b = operands->b;
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, a.dtype(), operands->out);
  if (!out.ok()) return out.status();
  if ((*out)->num_elements() == 0) return absl::OkStatus();
  // x^2 (a variance's square) as x*x: the same correctly rounded value, no pow call per element.
  if (a.dtype() == v1::DT_FLOAT32 && b.num_elements() == 1 &&
      a.num_elements() == (*out)->num_elements() && b.ElementAsDouble(0) == 2.0) {
    const float* x = a.data<float>();
    float* o = (*out)->data<float>();
    ctx.ParallelFor((*out)->num_elements(), 32768, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) o[i] = x[i] * x[i];
    });
    return absl::OkStatus();
  }
  return Labeled(ctx, DispatchNumeric(a.dtype(), [&](auto base_tag) -> absl::Status {
    using B = typename decltype(base_tag)::type;
    return DispatchNumeric(b.dtype(), [&](auto exp_tag) -> absl::Status {
      using E = typename decltype(exp_tag)::type;
      if constexpr (kIsHalf<B> || kIsHalf<E>) {
        BroadcastBinary<B, E, B>(
            a, b, **out,
            [](B x, E y) {
              return FromCompute<B>(PowElement(ToCompute(x), static_cast<float>(ToCompute(y))));
            },
            &ctx);
      } else {
        BroadcastBinary<B, E, B>(a, b, **out, [](B x, E y) { return PowElement(x, y); }, &ctx);
      }
      return absl::OkStatus();
    });
  }));
}

absl::Status BitShiftKernel(KernelContext& ctx) {
  const std::string direction = ctx.info().GetString("direction", "");
  if (direction != "LEFT" && direction != "RIGHT") {
    return ctx.Invalid(absl::StrCat("attribute 'direction' must be LEFT or RIGHT, not '",
                                    direction, "'"));
  }
  const bool left = direction == "LEFT";
  absl::StatusOr<BinaryOperands> operands = PrepareBinary(ctx, /*same_dtype=*/true);
  if (!operands.ok()) return operands.status();
  const Tensor& a = operands->a;
  const Tensor& b = operands->b;
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, a.dtype(), operands->out);
  if (!out.ok()) return out.status();
  auto run = [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    constexpr T kBits = static_cast<T>(sizeof(T) * 8);
    if (left) {
      BroadcastBinary<T, T, T>(
          a, b, **out, [](T x, T s) { return s >= kBits ? T(0) : static_cast<T>(x << s); }, &ctx);
    } else {
      BroadcastBinary<T, T, T>(
          a, b, **out, [](T x, T s) { return s >= kBits ? T(0) : static_cast<T>(x >> s); }, &ctx);
    }
    return absl::OkStatus();
  };
  switch (a.dtype()) {
    case v1::DT_UINT8: return run(TypeTag<uint8_t>{});
    case v1::DT_UINT16: return run(TypeTag<uint16_t>{});
    case v1::DT_UINT32: return run(TypeTag<uint32_t>{});
    case v1::DT_UINT64: return run(TypeTag<uint64_t>{});
    default:
      return ctx.info().Unimplemented(absl::StrCat("element type ", DataTypeName(a.dtype()),
                                                   " is not supported (unsigned integers only)"));
  }
}

}  // namespace

absl::Status RegisterArithmeticKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Add", AddKernel));
  s.Update(registry.Register("Sub", SubKernel));
  s.Update(registry.Register("Mul", MulKernel));
  s.Update(registry.Register("Div", DivKernel));
  s.Update(registry.Register("Mod", ModKernel));
  s.Update(registry.Register("Pow", PowKernel));
  s.Update(registry.Register("BitShift", BitShiftKernel));
  return s;
}

absl::Status RegisterElementwiseKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(RegisterArithmeticKernels(registry));
  s.Update(RegisterLogicKernels(registry));
  s.Update(RegisterUnaryKernels(registry));
  s.Update(RegisterCastKernels(registry));
  return s;
}

}  // namespace graphopt::runtime
