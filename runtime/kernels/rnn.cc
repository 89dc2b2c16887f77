// Recurrent layers: RNN, GRU and LSTM (ONNX opsets 7-14: directions, activations with
// alpha/beta, clip, sequence_lens, initial states, peepholes, GRU's linear_before_reset,
// LSTM's input_forget, layout 0/1). Float and double.
//
// The input projection X*W^T + biases is one pass over all time steps up front; each step then
// adds H_{t-1}*R^T per batch entry, as row-vector products over the transposed weights (contiguous, vectorised),
// and applies the activations to whole gate vectors (sigmoid and tanh vectorised for float).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/rnn_activation.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/fast_math.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {

absl::Status RegisterRnnKernels(KernelRegistry& registry);

namespace {

enum class Cell { kRnn, kGru, kLstm };

// Multiply-adds of one step's recurrent product from which it is shared out among threads.
constexpr int64_t kMinSplitRecurrentProduct = 32 * 1024;

int NumGates(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }
int NumActivations(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 2 : 3; }
const char* CellName(Cell c) { return c == Cell::kRnn ? "RNN" : c == Cell::kGru ? "GRU" : "LSTM"; }

// One activation function of the recurrence with its parameters, applied elementwise.
struct Activation : RnnActivation {
  template <typename T>
  T operator()(T x) const {
    switch (kind) {
      case kRelu:
        return x > 0 ? x : T(0);
      case kTanh:
        return std::tanh(x);
      case kSigmoid:
        return T(1) / (T(1) + std::exp(-x));
      case kAffine:
        return T(alpha) * x + T(beta);
      case kLeakyRelu:
        return x >= 0 ? x : T(alpha) * x;
      case kThresholdedRelu:
        return x > T(alpha) ? x : T(0);
      case kScaledTanh:
        return T(alpha) * std::tanh(T(beta) * x);
      case kHardSigmoid:
        return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta)));
      case kElu:
        return x >= 0 ? x : T(alpha) * (std::exp(x) - T(1));
      case kSoftsign:
        return x / (T(1) + std::fabs(x));
      case kSoftplus:
        return std::log1p(std::exp(x));
    }
    return x;
  }
};


// y[0, n) += a[0, k) * b, b a row-major [k, n] block with leading dimension ldb.
template <typename T>
inline void Gemv(int64_t k, int64_t n, const T* a, const T* b, int64_t ldb, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    GemvAccumulateF32(k, n, a, b, ldb, y);
  } else {
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) y[j] += a[p] * b[p * ldb + j];
    }
  }
}

// A weight tensor [D, rows, cols] transposed to [D, cols, rows].
template <typename T>
void TransposeWeights(const Tensor& w, std::vector<T>* out) {
  const int64_t D = w.dim(0), rows = w.dim(1), cols = w.dim(2);
  out->resize(static_cast<size_t>(D * rows * cols));
  const T* src = w.data<T>();
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t k = 0; k < cols; ++k) {
        (*out)[(d * cols + k) * rows + r] = src[(d * rows + r) * cols + k];
      }
    }
  }
}

class RecurrentKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(Cell cell, const KernelInfo& info) {
    auto k = std::unique_ptr<RecurrentKernel>(new RecurrentKernel());
    k->cell_ = cell;
    k->hidden_ = info.GetInt("hidden_size", -1);
    k->layout_ = info.GetInt("layout", 0);
    if (k->layout_ != 0 && k->layout_ != 1) {
      return info.Invalid(absl::StrCat("attribute 'layout' must be 0 or 1, got ", k->layout_));
    }
    const std::string direction = info.GetString("direction", "forward");
    if (direction == "forward") {
      k->num_directions_ = 1;
    } else if (direction == "reverse") {
      k->num_directions_ = 1;
      k->reverse_only_ = true;
    } else if (direction == "bidirectional") {
      k->num_directions_ = 2;
    } else {
      return info.Invalid(absl::StrCat("attribute 'direction' is '", direction,
                                       "' (forward, reverse or bidirectional expected)"));
    }
    if (info.has_attr("clip")) {
      k->clip_ = info.GetFloat("clip", 0);
      if (!(k->clip_ > 0)) return info.Invalid("attribute 'clip' must be positive");
    }
    k->linear_before_reset_ = info.GetInt("linear_before_reset", 0) != 0;
    k->input_forget_ = info.GetInt("input_forget", 0) != 0;

    const int per_dir = NumActivations(cell);
    std::vector<std::string> names = info.GetStrings("activations");
    if (names.empty()) {
      for (int d = 0; d < k->num_directions_; ++d) {
        if (cell == Cell::kRnn) {
          names.push_back("Tanh");
        } else {
          names.push_back("Sigmoid");
          names.push_back("Tanh");
          if (cell == Cell::kLstm) names.push_back("Tanh");
        }
      }
    } else if (static_cast<int>(names.size()) == per_dir && k->num_directions_ == 2) {
      std::vector<std::string> twice = names;
      twice.insert(twice.end(), names.begin(), names.end());
      names = twice;
    }
    if (static_cast<int>(names.size()) != per_dir * k->num_directions_) {
      return info.Invalid(absl::StrCat("attribute 'activations' has ", names.size(), " entries, ",
                                       per_dir * k->num_directions_, " expected"));
    }
    const std::vector<float> alphas = info.GetFloats("activation_alpha");
    const std::vector<float> betas = info.GetFloats("activation_beta");
    size_t ai = 0, bi = 0;
    for (const std::string& n : names) {
      Activation a;
      if (!ParseRnnActivation(n, alphas, betas, &ai, &bi, &a)) {
        return info.Unimplemented(absl::StrCat("activation '", n, "' is not supported"));
      }
      k->activations_.push_back(a);
    }
    // R transposed once per plan when it is a constant of it (float only; W goes to sgemm as
    // it is).
    const Tensor* r = info.constant_input(2);
    if (r != nullptr && r->dtype() == v1::DT_FLOAT32 && r->rank() == 3) {
      TransposeWeights<float>(*r, &k->rt_);
    }
    // W likewise, for the input projection on GemmAccumulateF32 (no sgemm, whose kernels
    // oneDNN generates on a process's first call).
    const Tensor* w = info.constant_input(1);
    if (w != nullptr && w->dtype() == v1::DT_FLOAT32 && w->rank() == 3) {
      TransposeWeights<float>(*w, &k->wt_);
    }
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> x = RequireInput(ctx, 0);
    if (!x.ok()) return x.status();
    switch ((*x)->dtype()) {
      case v1::DT_FLOAT32:
        return ComputeT<float>(ctx);
      case v1::DT_FLOAT64:
        return ComputeT<double>(ctx);
      default:
        return absl::UnimplementedError(absl::StrCat(CellName(cell_), ": element type ",
                                                     DataTypeName((*x)->dtype()),
                                                     " is not supported (float, double)"));
    }
  }

 private:
  RecurrentKernel() = default;

  // Checks that optional input i, when present, has dtype `dtype` and shape `want`.
  static absl::StatusOr<const Tensor*> Optional(const KernelContext& ctx, int i, const char* name,
                                                v1::DataType dtype, const Shape& want) {
    const Tensor* t = ctx.input(i);
    if (t == nullptr) return t;
    if (t->dtype() != dtype || t->shape() != want) {
      return ctx.Invalid(absl::StrCat("input ", i, " (", name, ") is ", t->DebugString(), ", ",
                                      DataTypeName(dtype), ShapeString(want), " expected"));
    }
    return t;
  }

  // The transposed weights of `w`: those prepared at plan time, or a transposition in `local`.
  template <typename T>
  static const T* Prepared(const std::vector<float>& prepared, const Tensor& w,
                           std::vector<T>* local) {
    if constexpr (std::is_same_v<T, float>) {
      if (static_cast<int64_t>(prepared.size()) == w.num_elements()) return prepared.data();
    }
    TransposeWeights<T>(w, local);
    return local->data();
  }

  // x[0, n) = a(clip(x)) (no clipping with clip = false: LSTM's output activation).
  template <typename T>
  void Activate(const Activation& a, T* x, int64_t n, bool clip = true) const {
    if (clip && clip_ > 0) {
      const T lim = static_cast<T>(clip_);
      for (int64_t i = 0; i < n; ++i) x[i] = std::max(-lim, std::min(lim, x[i]));
    }
    if constexpr (std::is_same_v<T, float>) {
      if (a.kind == Activation::kSigmoid) return SigmoidF32(x, n);
      if (a.kind == Activation::kTanh) return TanhF32(x, n);
    }
    for (int64_t i = 0; i < n; ++i) x[i] = a(x[i]);
  }

  template <typename T>
  absl::Status ComputeT(KernelContext& ctx) const {
    const v1::DataType dt = DataTypeOf<T>();
    const Tensor& X = *ctx.input(0);
    absl::StatusOr<const Tensor*> w = RequireInput(ctx, 1);
    if (!w.ok()) return w.status();
    absl::StatusOr<const Tensor*> r = RequireInput(ctx, 2);
    if (!r.ok()) return r.status();
    const Tensor& W = **w;
    const Tensor& R = **r;
    if (X.rank() != 3) return ctx.Invalid(absl::StrCat("X must be rank 3, got ", X.DebugString()));
    const int64_t seq = layout_ == 0 ? X.dim(0) : X.dim(1);
    const int64_t batch = layout_ == 0 ? X.dim(1) : X.dim(0);
    const int64_t in = X.dim(2);
    const int64_t D = num_directions_;
    const int64_t G = NumGates(cell_);
    if (R.dtype() != dt || R.rank() != 3 || R.dim(0) != D) {
      return ctx.Invalid(
          absl::StrCat("R is ", R.DebugString(), "; [", D, ", gates*hidden, hidden] expected"));
    }
    const int64_t H = hidden_ >= 0 ? hidden_ : R.dim(2);
    if (R.shape() != Shape{D, G * H, H}) {
      return ctx.Invalid(
          absl::StrCat("R is ", R.DebugString(), ", ", ShapeString({D, G * H, H}), " expected"));
    }
    if (W.dtype() != dt || W.shape() != Shape{D, G * H, in}) {
      return ctx.Invalid(
          absl::StrCat("W is ", W.DebugString(), ", ", ShapeString({D, G * H, in}), " expected"));
    }
    absl::StatusOr<const Tensor*> b = Optional(ctx, 3, "B", dt, {D, 2 * G * H});
    if (!b.ok()) return b.status();
    const Tensor* lens_t = ctx.input(4);
    std::vector<int64_t> lens(batch, seq);
    if (lens_t != nullptr) {
      absl::StatusOr<std::vector<int64_t>> v = lens_t->ToInt64Vector();
      if (!v.ok() || static_cast<int64_t>(v->size()) != batch) {
        return ctx.Invalid(absl::StrCat("sequence_lens is ", lens_t->DebugString(), "; ", batch,
                                        " integers expected"));
      }
      for (int64_t i = 0; i < batch; ++i) {
        if ((*v)[i] < 0 || (*v)[i] > seq) {
          return ctx.Invalid(
              absl::StrCat("sequence_lens[", i, "] = ", (*v)[i], " is outside [0, ", seq, "]"));
        }
        lens[i] = (*v)[i];
      }
    }
    const Shape state_shape = layout_ == 0 ? Shape{D, batch, H} : Shape{batch, D, H};
    absl::StatusOr<const Tensor*> h0 = Optional(ctx, 5, "initial_h", dt, state_shape);
    if (!h0.ok()) return h0.status();
    absl::StatusOr<const Tensor*> c0 = nullptr;
    absl::StatusOr<const Tensor*> p = nullptr;
    if (cell_ == Cell::kLstm) {
      c0 = Optional(ctx, 6, "initial_c", dt, state_shape);
      if (!c0.ok()) return c0.status();
      p = Optional(ctx, 7, "P", dt, {D, 3 * H});
      if (!p.ok()) return p.status();
    }

    // Outputs.
    const Shape y_shape = layout_ == 0 ? Shape{seq, D, batch, H} : Shape{batch, seq, D, H};
    absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, dt, y_shape);
    if (!y.ok()) return y.status();
    T* Y = (*y)->data<T>();
    std::fill(Y, Y + (*y)->num_elements(), T(0));
    Tensor* yh = nullptr;
    Tensor* yc = nullptr;
    if (ctx.num_outputs() > 1) {
      absl::StatusOr<Tensor*> t = ctx.AllocateOutput(1, dt, state_shape);
      if (!t.ok()) return t.status();
      yh = *t;
    }
    if (ctx.num_outputs() > 2 && cell_ == Cell::kLstm) {
      absl::StatusOr<Tensor*> t = ctx.AllocateOutput(2, dt, state_shape);
      if (!t.ok()) return t.status();
      yc = *t;
    }

    const T* xp = X.data<T>();
    // The row of X (and of the projections xw) holding time step t of batch entry bb.
    auto xw_row = [&](int64_t t, int64_t bb) {
      return layout_ == 0 ? t * batch + bb : bb * seq + t;
    };
    auto state_off = [&](int64_t d, int64_t bb) {
      return (layout_ == 0 ? (d * batch + bb) : (bb * D + d)) * H;
    };
    auto y_off = [&](int64_t t, int64_t d, int64_t bb) {
      return (layout_ == 0 ? ((t * D + d) * batch + bb) : ((bb * seq + t) * D + d)) * H;
    };
    const int64_t GH = G * H;
    // W^T as [D, in, GH] (double only) and R^T as [D, H, GH] (prepared at plan time when R is a
    // float constant of the plan): the products below read contiguous rows.
    std::vector<T> wt_local, rt_local;
    const T* WT = nullptr;  // float: sgemm reads W as it is
    if constexpr (!std::is_same_v<T, float>) {
      TransposeWeights<T>(W, &wt_local);
      WT = wt_local.data();
    }
    const T* RT = Prepared<T>(rt_, R, &rt_local);
    // The input projections: seq x batch x 4H, larger than X and W together when both are thin.
    absl::StatusOr<MemoryReservation> xw_charge =
        ctx.ReserveScratch(seq * batch * GH * static_cast<int64_t>(sizeof(T)), "input projections");
    if (!xw_charge.ok()) return xw_charge.status();
    std::vector<T> xw(static_cast<size_t>(seq * batch * GH));
    std::vector<T> bias(GH), rbh(H, T(0));
    std::vector<T> h(batch * H), c(batch * H);

    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = reverse_only_ || d == 1;
      const T* WTd = WT != nullptr ? WT + d * in * GH : nullptr;
      const T* RTd = RT + d * H * GH;
      const Activation* act = &activations_[d * NumActivations(cell_)];
      // Biases: Wb + Rb, except GRU's Rbh under linear_before_reset, applied inside.
      std::fill(bias.begin(), bias.end(), T(0));
      std::fill(rbh.begin(), rbh.end(), T(0));
      if (*b != nullptr) {
        const T* bp = (*b)->data<T>() + d * 2 * GH;
        for (int64_t j = 0; j < GH; ++j) bias[j] = bp[j] + bp[GH + j];
        if (cell_ == Cell::kGru && linear_before_reset_) {
          for (int64_t j = 0; j < H; ++j) {
            bias[2 * H + j] = bp[2 * H + j];
            rbh[j] = bp[GH + 2 * H + j];
          }
        }
      }
      const T* P = *p != nullptr ? (*p)->data<T>() + d * 3 * H : nullptr;
      // Input projection bias + x * W^T for every row of X, in X's own row order (xw_row).
      for (int64_t row = 0; row < seq * batch; ++row) {
        std::copy(bias.begin(), bias.end(), xw.begin() + row * GH);
      }
      if constexpr (std::is_same_v<T, float>) {
        if (static_cast<int64_t>(wt_.size()) == W.num_elements()) {
          const float* wtd = wt_.data() + d * in * GH;
          const int64_t rows = seq * batch;
          ctx.ParallelFor((rows + 3) / 4, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, GH)),
                          [&](int64_t b0, int64_t b1) {
            const int64_t r0 = b0 * 4, r1 = std::min(rows, b1 * 4);
            GemmAccumulateF32(r1 - r0, in, GH, xp + r0 * in, in, wtd, GH, xw.data() + r0 * GH, GH);
          });
        } else {
          absl::Status st = Sgemm(ctx, false, true, seq * batch, GH, in, 1.0f, xp, in,
                                  W.data<float>() + d * GH * in, in, 1.0f, xw.data(), GH);
          if (!st.ok()) return st;
        }
      } else {
        ctx.ParallelFor(seq * batch, 16, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            Gemv<T>(in, GH, xp + row * in, WTd, GH, xw.data() + row * GH);
          }
        });
      }
      for (int64_t bb = 0; bb < batch; ++bb) {
        for (int64_t j = 0; j < H; ++j) {
          h[bb * H + j] = *h0 != nullptr ? (*h0)->data<T>()[state_off(d, bb) + j] : T(0);
          c[bb * H + j] = *c0 != nullptr ? (*c0)->data<T>()[state_off(d, bb) + j] : T(0);
        }
      }
      // Batch entries recur independently: one chunk of them per thread. With fewer entries
      // than threads, the entries run in turn and each step's recurrent product H*R^T is shared
      // out by columns instead (columns of 16, so that each thread's part stays on the vector
      // tiers; a column's arithmetic is the same whichever thread computes it, so the results
      // do not depend on the number of threads). Small products stay on one thread: sharing
      // out costs a few microseconds per step.
      const bool split = ctx.num_threads() > 1 && batch < ctx.num_threads() &&
                         H * GH >= kMinSplitRecurrentProduct;
      auto step_gemv = [&](int64_t k, int64_t n, const T* a, const T* bm, T* yv) {
        if (!split) return Gemv<T>(k, n, a, bm, GH, yv);
        ctx.ParallelFor((n + 15) / 16, 1, [&](int64_t c0, int64_t c1) {
          const int64_t j0 = c0 * 16, j1 = std::min(n, c1 * 16);
          Gemv<T>(k, j1 - j0, a, bm + j0, GH, yv + j0);
        });
      };
      auto run_entries = [&](int64_t b_begin, int64_t b_end) {
        std::vector<T> gates(GH), tmp(H);
        for (int64_t bb = b_begin; bb < b_end; ++bb) {
          T* hb = h.data() + bb * H;
          T* cb = c.data() + bb * H;
          for (int64_t s = 0; s < lens[bb]; ++s) {
            // Long sequences of one batch entry run serially: stop between time steps.
            if ((s & 63) == 0 && ctx.ShouldStop()) return;
            const int64_t t = reverse ? lens[bb] - 1 - s : s;
            const T* xg = xw.data() + xw_row(t, bb) * GH;
            std::copy(xg, xg + GH, gates.begin());
            switch (cell_) {
              case Cell::kRnn:
                step_gemv(H, H, hb, RTd, gates.data());
                Activate(act[0], gates.data(), H);
                std::copy(gates.begin(), gates.begin() + H, hb);
                break;
              case Cell::kGru: {
                // z and r from h; the candidate from r*h (or r*(h*Rh + Rbh)).
                step_gemv(H, 2 * H, hb, RTd, gates.data());
                Activate(act[0], gates.data(), 2 * H);
                const T* z = gates.data();
                const T* rg = gates.data() + H;
                T* hh = gates.data() + 2 * H;
                if (linear_before_reset_) {
                  std::copy(rbh.begin(), rbh.end(), tmp.begin());
                  step_gemv(H, H, hb, RTd + 2 * H, tmp.data());
                  for (int64_t j = 0; j < H; ++j) hh[j] += rg[j] * tmp[j];
                } else {
                  for (int64_t j = 0; j < H; ++j) tmp[j] = rg[j] * hb[j];
                  step_gemv(H, H, tmp.data(), RTd + 2 * H, hh);
                }
                Activate(act[1], hh, H);
                for (int64_t j = 0; j < H; ++j) hb[j] = (T(1) - z[j]) * hh[j] + z[j] * hb[j];
                break;
              }
              case Cell::kLstm: {
                step_gemv(H, GH, hb, RTd, gates.data());
                T* gi = gates.data();
                T* go = gates.data() + H;
                T* gf = gates.data() + 2 * H;
                T* gc = gates.data() + 3 * H;
                if (P != nullptr) {
                  for (int64_t j = 0; j < H; ++j) {
                    gi[j] += P[j] * cb[j];
                    gf[j] += P[2 * H + j] * cb[j];
                  }
                }
                Activate(act[0], gi, H);
                if (input_forget_) {
                  for (int64_t j = 0; j < H; ++j) gf[j] = T(1) - gi[j];
                } else {
                  Activate(act[0], gf, H);
                }
                Activate(act[1], gc, H);
                for (int64_t j = 0; j < H; ++j) cb[j] = gf[j] * cb[j] + gi[j] * gc[j];
                if (P != nullptr) {
                  for (int64_t j = 0; j < H; ++j) go[j] += P[H + j] * cb[j];
                }
                Activate(act[0], go, H);
                std::copy(cb, cb + H, tmp.begin());
                Activate(act[2], tmp.data(), H, /*clip=*/false);
                for (int64_t j = 0; j < H; ++j) hb[j] = go[j] * tmp[j];
                break;
              }
            }
            std::copy(hb, hb + H, Y + y_off(t, d, bb));
          }
          if (yh != nullptr) std::copy(hb, hb + H, yh->data<T>() + state_off(d, bb));
          if (yc != nullptr) std::copy(cb, cb + H, yc->data<T>() + state_off(d, bb));
        }
      };
      if (split) {
        run_entries(0, batch);
      } else {
        ctx.ParallelFor(batch, 1, run_entries);
      }
    }
    return absl::OkStatus();
  }

  Cell cell_ = Cell::kRnn;
  int64_t hidden_ = -1;
  int64_t layout_ = 0;
  int num_directions_ = 1;
  bool reverse_only_ = false;
  float clip_ = 0;  // 0: no clipping
  bool linear_before_reset_ = false;
  bool input_forget_ = false;
  std::vector<Activation> activations_;  // per direction, NumActivations each
  // R as [D, H, GH] and W as [D, in, GH] when they are float constants of the plan.
  std::vector<float> rt_, wt_;
};

}  // namespace

absl::Status RegisterRnnKernels(KernelRegistry& registry) {
  absl::Status s;
  for (Cell cell : {Cell::kRnn, Cell::kGru, Cell::kLstm}) {
    s.Update(registry.Register(CellName(cell), KernelFactory([cell](const KernelInfo& info) {
                                 return RecurrentKernel::Create(cell, info);
                               })));
  }
  return s;
}

}  // namespace graphopt::runtime
