#ifndef GRAPHOPT_CLIENT_COST_TABLE_H_
#define GRAPHOPT_CLIENT_COST_TABLE_H_

#include <cstdint>
#include <string>

#include "proto/optimizer.pb.h"

namespace graphopt {

// 512 -> "512 FLOP", 4.1e9 -> "4.1 GFLOP" (decimal prefixes, one decimal).
std::string FormatFlopCount(int64_t flops);
// 900 -> "900 B", 102760448 -> "98.0 MiB" (binary prefixes, one decimal).
std::string FormatByteCount(int64_t bytes);

// The one line `graphopt optimize` prints for an Optimize response's cost estimate:
//   "cost: 4.1 GFLOP, 98.0 MiB moved (40 nodes)\n"
//   "cost: 4.1 GFLOP, 98.0 MiB moved (40 nodes; flops unknown for 12, bytes for 3)\n"
//   "cost: ? FLOP, ? B moved (6 nodes; flops unknown for 6, bytes for 6)\n"
// where the figures sum the nodes whose estimate is known ("?" when none is).
std::string FormatCostSummary(const v1::CostReport& cost);

// The `limit` nodes with the most flops (unknown flops last; ties by more bytes, then node
// order) as a table: node, op, flops, bytes ("?" for unknown). Empty without per-node entries
// or for a limit <= 0.
std::string FormatTopNodeCosts(const v1::CostReport& cost, int limit);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_COST_TABLE_H_
