#ifndef GRAPHOPT_PASSES_MEMORY_UTIL_H_
#define GRAPHOPT_PASSES_MEMORY_UTIL_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "graph/graph.h"

namespace graphopt {

// What the schedule and plan_memory passes share: bounds for symbolic dims and value sizes.

// Upper bounds of symbolic dims, by symbol.
using DimBounds = absl::btree_map<std::string, int64_t>;

// The option both passes take for them.
inline constexpr char kDimBoundsOption[] = "dim_bounds";

// Planned offsets and sizes are multiples of this (runtime's kTensorAlignment).
inline constexpr int64_t kPlanAlignment = 64;

// Parses "batch:8,seq:128" (spaces around entries allowed; empty text: no bounds).
// INVALID_ARGUMENT naming `option` for an entry that is not SYMBOL:SIZE, an empty symbol, a size
// that is not a non-negative integer, or a symbol given twice.
absl::StatusOr<DimBounds> ParseDimBounds(absl::string_view text, absl::string_view option);
// The largest bound in a kDimBoundsOption value (0 when none): what the pipeline holds under
// the server's ceiling for the option (PassInfo::BudgetOption::amount).
absl::StatusOr<int64_t> LargestDimBound(absl::string_view text);
// The bounds a pass's options give under kDimBoundsOption (none when absent), as ParseDimBounds.
absl::StatusOr<DimBounds> DimBoundsFromOptions(const std::map<std::string, std::string>& options);

// The bytes a value of `type` needs with every symbolic dim at its bound, rounded up to
// kPlanAlignment. nullopt when that is not known, with the reason in `why` (an element type
// without a fixed size, an unknown rank or dim, a symbol without a bound, an overflow).
std::optional<int64_t> BoundedBytes(const TensorType& type, const DimBounds& bounds,
                                    std::string* why);

// Per node slot: the values its steps read, its inputs (omitted ones left out) followed by the
// values of this graph its subgraph attributes capture, without duplicates.
std::vector<std::vector<ValueId>> ValuesReadByNodes(const Graph& graph);

}  // namespace graphopt

#endif  // GRAPHOPT_PASSES_MEMORY_UTIL_H_
