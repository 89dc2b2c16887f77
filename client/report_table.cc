#include "client/report_table.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "google/protobuf/text_format.h"
#include "nlohmann/json.hpp"

namespace graphopt {
namespace {

// Number of UTF-8 code points (bytes that are not continuation bytes).
size_t DisplayWidth(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;
  }
  return width;
}

std::string OneLine(std::string text) {
  for (char& c : text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  return text;
}

void TrimTrailingBlanks(std::string& line) {
  while (!line.empty() && line.back() == ' ') line.pop_back();
}

// "DT_FLOAT32" -> "float32", "ATTR_INTS" -> "ints", "FUSION_ELEMWISE" -> "elemwise".
std::string EnumSuffix(const std::string& name, absl::string_view prefix) {
  if (name.empty()) return "?";
  return absl::AsciiStrToLower(absl::StripPrefix(name, prefix));
}

std::string DataTypeText(int dtype) {
  if (!v1::DataType_IsValid(dtype)) return absl::StrCat("dtype(", dtype, ")");
  return EnumSuffix(v1::DataType_Name(static_cast<v1::DataType>(dtype)), "DT_");
}

std::string ShapeText(const v1::Shape& shape) {
  std::vector<std::string> dims;
  dims.reserve(shape.dims_size());
  for (const v1::Dim& dim : shape.dims()) {
    switch (dim.value_case()) {
      case v1::Dim::kSize:
        dims.push_back(absl::StrCat(dim.size()));
        break;
      case v1::Dim::kSymbol:
        dims.push_back(dim.symbol());
        break;
      case v1::Dim::VALUE_NOT_SET:
        dims.push_back("?");
        break;
    }
  }
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

std::string Quoted(const std::string& bytes) {
  return absl::StrCat("\"", absl::CHexEscape(bytes), "\"");
}

std::string TensorText(const v1::Tensor& tensor) {
  return absl::StrCat("tensor(", DataTypeText(tensor.dtype()), "[",
                      absl::StrJoin(tensor.dims(), ","), "])");
}

std::string JoinOrDash(const std::vector<std::string>& items, absl::string_view separator) {
  return items.empty() ? "-" : absl::StrJoin(items, separator);
}

}  // namespace

TextTable::TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

void TextTable::AddRow(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (std::string& cell : cells) cell = OneLine(std::move(cell));
  // A row of only empty cells must still print as a row, not as a rule.
  if (!columns_.empty() && std::all_of(cells.begin(), cells.end(),
                                       [](const std::string& c) { return c.empty(); })) {
    cells[0] = " ";
  }
  rows_.push_back(std::move(cells));
}

void TextTable::AddRule() { rows_.emplace_back(); }

std::string TextTable::Render() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) widths[c] = DisplayWidth(columns_[c].header);
  for (const std::vector<std::string>& row : rows_) {
    for (size_t c = 0; c < row.size(); ++c) {
      widths[c] = std::max(widths[c], DisplayWidth(row[c]));
    }
  }
  auto render_cells = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < columns_.size(); ++c) {
      if (c > 0) line += "  ";
      const std::string padding(widths[c] - DisplayWidth(cells[c]), ' ');
      if (columns_[c].align == Align::kRight) {
        absl::StrAppend(&line, padding, cells[c]);
      } else {
        absl::StrAppend(&line, cells[c], padding);
      }
    }
    TrimTrailingBlanks(line);
    return absl::StrCat(line, "\n");
  };
  std::string rule;
  for (size_t c = 0; c < columns_.size(); ++c) {
    if (c > 0) rule += "  ";
    rule += std::string(widths[c], '-');
  }
  rule += "\n";

  std::vector<std::string> headers;
  headers.reserve(columns_.size());
  for (const Column& column : columns_) headers.push_back(column.header);
  std::string out = render_cells(headers);
  out += rule;
  for (const std::vector<std::string>& row : rows_) {
    out += row.empty() ? rule : render_cells(row);
  }
  return out;
}

std::string FormatMicrosAsMillis(int64_t micros) {
  const bool negative = micros < 0;
  const uint64_t magnitude =
      negative ? 0 - static_cast<uint64_t>(micros) : static_cast<uint64_t>(micros);
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%s%" PRIu64 ".%03" PRIu64, negative ? "-" : "",
                magnitude / 1000, magnitude % 1000);
  return buffer;
}

std::string FormatPassReports(const v1::OptimizeResponse& response) {
  using Align = TextTable::Align;
  TextTable table({{"pass"},
                   {"round", Align::kRight},
                   {"added for"},
                   {"changed"},
                   {"nodes", Align::kRight},
                   {"time ms", Align::kRight},
                   {"verify ms", Align::kRight},
                   {"messages"}});
  int64_t verify_total_us = 0;
  for (const v1::PassReport& report : response.reports()) {
    verify_total_us += report.verify_time_us();
    // Round 0: the pass is outside the fixpoint group.
    table.AddRow({report.name(), report.round() > 0 ? absl::StrCat(report.round()) : "-",
                  report.added_for().empty() ? "-" : report.added_for(),
                  report.changed() ? "yes" : "no",
                  absl::StrCat(report.nodes_before(), " -> ", report.nodes_after()),
                  FormatMicrosAsMillis(report.wall_time_us()),
                  // 0: the verifier did not run after this pass.
                  report.verify_time_us() > 0 ? FormatMicrosAsMillis(report.verify_time_us())
                                              : "-",
                  absl::StrJoin(report.messages(), "; ")});
  }
  table.AddRule();
  const int reports = response.reports_size();
  std::string nodes = "-";
  if (reports > 0) {
    nodes = absl::StrCat(response.reports(0).nodes_before(), " -> ",
                         response.reports(reports - 1).nodes_after());
  }
  int changed = 0;
  for (const v1::PassReport& report : response.reports()) changed += report.changed() ? 1 : 0;
  table.AddRow({absl::StrCat("total (", reports, reports == 1 ? " pass)" : " passes)"),
                response.fixpoint_rounds() > 0 ? absl::StrCat(response.fixpoint_rounds()) : "",
                "", absl::StrCat(changed, " changed"), nodes,
                FormatMicrosAsMillis(response.total_time_us()),
                verify_total_us > 0 ? FormatMicrosAsMillis(verify_total_us) : "-", ""});
  return table.Render();
}

std::string FormatReportJson(const v1::OptimizeResponse& response,
                             std::optional<int64_t> written_nodes) {
  nlohmann::json passes = nlohmann::json::array();
  int64_t changed = 0;
  int64_t pass_time_us = 0;
  int64_t verify_time_us = 0;
  for (const v1::PassReport& report : response.reports()) {
    nlohmann::json messages = nlohmann::json::array();
    for (const std::string& message : report.messages()) messages.push_back(message);
    passes.push_back({
        {"name", report.name()},
        {"added_for", report.added_for()},
        {"changed", report.changed()},
        {"round", report.round()},
        {"nodes_before", report.nodes_before()},
        {"nodes_after", report.nodes_after()},
        {"wall_time_us", report.wall_time_us()},
        {"verify_time_us", report.verify_time_us()},
        {"messages", std::move(messages)},
    });
    changed += report.changed() ? 1 : 0;
    pass_time_us += report.wall_time_us();
    verify_time_us += report.verify_time_us();
  }
  const nlohmann::json written =
      written_nodes.has_value() ? nlohmann::json(*written_nodes) : nlohmann::json();
  const int reports = response.reports_size();
  nlohmann::json document = {
      {"passes", std::move(passes)},
      {"pass_runs", reports},
      {"passes_changed", changed},
      {"nodes_before", reports > 0 ? nlohmann::json(response.reports(0).nodes_before()) : written},
      {"nodes_after",
       reports > 0 ? nlohmann::json(response.reports(reports - 1).nodes_after()) : written},
      {"written_nodes", written},
      {"total_time_us", response.total_time_us()},
      {"pass_time_us", pass_time_us},
      {"verify_time_us", verify_time_us},
      {"fixpoint_rounds", response.fixpoint_rounds()},
  };
  if (response.has_cost()) {
    const v1::CostReport& cost = response.cost();
    nlohmann::json nodes = nlohmann::json::array();
    for (const v1::NodeCost& n : cost.node_costs()) {
      nodes.push_back({{"node", n.node()},
                       {"op", n.op()},
                       {"flops", n.has_flops() ? nlohmann::json(n.flops()) : nlohmann::json()},
                       {"bytes", n.has_bytes() ? nlohmann::json(n.bytes()) : nlohmann::json()}});
    }
    document["cost"] = {{"flops", cost.flops()},
                        {"bytes", cost.bytes()},
                        {"nodes", cost.nodes()},
                        {"flops_unknown_nodes", cost.flops_unknown_nodes()},
                        {"bytes_unknown_nodes", cost.bytes_unknown_nodes()},
                        {"node_costs", std::move(nodes)}};
  }
  return document.dump(2, ' ', /*ensure_ascii=*/false,
                       nlohmann::json::error_handler_t::replace) +
         "\n";
}

std::string FormatPassList(const v1::ListPassesResponse& response) {
  using Align = TextTable::Align;
  TextTable table({{"pass"},
                   {"min level", Align::kRight},
                   {"requires"},
                   {"provides"},
                   {"options"},
                   {"description"}});
  for (const v1::PassInfo& pass : response.passes()) {
    // options is a proto map: sort the keys so the output is stable.
    std::vector<std::pair<std::string, std::string>> options(pass.options().begin(),
                                                             pass.options().end());
    std::sort(options.begin(), options.end());
    std::vector<std::string> option_texts;
    option_texts.reserve(options.size());
    for (const auto& [key, meaning] : options) {
      option_texts.push_back(meaning.empty() ? key : absl::StrCat(key, " (", meaning, ")"));
    }
    table.AddRow({pass.name(),
                  pass.min_opt_level() > 0 ? absl::StrCat("O", pass.min_opt_level()) : "-",
                  JoinOrDash({pass.requires().begin(), pass.requires().end()}, ","),
                  JoinOrDash({pass.provides().begin(), pass.provides().end()}, ","),
                  JoinOrDash(option_texts, "; "), pass.description()});
  }
  return table.Render();
}

std::string FormatArgSpec(const v1::ArgSpec& arg) {
  const std::string& name = arg.name().empty() ? std::string("_") : arg.name();
  switch (arg.arity()) {
    case v1::ARITY_OPTIONAL:
      return absl::StrCat(name, "?");
    case v1::ARITY_VARIADIC:
      return absl::StrCat(name, "[", arg.min_count(), "..]");
    default:
      return name;
  }
}

std::string FormatAttributeValue(const v1::Attribute& attribute) {
  switch (attribute.value_case()) {
    case v1::Attribute::kI:
      return absl::StrCat(attribute.i());
    case v1::Attribute::kF:
      return absl::StrCat(attribute.f());
    case v1::Attribute::kS:
      return Quoted(attribute.s());
    case v1::Attribute::kT:
      return TensorText(attribute.t());
    case v1::Attribute::kG:
      return absl::StrCat("graph(", attribute.g().nodes_size(), " nodes)");
    case v1::Attribute::kInts:
      return absl::StrCat("[", absl::StrJoin(attribute.ints().values(), ","), "]");
    case v1::Attribute::kFloats:
      return absl::StrCat("[", absl::StrJoin(attribute.floats().values(), ","), "]");
    case v1::Attribute::kStrings: {
      std::vector<std::string> values;
      for (const std::string& s : attribute.strings().values()) values.push_back(Quoted(s));
      return absl::StrCat("[", absl::StrJoin(values, ","), "]");
    }
    case v1::Attribute::kTensors: {
      std::vector<std::string> values;
      for (const v1::Tensor& t : attribute.tensors().values()) values.push_back(TensorText(t));
      return absl::StrCat("[", absl::StrJoin(values, ","), "]");
    }
    case v1::Attribute::kGraphs:
      return absl::StrCat("graphs(", attribute.graphs().values_size(), ")");
    case v1::Attribute::kDtype:
      return DataTypeText(attribute.dtype());
    case v1::Attribute::kShape:
      return ShapeText(attribute.shape());
    case v1::Attribute::kOpaque:
      return absl::StrCat(attribute.opaque().kind(), attribute.opaque().is_list() ? "[...]" : "");
    case v1::Attribute::VALUE_NOT_SET:
      break;
  }
  return "";
}

std::string FormatAttributeSpec(const v1::AttributeSpec& spec) {
  std::string text = absl::StrCat(
      spec.name(), ":",
      v1::AttributeType_IsValid(spec.type()) ? EnumSuffix(v1::AttributeType_Name(spec.type()),
                                                          "ATTR_")
                                             : absl::StrCat("type(", spec.type(), ")"));
  if (spec.required()) {
    text += "!";
  } else if (spec.has_default_value() &&
             spec.default_value().value_case() != v1::Attribute::VALUE_NOT_SET) {
    absl::StrAppend(&text, "=", FormatAttributeValue(spec.default_value()));
  }
  return text;
}

std::string FormatOpList(const v1::ListOpsResponse& response) {
  TextTable table({{"domain"},
                   {"op"},
                   {"inputs"},
                   {"outputs"},
                   {"attributes"},
                   {"fusion"}});
  for (const v1::OpDescriptor& op : response.ops()) {
    std::vector<std::string> inputs, outputs, attributes;
    for (const v1::ArgSpec& arg : op.inputs()) inputs.push_back(FormatArgSpec(arg));
    for (const v1::ArgSpec& arg : op.outputs()) outputs.push_back(FormatArgSpec(arg));
    for (const v1::AttributeSpec& spec : op.attributes()) {
      attributes.push_back(FormatAttributeSpec(spec));
    }
    table.AddRow({op.domain().empty() ? "(default)" : op.domain(), op.name(),
                  JoinOrDash(inputs, ", "), JoinOrDash(outputs, ", "),
                  JoinOrDash(attributes, ", "),
                  EnumSuffix(v1::FusionPattern_Name(op.fusion_pattern()), "FUSION_")});
  }
  std::string out = table.Render();
  absl::StrAppend(&out, response.ops_size(), response.ops_size() == 1 ? " op" : " ops",
                  ".  name? optional, name[N..] variadic (at least N), attr:type! required, "
                  "attr:type=v default v\n");
  return out;
}

std::string FormatOpDescriptor(const v1::OpDescriptor& op) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseUtf8StringEscaping(true);
  printer.PrintToString(op, &text);
  return text;
}

}  // namespace graphopt
