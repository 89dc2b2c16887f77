// Tensor-family kernels, part "shape" continued: the generators and scans Range, EyeLike, Tile,
// Trilu, CumSum and OneHot (registered from RegisterTensorShapeKernels in tensor_shape.cc).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/tensor_shape_util.h"

namespace graphopt::runtime::shape_internal {
namespace {

// A one-element input (a scalar, or a 1-element tensor as older exporters write them).
absl::StatusOr<const Tensor*> ScalarInput(const KernelContext& ctx, int i, const char* name) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return ctx.Invalid(absl::StrCat("input ", i, " (", name, ") is required"));
  if (t->num_elements() != 1) {
    return ctx.Invalid(
        absl::StrCat("input ", i, " (", name, ") must be a scalar, got ", t->DebugString()));
  }
  return t;
}

// --- Range ----------------------------------------------------------------------------------

// The element count of Range: max(ceil((limit - start) / delta), 0), exact for integers.
template <typename T>
absl::StatusOr<int64_t> RangeCount(const KernelContext& ctx, T start, T limit, T delta) {
  if constexpr (std::is_integral_v<T>) {
    if (delta == 0) return ctx.Invalid("delta (input 2) is 0");
    // Differences are taken in 128 bits so that no int64 range overflows.
    const __int128 d = static_cast<__int128>(limit) - static_cast<__int128>(start);
    const __int128 s = static_cast<__int128>(delta);
    __int128 n = 0;
    if (s > 0 && d > 0) n = (d + s - 1) / s;
    if (s < 0 && d < 0) n = (-d + (-s) - 1) / (-s);
    if (n > (static_cast<__int128>(1) << 48)) return ctx.Invalid("the range is too large");
    return static_cast<int64_t>(n);
  } else {
    const double a = static_cast<double>(ToCompute(start));
    const double b = static_cast<double>(ToCompute(limit));
    const double s = static_cast<double>(ToCompute(delta));
    if (s == 0.0) return ctx.Invalid("delta (input 2) is 0");
    const double n = std::ceil((b - a) / s);
    if (!(n == n) || n > static_cast<double>(int64_t{1} << 48)) {
      return ctx.Invalid(absl::StrCat("the range from ", a, " to ", b, " by ", s,
                                      " is too large or not finite"));
    }
    return n > 0 ? static_cast<int64_t>(n) : int64_t{0};
  }
}

// Range: start + i * delta for i in [0, n).
absl::Status RangeKernel(KernelContext& ctx) {
  const Tensor* in[3];
  static constexpr const char* kNames[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<const Tensor*> t = ScalarInput(ctx, i, kNames[i]);
    if (!t.ok()) return t.status();
    in[i] = *t;
  }
  const v1::DataType dtype = in[0]->dtype();
  if (in[1]->dtype() != dtype || in[2]->dtype() != dtype) {
    return ctx.Invalid(absl::StrCat("start, limit and delta must have one type, got ",
                                    in[0]->DebugString(), ", ", in[1]->DebugString(), ", ",
                                    in[2]->DebugString()));
  }
  return LabelStatus(ctx.info(), DispatchNumeric(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T start = *in[0]->data<T>();
    const T delta = *in[2]->data<T>();
    absl::StatusOr<int64_t> n = RangeCount<T>(ctx, start, *in[1]->data<T>(), delta);
    if (!n.ok()) return n.status();
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, dtype, {*n});
    if (!out.ok()) return out.status();
    T* o = (*out)->data<T>();
    // Element i depends on i alone: in parallel pieces (the stop token is polled between them).
    if constexpr (std::is_integral_v<T>) {
      // Wrapping 64-bit arithmetic: every element fits in T, intermediate products may not.
      const uint64_t a = static_cast<uint64_t>(start), s = static_cast<uint64_t>(delta);
      ctx.ParallelFor(*n, 32768, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          o[i] = static_cast<T>(a + static_cast<uint64_t>(i) * s);
        }
      });
    } else {
      using C = ComputeType<T>;
      const C a = ToCompute(start), s = ToCompute(delta);
      ctx.ParallelFor(*n, 32768, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = FromCompute<T>(a + static_cast<C>(i) * s);
      });
    }
    return absl::OkStatus();
  }));
}

// --- EyeLike --------------------------------------------------------------------------------

// Dispatch over the numeric types and bool.
template <typename F>
absl::Status DispatchNumericOrBool(v1::DataType dtype, F&& f) {
  if (dtype == v1::DT_BOOL) return f(TypeTag<bool>{});
  return DispatchNumeric(dtype, std::forward<F>(f));
}

// EyeLike: a 2-D tensor of input 0's shape with ones on diagonal k, of type 'dtype' (default
// the input's).
absl::Status EyeLikeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xin = RequireInput(ctx, 0);
  if (!xin.ok()) return xin.status();
  const Tensor& x = **xin;
  if (x.rank() != 2) {
    return ctx.Invalid(absl::StrCat("input 0 must be 2-D, got ", x.DebugString()));
  }
  v1::DataType dtype = x.dtype();
  if (ctx.info().has_attr("dtype")) {
    const int64_t d = ctx.info().GetInt("dtype", 0);
    if (!v1::DataType_IsValid(static_cast<int>(d)) || d == v1::DT_UNDEFINED) {
      return ctx.Invalid(absl::StrCat("attribute 'dtype' (", d, ") is not a data type"));
    }
    dtype = static_cast<v1::DataType>(d);
  }
  const int64_t rows = x.dim(0), cols = x.dim(1);
  // Beyond [-rows, cols] every k is off the matrix; clamped, i + k cannot overflow.
  const int64_t k = std::clamp<int64_t>(ctx.info().GetInt("k", 0), -rows, cols);
  return LabelStatus(ctx.info(), DispatchNumericOrBool(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, dtype, x.shape());
    if (!out.ok()) return out.status();
    T* o = (*out)->data<T>();
    ctx.ParallelFor(rows * cols, 65536,
                    [&](int64_t begin, int64_t end) { std::fill(o + begin, o + end, T{}); });
    const T one = FromCompute<T>(1);
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t j = i + k;
      if (j >= 0 && j < cols) o[i * cols + j] = one;
    }
    return absl::OkStatus();
  }));
}

// --- Tile -----------------------------------------------------------------------------------

// Tile: input 0 repeated repeats[d] times along each dim d.
absl::Status TileKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xin = RequireInput(ctx, 0);
  if (!xin.ok()) return xin.status();
  const Tensor& x = **xin;
  const Tensor* reps_t = ctx.input(1);
  if (reps_t == nullptr) return ctx.Invalid("input 1 (repeats) is required");
  absl::StatusOr<std::vector<int64_t>> reps = InputInts(ctx, 1);
  if (!reps.ok()) return reps.status();
  const int rank = x.rank();
  if (reps_t->rank() != 1 || static_cast<int>(reps->size()) != rank) {
    return ctx.Invalid(absl::StrCat("input 1 (repeats) must be 1-D with one entry per dim of ",
                                    x.DebugString(), ", got ", reps_t->DebugString()));
  }
  Shape out_shape(x.shape());
  for (int d = 0; d < rank; ++d) {
    if ((*reps)[d] < 0) {
      return ctx.Invalid(
          absl::StrCat("input 1 (repeats) ", ShapeString(*reps), " has a negative entry"));
    }
    if ((*reps)[d] != 0 && out_shape[d] > (int64_t{1} << 48) / (*reps)[d]) {
      return ctx.Invalid(absl::StrCat("tiling ", x.DebugString(), " by ", ShapeString(*reps),
                                      " is too large"));
    }
    out_shape[d] *= (*reps)[d];
  }
  absl::StatusOr<Tensor*> outp = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!outp.ok()) return outp.status();
  Tensor& out = **outp;
  if (out.num_elements() == 0) return absl::OkStatus();
  return LabelStatus(ctx.info(), DispatchAll(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* in = TypedData<T>(x);
    T* po = TypedData<T>(out);
    if (rank == 0) {
      po[0] = in[0];
      return absl::OkStatus();
    }
    // Rows of the innermost dim: output row r reads input row sum((c_d % in_d) * stride_d)
    // for its coordinates c_d and repeats it reps[last] times.
    const int64_t in_len = x.dim(rank - 1);
    const int64_t out_len = out_shape[rank - 1];
    const int64_t rows = out.num_elements() / out_len;
    const std::vector<int64_t> in_strides = Strides(x.shape());
    // Long rows (a vector tiled many times) in blocks of whole input rows, so that no unit of
    // work is the whole output.
    const int64_t block = std::max<int64_t>(1, 16384 / in_len) * in_len;
    const int64_t blocks = (out_len + block - 1) / block;
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t u = begin; u < end; ++u) {
        const int64_t r = u / blocks;
        const int64_t lo = (u % blocks) * block, hi = std::min(out_len, lo + block);
        int64_t rem = r, src = 0;
        for (int d = rank - 2; d >= 0; --d) {
          const int64_t c = rem % out_shape[d];
          rem /= out_shape[d];
          src += (c % x.dim(d)) * in_strides[d];
        }
        const T* s = in + src;
        T* o = po + r * out_len;
        for (int64_t j = lo; j < hi; j += in_len) std::copy(s, s + in_len, o + j);
      }
    };
    ctx.ParallelFor(rows * blocks, std::max<int64_t>(1, 16384 / std::min(out_len, block)), body);
    return absl::OkStatus();
  }));
}

// --- Trilu ----------------------------------------------------------------------------------

// Trilu: keeps the upper (j - i >= k) or lower (j - i <= k) triangle of each matrix in the
// last two dims and zeroes the rest; k is the optional scalar input 1.
absl::Status TriluKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xin = RequireInput(ctx, 0);
  if (!xin.ok()) return xin.status();
  const Tensor& x = **xin;
  if (x.rank() < 2) {
    return ctx.Invalid(absl::StrCat("input 0 must have rank >= 2, got ", x.DebugString()));
  }
  int64_t k = 0;
  if (ctx.input(1) != nullptr) {
    absl::StatusOr<const Tensor*> kt = ScalarInput(ctx, 1, "k");
    if (!kt.ok()) return kt.status();
    absl::StatusOr<std::vector<int64_t>> kv = InputInts(ctx, 1);
    if (!kv.ok()) return kv.status();
    k = (*kv)[0];
  }
  const bool upper = ctx.info().GetInt("upper", 1) != 0;
  const int64_t n = x.dim(x.rank() - 2), m = x.dim(x.rank() - 1);
  // Beyond [-n - 1, m + 1] every k keeps the same columns; clamped, i + k cannot overflow.
  k = std::clamp<int64_t>(k, -n - 1, m + 1);
  absl::StatusOr<Tensor*> outp = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!outp.ok()) return outp.status();
  Tensor& out = **outp;
  if (out.num_elements() == 0) return absl::OkStatus();
  const int64_t rows = x.num_elements() / m;
  return LabelStatus(ctx.info(), DispatchAll(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* in = TypedData<T>(x);
    T* po = TypedData<T>(out);
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % n;
        // Columns kept: [lo, hi).
        const int64_t edge = std::min(std::max<int64_t>(i + k, -1), m);
        const int64_t lo = upper ? std::max<int64_t>(edge, 0) : 0;
        const int64_t hi = upper ? m : std::min<int64_t>(edge + 1, m);
        const T* s = in + r * m;
        T* o = po + r * m;
        std::fill(o, o + lo, T{});
        std::copy(s + lo, s + std::max(lo, hi), o + lo);
        std::fill(o + std::max(lo, hi), o + m, T{});
      }
    };
    ctx.ParallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(m, 1)), body);
    return absl::OkStatus();
  }));
}

// --- CumSum ---------------------------------------------------------------------------------

// CumSum: running sums along the axis in input 1 (exclusive: excluding the element itself;
// reverse: from the end).
absl::Status CumSumKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xin = RequireInput(ctx, 0);
  if (!xin.ok()) return xin.status();
  const Tensor& x = **xin;
  absl::StatusOr<const Tensor*> at = ScalarInput(ctx, 1, "axis");
  if (!at.ok()) return at.status();
  absl::StatusOr<std::vector<int64_t>> av = InputInts(ctx, 1);
  if (!av.ok()) return av.status();
  const int rank = x.rank();
  const int64_t axis_in = (*av)[0];
  if (axis_in < -rank || axis_in >= rank) {
    return ctx.Invalid(absl::StrCat("axis ", axis_in, " (input 1) is out of range for ",
                                    x.DebugString()));
  }
  const int axis = static_cast<int>(axis_in < 0 ? axis_in + rank : axis_in);
  const bool exclusive = ctx.info().GetInt("exclusive", 0) != 0;
  const bool reverse = ctx.info().GetInt("reverse", 0) != 0;
  absl::StatusOr<Tensor*> outp = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!outp.ok()) return outp.status();
  Tensor& out = **outp;
  if (out.num_elements() == 0) return absl::OkStatus();
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int d = axis + 1; d < rank; ++d) inner *= x.dim(d);
  const int64_t len = x.dim(axis);
  return LabelStatus(ctx.info(), DispatchNumeric(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* in = x.data<T>();
    T* po = out.data<T>();
    auto body = [&](int64_t begin, int64_t end) {
      std::vector<C> acc(static_cast<size_t>(inner));
      for (int64_t b = begin; b < end; ++b) {
        std::fill(acc.begin(), acc.end(), C{});
        for (int64_t step = 0; step < len; ++step) {
          // A long axis runs serially: stop between steps.
          if ((step & 4095) == 0 && ctx.ShouldStop()) return;
          const int64_t t = reverse ? len - 1 - step : step;
          const T* s = in + (b * len + t) * inner;
          T* o = po + (b * len + t) * inner;
          C* a = acc.data();
          // Integer running sums wrap around (two's complement), as numpy's cumsum does.
          if (exclusive) {
            for (int64_t i = 0; i < inner; ++i) {
              o[i] = FromCompute<T>(a[i]);
              a[i] = WrapAdd(a[i], ToCompute(s[i]));
            }
          } else {
            for (int64_t i = 0; i < inner; ++i) {
              a[i] = WrapAdd(a[i], ToCompute(s[i]));
              o[i] = FromCompute<T>(a[i]);
            }
          }
        }
      }
    };
    ctx.ParallelFor(outer, std::max<int64_t>(1, 16384 / std::max<int64_t>(len * inner, 1)),
                    body);
    return absl::OkStatus();
  }));
}

// --- OneHot ---------------------------------------------------------------------------------

// Converts indices (any numeric type) to int64, truncating floats.
absl::StatusOr<std::vector<int64_t>> IndicesAsInt64(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.num_elements()));
  absl::Status s = DispatchNumeric(t.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) {
      const auto c = ToCompute(p[i]);
      if constexpr (std::is_floating_point_v<decltype(c)>) {
        v[i] = (c == c && c > -9.2e18 && c < 9.2e18) ? static_cast<int64_t>(c)
                                                     : std::numeric_limits<int64_t>::min();
      } else {
        v[i] = static_cast<int64_t>(c);
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return v;
}

// OneHot: output[..., d, ...] (d at `axis` of rank(indices) + 1) is values[1] where
// indices[...] == d and values[0] elsewhere; indices in [-depth, 0) count from the end and
// indices out of [-depth, depth) select nothing.
absl::Status OneHotKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> iin = RequireInput(ctx, 0);
  if (!iin.ok()) return iin.status();
  const Tensor& indices = **iin;
  absl::StatusOr<const Tensor*> dt = ScalarInput(ctx, 1, "depth");
  if (!dt.ok()) return dt.status();
  const Tensor* values = ctx.input(2);
  if (values == nullptr) return ctx.Invalid("input 2 (values) is required");
  if (values->num_elements() != 2 || values->rank() > 1) {
    return ctx.Invalid(absl::StrCat("input 2 (values) must be [off_value, on_value], got ",
                                    values->DebugString()));
  }
  absl::StatusOr<std::vector<int64_t>> depth_v = IndicesAsInt64(**dt);
  if (!depth_v.ok()) return LabelStatus(ctx.info(), depth_v.status());
  const int64_t depth = (*depth_v)[0];
  if (depth <= 0 || depth > (int64_t{1} << 40)) {
    return ctx.Invalid(absl::StrCat("depth (input 1) must be positive, got ", depth));
  }
  absl::StatusOr<std::vector<int64_t>> idx = IndicesAsInt64(indices);
  if (!idx.ok()) return LabelStatus(ctx.info(), idx.status());
  const int out_rank = indices.rank() + 1;
  const int64_t axis_attr = ctx.info().GetInt("axis", -1);
  if (axis_attr < -out_rank || axis_attr >= out_rank) {
    return ctx.Invalid(absl::StrCat("attribute 'axis' (", axis_attr,
                                    ") is out of range for output rank ", out_rank));
  }
  const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + out_rank : axis_attr);
  Shape out_shape;
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < indices.rank(); ++d) {
    if (d == axis) out_shape.push_back(depth);
    out_shape.push_back(indices.dim(d));
    (d < axis ? outer : inner) *= indices.dim(d);
  }
  if (axis == indices.rank()) out_shape.push_back(depth);
  absl::StatusOr<Tensor*> outp = ctx.AllocateOutput(0, values->dtype(), out_shape);
  if (!outp.ok()) return outp.status();
  Tensor& out = **outp;
  return LabelStatus(ctx.info(), DispatchAll(values->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* v = TypedData<T>(*values);
    T* po = TypedData<T>(out);
    std::fill_n(po, out.num_elements(), v[0]);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        int64_t d = (*idx)[o * inner + i];
        if (d < -depth || d >= depth) continue;
        if (d < 0) d += depth;
        po[(o * depth + d) * inner + i] = v[1];
      }
    }
    return absl::OkStatus();
  }));
}

}  // namespace

absl::Status RegisterTensorShapeGenKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Range", RangeKernel));
  s.Update(registry.Register("EyeLike", EyeLikeKernel));
  s.Update(registry.Register("Tile", TileKernel));
  s.Update(registry.Register("Trilu", TriluKernel));
  s.Update(registry.Register("CumSum", CumSumKernel));
  s.Update(registry.Register("OneHot", OneHotKernel));
  return s;
}

}  // namespace graphopt::runtime::shape_internal
