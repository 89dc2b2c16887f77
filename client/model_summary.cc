#include "client/model_summary.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/types.h"

namespace graphopt {
namespace {

// "25,557,032".
std::string WithCommas(int64_t n) {
  std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

// "97.5 MiB", "812 B".
std::string Bytes(int64_t n) {
  if (n < 1024) return absl::StrCat(n, " B");
  if (n < 1024 * 1024) return absl::StrFormat("%.1f KiB", n / 1024.0);
  if (n < int64_t{1} << 30) return absl::StrFormat("%.1f MiB", n / (1024.0 * 1024.0));
  return absl::StrFormat("%.2f GiB", n / (1024.0 * 1024.0 * 1024.0));
}

std::string TypeString(const v1::TensorType& t) {
  std::string out = DataTypeName(t.dtype());
  if (!t.has_shape()) return out + "[?..]";
  std::vector<std::string> dims;
  for (const v1::Dim& d : t.shape().dims()) {
    if (d.value_case() == v1::Dim::kSize) {
      dims.push_back(absl::StrCat(d.size()));
    } else if (d.value_case() == v1::Dim::kSymbol) {
      dims.push_back(d.symbol());
    } else {
      dims.push_back("?");
    }
  }
  return absl::StrCat(out, "[", absl::StrJoin(dims, ","), "]");
}

int64_t ElementCount(const v1::Tensor& t) {
  int64_t count = 1;
  for (int64_t d : t.dims()) count *= d;
  return count;
}

int64_t TensorBytes(const v1::Tensor& t) {
  if (t.dtype() == v1::DT_STRING) {
    int64_t total = 0;
    for (const std::string& s : t.string_data()) total += s.size();
    return total;
  }
  return ElementCount(t) * DataTypeSize(t.dtype());
}

void AppendValues(const google::protobuf::RepeatedPtrField<v1::ValueInfo>& values,
                  const char* title, std::string* out) {
  absl::StrAppend(out, title, " (", values.size(), "):\n");
  size_t width = 0;
  for (const v1::ValueInfo& v : values) width = std::max(width, v.name().size());
  for (const v1::ValueInfo& v : values) {
    absl::StrAppendFormat(out, "  %-*s  %s\n", static_cast<int>(width), v.name(),
                          v.has_type() ? TypeString(v.type()) : std::string("(type unknown)"));
  }
}

}  // namespace

std::string FormatModelSummary(const v1::Graph& graph, absl::string_view source) {
  std::string out = absl::StrCat("model: ", source, "\n");
  if (graph.has_model()) {
    const v1::ModelMetadata& m = graph.model();
    std::string producer = m.producer_name().empty() ? "unknown" : m.producer_name();
    if (!m.producer_version().empty()) absl::StrAppend(&producer, " ", m.producer_version());
    absl::StrAppend(&out, "  producer: ", producer, ", ONNX IR version ", m.ir_version());
    if (m.model_version() != 0) absl::StrAppend(&out, ", model version ", m.model_version());
    absl::StrAppend(&out, "\n");
    for (const v1::StringEntry& e : m.metadata_props()) {
      absl::StrAppend(&out, "  metadata: ", e.key(), " = ", e.value(), "\n");
    }
  }
  std::vector<std::string> opsets;
  for (const v1::OpsetImport& o : graph.opset_imports()) {
    opsets.push_back(absl::StrCat(o.domain().empty() ? "ai.onnx" : o.domain(), " ", o.version()));
  }
  if (!opsets.empty()) absl::StrAppend(&out, "  opsets: ", absl::StrJoin(opsets, ", "), "\n");
  absl::StrAppend(&out, "  graph: ", graph.name().empty() ? "(unnamed)" : graph.name(), ", ",
                  WithCommas(graph.nodes_size()), " nodes\n\n");

  // Graph inputs that are initializers are overridable weights, not real inputs: list apart.
  std::map<std::string, const v1::Tensor*> initializer_by_name;
  for (const v1::Tensor& t : graph.initializers()) initializer_by_name[t.name()] = &t;
  google::protobuf::RepeatedPtrField<v1::ValueInfo> inputs;
  int weight_inputs = 0;
  for (const v1::ValueInfo& v : graph.inputs()) {
    if (initializer_by_name.count(v.name())) {
      ++weight_inputs;
    } else {
      *inputs.Add() = v;
    }
  }
  AppendValues(inputs, "inputs", &out);
  if (weight_inputs > 0) {
    absl::StrAppend(&out, "  (and ", weight_inputs, " initializers also listed as inputs)\n");
  }
  AppendValues(graph.outputs(), "outputs", &out);

  // Parameters by element type.
  std::map<std::string, std::pair<int64_t, int64_t>> by_type;  // count, bytes
  int64_t params = 0, bytes = 0, blobs = 0;
  for (const v1::Tensor& t : graph.initializers()) {
    const int64_t n = ElementCount(t), b = TensorBytes(t);
    params += n;
    bytes += b;
    if (!t.blob().empty()) ++blobs;
    auto& entry = by_type[DataTypeName(t.dtype())];
    entry.first += n;
    entry.second += b;
  }
  absl::StrAppend(&out, "\nparameters: ", WithCommas(params), " (", Bytes(bytes), ") in ",
                  graph.initializers_size(), " initializers");
  if (blobs > 0) absl::StrAppend(&out, ", ", blobs, " of them blob references");
  absl::StrAppend(&out, "\n");
  for (const auto& [type, entry] : by_type) {
    absl::StrAppendFormat(&out, "  %-9s %15s  %s\n", type, WithCommas(entry.first),
                          Bytes(entry.second));
  }
  int64_t constant_nodes = 0, constant_bytes = 0;
  std::map<std::string, int64_t> histogram;
  for (const v1::Node& n : graph.nodes()) {
    histogram[n.domain().empty() ? n.op_type() : absl::StrCat(n.domain(), "::", n.op_type())]++;
    if (n.op_type() != "Constant" || !n.domain().empty()) continue;
    ++constant_nodes;
    for (const v1::Attribute& a : n.attributes()) {
      if (a.has_t()) constant_bytes += TensorBytes(a.t());
    }
  }
  if (constant_nodes > 0) {
    absl::StrAppend(&out, "constants: ", constant_nodes, " Constant nodes holding ",
                    Bytes(constant_bytes), "\n");
  }

  std::vector<std::pair<std::string, int64_t>> ops(histogram.begin(), histogram.end());
  std::stable_sort(ops.begin(), ops.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  absl::StrAppend(&out, "\nops (", ops.size(), " types):\n");
  size_t width = 0;
  for (const auto& [op, count] : ops) width = std::max(width, op.size());
  for (const auto& [op, count] : ops) {
    absl::StrAppendFormat(&out, "  %-*s %8s\n", static_cast<int>(width), op, WithCommas(count));
  }
  return out;
}

}  // namespace graphopt
