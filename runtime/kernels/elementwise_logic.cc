// Comparisons, boolean logic, Where and the variadic Max/Min/Sum/Mean.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/elementwise_util.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {
namespace {

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// A comparison of two inputs of one dtype into a bool output. Equal also takes bool and
// string inputs.
template <typename Cmp>
absl::Status CompareKernel(KernelContext& ctx, Cmp cmp, bool allow_bool_and_string) {
  absl::StatusOr<BinaryOperands> operands = PrepareBinary(ctx, /*same_dtype=*/true);
  if (!operands.ok()) return operands.status();
  const Tensor& a = operands->a;
  const Tensor& b = operands->b;
  const Shape* shape = &operands->out;
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_BOOL, *shape);
  if (!out.ok()) return out.status();
  if ((*out)->num_elements() == 0) return absl::OkStatus();
  if (!allow_bool_and_string && (a.dtype() == v1::DT_BOOL || a.dtype() == v1::DT_STRING)) {
    return ctx.info().Unimplemented(
        absl::StrCat("element type ", DataTypeName(a.dtype()), " is not supported"));
  }
  return Labeled(ctx, DispatchAll(a.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, std::string>) {
      // Strings: the indexed loop of BroadcastBinary does not apply (they live apart).
      const Shape shapes[2] = {a.shape(), b.shape()};
      BroadcastIndexer idx(shapes, (*out)->shape());
      const std::string* pa = a.strings();
      const std::string* pb = b.strings();
      bool* po = (*out)->data<bool>();
      const int64_t len = idx.inner_length();
      const int64_t sa = idx.inner_step(0), sb = idx.inner_step(1);
      int64_t off[2];
      for (int64_t r = 0; r < idx.num_runs(); ++r) {
        idx.RunOffsets(r, off);
        for (int64_t i = 0; i < len; ++i) {
          po[r * len + i] = cmp(pa[off[0] + i * sa], pb[off[1] + i * sb]);
        }
      }
    } else if constexpr (kIsHalf<T>) {
      BroadcastBinary<T, T, bool>(
          a, b, **out,
          [cmp](T x, T y) { return cmp(static_cast<float>(x), static_cast<float>(y)); }, &ctx);
    } else {
      BroadcastBinary<T, T, bool>(a, b, **out, cmp, &ctx);
    }
    return absl::OkStatus();
  }));
}

struct EqualCmp {
  template <typename C>
  bool operator()(const C& x, const C& y) const { return x == y; }
};
struct LessCmp {
  template <typename C>
  bool operator()(const C& x, const C& y) const { return x < y; }
};
struct GreaterCmp {
  template <typename C>
  bool operator()(const C& x, const C& y) const { return x > y; }
};
struct LessOrEqualCmp {
  template <typename C>
  bool operator()(const C& x, const C& y) const { return x <= y; }
};
struct GreaterOrEqualCmp {
  template <typename C>
  bool operator()(const C& x, const C& y) const { return x >= y; }
};

// And / Or / Xor on bool inputs.
template <typename Op>
absl::Status LogicKernel(KernelContext& ctx, Op op) {
  absl::StatusOr<BinaryOperands> operands = PrepareBinary(ctx, /*same_dtype=*/true);
  if (!operands.ok()) return operands.status();
  const Tensor& a = operands->a;
  const Tensor& b = operands->b;
  const Shape* shape = &operands->out;
  if (a.dtype() != v1::DT_BOOL) {
    return ctx.info().Unimplemented(absl::StrCat("element type ", DataTypeName(a.dtype()),
                                                 " is not supported (bool only)"));
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_BOOL, *shape);
  if (!out.ok()) return out.status();
  if ((*out)->num_elements() == 0) return absl::OkStatus();
  BroadcastBinary<bool, bool, bool>(a, b, **out, op, &ctx);
  return absl::OkStatus();
}

absl::Status NotKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  if ((*x)->dtype() != v1::DT_BOOL) {
    return ctx.info().Unimplemented(absl::StrCat("element type ", DataTypeName((*x)->dtype()),
                                                 " is not supported (bool only)"));
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_BOOL, (*x)->shape());
  if (!out.ok()) return out.status();
  MapElements(ctx, (*x)->data<bool>(), (*out)->data<bool>(), (*x)->num_elements(),
              [](bool v) { return !v; });
  return absl::OkStatus();
}

// Where(condition, X, Y): three-way broadcast.
absl::Status WhereKernel(KernelContext& ctx) {
  absl::StatusOr<Shape> shape = BroadcastInputs(ctx, 0, 3, /*same_dtype=*/false);
  if (!shape.ok()) return shape.status();
  const Tensor& c = *ctx.input(0);
  const Tensor& x = *ctx.input(1);
  const Tensor& y = *ctx.input(2);
  if (c.dtype() != v1::DT_BOOL) {
    return ctx.Invalid(absl::StrCat("input 0 (condition) must be bool, not ",
                                    DataTypeName(c.dtype())));
  }
  if (x.dtype() != y.dtype()) {
    return ctx.Invalid(absl::StrCat("input 1 is ", DataTypeName(x.dtype()), " but input 2 is ",
                                    DataTypeName(y.dtype())));
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), *shape);
  if (!out.ok()) return out.status();
  if ((*out)->num_elements() == 0) return absl::OkStatus();
  const Shape shapes[3] = {c.shape(), x.shape(), y.shape()};
  BroadcastIndexer idx(shapes, (*out)->shape());
  return Labeled(ctx, DispatchAll(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const bool* pc = c.data<bool>();
    const T* px = Elements<T>(x);
    const T* py = Elements<T>(y);
    T* po = MutableElements<T>(**out);
    const int64_t len = idx.inner_length();
    const int64_t sc = idx.inner_step(0), sx = idx.inner_step(1), sy = idx.inner_step(2);
    auto body = [&](int64_t begin, int64_t end) {
      int64_t off[3];
      for (int64_t r = begin; r < end; ++r) {
        idx.RunOffsets(r, off);
        const bool* cr = pc + off[0];
        const T* xr = px + off[1];
        const T* yr = py + off[2];
        T* o = po + r * len;
        if (sc == 1 && sx == 1 && sy == 1) {
          for (int64_t i = 0; i < len; ++i) o[i] = cr[i] ? xr[i] : yr[i];
        } else {
          for (int64_t i = 0; i < len; ++i) o[i] = cr[i * sc] ? xr[i * sx] : yr[i * sy];
        }
      }
    };
    if (idx.num_runs() == 1) {
      // One run (no broadcasting, or only a scalar): split the run itself.
      ctx.ParallelFor(len, kElementwiseGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
      });
      return absl::OkStatus();
    }
    const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(len, 1));
    ctx.ParallelFor(idx.num_runs(), grain, body);
    return absl::OkStatus();
  }));
}

// NaN-propagating max and min (as numpy's maximum / minimum).
struct MaxOp {
  template <typename C>
  C operator()(C x, C y) const {
    return (x >= y || x != x) ? x : y;
  }
};
struct MinOp {
  template <typename C>
  C operator()(C x, C y) const {
    return (x <= y || x != x) ? x : y;
  }
};
struct SumOp {
  template <typename C>
  C operator()(C x, C y) const {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return static_cast<C>(static_cast<U>(x) + static_cast<U>(y));
    } else {
      return x + y;
    }
  }
};

// Max / Min / Sum / Mean over one or more inputs of one dtype, broadcast together.
template <typename Op, typename Dispatch>
absl::Status VariadicKernel(KernelContext& ctx, Op op, Dispatch dispatch, bool mean) {
  const int n = ctx.num_inputs();
  if (n < 1) return ctx.Invalid("at least one input is required");
  absl::StatusOr<Shape> shape = BroadcastInputs(ctx, 0, n, /*same_dtype=*/true);
  if (!shape.ok()) return shape.status();
  const v1::DataType dtype = ctx.input(0)->dtype();
  if (n == 1) {
    // Validate the dtype even though the result is the input itself.
    absl::Status s = Labeled(ctx, dispatch(dtype, [](auto) { return absl::OkStatus(); }));
    if (!s.ok()) return s;
    ctx.SetOutput(0, *ctx.input(0));
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, dtype, *shape);
  if (!out.ok()) return out.status();
  if ((*out)->num_elements() == 0) return absl::OkStatus();
  return Labeled(ctx, dispatch(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    auto fn = [op](T x, T y) { return FromCompute<T>(op(ToCompute(x), ToCompute(y))); };
    Tensor& o = **out;
    BroadcastBinary<T, T, T>(*ctx.input(0), *ctx.input(1), o, fn, &ctx);
    // The output has the full shape, so it can be read and written in place.
    for (int i = 2; i < n; ++i) BroadcastBinary<T, T, T>(o, *ctx.input(i), o, fn, &ctx);
    if (mean) {
      using C = ComputeType<T>;
      const C scale = static_cast<C>(n);
      T* p = o.data<T>();
      MapElements(ctx, p, p, o.num_elements(),
                  [scale](T v) { return FromCompute<T>(ToCompute(v) / scale); });
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
struct FloatDispatch {
  template <typename F>
  absl::Status operator()(v1::DataType dtype, F&& f) const {
    return DispatchFloat(dtype, std::forward<F>(f));
  }
};

}  // namespace

absl::Status RegisterLogicKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register(
      "Equal", +[](KernelContext& ctx) { return CompareKernel(ctx, EqualCmp{}, true); }));
  s.Update(registry.Register(
      "Less", +[](KernelContext& ctx) { return CompareKernel(ctx, LessCmp{}, false); }));
  s.Update(registry.Register(
      "Greater", +[](KernelContext& ctx) { return CompareKernel(ctx, GreaterCmp{}, false); }));
  s.Update(registry.Register("LessOrEqual", +[](KernelContext& ctx) {
    return CompareKernel(ctx, LessOrEqualCmp{}, false);
  }));
  s.Update(registry.Register("GreaterOrEqual", +[](KernelContext& ctx) {
    return CompareKernel(ctx, GreaterOrEqualCmp{}, false);
  }));
  s.Update(registry.Register("And", +[](KernelContext& ctx) {
    return LogicKernel(ctx, [](bool x, bool y) { return x && y; });
  }));
  s.Update(registry.Register("Or", +[](KernelContext& ctx) {
    return LogicKernel(ctx, [](bool x, bool y) { return x || y; });
  }));
  s.Update(registry.Register("Xor", +[](KernelContext& ctx) {
    return LogicKernel(ctx, [](bool x, bool y) { return x != y; });
  }));
  s.Update(registry.Register("Not", NotKernel));
  s.Update(registry.Register("Where", WhereKernel));
  s.Update(registry.Register("Max", +[](KernelContext& ctx) {
    return VariadicKernel(ctx, MaxOp{}, NumericDispatch{}, false);
  }));
  s.Update(registry.Register("Min", +[](KernelContext& ctx) {
    return VariadicKernel(ctx, MinOp{}, NumericDispatch{}, false);
  }));
  s.Update(registry.Register("Sum", +[](KernelContext& ctx) {
    return VariadicKernel(ctx, SumOp{}, FloatDispatch{}, false);
  }));
  s.Update(registry.Register("Mean", +[](KernelContext& ctx) {
    return VariadicKernel(ctx, SumOp{}, FloatDispatch{}, true);
  }));
  return s;
}

}  // namespace graphopt::runtime
