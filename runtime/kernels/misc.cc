// Miscellaneous kernels: NonMaxSuppression, Det, the preview training optimizers (Adam,
// Adagrad, Momentum), the seeded random ops (Bernoulli, RandomUniformLike). The family's other
// files register from here: misc_image.cc (GridSample, RoiAlign), misc_signal.cc (DFT, STFT,
// windows, MelWeightMatrix), misc_text.cc (TfIdfVectorizer, StringNormalizer), rnn.cc (RNN,
// GRU, LSTM).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

absl::Status RegisterRnnKernels(KernelRegistry& registry);          // rnn.cc
absl::Status RegisterMiscImageKernels(KernelRegistry& registry);    // misc_image.cc
absl::Status RegisterMiscSignalKernels(KernelRegistry& registry);   // misc_signal.cc
absl::Status RegisterMiscTextKernels(KernelRegistry& registry);     // misc_text.cc

namespace {

// --- NonMaxSuppression ----------------------------------------------------------------------

struct Box {
  float y1, x1, y2, x2;
};

float Iou(const Box& a, const Box& b) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1);
  const float iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return 0;
  const float inter = ih * iw;
  const float uni = (a.y2 - a.y1) * (a.x2 - a.x1) + (b.y2 - b.y1) * (b.x2 - b.x1) - inter;
  return uni > 0 ? inter / uni : 0;
}

absl::Status NonMaxSuppressionKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> boxes_t = RequireInput(ctx, 0);
  if (!boxes_t.ok()) return boxes_t.status();
  absl::StatusOr<const Tensor*> scores_t = RequireInput(ctx, 1);
  if (!scores_t.ok()) return scores_t.status();
  const Tensor& boxes = **boxes_t;
  const Tensor& scores = **scores_t;
  if (boxes.dtype() != v1::DT_FLOAT32 || scores.dtype() != v1::DT_FLOAT32) {
    return absl::UnimplementedError(absl::StrCat("NonMaxSuppression: element type ",
                                                 DataTypeName(boxes.dtype()),
                                                 " is not supported (float32)"));
  }
  if (boxes.rank() != 3 || boxes.dim(2) != 4) {
    return ctx.Invalid(absl::StrCat("boxes must be [batch, boxes, 4], got ", boxes.DebugString()));
  }
  if (scores.rank() != 3 || scores.dim(0) != boxes.dim(0) || scores.dim(2) != boxes.dim(1)) {
    return ctx.Invalid(absl::StrCat("scores must be [batch, classes, boxes] matching boxes ",
                                    boxes.DebugString(), ", got ", scores.DebugString()));
  }
  int64_t max_out = 0;
  if (const Tensor* m = ctx.input(2); m != nullptr && m->num_elements() > 0) {
    max_out = m->ElementAsInt64(0);
  }
  float iou_threshold = 0;
  if (const Tensor* t = ctx.input(3); t != nullptr && t->num_elements() > 0) {
    iou_threshold = static_cast<float>(t->ElementAsDouble(0));
  }
  const Tensor* st = ctx.input(4);
  const bool has_score_threshold = st != nullptr && st->num_elements() > 0;
  const float score_threshold = has_score_threshold ? static_cast<float>(st->ElementAsDouble(0)) : 0;
  const int64_t center = ctx.info().GetInt("center_point_box", 0);
  if (center != 0 && center != 1) {
    return ctx.Invalid(absl::StrCat("attribute 'center_point_box' must be 0 or 1, got ", center));
  }
  const int64_t batches = boxes.dim(0), classes = scores.dim(1), n = boxes.dim(1);
  std::vector<int64_t> selected;  // triples
  std::vector<Box> bx(n);
  std::vector<int64_t> order;
  std::vector<int64_t> picked;
  for (int64_t b = 0; b < batches; ++b) {
    const float* bp = boxes.data<float>() + b * n * 4;
    for (int64_t i = 0; i < n; ++i) {
      const float* p = bp + i * 4;
      if (center == 0) {
        bx[i] = {std::min(p[0], p[2]), std::min(p[1], p[3]), std::max(p[0], p[2]),
                 std::max(p[1], p[3])};
      } else {  // [x_center, y_center, width, height]
        bx[i] = {p[1] - p[3] / 2, p[0] - p[2] / 2, p[1] + p[3] / 2, p[0] + p[2] / 2};
      }
    }
    for (int64_t c = 0; c < classes; ++c) {
      const float* sp = scores.data<float>() + (b * classes + c) * n;
      order.clear();
      for (int64_t i = 0; i < n; ++i) {
        if (!has_score_threshold || sp[i] > score_threshold) order.push_back(i);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return sp[x] > sp[y]; });
      picked.clear();
      int64_t visited = 0;
      for (int64_t i : order) {
        if (static_cast<int64_t>(picked.size()) >= max_out) break;
        // Each box is compared with every one kept so far (quadratic in the boxes): polled.
        if ((++visited & 255) == 0 && ctx.ShouldStop()) return absl::OkStatus();
        bool keep = true;
        for (int64_t j : picked) {
          if (Iou(bx[i], bx[j]) > iou_threshold) {
            keep = false;
            break;
          }
        }
        if (!keep) continue;
        picked.push_back(i);
        selected.insert(selected.end(), {b, c, i});
      }
    }
  }
  const int64_t count = static_cast<int64_t>(selected.size() / 3);
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_INT64, {count, 3});
  if (!out.ok()) return out.status();
  std::copy(selected.begin(), selected.end(), (*out)->data<int64_t>());
  return absl::OkStatus();
}

// --- Det ------------------------------------------------------------------------------------

absl::Status DetKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  const Tensor& t = **x;
  if (t.rank() < 2 || t.dim(t.rank() - 1) != t.dim(t.rank() - 2)) {
    return ctx.Invalid(absl::StrCat("Det needs [..., n, n], got ", t.DebugString()));
  }
  const int64_t n = t.dim(t.rank() - 1);
  Shape out_shape(t.shape().begin(), t.shape().end() - 2);
  return DispatchFloat(t.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, t.dtype(), out_shape);
    if (!out.ok()) return out.status();
    const int64_t count = (*out)->num_elements();
    std::vector<double> a(n * n);
    for (int64_t m = 0; m < count; ++m) {
      const T* src = t.data<T>() + m * n * n;
      for (int64_t i = 0; i < n * n; ++i) a[i] = static_cast<double>(ToCompute(src[i]));
      // Gaussian elimination with partial pivoting.
      double det = 1;
      for (int64_t col = 0; col < n && det != 0; ++col) {
        // O(n^3) on n^2 inputs: the stop token is polled per pivot column.
        if (ctx.ShouldStop()) return absl::OkStatus();  // the executor returns its status
        int64_t piv = col;
        for (int64_t r = col + 1; r < n; ++r) {
          if (std::fabs(a[r * n + col]) > std::fabs(a[piv * n + col])) piv = r;
        }
        if (a[piv * n + col] == 0) {
          det = 0;
          break;
        }
        if (piv != col) {
          for (int64_t k = 0; k < n; ++k) std::swap(a[piv * n + k], a[col * n + k]);
          det = -det;
        }
        const double d = a[col * n + col];
        det *= d;
        for (int64_t r = col + 1; r < n; ++r) {
          const double f = a[r * n + col] / d;
          for (int64_t k = col; k < n; ++k) a[r * n + k] -= f * a[col * n + k];
        }
      }
      (*out)->data<T>()[m] = FromCompute<T>(det);
    }
    return absl::OkStatus();
  });
}

// --- Training optimizers (ai.onnx.preview.training) ----------------------------------------

// Reads scalar R (learning rate) and T (step count).
absl::Status ReadRT(const KernelContext& ctx, double* r, int64_t* t) {
  absl::StatusOr<const Tensor*> rt = RequireInput(ctx, 0);
  if (!rt.ok()) return rt.status();
  absl::StatusOr<const Tensor*> tt = RequireInput(ctx, 1);
  if (!tt.ok()) return tt.status();
  if ((*rt)->num_elements() != 1 || (*tt)->num_elements() != 1) {
    return ctx.Invalid("R and T must be scalars");
  }
  *r = (*rt)->ElementAsDouble(0);
  *t = (*tt)->ElementAsInt64(0);
  return absl::OkStatus();
}

// Checks the optimizer's tensor groups: `groups` groups of n tensors each, after R and T, all
// float32 (or, with `allow_double`, all of X's type, float32 or float64) of the shape of the
// group-0 tensor at the same position.
absl::StatusOr<int> OptimizerGroups(const KernelContext& ctx, int groups,
                                    bool allow_double = false) {
  const int rest = ctx.num_inputs() - 2;
  if (rest <= 0 || rest % groups != 0) {
    return ctx.Invalid(absl::StrCat(ctx.num_inputs(), " inputs: R, T and ", groups,
                                    " equal groups expected"));
  }
  const int n = rest / groups;
  for (int g = 0; g < groups; ++g) {
    for (int i = 0; i < n; ++i) {
      const Tensor* t = ctx.input(2 + g * n + i);
      const Tensor* x = ctx.input(2 + i);
      if (t == nullptr || x == nullptr) return ctx.Invalid("optimizer inputs may not be omitted");
      const bool supported =
          t->dtype() == v1::DT_FLOAT32 ||
          (allow_double && t->dtype() == v1::DT_FLOAT64 && x->dtype() == v1::DT_FLOAT64);
      if (!supported) {
        return absl::UnimplementedError(absl::StrCat(
            ctx.info().op_type(), ": element type ", DataTypeName(t->dtype()),
            allow_double ? " is not supported (float32, float64)" : " is not supported (float32)"));
      }
      if (t->shape() != x->shape()) {
        return ctx.Invalid(absl::StrCat("input ", 2 + g * n + i, " is ", t->DebugString(),
                                        ", the shape of ", x->DebugString(), " expected"));
      }
    }
  }
  if (ctx.num_outputs() > n * (groups - 1)) {
    return ctx.Invalid(absl::StrCat(ctx.num_outputs(), " outputs, at most ", n * (groups - 1)));
  }
  return n;
}

absl::Status AdagradKernel(KernelContext& ctx) {
  double r;
  int64_t t;
  absl::Status s = ReadRT(ctx, &r, &t);
  if (!s.ok()) return s;
  absl::StatusOr<int> n = OptimizerGroups(ctx, 3);  // X, G, H
  if (!n.ok()) return n.status();
  const double norm = ctx.info().GetFloat("norm_coefficient", 0);
  const double eps = ctx.info().GetFloat("epsilon", 0);
  const double decay = ctx.info().GetFloat("decay_factor", 0);
  const double rate = r / (1 + t * decay);
  for (int i = 0; i < *n; ++i) {
    const Tensor& x = *ctx.input(2 + i);
    const float* xp = x.data<float>();
    const float* gp = ctx.input(2 + *n + i)->data<float>();
    const float* hp = ctx.input(2 + 2 * *n + i)->data<float>();
    absl::StatusOr<Tensor*> xo = ctx.AllocateOutput(i, v1::DT_FLOAT32, x.shape());
    if (!xo.ok()) return xo.status();
    absl::StatusOr<Tensor*> ho = ctx.AllocateOutput(*n + i, v1::DT_FLOAT32, x.shape());
    if (!ho.ok()) return ho.status();
    for (int64_t k = 0; k < x.num_elements(); ++k) {
      const double g = norm * xp[k] + gp[k];
      const double h = hp[k] + g * g;
      (*ho)->data<float>()[k] = static_cast<float>(h);
      (*xo)->data<float>()[k] = static_cast<float>(xp[k] - rate * g / (std::sqrt(h) + eps));
    }
  }
  return absl::OkStatus();
}

// One Momentum update of every X, G, V group in T (float or double), in double precision.
template <typename T>
absl::Status MomentumUpdate(KernelContext& ctx, int n, double r, double norm, double alpha,
                            double beta_adj, bool standard) {
  const v1::DataType dtype = std::is_same_v<T, double> ? v1::DT_FLOAT64 : v1::DT_FLOAT32;
  for (int i = 0; i < n; ++i) {
    const Tensor& x = *ctx.input(2 + i);
    const T* xp = x.data<T>();
    const T* gp = ctx.input(2 + n + i)->data<T>();
    const T* vp = ctx.input(2 + 2 * n + i)->data<T>();
    absl::StatusOr<Tensor*> xo = ctx.AllocateOutput(i, dtype, x.shape());
    if (!xo.ok()) return xo.status();
    absl::StatusOr<Tensor*> vo = ctx.AllocateOutput(n + i, dtype, x.shape());
    if (!vo.ok()) return vo.status();
    for (int64_t k = 0; k < x.num_elements(); ++k) {
      const double g = norm * xp[k] + gp[k];
      const double v = alpha * vp[k] + beta_adj * g;
      (*vo)->data<T>()[k] = static_cast<T>(v);
      const double step = standard ? v : g + alpha * v;
      (*xo)->data<T>()[k] = static_cast<T>(xp[k] - r * step);
    }
  }
  return absl::OkStatus();
}

absl::Status MomentumKernel(KernelContext& ctx) {
  double r;
  int64_t t;
  absl::Status s = ReadRT(ctx, &r, &t);
  if (!s.ok()) return s;
  absl::StatusOr<int> n = OptimizerGroups(ctx, 3, /*allow_double=*/true);  // X, G, V
  if (!n.ok()) return n.status();
  const double norm = ctx.info().GetFloat("norm_coefficient", 0);
  const double alpha = ctx.info().GetFloat("alpha", 0);
  const double beta = ctx.info().GetFloat("beta", 0);
  const std::string mode = ctx.info().GetString("mode", "standard");
  if (mode != "standard" && mode != "nesterov") {
    return ctx.Invalid(absl::StrCat("attribute 'mode' is '", mode, "' (standard or nesterov)"));
  }
  const double beta_adj = t > 0 ? beta : 1;
  if (ctx.input(2)->dtype() == v1::DT_FLOAT64) {
    return MomentumUpdate<double>(ctx, *n, r, norm, alpha, beta_adj, mode == "standard");
  }
  return MomentumUpdate<float>(ctx, *n, r, norm, alpha, beta_adj, mode == "standard");
}

absl::Status AdamKernel(KernelContext& ctx) {
  double r;
  int64_t t;
  absl::Status s = ReadRT(ctx, &r, &t);
  if (!s.ok()) return s;
  absl::StatusOr<int> n = OptimizerGroups(ctx, 4);  // X, G, V, H
  if (!n.ok()) return n.status();
  const double norm = ctx.info().GetFloat("norm_coefficient", 0);
  const double norm_post = ctx.info().GetFloat("norm_coefficient_post", 0);
  const double alpha = ctx.info().GetFloat("alpha", 0.9f);
  const double beta = ctx.info().GetFloat("beta", 0.999f);
  const double eps = ctx.info().GetFloat("epsilon", 0);
  const double rate =
      t > 0 ? r * std::sqrt(1 - std::pow(beta, t)) / (1 - std::pow(alpha, t)) : r;
  for (int i = 0; i < *n; ++i) {
    const Tensor& x = *ctx.input(2 + i);
    const float* xp = x.data<float>();
    const float* gp = ctx.input(2 + *n + i)->data<float>();
    const float* vp = ctx.input(2 + 2 * *n + i)->data<float>();
    const float* hp = ctx.input(2 + 3 * *n + i)->data<float>();
    absl::StatusOr<Tensor*> xo = ctx.AllocateOutput(i, v1::DT_FLOAT32, x.shape());
    if (!xo.ok()) return xo.status();
    absl::StatusOr<Tensor*> vo = ctx.AllocateOutput(*n + i, v1::DT_FLOAT32, x.shape());
    if (!vo.ok()) return vo.status();
    absl::StatusOr<Tensor*> ho = ctx.AllocateOutput(2 * *n + i, v1::DT_FLOAT32, x.shape());
    if (!ho.ok()) return ho.status();
    for (int64_t k = 0; k < x.num_elements(); ++k) {
      const double g = norm * xp[k] + gp[k];
      const double v = alpha * vp[k] + (1 - alpha) * g;
      const double h = beta * hp[k] + (1 - beta) * g * g;
      const double xn = xp[k] - rate * (v / (std::sqrt(h) + eps));
      (*vo)->data<float>()[k] = static_cast<float>(v);
      (*ho)->data<float>()[k] = static_cast<float>(h);
      (*xo)->data<float>()[k] = static_cast<float>((1 - norm_post) * xn);
    }
  }
  return absl::OkStatus();
}

// --- Random ---------------------------------------------------------------------------------
// Deterministic: the generator is seeded from the 'seed' attribute (0 when absent) on every
// run, so one node gives the same values each time. Values cannot match other runtimes'.

std::mt19937_64 SeededGenerator(const KernelInfo& info) {
  const float seed = info.GetFloat("seed", 0);
  uint32_t bits;
  std::memcpy(&bits, &seed, sizeof(bits));
  return std::mt19937_64(bits);
}

// Uniform in [0, 1) with 53 random bits.
inline double Uniform01(std::mt19937_64& gen) {
  return static_cast<double>(gen() >> 11) * (1.0 / 9007199254740992.0);
}

absl::StatusOr<v1::DataType> OutputDtype(const KernelContext& ctx, v1::DataType fallback) {
  const v1::Attribute* a = ctx.info().attr("dtype");
  if (a == nullptr) return fallback;
  return static_cast<v1::DataType>(ctx.info().GetInt("dtype", 0));
}

absl::Status BernoulliKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  const Tensor& p = **x;
  if (!IsFloatingPoint(p.dtype())) {
    return absl::UnimplementedError(absl::StrCat("Bernoulli: input element type ",
                                                 DataTypeName(p.dtype()), " is not supported"));
  }
  absl::StatusOr<v1::DataType> dtype = OutputDtype(ctx, p.dtype());
  if (!dtype.ok()) return dtype.status();
  std::mt19937_64 gen = SeededGenerator(ctx.info());
  return DispatchAll(*dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, std::string>) {
      return absl::UnimplementedError("Bernoulli: string output is not supported");
    } else {
      absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, *dtype, p.shape());
      if (!out.ok()) return out.status();
      T* o = (*out)->data<T>();
      for (int64_t i = 0; i < p.num_elements(); ++i) {
        const bool one = Uniform01(gen) < p.ElementAsDouble(i);
        o[i] = FromCompute<T>(one ? 1.0f : 0.0f);
      }
      return absl::OkStatus();
    }
  });
}

absl::Status RandomUniformLikeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
  if (!x.ok()) return x.status();
  absl::StatusOr<v1::DataType> dtype = OutputDtype(ctx, (*x)->dtype());
  if (!dtype.ok()) return dtype.status();
  const double low = ctx.info().GetFloat("low", 0);
  const double high = ctx.info().GetFloat("high", 1);
  std::mt19937_64 gen = SeededGenerator(ctx.info());
  return DispatchFloat(*dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, *dtype, (*x)->shape());
    if (!out.ok()) return out.status();
    T* o = (*out)->data<T>();
    for (int64_t i = 0; i < (*out)->num_elements(); ++i) {
      o[i] = FromCompute<T>(low + (high - low) * Uniform01(gen));
    }
    return absl::OkStatus();
  });
}

// A stateless kernel for a registry key with a domain.
class FnKernel : public OpKernel {
 public:
  explicit FnKernel(KernelFunction f) : f_(f) {}
  absl::Status Compute(KernelContext& ctx) const override { return f_(ctx); }

 private:
  KernelFunction f_;
};

}  // namespace

absl::Status RegisterMiscKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("NonMaxSuppression", NonMaxSuppressionKernel));
  s.Update(registry.Register("Det", DetKernel));
  s.Update(registry.Register("Bernoulli", BernoulliKernel));
  s.Update(registry.Register("RandomUniformLike", RandomUniformLikeKernel));
  const std::string training = "ai.onnx.preview.training";
  for (auto [op, fn] : {std::pair<const char*, KernelFunction>{"Adam", AdamKernel},
                        {"Adagrad", AdagradKernel},
                        {"Momentum", MomentumKernel}}) {
    s.Update(registry.Register(
        KernelRegistry::Key{training, op},
        [fn = fn](const KernelInfo&) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
          return std::make_unique<FnKernel>(fn);
        }));
  }
  s.Update(RegisterRnnKernels(registry));
  s.Update(RegisterMiscImageKernels(registry));
  s.Update(RegisterMiscSignalKernels(registry));
  s.Update(RegisterMiscTextKernels(registry));
  return s;
}

}  // namespace graphopt::runtime
