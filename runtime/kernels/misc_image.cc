// Image sampling kernels: GridSample (opset 16, 4-D: bilinear/nearest/bicubic, zeros/border/
// reflection padding, align_corners) and RoiAlign (avg/max, half_pixel/output_half_pixel).
// float32/float64/float16 inputs, computed in float or double.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

absl::Status RegisterMiscImageKernels(KernelRegistry& registry);

namespace {

// --- GridSample -----------------------------------------------------------------------------

enum class Padding { kZeros, kBorder, kReflection };

// Reflects `x` into [low2 / 2, high2 / 2] (bounds given doubled, as integers are exact).
double Reflect(double x, double low2, double high2) {
  if (low2 == high2) return 0;
  const double min = low2 / 2;
  const double span = (high2 - low2) / 2;
  x = std::fabs(x - min);
  const double extra = std::fmod(x, span);
  // The parity of the flips in double: their count (from any grid value, NaN included) need
  // not fit an int64, whose conversion would be undefined.
  const double flips = std::floor(x / span);
  return std::fmod(flips, 2.0) == 0 ? extra + min : span - extra + min;
}

// A coordinate with the padding mode applied (border and reflection keep it inside).
double PadCoordinate(double x, int64_t size, Padding pad, bool align_corners) {
  if (pad == Padding::kBorder) {
    return std::min(static_cast<double>(size - 1), std::max(0.0, x));
  }
  if (pad == Padding::kReflection) {
    x = align_corners ? Reflect(x, 0, 2.0 * (size - 1)) : Reflect(x, -1, 2.0 * size - 1);
    return std::min(static_cast<double>(size - 1), std::max(0.0, x));
  }
  return x;
}

// A floored or rounded pixel coordinate as an index. The grid holds any values: a NaN or
// far-off coordinate (zeros padding keeps it) has no defined conversion to int64, so it becomes
// -2, outside every image (its taps, up to +2, too); what it samples is 0 either way.
int64_t PixelIndex(double v) {
  return (v >= -2.0 && v <= 4.0e15) ? static_cast<int64_t>(v) : int64_t{-2};
}

double CubicNear(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
double CubicFar(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

absl::Status GridSampleKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  absl::StatusOr<const Tensor*> gt = RequireInput(ctx, 1);
  if (!gt.ok()) return gt.status();
  const Tensor& x = **xt;
  const Tensor& grid = **gt;
  if (x.rank() != 4) return ctx.Invalid(absl::StrCat("X must be [N, C, H, W], got ", x.DebugString()));
  if (grid.rank() != 4 || grid.dim(0) != x.dim(0) || grid.dim(3) != 2) {
    return ctx.Invalid(absl::StrCat("grid must be [N, H_out, W_out, 2] for X ", x.DebugString(),
                                    ", got ", grid.DebugString()));
  }
  if (grid.dtype() != x.dtype()) {
    return ctx.Invalid(absl::StrCat("grid is ", grid.DebugString(), ", X ", x.DebugString()));
  }
  const std::string mode = ctx.info().GetString("mode", "bilinear");
  const std::string padding = ctx.info().GetString("padding_mode", "zeros");
  const bool align = ctx.info().GetInt("align_corners", 0) != 0;
  int m;
  if (mode == "bilinear" || mode == "linear") {
    m = 0;
  } else if (mode == "nearest") {
    m = 1;
  } else if (mode == "bicubic" || mode == "cubic") {
    m = 2;
  } else {
    return ctx.Invalid(absl::StrCat("attribute 'mode' is '", mode, "'"));
  }
  Padding pad;
  if (padding == "zeros") {
    pad = Padding::kZeros;
  } else if (padding == "border") {
    pad = Padding::kBorder;
  } else if (padding == "reflection") {
    pad = Padding::kReflection;
  } else {
    return ctx.Invalid(absl::StrCat("attribute 'padding_mode' is '", padding, "'"));
  }
  const int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
  const int64_t Ho = grid.dim(1), Wo = grid.dim(2);
  return DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), {N, C, Ho, Wo});
    if (!out.ok()) return out.status();
    const T* xp = x.data<T>();
    const T* gp = grid.data<T>();
    T* op = (*out)->data<T>();
    ctx.ParallelFor(N * C, 1, [&](int64_t begin, int64_t end) {
      for (int64_t nc = begin; nc < end; ++nc) {
        const int64_t n = nc / C;
        const T* img = xp + nc * H * W;
        // Pixel (yy, xx), zero outside (after the padding mode moved the coordinate).
        auto at = [&](int64_t yy, int64_t xx) -> double {
          if (yy < 0 || yy >= H || xx < 0 || xx >= W) return 0;
          return static_cast<double>(ToCompute(img[yy * W + xx]));
        };
        for (int64_t i = 0; i < Ho * Wo; ++i) {
          const T* g = gp + (n * Ho * Wo + i) * 2;
          const double gx = static_cast<double>(ToCompute(g[0]));
          const double gy = static_cast<double>(ToCompute(g[1]));
          double fx = align ? (gx + 1) / 2 * (W - 1) : ((gx + 1) * W - 1) / 2;
          double fy = align ? (gy + 1) / 2 * (H - 1) : ((gy + 1) * H - 1) / 2;
          double v = 0;
          if (m == 2) {  // bicubic: padding applies per tap
            const double x0 = std::floor(fx), y0 = std::floor(fy);
            const double tx = fx - x0, ty = fy - y0;
            const double a = -0.75;
            const double wx[4] = {CubicFar(tx + 1, a), CubicNear(tx, a), CubicNear(1 - tx, a),
                                  CubicFar(2 - tx, a)};
            const double wy[4] = {CubicFar(ty + 1, a), CubicNear(ty, a), CubicNear(1 - ty, a),
                                  CubicFar(2 - ty, a)};
            for (int r = 0; r < 4; ++r) {
              double row = 0;
              for (int c = 0; c < 4; ++c) {
                double xx = x0 - 1 + c, yy = y0 - 1 + r;
                if (pad != Padding::kZeros) {
                  xx = PadCoordinate(xx, W, pad, align);
                  yy = PadCoordinate(yy, H, pad, align);
                }
                row += wx[c] * at(PixelIndex(yy), PixelIndex(xx));
              }
              v += wy[r] * row;
            }
          } else {
            fx = PadCoordinate(fx, W, pad, align);
            fy = PadCoordinate(fy, H, pad, align);
            if (m == 1) {
              v = at(PixelIndex(std::nearbyint(fy)), PixelIndex(std::nearbyint(fx)));
            } else {
              const double x0 = std::floor(fx), y0 = std::floor(fy);
              const double lx = fx - x0, ly = fy - y0;
              const int64_t ix = PixelIndex(x0), iy = PixelIndex(y0);
              v = (1 - ly) * ((1 - lx) * at(iy, ix) + lx * at(iy, ix + 1)) +
                  ly * ((1 - lx) * at(iy + 1, ix) + lx * at(iy + 1, ix + 1));
            }
          }
          op[nc * Ho * Wo + i] = FromCompute<T>(static_cast<ComputeType<T>>(v));
        }
      }
    });
    return absl::OkStatus();
  });
}

// --- RoiAlign -------------------------------------------------------------------------------

absl::Status RoiAlignKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  absl::StatusOr<const Tensor*> rt = RequireInput(ctx, 1);
  if (!rt.ok()) return rt.status();
  absl::StatusOr<const Tensor*> bt = RequireInput(ctx, 2);
  if (!bt.ok()) return bt.status();
  const Tensor& x = **xt;
  const Tensor& rois = **rt;
  if (x.rank() != 4) return ctx.Invalid(absl::StrCat("X must be [N, C, H, W], got ", x.DebugString()));
  if (rois.rank() != 2 || rois.dim(1) != 4 || rois.dtype() != x.dtype()) {
    return ctx.Invalid(absl::StrCat("rois must be [num_rois, 4] of X's type, got ",
                                    rois.DebugString()));
  }
  absl::StatusOr<std::vector<int64_t>> batch = (*bt)->ToInt64Vector();
  if (!batch.ok() || static_cast<int64_t>(batch->size()) != rois.dim(0)) {
    return ctx.Invalid(absl::StrCat("batch_indices must hold one integer per roi, got ",
                                    (*bt)->DebugString()));
  }
  for (int64_t b : *batch) {
    if (b < 0 || b >= x.dim(0)) {
      return ctx.Invalid(absl::StrCat("batch index ", b, " is outside [0, ", x.dim(0), ")"));
    }
  }
  for (int64_t i = 0; i < rois.num_elements(); ++i) {
    if (!std::isfinite(rois.ElementAsDouble(i))) {
      return ctx.Invalid(absl::StrCat("rois element ", i, " is not finite"));
    }
  }
  const KernelInfo& info = ctx.info();
  const std::string mode = info.GetString("mode", "avg");
  if (mode != "avg" && mode != "max") {
    return ctx.Invalid(absl::StrCat("attribute 'mode' is '", mode, "' (avg or max)"));
  }
  const std::string ctm = info.GetString(
      "coordinate_transformation_mode",
      info.opset() > 0 && info.opset() < 16 ? "output_half_pixel" : "half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel") {
    return ctx.Invalid(absl::StrCat("attribute 'coordinate_transformation_mode' is '", ctm, "'"));
  }
  const bool half_pixel = ctm == "half_pixel";
  const bool avg = mode == "avg";
  const int64_t oh = info.GetInt("output_height", 1), ow = info.GetInt("output_width", 1);
  const int64_t sampling = info.GetInt("sampling_ratio", 0);
  const double scale = info.GetFloat("spatial_scale", 1);
  if (oh < 1 || ow < 1 || sampling < 0) {
    return ctx.Invalid("output_height/output_width must be positive, sampling_ratio >= 0");
  }
  const int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3), R = rois.dim(0);
  if (!std::isfinite(scale)) {
    return ctx.Invalid(absl::StrCat("attribute 'spatial_scale' (", scale, ") is not finite"));
  }
  if (sampling == 0) {
    // The adaptive grid is ceil(roi side / output side) samples per bin side: bounded, so that
    // its conversion to int64 is defined (a huge roi or scale) and its work is finite.
    constexpr double kMaxGrid = 1 << 20;
    for (int64_t r = 0; r < R; ++r) {
      const double x1 = rois.ElementAsDouble(r * 4), y1 = rois.ElementAsDouble(r * 4 + 1);
      const double rw = (rois.ElementAsDouble(r * 4 + 2) - x1) * scale;
      const double rh = (rois.ElementAsDouble(r * 4 + 3) - y1) * scale;
      if (!(std::ceil(rh / oh) <= kMaxGrid && std::ceil(rw / ow) <= kMaxGrid)) {
        return ctx.Invalid(absl::StrCat("roi ", r, " needs more than ", kMaxGrid,
                                        " samples per bin side (set sampling_ratio)"));
      }
    }
  }
  return DispatchFloat(x.dtype(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, x.dtype(), {R, C, oh, ow});
    if (!out.ok()) return out.status();
    T* op = (*out)->data<T>();
    const T* rp = rois.data<T>();
    ctx.ParallelFor(R * C, 1, [&](int64_t begin, int64_t end) {
      for (int64_t rc = begin; rc < end; ++rc) {
        const int64_t r = rc / C, c = rc % C;
        const T* img = x.data<T>() + ((*batch)[r] * C + c) * H * W;
        const double off = half_pixel ? 0.5 : 0;
        const double x1 = static_cast<double>(ToCompute(rp[r * 4 + 0])) * scale - off;
        const double y1 = static_cast<double>(ToCompute(rp[r * 4 + 1])) * scale - off;
        const double x2 = static_cast<double>(ToCompute(rp[r * 4 + 2])) * scale - off;
        const double y2 = static_cast<double>(ToCompute(rp[r * 4 + 3])) * scale - off;
        double rw = x2 - x1, rh = y2 - y1;
        if (!half_pixel) {
          rw = std::max(rw, 1.0);
          rh = std::max(rh, 1.0);
        }
        const double bh = rh / oh, bw = rw / ow;
        const int64_t gh = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rh / oh));
        const int64_t gw = sampling > 0 ? sampling : static_cast<int64_t>(std::ceil(rw / ow));
        const double count = static_cast<double>(std::max<int64_t>(gh * gw, 1));
        for (int64_t ph = 0; ph < oh; ++ph) {
          for (int64_t pw = 0; pw < ow; ++pw) {
            double sum = 0, maxv = 0;
            bool first = true;
            for (int64_t iy = 0; iy < gh; ++iy) {
              double yy = y1 + ph * bh + (iy + 0.5) * bh / gh;
              for (int64_t ix = 0; ix < gw; ++ix) {
                double xx = x1 + pw * bw + (ix + 0.5) * bw / gw;
                double w[4] = {0, 0, 0, 0}, v[4] = {0, 0, 0, 0};
                if (!(yy < -1.0 || yy > H || xx < -1.0 || xx > W)) {
                  double sy = std::max(yy, 0.0), sx = std::max(xx, 0.0);
                  int64_t ylo = static_cast<int64_t>(sy), xlo = static_cast<int64_t>(sx);
                  int64_t yhi, xhi;
                  if (ylo >= H - 1) {
                    yhi = ylo = H - 1;
                    sy = static_cast<double>(ylo);
                  } else {
                    yhi = ylo + 1;
                  }
                  if (xlo >= W - 1) {
                    xhi = xlo = W - 1;
                    sx = static_cast<double>(xlo);
                  } else {
                    xhi = xlo + 1;
                  }
                  const double ly = sy - ylo, lx = sx - xlo, hy = 1 - ly, hx = 1 - lx;
                  w[0] = hy * hx, w[1] = hy * lx, w[2] = ly * hx, w[3] = ly * lx;
                  v[0] = static_cast<double>(ToCompute(img[ylo * W + xlo]));
                  v[1] = static_cast<double>(ToCompute(img[ylo * W + xhi]));
                  v[2] = static_cast<double>(ToCompute(img[yhi * W + xlo]));
                  v[3] = static_cast<double>(ToCompute(img[yhi * W + xhi]));
                }
                if (avg) {
                  sum += w[0] * v[0] + w[1] * v[1] + w[2] * v[2] + w[3] * v[3];
                } else {
                  const double s = std::max(std::max(w[0] * v[0], w[1] * v[1]),
                                            std::max(w[2] * v[2], w[3] * v[3]));
                  maxv = first ? s : std::max(maxv, s);
                  first = false;
                }
              }
            }
            const double res = avg ? sum / count : maxv;
            op[(rc * oh + ph) * ow + pw] = FromCompute<T>(static_cast<ComputeType<T>>(res));
          }
        }
      }
    });
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status RegisterMiscImageKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("GridSample", GridSampleKernel));
  s.Update(registry.Register("RoiAlign", RoiAlignKernel));
  return s;
}

}  // namespace graphopt::runtime
