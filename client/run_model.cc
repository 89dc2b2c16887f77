#include "client/run_model.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/types.h"
#include "onnx_io/onnx_values.h"
#include "runtime/npy.h"
#include "util/file_util.h"

namespace graphopt {

using runtime::Tensor;

absl::StatusOr<std::vector<InputSpec>> ParseInputSpecs(const std::vector<std::string>& specs) {
  std::vector<InputSpec> out;
  for (const std::string& s : specs) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input '", s, "': expected NAME=FILE.npy"));
    }
    InputSpec spec{s.substr(0, eq), s.substr(eq + 1)};
    for (const InputSpec& o : out) {
      if (o.name == spec.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("--input: '", spec.name, "' is given twice"));
      }
    }
    out.push_back(std::move(spec));
  }
  return out;
}

namespace {

absl::StatusOr<Tensor> RandomTensor(const Value& value,
                                    const std::map<std::string, int64_t>& bindings,
                                    std::mt19937_64& rng) {
  const TensorType& type = value.type;
  if (!type.is_tensor()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", value.name, "' is a ", ValueKindName(type.kind), ": give it with --input ",
        value.name, "=FILE.pb (an ONNX SequenceProto or OptionalProto)"));
  }
  if (type.dtype == v1::DT_UNDEFINED || !type.shape.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "input '", value.name, "' has no declared ", type.dtype == v1::DT_UNDEFINED ? "type" : "rank",
        ": give it with --input ", value.name, "=FILE.npy"));
  }
  runtime::Shape shape;
  for (const Dim& d : *type.shape) {
    if (d.is_known()) {
      shape.push_back(d.size());
    } else if (d.is_symbol()) {
      auto it = bindings.find(d.symbol());
      shape.push_back(it == bindings.end() ? 1 : it->second);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "input '", value.name, "' has an unknown dim (", TensorTypeToString(type),
          "): give it with --input ", value.name, "=FILE.npy"));
    }
  }
  absl::StatusOr<Tensor> t = Tensor::Allocate(type.dtype, shape);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("input '", value.name, "': ", t.status().message()));
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::uniform_int_distribution<int> small(0, 3);
  const int64_t n = t->num_elements();
  switch (type.dtype) {
    case v1::DT_FLOAT32:
      for (int64_t i = 0; i < n; ++i) t->data<float>()[i] = real(rng);
      break;
    case v1::DT_FLOAT64:
      for (int64_t i = 0; i < n; ++i) t->data<double>()[i] = real(rng);
      break;
    case v1::DT_FLOAT16:
      for (int64_t i = 0; i < n; ++i) t->data<runtime::Float16>()[i] = runtime::Float16(real(rng));
      break;
    case v1::DT_BFLOAT16:
      for (int64_t i = 0; i < n; ++i) t->data<runtime::BFloat16>()[i] = runtime::BFloat16(real(rng));
      break;
    case v1::DT_BOOL:
      for (int64_t i = 0; i < n; ++i) t->data<bool>()[i] = small(rng) >= 2;
      break;
    case v1::DT_INT64:
      for (int64_t i = 0; i < n; ++i) t->data<int64_t>()[i] = small(rng);
      break;
    case v1::DT_INT32:
      for (int64_t i = 0; i < n; ++i) t->data<int32_t>()[i] = small(rng);
      break;
    case v1::DT_INT8:
    case v1::DT_UINT8:
      for (int64_t i = 0; i < n; ++i) t->data<uint8_t>()[i] = static_cast<uint8_t>(small(rng));
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat("input '", value.name, "' is ",
                                                     DataTypeName(type.dtype),
                                                     ": no random values for it; give a file"));
  }
  return t;
}

}  // namespace

absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> PrepareInputs(
    const Graph& graph, const std::vector<InputSpec>& specs,
    const std::map<std::string, int64_t>& bindings, uint64_t seed) {
  absl::flat_hash_map<std::string, const InputSpec*> by_name;
  for (const InputSpec& s : specs) by_name[s.name] = &s;
  for (const InputSpec& s : specs) {
    bool found = false;
    for (ValueId v : graph.inputs()) found = found || graph.value(v).name == s.name;
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat("--input '", s.name, "': the model has no input of that name"));
    }
  }
  std::mt19937_64 rng(seed);
  std::vector<std::pair<std::string, Tensor>> out;
  for (ValueId v : graph.inputs()) {
    const Value& value = graph.value(v);
    auto it = by_name.find(value.name);
    if (it != by_name.end()) {
      absl::StatusOr<std::string> bytes = ReadFileBytes(it->second->npy_path);
      if (!bytes.ok()) return bytes.status();
      // .pb: ONNX's value messages (a TensorProto, or a SequenceProto / OptionalProto for an
      // input declared a sequence or optional), as ONNX's test data stores them.
      absl::StatusOr<Tensor> t =
          absl::EndsWith(it->second->npy_path, ".pb")
              ? ValueFromOnnxBytes(*bytes, value.type.kind, it->second->npy_path)
              : runtime::ParseNpy(*bytes, it->second->npy_path);
      if (!t.ok()) return t.status();
      // NumPy has no bfloat16: a float32 file feeds a bfloat16 input, rounded to nearest even.
      if (value.type.dtype == v1::DT_BFLOAT16 && t->dtype() == v1::DT_FLOAT32) {
        t = runtime::Float32ToBFloat16(*t);
        if (!t.ok()) return t.status();
      }
      // A sequence or optional read from a .pb was checked against the input's kind by
      // ValueFromOnnxBytes; its items carry the dtype, the container does not.
      if (value.type.kind == v1::VALUE_TENSOR && value.type.dtype != v1::DT_UNDEFINED &&
          t->dtype() != value.type.dtype) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--input '", value.name, "': '", it->second->npy_path, "' holds ",
            DataTypeName(t->dtype()), "; the model's input is ", DataTypeName(value.type.dtype),
            value.type.dtype == v1::DT_BFLOAT16
                ? " (give float32, or ml_dtypes' bfloat16 saved by np.save)"
                : ""));
      }
      out.emplace_back(value.name, *std::move(t));
      continue;
    }
    if (value.initializer >= 0) continue;  // an overridable weight keeps its initializer
    absl::StatusOr<Tensor> t = RandomTensor(value, bindings, rng);
    if (!t.ok()) return t.status();
    out.emplace_back(value.name, *std::move(t));
  }
  return out;
}

std::string FormatTensorSummary(const std::string& name, const Tensor& t) {
  std::string line = absl::StrFormat("%-16s %-22s", name, t.DebugString());
  if (!t.is_tensor()) return line;
  const int64_t n = t.num_elements();
  if (t.dtype() == v1::DT_STRING) {
    for (int64_t i = 0; i < std::min<int64_t>(n, 4); ++i) absl::StrAppend(&line, " '", t.strings()[i], "'");
    return line;
  }
  if (n == 0) return line + "  (empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  int64_t nan = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = t.ElementAsDouble(i);
    if (std::isnan(x)) {
      ++nan;
      continue;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
    sum += x;
  }
  absl::StrAppendFormat(&line, "  min %.6g max %.6g mean %.6g", lo, hi,
                        n > nan ? sum / static_cast<double>(n - nan) : NAN);
  if (nan > 0) absl::StrAppend(&line, "  (", nan, " NaN)");
  line += "  [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 4); ++i) {
    absl::StrAppendFormat(&line, "%s%.6g", i ? ", " : "", t.ElementAsDouble(i));
  }
  absl::StrAppend(&line, n > 4 ? ", ...]" : "]");
  return line;
}

void ProfileMedian::Add(std::vector<runtime::NodeTiming> run) {
  bool same = run.size() == nodes_.size();
  for (size_t i = 0; same && i < run.size(); ++i) same = run[i].node == nodes_[i].node;
  if (!same) {
    nodes_ = std::move(run);
    micros_.assign(nodes_.size(), {});
    for (size_t i = 0; i < nodes_.size(); ++i) micros_[i].push_back(nodes_[i].micros);
    added_ = 1;
    return;
  }
  const int64_t slot = added_ % kMaxRuns;
  for (size_t i = 0; i < run.size(); ++i) {
    std::vector<double>& m = micros_[i];
    if (slot < static_cast<int64_t>(m.size())) {
      m[slot] = run[i].micros;
    } else {
      m.push_back(run[i].micros);
    }
  }
  ++added_;
}

std::vector<runtime::NodeTiming> ProfileMedian::Median() const {
  std::vector<runtime::NodeTiming> out = nodes_;
  for (size_t i = 0; i < out.size(); ++i) {
    std::vector<double> m = micros_[i];
    std::nth_element(m.begin(), m.begin() + m.size() / 2, m.end());
    out[i].micros = m[m.size() / 2];
  }
  return out;
}

std::string FormatProfile(const std::vector<runtime::NodeTiming>& timings, int top_nodes) {
  struct OpRow {
    std::string op;
    int nodes = 0;
    double micros = 0;
  };
  std::map<std::string, OpRow> ops;
  double total = 0;
  for (const runtime::NodeTiming& t : timings) {
    OpRow& row = ops[t.op_type];
    row.op = t.op_type;
    ++row.nodes;
    row.micros += t.micros;
    total += t.micros;
  }
  std::vector<OpRow> rows;
  for (auto& [k, r] : ops) rows.push_back(r);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const OpRow& a, const OpRow& b) { return a.micros > b.micros; });
  std::string out = absl::StrFormat("%-24s %6s %10s %7s\n", "op", "nodes", "ms", "share");
  out += std::string(50, '-') + "\n";
  for (const OpRow& r : rows) {
    absl::StrAppendFormat(&out, "%-24s %6d %10.3f %6.1f%%\n", r.op, r.nodes, r.micros / 1000,
                          total > 0 ? 100 * r.micros / total : 0);
  }
  absl::StrAppendFormat(&out, "%-24s %6d %10.3f\n", "total", static_cast<int>(timings.size()),
                        total / 1000);
  std::vector<const runtime::NodeTiming*> slow;
  for (const runtime::NodeTiming& t : timings) slow.push_back(&t);
  std::stable_sort(slow.begin(), slow.end(), [](const runtime::NodeTiming* a,
                                                const runtime::NodeTiming* b) {
    return a->micros > b->micros;
  });
  if (top_nodes > 0 && !slow.empty()) {
    absl::StrAppendFormat(&out, "\nslowest nodes\n%-40s %-16s %10s\n", "node", "op", "ms");
    for (int i = 0; i < top_nodes && i < static_cast<int>(slow.size()); ++i) {
      absl::StrAppendFormat(&out, "%-40s %-16s %10.3f\n", slow[i]->node, slow[i]->op_type,
                            slow[i]->micros / 1000);
    }
  }
  return out;
}

std::string NpyFileName(const std::string& value_name) {
  std::string out;
  for (char c : value_name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    out += ok ? c : '_';
  }
  if (out.empty() || out[0] == '.') out = "_" + out;
  return out + ".npy";
}

std::vector<std::string> NpyFileNames(const std::vector<std::string>& value_names) {
  absl::flat_hash_map<std::string, std::string> file_of_value;
  absl::flat_hash_set<std::string> taken;
  std::vector<std::string> files;
  files.reserve(value_names.size());
  for (const std::string& value : value_names) {
    auto it = file_of_value.find(value);
    if (it != file_of_value.end()) {
      files.push_back(it->second);
      continue;
    }
    std::string file = NpyFileName(value);
    if (taken.contains(file)) {
      const std::string stem = file.substr(0, file.size() - 4);  // without ".npy"
      for (int k = 2;; ++k) {
        file = absl::StrCat(stem, "_", k, ".npy");
        if (!taken.contains(file)) break;
      }
    }
    taken.insert(file);
    file_of_value.emplace(value, file);
    files.push_back(std::move(file));
  }
  return files;
}

}  // namespace graphopt
