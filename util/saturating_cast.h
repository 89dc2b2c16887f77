#ifndef GRAPHOPT_UTIL_SATURATING_CAST_H_
#define GRAPHOPT_UTIL_SATURATING_CAST_H_

#include <limits>
#include <type_traits>

namespace graphopt {

// A floating-point value converted to the integer type I, saturated to I's range, NaN to 0.
// C++ leaves the conversion of a value outside I's range (inf, 1e30, log(0) = -inf) undefined;
// every limit of a 64-bit or narrower integer is exact in float and double, so the comparisons
// are too.
template <typename I, typename F>
inline I SaturatingCast(F v) {
  static_assert(std::is_integral_v<I> && std::is_floating_point_v<F>);
  if (!(v == v)) return I(0);
  if (v <= static_cast<F>(std::numeric_limits<I>::lowest())) {
    return std::numeric_limits<I>::lowest();
  }
  if (v >= static_cast<F>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_SATURATING_CAST_H_
