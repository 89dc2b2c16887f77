// Reductions over axes: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare; ArgMax, ArgMin;
// MeanVarianceNormalization and LpNormalization (which normalise by reductions).
//
// A reduction merges adjacent dims of the same kind (reduced or kept) and then reduces one group
// of reduced dims per pass, innermost first, each pass a [outer, rows, inner] reduction: with
// inner == 1 a contiguous row reduction, otherwise rows of `inner` contiguous columns
// accumulated into a column vector. Every op here decomposes that way: a prologue on the
// elements (abs, square), an associative combine (sum, product, max, min, log-sum-exp) and an
// epilogue (divide by the count, sqrt, log).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/reduction_util.h"

namespace graphopt::runtime {
namespace {

enum class Combine { kSum, kProd, kMax, kMin, kLogSumExp };
enum class Pre { kNone, kAbs, kSquare };
enum class Post { kNone, kMean, kSqrt, kLog };
enum class ReduceOp { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

struct ReduceSpec {
  Combine combine;
  Pre pre;
  Post post;
  bool real_result;  // integer inputs accumulate in double (the result is not an integer op)
};

constexpr ReduceSpec SpecOf(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return {Combine::kSum, Pre::kNone, Post::kNone, false};
    case ReduceOp::kMean: return {Combine::kSum, Pre::kNone, Post::kMean, false};
    case ReduceOp::kMax: return {Combine::kMax, Pre::kNone, Post::kNone, false};
    case ReduceOp::kMin: return {Combine::kMin, Pre::kNone, Post::kNone, false};
    case ReduceOp::kProd: return {Combine::kProd, Pre::kNone, Post::kNone, false};
    case ReduceOp::kL1: return {Combine::kSum, Pre::kAbs, Post::kNone, false};
    case ReduceOp::kL2: return {Combine::kSum, Pre::kSquare, Post::kSqrt, true};
    case ReduceOp::kLogSum: return {Combine::kSum, Pre::kNone, Post::kLog, true};
    case ReduceOp::kLogSumExp: return {Combine::kLogSumExp, Pre::kNone, Post::kNone, true};
    case ReduceOp::kSumSquare: return {Combine::kSum, Pre::kSquare, Post::kNone, false};
  }
  return {Combine::kSum, Pre::kNone, Post::kNone, false};
}

// Element types the reductions accept.
template <typename F>
absl::Status DispatchReduceTypes(v1::DataType dtype, F&& f) {
  switch (dtype) {
    case v1::DT_FLOAT32: return f(TypeTag<float>{});
    case v1::DT_FLOAT64: return f(TypeTag<double>{});
    case v1::DT_FLOAT16: return f(TypeTag<Float16>{});
    case v1::DT_BFLOAT16: return f(TypeTag<BFloat16>{});
    case v1::DT_INT8: return f(TypeTag<int8_t>{});
    case v1::DT_UINT8: return f(TypeTag<uint8_t>{});
    case v1::DT_INT32: return f(TypeTag<int32_t>{});
    case v1::DT_INT64: return f(TypeTag<int64_t>{});
    case v1::DT_UINT32: return f(TypeTag<uint32_t>{});
    case v1::DT_UINT64: return f(TypeTag<uint64_t>{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("element type ", DataTypeName(dtype), " is not supported"));
  }
}

template <typename T>
inline bool IsNan(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

template <Combine C, typename Acc>
inline Acc Identity() {
  if constexpr (C == Combine::kSum) {
    return Acc(0);
  } else if constexpr (C == Combine::kProd) {
    return Acc(1);
  } else if constexpr (C == Combine::kMax || C == Combine::kLogSumExp) {
    if constexpr (std::is_floating_point_v<Acc>) return -std::numeric_limits<Acc>::infinity();
    return std::numeric_limits<Acc>::lowest();
  } else {
    if constexpr (std::is_floating_point_v<Acc>) return std::numeric_limits<Acc>::infinity();
    return std::numeric_limits<Acc>::max();
  }
}

// The combine step; max and min propagate NaN as numpy does.
template <Combine C, typename Acc>
inline Acc Apply(Acc a, Acc v) {
  if constexpr (C == Combine::kSum) {
    return WrapAdd(a, v);
  } else if constexpr (C == Combine::kProd) {
    return WrapMul(a, v);
  } else if constexpr (C == Combine::kMax) {
    return (v > a || IsNan(v)) ? v : a;
  } else {
    return (v < a || IsNan(v)) ? v : a;
  }
}

template <Pre P, typename Acc, typename In>
inline Acc Load(In x) {
  const Acc v = static_cast<Acc>(ToCompute(x));
  if constexpr (P == Pre::kAbs) {
    if constexpr (std::is_signed_v<Acc>) return v < 0 ? WrapNeg(v) : v;
    return v;
  } else if constexpr (P == Pre::kSquare) {
    return WrapMul(v, v);
  } else {
    return v;
  }
}

// The reduction of x[0, n).
template <Combine C, Pre P, typename Acc, typename In>
Acc ReduceRow(const In* x, int64_t n) {
  if constexpr (C == Combine::kLogSumExp) {
    if constexpr (std::is_floating_point_v<Acc>) {
      if (n == 0) return -std::numeric_limits<Acc>::infinity();
      Acc m = Load<P, Acc>(x[0]);
      for (int64_t r = 1; r < n; ++r) m = Apply<Combine::kMax, Acc>(m, Load<P, Acc>(x[r]));
      if (!std::isfinite(m)) return m;
      Acc s = 0;
      for (int64_t r = 0; r < n; ++r) s += std::exp(Load<P, Acc>(x[r]) - m);
      return m + std::log(s);
    } else {
      return Acc(0);  // not used: log-sum-exp always accumulates in floating point
    }
  } else {
    // Four independent accumulators: pipelined, and closer to pairwise summation.
    Acc a0 = Identity<C, Acc>(), a1 = a0, a2 = a0, a3 = a0;
    int64_t r = 0;
    for (; r + 4 <= n; r += 4) {
      a0 = Apply<C, Acc>(a0, Load<P, Acc>(x[r]));
      a1 = Apply<C, Acc>(a1, Load<P, Acc>(x[r + 1]));
      a2 = Apply<C, Acc>(a2, Load<P, Acc>(x[r + 2]));
      a3 = Apply<C, Acc>(a3, Load<P, Acc>(x[r + 3]));
    }
    for (; r < n; ++r) a0 = Apply<C, Acc>(a0, Load<P, Acc>(x[r]));
    return Apply<C, Acc>(Apply<C, Acc>(a0, a1), Apply<C, Acc>(a2, a3));
  }
}

// y[i] = the reduction over r in [0, rows) of x[r * stride + i], for i in [0, width).
template <Combine C, Pre P, typename Acc, typename In>
void ReduceCols(const In* x, int64_t rows, int64_t width, int64_t stride, Acc* y) {
  if constexpr (C == Combine::kLogSumExp) {
    if constexpr (std::is_floating_point_v<Acc>) {
      if (rows == 0) {
        std::fill(y, y + width, -std::numeric_limits<Acc>::infinity());
        return;
      }
      for (int64_t i = 0; i < width; ++i) y[i] = Load<P, Acc>(x[i]);
      for (int64_t r = 1; r < rows; ++r) {
        const In* row = x + r * stride;
        for (int64_t i = 0; i < width; ++i) {
          y[i] = Apply<Combine::kMax, Acc>(y[i], Load<P, Acc>(row[i]));
        }
      }
      std::vector<Acc> s(width, Acc(0));
      for (int64_t r = 0; r < rows; ++r) {
        const In* row = x + r * stride;
        for (int64_t i = 0; i < width; ++i) {
          if (std::isfinite(y[i])) s[i] += std::exp(Load<P, Acc>(row[i]) - y[i]);
        }
      }
      for (int64_t i = 0; i < width; ++i) {
        if (std::isfinite(y[i])) y[i] += std::log(s[i]);
      }
    }
  } else {
    std::fill(y, y + width, Identity<C, Acc>());
    for (int64_t r = 0; r < rows; ++r) {
      const In* row = x + r * stride;
      for (int64_t i = 0; i < width; ++i) y[i] = Apply<C, Acc>(y[i], Load<P, Acc>(row[i]));
    }
  }
}

constexpr int64_t kGrain = 32768;      // elements per parallel work item, roughly
constexpr int64_t kColBlock = 4096;    // columns per work item of a column reduction
constexpr int64_t kSplitRows = 1 << 16;  // rows long enough to split one row across threads

// y[o * inner + i] = the reduction over r of x[(o * rows + r) * inner + i].
template <Combine C, Pre P, typename Acc, typename In>
void ReducePassT(const In* x, Acc* y, int64_t outer, int64_t rows, int64_t inner,
                 const KernelContext& ctx) {
  if (inner == 1) {
    const int64_t parts = ctx.num_threads();
    if (parts > 1 && outer < parts && rows >= kSplitRows) {
      // Few long rows: each row is split across the threads, and the partial results (already
      // through the prologue) are combined.
      std::vector<Acc> partial(parts);
      for (int64_t o = 0; o < outer; ++o) {
        const In* row = x + o * rows;
        ctx.ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
          for (int64_t p = b; p < e; ++p) {
            const int64_t lo = rows * p / parts, hi = rows * (p + 1) / parts;
            partial[p] = ReduceRow<C, P, Acc>(row + lo, hi - lo);
          }
        });
        y[o] = ReduceRow<C, Pre::kNone, Acc>(partial.data(), parts);
      }
      return;
    }
    ctx.ParallelFor(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(rows, 1)),
                    [&](int64_t b, int64_t e) {
                      for (int64_t o = b; o < e; ++o) y[o] = ReduceRow<C, P, Acc>(x + o * rows, rows);
                    });
    return;
  }
  const int64_t blocks = (inner + kColBlock - 1) / kColBlock;
  const int64_t work = std::max<int64_t>(rows * std::min(inner, kColBlock), 1);
  ctx.ParallelFor(outer * blocks, std::max<int64_t>(1, kGrain / work), [&](int64_t b, int64_t e) {
    for (int64_t w = b; w < e; ++w) {
      const int64_t o = w / blocks;
      const int64_t c0 = (w % blocks) * kColBlock;
      const int64_t width = std::min(kColBlock, inner - c0);
      ReduceCols<C, P, Acc>(x + o * rows * inner + c0, rows, width, inner, y + o * inner + c0);
    }
  });
}

template <Combine C, typename Acc, typename In>
void ReducePassPre(const In* x, Acc* y, int64_t outer, int64_t rows, int64_t inner, Pre pre,
                   const KernelContext& ctx) {
  switch (pre) {
    case Pre::kNone: return ReducePassT<C, Pre::kNone, Acc>(x, y, outer, rows, inner, ctx);
    case Pre::kAbs: return ReducePassT<C, Pre::kAbs, Acc>(x, y, outer, rows, inner, ctx);
    case Pre::kSquare: return ReducePassT<C, Pre::kSquare, Acc>(x, y, outer, rows, inner, ctx);
  }
}

template <typename Acc, typename In>
void ReducePass(const In* x, Acc* y, int64_t outer, int64_t rows, int64_t inner, Combine c,
                Pre pre, const KernelContext& ctx) {
  switch (c) {
    case Combine::kSum: return ReducePassPre<Combine::kSum, Acc>(x, y, outer, rows, inner, pre, ctx);
    case Combine::kProd:
      return ReducePassPre<Combine::kProd, Acc>(x, y, outer, rows, inner, pre, ctx);
    case Combine::kMax: return ReducePassPre<Combine::kMax, Acc>(x, y, outer, rows, inner, pre, ctx);
    case Combine::kMin: return ReducePassPre<Combine::kMin, Acc>(x, y, outer, rows, inner, pre, ctx);
    case Combine::kLogSumExp:
      if constexpr (std::is_floating_point_v<Acc>) {
        return ReducePassPre<Combine::kLogSumExp, Acc>(x, y, outer, rows, inner, pre, ctx);
      }
      return;
  }
}

// Reduces x (elements T) over the dims flagged in `reduced` (combine and prologue only, no
// epilogue): one value per kept position, row-major over the kept dims.
template <typename Acc, typename T>
std::vector<Acc> ReduceAxes(const Tensor& x, const std::vector<bool>& reduced, Combine c, Pre pre,
                            const KernelContext& ctx) {
  std::vector<int64_t> dims;
  std::vector<bool> red;
  for (int i = 0; i < x.rank(); ++i) {
    const int64_t d = x.dim(i);
    if (d == 1) continue;
    if (!dims.empty() && red.back() == reduced[i]) {
      dims.back() *= d;
    } else {
      dims.push_back(d);
      red.push_back(reduced[i]);
    }
  }
  int64_t kept = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!red[i]) kept *= dims[i];
  }
  const T* src = x.data<T>();
  std::vector<Acc> cur(kept), next;
  if (std::find(red.begin(), red.end(), true) == red.end()) {
    ReducePass<Acc>(src, cur.data(), kept, 1, 1, c, pre, ctx);
    return cur;
  }
  bool first = true;
  while (true) {
    int g = static_cast<int>(dims.size()) - 1;
    while (g >= 0 && !red[g]) --g;
    if (g < 0) break;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < g; ++i) outer *= dims[i];
    for (int i = g + 1; i < static_cast<int>(dims.size()); ++i) inner *= dims[i];
    next.assign(outer * inner, Acc(0));
    if (first) {
      ReducePass<Acc>(src, next.data(), outer, dims[g], inner, c, pre, ctx);
    } else {
      ReducePass<Acc>(cur.data(), next.data(), outer, dims[g], inner, c, Pre::kNone, ctx);
    }
    first = false;
    dims.erase(dims.begin() + g);
    red.erase(red.begin() + g);
    std::swap(cur, next);
  }
  return cur;
}

// The axes of a Reduce* node: the `axes` input (ReduceSum from opset 13, all from 18) or
// attribute, as a mask over x's dims; all dims when the list is empty. `empty` says whether it
// was.
absl::Status ReduceAxesMask(const KernelContext& ctx, bool axes_input, int rank,
                            std::vector<bool>* mask, bool* empty) {
  const KernelInfo& info = ctx.info();
  std::vector<int64_t> axes;
  if (axes_input && ctx.input(1) != nullptr) {
    absl::StatusOr<std::vector<int64_t>> v = InputInts(ctx, 1);
    if (!v.ok()) return v.status();
    axes = *std::move(v);
  } else if (!axes_input) {
    axes = info.GetInts("axes");
  }
  *empty = axes.empty();
  mask->assign(rank, axes.empty());
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) {
      return ctx.Invalid(absl::StrCat("axis ", a, " is out of range for input rank ", rank));
    }
    const int k = static_cast<int>(a < 0 ? a + rank : a);
    if ((*mask)[k]) return ctx.Invalid(absl::StrCat("axis ", a, " is repeated in 'axes'"));
    (*mask)[k] = true;
  }
  return absl::OkStatus();
}

template <ReduceOp kOp>
absl::Status ReduceKernel(KernelContext& ctx) {
  constexpr ReduceSpec kSpec = SpecOf(kOp);
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  const int rank = x.rank();
  const int64_t opset = info.opset();
  bool axes_input;
  if (opset == 0) {
    axes_input = ctx.input(1) != nullptr || !info.has_attr("axes");
  } else {
    axes_input = kOp == ReduceOp::kSum ? opset >= 13 : opset >= 18;
  }
  std::vector<bool> mask;
  bool empty = false;
  absl::Status s = ReduceAxesMask(ctx, axes_input, rank, &mask, &empty);
  if (!s.ok()) return s;
  const bool keepdims = info.GetInt("keepdims", 1) != 0;
  if (empty && info.GetInt("noop_with_empty_axes", 0) != 0) {
    mask.assign(rank, false);
    if (kSpec.pre == Pre::kNone && (kSpec.post == Post::kNone || kSpec.post == Post::kMean) &&
        kSpec.combine != Combine::kLogSumExp) {
      ctx.SetOutput(0, x);  // reducing nothing is the identity
      return absl::OkStatus();
    }
  }
  Shape out_shape;
  int64_t count = 1;  // elements per reduction
  for (int i = 0; i < rank; ++i) {
    if (mask[i]) {
      count *= x.dim(i);
      if (keepdims) out_shape.push_back(1);
    } else {
      out_shape.push_back(x.dim(i));
    }
  }
  s = DispatchReduceTypes(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using IntAcc = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    using Acc = std::conditional_t<std::is_integral_v<T> && !kSpec.real_result, IntAcc, double>;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), out_shape);
    if (!out.ok()) return out.status();
    T* y = (*out)->template data<T>();
    const int64_t n = (*out)->num_elements();
    if (count == 0 && (kSpec.combine == Combine::kMax || kSpec.combine == Combine::kMin)) {
      // The identity of max / min over nothing, in the output type.
      using C = ComputeType<T>;
      C v;
      if constexpr (std::is_floating_point_v<C>) {
        v = kSpec.combine == Combine::kMax ? -std::numeric_limits<C>::infinity()
                                           : std::numeric_limits<C>::infinity();
      } else {
        v = kSpec.combine == Combine::kMax ? std::numeric_limits<C>::lowest()
                                           : std::numeric_limits<C>::max();
      }
      std::fill(y, y + n, FromCompute<T>(v));
      return absl::OkStatus();
    }
    std::vector<Acc> acc = ReduceAxes<Acc, T>(x, mask, kSpec.combine, kSpec.pre, ctx);
    for (int64_t i = 0; i < n; ++i) {
      Acc v = acc[i];
      if constexpr (kSpec.post == Post::kMean) {
        if constexpr (std::is_integral_v<Acc>) {
          v = count == 0 ? Acc(0) : v / static_cast<Acc>(count);
        } else {
          v = v / static_cast<Acc>(count);
        }
      } else if constexpr (kSpec.post == Post::kSqrt) {
        v = std::sqrt(v);
      } else if constexpr (kSpec.post == Post::kLog) {
        v = std::log(v);
      }
      y[i] = FromCompute<T>(v);
    }
    return absl::OkStatus();
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}

// ArgMax (kMax) and ArgMin: int64 indices along `axis`; the first extreme unless
// select_last_index; a NaN counts as the extreme (numpy's rule).
template <bool kMax>
absl::Status ArgKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  if (x.rank() == 0) return ctx.Invalid("input 0 must have rank >= 1");
  absl::StatusOr<int> axis = NormalizeAxis(info.GetInt("axis", 0), x.rank(), info);
  if (!axis.ok()) return axis.status();
  const bool keepdims = info.GetInt("keepdims", 1) != 0;
  const bool last = info.GetInt("select_last_index", 0) != 0;
  const AxisLayout l = LayoutAround(x.shape(), *axis, *axis + 1);
  if (l.axis == 0) {
    return ctx.Invalid(absl::StrCat("cannot take ", info.op_type(), " over the empty axis ", *axis,
                                    " of ", x.DebugString()));
  }
  Shape out_shape;
  for (int i = 0; i < x.rank(); ++i) {
    if (i != *axis) {
      out_shape.push_back(x.dim(i));
    } else if (keepdims) {
      out_shape.push_back(1);
    }
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_INT64, out_shape);
  if (!out.ok()) return out.status();
  int64_t* y = (*out)->data<int64_t>();
  absl::Status s = DispatchReduceTypes(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* px = x.data<T>();
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(l.axis * l.inner, 1));
    ctx.ParallelFor(l.outer, grain, [&](int64_t b, int64_t e) {
      std::vector<C> best(l.inner);
      for (int64_t o = b; o < e; ++o) {
        const T* base = px + o * l.axis * l.inner;
        int64_t* yo = y + o * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) {
          best[i] = ToCompute(base[i]);
          yo[i] = 0;
        }
        for (int64_t r = 1; r < l.axis; ++r) {
          const T* row = base + r * l.inner;
          for (int64_t i = 0; i < l.inner; ++i) {
            const C v = ToCompute(row[i]);
            const C cur = best[i];
            bool take;
            if constexpr (kMax) {
              take = last ? v >= cur : v > cur;
            } else {
              take = last ? v <= cur : v < cur;
            }
            if (IsNan(cur)) {
              take = last && IsNan(v);
            } else if (IsNan(v)) {
              take = true;
            }
            if (take) {
              best[i] = v;
              yo[i] = r;
            }
          }
        }
      }
    });
    return absl::OkStatus();
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}

// MeanVarianceNormalization: (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes`
// (default [0, 2, 3]), as ONNX's function body computes it.
absl::Status MvnKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  const int rank = x.rank();
  std::vector<bool> mask(rank, false);
  for (int64_t a : info.GetInts("axes", {0, 2, 3})) {
    if (a < -rank || a >= rank) {
      return ctx.Invalid(absl::StrCat("axis ", a, " is out of range for input rank ", rank));
    }
    const int k = static_cast<int>(a < 0 ? a + rank : a);
    if (mask[k]) return ctx.Invalid(absl::StrCat("axis ", a, " is repeated in 'axes'"));
    mask[k] = true;
  }
  Shape kept_shape;
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    kept_shape.push_back(mask[i] ? 1 : x.dim(i));
    if (mask[i]) count *= x.dim(i);
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!out.ok()) return out.status();
  absl::Status s = DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    std::vector<double> mean = ReduceAxes<double, T>(x, mask, Combine::kSum, Pre::kNone, ctx);
    std::vector<double> scale =
        ReduceAxes<double, T>(x, mask, Combine::kSum, Pre::kSquare, ctx);
    for (size_t j = 0; j < mean.size(); ++j) {
      mean[j] /= static_cast<double>(count);
      const double var = std::max(0.0, scale[j] / static_cast<double>(count) - mean[j] * mean[j]);
      scale[j] = 1.0 / (std::sqrt(var) + 1e-9);
    }
    const Shape shapes[2] = {x.shape(), kept_shape};
    BroadcastIndexer idx(shapes, x.shape());
    const int64_t len = idx.inner_length();
    const int64_t step = idx.inner_step(1);
    const T* px = x.data<T>();
    T* py = (*out)->template data<T>();
    ctx.ParallelFor(idx.num_runs(), std::max<int64_t>(1, kGrain / std::max<int64_t>(len, 1)),
                    [&](int64_t b, int64_t e) {
                      int64_t off[2];
                      for (int64_t r = b; r < e; ++r) {
                        idx.RunOffsets(r, off);
                        for (int64_t i = 0; i < len; ++i) {
                          const int64_t j = off[1] + i * step;
                          const double v = static_cast<double>(ToCompute(px[off[0] + i]));
                          py[off[0] + i] = FromCompute<T>((v - mean[j]) * scale[j]);
                        }
                      }
                    });
    return absl::OkStatus();
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}

// LpNormalization: x / ||x||_p along `axis` (default -1), p in {1, 2} (default 2).
absl::Status LpNormKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  if (x.rank() == 0) return ctx.Invalid("input 0 must have rank >= 1");
  absl::StatusOr<int> axis = NormalizeAxis(info.GetInt("axis", -1), x.rank(), info);
  if (!axis.ok()) return axis.status();
  const int64_t p = info.GetInt("p", 2);
  if (p != 1 && p != 2) return ctx.Invalid(absl::StrCat("attribute 'p' must be 1 or 2, not ", p));
  const AxisLayout l = LayoutAround(x.shape(), *axis, *axis + 1);
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!out.ok()) return out.status();
  absl::Status s = DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* px = x.data<T>();
    T* py = (*out)->template data<T>();
    std::vector<double> norm(l.outer * l.inner);
    ReducePass<double>(px, norm.data(), l.outer, l.axis, l.inner, Combine::kSum,
                       p == 1 ? Pre::kAbs : Pre::kSquare, ctx);
    for (double& v : norm) v = p == 1 ? 1.0 / v : 1.0 / std::sqrt(v);
    ctx.ParallelFor(l.outer, 1, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        for (int64_t r = 0; r < l.axis; ++r) {
          const int64_t base = (o * l.axis + r) * l.inner;
          const double* s = norm.data() + o * l.inner;
          for (int64_t i = 0; i < l.inner; ++i) {
            py[base + i] = FromCompute<T>(static_cast<double>(ToCompute(px[base + i])) * s[i]);
          }
        }
      }
    });
    return absl::OkStatus();
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return info.Unimplemented(absl::StrCat(info.op_type(), ": ", s.message()));
  }
  return s;
}


// graphopt::SumToShape(grad, shape): grad summed over the axes along which a tensor of `shape`
// was broadcast (numpy rules) to reach grad's shape: grad's leading extra axes are summed away,
// and axes where `shape` holds 1 and grad does not are summed and kept as 1. The backward of
// every broadcasting op whose broadcast axes are only known at run time (graph/gradient.h).
absl::Status SumToShapeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> gs = RequireInput(ctx, 0);
  if (!gs.ok()) return gs.status();
  const Tensor& grad = **gs;
  absl::StatusOr<std::vector<int64_t>> target = InputInts(ctx, 1);
  if (!target.ok()) return target.status();
  const int rank = grad.rank();
  const int n = static_cast<int>(target->size());
  if (n > rank) {
    return ctx.Invalid(absl::StrCat("input 1 (shape) has ", n, " dims, more than the rank ", rank,
                                    " of input 0 (grad)"));
  }
  const int lead = rank - n;
  std::vector<bool> mask(rank, false);
  Shape out_shape;
  for (int i = 0; i < rank; ++i) {
    if (i < lead) {
      mask[i] = true;
      continue;
    }
    const int64_t t = (*target)[i - lead];
    if (t == grad.dim(i)) {
      out_shape.push_back(t);
    } else if (t == 1) {
      mask[i] = true;
      out_shape.push_back(1);
    } else {
      return ctx.Invalid(absl::StrCat("input 1 (shape) dim ", i - lead, " is ", t,
                                      ", which does not broadcast to input 0 (grad)'s dim ", i,
                                      " of size ", grad.dim(i)));
    }
  }
  absl::Status s = DispatchReduceTypes(grad.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using IntAcc = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    using Acc = std::conditional_t<std::is_integral_v<T>, IntAcc, double>;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, grad.dtype(), out_shape);
    if (!out.ok()) return out.status();
    T* y = (*out)->template data<T>();
    const int64_t count = (*out)->num_elements();
    if (grad.num_elements() == 0) {
      std::fill(y, y + count, FromCompute<T>(Acc(0)));
      return absl::OkStatus();
    }
    std::vector<Acc> acc = ReduceAxes<Acc, T>(grad, mask, Combine::kSum, Pre::kNone, ctx);
    for (int64_t i = 0; i < count; ++i) y[i] = FromCompute<T>(acc[i]);
    return absl::OkStatus();
  });
  if (!s.ok() && s.code() == absl::StatusCode::kUnimplemented) {
    return ctx.info().Unimplemented(absl::StrCat("SumToShape: ", s.message()));
  }
  return s;
}

}  // namespace

absl::Status RegisterReductionKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("ReduceSum", ReduceKernel<ReduceOp::kSum>));
  s.Update(registry.Register("ReduceMean", ReduceKernel<ReduceOp::kMean>));
  s.Update(registry.Register("ReduceMax", ReduceKernel<ReduceOp::kMax>));
  s.Update(registry.Register("ReduceMin", ReduceKernel<ReduceOp::kMin>));
  s.Update(registry.Register("ReduceProd", ReduceKernel<ReduceOp::kProd>));
  s.Update(registry.Register("ReduceL1", ReduceKernel<ReduceOp::kL1>));
  s.Update(registry.Register("ReduceL2", ReduceKernel<ReduceOp::kL2>));
  s.Update(registry.Register("ReduceLogSum", ReduceKernel<ReduceOp::kLogSum>));
  s.Update(registry.Register("ReduceLogSumExp", ReduceKernel<ReduceOp::kLogSumExp>));
  s.Update(registry.Register("ReduceSumSquare", ReduceKernel<ReduceOp::kSumSquare>));
  s.Update(registry.Register("ArgMax", ArgKernel<true>));
  s.Update(registry.Register("ArgMin", ArgKernel<false>));
  s.Update(registry.Register("MeanVarianceNormalization", MvnKernel));
  s.Update(registry.Register("LpNormalization", LpNormKernel));
  s.Update(RegisterSoftmaxKernels(registry));
  s.Update(RegisterEinsumKernels(registry));
  // graph/gradient.h's kGraphoptDomain.
  s.Update(registry.Register(KernelRegistry::Key{"graphopt", "SumToShape"}, SumToShapeKernel));
  return s;
}

}  // namespace graphopt::runtime
