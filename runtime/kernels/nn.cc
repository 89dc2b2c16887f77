// The NN family: registration and the window geometry shared by Conv, ConvTranspose and the
// pools. The kernels live in nn_conv.cc, nn_matmul.cc, nn_pool.cc, nn_norm.cc and (the
// backward ops) nn_grad.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "oneapi/dnnl/dnnl.hpp"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"
#include "runtime/kernels/nn_util.h"

namespace graphopt::runtime {

absl::StatusOr<WindowAttrs> ParseWindowAttrs(const KernelInfo& info) {
  WindowAttrs a;
  a.auto_pad = info.GetString("auto_pad", "NOTSET");
  if (a.auto_pad.empty()) a.auto_pad = "NOTSET";
  if (a.auto_pad != "NOTSET" && a.auto_pad != "SAME_UPPER" && a.auto_pad != "SAME_LOWER" &&
      a.auto_pad != "VALID") {
    return info.Invalid(absl::StrCat("attribute 'auto_pad' has unknown value '", a.auto_pad, "'"));
  }
  a.kernel_shape = info.GetInts("kernel_shape");
  a.strides = info.GetInts("strides");
  a.dilations = info.GetInts("dilations");
  a.pads = info.GetInts("pads");
  a.ceil_mode = info.GetInt("ceil_mode", 0) != 0;
  for (int64_t k : a.kernel_shape) {
    if (k <= 0) return info.Invalid("attribute 'kernel_shape' must be positive");
  }
  for (int64_t s : a.strides) {
    if (s <= 0) return info.Invalid("attribute 'strides' must be positive");
  }
  for (int64_t d : a.dilations) {
    if (d <= 0) return info.Invalid("attribute 'dilations' must be positive");
  }
  for (int64_t p : a.pads) {
    if (p < 0) return info.Invalid("attribute 'pads' must not be negative");
  }
  return a;
}

int64_t Window::in_size() const {
  int64_t n = 1;
  for (int64_t d : in) n *= d;
  return n;
}
int64_t Window::out_size() const {
  int64_t n = 1;
  for (int64_t d : out) n *= d;
  return n;
}
int64_t Window::kernel_size() const {
  int64_t n = 1;
  for (int64_t d : kernel) n *= d;
  return n;
}

absl::StatusOr<Window> ResolveForwardWindow(const KernelInfo& info, const WindowAttrs& a,
                                            absl::Span<const int64_t> in,
                                            absl::Span<const int64_t> kernel) {
  Window w;
  w.nd = static_cast<int>(in.size());
  const size_t nd = in.size();
  w.in.assign(in.begin(), in.end());
  w.kernel.assign(kernel.begin(), kernel.end());
  if (w.kernel.size() != nd) {
    return info.Invalid(absl::StrCat("kernel has ", w.kernel.size(), " spatial dims, input has ",
                                     nd));
  }
  if (a.strides.empty()) w.stride.assign(nd, 1);
  else w.stride.assign(a.strides.begin(), a.strides.end());
  if (a.dilations.empty()) w.dilation.assign(nd, 1);
  else w.dilation.assign(a.dilations.begin(), a.dilations.end());
  if (w.stride.size() != nd) {
    return info.Invalid(absl::StrCat("attribute 'strides' has ", w.stride.size(),
                                     " values for ", nd, " spatial dims"));
  }
  if (w.dilation.size() != nd) {
    return info.Invalid(absl::StrCat("attribute 'dilations' has ", w.dilation.size(),
                                     " values for ", nd, " spatial dims"));
  }
  w.pad_begin.assign(nd, 0);
  w.pad_end.assign(nd, 0);
  w.out.assign(nd, 0);
  const bool same = a.auto_pad == "SAME_UPPER" || a.auto_pad == "SAME_LOWER";
  if (a.auto_pad == "NOTSET" && !a.pads.empty()) {
    if (a.pads.size() != 2 * nd) {
      return info.Invalid(absl::StrCat("attribute 'pads' has ", a.pads.size(), " values for ", nd,
                                       " spatial dims"));
    }
    for (size_t i = 0; i < nd; ++i) {
      w.pad_begin[i] = a.pads[i];
      w.pad_end[i] = a.pads[nd + i];
    }
  }
  for (size_t i = 0; i < nd; ++i) {
    if (w.kernel[i] <= 0) return info.Invalid("kernel dims must be positive");
    const int64_t ek = (w.kernel[i] - 1) * w.dilation[i] + 1;
    const int64_t s = w.stride[i];
    if (same) {
      w.out[i] = (in[i] + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * s + ek - in[i]);
      w.pad_begin[i] = a.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pad_end[i] = total - w.pad_begin[i];
      continue;
    }
    const int64_t span = in[i] + w.pad_begin[i] + w.pad_end[i] - ek;
    if (span < 0) {
      return info.Invalid(absl::StrCat("the window (", ek, " wide with dilation) does not fit the ",
                                       in[i], " wide input with pads in spatial dim ", i));
    }
    if (a.ceil_mode) {
      w.out[i] = (span + s - 1) / s + 1;
      // The last window must start inside the input or its begin padding.
      if ((w.out[i] - 1) * s >= in[i] + w.pad_begin[i]) --w.out[i];
    } else {
      w.out[i] = span / s + 1;
    }
  }
  return w;
}

absl::StatusOr<WindowTaps> ComputeWindowTaps(const Window& w, const KernelContext& ctx) {
  WindowTaps t;
  const int nd = w.nd;
  const int64_t out_size = w.out_size();
  const int64_t k_size = w.kernel_size();
  // 12 bytes per tap (kernel index and input offset), 12 per output position; saturating.
  const int64_t taps =
      k_size != 0 && out_size > (int64_t{1} << 58) / k_size ? int64_t{1} << 58 : out_size * k_size;
  absl::StatusOr<MemoryReservation> charge =
      ctx.ReserveScratch(12 * taps + 12 * (out_size + 1), "window tables");
  if (!charge.ok()) return charge.status();
  t.charge = *std::move(charge);
  t.begin.reserve(out_size + 1);
  t.padded_count.reserve(out_size);
  t.kernel_index.reserve(out_size * k_size);
  t.input_offset.reserve(out_size * k_size);
  std::vector<int64_t> o(nd, 0), k(nd, 0);
  t.begin.push_back(0);
  for (int64_t op = 0; op < out_size; ++op) {
    if ((op & 1023) == 0 && ctx.ShouldStop()) return ctx.StopStatus(ctx.info().label());
    int32_t padded = 0;
    std::fill(k.begin(), k.end(), 0);
    for (int64_t kp = 0; kp < k_size; ++kp) {
      bool inside = true, inside_padded = true;
      int64_t off = 0;
      for (int i = 0; i < nd; ++i) {
        const int64_t c = o[i] * w.stride[i] - w.pad_begin[i] + k[i] * w.dilation[i];
        if (c < 0 || c >= w.in[i]) inside = false;
        if (c >= w.in[i] + w.pad_end[i]) inside_padded = false;
        off = off * w.in[i] + c;
      }
      if (inside_padded) ++padded;
      if (inside) {
        t.kernel_index.push_back(static_cast<int32_t>(kp));
        t.input_offset.push_back(off);
      }
      for (int i = nd - 1; i >= 0; --i) {
        if (++k[i] < w.kernel[i]) break;
        k[i] = 0;
      }
    }
    t.padded_count.push_back(padded);
    t.begin.push_back(static_cast<int64_t>(t.input_offset.size()));
    for (int i = nd - 1; i >= 0; --i) {
      if (++o[i] < w.out[i]) break;
      o[i] = 0;
    }
  }
  return t;
}

absl::Status GuardDnnl(const KernelInfo& info, const char* what,
                       absl::FunctionRef<absl::Status()> fn) {
  try {
    return fn();
  } catch (const dnnl::error& e) {
    return absl::InternalError(
        absl::StrCat(info.label(), ": oneDNN failed in ", what, ": ", e.what()));
  }
}

absl::Status RegisterNnKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(RegisterNnConvKernels(registry));
  s.Update(RegisterNnMatMulKernels(registry));
  s.Update(RegisterNnPoolKernels(registry));
  s.Update(RegisterNnNormKernels(registry));
  s.Update(RegisterNnGradKernels(registry));
  return s;
}

}  // namespace graphopt::runtime
