#include "onnx_io/onnx_export.h"

#include <utility>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/proto_util.h"
#include "graph/types.h"
#include "onnx_io/onnx_import.h"
#include "onnx_io/onnx_portable.h"

namespace graphopt {
namespace {

void TensorTypeToOnnx(const v1::TensorType& t, onnx::TypeProto::Tensor* out) {
  out->set_elem_type(static_cast<int32_t>(t.dtype()));
  if (!t.has_shape()) return;
  onnx::TensorShapeProto* shape = out->mutable_shape();
  for (const v1::Dim& d : t.shape().dims()) {
    onnx::TensorShapeProto::Dimension* dim = shape->add_dim();
    if (d.value_case() == v1::Dim::kSize) dim->set_dim_value(d.size());
    if (d.value_case() == v1::Dim::kSymbol) dim->set_dim_param(d.symbol());
  }
}

// A tensor, sequence or optional type (v1::ValueKind) as ONNX's TypeProto.
void ValueTypeToOnnx(const v1::TensorType& t, onnx::TypeProto* out) {
  if (t.kind() == v1::VALUE_OPTIONAL_TENSOR || t.kind() == v1::VALUE_OPTIONAL_SEQUENCE) {
    out = out->mutable_optional_type()->mutable_elem_type();
  }
  if (t.kind() == v1::VALUE_SEQUENCE || t.kind() == v1::VALUE_OPTIONAL_SEQUENCE) {
    out = out->mutable_sequence_type()->mutable_elem_type();
  }
  TensorTypeToOnnx(t, out->mutable_tensor_type());
}

void ValueInfoToOnnx(v1::ValueInfo& v, onnx::ValueInfoProto* out) {
  out->set_name(std::move(*v.mutable_name()));
  if (v.has_type()) ValueTypeToOnnx(v.type(), out->mutable_type());
  if (!v.doc_string().empty()) out->set_doc_string(std::move(*v.mutable_doc_string()));
}

void TensorToOnnx(v1::Tensor& t, onnx::TensorProto* out) {
  out->mutable_dims()->Add(t.dims().begin(), t.dims().end());
  out->set_data_type(static_cast<int32_t>(t.dtype()));
  out->set_name(std::move(*t.mutable_name()));
  if (!t.doc_string().empty()) out->set_doc_string(std::move(*t.mutable_doc_string()));
  if (!t.blob().empty()) {
    int64_t count = 1;
    for (int64_t d : t.dims()) count *= d;
    out->set_data_location(onnx::TensorProto::EXTERNAL);
    onnx::StringStringEntryProto* location = out->add_external_data();
    location->set_key("location");
    location->set_value(absl::StrCat(kBlobLocationPrefix, t.blob()));
    onnx::StringStringEntryProto* length = out->add_external_data();
    length->set_key("length");
    length->set_value(absl::StrCat(count * DataTypeSize(t.dtype())));
    return;
  }
  if (t.dtype() == v1::DT_STRING) {
    for (std::string& s : *t.mutable_string_data()) out->add_string_data(std::move(s));
    return;
  }
  out->set_raw_data(std::move(*t.mutable_raw_data()));
}

absl::StatusOr<onnx::GraphProto> GraphToOnnxGraph(v1::Graph& g);

template <typename Message>
absl::StatusOr<Message> ParseOpaque(const std::string& bytes, const std::string& what) {
  Message m;
  if (!m.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " does not parse as ", m.GetTypeName()));
  }
  return m;
}

absl::Status OpaqueToOnnx(const v1::OpaqueAttribute& o, const std::string& what,
                          onnx::AttributeProto* out) {
  const bool sparse = o.kind() == "onnx.SparseTensorProto";
  if (!sparse && o.kind() != "onnx.TypeProto") {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " holds opaque '", o.kind(), "' data, which has no ONNX form"));
  }
  if (!o.is_list() && o.values_size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(what, " holds ", o.values_size(),
                                                   " opaque values; one expected"));
  }
  for (const std::string& bytes : o.values()) {
    if (sparse) {
      absl::StatusOr<onnx::SparseTensorProto> s = ParseOpaque<onnx::SparseTensorProto>(bytes, what);
      if (!s.ok()) return s.status();
      *(o.is_list() ? out->add_sparse_tensors() : out->mutable_sparse_tensor()) = *std::move(s);
    } else {
      absl::StatusOr<onnx::TypeProto> t = ParseOpaque<onnx::TypeProto>(bytes, what);
      if (!t.ok()) return t.status();
      *(o.is_list() ? out->add_type_protos() : out->mutable_tp()) = *std::move(t);
    }
  }
  if (sparse) {
    out->set_type(o.is_list() ? onnx::AttributeProto::SPARSE_TENSORS
                              : onnx::AttributeProto::SPARSE_TENSOR);
  } else {
    out->set_type(o.is_list() ? onnx::AttributeProto::TYPE_PROTOS
                              : onnx::AttributeProto::TYPE_PROTO);
  }
  return absl::OkStatus();
}

absl::Status AttributeToOnnx(v1::Attribute& a, const std::string& node, onnx::AttributeProto* out) {
  const std::string what = absl::StrCat("attribute '", a.name(), "' of ", node);
  out->set_name(std::move(*a.mutable_name()));
  if (!a.doc_string().empty()) out->set_doc_string(std::move(*a.mutable_doc_string()));
  switch (a.value_case()) {
    case v1::Attribute::kI:
      out->set_type(onnx::AttributeProto::INT);
      out->set_i(a.i());
      break;
    case v1::Attribute::kF:
      out->set_type(onnx::AttributeProto::FLOAT);
      out->set_f(a.f());
      break;
    case v1::Attribute::kS:
      out->set_type(onnx::AttributeProto::STRING);
      out->set_s(std::move(*a.mutable_s()));
      break;
    case v1::Attribute::kT:
      out->set_type(onnx::AttributeProto::TENSOR);
      TensorToOnnx(*a.mutable_t(), out->mutable_t());
      break;
    case v1::Attribute::kG: {
      absl::StatusOr<onnx::GraphProto> g = GraphToOnnxGraph(*a.mutable_g());
      if (!g.ok()) return g.status();
      out->set_type(onnx::AttributeProto::GRAPH);
      *out->mutable_g() = *std::move(g);
      break;
    }
    case v1::Attribute::kInts:
      out->set_type(onnx::AttributeProto::INTS);
      out->mutable_ints()->Add(a.ints().values().begin(), a.ints().values().end());
      break;
    case v1::Attribute::kFloats:
      out->set_type(onnx::AttributeProto::FLOATS);
      out->mutable_floats()->Add(a.floats().values().begin(), a.floats().values().end());
      break;
    case v1::Attribute::kStrings:
      out->set_type(onnx::AttributeProto::STRINGS);
      for (std::string& s : *a.mutable_strings()->mutable_values()) out->add_strings(std::move(s));
      break;
    case v1::Attribute::kTensors:
      out->set_type(onnx::AttributeProto::TENSORS);
      for (v1::Tensor& t : *a.mutable_tensors()->mutable_values()) TensorToOnnx(t, out->add_tensors());
      break;
    case v1::Attribute::kGraphs:
      out->set_type(onnx::AttributeProto::GRAPHS);
      for (v1::Graph& sub : *a.mutable_graphs()->mutable_values()) {
        absl::StatusOr<onnx::GraphProto> g = GraphToOnnxGraph(sub);
        if (!g.ok()) return g.status();
        *out->add_graphs() = *std::move(g);
      }
      break;
    case v1::Attribute::kDtype:
      // ONNX spells a type-valued attribute (Cast's 'to') as an int.
      out->set_type(onnx::AttributeProto::INT);
      out->set_i(static_cast<int64_t>(a.dtype()));
      break;
    case v1::Attribute::kShape:
      // ONNX has no shape attribute kind: a list of sizes, when every dim is known.
      out->set_type(onnx::AttributeProto::INTS);
      for (const v1::Dim& d : a.shape().dims()) {
        if (d.value_case() != v1::Dim::kSize) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, " is a shape with a symbolic or unknown dim; ONNX has no such attribute"));
        }
        out->add_ints(d.size());
      }
      break;
    case v1::Attribute::kOpaque:
      return OpaqueToOnnx(a.opaque(), what, out);
    case v1::Attribute::VALUE_NOT_SET:
      return absl::InvalidArgumentError(absl::StrCat(what, " has no value"));
  }
  return absl::OkStatus();
}

absl::StatusOr<onnx::GraphProto> GraphToOnnxGraph(v1::Graph& g) {
  onnx::GraphProto out;
  out.set_name(g.name().empty() ? std::string("graph") : std::move(*g.mutable_name()));
  if (!g.doc_string().empty()) out.set_doc_string(std::move(*g.mutable_doc_string()));
  out.mutable_node()->Reserve(g.nodes_size());
  for (int i = 0; i < g.nodes_size(); ++i) {
    v1::Node& n = *g.mutable_nodes(i);
    const std::string what =
        n.name().empty() ? absl::StrCat("node #", i, " (", n.op_type(), ")")
                         : absl::StrCat("node '", n.name(), "' (", n.op_type(), ")");
    onnx::NodeProto* node = out.add_node();
    for (std::string& s : *n.mutable_inputs()) node->add_input(std::move(s));
    for (std::string& s : *n.mutable_outputs()) node->add_output(std::move(s));
    if (!n.name().empty()) node->set_name(std::move(*n.mutable_name()));
    node->set_op_type(std::move(*n.mutable_op_type()));
    if (!n.domain().empty()) node->set_domain(std::move(*n.mutable_domain()));
    for (v1::Attribute& a : *n.mutable_attributes()) {
      if (absl::Status s = AttributeToOnnx(a, what, node->add_attribute()); !s.ok()) return s;
    }
    if (!n.doc_string().empty()) node->set_doc_string(std::move(*n.mutable_doc_string()));
  }
  out.mutable_initializer()->Reserve(g.initializers_size());
  for (v1::Tensor& t : *g.mutable_initializers()) TensorToOnnx(t, out.add_initializer());
  for (v1::ValueInfo& v : *g.mutable_inputs()) ValueInfoToOnnx(v, out.add_input());
  for (v1::ValueInfo& v : *g.mutable_outputs()) ValueInfoToOnnx(v, out.add_output());
  for (v1::ValueInfo& v : *g.mutable_value_info()) ValueInfoToOnnx(v, out.add_value_info());
  return out;
}

// Domains used by the nodes of `g` and its subgraphs, in sorted order. Iterative.
absl::btree_set<std::string> UsedDomains(const v1::Graph& g) {
  absl::btree_set<std::string> domains;
  std::vector<const v1::Graph*> pending = {&g};
  while (!pending.empty()) {
    const v1::Graph* cur = pending.back();
    pending.pop_back();
    for (const v1::Node& n : cur->nodes()) {
      domains.insert(n.domain());
      for (const v1::Attribute& a : n.attributes()) {
        if (a.has_g()) pending.push_back(&a.g());
        if (a.has_graphs()) {
          for (const v1::Graph& sub : a.graphs().values()) pending.push_back(&sub);
        }
      }
    }
  }
  return domains;
}

}  // namespace

absl::StatusOr<onnx::ModelProto> GraphToOnnx(v1::Graph graph, const OnnxExportOptions& options) {
  onnx::ModelProto model;
  const v1::ModelMetadata& meta = graph.model();
  model.set_ir_version(meta.ir_version() > 0 ? meta.ir_version() : kDefaultOnnxIrVersion);
  if (graph.has_model()) {
    // Only what is set: ONNX's fields are proto2, where an empty string still counts as given.
    if (!meta.producer_name().empty()) model.set_producer_name(meta.producer_name());
    if (!meta.producer_version().empty()) model.set_producer_version(meta.producer_version());
    if (!meta.domain().empty()) model.set_domain(meta.domain());
    if (meta.model_version() != 0) model.set_model_version(meta.model_version());
    if (!meta.doc_string().empty()) model.set_doc_string(meta.doc_string());
    for (const v1::StringEntry& e : meta.metadata_props()) {
      if (e.key() == kStateUpdatesMetadataKey) continue;  // written from the graph below
      onnx::StringStringEntryProto* out = model.add_metadata_props();
      out->set_key(e.key());
      out->set_value(e.value());
    }
  } else {
    model.set_producer_name("graphopt");
  }
  if (graph.state_updates_size() > 0) {
    // ONNX has no field for them: a metadata entry, one "state<TAB>update" line each, the
    // names C-escaped (so neither holds a raw tab or newline).
    std::vector<std::string> lines;
    for (const v1::StateUpdate& u : graph.state_updates()) {
      lines.push_back(absl::StrCat(absl::CEscape(u.state()), "\t", absl::CEscape(u.update())));
    }
    onnx::StringStringEntryProto* out = model.add_metadata_props();
    out->set_key(kStateUpdatesMetadataKey);
    out->set_value(absl::StrJoin(lines, "\n"));
  }

  absl::flat_hash_set<std::string> imported;
  for (const v1::OpsetImport& o : graph.opset_imports()) {
    onnx::OperatorSetIdProto* out = model.add_opset_import();
    if (!o.domain().empty()) out->set_domain(o.domain());
    out->set_version(o.version());
    imported.insert(o.domain());
  }
  for (const std::string& domain : UsedDomains(graph)) {
    if (imported.contains(domain)) continue;
    onnx::OperatorSetIdProto* out = model.add_opset_import();
    if (!domain.empty()) out->set_domain(domain);
    out->set_version(domain.empty() ? kDefaultOnnxOpset : 1);
  }
  if (model.opset_import_size() == 0) {
    // ONNX requires at least one opset import, even for a graph without nodes.
    model.add_opset_import()->set_version(kDefaultOnnxOpset);
  }

  absl::StatusOr<onnx::GraphProto> g = GraphToOnnxGraph(graph);
  if (!g.ok()) return g.status();
  *model.mutable_graph() = *std::move(g);
  if (!options.native_ops) {
    if (absl::Status s = ExportGraphoptOpsAsFunctions(&model, kDefaultOnnxOpset); !s.ok()) return s;
  }
  if (options.strip_value_info) model.mutable_graph()->clear_value_info();
  return model;
}

absl::StatusOr<std::string> GraphToOnnxBytes(v1::Graph graph, const OnnxExportOptions& options) {
  absl::StatusOr<onnx::ModelProto> model = GraphToOnnx(std::move(graph), options);
  if (!model.ok()) return model.status();
  return SerializeDeterministic(*model);
}

}  // namespace graphopt
