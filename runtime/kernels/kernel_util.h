#ifndef GRAPHOPT_RUNTIME_KERNELS_KERNEL_UTIL_H_
#define GRAPHOPT_RUNTIME_KERNELS_KERNEL_UTIL_H_

// Helpers shared by the CPU kernel families: dtype dispatch, broadcasting, axes.

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "graph/types.h"
#include "runtime/float16.h"
#include "runtime/kernel.h"
#include "runtime/tensor.h"
#include "util/saturating_cast.h"

namespace graphopt::runtime {

// A type tag for dispatch lambdas: [&](auto tag) { using T = typename decltype(tag)::type; }.
template <typename T>
struct TypeTag {
  using type = T;
};

// The C++ element type of each dtype (bool is stored as uint8_t-sized bool).
template <typename F>
absl::Status DispatchAll(v1::DataType dtype, F&& f) {
  switch (dtype) {
    case v1::DT_FLOAT32: return f(TypeTag<float>{});
    case v1::DT_FLOAT64: return f(TypeTag<double>{});
    case v1::DT_FLOAT16: return f(TypeTag<Float16>{});
    case v1::DT_BFLOAT16: return f(TypeTag<BFloat16>{});
    case v1::DT_INT8: return f(TypeTag<int8_t>{});
    case v1::DT_INT16: return f(TypeTag<int16_t>{});
    case v1::DT_INT32: return f(TypeTag<int32_t>{});
    case v1::DT_INT64: return f(TypeTag<int64_t>{});
    case v1::DT_UINT8: return f(TypeTag<uint8_t>{});
    case v1::DT_UINT16: return f(TypeTag<uint16_t>{});
    case v1::DT_UINT32: return f(TypeTag<uint32_t>{});
    case v1::DT_UINT64: return f(TypeTag<uint64_t>{});
    case v1::DT_BOOL: return f(TypeTag<bool>{});
    case v1::DT_STRING: return f(TypeTag<std::string>{});
    default:
      return absl::UnimplementedError(absl::StrCat("element type ", DataTypeName(dtype),
                                                   " is not supported"));
  }
}

// Numeric types only (no string, no bool).
template <typename F>
absl::Status DispatchNumeric(v1::DataType dtype, F&& f) {
  switch (dtype) {
    case v1::DT_FLOAT32: return f(TypeTag<float>{});
    case v1::DT_FLOAT64: return f(TypeTag<double>{});
    case v1::DT_FLOAT16: return f(TypeTag<Float16>{});
    case v1::DT_BFLOAT16: return f(TypeTag<BFloat16>{});
    case v1::DT_INT8: return f(TypeTag<int8_t>{});
    case v1::DT_INT16: return f(TypeTag<int16_t>{});
    case v1::DT_INT32: return f(TypeTag<int32_t>{});
    case v1::DT_INT64: return f(TypeTag<int64_t>{});
    case v1::DT_UINT8: return f(TypeTag<uint8_t>{});
    case v1::DT_UINT16: return f(TypeTag<uint16_t>{});
    case v1::DT_UINT32: return f(TypeTag<uint32_t>{});
    case v1::DT_UINT64: return f(TypeTag<uint64_t>{});
    default:
      return absl::UnimplementedError(absl::StrCat("element type ", DataTypeName(dtype),
                                                   " is not supported"));
  }
}

// Floating-point types only; float16/bfloat16 are computed in float.
template <typename F>
absl::Status DispatchFloat(v1::DataType dtype, F&& f) {
  switch (dtype) {
    case v1::DT_FLOAT32: return f(TypeTag<float>{});
    case v1::DT_FLOAT64: return f(TypeTag<double>{});
    case v1::DT_FLOAT16: return f(TypeTag<Float16>{});
    case v1::DT_BFLOAT16: return f(TypeTag<BFloat16>{});
    default:
      return absl::UnimplementedError(absl::StrCat("element type ", DataTypeName(dtype),
                                                   " is not supported (floating point only)"));
  }
}

// The type arithmetic happens in: float for the 16-bit floats, T otherwise.
template <typename T>
using ComputeType =
    std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
inline ComputeType<T> ToCompute(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

template <typename T, typename C>
inline T FromCompute(C v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return T(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                       std::is_floating_point_v<C>) {
    // A float outside T's range (log(0) = -inf of an integer ReduceLogSum, an overflowing
    // L2) saturates.
    return SaturatingCast<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Integer additions, subtractions, products and negations wrap around (two's complement), as
// numpy's and ONNX Runtime's do: signed overflow is undefined in C++, so they are computed
// unsigned, at least as wide as unsigned int (narrower types would promote to a signed int).
// Floating-point values are computed as they are.
template <typename T>
using WrapUnsigned = std::common_type_t<unsigned, std::make_unsigned_t<T>>;

template <typename T>
inline T WrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapUnsigned<T>>(a) + static_cast<WrapUnsigned<T>>(b));
  } else {
    return a + b;
  }
}

template <typename T>
inline T WrapSub(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapUnsigned<T>>(a) - static_cast<WrapUnsigned<T>>(b));
  } else {
    return a - b;
  }
}

template <typename T>
inline T WrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<WrapUnsigned<T>>(a) * static_cast<WrapUnsigned<T>>(b));
  } else {
    return a * b;
  }
}

template <typename T>
inline T WrapNeg(T a) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(WrapUnsigned<T>(0) - static_cast<WrapUnsigned<T>>(a));
  } else {
    return -a;
  }
}

// A rounded float requantized into the 8- or 16-bit integer type Q: saturated to Q's range,
// and NaN (from a NaN or infinite scale) to Q's lowest value, as QuantizeLinear gives (and
// ONNX Runtime's x86 quantizer). A float outside Q's range has no defined conversion in C++.
template <typename Q>
inline Q SaturateQuantized(float v) {
  static_assert(std::is_integral_v<Q> && sizeof(Q) <= 2, "Q's range must be exact in float");
  constexpr float kLo = static_cast<float>(std::numeric_limits<Q>::lowest());
  constexpr float kHi = static_cast<float>(std::numeric_limits<Q>::max());
  return static_cast<Q>(!(v >= kLo) ? kLo : (v > kHi ? kHi : v));
}

// The dtype of a C++ element type.
template <typename T>
constexpr v1::DataType DataTypeOf() {
  if constexpr (std::is_same_v<T, float>) return v1::DT_FLOAT32;
  else if constexpr (std::is_same_v<T, double>) return v1::DT_FLOAT64;
  else if constexpr (std::is_same_v<T, Float16>) return v1::DT_FLOAT16;
  else if constexpr (std::is_same_v<T, BFloat16>) return v1::DT_BFLOAT16;
  else if constexpr (std::is_same_v<T, int8_t>) return v1::DT_INT8;
  else if constexpr (std::is_same_v<T, int16_t>) return v1::DT_INT16;
  else if constexpr (std::is_same_v<T, int32_t>) return v1::DT_INT32;
  else if constexpr (std::is_same_v<T, int64_t>) return v1::DT_INT64;
  else if constexpr (std::is_same_v<T, uint8_t>) return v1::DT_UINT8;
  else if constexpr (std::is_same_v<T, uint16_t>) return v1::DT_UINT16;
  else if constexpr (std::is_same_v<T, uint32_t>) return v1::DT_UINT32;
  else if constexpr (std::is_same_v<T, uint64_t>) return v1::DT_UINT64;
  else if constexpr (std::is_same_v<T, bool>) return v1::DT_BOOL;
  else if constexpr (std::is_same_v<T, std::string>) return v1::DT_STRING;
  else return v1::DT_UNDEFINED;
}

// Numpy-style (multidirectional) broadcast of shapes; INVALID_ARGUMENT naming both shapes.
absl::StatusOr<Shape> BroadcastShapes(absl::Span<const Shape> shapes);

// Iteration over a broadcast output for N inputs: for each output position, the element
// offset of every input. Dims are collapsed where all inputs agree, so a plain elementwise op
// is one run and a bias add is a few. ForEachRun calls fn(out_offset, in_offsets, in_steps,
// length) for each contiguous run of the innermost (collapsed) dim; in_steps[k] is 0 when
// input k is broadcast along it and 1 otherwise.
class BroadcastIndexer {
 public:
  // `inputs` are the input shapes; `out` their broadcast shape.
  BroadcastIndexer(absl::Span<const Shape> inputs, const Shape& out);

  int num_inputs() const { return static_cast<int>(strides_.size()); }
  int64_t inner_length() const { return inner_; }
  int64_t num_runs() const { return runs_; }
  // Offsets of run r (r in [0, num_runs())) into each input, written to `offsets`.
  void RunOffsets(int64_t r, int64_t* offsets) const;
  // 0 or 1 per input for the innermost dim.
  int64_t inner_step(int k) const { return inner_steps_[k]; }

 private:
  std::vector<int64_t> outer_dims_;               // collapsed dims except the innermost
  std::vector<std::vector<int64_t>> strides_;     // per input, per outer dim
  std::vector<int64_t> inner_steps_;
  int64_t inner_ = 1;
  int64_t runs_ = 1;
};

// Binary elementwise op over broadcast inputs: out[i] = fn(a[i'], b[i'']). A, B, O are the
// stored element types; fn takes and returns compute values.
template <typename A, typename B, typename O, typename Fn>
void BroadcastBinary(const Tensor& a, const Tensor& b, Tensor& out, Fn fn,
                     const KernelContext* ctx = nullptr) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  const int64_t n = out.num_elements();
  if (a.num_elements() == n && b.num_elements() == n) {
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = fn(pa[i], pb[i]);
    };
    if (ctx) ctx->ParallelFor(n, 32768, body); else body(0, n);
    return;
  }
  if (b.num_elements() == 1 && a.num_elements() == n) {
    const B s = pb[0];
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = fn(pa[i], s);
    };
    if (ctx) ctx->ParallelFor(n, 32768, body); else body(0, n);
    return;
  }
  if (a.num_elements() == 1 && b.num_elements() == n) {
    const A s = pa[0];
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) po[i] = fn(s, pb[i]);
    };
    if (ctx) ctx->ParallelFor(n, 32768, body); else body(0, n);
    return;
  }
  const Shape shapes[2] = {a.shape(), b.shape()};
  BroadcastIndexer idx(shapes, out.shape());
  const int64_t len = idx.inner_length();
  const int64_t sa = idx.inner_step(0), sb = idx.inner_step(1);
  auto body = [&](int64_t begin, int64_t end) {
    int64_t off[2];
    for (int64_t r = begin; r < end; ++r) {
      idx.RunOffsets(r, off);
      O* o = po + r * len;
      const A* x = pa + off[0];
      const B* y = pb + off[1];
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < len; ++i) o[i] = fn(x[i], y[i]);
      } else if (sa == 1) {
        const B s = y[0];
        for (int64_t i = 0; i < len; ++i) o[i] = fn(x[i], s);
      } else if (sb == 1) {
        const A s = x[0];
        for (int64_t i = 0; i < len; ++i) o[i] = fn(s, y[i]);
      } else {
        for (int64_t i = 0; i < len; ++i) o[i] = fn(x[0], y[0]);
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(len, 1));
  if (ctx) ctx->ParallelFor(idx.num_runs(), grain, body); else body(0, idx.num_runs());
}

// Normalises a possibly negative axis against `rank`; INVALID_ARGUMENT when out of range.
absl::StatusOr<int> NormalizeAxis(int64_t axis, int rank, const KernelInfo& info);

// Row-major strides of `shape` (in elements).
std::vector<int64_t> Strides(absl::Span<const int64_t> shape);

// Input i as int64 values (an integer tensor: axes, shapes, pads); INVALID_ARGUMENT naming
// the input when it is of another type.
absl::StatusOr<std::vector<int64_t>> InputInts(const KernelContext& ctx, int i);

// Requires input i to be present; INVALID_ARGUMENT naming the node and index otherwise.
absl::StatusOr<const Tensor*> RequireInput(const KernelContext& ctx, int i);

}  // namespace graphopt::runtime

#endif  // GRAPHOPT_RUNTIME_KERNELS_KERNEL_UTIL_H_
