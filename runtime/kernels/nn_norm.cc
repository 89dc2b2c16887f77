// Normalisations: BatchNormalization (inference and training_mode), LayerNormalization,
// InstanceNormalization and LRN. Plain loops, each one or two passes over the data (float32
// LayerNormalization rows on fast_math.h's vector loops).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {
namespace {

absl::Status Unsupported(const KernelContext& ctx, const absl::Status& s) {
  if (s.code() != absl::StatusCode::kUnimplemented) return s;
  return absl::UnimplementedError(
      absl::StrCat(ctx.info().label(), ": ", ctx.info().op_type(), ": ", s.message()));
}

// Input i (a float tensor of any float dtype) as doubles; INVALID_ARGUMENT unless it has
// `count` elements (or, when `alt` > 0, `alt` elements).
absl::StatusOr<std::vector<double>> ParamValues(const KernelContext& ctx, int i, int64_t count,
                                                const char* name, int64_t alt = 0) {
  absl::StatusOr<const Tensor*> t = RequireInput(ctx, i);
  if (!t.ok()) return t.status();
  const int64_t n = (*t)->num_elements();
  if (n != count && (alt == 0 || n != alt)) {
    return ctx.Invalid(absl::StrCat("input ", name, " ", ShapeString((*t)->shape()), " must have ",
                                    count, " elements"));
  }
  const v1::DataType dt = (*t)->dtype();
  if (dt != v1::DT_FLOAT32 && dt != v1::DT_FLOAT64 && dt != v1::DT_FLOAT16 &&
      dt != v1::DT_BFLOAT16) {
    return ctx.Invalid(absl::StrCat("input ", name, " must be floating point"));
  }
  std::vector<double> v(n);
  for (int64_t j = 0; j < n; ++j) v[j] = (*t)->ElementAsDouble(j);
  return v;
}

// Writes `values` (C doubles) to output i with the dtype and shape of input `like`.
absl::Status WriteParam(KernelContext& ctx, int i, int like, const std::vector<double>& values) {
  const Tensor* l = ctx.input(like);
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(i, l->dtype(), l->shape());
  if (!out.ok()) return out.status();
  return DispatchFloat(l->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* p = (*out)->data<T>();
    for (size_t j = 0; j < values.size(); ++j) p[j] = FromCompute<T>(values[j]);
    return absl::OkStatus();
  });
}

// BatchNormalization: X [N, C, ...], scale, B, mean, var [C] (or [C, spatial...] for the
// spatial=0 form of opsets < 9).
absl::Status BatchNormKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  if (x.rank() < 2) {
    return ctx.Invalid(absl::StrCat("input X must have rank >= 2, got ", ShapeString(x.shape())));
  }
  const double eps = info.GetFloat("epsilon", 1e-5f);
  const double momentum = info.GetFloat("momentum", 0.9f);
  // Opset 0 (no import): the newest semantics, where training_mode counts.
  const bool training =
      (info.opset() == 0 || info.opset() >= 14) && info.GetInt("training_mode", 0) != 0;
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t inner = c == 0 ? 0 : x.num_elements() / std::max<int64_t>(n * c, 1);
  absl::StatusOr<std::vector<double>> scale = ParamValues(ctx, 1, c, "scale", c * inner);
  if (!scale.ok()) return scale.status();
  const bool per_element = static_cast<int64_t>(scale->size()) != c;
  const int64_t pc = per_element ? c * inner : c;
  absl::StatusOr<std::vector<double>> bias = ParamValues(ctx, 2, pc, "B");
  if (!bias.ok()) return bias.status();
  absl::StatusOr<std::vector<double>> mean = ParamValues(ctx, 3, pc, "input_mean");
  if (!mean.ok()) return mean.status();
  absl::StatusOr<std::vector<double>> var = ParamValues(ctx, 4, pc, "input_var");
  if (!var.ok()) return var.status();
  std::vector<double> batch_mean, batch_var;
  if (training) {
    if (per_element) return ctx.Invalid("training_mode needs per-channel parameters");
    batch_mean.assign(c, 0.0);
    batch_var.assign(c, 0.0);
    absl::Status st = DispatchFloat(x.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* xp = x.data<T>();
      const double count = static_cast<double>(n * inner);
      for (int64_t ci = 0; ci < c; ++ci) {
        double s = 0, s2 = 0;
        for (int64_t ni = 0; ni < n; ++ni) {
          const T* p = xp + (ni * c + ci) * inner;
          for (int64_t i = 0; i < inner; ++i) s += static_cast<double>(ToCompute(p[i]));
        }
        const double m = count > 0 ? s / count : 0.0;
        for (int64_t ni = 0; ni < n; ++ni) {
          const T* p = xp + (ni * c + ci) * inner;
          for (int64_t i = 0; i < inner; ++i) {
            const double d = static_cast<double>(ToCompute(p[i])) - m;
            s2 += d * d;
          }
        }
        batch_mean[ci] = m;
        batch_var[ci] = count > 0 ? s2 / count : 0.0;
      }
      return absl::OkStatus();
    });
    if (!st.ok()) return Unsupported(ctx, st);
  }
  const std::vector<double>& use_mean = training ? batch_mean : *mean;
  const std::vector<double>& use_var = training ? batch_var : *var;
  std::vector<double> a(pc), b(pc);
  for (int64_t i = 0; i < pc; ++i) {
    a[i] = (*scale)[i] / std::sqrt(use_var[i] + eps);
    b[i] = (*bias)[i] - use_mean[i] * a[i];
  }
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!y.ok()) return y.status();
  absl::Status st = DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xp = x.data<T>();
    T* yp = (*y)->data<T>();
    ctx.ParallelFor(n * c, std::max<int64_t>(1, 32768 / std::max<int64_t>(inner, 1)),
                    [&](int64_t begin, int64_t end) {
      for (int64_t nc = begin; nc < end; ++nc) {
        const int64_t ci = nc % c;
        const T* p = xp + nc * inner;
        T* q = yp + nc * inner;
        if (per_element) {
          const double* pa = a.data() + ci * inner;
          const double* pb = b.data() + ci * inner;
          for (int64_t i = 0; i < inner; ++i) {
            q[i] = FromCompute<T>(static_cast<C>(ToCompute(p[i]) * pa[i] + pb[i]));
          }
        } else {
          const C ac = static_cast<C>(a[ci]), bc = static_cast<C>(b[ci]);
          for (int64_t i = 0; i < inner; ++i) q[i] = FromCompute<T>(ToCompute(p[i]) * ac + bc);
        }
      }
    });
    return absl::OkStatus();
  });
  if (!st.ok()) return Unsupported(ctx, st);
  if (training) {
    std::vector<double> run_mean(c), run_var(c);
    for (int64_t i = 0; i < c; ++i) {
      run_mean[i] = (*mean)[i] * momentum + batch_mean[i] * (1 - momentum);
      run_var[i] = (*var)[i] * momentum + batch_var[i] * (1 - momentum);
    }
    if (ctx.output_wanted(1)) {
      absl::Status w = WriteParam(ctx, 1, 3, run_mean);
      if (!w.ok()) return w;
    }
    if (ctx.output_wanted(2)) {
      absl::Status w = WriteParam(ctx, 2, 4, run_var);
      if (!w.ok()) return w;
    }
  } else {
    // Inference: the running statistics pass through.
    for (int i = 1; i <= 2 && i < ctx.num_outputs(); ++i) {
      if (ctx.output_wanted(i)) ctx.SetOutput(i, *ctx.input(2 + i));
    }
  }
  return absl::OkStatus();
}

// Values of input i (broadcast unidirectionally to `shape`) expanded to shape's elements, as
// compute values; INVALID_ARGUMENT when it does not broadcast.
template <typename C>
absl::StatusOr<std::vector<C>> ExpandTo(const KernelContext& ctx, int i, const Shape& shape,
                                        const char* name) {
  const Tensor* t = ctx.input(i);
  const int64_t total = ShapeNumElements(shape);
  std::vector<C> out(total);
  if (t->rank() > static_cast<int>(shape.size())) {
    return ctx.Invalid(absl::StrCat("input ", name, " ", ShapeString(t->shape()),
                                    " does not broadcast to ", ShapeString(shape)));
  }
  const int pad = static_cast<int>(shape.size()) - t->rank();
  for (int d = 0; d < t->rank(); ++d) {
    if (t->dim(d) != 1 && t->dim(d) != shape[pad + d]) {
      return ctx.Invalid(absl::StrCat("input ", name, " ", ShapeString(t->shape()),
                                      " does not broadcast to ", ShapeString(shape)));
    }
  }
  std::vector<int64_t> ts = Strides(t->shape());
  std::vector<int64_t> pos(shape.size(), 0);
  for (int64_t j = 0; j < total; ++j) {
    int64_t off = 0;
    for (int d = 0; d < t->rank(); ++d) {
      if (t->dim(d) != 1) off += pos[pad + d] * ts[d];
    }
    out[j] = static_cast<C>(t->ElementAsDouble(off));
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      if (++pos[d] < shape[d]) break;
      pos[d] = 0;
    }
  }
  return out;
}

// LayerNormalization: normalises over dims [axis, rank); outputs Y, Mean, InvStdDev.
absl::Status LayerNormKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  absl::StatusOr<const Tensor*> scale_t = RequireInput(ctx, 1);
  if (!scale_t.ok()) return scale_t.status();
  const Tensor& x = **xs;
  absl::StatusOr<int> axis = NormalizeAxis(info.GetInt("axis", -1), x.rank(), info);
  if (!axis.ok()) return axis.status();
  const double eps = info.GetFloat("epsilon", 1e-5f);
  Shape norm_shape(x.shape().begin() + *axis, x.shape().end());
  int64_t rows = 1;
  for (int d = 0; d < *axis; ++d) rows *= x.dim(d);
  const int64_t cols = ShapeNumElements(norm_shape);
  Shape stat_shape(x.shape().begin(), x.shape().begin() + *axis);
  for (int d = *axis; d < x.rank(); ++d) stat_shape.push_back(1);
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!y.ok()) return y.status();
  // Mean and InvStdDev have the stash type (float32 unless stash_type says double).
  const v1::DataType stat_type =
      info.GetInt("stash_type", 1) == 11 ? v1::DT_FLOAT64 : v1::DT_FLOAT32;
  Tensor* mean_out = nullptr;
  Tensor* inv_out = nullptr;
  if (ctx.output_wanted(1)) {
    absl::StatusOr<Tensor*> t = ctx.AllocateOutput(1, stat_type, stat_shape);
    if (!t.ok()) return t.status();
    mean_out = *t;
  }
  if (ctx.output_wanted(2)) {
    absl::StatusOr<Tensor*> t = ctx.AllocateOutput(2, stat_type, stat_shape);
    if (!t.ok()) return t.status();
    inv_out = *t;
  }
  absl::Status st = DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    absl::StatusOr<std::vector<C>> scale = ExpandTo<C>(ctx, 1, norm_shape, "Scale");
    if (!scale.ok()) return scale.status();
    std::vector<C> bias(cols, C(0));
    if (ctx.input(2) != nullptr) {
      absl::StatusOr<std::vector<C>> b = ExpandTo<C>(ctx, 2, norm_shape, "B");
      if (!b.ok()) return b.status();
      bias = *std::move(b);
    }
    const T* xp = x.data<T>();
    T* yp = (*y)->data<T>();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1));
    if constexpr (std::is_same_v<T, float> && std::is_same_v<C, float>) {
      if (stat_type == v1::DT_FLOAT32) {
        // Vector loops (fast_math.h): 16 partial sums, the same in every version.
        float* mean_p = mean_out != nullptr ? mean_out->data<float>() : nullptr;
        float* inv_p = inv_out != nullptr ? inv_out->data<float>() : nullptr;
        ctx.ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
          LayerNormRowsF32(end - begin, cols, xp + begin * cols, scale->data(), 1, bias.data(), 1,
                           static_cast<float>(eps), yp + begin * cols,
                           mean_p != nullptr ? mean_p + begin : nullptr,
                           inv_p != nullptr ? inv_p + begin : nullptr);
        });
        return absl::OkStatus();
      }
    }
    ctx.ParallelFor(rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* p = xp + r * cols;
        T* q = yp + r * cols;
        C sum = 0;
        for (int64_t i = 0; i < cols; ++i) sum += ToCompute(p[i]);
        const C mean = cols > 0 ? sum / static_cast<C>(cols) : C(0);
        C sq = 0;
        for (int64_t i = 0; i < cols; ++i) {
          const C d = ToCompute(p[i]) - mean;
          sq += d * d;
        }
        const C var = cols > 0 ? sq / static_cast<C>(cols) : C(0);
        const C inv = static_cast<C>(1.0 / std::sqrt(static_cast<double>(var) + eps));
        for (int64_t i = 0; i < cols; ++i) {
          q[i] = FromCompute<T>((ToCompute(p[i]) - mean) * inv * (*scale)[i] + bias[i]);
        }
        if (stat_type == v1::DT_FLOAT64) {
          if (mean_out) mean_out->data<double>()[r] = mean;
          if (inv_out) inv_out->data<double>()[r] = inv;
        } else {
          if (mean_out) mean_out->data<float>()[r] = static_cast<float>(mean);
          if (inv_out) inv_out->data<float>()[r] = static_cast<float>(inv);
        }
      }
    });
    return absl::OkStatus();
  });
  return Unsupported(ctx, st);
}

// InstanceNormalization: per [n, c] plane, y = scale[c] * (x - mean) / sqrt(var + eps) + B[c].
absl::Status InstanceNormKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  if (x.rank() < 3) {
    return ctx.Invalid(absl::StrCat("input X must have rank >= 3, got ", ShapeString(x.shape())));
  }
  const int64_t c = x.dim(1);
  absl::StatusOr<std::vector<double>> scale = ParamValues(ctx, 1, c, "scale");
  if (!scale.ok()) return scale.status();
  absl::StatusOr<std::vector<double>> bias = ParamValues(ctx, 2, c, "B");
  if (!bias.ok()) return bias.status();
  const double eps = ctx.info().GetFloat("epsilon", 1e-5f);
  const int64_t planes = x.dim(0) * c;
  const int64_t inner = planes == 0 ? 0 : x.num_elements() / planes;
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!y.ok()) return y.status();
  absl::Status st = DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xp = x.data<T>();
    T* yp = (*y)->data<T>();
    ctx.ParallelFor(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t pl = begin; pl < end; ++pl) {
        const T* p = xp + pl * inner;
        T* q = yp + pl * inner;
        double sum = 0;
        for (int64_t i = 0; i < inner; ++i) sum += ToCompute(p[i]);
        const double mean = inner > 0 ? sum / inner : 0.0;
        double sq = 0;
        for (int64_t i = 0; i < inner; ++i) {
          const double d = ToCompute(p[i]) - mean;
          sq += d * d;
        }
        const double var = inner > 0 ? sq / inner : 0.0;
        const double a = (*scale)[pl % c] / std::sqrt(var + eps);
        const C ac = static_cast<C>(a), bc = static_cast<C>((*bias)[pl % c] - mean * a);
        for (int64_t i = 0; i < inner; ++i) q[i] = FromCompute<T>(ToCompute(p[i]) * ac + bc);
      }
    });
    return absl::OkStatus();
  });
  return Unsupported(ctx, st);
}

// LRN across channels: y = x / (bias + alpha / size * sum of x^2 over the size channels
// around c)^beta.
absl::Status LrnKernel(KernelContext& ctx) {
  const KernelInfo& info = ctx.info();
  absl::StatusOr<const Tensor*> xs = RequireInput(ctx, 0);
  if (!xs.ok()) return xs.status();
  const Tensor& x = **xs;
  absl::StatusOr<int64_t> size = info.RequireInt("size");
  if (!size.ok()) return size.status();
  if (*size <= 0) return ctx.Invalid("attribute 'size' must be positive");
  if (x.rank() < 2) return ctx.Invalid("input X must have rank >= 2");
  const double alpha = info.GetFloat("alpha", 1e-4f);
  const double beta = info.GetFloat("beta", 0.75f);
  const double bias = info.GetFloat("bias", 1.0f);
  const int64_t n = x.dim(0), c = x.dim(1);
  const int64_t inner = n * c == 0 ? 0 : x.num_elements() / (n * c);
  const int64_t lo = (*size - 1) / 2, hi = *size - 1 - lo;
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, x.dtype(), x.shape());
  if (!y.ok()) return y.status();
  absl::Status st = DispatchFloat(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = ComputeType<T>;
    const T* xp = x.data<T>();
    T* yp = (*y)->data<T>();
    ctx.ParallelFor(n * c, 1, [&](int64_t begin, int64_t end) {
      std::vector<C> sq(inner);
      for (int64_t nc = begin; nc < end; ++nc) {
        const int64_t ni = nc / c, ci = nc % c;
        std::fill(sq.begin(), sq.end(), C(0));
        for (int64_t k = std::max<int64_t>(0, ci - lo); k <= std::min<int64_t>(c - 1, ci + hi);
             ++k) {
          const T* p = xp + (ni * c + k) * inner;
          for (int64_t i = 0; i < inner; ++i) {
            const C v = ToCompute(p[i]);
            sq[i] += v * v;
          }
        }
        const T* p = xp + nc * inner;
        T* q = yp + nc * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const C d = static_cast<C>(bias + alpha / *size * sq[i]);
          q[i] = FromCompute<T>(ToCompute(p[i]) / static_cast<C>(std::pow(d, beta)));
        }
      }
    });
    return absl::OkStatus();
  });
  return Unsupported(ctx, st);
}

}  // namespace

absl::Status RegisterNnNormKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("BatchNormalization", BatchNormKernel));
  s.Update(registry.Register("LayerNormalization", LayerNormKernel));
  s.Update(registry.Register("InstanceNormalization", InstanceNormKernel));
  s.Update(registry.Register("LRN", LrnKernel));
  return s;
}

}  // namespace graphopt::runtime
