#ifndef GRAPHOPT_CLIENT_REPORT_TABLE_H_
#define GRAPHOPT_CLIENT_REPORT_TABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "proto/op.pb.h"
#include "proto/optimizer.pb.h"

namespace graphopt {

// A plain-text table: a header line, a dashed rule, then rows, columns separated by two
// spaces and padded to the widest cell (counted in UTF-8 code points). Line breaks inside a
// cell are shown as spaces; trailing blanks are trimmed from every line.
class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string header;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns);

  // Adds a row; missing trailing cells are empty, cells beyond the column count are dropped.
  void AddRow(std::vector<std::string> cells);
  // Adds a dashed rule spanning the table.
  void AddRule();

  // The table, every line ending in '\n'.
  std::string Render() const;

 private:
  std::vector<Column> columns_;
  // An empty row stands for a rule.
  std::vector<std::vector<std::string>> rows_;
};

// Microseconds as milliseconds with three decimals: 1234 -> "1.234".
std::string FormatMicrosAsMillis(int64_t micros);

// The per-pass report of an Optimize call as a table (pass, round of the fixpoint group or "-",
// added for, changed, nodes before -> after, time ms, verify ms, messages) with a total row
// (whose round cell is the number of fixpoint rounds).
std::string FormatPassReports(const v1::OptimizeResponse& response);

// The same report as a JSON document (the graph itself is not included):
// {"passes": [{"name", "added_for", "changed", "round", "nodes_before", "nodes_after",
//   "wall_time_us", "verify_time_us", "messages"}...], and the totals: "pass_runs" (entries
//  of "passes"), "passes_changed" (entries with "changed"), "nodes_before" (the first entry's),
//  "nodes_after" (the last entry's), "written_nodes" (`written_nodes`: the nodes of the model
//  the caller wrote; null when unknown), "total_time_us" (the response's: the whole pipeline,
//  analyses and verification included), "pass_time_us" and "verify_time_us" (sums over the
//  entries), "fixpoint_rounds"}. With no pass run, "nodes_before" and "nodes_after" are
// `written_nodes` (the pipeline left the graph as it was). When the response has a cost
// estimate, "cost": {"flops", "bytes", "nodes", "flops_unknown_nodes", "bytes_unknown_nodes",
// "node_costs": [{"node", "op", "flops", "bytes"}...]} (null for an unknown figure). Invalid
// UTF-8 in strings is replaced, never an error.
std::string FormatReportJson(const v1::OptimizeResponse& response,
                             std::optional<int64_t> written_nodes);

// Table of passes: name, min level, requires, provides, options, description.
std::string FormatPassList(const v1::ListPassesResponse& response);

// Table of ops: domain, name, inputs, outputs, attributes, fusion pattern; followed by a
// legend of the notation.
std::string FormatOpList(const v1::ListOpsResponse& response);

// One descriptor in full (protobuf text format).
std::string FormatOpDescriptor(const v1::OpDescriptor& op);

// Compact forms used in the op table, exposed for tests:
// "X", "B?" (optional), "inputs[1..]" (variadic, at least 1).
std::string FormatArgSpec(const v1::ArgSpec& arg);
// "axis:int=-1", "to:dtype!" (required), "perm:ints".
std::string FormatAttributeSpec(const v1::AttributeSpec& spec);
// The value of an attribute: "3", "0.5", "\"abc\"", "[0,2,1]", "float32", "[batch,3]", ...
std::string FormatAttributeValue(const v1::Attribute& attribute);

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_REPORT_TABLE_H_
