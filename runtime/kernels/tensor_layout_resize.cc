// Tensor-family kernels, part "layout", continued (see tensor_layout.cc): Pad (constant,
// reflect, edge, wrap; negative pads crop), Resize (opsets 10-19: nearest / linear / cubic,
// every coordinate_transformation_mode, scales or sizes, axes, keep_aspect_ratio_policy) and
// Upsample (opsets 7-9).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/tensor_util.h"

namespace graphopt::runtime {

absl::Status RegisterTensorLayoutResizeKernels(KernelRegistry& registry);

namespace {

// Elements per parallel chunk.
constexpr int64_t kGrain = 1 << 14;

// `v` as element type T (strings: empty; bool: v != 0).
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, std::string>) {
    return std::string();
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else {
    return FromCompute<T>(static_cast<ComputeType<T>>(v));
  }
}

// An UNIMPLEMENTED status from a dtype dispatch, with the node label in front.
absl::Status Labeled(const KernelContext& ctx, absl::Status status) {
  if (status.code() != absl::StatusCode::kUnimplemented) return status;
  return ctx.info().Unimplemented(status.message());
}

// --- Pad ------------------------------------------------------------------------------------

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

// The source index of output index o along a dim of n elements padded by `before`, or -1
// for the constant value.
int64_t PadSource(int64_t o, int64_t before, int64_t n, PadMode mode) {
  int64_t i = o - before;
  if (i >= 0 && i < n) return i;
  switch (mode) {
    case PadMode::kConstant: return -1;
    case PadMode::kEdge: return i < 0 ? 0 : n - 1;
    case PadMode::kWrap: return ((i % n) + n) % n;
    case PadMode::kReflect: {
      if (n == 1) return 0;
      const int64_t period = 2 * (n - 1);
      int64_t j = ((i % period) + period) % period;
      return j >= n ? period - j : j;
    }
  }
  return -1;
}

absl::Status PadKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const KernelInfo& info = ctx.info();
  const int rank = x.rank();
  const int64_t opset = info.opset();
  std::vector<int64_t> pads;
  double value = 0;
  const Tensor* value_tensor = nullptr;
  std::vector<int64_t> axes;
  if (opset > 0 && opset < 11) {
    pads = info.GetInts(opset < 2 ? "paddings" : "pads");
    if (!info.has_attr(opset < 2 ? "paddings" : "pads")) {
      return ctx.Invalid(absl::StrCat("attribute '", opset < 2 ? "paddings" : "pads",
                                      "' is required"));
    }
    value = info.GetFloat("value", 0);
  } else {
    absl::StatusOr<std::vector<int64_t>> p = InputInts(ctx, 1);
    if (!p.ok()) return p.status();
    pads = *std::move(p);
    value_tensor = ctx.input(2);
    if (value_tensor != nullptr) {
      if (value_tensor->dtype() != x.dtype() || value_tensor->num_elements() > 1) {
        return ctx.Invalid(absl::StrCat("constant_value ", value_tensor->DebugString(),
                                        " must be a scalar of the data's type ",
                                        DataTypeName(x.dtype())));
      }
      if (value_tensor->num_elements() == 0) value_tensor = nullptr;
    }
    if (ctx.input(3) != nullptr) {
      absl::StatusOr<std::vector<int64_t>> a = InputInts(ctx, 3);
      if (!a.ok()) return a.status();
      axes = *std::move(a);
    }
  }
  const std::string mode_name = info.GetString("mode", "constant");
  PadMode mode;
  if (mode_name == "constant") {
    mode = PadMode::kConstant;
  } else if (mode_name == "reflect") {
    mode = PadMode::kReflect;
  } else if (mode_name == "edge") {
    mode = PadMode::kEdge;
  } else if (mode_name == "wrap") {
    mode = PadMode::kWrap;
  } else {
    return ctx.Invalid(absl::StrCat("attribute 'mode' is '", mode_name,
                                    "' (constant, reflect, edge or wrap)"));
  }
  if (axes.empty()) {
    for (int k = 0; k < rank; ++k) axes.push_back(k);
  }
  const size_t na = axes.size();
  if (pads.size() != 2 * na) {
    return ctx.Invalid(absl::StrCat("pads has ", pads.size(), " values, expected ", 2 * na,
                                    " for input ", x.DebugString()));
  }
  for (int64_t v : pads) {
    if (v > (int64_t{1} << 40) || v < -(int64_t{1} << 40)) {
      return ctx.Invalid(absl::StrCat("pads value ", v, " is out of range"));
    }
  }
  std::vector<int64_t> before(rank, 0), after(rank, 0);
  for (size_t i = 0; i < na; ++i) {
    int64_t a = axes[i];
    if (a < -rank || a >= rank) {
      return ctx.Invalid(absl::StrCat("axes value ", a, " is out of range for rank ", rank));
    }
    if (a < 0) a += rank;
    before[a] = pads[i];
    after[a] = pads[i + na];
  }
  Shape out_shape(rank);
  for (int k = 0; k < rank; ++k) {
    out_shape[k] = x.dim(k) + before[k] + after[k];
    if (out_shape[k] < 0) {
      return ctx.Invalid(absl::StrCat("pads [", absl::StrJoin(pads, ","), "] crop dim ", k,
                                      " of ", x.DebugString(), " below zero"));
    }
    const bool reaches_out = before[k] > 0 || after[k] > 0;
    if (reaches_out && x.dim(k) == 0 && mode != PadMode::kConstant && out_shape[k] > 0) {
      return ctx.Invalid(absl::StrCat("mode '", mode_name, "' cannot pad empty dim ", k, " of ",
                                      x.DebugString()));
    }
  }
  absl::StatusOr<Tensor*> out_or = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!out_or.ok()) return out_or.status();
  Tensor& out = **out_or;
  if (out.num_elements() == 0) return absl::OkStatus();
  return Labeled(ctx, DispatchAll(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const T fill = value_tensor != nullptr ? TypedData<T>(*value_tensor)[0] : FromDouble<T>(value);
    const T* src = TypedData<T>(x);
    T* dst = TypedData<T>(out);
    if (rank == 0) {
      dst[0] = src[0];
      return absl::OkStatus();
    }
    // Source index per output index, per dim (-1: the constant).
    std::vector<std::vector<int64_t>> maps(rank);
    for (int k = 0; k < rank; ++k) {
      maps[k].resize(out_shape[k]);
      for (int64_t o = 0; o < out_shape[k]; ++o) {
        maps[k][o] = PadSource(o, before[k], x.dim(k), mode);
      }
    }
    std::vector<int64_t> in_strides = Strides(x.shape());
    const int64_t len = out_shape[rank - 1];
    const int64_t n_last = x.dim(rank - 1);
    const int64_t lo = std::clamp<int64_t>(before[rank - 1], 0, len);
    const int64_t hi = std::clamp<int64_t>(before[rank - 1] + n_last, lo, len);
    const std::vector<int64_t>& last_map = maps[rank - 1];
    const int64_t rows = out.num_elements() / len;
    ctx.ParallelFor(rows, std::max<int64_t>(1, kGrain / len), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        int64_t rem = r, off = 0;
        bool constant = false;
        for (int k = rank - 2; k >= 0; --k) {
          const int64_t i = maps[k][rem % out_shape[k]];
          rem /= out_shape[k];
          if (i < 0) {
            constant = true;
            break;
          }
          off += i * in_strides[k];
        }
        T* d = dst + r * len;
        if (constant) {
          std::fill_n(d, len, fill);
          continue;
        }
        const T* s = src + off;
        for (int64_t o = 0; o < lo; ++o) d[o] = last_map[o] < 0 ? fill : s[last_map[o]];
        if (hi > lo) std::copy_n(s + (lo - before[rank - 1]), hi - lo, d + lo);
        for (int64_t o = hi; o < len; ++o) d[o] = last_map[o] < 0 ? fill : s[last_map[o]];
      }
    });
    return absl::OkStatus();
  }));
}

// --- Resize ---------------------------------------------------------------------------------

enum class Coord {
  kHalfPixel,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
  kTfCropAndResize,
  kHalfPixelSymmetric,
};
enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class Interp { kNearest, kLinear, kCubic };

struct ResizeParams {
  Interp mode = Interp::kNearest;
  Coord coord = Coord::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
  bool antialias = false;  // opset 18: stretch linear/cubic filters when downsampling
};

// The source coordinate of output index x along one axis, or NaN when it falls outside the
// crop (tf_crop_and_resize). `out_len_f` is scale * in_len, not rounded (the ONNX reference
// uses it so, e.g. for align_corners); `out_len` is the output length.
double SourceCoordinate(int64_t x, int64_t in_len, int64_t out_len, double out_len_f,
                        double scale, double roi_start, double roi_end, Coord coord) {
  const double xd = static_cast<double>(x);
  switch (coord) {
    case Coord::kHalfPixel: return (xd + 0.5) / scale - 0.5;
    case Coord::kHalfPixelSymmetric: {
      const double adjust = static_cast<double>(out_len) / out_len_f;
      const double offset = in_len / 2.0 * (1 - adjust);
      return offset + (xd + 0.5) / scale - 0.5;
    }
    case Coord::kPytorchHalfPixel: return out_len_f > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
    case Coord::kAlignCorners:
      return out_len_f == 1 ? 0.0 : xd * (in_len - 1) / (out_len_f - 1);
    case Coord::kAsymmetric: return xd / scale;
    case Coord::kTfHalfPixelForNn: return (xd + 0.5) / scale;
    case Coord::kTfCropAndResize: {
      double v = out_len_f == 1 ? (roi_end - roi_start) * (in_len - 1) / 2
                                : xd * (roi_end - roi_start) * (in_len - 1) / (out_len_f - 1);
      v += roi_start * (in_len - 1);
      if (v < 0 || v > in_len - 1) return std::nan("");
      return v;
    }
  }
  return 0;
}

// The interpolation taps of one axis: output index o reads `count` consecutive source
// positions starting at first[o] (indices clamped to the axis, weights in weight[o * count]);
// extrapolate[o] marks outputs that take the extrapolation value instead.
struct AxisTaps {
  int count = 1;
  std::vector<int64_t> index;  // [out_len * count], clamped
  std::vector<double> weight;  // [out_len * count]
  std::vector<bool> extrapolate;
};

double CubicKernel(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Half-width m of the filter along an axis of `scale` (> 0): taps at offsets 1-m..m from the
// left neighbour. Antialiasing stretches linear and cubic filters by 1/scale when downsampling,
// so m can be as large as the input axis: a double, for the caller to bound before use.
double FilterHalfWidth(double scale, const ResizeParams& p) {
  const double s = p.antialias ? std::min(scale, 1.0) : 1.0;
  if (p.mode == Interp::kLinear) return -std::floor(-1 / s);
  if (p.mode == Interp::kCubic) return -std::floor(-2 / s);
  return 1;
}

AxisTaps ComputeTaps(int64_t in_len, int64_t out_len, double out_len_f, double scale,
                     double roi_start, double roi_end, const ResizeParams& p) {
  AxisTaps t;
  const double s = p.antialias ? std::min(scale, 1.0) : 1.0;
  const int64_t m = static_cast<int64_t>(FilterHalfWidth(scale, p));
  t.count = p.mode == Interp::kNearest ? 1 : static_cast<int>(2 * m);
  t.index.assign(out_len * t.count, 0);
  t.weight.assign(out_len * t.count, 0.0);
  t.extrapolate.assign(out_len, false);
  auto clamp = [in_len](int64_t i) { return std::clamp<int64_t>(i, 0, in_len - 1); };
  for (int64_t o = 0; o < out_len; ++o) {
    const double xo =
        SourceCoordinate(o, in_len, out_len, out_len_f, scale, roi_start, roi_end, p.coord);
    if (std::isnan(xo)) {
      t.extrapolate[o] = true;
      continue;
    }
    // The left neighbour and the ratio in (0, 1]; an integer coordinate sits at ratio 1.
    double base = std::floor(xo);
    if (base == xo) base -= 1;
    const double r = xo - base;
    const int64_t b = static_cast<int64_t>(base);
    int64_t* idx = t.index.data() + o * t.count;
    double* w = t.weight.data() + o * t.count;
    if (p.mode == Interp::kNearest) {
      int64_t i = b + 1;
      if (r != 1) {
        switch (p.nearest) {
          case Nearest::kRoundPreferFloor: i = r <= 0.5 ? b : b + 1; break;
          case Nearest::kRoundPreferCeil: i = r < 0.5 ? b : b + 1; break;
          case Nearest::kFloor: i = b; break;
          case Nearest::kCeil: i = b + 1; break;
        }
      }
      idx[0] = clamp(i);
      w[0] = 1;
      continue;
    }
    double sum = 0;
    for (int k = 0; k < t.count; ++k) {
      const int64_t off = 1 - m + k;
      const double d = (static_cast<double>(off) - r) * s;
      w[k] = p.mode == Interp::kLinear ? std::clamp(1 - std::fabs(d), 0.0, 1.0)
                                       : CubicKernel(d, p.cubic_a);
      sum += w[k];
    }
    if (p.antialias && sum != 0) {
      for (int k = 0; k < t.count; ++k) w[k] /= sum;
    }
    sum = 0;
    for (int k = 0; k < t.count; ++k) {
      const int64_t i = b + 1 - m + k;
      if (p.exclude_outside && (i < 0 || i >= in_len)) w[k] = 0;
      sum += w[k];
      idx[k] = clamp(i);
    }
    if (p.exclude_outside && sum != 0) {
      for (int k = 0; k < t.count; ++k) w[k] /= sum;
    }
  }
  return t;
}

// True when the taps copy the axis unchanged (same length, each output reads its own index).
bool IsIdentity(const AxisTaps& t, int64_t in_len) {
  if (static_cast<int64_t>(t.extrapolate.size()) != in_len) return false;
  for (int64_t o = 0; o < in_len; ++o) {
    if (t.extrapolate[o]) return false;
    double w = 0;
    for (int k = 0; k < t.count; ++k) {
      const double wk = t.weight[o * t.count + k];
      if (t.index[o * t.count + k] == o) {
        w += wk;
      } else if (wk != 0) {
        return false;
      }
    }
    if (w != 1) return false;
  }
  return true;
}

// Resizes x to out_shape. `scales` are per axis (out_len_f = scales[k] * in_len unless
// `exact_sizes`); roi holds starts then ends per axis (tf_crop_and_resize only).
absl::Status ResizeInto(KernelContext& ctx, const Tensor& x, const std::vector<double>& scales,
                        const Shape& out_shape, bool exact_sizes, const std::vector<double>& roi,
                        const ResizeParams& p) {
  const int rank = x.rank();
  absl::StatusOr<Tensor*> out_or = ctx.AllocateOutput(0, x.dtype(), out_shape);
  if (!out_or.ok()) return out_or.status();
  Tensor& out = **out_or;
  if (out.num_elements() == 0) return absl::OkStatus();
  if (x.num_elements() == 0) {
    return ctx.Invalid(absl::StrCat("cannot resize empty input ", x.DebugString(), " to ",
                                    ShapeString(out_shape)));
  }
  // The tap tables: an index and a weight per tap and output position, and a flag per position.
  // Antialiased downsampling has taps in proportion to the input axis, so a small output of a
  // long axis can need far more table than either tensor: charged to the run's budget first.
  double table_bytes = 0;
  for (int k = 0; k < rank; ++k) {
    const double count = p.mode == Interp::kNearest ? 1 : 2 * FilterHalfWidth(scales[k], p);
    table_bytes += static_cast<double>(out_shape[k]) * (count * 16 + 1);
    if (count > 0x1p30 || !(table_bytes < 0x1p62)) {
      return absl::ResourceExhaustedError(
          absl::StrCat(ctx.info().label(), ": axis ", k, " would need ", count,
                       " filter taps per output value (scale ", scales[k], ")"));
    }
  }
  absl::StatusOr<MemoryReservation> tables =
      ctx.ReserveScratch(static_cast<int64_t>(table_bytes), "tap tables");
  if (!tables.ok()) return tables.status();
  std::vector<AxisTaps> taps(rank);
  std::vector<bool> identity(rank);
  for (int k = 0; k < rank; ++k) {
    const double out_len_f =
        exact_sizes ? static_cast<double>(out_shape[k]) : scales[k] * x.dim(k);
    const double rs = roi.empty() ? 0 : roi[k];
    const double re = roi.empty() ? 1 : roi[k + rank];
    taps[k] = ComputeTaps(x.dim(k), out_shape[k], out_len_f, scales[k], rs, re, p);
    identity[k] = IsIdentity(taps[k], x.dim(k));
  }
  if (p.mode == Interp::kNearest) {
    // A gather: output element = source at the per-axis nearest indices.
    return Labeled(ctx, DispatchNumeric(x.dtype(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const T fill = FromDouble<T>(p.extrapolation);
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      std::vector<int64_t> in_strides = Strides(x.shape());
      // Source offset per output index, per axis (-1: extrapolation).
      std::vector<std::vector<int64_t>> offs(rank);
      for (int k = 0; k < rank; ++k) {
        offs[k].resize(out_shape[k]);
        for (int64_t o = 0; o < out_shape[k]; ++o) {
          offs[k][o] = taps[k].extrapolate[o] ? -1 : taps[k].index[o] * in_strides[k];
        }
      }
      const int64_t len = rank == 0 ? 1 : out_shape[rank - 1];
      const int64_t rows = out.num_elements() / len;
      ctx.ParallelFor(rows, std::max<int64_t>(1, kGrain / len), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          int64_t rem = r, off = 0;
          bool outside = false;
          for (int k = rank - 2; k >= 0; --k) {
            const int64_t o = offs[k][rem % out_shape[k]];
            rem /= out_shape[k];
            if (o < 0) outside = true;
            off += o;
          }
          T* d = dst + r * len;
          if (rank == 0) {
            d[0] = src[0];
            continue;
          }
          if (outside) {
            std::fill_n(d, len, fill);
            continue;
          }
          const std::vector<int64_t>& last = offs[rank - 1];
          for (int64_t i = 0; i < len; ++i) d[i] = last[i] < 0 ? fill : src[off + last[i]];
        }
      });
      return absl::OkStatus();
    }));
  }
  // Linear / cubic: one separable pass per axis that changes, in double; shrinking axes
  // first keeps the intermediates small.
  std::vector<int> order;
  for (int k = rank - 1; k >= 0; --k) {
    if (!identity[k]) order.push_back(k);
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return static_cast<double>(out_shape[a]) / x.dim(a) <
           static_cast<double>(out_shape[b]) / x.dim(b);
  });
  {
    Shape shape = x.shape();
    int64_t largest = x.num_elements();
    for (int k : order) {
      shape[k] = out_shape[k];
      largest = std::max(largest, ShapeNumElements(shape));
    }
    if (largest > (int64_t{1} << 31)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          ctx.info().label(), ": resizing ", x.DebugString(), " to ", ShapeString(out_shape),
          " needs an intermediate of ", largest, " elements"));
    }
  }
  return Labeled(ctx, DispatchNumeric(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    const int64_t n_in = x.num_elements();
    absl::StatusOr<MemoryReservation> charge =
        ctx.ReserveScratch(n_in * static_cast<int64_t>(sizeof(double)), "input as doubles");
    if (!charge.ok()) return charge.status();
    MemoryReservation cur_charge = *std::move(charge), next_charge;
    std::vector<double> cur(n_in);
    {
      const T* src = x.data<T>();
      for (int64_t i = 0; i < n_in; ++i) cur[i] = static_cast<double>(ToCompute(src[i]));
    }
    Shape shape = x.shape();
    std::vector<double> next;
    for (int k : order) {
      int64_t outer = 1, inner = 1;
      for (int j = 0; j < k; ++j) outer *= shape[j];
      for (int j = k + 1; j < rank; ++j) inner *= shape[j];
      const int64_t in_len = shape[k], out_len = out_shape[k];
      // An intermediate (some axes resized, the others not yet) can exceed input and output.
      absl::StatusOr<MemoryReservation> charge = ctx.ReserveScratch(
          outer * out_len * inner * static_cast<int64_t>(sizeof(double)), "intermediate");
      if (!charge.ok()) return charge.status();
      next_charge = *std::move(charge);
      next.assign(outer * out_len * inner, 0.0);
      const AxisTaps& tk = taps[k];
      const double extra = p.extrapolation;
      const double* c = cur.data();
      double* nx = next.data();
      ctx.ParallelFor(outer * out_len, std::max<int64_t>(1, kGrain / inner),
                      [&](int64_t begin, int64_t end) {
                        for (int64_t row = begin; row < end; ++row) {
                          const int64_t o = row % out_len, po = row / out_len;
                          double* d = nx + row * inner;
                          if (tk.extrapolate[o]) {
                            std::fill_n(d, inner, extra);
                            continue;
                          }
                          const double* base = c + po * in_len * inner;
                          const int64_t* ti = tk.index.data() + o * tk.count;
                          const double* tw = tk.weight.data() + o * tk.count;
                          for (int j = 0; j < tk.count; ++j) {
                            const double w = tw[j];
                            if (w == 0) continue;
                            const double* s = base + ti[j] * inner;
                            for (int64_t i = 0; i < inner; ++i) d[i] += w * s[i];
                          }
                        }
                      });
      cur.swap(next);
      std::swap(cur_charge, next_charge);
      shape[k] = out_len;
    }
    T* dst = out.data<T>();
    const int64_t n_out = out.num_elements();
    for (int64_t i = 0; i < n_out; ++i) {
      if constexpr (std::is_integral_v<T>) {
        dst[i] = static_cast<T>(std::nearbyint(cur[i]));
      } else {
        dst[i] = FromCompute<T>(static_cast<ComputeType<T>>(cur[i]));
      }
    }
    return absl::OkStatus();
  }));
}

absl::StatusOr<ResizeParams> ParseResizeParams(const KernelContext& ctx, bool upsample) {
  const KernelInfo& info = ctx.info();
  const int64_t opset = info.opset();
  ResizeParams p;
  std::string mode = info.GetString("mode", "nearest");
  if (mode == "nearest") {
    p.mode = Interp::kNearest;
  } else if (mode == "linear" || mode == "bilinear" || mode == "trilinear") {
    p.mode = Interp::kLinear;
  } else if (mode == "cubic" && !upsample) {
    p.mode = Interp::kCubic;
  } else {
    return ctx.Invalid(absl::StrCat("attribute 'mode' is '", mode, "'"));
  }
  const bool legacy = upsample || (opset > 0 && opset < 11);
  if (legacy) {
    // Upsample and Resize-10: output x reads input x / scale, nearest rounds down.
    p.coord = Coord::kAsymmetric;
    p.nearest = Nearest::kFloor;
    return p;
  }
  const std::string coord = info.GetString("coordinate_transformation_mode", "half_pixel");
  if (coord == "half_pixel") {
    p.coord = Coord::kHalfPixel;
  } else if (coord == "half_pixel_symmetric") {
    p.coord = Coord::kHalfPixelSymmetric;
  } else if (coord == "pytorch_half_pixel") {
    p.coord = Coord::kPytorchHalfPixel;
  } else if (coord == "align_corners") {
    p.coord = Coord::kAlignCorners;
  } else if (coord == "asymmetric") {
    p.coord = Coord::kAsymmetric;
  } else if (coord == "tf_half_pixel_for_nn") {
    p.coord = Coord::kTfHalfPixelForNn;
  } else if (coord == "tf_crop_and_resize") {
    p.coord = Coord::kTfCropAndResize;
  } else {
    return ctx.Invalid(absl::StrCat("attribute 'coordinate_transformation_mode' is '", coord, "'"));
  }
  const std::string nearest = info.GetString("nearest_mode", "round_prefer_floor");
  if (nearest == "round_prefer_floor") {
    p.nearest = Nearest::kRoundPreferFloor;
  } else if (nearest == "round_prefer_ceil") {
    p.nearest = Nearest::kRoundPreferCeil;
  } else if (nearest == "floor") {
    p.nearest = Nearest::kFloor;
  } else if (nearest == "ceil") {
    p.nearest = Nearest::kCeil;
  } else {
    return ctx.Invalid(absl::StrCat("attribute 'nearest_mode' is '", nearest, "'"));
  }
  p.cubic_a = info.GetFloat("cubic_coeff_a", -0.75f);
  p.exclude_outside = info.GetInt("exclude_outside", 0) != 0;
  p.extrapolation = info.GetFloat("extrapolation_value", 0);
  p.antialias = info.GetInt("antialias", 0) != 0;
  return p;
}

// A float tensor's values as doubles.
absl::StatusOr<std::vector<double>> FloatValues(const KernelContext& ctx, const Tensor& t,
                                                absl::string_view what) {
  if (t.dtype() != v1::DT_FLOAT32 && t.dtype() != v1::DT_FLOAT64 && t.dtype() != v1::DT_FLOAT16 &&
      t.dtype() != v1::DT_BFLOAT16) {
    return ctx.Invalid(absl::StrCat(what, " must be floating point, got ", t.DebugString()));
  }
  std::vector<double> v(t.num_elements());
  for (int64_t i = 0; i < t.num_elements(); ++i) v[i] = t.ElementAsDouble(i);
  return v;
}

// Output dims for scales (floor(scale * dim)); INVALID_ARGUMENT for non-positive scales.
absl::StatusOr<Shape> ScaledShape(const KernelContext& ctx, const Tensor& x,
                                  const std::vector<double>& scales) {
  Shape out(x.rank());
  for (int k = 0; k < x.rank(); ++k) {
    if (!(scales[k] > 0) || !std::isfinite(scales[k])) {
      return ctx.Invalid(absl::StrCat("scales [", absl::StrJoin(scales, ","),
                                      "] must be positive and finite"));
    }
    const double d = std::floor(scales[k] * static_cast<double>(x.dim(k)));
    if (d > 1e15) return ctx.Invalid(absl::StrCat("scale ", scales[k], " is too large"));
    out[k] = static_cast<int64_t>(d);
  }
  return out;
}

absl::Status ResizeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const KernelInfo& info = ctx.info();
  const int64_t opset = info.opset();
  const int rank = x.rank();
  absl::StatusOr<ResizeParams> p = ParseResizeParams(ctx, false);
  if (!p.ok()) return p.status();
  const Tensor* roi_t = nullptr;
  const Tensor* scales_t = nullptr;
  const Tensor* sizes_t = nullptr;
  if (opset > 0 && opset < 11) {
    scales_t = ctx.input(1);
    if (scales_t == nullptr) return ctx.Invalid("input 1 (scales) is required");
  } else {
    roi_t = ctx.input(1);
    scales_t = ctx.input(2);
    sizes_t = ctx.input(3);
  }
  if (scales_t != nullptr && scales_t->num_elements() == 0) scales_t = nullptr;
  if (sizes_t != nullptr && sizes_t->num_elements() == 0) sizes_t = nullptr;
  if ((scales_t == nullptr) == (sizes_t == nullptr)) {
    return ctx.Invalid("exactly one of scales and sizes must be given");
  }
  // Axes the scales/sizes/roi refer to (opset 18), all by default.
  std::vector<int64_t> axes = info.GetInts("axes");
  if (axes.empty()) {
    for (int k = 0; k < rank; ++k) axes.push_back(k);
  }
  std::vector<bool> seen(rank, false);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank || seen[a < 0 ? a + rank : a]) {
      return ctx.Invalid(absl::StrCat("attribute 'axes' [", absl::StrJoin(axes, ","),
                                      "] is invalid for rank ", rank));
    }
    if (a < 0) a += rank;
    seen[a] = true;
  }
  const size_t na = axes.size();
  std::vector<double> scales(rank, 1.0);
  Shape out_shape = x.shape();
  bool exact = false;
  if (scales_t != nullptr) {
    absl::StatusOr<std::vector<double>> s = FloatValues(ctx, *scales_t, "scales");
    if (!s.ok()) return s.status();
    if (s->size() != na) {
      return ctx.Invalid(absl::StrCat("scales has ", s->size(), " values, expected ", na,
                                      " for input ", x.DebugString()));
    }
    for (size_t i = 0; i < na; ++i) scales[axes[i]] = (*s)[i];
    absl::StatusOr<Shape> o = ScaledShape(ctx, x, scales);
    if (!o.ok()) return o.status();
    out_shape = *std::move(o);
  } else {
    absl::StatusOr<std::vector<int64_t>> s = InputInts(ctx, 3);
    if (!s.ok()) return s.status();
    if (s->size() != na) {
      return ctx.Invalid(absl::StrCat("sizes has ", s->size(), " values, expected ", na,
                                      " for input ", x.DebugString()));
    }
    for (int64_t v : *s) {
      if (v < 0) return ctx.Invalid(absl::StrCat("sizes has a negative value ", v));
    }
    const std::string policy = info.GetString("keep_aspect_ratio_policy", "stretch");
    if (policy == "stretch") {
      exact = true;
      for (size_t i = 0; i < na; ++i) {
        const int64_t a = axes[i];
        out_shape[a] = (*s)[i];
        scales[a] = x.dim(a) == 0 ? 1.0 : static_cast<double>((*s)[i]) / x.dim(a);
      }
    } else if (policy == "not_larger" || policy == "not_smaller") {
      double scale = policy == "not_larger" ? 1e300 : 0;
      for (size_t i = 0; i < na; ++i) {
        const int64_t a = axes[i];
        const double r = x.dim(a) == 0 ? 1.0 : static_cast<double>((*s)[i]) / x.dim(a);
        scale = policy == "not_larger" ? std::min(scale, r) : std::max(scale, r);
      }
      for (size_t i = 0; i < na; ++i) {
        const int64_t a = axes[i];
        scales[a] = scale;
        // One axis's large size scales the others by as much: bound it before converting.
        const double d = std::floor(scale * x.dim(a) + 0.5);
        if (!(d <= 1e15)) {
          return ctx.Invalid(absl::StrCat("sizes with keep_aspect_ratio_policy '", policy,
                                          "' make axis ", a, " ", d, " long"));
        }
        out_shape[a] = static_cast<int64_t>(d);
      }
    } else {
      return ctx.Invalid(absl::StrCat("attribute 'keep_aspect_ratio_policy' is '", policy, "'"));
    }
  }
  std::vector<double> roi;
  if (p->coord == Coord::kTfCropAndResize) {
    roi.assign(2 * rank, 0.0);
    for (int k = 0; k < rank; ++k) roi[k + rank] = 1.0;
    if (roi_t != nullptr && roi_t->num_elements() > 0) {
      absl::StatusOr<std::vector<double>> r = FloatValues(ctx, *roi_t, "roi");
      if (!r.ok()) return r.status();
      if (r->size() != 2 * na) {
        return ctx.Invalid(absl::StrCat("roi has ", r->size(), " values, expected ", 2 * na));
      }
      for (size_t i = 0; i < na; ++i) {
        roi[axes[i]] = (*r)[i];
        roi[axes[i] + rank] = (*r)[i + na];
      }
    }
  }
  return ResizeInto(ctx, x, scales, out_shape, exact, roi, *p);
}

absl::Status UpsampleKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  const KernelInfo& info = ctx.info();
  absl::StatusOr<ResizeParams> p = ParseResizeParams(ctx, true);
  if (!p.ok()) return p.status();
  std::vector<double> scales;
  if (info.has_attr("scales")) {
    for (float f : info.GetFloats("scales")) scales.push_back(f);
  } else if (ctx.input(1) != nullptr) {
    absl::StatusOr<std::vector<double>> s = FloatValues(ctx, *ctx.input(1), "scales");
    if (!s.ok()) return s.status();
    scales = *std::move(s);
  } else if (info.has_attr("height_scale") && info.has_attr("width_scale") && x.rank() == 4) {
    scales = {1.0, 1.0, info.GetFloat("height_scale", 1), info.GetFloat("width_scale", 1)};
  } else {
    return ctx.Invalid("scales are required (attribute or input 1)");
  }
  if (static_cast<int>(scales.size()) != x.rank()) {
    return ctx.Invalid(absl::StrCat("scales has ", scales.size(), " values for input ",
                                    x.DebugString()));
  }
  absl::StatusOr<Shape> out_shape = ScaledShape(ctx, x, scales);
  if (!out_shape.ok()) return out_shape.status();
  return ResizeInto(ctx, x, scales, *out_shape, false, {}, *p);
}

}  // namespace

absl::Status RegisterTensorLayoutResizeKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Pad", PadKernel));
  s.Update(registry.Register("Resize", ResizeKernel));
  s.Update(registry.Register("Upsample", UpsampleKernel));
  return s;
}

}  // namespace graphopt::runtime
