#include "tools/shape_agreement/agreement.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/graph.h"
#include "graph/inference.h"
#include "graph/proto_convert.h"
#include "graph/types.h"
#include "graph/verifier.h"
#include "onnx/defs/schema.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx_io/onnx_import.h"

namespace graphopt {
namespace shape_agreement {
namespace {

// ONNX's copy of the model names node i "<kNodeMarker>i", so that the node of each error in
// ONNX's combined error message is known even for unnamed or duplicate-named nodes.
constexpr absl::string_view kNodeMarker = "__shape_agreement_node_";

// What ONNX's inference gave: the type of each value it typed, and the nodes it rejected.
struct OnnxResult {
  onnx::ModelProto model;  // owns the types below
  absl::flat_hash_map<std::string, const onnx::TypeProto*> types;
  absl::flat_hash_map<int, std::string> node_errors;  // node index -> message
  std::string model_error;                            // not attributable to a node
};

// Splits ONNX's strict-mode error text, "... (op_type:Relu, node name: N): msg\n(op_type:..."
// into per-node messages for the nodes named by kNodeMarker. Returns false when it finds none.
bool ParseNodeErrors(const std::string& text, absl::flat_hash_map<int, std::string>* out) {
  static constexpr char kOpType[] = "(op_type:";
  static constexpr absl::string_view kNodeName = "node name: ";
  std::vector<size_t> starts;
  for (size_t p = text.find(kOpType); p != std::string::npos; p = text.find(kOpType, p + 1)) {
    starts.push_back(p);
  }
  bool found = false;
  for (size_t k = 0; k < starts.size(); ++k) {
    const size_t end = k + 1 < starts.size() ? starts[k + 1] : text.size();
    absl::string_view entry(text.data() + starts[k], end - starts[k]);
    const size_t name_at = entry.find(kNodeName);
    if (name_at == absl::string_view::npos) continue;
    absl::string_view rest = entry.substr(name_at + kNodeName.size());
    if (!absl::StartsWith(rest, kNodeMarker)) continue;  // a node inside a subgraph
    rest.remove_prefix(kNodeMarker.size());
    const size_t close = rest.find("): ");
    if (close == absl::string_view::npos) continue;
    int index = 0;
    if (!absl::SimpleAtoi(rest.substr(0, close), &index)) continue;
    absl::string_view message = rest.substr(close + 3);
    while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) {
      message.remove_suffix(1);
    }
    out->emplace(index, std::string(message));
    found = true;
  }
  return found;
}

std::unique_ptr<OnnxResult> RunOnnx(const onnx::ModelProto& model) {
  auto result = std::make_unique<OnnxResult>();
  result->model = model;
  onnx::GraphProto* g = result->model.mutable_graph();
  g->clear_value_info();
  for (onnx::ValueInfoProto& out : *g->mutable_output()) out.clear_type();
  for (int i = 0; i < g->node_size(); ++i) {
    g->mutable_node(i)->set_name(absl::StrCat(kNodeMarker, i));
  }
  // Strict mode (error_mode 1) still infers every node it can and then reports all node
  // errors at once; data propagation lets Shape -> Gather -> Concat -> Reshape chains resolve.
  const onnx::ShapeInferenceOptions options(/*check_type_val=*/false, /*strict_mode_val=*/1,
                                            /*data_prop_val=*/true);
  // ONNX's shape inference reports errors only by throwing. This is the one place graphopt's
  // code catches exceptions: the exception never leaves this function, and turns into data.
  try {
    onnx::shape_inference::InferShapes(result->model, onnx::OpSchemaRegistry::Instance(),
                                       options);
  } catch (const std::exception& e) {
    const std::string text = e.what();
    if (!ParseNodeErrors(text, &result->node_errors)) result->model_error = text;
  }
  for (const onnx::ValueInfoProto& vi : result->model.graph().value_info()) {
    if (vi.has_type()) result->types[vi.name()] = &vi.type();
  }
  for (const onnx::ValueInfoProto& vi : result->model.graph().output()) {
    if (vi.has_type()) result->types[vi.name()] = &vi.type();
  }
  return result;
}

// An ONNX dim as graphopt's Dim: ONNX's generated "unk__N" symbols are unknown.
Dim DimFromOnnx(const onnx::TensorShapeProto::Dimension& d) {
  if (d.has_dim_value()) return Dim::Known(d.dim_value());
  if (d.has_dim_param() && !d.dim_param().empty() && !absl::StartsWith(d.dim_param(), "unk__")) {
    return Dim::Symbol(d.dim_param());
  }
  return Dim::Unknown();
}

// ONNX's tensor type in graphopt's terms; nullopt when ONNX knows nothing about the value
// (no type, a non-tensor type, or neither an element type nor a shape).
// A tensor type, or a sequence / optional of tensors as graphopt's value kinds.
std::optional<TensorType> TensorTypeFromOnnxType(const onnx::TypeProto* type) {
  if (type == nullptr) return std::nullopt;
  const bool optional = type->has_optional_type();
  if (optional) type = &type->optional_type().elem_type();
  const bool sequence = type->has_sequence_type();
  if (sequence) type = &type->sequence_type().elem_type();
  if (!type->has_tensor_type()) return std::nullopt;
  const onnx::TypeProto::Tensor& t = type->tensor_type();
  TensorType out;
  out.dtype = static_cast<v1::DataType>(t.elem_type());
  out.kind = optional ? (sequence ? v1::VALUE_OPTIONAL_SEQUENCE : v1::VALUE_OPTIONAL_TENSOR)
                      : (sequence ? v1::VALUE_SEQUENCE : v1::VALUE_TENSOR);
  if (t.has_shape()) {
    out.shape.emplace();
    for (const auto& d : t.shape().dim()) out.shape->push_back(DimFromOnnx(d));
  }
  if (out.dtype == v1::DT_UNDEFINED && !out.shape && out.is_tensor()) return std::nullopt;
  return out;
}

bool HasType(const TensorType& t) {
  return t.dtype != v1::DT_UNDEFINED || t.shape.has_value() || !t.is_tensor();
}

struct Comparison {
  bool conflict = false;
  bool graphopt_more = false;
  bool onnx_more = false;
};

Comparison Compare(const TensorType& g, const TensorType& o) {
  Comparison c;
  c.conflict |= g.kind != o.kind;
  if (g.dtype != v1::DT_UNDEFINED && o.dtype != v1::DT_UNDEFINED) {
    c.conflict |= g.dtype != o.dtype;
  } else {
    c.graphopt_more |= g.dtype != v1::DT_UNDEFINED;
    c.onnx_more |= o.dtype != v1::DT_UNDEFINED;
  }
  if (!g.shape || !o.shape) {
    c.graphopt_more |= g.shape.has_value();
    c.onnx_more |= o.shape.has_value();
    return c;
  }
  if (g.shape->size() != o.shape->size()) {
    c.conflict = true;
    return c;
  }
  for (size_t i = 0; i < g.shape->size(); ++i) {
    const Dim& a = (*g.shape)[i];
    const Dim& b = (*o.shape)[i];
    if (a.is_unknown() || b.is_unknown()) {
      c.graphopt_more |= !a.is_unknown();
      c.onnx_more |= !b.is_unknown();
    } else if (a != b) {  // two sizes, two symbols, or a size against a symbol
      c.conflict = true;
    }
  }
  return c;
}

std::string GraphoptTypeString(const TensorType& t) {
  return HasType(t) ? TensorTypeToString(t) : "none";
}

}  // namespace

std::string OnnxTypeToString(const onnx::TypeProto& type) {
  switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
    case onnx::TypeProto::kSequenceType:
    case onnx::TypeProto::kOptionalType:
      break;
    case onnx::TypeProto::kMapType:
      return "map";
    case onnx::TypeProto::kSparseTensorType:
      return "sparse_tensor";
    default:
      return "none";
  }
  std::optional<TensorType> t = TensorTypeFromOnnxType(&type);
  if (t) return TensorTypeToString(*t);
  return type.has_sequence_type() ? "sequence" : type.has_optional_type() ? "optional" : "none";
}

onnx::ModelProto SymbolizeInputs(const onnx::ModelProto& model) {
  onnx::ModelProto out = model;
  onnx::GraphProto* g = out.mutable_graph();
  absl::flat_hash_set<std::string> initializers;
  for (const onnx::TensorProto& t : g->initializer()) initializers.insert(t.name());
  for (onnx::ValueInfoProto& in : *g->mutable_input()) {
    if (initializers.contains(in.name()) || !in.type().has_tensor_type() ||
        !in.type().tensor_type().has_shape()) {
      continue;
    }
    for (auto& d : *in.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim()) {
      if (d.has_dim_value()) d.set_dim_param(absl::StrCat("d", d.dim_value()));
    }
  }
  return out;
}

absl::StatusOr<Graph> ImportForInference(const onnx::ModelProto& model) {
  onnx::ModelProto stripped = model;
  stripped.mutable_graph()->clear_value_info();
  for (onnx::ValueInfoProto& out : *stripped.mutable_graph()->mutable_output()) out.clear_type();
  absl::StatusOr<v1::Graph> proto = GraphFromOnnx(std::move(stripped));
  if (!proto.ok()) return proto.status();
  return GraphFromProto(*std::move(proto));
}

ModelResult CompareModel(absl::string_view name, const onnx::ModelProto& model,
                         const OpRegistry& ops, const CompareOptions& options) {
  ModelResult r;
  r.model = std::string(name);

  absl::StatusOr<Graph> built = ImportForInference(model);
  if (!built.ok()) {
    r.import_error = built.status().ToString();
    r.unimplemented = built.status().code() == absl::StatusCode::kUnimplemented;
    return r;
  }
  Graph& graph = *built;
  if (graph.num_node_slots() != model.graph().node_size()) {
    r.import_error = absl::StrCat("internal: ", graph.num_node_slots(), " nodes imported of ",
                                  model.graph().node_size());
    return r;
  }
  absl::StatusOr<std::vector<NodeId>> order = graph.TopologicalOrder();
  if (!order.ok()) {
    r.import_error = order.status().ToString();
    return r;
  }

  std::unique_ptr<OnnxResult> onnx = RunOnnx(model);
  if (!onnx->model_error.empty()) {
    r.onnx_error = onnx->model_error;
    return r;
  }

  // graphopt's inference, node by node; unknown ops and failing rules leave outputs unknown.
  std::vector<const OpDef*> node_ops(graph.num_node_slots(), nullptr);
  std::vector<std::string> node_errors(graph.num_node_slots());
  DimsValueTable dims_values = InitialDimsValues(graph);
  for (NodeId id : *order) {
    const Node& n = graph.node(id);
    const OpDef* op = ops.Find(n.domain, n.op_type);
    node_ops[id.value()] = op;
    if (op == nullptr) continue;
    absl::Status s = InferNodeTypes(graph, id, *op);
    if (s.ok()) s = InferNodeShapes(graph, id, *op, &dims_values);
    if (s.ok()) continue;
    node_errors[id.value()] = std::string(s.message());
    for (ValueId out : n.outputs) {
      if (!out.valid()) continue;
      graph.mutable_value(out).type = TensorType();
      dims_values[out.value()].reset();
    }
  }

  for (int i = 0; i < graph.num_node_slots(); ++i) {
    const Node& n = graph.node(NodeId(i));
    const std::string op_label = OpLabel(n.domain, n.op_type);
    const std::string& original_name = model.graph().node(i).name();
    const std::string node_label = original_name.empty() ? absl::StrCat("#", i) : original_name;
    auto onnx_error = onnx->node_errors.find(i);
    if (onnx_error != onnx->node_errors.end()) {
      r.onnx_node_errors.push_back(
          absl::StrCat(node_label, " (", op_label, "): ", onnx_error->second));
    } else if (node_ops[i] != nullptr) {
      if (absl::Status s = VerifyNode(graph, NodeId(i), ops); !s.ok()) {
        r.verifier_errors.push_back(absl::StrCat(node_label, " (", op_label, "): ", s.message()));
      }
    }
    for (ValueId out : n.outputs) {
      if (!out.valid()) continue;
      const std::string& value_name = graph.value(out).name;
      auto it = onnx->types.find(value_name);
      const std::optional<TensorType> o =
          TensorTypeFromOnnxType(it == onnx->types.end() ? nullptr : it->second);
      const std::string onnx_string = it == onnx->types.end() ? "none"
                                                              : OnnxTypeToString(*it->second);
      if (options.record_values) {
        std::string g = node_ops[i] == nullptr ? "unsupported op"
                        : node_errors[i].empty()
                            ? GraphoptTypeString(graph.value(out).type)
                            : absl::StrCat("error: ", node_errors[i]);
        r.values.push_back({r.model, value_name, node_label, op_label, onnx_string, g});
      }
      if (node_ops[i] == nullptr) {
        ++r.unsupported;
        ++r.unsupported_ops[op_label];
        continue;
      }
      if (!node_errors[i].empty()) {
        if (onnx_error != onnx->node_errors.end()) {
          ++r.neither;  // both reject the node
          continue;
        }
        ++r.disagreed;
        r.disagreements.push_back({r.model, value_name, node_label, op_label, onnx_string,
                                   absl::StrCat("error: ", node_errors[i])});
        continue;
      }
      const TensorType& g = graph.value(out).type;
      if (!HasType(g) || !o) {
        if (HasType(g)) {
          ++r.graphopt_only;
        } else if (o) {
          ++r.onnx_only;
        } else {
          ++r.neither;
        }
        continue;
      }
      const Comparison c = Compare(g, *o);
      if (c.conflict) {
        ++r.disagreed;
        r.disagreements.push_back(
            {r.model, value_name, node_label, op_label, onnx_string, GraphoptTypeString(g)});
        continue;
      }
      ++r.agreed;
      if (c.graphopt_more) ++r.graphopt_knows_more;
      if (c.onnx_more) ++r.onnx_knows_more;
    }
  }
  return r;
}

void Summary::Add(const ModelResult& r) {
  ++models;
  if (!r.import_error.empty()) {
    not_imported.push_back(absl::StrCat(r.model, ": ", r.import_error));
  }
  if (!r.onnx_error.empty()) onnx_failed.push_back(absl::StrCat(r.model, ": ", r.onnx_error));
  agreed += r.agreed;
  disagreed += r.disagreed;
  unsupported += r.unsupported;
  graphopt_only += r.graphopt_only;
  onnx_only += r.onnx_only;
  neither += r.neither;
  graphopt_knows_more += r.graphopt_knows_more;
  onnx_knows_more += r.onnx_knows_more;
  for (const auto& [op, n] : r.unsupported_ops) unsupported_ops[op] += n;
  onnx_node_errors += static_cast<int64_t>(r.onnx_node_errors.size());
  for (const std::string& e : r.verifier_errors) {
    verifier_errors.push_back(absl::StrCat(r.model, ": ", e));
  }
  disagreements.insert(disagreements.end(), r.disagreements.begin(), r.disagreements.end());
}

}  // namespace shape_agreement
bool CollectModelFiles(const std::vector<std::string>& args,
                       std::vector<std::filesystem::path>* out) {
  namespace fs = std::filesystem;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<fs::path> found;
      for (auto it = fs::recursive_directory_iterator(
               arg, fs::directory_options::follow_directory_symlink, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->path().filename() == "model.onnx" && it->is_regular_file()) {
          found.push_back(it->path());
        }
      }
      if (ec) {
        std::fprintf(stderr, "error: cannot read directory %s: %s\n", arg.c_str(),
                     ec.message().c_str());
        return false;
      }
      std::sort(found.begin(), found.end());
      out->insert(out->end(), found.begin(), found.end());
    } else if (fs::is_regular_file(arg, ec)) {
      out->push_back(arg);
    } else {
      std::fprintf(stderr, "error: %s is neither a file nor a directory\n", arg.c_str());
      return false;
    }
  }
  return true;
}

}  // namespace graphopt
