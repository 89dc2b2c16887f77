#ifndef GRAPHOPT_UTIL_VERSION_H_
#define GRAPHOPT_UTIL_VERSION_H_

namespace graphopt {

// graphopt's release: what `graphopt --version` prints, and part of every result-cache key, so
// that results made by one release are never served by another. Raise it with every release
// that can change an optimization's output.
inline constexpr char kGraphoptVersion[] = "0.1.0";

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_VERSION_H_
