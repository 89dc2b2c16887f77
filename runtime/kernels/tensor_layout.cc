// Tensor-family kernels, part "layout" (see RegisterTensorKernels in tensor.cc): Transpose,
// Concat, Split, Slice, DepthToSpace, SpaceToDepth and ReverseSequence (this file); Pad,
// Resize and Upsample (tensor_layout_resize.cc).
//
// Every kernel here moves elements without looking at them, so it dispatches on the element
// width (1/2/4/8 bytes) rather than the dtype, plus std::string for DT_STRING.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/tensor_util.h"

namespace graphopt::runtime {

absl::Status RegisterTensorLayoutResizeKernels(KernelRegistry& registry);  // tensor_layout_resize.cc

namespace {

// Elements per parallel chunk for plain copies.
constexpr int64_t kCopyGrain = 1 << 15;

// A strided view to copy: out (row-major over `dims`) = in[sum(i_k * strides[k])].
struct StridedLayout {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;  // in elements of the source, may be negative
};

// Drops size-1 dims and merges neighbours that are contiguous in the source.
StridedLayout Coalesce(absl::Span<const int64_t> dims, absl::Span<const int64_t> strides) {
  StridedLayout l;
  for (size_t k = 0; k < dims.size(); ++k) {
    if (dims[k] == 1) continue;
    if (!l.dims.empty() && l.strides.back() == strides[k] * dims[k]) {
      l.dims.back() *= dims[k];
      l.strides.back() = strides[k];
    } else {
      l.dims.push_back(dims[k]);
      l.strides.push_back(strides[k]);
    }
  }
  return l;
}

// Source offset of row-major index `linear` over dims[0, n) with the given strides.
inline int64_t OffsetOf(int64_t linear, const int64_t* dims, const int64_t* strides, int n) {
  int64_t off = 0;
  for (int k = n - 1; k >= 0 && linear > 0; --k) {
    off += (linear % dims[k]) * strides[k];
    linear /= dims[k];
  }
  return off;
}

// out[row-major over dims] = in[sum(i_k * strides[k])]. `in` points at the element of index 0.
// Contiguous inner runs are block-copied; a source-contiguous dim that is not innermost in
// the output is handled with a tiled transpose.
template <typename T>
void StridedCopy(const T* in, absl::Span<const int64_t> dims, absl::Span<const int64_t> strides,
                 T* out, const KernelContext& ctx) {
  const int64_t total = ShapeNumElements(dims);
  if (total <= 0) return;
  StridedLayout l = Coalesce(dims, strides);
  if (l.dims.empty()) {
    out[0] = in[0];
    return;
  }
  const int n = static_cast<int>(l.dims.size());
  const int64_t len = l.dims.back();
  const int64_t last_stride = l.strides.back();
  // Tiled transpose when another dim p is contiguous in the source.
  int p = -1;
  if (last_stride != 1) {
    for (int k = 0; k < n - 1; ++k) {
      if (l.strides[k] == 1 && l.dims[k] >= 4 && len >= 4) p = k;
    }
  }
  if (p >= 0) {
    constexpr int64_t kTile = 32;
    std::vector<int64_t> out_strides = Strides(l.dims);
    // Outer dims: all but p and the last.
    std::vector<int64_t> odims, ostr_in, ostr_out;
    for (int k = 0; k < n - 1; ++k) {
      if (k == p) continue;
      odims.push_back(l.dims[k]);
      ostr_in.push_back(l.strides[k]);
      ostr_out.push_back(out_strides[k]);
    }
    const int on = static_cast<int>(odims.size());
    const int64_t pdim = l.dims[p], pos = out_strides[p];
    const int64_t ptiles = (pdim + kTile - 1) / kTile;
    const int64_t items = (total / (pdim * len)) * ptiles;
    const int64_t grain = std::max<int64_t>(1, kCopyGrain / (kTile * len));
    ctx.ParallelFor(items, grain, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / ptiles, pt = item % ptiles;
        const int64_t ib = OffsetOf(o, odims.data(), ostr_in.data(), on);
        const int64_t ob = OffsetOf(o, odims.data(), ostr_out.data(), on);
        const int64_t p0 = pt * kTile, p1 = std::min(pdim, p0 + kTile);
        for (int64_t k0 = 0; k0 < len; k0 += kTile) {
          const int64_t k1 = std::min(len, k0 + kTile);
          for (int64_t ip = p0; ip < p1; ++ip) {
            const T* src = in + ib + ip;
            T* dst = out + ob + ip * pos;
            for (int64_t ik = k0; ik < k1; ++ik) dst[ik] = src[ik * last_stride];
          }
        }
      }
    });
    return;
  }
  const int64_t rows = total / len;
  const int64_t grain = std::max<int64_t>(1, kCopyGrain / len);
  if (n == 2 && last_stride != 1 && len <= 8) {
    // Interleaving a few planes (an image's channels going last): plain loops, no odometer.
    const int64_t row_stride = l.strides[0];
    if constexpr (std::is_same_v<T, uint32_t>) {
      if (len == 3 && row_stride == 1) {
        // Three contiguous planes of 32-bit elements (an RGB float image, a CNN's input going
        // channels-last): the vector interleave, which moves whole vectors where the plain loop
        // moves one element at a time.
        ctx.ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
          Interleave3x32(in + begin, in + last_stride + begin, in + 2 * last_stride + begin,
                         end - begin, out + 3 * begin);
        });
        return;
      }
    }
    ctx.ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* src = in + r * row_stride;
        T* dst = out + r * len;
        for (int64_t i = 0; i < len; ++i) dst[i] = src[i * last_stride];
      }
    });
    return;
  }
  if (n == 3 && last_stride != 1 && len <= 8 && l.strides[1] == 1) {
    // The same per outer index: a few planes of contiguous runs interleaved (a channels-last
    // channel shuffle, each pixel's [g, C/g] channels going [C/g, g]); the odometer would pay
    // its bookkeeping for every `len` elements.
    const int64_t outer = l.dims[0], inner = l.dims[1], outer_stride = l.strides[0];
    ctx.ParallelFor(outer, std::max<int64_t>(1, kCopyGrain / (inner * len)),
                    [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        const T* src = in + o * outer_stride;
        T* dst = out + o * inner * len;
        if (len == 2) {
          for (int64_t i = 0; i < inner; ++i) {
            dst[2 * i] = src[i];
            dst[2 * i + 1] = src[i + last_stride];
          }
          continue;
        }
        for (int64_t i = 0; i < inner; ++i) {
          for (int64_t j = 0; j < len; ++j) dst[i * len + j] = src[i + j * last_stride];
        }
      }
    });
    return;
  }
  ctx.ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    // Odometer over the outer dims, started at `begin`.
    std::vector<int64_t> idx(n, 0);
    int64_t rem = begin, off = 0;
    for (int k = n - 2; k >= 0; --k) {
      idx[k] = rem % l.dims[k];
      rem /= l.dims[k];
      off += idx[k] * l.strides[k];
    }
    for (int64_t r = begin; r < end; ++r) {
      const T* src = in + off;
      T* dst = out + r * len;
      if (last_stride == 1) {
        std::copy_n(src, len, dst);
      } else {
        for (int64_t i = 0; i < len; ++i) dst[i] = src[i * last_stride];
      }
      for (int k = n - 2; k >= 0; --k) {
        off += l.strides[k];
        if (++idx[k] < l.dims[k]) break;
        off -= idx[k] * l.strides[k];
        idx[k] = 0;
      }
    }
  });
}

// Copies `in` (shape in_shape) permuted by perm (output dim k is input dim perm[k]) into out.
absl::Status PermuteInto(const KernelContext& ctx, const Tensor& in, const Shape& in_shape,
                         absl::Span<const int64_t> perm, Tensor& out) {
  std::vector<int64_t> in_strides = Strides(in_shape);
  std::vector<int64_t> dims(perm.size()), strides(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    dims[k] = in_shape[perm[k]];
    strides[k] = in_strides[perm[k]];
  }
  return DispatchByWidth(ctx, in, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    if (in.num_elements() == 0) return absl::OkStatus();
    if constexpr (std::is_same_v<U, std::string>) {
      StridedCopy<std::string>(in.strings(), dims, strides, out.strings(), ctx);
    } else {
      StridedCopy<U>(in.data<U>(), dims, strides, out.data<U>(), ctx);
    }
    return absl::OkStatus();
  });
}

// --- Transpose ------------------------------------------------------------------------------

absl::Status TransposeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const int rank = x.rank();
  std::vector<int64_t> perm = ctx.info().GetInts("perm");
  if (!ctx.info().has_attr("perm")) {
    perm.resize(rank);
    for (int k = 0; k < rank; ++k) perm[k] = rank - 1 - k;
  }
  if (static_cast<int>(perm.size()) != rank) {
    return ctx.Invalid(absl::StrCat("attribute 'perm' [", absl::StrJoin(perm, ","),
                                    "] does not match input rank ", rank));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t& p : perm) {
    if (p < 0) p += rank;
    if (p < 0 || p >= rank || seen[p]) {
      return ctx.Invalid(absl::StrCat("attribute 'perm' [", absl::StrJoin(perm, ","),
                                      "] is not a permutation of ", rank, " dims"));
    }
    seen[p] = true;
  }
  Shape out_shape(rank);
  for (int k = 0; k < rank; ++k) out_shape[k] = x.dim(static_cast<int>(perm[k]));
  // When the dims that are not 1 keep their order, the transpose is a reshape: a view.
  int64_t last = -1;
  bool in_order = true;
  for (int k = 0; k < rank && in_order; ++k) {
    if (out_shape[k] == 1) continue;
    in_order = perm[k] > last;
    last = perm[k];
  }
  if (in_order || x.num_elements() == 0) {
    if (x.num_elements() == 0) {
      absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), out_shape);
      return out.status();
    }
    absl::StatusOr<Tensor> view = x.Reshaped(out_shape);
    if (!view.ok()) return view.status();
    ctx.SetOutput(0, *std::move(view));
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!out.ok()) return out.status();
  return PermuteInto(ctx, x, x.shape(), perm, **out);
}

// --- Concat ---------------------------------------------------------------------------------

// Copies `rows` rows of `len` elements from src (row pitch src_pitch) to dst (dst_pitch).
template <typename T>
void CopyRows(const T* src, int64_t src_pitch, T* dst, int64_t dst_pitch, int64_t rows,
              int64_t len, const KernelContext& ctx) {
  if (rows <= 0 || len <= 0) return;
  if (src_pitch == len && dst_pitch == len) {
    ctx.ParallelFor(rows * len, kCopyGrain, [&](int64_t begin, int64_t end) {
      std::copy(src + begin, src + end, dst + begin);
    });
    return;
  }
  ctx.ParallelFor(rows, std::max<int64_t>(1, kCopyGrain / len), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) std::copy_n(src + r * src_pitch, len, dst + r * dst_pitch);
  });
}

absl::Status ConcatKernel(KernelContext& ctx) {
  std::vector<const Tensor*> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor* t = ctx.input(i);
    if (t == nullptr) return ctx.Invalid(absl::StrCat("input ", i, " is omitted"));
    inputs.push_back(t);
  }
  if (inputs.empty()) return ctx.Invalid("needs at least one input");
  // The reference shape: the first input that is not an empty 1-D tensor (those are skipped,
  // as exporters concatenate them into shape vectors of any rank).
  const Tensor* ref = inputs[0];
  for (const Tensor* t : inputs) {
    if (!(t->rank() == 1 && t->num_elements() == 0)) {
      ref = t;
      break;
    }
  }
  const int rank = ref->rank();
  if (rank == 0) return ctx.Invalid("inputs must have rank >= 1, got a scalar");
  const int64_t default_axis = ctx.info().opset() > 0 && ctx.info().opset() < 4 ? 1 : 0;
  if (!ctx.info().has_attr("axis") && ctx.info().opset() >= 4) {
    return ctx.Invalid("attribute 'axis' is required");
  }
  absl::StatusOr<int> axis_or =
      NormalizeAxis(ctx.info().GetInt("axis", default_axis), rank, ctx.info());
  if (!axis_or.ok()) return axis_or.status();
  const int axis = *axis_or;
  Shape out_shape = ref->shape();
  out_shape[axis] = 0;
  std::vector<const Tensor*> used;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* t = inputs[i];
    if (t->dtype() != ref->dtype()) {
      return ctx.Invalid(absl::StrCat("input ", i, " is ", t->DebugString(), " but another is ",
                                      ref->DebugString()));
    }
    if (t != ref && t->rank() == 1 && t->num_elements() == 0 && rank != 1) continue;
    bool ok = t->rank() == rank;
    for (int k = 0; ok && k < rank; ++k) ok = k == axis || t->dim(k) == ref->dim(k);
    if (!ok) {
      return ctx.Invalid(absl::StrCat("input ", i, " ", t->DebugString(), " does not match ",
                                      ref->DebugString(), " outside axis ", axis));
    }
    out_shape[axis] += t->dim(axis);
    used.push_back(t);
  }
  absl::StatusOr<Tensor*> out_or = ctx.AllocateOutput(0, ref->dtype(), out_shape);
  if (!out_or.ok()) return out_or.status();
  Tensor& out = **out_or;
  if (out.num_elements() == 0) return absl::OkStatus();
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= out_shape[k];
  for (int k = axis + 1; k < rank; ++k) inner *= out_shape[k];
  const int64_t out_pitch = out_shape[axis] * inner;
  return DispatchByWidth(ctx, out, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    U* dst = TypedData<U>(out);
    int64_t col = 0;
    for (const Tensor* t : used) {
      const int64_t len = t->dim(axis) * inner;
      if (len > 0) CopyRows<U>(TypedData<U>(*t), len, dst + col, out_pitch, outer, len, ctx);
      col += len;
    }
    return absl::OkStatus();
  });
}

// --- Split ----------------------------------------------------------------------------------

absl::Status SplitKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const KernelInfo& info = ctx.info();
  const int64_t opset = info.opset();
  absl::StatusOr<int> axis_or = NormalizeAxis(info.GetInt("axis", 0), x.rank(), info);
  if (!axis_or.ok()) return axis_or.status();
  const int axis = *axis_or;
  if (x.rank() == 0) return ctx.Invalid("input 0 must have rank >= 1, got a scalar");
  const int64_t dim = x.dim(axis);
  const int n = ctx.num_outputs();
  std::vector<int64_t> split;
  if (opset > 0 && opset < 13) {
    split = info.GetInts("split");
    if (split.empty() && ctx.input(1) != nullptr) {  // Split-1 took it as an optional input
      absl::StatusOr<std::vector<int64_t>> s = InputInts(ctx, 1);
      if (!s.ok()) return s.status();
      split = *std::move(s);
    }
  } else if (ctx.input(1) != nullptr) {
    absl::StatusOr<std::vector<int64_t>> s = InputInts(ctx, 1);
    if (!s.ok()) return s.status();
    split = *std::move(s);
  }
  if (split.empty()) {
    if (info.has_attr("num_outputs")) {
      const int64_t k = info.GetInt("num_outputs", n);
      if (k != n || k < 1) {
        return ctx.Invalid(absl::StrCat("attribute 'num_outputs' (", k, ") does not match the ",
                                        n, " outputs of the node"));
      }
      const int64_t chunk = (dim + k - 1) / k;
      for (int i = 0; i < n; ++i) {
        split.push_back(std::max<int64_t>(0, std::min(chunk, dim - chunk * i)));
      }
    } else {
      if (n < 1 || dim % n != 0) {
        return ctx.Invalid(absl::StrCat("dim ", axis, " (", dim, ") of input 0 ",
                                        x.DebugString(), " does not split evenly into ", n,
                                        " outputs"));
      }
      split.assign(n, dim / n);
    }
  }
  int64_t sum = 0;
  for (int64_t s : split) {
    if (s < 0 || s > dim) {
      return ctx.Invalid(absl::StrCat("split size ", s, " is outside [0, ", dim, "]"));
    }
    sum += s;
  }
  if (static_cast<int>(split.size()) != n || sum != dim) {
    return ctx.Invalid(absl::StrCat("split [", absl::StrJoin(split, ","), "] does not divide dim ",
                                    axis, " (", dim, ") of ", x.DebugString(), " into ", n,
                                    " outputs"));
  }
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis; ++k) outer *= x.dim(k);
  for (int k = axis + 1; k < x.rank(); ++k) inner *= x.dim(k);
  const int64_t in_pitch = dim * inner;
  return DispatchByWidth(ctx, x, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    int64_t col = 0;
    for (int i = 0; i < n; ++i) {
      Shape shape = x.shape();
      shape[axis] = split[i];
      const int64_t len = split[i] * inner;
      if (!ctx.output_wanted(i)) {
        col += len;
        continue;
      }
      absl::StatusOr<Tensor*> out = ctx.AllocateOutput(i, x.dtype(), shape);
      if (!out.ok()) return out.status();
      if (len > 0 && outer > 0) {
        CopyRows<U>(TypedData<U>(x) + col, in_pitch, TypedData<U>(**out), len, outer, len,
                    ctx);
      }
      col += len;
    }
    return absl::OkStatus();
  });
}

// --- Slice ----------------------------------------------------------------------------------

absl::Status SliceKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const KernelInfo& info = ctx.info();
  const int rank = x.rank();
  std::vector<int64_t> starts, ends, axes, steps;
  if (info.opset() > 0 && info.opset() < 10) {
    absl::StatusOr<std::vector<int64_t>> s = info.RequireInts("starts");
    if (!s.ok()) return s.status();
    absl::StatusOr<std::vector<int64_t>> e = info.RequireInts("ends");
    if (!e.ok()) return e.status();
    starts = *std::move(s);
    ends = *std::move(e);
    axes = info.GetInts("axes");
  } else {
    absl::StatusOr<std::vector<int64_t>> s = InputInts(ctx, 1);
    if (!s.ok()) return s.status();
    absl::StatusOr<std::vector<int64_t>> e = InputInts(ctx, 2);
    if (!e.ok()) return e.status();
    starts = *std::move(s);
    ends = *std::move(e);
    if (ctx.input(3) != nullptr) {
      absl::StatusOr<std::vector<int64_t>> a = InputInts(ctx, 3);
      if (!a.ok()) return a.status();
      axes = *std::move(a);
    }
    if (ctx.input(4) != nullptr) {
      absl::StatusOr<std::vector<int64_t>> st = InputInts(ctx, 4);
      if (!st.ok()) return st.status();
      steps = *std::move(st);
    }
  }
  const size_t n = starts.size();
  if (ends.size() != n) {
    return ctx.Invalid(absl::StrCat("starts has ", n, " values but ends has ", ends.size()));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < n; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(n, 1);
  if (axes.size() != n || steps.size() != n) {
    return ctx.Invalid(absl::StrCat("starts, ends, axes and steps differ in length (", n, ", ",
                                    ends.size(), ", ", axes.size(), ", ", steps.size(), ")"));
  }
  std::vector<int64_t> first(rank, 0), step(rank, 1);
  Shape out_shape = x.shape();
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < n; ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank) {
      return ctx.Invalid(absl::StrCat("axes value ", a, " is out of range for rank ", rank));
    }
    if (a < 0) a += rank;
    if (seen[a]) return ctx.Invalid(absl::StrCat("axis ", a, " is repeated in axes"));
    seen[a] = true;
    const int64_t d = x.dim(static_cast<int>(a));
    const int64_t st = steps[i];
    if (st == 0) return ctx.Invalid(absl::StrCat("steps value for axis ", a, " is 0"));
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += d;
    if (e < 0) e += d;
    int64_t count;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      count = e > s ? (e - s - 1) / st + 1 : 0;
    } else if (d == 0) {
      count = 0;  // [0, d - 1] is empty: nothing to clamp into
    } else {
      s = std::clamp<int64_t>(s, 0, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      // -st overflows for the lowest int64; any step beyond the dim takes one element.
      const int64_t back = st < -d ? d : -st;
      count = s > e ? (s - e - 1) / back + 1 : 0;
    }
    first[a] = count > 0 ? s : 0;
    // A step that takes at most one element is not used (and times the stride could overflow).
    step[a] = count > 1 ? st : 1;
    out_shape[a] = count;
  }
  absl::StatusOr<Tensor*> out_or = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!out_or.ok()) return out_or.status();
  Tensor& out = **out_or;
  if (out.num_elements() == 0) return absl::OkStatus();
  std::vector<int64_t> in_strides = Strides(x.shape());
  int64_t base = 0;
  std::vector<int64_t> strides(rank), dims(out_shape.begin(), out_shape.end());
  for (int k = 0; k < rank; ++k) {
    base += first[k] * in_strides[k];
    strides[k] = in_strides[k] * step[k];
  }
  return DispatchByWidth(ctx, x, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    StridedCopy<U>(TypedData<U>(x) + base, dims, strides, TypedData<U>(out), ctx);
    return absl::OkStatus();
  });
}

// --- DepthToSpace / SpaceToDepth ------------------------------------------------------------

absl::Status DepthSpaceKernel(KernelContext& ctx, bool to_space) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  absl::StatusOr<int64_t> b_or = ctx.info().RequireInt("blocksize");
  if (!b_or.ok()) return b_or.status();
  const int64_t b = *b_or;
  if (b < 1 || b > (int64_t{1} << 20)) {
    return ctx.Invalid(absl::StrCat("attribute 'blocksize' is ", b));
  }
  if (x.rank() != 4) {
    return ctx.Invalid(absl::StrCat("input must be [N, C, H, W], got ", x.DebugString()));
  }
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  Shape six, out_shape;
  std::vector<int64_t> perm;
  if (to_space) {
    if (C % (b * b) != 0) {
      return ctx.Invalid(absl::StrCat("channels of ", x.DebugString(),
                                      " are not a multiple of blocksize^2 = ", b * b));
    }
    const int64_t c = C / (b * b);
    const std::string mode = ctx.info().GetString("mode", "DCR");
    if (mode == "DCR") {
      six = {N, b, b, c, H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      six = {N, c, b, b, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      return ctx.Invalid(absl::StrCat("attribute 'mode' is '", mode, "' (DCR or CRD)"));
    }
    out_shape = {N, c, H * b, W * b};
  } else {
    if (H % b != 0 || W % b != 0) {
      return ctx.Invalid(absl::StrCat("height and width of ", x.DebugString(),
                                      " are not multiples of blocksize ", b));
    }
    six = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out_shape = {N, C * b * b, H / b, W / b};
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!out.ok()) return out.status();
  return PermuteInto(ctx, x, six, perm, **out);
}

absl::Status DepthToSpaceKernel(KernelContext& ctx) { return DepthSpaceKernel(ctx, true); }
absl::Status SpaceToDepthKernel(KernelContext& ctx) { return DepthSpaceKernel(ctx, false); }

// --- ReverseSequence ------------------------------------------------------------------------

absl::Status ReverseSequenceKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  absl::StatusOr<std::vector<int64_t>> lens = InputInts(ctx, 1);
  if (!lens.ok()) return lens.status();
  const int64_t time_axis = ctx.info().GetInt("time_axis", 0);
  const int64_t batch_axis = ctx.info().GetInt("batch_axis", 1);
  if (!((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0))) {
    return ctx.Invalid(absl::StrCat("attributes 'time_axis' (", time_axis, ") and 'batch_axis' (",
                                    batch_axis, ") must be 0 and 1 in some order"));
  }
  if (x.rank() < 2) {
    return ctx.Invalid(absl::StrCat("input must have rank >= 2, got ", x.DebugString()));
  }
  const int64_t T = x.dim(static_cast<int>(time_axis)), B = x.dim(static_cast<int>(batch_axis));
  if (static_cast<int64_t>(lens->size()) != B) {
    return ctx.Invalid(absl::StrCat("sequence_lens has ", lens->size(), " values for batch ", B));
  }
  for (int64_t len : *lens) {
    if (len < 0 || len > T) {
      return ctx.Invalid(absl::StrCat("sequence length ", len, " is outside [0, ", T, "]"));
    }
  }
  int64_t inner = 1;
  for (int k = 2; k < x.rank(); ++k) inner *= x.dim(k);
  absl::StatusOr<Tensor*> out_or = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!out_or.ok()) return out_or.status();
  Tensor& out = **out_or;
  if (out.num_elements() == 0) return absl::OkStatus();
  return DispatchByWidth(ctx, x, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    const U* src = TypedData<U>(x);
    U* dst = TypedData<U>(out);
    ctx.ParallelFor(B, 1, [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t len = (*lens)[b];
        for (int64_t t = 0; t < T; ++t) {
          const int64_t from = t < len ? len - 1 - t : t;
          auto offset = [&](int64_t tt) {
            return (time_axis == 0 ? tt * B + b : b * T + tt) * inner;
          };
          std::copy_n(src + offset(from), inner, dst + offset(t));
        }
      }
    });
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status RegisterTensorLayoutKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Transpose", TransposeKernel));
  s.Update(registry.Register("Concat", ConcatKernel));
  s.Update(registry.Register("Split", SplitKernel));
  s.Update(registry.Register("Slice", SliceKernel));
  s.Update(registry.Register("DepthToSpace", DepthToSpaceKernel));
  s.Update(registry.Register("SpaceToDepth", SpaceToDepthKernel));
  s.Update(registry.Register("ReverseSequence", ReverseSequenceKernel));
  s.Update(RegisterTensorLayoutResizeKernels(registry));
  return s;
}

}  // namespace graphopt::runtime
