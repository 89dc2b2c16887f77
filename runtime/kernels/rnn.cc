// Recurrent layers: RNN, GRU and LSTM (ONNX opsets 7-14: directions, activations with
// alpha/beta, clip, sequence_lens, initial states, peepholes, GRU's linear_before_reset,
// LSTM's input_forget, layout 0/1). Float and double.
//
// The input projection X*W^T + biases is one pass over all time steps up front; each step then
// adds H_{t-1}*R^T per batch entry (dot products over contiguous rows).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

absl::Status RegisterRnnKernels(KernelRegistry& registry);

namespace {

enum class Cell { kRnn, kGru, kLstm };

int NumGates(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 3 : 4; }
int NumActivations(Cell c) { return c == Cell::kRnn ? 1 : c == Cell::kGru ? 2 : 3; }
const char* CellName(Cell c) { return c == Cell::kRnn ? "RNN" : c == Cell::kGru ? "GRU" : "LSTM"; }

// One activation function of the recurrence with its parameters.
struct Activation {
  enum Kind {
    kRelu,
    kTanh,
    kSigmoid,
    kAffine,
    kLeakyRelu,
    kThresholdedRelu,
    kScaledTanh,
    kHardSigmoid,
    kElu,
    kSoftsign,
    kSoftplus
  };
  Kind kind = kTanh;
  float alpha = 0;
  float beta = 0;

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

// Parses `name` (case-insensitive ONNX spelling); uses alpha/beta from the lists at *ai / *bi
// when the function takes them (advancing the cursors), its defaults otherwise.
bool ParseActivation(const std::string& name, const std::vector<float>& alphas,
                     const std::vector<float>& betas, size_t* ai, size_t* bi, Activation* out) {
  const std::string n = absl::AsciiStrToLower(name);
  struct Spec {
    const char* name;
    Activation::Kind kind;
    bool has_alpha, has_beta;
    float alpha, beta;
  };
  static constexpr Spec kSpecs[] = {
      {"relu", Activation::kRelu, false, false, 0, 0},
      {"tanh", Activation::kTanh, false, false, 0, 0},
      {"sigmoid", Activation::kSigmoid, false, false, 0, 0},
      {"affine", Activation::kAffine, true, true, 1, 0},
      {"leakyrelu", Activation::kLeakyRelu, true, false, 0.01f, 0},
      {"thresholdedrelu", Activation::kThresholdedRelu, true, false, 1, 0},
      {"scaledtanh", Activation::kScaledTanh, true, true, 1, 1},
      {"hardsigmoid", Activation::kHardSigmoid, true, true, 0.2f, 0.5f},
      {"elu", Activation::kElu, true, false, 1, 0},
      {"softsign", Activation::kSoftsign, false, false, 0, 0},
      {"softplus", Activation::kSoftplus, false, false, 0, 0},
  };
  for (const Spec& s : kSpecs) {
    if (n != s.name) continue;
    out->kind = s.kind;
    out->alpha = s.alpha;
    out->beta = s.beta;
    if (s.has_alpha && *ai < alphas.size()) out->alpha = alphas[(*ai)++];
    if (s.has_beta && *bi < betas.size()) out->beta = betas[(*bi)++];
    return true;
  }
  return false;
}

// dot(a, b) over n contiguous elements.
template <typename T>
inline T Dot(const T* a, const T* b, int64_t n) {
  T s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
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
      if (!ParseActivation(n, alphas, betas, &ai, &bi, &a)) {
        return info.Unimplemented(absl::StrCat("activation '", n, "' is not supported"));
      }
      k->activations_.push_back(a);
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
    auto x_row = [&](int64_t t, int64_t bb) {
      return xp + (layout_ == 0 ? (t * batch + bb) : (bb * seq + t)) * in;
    };
    auto state_off = [&](int64_t d, int64_t bb) {
      return (layout_ == 0 ? (d * batch + bb) : (bb * D + d)) * H;
    };
    auto y_off = [&](int64_t t, int64_t d, int64_t bb) {
      return (layout_ == 0 ? ((t * D + d) * batch + bb) : ((bb * seq + t) * D + d)) * H;
    };
    const int64_t GH = G * H;
    std::vector<T> xw(static_cast<size_t>(seq * batch * GH));
    std::vector<T> bias(GH), rbh(H, T(0));
    std::vector<T> h(batch * H), c(batch * H);
    const T clip = static_cast<T>(clip_);
    auto clamp = [&](T v) { return clip_ > 0 ? std::max(-clip, std::min(clip, v)) : v; };

    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = reverse_only_ || d == 1;
      const T* Wd = W.data<T>() + d * GH * in;
      const T* Rd = R.data<T>() + d * GH * H;
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
      // Input projection for every (t, batch) row.
      ctx.ParallelFor(seq * batch, 16, [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t t = row / batch, bb = row % batch;
          const T* xr = x_row(t, bb);
          T* o = xw.data() + row * GH;
          for (int64_t j = 0; j < GH; ++j) o[j] = Dot(xr, Wd + j * in, in) + bias[j];
        }
      });
      for (int64_t bb = 0; bb < batch; ++bb) {
        for (int64_t j = 0; j < H; ++j) {
          h[bb * H + j] = *h0 != nullptr ? (*h0)->data<T>()[state_off(d, bb) + j] : T(0);
          c[bb * H + j] = *c0 != nullptr ? (*c0)->data<T>()[state_off(d, bb) + j] : T(0);
        }
      }
      // Batch entries recur independently: one chunk of them per thread.
      ctx.ParallelFor(batch, 1, [&](int64_t b_begin, int64_t b_end) {
        std::vector<T> gates(GH), tmp(H);
        for (int64_t bb = b_begin; bb < b_end; ++bb) {
          T* hb = h.data() + bb * H;
          T* cb = c.data() + bb * H;
          for (int64_t s = 0; s < lens[bb]; ++s) {
            const int64_t t = reverse ? lens[bb] - 1 - s : s;
            const T* xg = xw.data() + (t * batch + bb) * GH;
            switch (cell_) {
              case Cell::kRnn:
                for (int64_t j = 0; j < H; ++j) gates[j] = xg[j] + Dot(hb, Rd + j * H, H);
                for (int64_t j = 0; j < H; ++j) hb[j] = act[0](clamp(gates[j]));
                break;
              case Cell::kGru: {
                // z and r.
                for (int64_t j = 0; j < 2 * H; ++j) {
                  gates[j] = act[0](clamp(xg[j] + Dot(hb, Rd + j * H, H)));
                }
                const T* z = gates.data();
                const T* rg = gates.data() + H;
                const T* Rh = Rd + 2 * H * H;
                T* hh = gates.data() + 2 * H;
                if (linear_before_reset_) {
                  for (int64_t j = 0; j < H; ++j) {
                    hh[j] =
                        act[1](clamp(xg[2 * H + j] + rg[j] * (Dot(hb, Rh + j * H, H) + rbh[j])));
                  }
                } else {
                  for (int64_t j = 0; j < H; ++j) tmp[j] = rg[j] * hb[j];
                  for (int64_t j = 0; j < H; ++j) {
                    hh[j] = act[1](clamp(xg[2 * H + j] + Dot(tmp.data(), Rh + j * H, H)));
                  }
                }
                for (int64_t j = 0; j < H; ++j) hb[j] = (T(1) - z[j]) * hh[j] + z[j] * hb[j];
                break;
              }
              case Cell::kLstm: {
                for (int64_t j = 0; j < GH; ++j) gates[j] = xg[j] + Dot(hb, Rd + j * H, H);
                T* gi = gates.data();
                T* go = gates.data() + H;
                T* gf = gates.data() + 2 * H;
                T* gc = gates.data() + 3 * H;
                for (int64_t j = 0; j < H; ++j) {
                  const T i = act[0](clamp(gi[j] + (P ? P[j] * cb[j] : T(0))));
                  const T f = input_forget_
                                  ? T(1) - i
                                  : act[0](clamp(gf[j] + (P ? P[2 * H + j] * cb[j] : T(0))));
                  const T cc = act[1](clamp(gc[j]));
                  const T cn = f * cb[j] + i * cc;
                  const T o = act[0](clamp(go[j] + (P ? P[H + j] * cn : T(0))));
                  cb[j] = cn;
                  hb[j] = o * act[2](cn);
                }
                break;
              }
            }
            std::copy(hb, hb + H, Y + y_off(t, d, bb));
          }
          if (yh != nullptr) std::copy(hb, hb + H, yh->data<T>() + state_off(d, bb));
          if (yc != nullptr) std::copy(cb, cb + H, yc->data<T>() + state_off(d, bb));
        }
      });
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
