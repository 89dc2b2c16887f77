#include "passes/memory_util.h"

#include <algorithm>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/liveness.h"

namespace graphopt {

absl::StatusOr<DimBounds> ParseDimBounds(absl::string_view text, absl::string_view option) {
  DimBounds bounds;
  if (absl::StripAsciiWhitespace(text).empty()) return bounds;
  for (absl::string_view entry : absl::StrSplit(text, ',')) {
    entry = absl::StripAsciiWhitespace(entry);
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("option '", option, "': entry '", entry,
                                                     "' ", what,
                                                     " (expected SYMBOL:SIZE,... as in "
                                                     "batch:8,seq:128)"));
    };
    const size_t colon = entry.rfind(':');
    if (colon == absl::string_view::npos) return bad("has no ':'");
    absl::string_view symbol = absl::StripAsciiWhitespace(entry.substr(0, colon));
    absl::string_view size_text = absl::StripAsciiWhitespace(entry.substr(colon + 1));
    if (symbol.empty()) return bad("has an empty symbol");
    // "batch:8 seq:128" would read as symbol "batch:8 seq": a blank-separated list, not a
    // symbol (a symbol may hold blanks and ':', but not a whole SYMBOL:SIZE before a blank).
    for (absl::string_view piece : absl::StrSplit(symbol, absl::ByAnyChar(" \t\n\r\f\v"),
                                                  absl::SkipEmpty())) {
      if (piece.data() + piece.size() == symbol.data() + symbol.size()) break;
      const size_t inner_colon = piece.rfind(':');
      int64_t unused = 0;
      if (inner_colon != absl::string_view::npos &&
          absl::SimpleAtoi(piece.substr(inner_colon + 1), &unused)) {
        return bad("holds a blank-separated list (entries are separated by ',')");
      }
    }
    int64_t size = 0;
    if (!absl::SimpleAtoi(size_text, &size) || size < 0) {
      return bad("does not give a non-negative integer size");
    }
    if (!bounds.emplace(std::string(symbol), size).second) {
      return bad(absl::StrCat("bounds '", symbol, "' a second time"));
    }
  }
  return bounds;
}

absl::StatusOr<int64_t> LargestDimBound(absl::string_view text) {
  absl::StatusOr<DimBounds> bounds = ParseDimBounds(text, kDimBoundsOption);
  if (!bounds.ok()) return bounds.status();
  int64_t largest = 0;
  for (const auto& [symbol, size] : *bounds) largest = std::max(largest, size);
  return largest;
}

absl::StatusOr<DimBounds> DimBoundsFromOptions(const std::map<std::string, std::string>& options) {
  auto it = options.find(kDimBoundsOption);
  if (it == options.end()) return DimBounds();
  return ParseDimBounds(it->second, kDimBoundsOption);
}

std::optional<int64_t> BoundedBytes(const TensorType& type, const DimBounds& bounds,
                                    std::string* why) {
  if (!type.is_tensor()) {
    // Its tensors are allocated by the kernels that build it, outside any plan.
    *why = absl::StrCat("it is a ", ValueKindName(type.kind), ", not a tensor");
    return std::nullopt;
  }
  const int element = DataTypeSize(type.dtype);
  if (element <= 0) {
    *why = type.dtype == v1::DT_STRING
               ? "string elements have no fixed size"
               : type.dtype == v1::DT_UNDEFINED
                     ? "its element type is unknown"
                     : absl::StrCat("element type ", DataTypeName(type.dtype), " has no fixed size");
    return std::nullopt;
  }
  if (!type.shape) {
    *why = "its rank is unknown";
    return std::nullopt;
  }
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 2;
  int64_t bytes = element;
  for (size_t i = 0; i < type.shape->size(); ++i) {
    const Dim& d = (*type.shape)[i];
    int64_t size = 0;
    if (d.is_known()) {
      size = d.size();
    } else if (d.is_symbol()) {
      auto it = bounds.find(d.symbol());
      if (it == bounds.end()) {
        *why = absl::StrCat("dim '", d.symbol(), "' has no bound (option ", kDimBoundsOption,
                            ")");
        return std::nullopt;
      }
      size = it->second;
    } else {
      *why = "a dim is unknown";
      return std::nullopt;
    }
    if (size < 0) {
      *why = "a dim is negative";
      return std::nullopt;
    }
    if (size != 0 && bytes > kMax / size) {
      *why = "its size overflows";
      return std::nullopt;
    }
    bytes *= size;
  }
  return (bytes + kPlanAlignment - 1) / kPlanAlignment * kPlanAlignment;
}

std::vector<std::vector<ValueId>> ValuesReadByNodes(const Graph& graph) {
  std::vector<std::vector<ValueId>> reads(graph.num_node_slots());
  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const Node& node = graph.node(NodeId(i));
    if (!node.alive) continue;
    std::vector<ValueId>& r = reads[i];
    for (ValueId v : node.inputs) {
      if (v.valid()) r.push_back(v);
    }
    if (!node.attributes.empty()) {
      for (const std::string& name : SubgraphFreeNames(node)) {
        ValueId v = graph.FindValue(name);
        if (v.valid()) r.push_back(v);
      }
    }
    if (r.size() > 1) {
      absl::flat_hash_set<ValueId> seen;
      r.erase(std::remove_if(r.begin(), r.end(), [&](ValueId v) { return !seen.insert(v).second; }),
              r.end());
    }
  }
  return reads;
}

}  // namespace graphopt
