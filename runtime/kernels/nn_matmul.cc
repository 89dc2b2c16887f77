// Matrix products: MatMul and Gemm (float32 on oneDNN's sgemm, other types on loops),
// MatMulInteger and QLinearMatMul (int32 accumulation on loops).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include <omp.h>

#include "absl/strings/str_cat.h"
#include "oneapi/dnnl/dnnl.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"
#include "runtime/kernels/packed_matmul.h"

namespace graphopt::runtime {
namespace {

// A batched [M, K] x [K, N] product with numpy broadcasting of the batch dims; 1-D operands
// are promoted (A to [1, K], B to [K, 1]) and the promoted dim is dropped from the output.
struct MatMulPlan {
  int64_t m = 0, n = 0, k = 0;
  Shape out_shape;
  std::vector<int64_t> a_off, b_off;  // element offsets of each batch's matrices
  bool a_batched = false;             // A has one matrix per output batch, contiguous
  bool b_single = false;              // B is one matrix shared by every batch
};

absl::StatusOr<MatMulPlan> PlanMatMul(const KernelContext& ctx, const Shape& a_in,
                                      const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) return ctx.Invalid("MatMul operands must not be scalars");
  Shape a = a_in, b = b_in;
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  MatMulPlan p;
  p.m = a[a.size() - 2];
  p.k = a[a.size() - 1];
  p.n = b[b.size() - 1];
  if (b[b.size() - 2] != p.k) {
    return ctx.Invalid(absl::StrCat("inner dims of A ", ShapeString(a_in), " and B ",
                                    ShapeString(b_in), " differ"));
  }
  Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const Shape batches[2] = {ab, bb};
  absl::StatusOr<Shape> batch = BroadcastShapes(batches);
  if (!batch.ok()) return ctx.Invalid(absl::StrCat("batch dims: ", batch.status().message()));
  const int r = static_cast<int>(batch->size());
  int64_t count = 1;
  for (int64_t d : *batch) count *= d;
  // Strides of A's and B's batch dims aligned to the output's (0 where broadcast).
  std::vector<int64_t> sa(r, 0), sb(r, 0);
  int64_t st = p.m * p.k;
  for (int i = static_cast<int>(ab.size()) - 1; i >= 0; --i) {
    if (ab[i] != 1) sa[r - ab.size() + i] = st;
    st *= ab[i];
  }
  const int64_t a_count = st / std::max<int64_t>(p.m * p.k, 1);
  st = p.k * p.n;
  for (int i = static_cast<int>(bb.size()) - 1; i >= 0; --i) {
    if (bb[i] != 1) sb[r - bb.size() + i] = st;
    st *= bb[i];
  }
  const int64_t b_count = st / std::max<int64_t>(p.k * p.n, 1);
  p.a_off.resize(count);
  p.b_off.resize(count);
  std::vector<int64_t> idx(r, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t oa = 0, ob = 0;
    for (int d = 0; d < r; ++d) {
      oa += idx[d] * sa[d];
      ob += idx[d] * sb[d];
    }
    p.a_off[i] = oa;
    p.b_off[i] = ob;
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[d] < (*batch)[d]) break;
      idx[d] = 0;
    }
  }
  p.a_batched = a_count == count;
  p.b_single = b_count == 1;
  p.out_shape = *batch;
  if (!a_vec) p.out_shape.push_back(p.m);
  if (!b_vec) p.out_shape.push_back(p.n);
  return p;
}

// c[M, N] (= or +=) a[M, K] x b[K, N] (row-major, leading dims lda, ldb, ldc) in C; integer
// sums wrap around as the elementwise ops do.
template <typename A, typename B, typename C, typename Fa, typename Fb>
void GemmLoop(int64_t m, int64_t n, int64_t k, const A* a, int64_t lda, bool trans_a,
              const B* b, int64_t ldb, bool trans_b, C* c, Fa fa, Fb fb) {
  std::vector<C> brow(n);
  for (int64_t i = 0; i < m; ++i) {
    C* ci = c + i * n;
    for (int64_t j = 0; j < n; ++j) ci[j] = C(0);
    for (int64_t p = 0; p < k; ++p) {
      const C av = fa(trans_a ? a[p * lda + i] : a[i * lda + p], i);
      if (trans_b) {
        for (int64_t j = 0; j < n; ++j) ci[j] = WrapAdd(ci[j], WrapMul(av, fb(b[j * ldb + p], j)));
      } else {
        const B* bp = b + p * ldb;
        for (int64_t j = 0; j < n; ++j) ci[j] = WrapAdd(ci[j], WrapMul(av, fb(bp[j], j)));
      }
    }
  }
}

template <typename F>
absl::Status DispatchMatMulTypes(v1::DataType dtype, F&& f) {
  switch (dtype) {
    case v1::DT_FLOAT32: return f(TypeTag<float>{});
    case v1::DT_FLOAT64: return f(TypeTag<double>{});
    case v1::DT_FLOAT16: return f(TypeTag<Float16>{});
    case v1::DT_BFLOAT16: return f(TypeTag<BFloat16>{});
    case v1::DT_INT32: return f(TypeTag<int32_t>{});
    case v1::DT_INT64: return f(TypeTag<int64_t>{});
    case v1::DT_UINT32: return f(TypeTag<uint32_t>{});
    case v1::DT_UINT64: return f(TypeTag<uint64_t>{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("element type ", DataTypeName(dtype), " is not supported"));
  }
}

// `packed`: B packed once when B is a constant of the plan (null otherwise).
absl::Status MatMulCompute(KernelContext& ctx, const PackedMatMul* packed) {
  absl::StatusOr<const Tensor*> a = RequireInput(ctx, 0);
  if (!a.ok()) return a.status();
  absl::StatusOr<const Tensor*> b = RequireInput(ctx, 1);
  if (!b.ok()) return b.status();
  if ((*a)->dtype() != (*b)->dtype()) return ctx.Invalid("inputs A and B must have one type");
  absl::StatusOr<MatMulPlan> p = PlanMatMul(ctx, (*a)->shape(), (*b)->shape());
  if (!p.ok()) return p.status();
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, (*a)->dtype(), p->out_shape);
  if (!y.ok()) return y.status();
  const int64_t batches = static_cast<int64_t>(p->a_off.size());
  const int64_t m = p->m, n = p->n, k = p->k;
  if ((*y)->num_elements() == 0) return absl::OkStatus();
  if ((*a)->dtype() == v1::DT_FLOAT32) {
    const float* pa = (*a)->data<float>();
    const float* pb = (*b)->data<float>();
    float* py = (*y)->data<float>();
    if (k == 0) {
      std::fill(py, py + (*y)->num_elements(), 0.0f);
      return absl::OkStatus();
    }
    const bool stacked = p->b_single && p->a_batched;
    if (packed != nullptr && (stacked || batches == 1) && packed->Matches(**b)) {
      const int64_t rows = stacked ? batches * m : m;
      absl::StatusOr<bool> ran =
          packed->Run(ctx, rows, stacked ? pa : pa + p->a_off[0], 1.0f, false, py);
      if (!ran.ok()) return ran.status();
      if (*ran) return absl::OkStatus();
    }
    if (stacked) {
      // One product: A's batches stacked along M.
      return Sgemm(ctx, false, false, batches * m, n, k, 1.0f, pa, k, pb + p->b_off[0], n, 0.0f,
                   py, n);
    }
    const int64_t work = m * n * k;
    if (batches >= 2 && work < (1 << 18)) {
      absl::Status status;
      std::vector<absl::Status> errors(batches);
      ctx.ParallelFor(batches, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(work, 1)),
                      [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          errors[i] = Sgemm(ctx, false, false, m, n, k, 1.0f, pa + p->a_off[i], k,
                            pb + p->b_off[i], n, 0.0f, py + i * m * n, n);
        }
      });
      for (const absl::Status& e : errors) status.Update(e);
      return status;
    }
    for (int64_t i = 0; i < batches; ++i) {
      absl::Status st = Sgemm(ctx, false, false, m, n, k, 1.0f, pa + p->a_off[i], k,
                              pb + p->b_off[i], n, 0.0f, py + i * m * n, n);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }
  return DispatchMatMulTypes((*a)->dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* pa = (*a)->data<T>();
    const T* pb = (*b)->data<T>();
    T* py = (*y)->data<T>();
    auto id = [](T v, int64_t) { return ToCompute(v); };
    ctx.ParallelFor(batches, 1, [&](int64_t begin, int64_t end) {
      std::vector<C> acc(m * n);
      for (int64_t i = begin; i < end; ++i) {
        GemmLoop<T, T, C>(m, n, k, pa + p->a_off[i], k, false, pb + p->b_off[i], n, false,
                          acc.data(), id, id);
        for (int64_t j = 0; j < m * n; ++j) py[i * m * n + j] = FromCompute<T>(acc[j]);
      }
    });
    return absl::OkStatus();
  });
}

// y[j] = alpha * (a . b[j, :]) (+ y[j] when `accumulate`) for the n rows of a row-major [n, k]
// b: one row of A times a transposed B, as a classifier's Gemm at batch 1 asks. A matrix-vector
// product reads each weight once and is bound by memory: in a network, whose classifier weights
// come from beyond the caches, these row dot products beat oneDNN's matmul with B packed, and
// for weights small enough to stay closer in the caches the two are about even
// (bench/classifier_gemv times them alone, hot and swept). Rows are shared
// out among the threads; each row's sum is the same whichever thread computes it. B is read
// where the plan holds it: no packed copy.
void GemvRows(const KernelContext& ctx, int64_t k, int64_t n, const float* a, const float* b,
              float alpha, bool accumulate, float* y) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(k, 1));
  ctx.ParallelFor(n, grain, [&](int64_t begin, int64_t end) {
    constexpr int64_t kPiece = 256;
    float dots[kPiece];
    for (int64_t j0 = begin; j0 < end; j0 += kPiece) {
      const int64_t rows = std::min(kPiece, end - j0);
      DotRowsF32(k, rows, a, b + j0 * k, k, dots);
      for (int64_t j = 0; j < rows; ++j) {
        y[j0 + j] = alpha * dots[j] + (accumulate ? y[j0 + j] : 0.0f);
      }
    }
  });
}

// Gemm: Y = alpha * A' x B' + beta * C, A' = transA ? A^T : A, C broadcast to [M, N].
absl::Status GemmCompute(KernelContext& ctx, const PackedMatMul* packed) {
  const KernelInfo& info = ctx.info();
  const bool ta = info.GetInt("transA", 0) != 0;
  const bool tb = info.GetInt("transB", 0) != 0;
  const float alpha = info.GetFloat("alpha", 1.0f);
  const float beta = info.GetFloat("beta", 1.0f);
  absl::StatusOr<const Tensor*> as = RequireInput(ctx, 0);
  if (!as.ok()) return as.status();
  absl::StatusOr<const Tensor*> bs = RequireInput(ctx, 1);
  if (!bs.ok()) return bs.status();
  const Tensor& a = **as;
  const Tensor& b = **bs;
  const Tensor* c = ctx.input(2);
  if (a.rank() != 2 || b.rank() != 2) {
    return ctx.Invalid(absl::StrCat("A ", ShapeString(a.shape()), " and B ",
                                    ShapeString(b.shape()), " must be matrices"));
  }
  if (a.dtype() != b.dtype() || (c && c->dtype() != a.dtype())) {
    return ctx.Invalid("inputs A, B and C must have one element type");
  }
  const int64_t m = ta ? a.dim(1) : a.dim(0);
  const int64_t k = ta ? a.dim(0) : a.dim(1);
  const int64_t n = tb ? b.dim(0) : b.dim(1);
  if ((tb ? b.dim(1) : b.dim(0)) != k) {
    return ctx.Invalid(absl::StrCat("inner dims of A ", ShapeString(a.shape()), " and B ",
                                    ShapeString(b.shape()), " differ (transA ", ta, ", transB ",
                                    tb, ")"));
  }
  // C broadcasts unidirectionally to [M, N].
  int64_t c_rs = 0, c_cs = 0;
  if (c) {
    const Shape& cs = c->shape();
    if (cs.size() > 2) return ctx.Invalid("input C must have rank <= 2");
    const int64_t cr = cs.size() == 2 ? cs[0] : 1;
    const int64_t cc = cs.empty() ? 1 : cs.back();
    if ((cr != 1 && cr != m) || (cc != 1 && cc != n)) {
      return ctx.Invalid(absl::StrCat("input C ", ShapeString(cs), " does not broadcast to [", m,
                                      ",", n, "]"));
    }
    c_rs = cr == 1 ? 0 : cc;
    c_cs = cc == 1 ? 0 : 1;
  }
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, a.dtype(), {m, n});
  if (!y.ok()) return y.status();
  if (m * n == 0) return absl::OkStatus();
  return DispatchMatMulTypes(a.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using Cm = ComputeType<T>;
    T* py = (*y)->data<T>();
    const T* pc = c ? c->data<T>() : nullptr;
    if constexpr (std::is_same_v<T, float>) {
      const bool use_c = pc != nullptr && beta != 0.0f;
      if (use_c) {
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) py[i * n + j] = beta * pc[i * c_rs + j * c_cs];
        }
      }
      if (k == 0) {
        if (!use_c) std::fill(py, py + m * n, 0.0f);
        return absl::OkStatus();
      }
      if (m == 1 && !ta && tb) {
        GemvRows(ctx, k, n, a.data<float>(), b.data<float>(), alpha, use_c, py);
        return absl::OkStatus();
      }
      if (packed != nullptr && !ta && packed->Matches(b)) {
        absl::StatusOr<bool> ran = packed->Run(ctx, m, a.data<float>(), alpha, use_c, py);
        if (!ran.ok()) return ran.status();
        if (*ran) return absl::OkStatus();
      }
      return Sgemm(ctx, ta, tb, m, n, k, alpha, a.data<float>(), a.dim(1), b.data<float>(),
                   b.dim(1), use_c ? 1.0f : 0.0f, py, n);
    } else {
      std::vector<Cm> acc(m * n);
      auto id = [](T v, int64_t) { return ToCompute(v); };
      GemmLoop<T, T, Cm>(m, n, k, a.data<T>(), a.dim(1), ta, b.data<T>(), b.dim(1), tb,
                         acc.data(), id, id);
      const Cm al = static_cast<Cm>(alpha), be = static_cast<Cm>(beta);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          Cm v = WrapMul(al, acc[i * n + j]);
          if (pc) v = WrapAdd(v, WrapMul(be, ToCompute(pc[i * c_rs + j * c_cs])));
          py[i * n + j] = FromCompute<T>(v);
        }
      }
      return absl::OkStatus();
    }
  });
}

template <typename F>
absl::Status Dispatch8Bit(v1::DataType dtype, F&& f) {
  switch (dtype) {
    case v1::DT_UINT8: return f(TypeTag<uint8_t>{});
    case v1::DT_INT8: return f(TypeTag<int8_t>{});
    default:
      return absl::UnimplementedError(
          absl::StrCat("element type ", DataTypeName(dtype), " is not supported (int8/uint8 only)"));
  }
}

// Zero point of input `i` for a matrix with `count` rows (A) or columns (B): scalar or one per
// row/column; int32 values, 0 when omitted.
absl::StatusOr<std::vector<int32_t>> MatrixZeroPoints(const KernelContext& ctx, int i,
                                                      int64_t count, v1::DataType expected) {
  std::vector<int32_t> v(count, 0);
  const Tensor* t = ctx.input(i);
  if (t == nullptr) return v;
  if (t->dtype() != expected) {
    return ctx.Invalid(absl::StrCat("input ", i, " (zero point) must be ", DataTypeName(expected)));
  }
  if (t->num_elements() != 1 && t->num_elements() != count) {
    return ctx.Invalid(absl::StrCat("input ", i, " (zero point) ", ShapeString(t->shape()),
                                    " must have 1 or ", count, " elements"));
  }
  for (int64_t j = 0; j < count; ++j) {
    v[j] = static_cast<int32_t>(t->ElementAsInt64(t->num_elements() == 1 ? 0 : j));
  }
  return v;
}

// (A - a_zero) x (B - b_zero) in int32 for MatMulInteger (inputs 0, 1, zero points 2, 3) and
// QLinearMatMul (inputs 0, 3, zero points 2, 5).
absl::StatusOr<Tensor> IntegerMatMul(const KernelContext& ctx, int ai, int bi, int azi, int bzi,
                                     MatMulPlan* plan) {
  absl::StatusOr<const Tensor*> a = RequireInput(ctx, ai);
  if (!a.ok()) return a.status();
  absl::StatusOr<const Tensor*> b = RequireInput(ctx, bi);
  if (!b.ok()) return b.status();
  absl::StatusOr<MatMulPlan> p = PlanMatMul(ctx, (*a)->shape(), (*b)->shape());
  if (!p.ok()) return p.status();
  absl::StatusOr<std::vector<int32_t>> az = MatrixZeroPoints(ctx, azi, p->m, (*a)->dtype());
  if (!az.ok()) return az.status();
  absl::StatusOr<std::vector<int32_t>> bz = MatrixZeroPoints(ctx, bzi, p->n, (*b)->dtype());
  if (!bz.ok()) return bz.status();
  absl::StatusOr<Tensor> out = ctx.AllocateTemp(v1::DT_INT32, p->out_shape, "int32 accumulator");
  if (!out.ok()) return out.status();
  const int64_t m = p->m, n = p->n, k = p->k;
  absl::Status st = Dispatch8Bit((*a)->dtype(), [&](auto atag) {
    using A = typename decltype(atag)::type;
    return Dispatch8Bit((*b)->dtype(), [&](auto btag) {
      using B = typename decltype(btag)::type;
      const A* pa = (*a)->data<A>();
      const B* pb = (*b)->data<B>();
      int32_t* py = out->data<int32_t>();
      const int32_t* azp = az->data();
      const int32_t* bzp = bz->data();
      auto fa = [azp](A v, int64_t row) { return static_cast<int32_t>(v) - azp[row]; };
      auto fb = [bzp](B v, int64_t col) { return static_cast<int32_t>(v) - bzp[col]; };
      for (size_t i = 0; i < p->a_off.size(); ++i) {
        GemmLoop<A, B, int32_t>(m, n, k, pa + p->a_off[i], k, false, pb + p->b_off[i], n, false,
                                py + i * m * n, fa, fb);
      }
      return absl::OkStatus();
    });
  });
  if (!st.ok()) return st;
  *plan = *std::move(p);
  return out;
}

// MatMul and Gemm. A float32 Gemm of one row by a transposed B runs as row dot products
// (GemvRows); a float32 product whose B is a constant of the plan (a matrix of at least
// PackedMatMul::kMinColumns columns; for Gemm, A not transposed) on PackedMatMul, B packed once;
// everything else on sgemm or loops.
class MatMulOpKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::make_unique<MatMulOpKernel>();
    k->gemm_ = info.op_type() == "Gemm";
    const Tensor* b = info.constant_input(1);
    if (b != nullptr && (!k->gemm_ || info.GetInt("transA", 0) == 0)) {
      k->packed_ = PackedMatMul::Create(info, *b, k->gemm_ && info.GetInt("transB", 0) != 0);
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    return gemm_ ? GemmCompute(ctx, packed_.get()) : MatMulCompute(ctx, packed_.get());
  }

 private:
  bool gemm_ = false;
  std::unique_ptr<PackedMatMul> packed_;
};

absl::Status MatMulIntegerKernel(KernelContext& ctx) {
  MatMulPlan plan;
  absl::StatusOr<Tensor> out = IntegerMatMul(ctx, 0, 1, 2, 3, &plan);
  if (!out.ok()) return out.status();
  ctx.SetOutput(0, *std::move(out));
  return absl::OkStatus();
}

// QLinearMatMul inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point. Scales are per tensor (a_scale may be per row, b_scale per column).
absl::Status QLinearMatMulKernel(KernelContext& ctx) {
  for (int i : {1, 4, 6}) {
    const Tensor* t = ctx.input(i);
    if (t == nullptr || t->dtype() != v1::DT_FLOAT32) {
      return ctx.Invalid(absl::StrCat("input ", i, " (scale) must be a float32 tensor"));
    }
  }
  const Tensor* yz = ctx.input(7);
  if (yz == nullptr || yz->num_elements() != 1) {
    return ctx.Invalid("input 7 (y_zero_point) must be a scalar");
  }
  MatMulPlan plan;
  absl::StatusOr<Tensor> acc = IntegerMatMul(ctx, 0, 3, 2, 5, &plan);
  if (!acc.ok()) return acc.status();
  const Tensor& as = *ctx.input(1);
  const Tensor& bs = *ctx.input(4);
  const Tensor& ys = *ctx.input(6);
  if ((as.num_elements() != 1 && as.num_elements() != plan.m) ||
      (bs.num_elements() != 1 && bs.num_elements() != plan.n) || ys.num_elements() != 1) {
    return ctx.Invalid("scales must be scalars (a_scale per row, b_scale per column allowed)");
  }
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, yz->dtype(), plan.out_shape);
  if (!y.ok()) return y.status();
  const float y_zero = static_cast<float>(yz->ElementAsInt64(0));
  const int64_t m = plan.m, n = plan.n;
  return Dispatch8Bit(yz->dtype(), [&](auto tag) {
    using Q = typename decltype(tag)::type;
    const int32_t* pa = acc->data<int32_t>();
    Q* out = (*y)->data<Q>();
    for (int64_t i = 0; i < acc->num_elements(); ++i) {
      const int64_t row = (i / n) % m, col = i % n;
      const float scale = as.data<float>()[as.num_elements() == 1 ? 0 : row] *
                          bs.data<float>()[bs.num_elements() == 1 ? 0 : col] / ys.data<float>()[0];
      out[i] = SaturateQuantized<Q>(std::nearbyint(static_cast<float>(pa[i]) * scale) + y_zero);
    }
    return absl::OkStatus();
  });
}

}  // namespace

namespace {

// Products of at most this many multiply-adds run on fast_math's row loops (GemmAccumulateF32)
// instead of oneDNN's sgemm. oneDNN generates all its sgemm kernels on the first call of a
// process (20 ms and more), which a model whose products are all of this size (recurrent
// layers, attention and projections at batch 1) would otherwise pay on its first run; at these
// sizes four rows of A per pass over B keep up with sgemm's packing and blocking. A transposed B
// is transposed into a scratch when that is small; larger ones keep to sgemm.
constexpr int64_t kSmallGemmMacs = int64_t{1} << 23;
constexpr int64_t kMaxTransposedB = int64_t{1} << 16;
// From this many multiply-adds the rows are shared among the threads (as sgemm would).
constexpr int64_t kParallelGemmMacs = int64_t{1} << 18;

bool SmallSgemmFits(bool tb, int64_t m, int64_t n, int64_t k) {
  const double macs = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  return macs <= static_cast<double>(kSmallGemmMacs) &&
         (!tb || static_cast<double>(n) * static_cast<double>(k) <= kMaxTransposedB);
}

// C = op(A) op(B) (+ C when beta is 1), in blocks of four rows of C: op(A) gathered into a
// scratch when A is transposed, op(B) likewise. Each element is summed over k in order.
void SmallSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  std::vector<float> at, bt;
  if (ta) {
    at.resize(static_cast<size_t>(m * k));
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t i = 0; i < m; ++i) at[i * k + p] = a[p * lda + i];
    }
    a = at.data();
    lda = k;
  }
  if (tb) {
    bt.resize(static_cast<size_t>(k * n));
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t p = 0; p < k; ++p) bt[p * n + j] = b[j * ldb + p];
    }
    b = bt.data();
    ldb = n;
  }
  const int64_t blocks = (m + 3) / 4;
  auto block = [&](int64_t blk) {
    const int64_t i0 = blk * 4, rows = std::min<int64_t>(4, m - i0);
    if (beta == 0.0f) {
      for (int64_t i = i0; i < i0 + rows; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0f);
    }
    GemmAccumulateF32(rows, k, n, a + i0 * lda, lda, b, ldb, c + i0 * ldc, ldc);
  };
  const bool parallel = static_cast<double>(m) * n * k >= kParallelGemmMacs && blocks > 1 &&
                        !omp_in_parallel() && omp_get_max_threads() > 1;
  if (!parallel) {
    // Serial without entering OpenMP at all: `parallel for if (false)` still starts a team of
    // one (libgomp allocates it and synchronises on a futex), which cost more than the product
    // itself for attention's per-head products at batch 1 (a few thousand multiply-adds each,
    // one call per head).
    for (int64_t blk = 0; blk < blocks; ++blk) block(blk);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) block(blk);
}

absl::Status SgemmCall(const KernelContext& ctx, bool ta, bool tb, int64_t m, int64_t n,
                       int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                       int64_t ldb, float beta, float* c, int64_t ldc) {
  if (alpha == 1.0f && (beta == 0.0f || beta == 1.0f) && m > 0 && n > 0 && k > 0 &&
      SmallSgemmFits(tb, m, n, k)) {
    SmallSgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return absl::OkStatus();
  }
  const dnnl_status_t st =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success) {
    return absl::InternalError(absl::StrCat(ctx.info().label(), ": oneDNN sgemm failed (status ",
                                            static_cast<int>(st), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Sgemm(const KernelContext& ctx, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                   float beta, float* c, int64_t ldc) {
  // One sgemm call cannot be interrupted. With a stop token, a product of more than
  // kBlockMacs multiply-adds runs as blocks of at most that many (about 10 to 20 ms on one
  // core), the token polled before each, so that a cancelled run stops within a block. Blocks
  // keep at least 256 rows and columns where the product has them, so that repacking A and B
  // per block costs under 1%.
  constexpr int64_t kBlockMacs = int64_t{1} << 28;
  constexpr int64_t kMinSide = 256;
  if (ctx.stop() == nullptr || m == 0 || n == 0 || k == 0 ||
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <=
          static_cast<double>(kBlockMacs)) {
    return SgemmCall(ctx, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  const int64_t min_m = std::min(m, kMinSide), min_n = std::min(n, kMinSide);
  const int64_t kb = std::min(k, std::max<int64_t>(1, kBlockMacs / (min_m * min_n)));
  const int64_t mb = std::min(m, std::max(min_m, kBlockMacs / std::max<int64_t>(1, n * kb)));
  const int64_t nb = std::min(n, std::max<int64_t>(1, kBlockMacs / (mb * kb)));
  for (int64_t i0 = 0; i0 < m; i0 += mb) {
    const int64_t rows = std::min(mb, m - i0);
    for (int64_t j0 = 0; j0 < n; j0 += nb) {
      const int64_t cols = std::min(nb, n - j0);
      for (int64_t p0 = 0; p0 < k; p0 += kb) {
        if (ctx.ShouldStop()) return ctx.StopStatus(ctx.info().label());
        // op(A) is m x k: A itself is k x m when transposed; op(B) is k x n likewise.
        const float* ab = ta ? a + p0 * lda + i0 : a + i0 * lda + p0;
        const float* bb = tb ? b + j0 * ldb + p0 : b + p0 * ldb + j0;
        absl::Status s = SgemmCall(ctx, ta, tb, rows, cols, std::min(kb, k - p0), alpha, ab, lda,
                                   bb, ldb, p0 == 0 ? beta : 1.0f, c + i0 * ldc + j0, ldc);
        if (!s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status RegisterNnMatMulKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("MatMul", KernelFactory(MatMulOpKernel::Create)));
  s.Update(registry.Register("Gemm", KernelFactory(MatMulOpKernel::Create)));
  s.Update(registry.Register("MatMulInteger", MatMulIntegerKernel));
  s.Update(registry.Register("QLinearMatMul", QLinearMatMulKernel));
  return s;
}

}  // namespace graphopt::runtime
