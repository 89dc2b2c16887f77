// Tensor-family kernels, part "index" (see RegisterTensorKernels in tensor.cc): the ops that
// address elements through index tensors or select them by value: Gather, GatherElements,
// GatherND, Scatter, ScatterElements, ScatterND, Compress, NonZero, TopK and Unique.
//
// Every index is checked against the dim it addresses before any element moves: an index out
// of range is INVALID_ARGUMENT naming the node, the input and the offending value, never a
// read or write outside a buffer. Negative indices count from the end, as ONNX says.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/tensor_util.h"

namespace graphopt::runtime {
namespace {

// Elements per parallel chunk for copies.
constexpr int64_t kGrain = 1 << 14;

int64_t Product(const Shape& shape, int begin, int end) {
  int64_t n = 1;
  for (int k = begin; k < end; ++k) n *= shape[k];
  return n;
}

// An index tensor (int32 or int64) read as int64, normalised against `dim` and range-checked.
// `what` names the input in errors ("input 1 (indices)").
absl::StatusOr<std::vector<int64_t>> ReadIndices(const KernelContext& ctx, const Tensor& t,
                                                 absl::string_view what) {
  if (t.dtype() != v1::DT_INT64 && t.dtype() != v1::DT_INT32) {
    return ctx.Invalid(absl::StrCat(what, " must be int32 or int64, got ",
                                    DataTypeName(t.dtype())));
  }
  std::vector<int64_t> v(t.num_elements());
  if (t.dtype() == v1::DT_INT64) {
    std::copy_n(t.data<int64_t>(), v.size(), v.begin());
  } else {
    std::copy_n(t.data<int32_t>(), v.size(), v.begin());
  }
  return v;
}

// `index` normalised into [0, dim); INVALID_ARGUMENT naming the input and the position.
absl::Status NormalizeIndex(const KernelContext& ctx, int64_t& index, int64_t dim,
                            absl::string_view what, int64_t position) {
  const int64_t original = index;
  if (index < 0) index += dim;
  if (index < 0 || index >= dim) {
    return ctx.Invalid(absl::StrCat(what, " element ", position, " is ", original,
                                    ", out of range for a dim of size ", dim));
  }
  return absl::OkStatus();
}

// Row-major multi-index counter over `dims`.
class IndexCounter {
 public:
  explicit IndexCounter(const Shape& dims) : dims_(dims), index_(dims.size(), 0) {}
  const std::vector<int64_t>& index() const { return index_; }
  void Next() {
    for (int k = static_cast<int>(dims_.size()) - 1; k >= 0; --k) {
      if (++index_[k] < dims_[k]) return;
      index_[k] = 0;
    }
  }

 private:
  const Shape& dims_;
  std::vector<int64_t> index_;
};

// --- Gather ---------------------------------------------------------------------------------

absl::Status GatherKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> dt = RequireInput(ctx, 0);
  if (!dt.ok()) return dt.status();
  absl::StatusOr<const Tensor*> it = RequireInput(ctx, 1);
  if (!it.ok()) return it.status();
  const Tensor& data = **dt;
  const Tensor& indices = **it;
  if (data.rank() == 0) return ctx.Invalid("input 0 (data) must have rank >= 1");
  absl::StatusOr<int> axis = NormalizeAxis(ctx.info().GetInt("axis", 0), data.rank(), ctx.info());
  if (!axis.ok()) return axis.status();
  absl::StatusOr<std::vector<int64_t>> idx = ReadIndices(ctx, indices, "input 1 (indices)");
  if (!idx.ok()) return idx.status();
  const int64_t axis_dim = data.dim(*axis);
  for (size_t i = 0; i < idx->size(); ++i) {
    absl::Status s = NormalizeIndex(ctx, (*idx)[i], axis_dim, "input 1 (indices)", i);
    if (!s.ok()) return s;
  }
  Shape out_shape(data.shape().begin(), data.shape().begin() + *axis);
  out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
  out_shape.insert(out_shape.end(), data.shape().begin() + *axis + 1, data.shape().end());
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, data.dtype(), out_shape);
  if (!out.ok()) return out.status();
  const int64_t outer = Product(data.shape(), 0, *axis);
  const int64_t inner = Product(data.shape(), *axis + 1, data.rank());
  const int64_t n_idx = static_cast<int64_t>(idx->size());
  if ((*out)->num_elements() == 0) return absl::OkStatus();
  return DispatchByWidth(ctx, data, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    const U* src = TypedData<U>(data);
    U* dst = TypedData<U>(**out);
    // One row = `inner` contiguous elements; rows are (outer, index) pairs.
    const int64_t rows = outer * n_idx;
    ctx.ParallelFor(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(inner, 1)),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t r = begin; r < end; ++r) {
                        const int64_t o = r / n_idx, j = r % n_idx;
                        std::copy_n(src + (o * axis_dim + (*idx)[j]) * inner, inner,
                                    dst + r * inner);
                      }
                    });
    return absl::OkStatus();
  });
}

// --- GatherElements -------------------------------------------------------------------------

absl::Status GatherElementsKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> dt = RequireInput(ctx, 0);
  if (!dt.ok()) return dt.status();
  absl::StatusOr<const Tensor*> it = RequireInput(ctx, 1);
  if (!it.ok()) return it.status();
  const Tensor& data = **dt;
  const Tensor& indices = **it;
  const int rank = data.rank();
  if (rank == 0) return ctx.Invalid("input 0 (data) must have rank >= 1");
  if (indices.rank() != rank) {
    return ctx.Invalid(absl::StrCat("input 1 (indices) has rank ", indices.rank(),
                                    ", data has rank ", rank, ": they must be equal"));
  }
  absl::StatusOr<int> axis = NormalizeAxis(ctx.info().GetInt("axis", 0), rank, ctx.info());
  if (!axis.ok()) return axis.status();
  for (int k = 0; k < rank; ++k) {
    if (k != *axis && indices.dim(k) > data.dim(k)) {
      return ctx.Invalid(absl::StrCat("input 1 (indices) ", ShapeString(indices.shape()),
                                      " exceeds data ", ShapeString(data.shape()), " in dim ", k));
    }
  }
  absl::StatusOr<std::vector<int64_t>> idx = ReadIndices(ctx, indices, "input 1 (indices)");
  if (!idx.ok()) return idx.status();
  for (size_t i = 0; i < idx->size(); ++i) {
    absl::Status s = NormalizeIndex(ctx, (*idx)[i], data.dim(*axis), "input 1 (indices)", i);
    if (!s.ok()) return s;
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, data.dtype(), indices.shape());
  if (!out.ok()) return out.status();
  const std::vector<int64_t> strides = Strides(data.shape());
  return DispatchByWidth(ctx, data, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    const U* src = TypedData<U>(data);
    U* dst = TypedData<U>(**out);
    IndexCounter counter(indices.shape());
    for (size_t i = 0; i < idx->size(); ++i, counter.Next()) {
      int64_t off = 0;
      for (int k = 0; k < rank; ++k) {
        off += (k == *axis ? (*idx)[i] : counter.index()[k]) * strides[k];
      }
      dst[i] = src[off];
    }
    return absl::OkStatus();
  });
}

// --- GatherND -------------------------------------------------------------------------------

absl::Status GatherNdKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> dt = RequireInput(ctx, 0);
  if (!dt.ok()) return dt.status();
  absl::StatusOr<const Tensor*> it = RequireInput(ctx, 1);
  if (!it.ok()) return it.status();
  const Tensor& data = **dt;
  const Tensor& indices = **it;
  const int64_t b = ctx.info().GetInt("batch_dims", 0);
  if (indices.rank() < 1) return ctx.Invalid("input 1 (indices) must have rank >= 1");
  if (b < 0 || b >= std::min(data.rank(), indices.rank())) {
    return ctx.Invalid(absl::StrCat("attribute 'batch_dims' ", b,
                                    " must be below the ranks of data and indices"));
  }
  for (int k = 0; k < b; ++k) {
    if (data.dim(k) != indices.dim(k)) {
      return ctx.Invalid(absl::StrCat("batch dim ", k, " differs: data ",
                                      ShapeString(data.shape()), ", indices ",
                                      ShapeString(indices.shape())));
    }
  }
  const int64_t depth = indices.dim(indices.rank() - 1);
  if (depth < 1 || depth > data.rank() - b) {
    return ctx.Invalid(absl::StrCat("the last dim of input 1 (indices) is ", depth,
                                    ", must be in [1, ", data.rank() - b, "]"));
  }
  absl::StatusOr<std::vector<int64_t>> idx = ReadIndices(ctx, indices, "input 1 (indices)");
  if (!idx.ok()) return idx.status();
  for (size_t i = 0; i < idx->size(); ++i) {
    const int64_t dim = data.dim(static_cast<int>(b + static_cast<int64_t>(i) % depth));
    absl::Status s = NormalizeIndex(ctx, (*idx)[i], dim, "input 1 (indices)", i);
    if (!s.ok()) return s;
  }
  Shape out_shape(indices.shape().begin(), indices.shape().end() - 1);
  out_shape.insert(out_shape.end(), data.shape().begin() + b + depth, data.shape().end());
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, data.dtype(), out_shape);
  if (!out.ok()) return out.status();
  const std::vector<int64_t> strides = Strides(data.shape());
  const int64_t slice = Product(data.shape(), static_cast<int>(b + depth), data.rank());
  const int64_t batches = Product(data.shape(), 0, static_cast<int>(b));
  const int64_t batch_stride = Product(data.shape(), static_cast<int>(b), data.rank());
  const int64_t tuples = static_cast<int64_t>(idx->size()) / depth;
  const int64_t per_batch = batches > 0 ? tuples / batches : 0;
  return DispatchByWidth(ctx, data, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    const U* src = TypedData<U>(data);
    U* dst = TypedData<U>(**out);
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = per_batch > 0 ? (t / per_batch) * batch_stride : 0;
      for (int64_t k = 0; k < depth; ++k) off += (*idx)[t * depth + k] * strides[b + k];
      std::copy_n(src + off, slice, dst + t * slice);
    }
    return absl::OkStatus();
  });
}

// --- ScatterElements / Scatter / ScatterND --------------------------------------------------

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

absl::StatusOr<Reduction> ParseReduction(const KernelContext& ctx) {
  const std::string r = ctx.info().GetString("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return ctx.Invalid(absl::StrCat("attribute 'reduction' is '", r,
                                  "': expected none, add, mul, max or min"));
}

// dst = reduce(dst, v) for one element.
template <typename T>
void Apply(Reduction r, T& dst, const T& v) {
  if constexpr (std::is_same_v<T, std::string>) {
    dst = v;  // strings only scatter with reduction none (checked before)
  } else if constexpr (std::is_same_v<T, bool>) {
    switch (r) {
      case Reduction::kNone: dst = v; break;
      case Reduction::kAdd: case Reduction::kMax: dst = dst || v; break;
      case Reduction::kMul: case Reduction::kMin: dst = dst && v; break;
    }
  } else {
    const auto a = ToCompute(dst);
    const auto b = ToCompute(v);
    switch (r) {
      case Reduction::kNone: dst = v; break;
      // Integer sums and products wrap around (two's complement), as numpy's add.at does.
      case Reduction::kAdd: dst = FromCompute<T>(WrapAdd(a, b)); break;
      case Reduction::kMul: dst = FromCompute<T>(WrapMul(a, b)); break;
      case Reduction::kMax: dst = FromCompute<T>(std::max(a, b)); break;
      case Reduction::kMin: dst = FromCompute<T>(std::min(a, b)); break;
    }
  }
}

// Calls f(TypeTag<T>) with the element type of `t` (every dtype, strings included).
template <typename F>
absl::Status DispatchTyped(const KernelContext& ctx, const Tensor& t, F&& f) {
  absl::Status s = DispatchAll(t.dtype(), std::forward<F>(f));
  if (s.code() == absl::StatusCode::kUnimplemented) return ctx.info().Unimplemented(s.message());
  return s;
}

// A copy of input 0 into output 0, which the scatter kernels then update in place.
absl::StatusOr<Tensor*> CopyToOutput(KernelContext& ctx, const Tensor& data) {
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, data.dtype(), data.shape());
  if (!out.ok()) return out.status();
  absl::Status s = DispatchByWidth(ctx, data, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    std::copy_n(TypedData<U>(data), data.num_elements(), TypedData<U>(**out));
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::Status ScatterElementsKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> dt = RequireInput(ctx, 0);
  if (!dt.ok()) return dt.status();
  absl::StatusOr<const Tensor*> it = RequireInput(ctx, 1);
  if (!it.ok()) return it.status();
  absl::StatusOr<const Tensor*> ut = RequireInput(ctx, 2);
  if (!ut.ok()) return ut.status();
  const Tensor& data = **dt;
  const Tensor& indices = **it;
  const Tensor& updates = **ut;
  const int rank = data.rank();
  if (rank == 0) return ctx.Invalid("input 0 (data) must have rank >= 1");
  if (indices.shape() != updates.shape()) {
    return ctx.Invalid(absl::StrCat("input 1 (indices) ", ShapeString(indices.shape()),
                                    " and input 2 (updates) ", ShapeString(updates.shape()),
                                    " must have the same shape"));
  }
  if (updates.dtype() != data.dtype()) {
    return ctx.Invalid(absl::StrCat("input 2 (updates) is ", DataTypeName(updates.dtype()),
                                    ", data is ", DataTypeName(data.dtype())));
  }
  if (indices.rank() != rank) {
    return ctx.Invalid(absl::StrCat("input 1 (indices) has rank ", indices.rank(),
                                    ", data has rank ", rank, ": they must be equal"));
  }
  absl::StatusOr<int> axis = NormalizeAxis(ctx.info().GetInt("axis", 0), rank, ctx.info());
  if (!axis.ok()) return axis.status();
  for (int k = 0; k < rank; ++k) {
    if (k != *axis && indices.dim(k) > data.dim(k)) {
      return ctx.Invalid(absl::StrCat("input 1 (indices) ", ShapeString(indices.shape()),
                                      " exceeds data ", ShapeString(data.shape()), " in dim ", k));
    }
  }
  absl::StatusOr<Reduction> reduction = ParseReduction(ctx);
  if (!reduction.ok()) return reduction.status();
  if (data.dtype() == v1::DT_STRING && *reduction != Reduction::kNone) {
    return ctx.Invalid("string tensors scatter only with reduction 'none'");
  }
  absl::StatusOr<std::vector<int64_t>> idx = ReadIndices(ctx, indices, "input 1 (indices)");
  if (!idx.ok()) return idx.status();
  for (size_t i = 0; i < idx->size(); ++i) {
    absl::Status s = NormalizeIndex(ctx, (*idx)[i], data.dim(*axis), "input 1 (indices)", i);
    if (!s.ok()) return s;
  }
  absl::StatusOr<Tensor*> out = CopyToOutput(ctx, data);
  if (!out.ok()) return out.status();
  const std::vector<int64_t> strides = Strides(data.shape());
  return DispatchTyped(ctx, data, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T* dst = TypedData<T>(**out);
    const T* upd = TypedData<T>(updates);
    IndexCounter counter(indices.shape());
    // Serial and in index order: duplicate indices resolve as the specification's loop does.
    for (size_t i = 0; i < idx->size(); ++i, counter.Next()) {
      int64_t off = 0;
      for (int k = 0; k < rank; ++k) {
        off += (k == *axis ? (*idx)[i] : counter.index()[k]) * strides[k];
      }
      Apply(*reduction, dst[off], upd[i]);
    }
    return absl::OkStatus();
  });
}

absl::Status ScatterNdKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> dt = RequireInput(ctx, 0);
  if (!dt.ok()) return dt.status();
  absl::StatusOr<const Tensor*> it = RequireInput(ctx, 1);
  if (!it.ok()) return it.status();
  absl::StatusOr<const Tensor*> ut = RequireInput(ctx, 2);
  if (!ut.ok()) return ut.status();
  const Tensor& data = **dt;
  const Tensor& indices = **it;
  const Tensor& updates = **ut;
  if (indices.rank() < 1) return ctx.Invalid("input 1 (indices) must have rank >= 1");
  if (updates.dtype() != data.dtype()) {
    return ctx.Invalid(absl::StrCat("input 2 (updates) is ", DataTypeName(updates.dtype()),
                                    ", data is ", DataTypeName(data.dtype())));
  }
  const int64_t depth = indices.dim(indices.rank() - 1);
  if (depth < 1 || depth > data.rank()) {
    return ctx.Invalid(absl::StrCat("the last dim of input 1 (indices) is ", depth,
                                    ", must be in [1, ", data.rank(), "]"));
  }
  Shape want(indices.shape().begin(), indices.shape().end() - 1);
  want.insert(want.end(), data.shape().begin() + depth, data.shape().end());
  if (updates.shape() != want) {
    return ctx.Invalid(absl::StrCat("input 2 (updates) is ", ShapeString(updates.shape()),
                                    ", expected ", ShapeString(want)));
  }
  absl::StatusOr<Reduction> reduction = ParseReduction(ctx);
  if (!reduction.ok()) return reduction.status();
  if (data.dtype() == v1::DT_STRING && *reduction != Reduction::kNone) {
    return ctx.Invalid("string tensors scatter only with reduction 'none'");
  }
  absl::StatusOr<std::vector<int64_t>> idx = ReadIndices(ctx, indices, "input 1 (indices)");
  if (!idx.ok()) return idx.status();
  for (size_t i = 0; i < idx->size(); ++i) {
    const int64_t dim = data.dim(static_cast<int>(static_cast<int64_t>(i) % depth));
    absl::Status s = NormalizeIndex(ctx, (*idx)[i], dim, "input 1 (indices)", i);
    if (!s.ok()) return s;
  }
  absl::StatusOr<Tensor*> out = CopyToOutput(ctx, data);
  if (!out.ok()) return out.status();
  const std::vector<int64_t> strides = Strides(data.shape());
  const int64_t slice = Product(data.shape(), static_cast<int>(depth), data.rank());
  const int64_t tuples = static_cast<int64_t>(idx->size()) / depth;
  return DispatchTyped(ctx, data, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    T* dst = TypedData<T>(**out);
    const T* upd = TypedData<T>(updates);
    for (int64_t t = 0; t < tuples; ++t) {
      int64_t off = 0;
      for (int64_t k = 0; k < depth; ++k) off += (*idx)[t * depth + k] * strides[k];
      for (int64_t e = 0; e < slice; ++e) Apply(*reduction, dst[off + e], upd[t * slice + e]);
    }
    return absl::OkStatus();
  });
}

// --- Compress -------------------------------------------------------------------------------

absl::Status CompressKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  absl::StatusOr<const Tensor*> ct = RequireInput(ctx, 1);
  if (!ct.ok()) return ct.status();
  const Tensor& x = **xt;
  const Tensor& cond = **ct;
  if (cond.dtype() != v1::DT_BOOL || cond.rank() != 1) {
    return ctx.Invalid(absl::StrCat("input 1 (condition) must be a 1-D bool tensor, got ",
                                    cond.DebugString()));
  }
  // Without 'axis' the input is flattened first.
  Shape shape = x.shape();
  int axis = 0;
  if (ctx.info().has_attr("axis")) {
    if (x.rank() == 0) return ctx.Invalid("input 0 must have rank >= 1 with 'axis'");
    absl::StatusOr<int> a = NormalizeAxis(ctx.info().GetInt("axis", 0), x.rank(), ctx.info());
    if (!a.ok()) return a.status();
    axis = *a;
  } else {
    shape = Shape{x.num_elements()};
  }
  const int64_t dim = shape[axis];
  if (cond.num_elements() > dim) {
    return ctx.Invalid(absl::StrCat("input 1 (condition) has ", cond.num_elements(),
                                    " entries, more than the ", dim, " slices along the axis"));
  }
  std::vector<int64_t> kept;
  const bool* c = cond.data<bool>();
  for (int64_t i = 0; i < cond.num_elements(); ++i) {
    if (c[i]) kept.push_back(i);
  }
  Shape out_shape = shape;
  out_shape[axis] = static_cast<int64_t>(kept.size());
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!out.ok()) return out.status();
  const int64_t outer = Product(shape, 0, axis);
  const int64_t inner = Product(shape, axis + 1, static_cast<int>(shape.size()));
  return DispatchByWidth(ctx, x, [&](auto tag) -> absl::Status {
    using U = typename decltype(tag)::type;
    const U* src = TypedData<U>(x);
    U* dst = TypedData<U>(**out);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t k : kept) {
        dst = std::copy_n(src + (o * dim + k) * inner, inner, dst);
      }
    }
    return absl::OkStatus();
  });
}

// --- NonZero --------------------------------------------------------------------------------

absl::Status NonZeroKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  std::vector<int64_t> positions;
  MemoryReservation positions_charge;
  absl::Status s = DispatchTyped(ctx, x, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, std::string>) {
      return ctx.info().Unimplemented("string input is not supported");
    } else {
      const T* p = x.data<T>();
      const int64_t n = x.num_elements();
      // Counted first, so that the positions (8 bytes each) are charged before they exist.
      int64_t count = 0;
      for (int64_t i = 0; i < n; ++i) {
        if ((i & 0xfffff) == 0 && ctx.ShouldStop()) return absl::OkStatus();
        count += ToCompute(p[i]) != ComputeType<T>(0);
      }
      absl::StatusOr<MemoryReservation> charge =
          ctx.ReserveScratch(count * static_cast<int64_t>(sizeof(int64_t)), "positions");
      if (!charge.ok()) return charge.status();
      positions_charge = *std::move(charge);
      positions.reserve(static_cast<size_t>(count));
      for (int64_t i = 0; i < n; ++i) {
        if ((i & 0xfffff) == 0 && ctx.ShouldStop()) return absl::OkStatus();
        if (ToCompute(p[i]) != ComputeType<T>(0)) positions.push_back(i);
      }
      return absl::OkStatus();
    }
  });
  if (!s.ok()) return s;
  if (ctx.ShouldStop()) return absl::OkStatus();  // the executor returns the token's status
  // A scalar counts as rank 1 of size 1, as numpy's nonzero (and ONNX Runtime) treat it.
  const Shape dims = x.rank() == 0 ? Shape{1} : x.shape();
  const int rank = static_cast<int>(dims.size());
  const int64_t n = static_cast<int64_t>(positions.size());
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_INT64, Shape{rank, n});
  if (!out.ok()) return out.status();
  int64_t* o = (*out)->data<int64_t>();
  const std::vector<int64_t> strides = Strides(dims);
  for (int64_t j = 0; j < n; ++j) {
    int64_t rest = positions[j];
    for (int k = 0; k < rank; ++k) {
      o[k * n + j] = rest / strides[k];
      rest %= strides[k];
    }
  }
  return absl::OkStatus();
}

// --- TopK -----------------------------------------------------------------------------------

absl::Status TopKKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  if (x.rank() == 0) return ctx.Invalid("input 0 must have rank >= 1");
  int64_t k = 0;
  if (ctx.info().opset() != 0 && ctx.info().opset() < 10) {
    absl::StatusOr<int64_t> attr = ctx.info().RequireInt("k");
    if (!attr.ok()) return attr.status();
    k = *attr;
  } else {
    absl::StatusOr<std::vector<int64_t>> kv = InputInts(ctx, 1);
    if (!kv.ok()) return kv.status();
    if (kv->size() != 1) {
      return ctx.Invalid(absl::StrCat("input 1 (K) must hold one value, holds ", kv->size()));
    }
    k = (*kv)[0];
  }
  absl::StatusOr<int> axis = NormalizeAxis(ctx.info().GetInt("axis", -1), x.rank(), ctx.info());
  if (!axis.ok()) return axis.status();
  const int64_t dim = x.dim(*axis);
  if (k < 0 || k > dim) {
    return ctx.Invalid(absl::StrCat("K is ", k, ", must be in [0, ", dim, "] (the axis size)"));
  }
  const bool largest = ctx.info().GetInt("largest", 1) != 0;
  Shape out_shape = x.shape();
  out_shape[*axis] = k;
  absl::StatusOr<Tensor*> values = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!values.ok()) return values.status();
  absl::StatusOr<Tensor*> indices = ctx.AllocateOutput(1, v1::DT_INT64, out_shape);
  if (!indices.ok()) return indices.status();
  const int64_t outer = Product(x.shape(), 0, *axis);
  const int64_t inner = Product(x.shape(), *axis + 1, x.rank());
  return DispatchTyped(ctx, x, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
      return ctx.info().Unimplemented(
          absl::StrCat("element type ", DataTypeName(x.dtype()), " is not supported"));
    } else {
      const T* src = x.data<T>();
      T* vo = (*values)->data<T>();
      int64_t* io = (*indices)->data<int64_t>();
      ctx.ParallelFor(outer * inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(dim, 1)),
                      [&](int64_t begin, int64_t end) {
        std::vector<int64_t> order(dim);
        for (int64_t r = begin; r < end; ++r) {
          const int64_t o = r / inner, in = r % inner;
          const T* base = src + o * dim * inner + in;
          std::iota(order.begin(), order.end(), int64_t{0});
          // Ties keep the lower index first (ONNX: "the element with the lower index").
          auto before = [&](int64_t a, int64_t b) {
            const auto va = ToCompute(base[a * inner]), vb = ToCompute(base[b * inner]);
            if (va != vb) return largest ? va > vb : va < vb;
            return a < b;
          };
          std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
          for (int64_t j = 0; j < k; ++j) {
            const int64_t dst = o * k * inner + j * inner + in;
            vo[dst] = base[order[j] * inner];
            io[dst] = order[j];
          }
        }
      });
      return absl::OkStatus();
    }
  });
}

// --- Unique ---------------------------------------------------------------------------------

absl::Status UniqueKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const bool sorted = ctx.info().GetInt("sorted", 1) != 0;
  // The input seen as [outer, dim, inner]; without 'axis' it is flattened: [1, n, 1].
  Shape shape{x.num_elements()};
  int axis = 0;
  if (ctx.info().has_attr("axis")) {
    if (x.rank() == 0) return ctx.Invalid("input 0 must have rank >= 1 with 'axis'");
    absl::StatusOr<int> a = NormalizeAxis(ctx.info().GetInt("axis", 0), x.rank(), ctx.info());
    if (!a.ok()) return a.status();
    axis = *a;
    shape = x.shape();
  }
  const int64_t outer = Product(shape, 0, axis);
  const int64_t dim = shape[axis];
  const int64_t inner = Product(shape, axis + 1, static_cast<int>(shape.size()));
  return DispatchTyped(ctx, x, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T* src = TypedData<T>(x);
    auto element = [&](int64_t slice, int64_t o, int64_t i) -> const T& {
      return src[(o * dim + slice) * inner + i];
    };
    // Three-way comparison of two slices along the axis, element by element.
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          const T& va = element(a, o, i);
          const T& vb = element(b, o, i);
          if constexpr (std::is_same_v<T, std::string>) {
            if (va != vb) return va < vb ? -1 : 1;
          } else {
            const auto ca = ToCompute(va), cb = ToCompute(vb);
            if (ca < cb) return -1;
            if (cb < ca) return 1;
          }
        }
      }
      return 0;
    };
    // Five tables of up to `dim` entries below.
    absl::StatusOr<MemoryReservation> tables =
        ctx.ReserveScratch(5 * dim * static_cast<int64_t>(sizeof(int64_t)), "index tables");
    if (!tables.ok()) return tables.status();
    // Slices in sorted order (stable: equal slices keep their first occurrence first). The
    // sort cannot be interrupted: it is n log n in the input, which exists already.
    std::vector<int64_t> order(dim);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
    // Group equal neighbours: each group's first entry is the first occurrence.
    std::vector<int64_t> group_of(dim);
    std::vector<int64_t> first;   // per group: first occurrence
    std::vector<int64_t> counts;  // per group
    for (int64_t j = 0; j < dim; ++j) {
      if (j == 0 || compare(order[j - 1], order[j]) != 0) {
        first.push_back(order[j]);
        counts.push_back(0);
      }
      group_of[order[j]] = static_cast<int64_t>(first.size()) - 1;
      ++counts.back();
    }
    const int64_t groups = static_cast<int64_t>(first.size());
    // Output position of each group: sorted order, or order of first occurrence.
    std::vector<int64_t> position(groups);
    std::iota(position.begin(), position.end(), int64_t{0});
    if (!sorted) {
      std::vector<int64_t> by_first(groups);
      std::iota(by_first.begin(), by_first.end(), int64_t{0});
      std::sort(by_first.begin(), by_first.end(),
                [&](int64_t a, int64_t b) { return first[a] < first[b]; });
      for (int64_t p = 0; p < groups; ++p) position[by_first[p]] = p;
    }
    Shape y_shape = shape;
    y_shape[axis] = groups;
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), y_shape);
    if (!y.ok()) return y.status();
    T* yo = TypedData<T>(**y);
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < inner; ++i) {
          yo[(o * groups + position[g]) * inner + i] = element(first[g], o, i);
        }
      }
    }
    absl::StatusOr<Tensor*> first_out = ctx.AllocateOutput(1, v1::DT_INT64, Shape{groups});
    if (!first_out.ok()) return first_out.status();
    absl::StatusOr<Tensor*> inverse = ctx.AllocateOutput(2, v1::DT_INT64, Shape{dim});
    if (!inverse.ok()) return inverse.status();
    absl::StatusOr<Tensor*> count_out = ctx.AllocateOutput(3, v1::DT_INT64, Shape{groups});
    if (!count_out.ok()) return count_out.status();
    for (int64_t g = 0; g < groups; ++g) {
      (*first_out)->data<int64_t>()[position[g]] = first[g];
      (*count_out)->data<int64_t>()[position[g]] = counts[g];
    }
    for (int64_t j = 0; j < dim; ++j) {
      (*inverse)->data<int64_t>()[j] = position[group_of[j]];
    }
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status RegisterTensorIndexKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Gather", GatherKernel));
  s.Update(registry.Register("GatherElements", GatherElementsKernel));
  s.Update(registry.Register("GatherND", GatherNdKernel));
  // Scatter (opsets 9-10) is ScatterElements without a reduction.
  s.Update(registry.Register("Scatter", ScatterElementsKernel));
  s.Update(registry.Register("ScatterElements", ScatterElementsKernel));
  s.Update(registry.Register("ScatterND", ScatterNdKernel));
  s.Update(registry.Register("Compress", CompressKernel));
  s.Update(registry.Register("NonZero", NonZeroKernel));
  s.Update(registry.Register("TopK", TopKKernel));
  s.Update(registry.Register("Unique", UniqueKernel));
  return s;
}

}  // namespace graphopt::runtime
