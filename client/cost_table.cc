#include "client/cost_table.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/report_table.h"

namespace graphopt {
namespace {

// `value` with the largest of `units` (each `step` times the previous) that keeps it >= 1.
std::string Scaled(int64_t value, double step, const char* const* units, int num_units,
                   const char* suffix) {
  if (value < step) return absl::StrCat(value, " ", units[0], suffix);
  double scaled = static_cast<double>(value);
  int unit = 0;
  while (scaled >= step && unit + 1 < num_units) {
    scaled /= step;
    ++unit;
  }
  return absl::StrFormat("%.1f %s%s", scaled, units[unit], suffix);
}

}  // namespace

std::string FormatFlopCount(int64_t flops) {
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T", "P", "E"};
  return Scaled(flops, 1000, kUnits, 7, "FLOP");
}

std::string FormatByteCount(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  return Scaled(bytes, 1024, kUnits, 7, "");
}

std::string FormatCostSummary(const v1::CostReport& cost) {
  // A sum over no known figure is no figure at all.
  const bool no_flops = cost.nodes() > 0 && cost.flops_unknown_nodes() == cost.nodes();
  const bool no_bytes = cost.nodes() > 0 && cost.bytes_unknown_nodes() == cost.nodes();
  std::string line = absl::StrCat(
      "cost: ", no_flops ? "? FLOP" : FormatFlopCount(cost.flops()), ", ",
      no_bytes ? "? B" : FormatByteCount(cost.bytes()), " moved (", cost.nodes(), " nodes");
  if (cost.flops_unknown_nodes() > 0 || cost.bytes_unknown_nodes() > 0) {
    absl::StrAppend(&line, "; flops unknown for ", cost.flops_unknown_nodes(), ", bytes for ",
                    cost.bytes_unknown_nodes());
  }
  absl::StrAppend(&line, ")\n");
  return line;
}

std::string FormatTopNodeCosts(const v1::CostReport& cost, int limit) {
  if (limit <= 0 || cost.node_costs_size() == 0) return "";
  std::vector<int> order(cost.node_costs_size());
  for (int i = 0; i < cost.node_costs_size(); ++i) order[i] = i;
  auto key = [&](int i) {
    const v1::NodeCost& n = cost.node_costs(i);
    return std::make_pair(n.has_flops() ? n.flops() : -1, n.has_bytes() ? n.bytes() : -1);
  };
  const size_t shown = std::min(order.size(), static_cast<size_t>(limit));
  std::partial_sort(order.begin(), order.begin() + shown, order.end(), [&](int a, int b) {
    const auto ka = key(a), kb = key(b);
    return ka != kb ? ka > kb : a < b;
  });
  using Align = TextTable::Align;
  TextTable table({{"node"}, {"op"}, {"flops", Align::kRight}, {"bytes", Align::kRight}});
  for (size_t i = 0; i < shown; ++i) {
    const v1::NodeCost& n = cost.node_costs(order[i]);
    table.AddRow({n.node(), n.op(), n.has_flops() ? FormatFlopCount(n.flops()) : "?",
                  n.has_bytes() ? FormatByteCount(n.bytes()) : "?"});
  }
  return table.Render();
}

}  // namespace graphopt
