// Cast, CastLike and the linear quantization ops.
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <type_traits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels/elementwise_util.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {
namespace {

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;

// DispatchNumeric plus bool.
template <typename F>
absl::Status DispatchNumericOrBool(v1::DataType dtype, F&& f) {
  if (dtype == v1::DT_BOOL) return f(TypeTag<bool>{});
  return DispatchNumeric(dtype, std::forward<F>(f));
}

// A floating-point value to integer type I: truncation toward zero; NaN gives 0 and values
// out of int64's range saturate; narrower types then wrap as numpy's astype does on x86.
template <typename I, typename F>
inline I FloatToInt(F v) {
  if constexpr (std::is_same_v<I, uint64_t>) {
    if (v >= F(18446744073709551616.0)) return std::numeric_limits<uint64_t>::max();
    if (v >= F(0)) return static_cast<uint64_t>(v);
    return static_cast<uint64_t>(SaturatingCast<int64_t>(v));
  } else {
    return static_cast<I>(SaturatingCast<int64_t>(v));
  }
}

// One element From -> To for the numeric types and bool (16-bit floats through float).
template <typename To, typename From>
inline To ConvertElement(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalf<From>) {
    return ConvertElement<To>(static_cast<float>(v));
  } else if constexpr (kIsHalf<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return FloatToInt<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

// Shortest text that reads back as the same value, laid out as numpy's str: fixed notation
// for 1e-4 <= |v| < 1e16 (with ".0" when integral), scientific otherwise.
template <typename F>
std::string FormatFloat(F v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  const F a = std::fabs(v);
  const bool fixed = a == 0 || (a >= F(1e-4) && a < F(1e16));
  char buf[400];
  const std::to_chars_result r = std::to_chars(
      buf, buf + sizeof(buf), v, fixed ? std::chars_format::fixed : std::chars_format::scientific);
  std::string s(buf, r.ptr);
  if (fixed && s.find('.') == std::string::npos) s += ".0";
  return s;
}

template <typename T>
std::string FormatElement(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? "1" : "0";
  } else if constexpr (std::is_integral_v<T>) {
    return absl::StrCat(v);
  } else if constexpr (kIsHalf<T>) {
    // The fewest significant digits that read back as the same 16 bits, then laid out as a
    // float (which has digits to spare, so the layout keeps exactly those digits).
    const float f = static_cast<float>(v);
    if (!std::isfinite(f)) return FormatFloat(f);
    for (int digits = 1; digits <= 9; ++digits) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.*e", digits - 1, static_cast<double>(f));
      const float back = std::strtof(buf, nullptr);
      if (T(back).bits == v.bits) return FormatFloat(back);
    }
    return FormatFloat(f);
  } else {
    return FormatFloat(v);
  }
}

// Parses a decimal number (also NaN, INF, +INF, -INF in any case) into T.
template <typename T>
bool ParseElement(const std::string& text, T* out) {
  const std::string s(absl::StripAsciiWhitespace(text));
  if (s.empty()) return false;
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    char* end = nullptr;
    errno = 0;
    if constexpr (std::is_signed_v<T>) {
      const long long v = std::strtoll(s.c_str(), &end, 10);
      if (errno == 0 && end == s.c_str() + s.size()) {
        *out = static_cast<T>(v);
        return true;
      }
    } else {
      const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
      if (errno == 0 && end == s.c_str() + s.size() && s[0] != '-') {
        *out = static_cast<T>(v);
        return true;
      }
    }
  }
  // Floating point (and integers written as such, "1.0" -> 1).
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return false;
  if constexpr (std::is_same_v<T, float>) {
    *out = std::strtof(s.c_str(), nullptr);  // rounded once, not through double
  } else {
    *out = ConvertElement<T>(d);
  }
  return true;
}

// Converts `x` into `out` (allocated, same shape, of dtype `to`).
absl::Status ConvertTensor(const KernelContext& ctx, const Tensor& x, Tensor& out) {
  const int64_t n = x.num_elements();
  const v1::DataType from = x.dtype();
  const v1::DataType to = out.dtype();
  if (from == v1::DT_STRING && to == v1::DT_STRING) {
    std::copy(x.strings(), x.strings() + n, out.strings());
    return absl::OkStatus();
  }
  if (to == v1::DT_STRING) {
    return DispatchNumericOrBool(from, [&](auto tag) -> absl::Status {
      using F = typename decltype(tag)::type;
      const F* p = x.data<F>();
      std::string* o = out.strings();
      for (int64_t i = 0; i < n; ++i) o[i] = FormatElement(p[i]);
      return absl::OkStatus();
    });
  }
  if (from == v1::DT_STRING) {
    return DispatchNumericOrBool(to, [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      const std::string* p = x.strings();
      T* o = out.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, bool>) {
          double d;
          if (!ParseElement(p[i], &d)) {
            return ctx.Invalid(absl::StrCat("element ", i, " ('", p[i], "') is not a number"));
          }
          o[i] = d != 0;
        } else if constexpr (kIsHalf<T>) {
          float f;
          if (!ParseElement(p[i], &f)) {
            return ctx.Invalid(absl::StrCat("element ", i, " ('", p[i], "') is not a number"));
          }
          o[i] = T(f);
        } else {
          if (!ParseElement(p[i], &o[i])) {
            return ctx.Invalid(absl::StrCat("element ", i, " ('", p[i], "') is not a number"));
          }
        }
      }
      return absl::OkStatus();
    });
  }
  return DispatchNumericOrBool(from, [&](auto from_tag) -> absl::Status {
    using F = typename decltype(from_tag)::type;
    return DispatchNumericOrBool(to, [&](auto to_tag) -> absl::Status {
      using T = typename decltype(to_tag)::type;
      MapElements(ctx, x.data<F>(), out.data<T>(), n, [](F v) { return ConvertElement<T>(v); });
      return absl::OkStatus();
    });
  });
}

absl::Status CastTo(KernelContext& ctx, v1::DataType to) {
  absl::StatusOr<const Tensor*> in = RequireInput(ctx, 0);
  if (!in.ok()) return in.status();
  const Tensor& x = **in;
  for (const v1::DataType t : {x.dtype(), to}) {
    absl::Status s = DispatchAll(t, [](auto) { return absl::OkStatus(); });
    if (!s.ok()) return Labeled(ctx, s);
  }
  if (to == x.dtype()) {
    ctx.SetOutput(0, x);
    return absl::OkStatus();
  }
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, to, x.shape());
  if (!out.ok()) return Labeled(ctx, out.status());
  return Labeled(ctx, ConvertTensor(ctx, x, **out));
}

absl::Status CastKernel(KernelContext& ctx) {
  absl::StatusOr<int64_t> to = ctx.info().RequireInt("to");
  if (!to.ok()) return to.status();
  if (!v1::DataType_IsValid(static_cast<int>(*to)) || *to == v1::DT_UNDEFINED) {
    return ctx.Invalid(absl::StrCat("attribute 'to' (", *to, ") is not a data type"));
  }
  return CastTo(ctx, static_cast<v1::DataType>(*to));
}

absl::Status CastLikeKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> like = RequireInput(ctx, 1);
  if (!like.ok()) return like.status();
  return CastTo(ctx, (*like)->dtype());
}

// Quantization parameters of one op: per tensor (one scale) or per slice of `axis`.
struct QuantLayout {
  int64_t outer = 1;     // product of dims before axis
  int64_t channels = 1;  // number of scales
  int64_t inner = 1;     // product of dims after axis
};

// Checks scale (input 1) and the optional zero point (input 2) against x and computes the
// layout. Scales are per tensor when they have one element.
absl::StatusOr<QuantLayout> QuantizationLayout(const KernelContext& ctx, const Tensor& x) {
  absl::StatusOr<const Tensor*> scale = RequireInput(ctx, 1);
  if (!scale.ok()) return scale.status();
  const Tensor* zero = ctx.input(2);
  if ((*scale)->dtype() != v1::DT_FLOAT32) {
    return ctx.info().Unimplemented(absl::StrCat(
        "scale of type ", DataTypeName((*scale)->dtype()), " is not supported (float32 only)"));
  }
  QuantLayout layout;
  const int64_t count = (*scale)->num_elements();
  if (zero != nullptr && zero->num_elements() != count) {
    return ctx.Invalid(absl::StrCat("zero point ", ShapeString(zero->shape()),
                                    " does not match scale ", ShapeString((*scale)->shape())));
  }
  if (count == 1 && (*scale)->rank() <= 1) {
    layout.inner = x.num_elements();
    return layout;
  }
  if ((*scale)->rank() != 1) {
    return ctx.Invalid(absl::StrCat("scale must be a scalar or 1-D, not ",
                                    ShapeString((*scale)->shape())));
  }
  absl::StatusOr<int> axis = NormalizeAxis(ctx.info().GetInt("axis", 1), x.rank(), ctx.info());
  if (!axis.ok()) return axis.status();
  if (x.rank() == 0 || x.dim(*axis) != count) {
    return ctx.Invalid(absl::StrCat("scale has ", count, " elements but input 0 ",
                                    ShapeString(x.shape()), " has ",
                                    x.rank() == 0 ? 0 : x.dim(*axis), " along axis ", *axis));
  }
  layout.channels = count;
  for (int i = 0; i < *axis; ++i) layout.outer *= x.dim(i);
  for (int i = *axis + 1; i < x.rank(); ++i) layout.inner *= x.dim(i);
  return layout;
}

// y = saturate(round_half_even(x / scale) + zero_point).
absl::Status QuantizeLinearKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> in = RequireInput(ctx, 0);
  if (!in.ok()) return in.status();
  const Tensor& x = **in;
  absl::StatusOr<QuantLayout> layout = QuantizationLayout(ctx, x);
  if (!layout.ok()) return layout.status();
  const Tensor* zero = ctx.input(2);
  const v1::DataType out_type = zero != nullptr ? zero->dtype() : v1::DT_UINT8;
  const float* scale = ctx.input(1)->data<float>();
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, out_type, x.shape());
  if (!out.ok()) return out.status();
  auto run = [&](auto q_tag) -> absl::Status {
    using Q = typename decltype(q_tag)::type;
    return Labeled(ctx, DispatchFloat(x.dtype(), [&](auto x_tag) -> absl::Status {
      using X = typename decltype(x_tag)::type;
      const X* px = x.data<X>();
      Q* py = (*out)->template data<Q>();
      const Q* pz = zero != nullptr ? zero->data<Q>() : nullptr;
      const QuantLayout l = *layout;
      constexpr float kLo = static_cast<float>(std::numeric_limits<Q>::lowest());
      constexpr float kHi = static_cast<float>(std::numeric_limits<Q>::max());
      for (int64_t o = 0; o < l.outer; ++o) {
        for (int64_t c = 0; c < l.channels; ++c) {
          const float s = scale[c];
          const float z = pz != nullptr ? static_cast<float>(pz[c]) : 0.0f;
          const int64_t base = (o * l.channels + c) * l.inner;
          for (int64_t i = 0; i < l.inner; ++i) {
            float v = std::nearbyint(static_cast<float>(ToCompute(px[base + i])) / s) + z;
            v = !(v >= kLo) ? kLo : (v > kHi ? kHi : v);  // NaN -> kLo
            py[base + i] = static_cast<Q>(v);
          }
        }
      }
      return absl::OkStatus();
    }));
  };
  switch (out_type) {
    case v1::DT_UINT8: return run(TypeTag<uint8_t>{});
    case v1::DT_INT8: return run(TypeTag<int8_t>{});
    default:
      return ctx.info().Unimplemented(absl::StrCat("zero point of type ", DataTypeName(out_type),
                                                   " is not supported (uint8 and int8 only)"));
  }
}

// y = (x - zero_point) * scale, as float32.
absl::Status DequantizeLinearKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> in = RequireInput(ctx, 0);
  if (!in.ok()) return in.status();
  const Tensor& x = **in;
  absl::StatusOr<QuantLayout> layout = QuantizationLayout(ctx, x);
  if (!layout.ok()) return layout.status();
  const Tensor* zero = ctx.input(2);
  if (zero != nullptr && zero->dtype() != x.dtype()) {
    return ctx.Invalid(absl::StrCat("zero point is ", DataTypeName(zero->dtype()),
                                    " but input 0 is ", DataTypeName(x.dtype())));
  }
  const float* scale = ctx.input(1)->data<float>();
  absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_FLOAT32, x.shape());
  if (!out.ok()) return out.status();
  auto run = [&](auto tag) -> absl::Status {
    using Q = typename decltype(tag)::type;
    const Q* px = x.data<Q>();
    const Q* pz = zero != nullptr ? zero->data<Q>() : nullptr;
    float* py = (*out)->data<float>();
    const QuantLayout l = *layout;
    for (int64_t o = 0; o < l.outer; ++o) {
      for (int64_t c = 0; c < l.channels; ++c) {
        const float s = scale[c];
        const float z = pz != nullptr ? static_cast<float>(pz[c]) : 0.0f;
        const int64_t base = (o * l.channels + c) * l.inner;
        for (int64_t i = 0; i < l.inner; ++i) {
          py[base + i] = (static_cast<float>(px[base + i]) - z) * s;
        }
      }
    }
    return absl::OkStatus();
  };
  switch (x.dtype()) {
    case v1::DT_UINT8: return run(TypeTag<uint8_t>{});
    case v1::DT_INT8: return run(TypeTag<int8_t>{});
    case v1::DT_INT32: return run(TypeTag<int32_t>{});
    default:
      return ctx.info().Unimplemented(absl::StrCat("element type ", DataTypeName(x.dtype()),
                                                   " is not supported (uint8, int8, int32)"));
  }
}

// DynamicQuantizeLinear: uint8 quantization over [min(0, min x), max(0, max x)].
absl::Status DynamicQuantizeLinearKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> in = RequireInput(ctx, 0);
  if (!in.ok()) return in.status();
  const Tensor& x = **in;
  if (x.dtype() != v1::DT_FLOAT32) {
    return ctx.info().Unimplemented(absl::StrCat("element type ", DataTypeName(x.dtype()),
                                                 " is not supported (float32 only)"));
  }
  const float* px = x.data<float>();
  const int64_t n = x.num_elements();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::min(lo, px[i]);
    hi = std::max(hi, px[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  float zero = 0;
  // An infinite input makes the scale infinite and -lo / scale NaN (-inf / inf), which has no
  // defined conversion to uint8: SaturateQuantized makes it 0.
  if (scale != 0) zero = std::nearbyint(std::clamp((0.0f - lo) / scale, 0.0f, 255.0f));
  absl::StatusOr<Tensor*> y = ctx.AllocateOutput(0, v1::DT_UINT8, x.shape());
  if (!y.ok()) return y.status();
  absl::StatusOr<Tensor*> ys = ctx.AllocateOutput(1, v1::DT_FLOAT32, {});
  if (!ys.ok()) return ys.status();
  absl::StatusOr<Tensor*> yz = ctx.AllocateOutput(2, v1::DT_UINT8, {});
  if (!yz.ok()) return yz.status();
  (*ys)->data<float>()[0] = scale;
  (*yz)->data<uint8_t>()[0] = SaturateQuantized<uint8_t>(zero);
  uint8_t* py = (*y)->data<uint8_t>();
  const float inv = scale != 0 ? scale : 1.0f;
  MapElements(ctx, px, py, n, [inv, zero](float v) {
    const float q = std::nearbyint(v / inv) + zero;
    return static_cast<uint8_t>(!(q >= 0) ? 0.0f : (q > 255 ? 255.0f : q));  // NaN -> 0
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterCastKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("Cast", CastKernel));
  s.Update(registry.Register("CastLike", CastLikeKernel));
  s.Update(registry.Register("QuantizeLinear", QuantizeLinearKernel));
  s.Update(registry.Register("DequantizeLinear", DequantizeLinearKernel));
  s.Update(registry.Register("DynamicQuantizeLinear", DynamicQuantizeLinearKernel));
  return s;
}

}  // namespace graphopt::runtime
