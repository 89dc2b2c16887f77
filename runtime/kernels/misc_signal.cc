// Signal processing kernels (opset 17): DFT, STFT, the Hann/Hamming/Blackman windows and
// MelWeightMatrix. Transforms are direct O(N^2) sums in double with precomputed twiddles.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

absl::Status RegisterMiscSignalKernels(KernelRegistry& registry);

namespace {

constexpr double kPi = 3.14159265358979323846;
// Largest transform length (the direct sum is quadratic) and mel matrix size accepted.
constexpr int64_t kMaxTransform = int64_t{1} << 22;

// A scalar integer input; INVALID_ARGUMENT naming `what` otherwise.
absl::StatusOr<int64_t> ScalarInt(const KernelContext& ctx, int i, const char* what) {
  const Tensor* t = ctx.input(i);
  if (t == nullptr || t->num_elements() != 1 || !IsInteger(t->dtype())) {
    return ctx.Invalid(absl::StrCat(what, " (input ", i, ") must be one integer"));
  }
  return t->ElementAsInt64(0);
}

// out[k] (k < out_len) = sum_{n < N} in[n] * exp(sign * 2 pi i k n / N), `in` given as
// (re, im) pairs of which the first `avail` exist (the rest are zero padding).
// O(out_len * avail), up to 2^44 for one transform: the stop token is polled every 64 bins
// (false then, the output unfinished).
bool Transform(const KernelContext& ctx, const std::vector<double>& re,
               const std::vector<double>& im, int64_t avail, int64_t N, int64_t out_len,
               bool inverse, const std::vector<double>& cos_t, const std::vector<double>& sin_t,
               double* out_re, double* out_im) {
  const double sign = inverse ? 1 : -1;
  for (int64_t k = 0; k < out_len; ++k) {
    if ((k & 63) == 0 && ctx.ShouldStop()) return false;
    double sr = 0, si = 0;
    for (int64_t n = 0; n < avail && n < N; ++n) {
      const int64_t idx = (k * n) % N;
      const double c = cos_t[idx], s = sign * sin_t[idx];
      sr += re[n] * c - im[n] * s;
      si += re[n] * s + im[n] * c;
    }
    if (inverse) {
      sr /= static_cast<double>(N);
      si /= static_cast<double>(N);
    }
    out_re[k] = sr;
    out_im[k] = si;
  }
  return true;
}

void Twiddles(int64_t N, std::vector<double>* c, std::vector<double>* s) {
  c->resize(N);
  s->resize(N);
  for (int64_t i = 0; i < N; ++i) {
    (*c)[i] = std::cos(2 * kPi * static_cast<double>(i) / static_cast<double>(N));
    (*s)[i] = std::sin(2 * kPi * static_cast<double>(i) / static_cast<double>(N));
  }
}

absl::Status DftKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const int r = x.rank();
  if (r < 2 || (x.dim(r - 1) != 1 && x.dim(r - 1) != 2)) {
    return ctx.Invalid(absl::StrCat("input must end in a dim of 1 (real) or 2 (complex), got ",
                                    x.DebugString()));
  }
  const int64_t axis_attr = ctx.info().GetInt("axis", 1);
  absl::StatusOr<int> axis = NormalizeAxis(axis_attr, r, ctx.info());
  if (!axis.ok()) return axis.status();
  if (*axis == r - 1) return ctx.Invalid("attribute 'axis' may not be the complex dim");
  const bool inverse = ctx.info().GetInt("inverse", 0) != 0;
  const bool onesided = ctx.info().GetInt("onesided", 0) != 0;
  const int64_t n_in = x.dim(*axis);
  int64_t N = n_in;
  if (ctx.input(1) != nullptr) {
    absl::StatusOr<int64_t> len = ScalarInt(ctx, 1, "dft_length");
    if (!len.ok()) return len.status();
    N = *len;
  }
  if (N < 1 || N > kMaxTransform) {
    return ctx.Invalid(absl::StrCat("dft_length must be in [1, ", kMaxTransform, "], got ", N));
  }
  const int64_t out_len = onesided ? N / 2 + 1 : N;
  const int64_t comp = x.dim(r - 1);
  Shape out_shape = x.shape();
  out_shape[*axis] = out_len;
  out_shape[r - 1] = 2;
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < *axis; ++i) outer *= x.dim(i);
  for (int i = *axis + 1; i < r - 1; ++i) inner *= x.dim(i);
  std::vector<double> cos_t, sin_t;
  Twiddles(N, &cos_t, &sin_t);
  return DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), out_shape);
    if (!out.ok()) return out.status();
    const T* xp = x.data<T>();
    T* op = (*out)->data<T>();
    std::vector<double> re(n_in), im(n_in), ore(out_len), oim(out_len);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        for (int64_t n = 0; n < n_in; ++n) {
          const T* e = xp + ((o * n_in + n) * inner + i) * comp;
          re[n] = static_cast<double>(ToCompute(e[0]));
          im[n] = comp == 2 ? static_cast<double>(ToCompute(e[1])) : 0;
        }
        if (!Transform(ctx, re, im, n_in, N, out_len, inverse, cos_t, sin_t, ore.data(),
                       oim.data())) {
          return absl::OkStatus();  // stopped: the executor returns the token's status
        }
        for (int64_t k = 0; k < out_len; ++k) {
          T* e = op + ((o * out_len + k) * inner + i) * 2;
          e[0] = FromCompute<T>(static_cast<ComputeType<T>>(ore[k]));
          e[1] = FromCompute<T>(static_cast<ComputeType<T>>(oim[k]));
        }
      }
    }
    return absl::OkStatus();
  });
}

absl::Status StftKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> st = RequireInput(ctx, 0);
  if (!st.ok()) return st.status();
  const Tensor& sig = **st;
  if (sig.rank() != 3 || (sig.dim(2) != 1 && sig.dim(2) != 2)) {
    return ctx.Invalid(absl::StrCat("signal must be [batch, length, 1 or 2], got ",
                                    sig.DebugString()));
  }
  absl::StatusOr<int64_t> step = ScalarInt(ctx, 1, "frame_step");
  if (!step.ok()) return step.status();
  const Tensor* window = ctx.input(2);
  int64_t frame_length = -1;
  if (ctx.input(3) != nullptr) {
    absl::StatusOr<int64_t> fl = ScalarInt(ctx, 3, "frame_length");
    if (!fl.ok()) return fl.status();
    frame_length = *fl;
  }
  if (window != nullptr) {
    if (window->rank() != 1 || !IsFloatingPoint(window->dtype())) {
      return ctx.Invalid(absl::StrCat("window must be 1-D floating point, got ",
                                      window->DebugString()));
    }
    if (frame_length >= 0 && frame_length != window->dim(0)) {
      return ctx.Invalid(absl::StrCat("frame_length ", frame_length, " != window length ",
                                      window->dim(0)));
    }
    frame_length = window->dim(0);
  }
  const int64_t len = sig.dim(1);
  if (frame_length < 1 || frame_length > len || *step < 1) {
    return ctx.Invalid(absl::StrCat("frame_length ", frame_length, " and frame_step ", *step,
                                    " do not fit a signal of length ", len));
  }
  const bool onesided = ctx.info().GetInt("onesided", 1) != 0 && sig.dim(2) == 1;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  const int64_t frames = 1 + (len - frame_length) / *step;
  const int64_t batch = sig.dim(0), comp = sig.dim(2);
  std::vector<double> win(frame_length, 1.0);
  if (window != nullptr) {
    for (int64_t i = 0; i < frame_length; ++i) win[i] = window->ElementAsDouble(i);
  }
  std::vector<double> cos_t, sin_t;
  Twiddles(frame_length, &cos_t, &sin_t);
  return DispatchFloat(sig.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, sig.dtype(), {batch, frames, bins, 2});
    if (!out.ok()) return out.status();
    const T* sp = sig.data<T>();
    T* op = (*out)->data<T>();
    std::vector<double> re(frame_length), im(frame_length), ore(bins), oim(bins);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t n = 0; n < frame_length; ++n) {
          const T* e = sp + (b * len + f * *step + n) * comp;
          re[n] = static_cast<double>(ToCompute(e[0])) * win[n];
          im[n] = comp == 2 ? static_cast<double>(ToCompute(e[1])) * win[n] : 0;
        }
        if (!Transform(ctx, re, im, frame_length, frame_length, bins, false, cos_t, sin_t,
                       ore.data(), oim.data())) {
          return absl::OkStatus();  // stopped: the executor returns the token's status
        }
        T* o = op + ((b * frames + f) * bins) * 2;
        for (int64_t k = 0; k < bins; ++k) {
          o[2 * k] = FromCompute<T>(static_cast<ComputeType<T>>(ore[k]));
          o[2 * k + 1] = FromCompute<T>(static_cast<ComputeType<T>>(oim[k]));
        }
      }
    }
    return absl::OkStatus();
  });
}

// Writes values v(i) (double) into output 0 of dtype `output_datatype` (default float32).
template <typename Fn>
absl::Status WriteDoubles(KernelContext& ctx, Shape shape, Fn v) {
  const v1::DataType dtype =
      static_cast<v1::DataType>(ctx.info().GetInt("output_datatype", v1::DT_FLOAT32));
  return DispatchNumeric(dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, dtype, shape);
    if (!out.ok()) return out.status();
    T* o = (*out)->data<T>();
    for (int64_t i = 0; i < (*out)->num_elements(); ++i) {
      o[i] = FromCompute<T>(static_cast<ComputeType<T>>(v(i)));
    }
    return absl::OkStatus();
  });
}

// Generalised cosine windows: a0 - a1 cos(2 pi n / D) + a2 cos(4 pi n / D), D = size for the
// periodic form, size - 1 for the symmetric one.
absl::Status CosineWindow(KernelContext& ctx, double a0, double a1, double a2) {
  absl::StatusOr<int64_t> size = ScalarInt(ctx, 0, "size");
  if (!size.ok()) return size.status();
  if (*size < 0) return ctx.Invalid(absl::StrCat("size must be non-negative, got ", *size));
  const bool periodic = ctx.info().GetInt("periodic", 1) != 0;
  const double d = periodic ? static_cast<double>(*size) : static_cast<double>(*size - 1);
  return WriteDoubles(ctx, {*size}, [&](int64_t n) {
    if (d <= 0) return 1.0;
    const double t = 2 * kPi * static_cast<double>(n) / d;
    return a0 - a1 * std::cos(t) + a2 * std::cos(2 * t);
  });
}

absl::Status HannWindowKernel(KernelContext& ctx) { return CosineWindow(ctx, 0.5, 0.5, 0); }
absl::Status HammingWindowKernel(KernelContext& ctx) {
  return CosineWindow(ctx, 25.0 / 46.0, 1 - 25.0 / 46.0, 0);
}
absl::Status BlackmanWindowKernel(KernelContext& ctx) {
  return CosineWindow(ctx, 0.42, 0.5, 0.08);
}

absl::Status MelWeightMatrixKernel(KernelContext& ctx) {
  absl::StatusOr<int64_t> mel_bins = ScalarInt(ctx, 0, "num_mel_bins");
  if (!mel_bins.ok()) return mel_bins.status();
  absl::StatusOr<int64_t> dft_length = ScalarInt(ctx, 1, "dft_length");
  if (!dft_length.ok()) return dft_length.status();
  absl::StatusOr<int64_t> rate = ScalarInt(ctx, 2, "sample_rate");
  if (!rate.ok()) return rate.status();
  for (int i = 3; i < 5; ++i) {
    const Tensor* t = ctx.input(i);
    if (t == nullptr || t->num_elements() != 1 || !IsFloatingPoint(t->dtype())) {
      return ctx.Invalid(absl::StrCat("input ", i, " must be one floating-point value"));
    }
  }
  const double lower = ctx.input(3)->ElementAsDouble(0);
  const double upper = ctx.input(4)->ElementAsDouble(0);
  // Written so that NaN edges fail too, and an infinite upper edge.
  if (*mel_bins < 1 || *dft_length < 1 || *rate < 1 || !(lower >= 0) || !(upper >= lower) ||
      !std::isfinite(upper)) {
    return ctx.Invalid("num_mel_bins, dft_length and sample_rate must be positive and "
                       "0 <= lower_edge_hertz <= upper_edge_hertz");
  }
  if (*dft_length > kMaxTransform || *mel_bins > kMaxTransform ||
      (*dft_length / 2 + 1) * *mel_bins > kMaxTransform) {
    return ctx.Invalid(absl::StrCat("a ", *dft_length / 2 + 1, " x ", *mel_bins,
                                    " mel weight matrix is too large"));
  }
  const int64_t spec_bins = *dft_length / 2 + 1;
  const int64_t nb = *mel_bins;
  auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = to_mel(lower), high_mel = to_mel(upper);
  const double step = (high_mel - low_mel) / static_cast<double>(nb + 2);
  std::vector<int64_t> bins(nb + 2);
  for (int64_t i = 0; i < nb + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (i * step + low_mel) / 2595) - 1);
    // Clamped in double: a large upper edge gives a bin past int64, whose conversion is undefined.
    const double bin = std::floor((*dft_length + 1) * hz / *rate);
    bins[i] = !(bin >= 0) ? 0
              : bin >= static_cast<double>(spec_bins - 1) ? spec_bins - 1
                                                          : static_cast<int64_t>(bin);
  }
  absl::StatusOr<MemoryReservation> table =
      ctx.ReserveScratch(spec_bins * nb * static_cast<int64_t>(sizeof(double)), "weights");
  if (!table.ok()) return table.status();
  std::vector<double> w(spec_bins * nb, 0.0);
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t lo = bins[i], center = bins[i + 1], hi = bins[i + 2];
    if (center == lo) {
      w[center * nb + i] = 1;
    } else {
      for (int64_t j = lo; j <= center; ++j) {
        w[j * nb + i] = static_cast<double>(j - lo) / static_cast<double>(center - lo);
      }
    }
    for (int64_t j = center; j < hi; ++j) {
      w[j * nb + i] = static_cast<double>(hi - j) / static_cast<double>(hi - center);
    }
  }
  return WriteDoubles(ctx, {spec_bins, nb}, [&](int64_t i) { return w[i]; });
}

}  // namespace

absl::Status RegisterMiscSignalKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("DFT", DftKernel));
  s.Update(registry.Register("STFT", StftKernel));
  s.Update(registry.Register("HannWindow", HannWindowKernel));
  s.Update(registry.Register("HammingWindow", HammingWindowKernel));
  s.Update(registry.Register("BlackmanWindow", BlackmanWindowKernel));
  s.Update(registry.Register("MelWeightMatrix", MelWeightMatrixKernel));
  return s;
}

}  // namespace graphopt::runtime
