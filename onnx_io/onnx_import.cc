#include "onnx_io/onnx_import.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/base/config.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "graph/proto_util.h"
#include "graph/types.h"
#include "onnx_io/onnx_portable.h"

#ifndef ABSL_IS_LITTLE_ENDIAN
#error "graphopt's tensor raw_data is little-endian; this import assumes a little-endian host"
#endif

namespace graphopt {
namespace {

// Subgraphs (If/Loop/Scan bodies) deeper than this are refused: conversion recurses once per
// nesting level, never per node.
constexpr int kMaxSubgraphDepth = 64;
// ONNX 1.12's largest TensorProto.DataType (BFLOAT16); numbering is shared with v1::DataType.
constexpr int kMaxOnnxDataType = 16;

std::string Quoted(absl::string_view name) { return absl::StrCat("'", name, "'"); }

std::string NodeWhat(const onnx::NodeProto& n, int index) {
  std::string op = n.domain().empty() ? n.op_type() : absl::StrCat(n.domain(), "::", n.op_type());
  if (n.name().empty()) return absl::StrCat("node #", index, " (", op, ")");
  return absl::StrCat("node ", Quoted(n.name()), " (", op, ")");
}

absl::StatusOr<v1::DataType> DataTypeFromOnnx(int32_t elem_type, absl::string_view what) {
  if (elem_type < 0 || elem_type > kMaxOnnxDataType) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " has data type ", elem_type, ", which ONNX 1.12 does not define"));
  }
  return static_cast<v1::DataType>(elem_type);
}

// Copies `count` elements of a repeated typed field into little-endian raw bytes of
// `elem_size` bytes each (narrowing where ONNX widens: int32_data holds int8/uint16/bool/...).
template <typename Src, typename Field>
void PackNarrowed(const Field& field, int elem_size, std::string* raw) {
  raw->resize(static_cast<size_t>(field.size()) * elem_size);
  char* out = raw->data();
  for (const auto& v : field) {
    Src narrowed = static_cast<Src>(v);
    std::memcpy(out, &narrowed, sizeof(Src));
    out += sizeof(Src);
  }
}

template <typename Field>
void PackSame(const Field& field, std::string* raw) {
  using Elem = typename Field::value_type;
  raw->resize(static_cast<size_t>(field.size()) * sizeof(Elem));
  if (field.size() > 0) std::memcpy(raw->data(), field.data(), raw->size());
}

// Moves the typed-field storage of `t` into `raw` (little-endian, natural element size).
// Returns the number of scalar entries found, to be checked against the element count.
absl::StatusOr<int64_t> TypedFieldsToRaw(const onnx::TensorProto& t, v1::DataType dtype,
                                         std::string* raw, absl::string_view what) {
  switch (dtype) {
    case v1::DT_FLOAT32:
    case v1::DT_COMPLEX64:
      PackSame(t.float_data(), raw);
      return t.float_data_size();
    case v1::DT_FLOAT64:
    case v1::DT_COMPLEX128:
      PackSame(t.double_data(), raw);
      return t.double_data_size();
    case v1::DT_INT64:
      PackSame(t.int64_data(), raw);
      return t.int64_data_size();
    case v1::DT_UINT64:
      PackSame(t.uint64_data(), raw);
      return t.uint64_data_size();
    case v1::DT_UINT32:
      PackNarrowed<uint32_t>(t.uint64_data(), 4, raw);
      return t.uint64_data_size();
    case v1::DT_INT32:
      PackSame(t.int32_data(), raw);
      return t.int32_data_size();
    case v1::DT_INT16:
      PackNarrowed<int16_t>(t.int32_data(), 2, raw);
      return t.int32_data_size();
    case v1::DT_UINT16:
    case v1::DT_FLOAT16:
    case v1::DT_BFLOAT16:
      // 16-bit floats travel as their bit patterns in int32_data.
      PackNarrowed<uint16_t>(t.int32_data(), 2, raw);
      return t.int32_data_size();
    case v1::DT_INT8:
      PackNarrowed<int8_t>(t.int32_data(), 1, raw);
      return t.int32_data_size();
    case v1::DT_UINT8:
    case v1::DT_BOOL:
      PackNarrowed<uint8_t>(t.int32_data(), 1, raw);
      return t.int32_data_size();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has data type ", DataTypeName(dtype), " with typed-field data"));
  }
}

absl::Status DimsFromOnnx(const onnx::TensorProto& t, v1::Tensor* out, int64_t* count,
                          absl::string_view what) {
  *count = 1;
  out->mutable_dims()->Reserve(t.dims_size());
  for (int i = 0; i < t.dims_size(); ++i) {
    int64_t d = t.dims(i);
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has negative dim ", d, " at axis ", i));
    }
    if (d != 0 && *count > std::numeric_limits<int64_t>::max() / d) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has more elements than int64 holds"));
    }
    *count *= d;
    out->add_dims(d);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::TensorType> TensorTypeFromOnnx(const onnx::TypeProto::Tensor& t,
                                                  absl::string_view what) {
  v1::TensorType out;
  absl::StatusOr<v1::DataType> dtype = DataTypeFromOnnx(t.elem_type(), what);
  if (!dtype.ok()) return dtype.status();
  out.set_dtype(*dtype);
  if (!t.has_shape()) return out;
  v1::Shape* shape = out.mutable_shape();
  shape->mutable_dims()->Reserve(t.shape().dim_size());
  for (int i = 0; i < t.shape().dim_size(); ++i) {
    const onnx::TensorShapeProto::Dimension& d = t.shape().dim(i);
    v1::Dim* dim = shape->add_dims();
    switch (d.value_case()) {
      case onnx::TensorShapeProto::Dimension::kDimValue:
        if (d.dim_value() < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(what, " has negative dim ", d.dim_value(), " at axis ", i));
        }
        dim->set_size(d.dim_value());
        break;
      case onnx::TensorShapeProto::Dimension::kDimParam:
        if (!d.dim_param().empty()) dim->set_symbol(d.dim_param());
        break;
      default:
        break;  // unknown
    }
  }
  return out;
}

const char* TypeKindName(const onnx::TypeProto& t) {
  switch (t.value_case()) {
    case onnx::TypeProto::kSequenceType:
      return "a sequence";
    case onnx::TypeProto::kMapType:
      return "a map";
    case onnx::TypeProto::kOptionalType:
      return "an optional";
    case onnx::TypeProto::kSparseTensorType:
      return "a sparse tensor";
    case onnx::TypeProto::kOpaqueType:
      return "an opaque";
    default:
      return "a non-tensor";
  }
}

// A tensor, a sequence of tensors, or an optional of either (v1::ValueKind); UNIMPLEMENTED
// naming `what` for the other kinds (maps, sparse tensors, nested sequences).
absl::StatusOr<v1::TensorType> ValueTypeFromOnnx(const onnx::TypeProto& type,
                                                 absl::string_view what) {
  const onnx::TypeProto* t = &type;
  bool optional = false;
  if (t->value_case() == onnx::TypeProto::kOptionalType) {
    optional = true;
    t = &t->optional_type().elem_type();
  }
  bool sequence = false;
  if (t->value_case() == onnx::TypeProto::kSequenceType) {
    sequence = true;
    t = &t->sequence_type().elem_type();
  }
  const bool container = optional || sequence;
  if (container && t->value_case() == onnx::TypeProto::VALUE_NOT_SET) {
    // A sequence or optional whose element type is not given.
    v1::TensorType out;
    out.set_kind(optional ? (sequence ? v1::VALUE_OPTIONAL_SEQUENCE : v1::VALUE_OPTIONAL_TENSOR)
                          : v1::VALUE_SEQUENCE);
    return out;
  }
  if (t->value_case() != onnx::TypeProto::kTensorType) {
    return absl::UnimplementedError(absl::StrCat(
        what, " has ", TypeKindName(*t), " type", t == &type ? "" : " inside",
        "; graphopt carries tensors, sequences of tensors and optionals of either"));
  }
  absl::StatusOr<v1::TensorType> out = TensorTypeFromOnnx(t->tensor_type(), what);
  if (!out.ok()) return out.status();
  out->set_kind(optional ? (sequence ? v1::VALUE_OPTIONAL_SEQUENCE : v1::VALUE_OPTIONAL_TENSOR)
                         : (sequence ? v1::VALUE_SEQUENCE : v1::VALUE_TENSOR));
  return out;
}

absl::StatusOr<v1::ValueInfo> ValueInfoFromOnnx(onnx::ValueInfoProto& vi,
                                                absl::string_view kind) {
  v1::ValueInfo out;
  std::string what = absl::StrCat(kind, " ", Quoted(vi.name()));
  if (vi.has_type()) {
    const onnx::TypeProto& type = vi.type();
    if (type.value_case() != onnx::TypeProto::VALUE_NOT_SET) {
      absl::StatusOr<v1::TensorType> t = ValueTypeFromOnnx(type, what);
      if (!t.ok()) return t.status();
      *out.mutable_type() = *std::move(t);
    }
  }
  out.set_name(std::move(*vi.mutable_name()));
  if (!vi.doc_string().empty()) out.set_doc_string(std::move(*vi.mutable_doc_string()));
  return out;
}

absl::StatusOr<v1::Graph> GraphFromOnnxGraph(onnx::GraphProto g, int depth);

// The attribute's declared type, or for old models that leave it unset, the kind of the one
// value field that is set.
onnx::AttributeProto::AttributeType EffectiveType(const onnx::AttributeProto& a) {
  if (a.type() != onnx::AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return onnx::AttributeProto::FLOAT;
  if (a.has_i()) return onnx::AttributeProto::INT;
  if (a.has_s()) return onnx::AttributeProto::STRING;
  if (a.has_t()) return onnx::AttributeProto::TENSOR;
  if (a.has_g()) return onnx::AttributeProto::GRAPH;
  if (a.has_sparse_tensor()) return onnx::AttributeProto::SPARSE_TENSOR;
  if (a.has_tp()) return onnx::AttributeProto::TYPE_PROTO;
  if (a.floats_size() > 0) return onnx::AttributeProto::FLOATS;
  if (a.ints_size() > 0) return onnx::AttributeProto::INTS;
  if (a.strings_size() > 0) return onnx::AttributeProto::STRINGS;
  if (a.tensors_size() > 0) return onnx::AttributeProto::TENSORS;
  if (a.graphs_size() > 0) return onnx::AttributeProto::GRAPHS;
  if (a.sparse_tensors_size() > 0) return onnx::AttributeProto::SPARSE_TENSORS;
  if (a.type_protos_size() > 0) return onnx::AttributeProto::TYPE_PROTOS;
  return onnx::AttributeProto::UNDEFINED;
}

absl::StatusOr<v1::Attribute> AttributeFromOnnx(onnx::AttributeProto& a, const std::string& node,
                                                int depth) {
  v1::Attribute out;
  // Built only for an error: per attribute it would copy the node's label, which is as long as
  // the node's name (quadratic for a node with a long name and many attributes).
  auto what = [&] { return absl::StrCat("attribute ", Quoted(a.name()), " of ", node); };
  if (a.name().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(node, " has an attribute without a name"));
  }
  if (!a.ref_attr_name().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what(), " refers to function attribute ", Quoted(a.ref_attr_name()),
        " outside a function body"));
  }
  switch (EffectiveType(a)) {
    case onnx::AttributeProto::FLOAT:
      out.set_f(a.f());
      break;
    case onnx::AttributeProto::INT:
      out.set_i(a.i());
      break;
    case onnx::AttributeProto::STRING:
      out.set_s(std::move(*a.mutable_s()));
      break;
    case onnx::AttributeProto::TENSOR: {
      // TensorFromOnnx's messages start with `what`: given "", it is put in front on failure.
      absl::StatusOr<v1::Tensor> t = TensorFromOnnx(std::move(*a.mutable_t()), "");
      if (!t.ok()) {
        return absl::Status(t.status().code(), absl::StrCat(what(), t.status().message()));
      }
      *out.mutable_t() = *std::move(t);
      break;
    }
    case onnx::AttributeProto::GRAPH: {
      absl::StatusOr<v1::Graph> g = GraphFromOnnxGraph(std::move(*a.mutable_g()), depth + 1);
      if (!g.ok()) {
        return absl::Status(g.status().code(),
                            absl::StrCat("in ", what(), ": ", g.status().message()));
      }
      *out.mutable_g() = *std::move(g);
      break;
    }
    case onnx::AttributeProto::FLOATS:
      out.mutable_floats()->mutable_values()->Add(a.floats().begin(), a.floats().end());
      break;
    case onnx::AttributeProto::INTS:
      out.mutable_ints()->mutable_values()->Add(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto::STRINGS:
      for (std::string& s : *a.mutable_strings()) {
        out.mutable_strings()->add_values(std::move(s));
      }
      out.mutable_strings();
      break;
    case onnx::AttributeProto::TENSORS: {
      v1::TensorList* list = out.mutable_tensors();
      for (int i = 0; i < a.tensors_size(); ++i) {
        absl::StatusOr<v1::Tensor> t = TensorFromOnnx(std::move(*a.mutable_tensors(i)), "");
        if (!t.ok()) {
          return absl::Status(t.status().code(), absl::StrCat(what(), " tensor ", i,
                                                              t.status().message()));
        }
        *list->add_values() = *std::move(t);
      }
      break;
    }
    case onnx::AttributeProto::GRAPHS: {
      v1::GraphList* list = out.mutable_graphs();
      for (int i = 0; i < a.graphs_size(); ++i) {
        absl::StatusOr<v1::Graph> g = GraphFromOnnxGraph(std::move(*a.mutable_graphs(i)), depth + 1);
        if (!g.ok()) {
          return absl::Status(g.status().code(),
                              absl::StrCat("in ", what(), " graph ", i, ": ", g.status().message()));
        }
        *list->add_values() = *std::move(g);
      }
      break;
    }
    case onnx::AttributeProto::SPARSE_TENSOR:
      out.mutable_opaque()->set_kind("onnx.SparseTensorProto");
      out.mutable_opaque()->add_values(SerializeDeterministic(a.sparse_tensor()));
      break;
    case onnx::AttributeProto::TYPE_PROTO:
      out.mutable_opaque()->set_kind("onnx.TypeProto");
      out.mutable_opaque()->add_values(SerializeDeterministic(a.tp()));
      break;
    case onnx::AttributeProto::SPARSE_TENSORS:
      out.mutable_opaque()->set_kind("onnx.SparseTensorProto");
      out.mutable_opaque()->set_is_list(true);
      for (const auto& s : a.sparse_tensors()) {
        out.mutable_opaque()->add_values(SerializeDeterministic(s));
      }
      break;
    case onnx::AttributeProto::TYPE_PROTOS:
      out.mutable_opaque()->set_kind("onnx.TypeProto");
      out.mutable_opaque()->set_is_list(true);
      for (const auto& t : a.type_protos()) out.mutable_opaque()->add_values(SerializeDeterministic(t));
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(what(), " has no value"));
  }
  out.set_name(std::move(*a.mutable_name()));
  if (!a.doc_string().empty()) out.set_doc_string(std::move(*a.mutable_doc_string()));
  return out;
}

absl::StatusOr<v1::Graph> GraphFromOnnxGraph(onnx::GraphProto g, int depth) {
  if (depth > kMaxSubgraphDepth) {
    return absl::InvalidArgumentError(absl::StrCat("graph ", Quoted(g.name()), " is nested more than ",
                                                   kMaxSubgraphDepth, " subgraphs deep"));
  }
  if (g.sparse_initializer_size() > 0) {
    const onnx::SparseTensorProto& s = g.sparse_initializer(0);
    return absl::UnimplementedError(absl::StrCat(
        "sparse initializer ", Quoted(s.values().name()), " of graph ", Quoted(g.name()),
        ": sparse initializers are not supported; store it dense"));
  }
  if (g.quantization_annotation_size() > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "graph ", Quoted(g.name()), " has quantization annotations (tensor ",
        Quoted(g.quantization_annotation(0).tensor_name()), "), which graphopt does not carry"));
  }
  v1::Graph out;
  out.set_name(std::move(*g.mutable_name()));
  if (!g.doc_string().empty()) out.set_doc_string(std::move(*g.mutable_doc_string()));

  out.mutable_inputs()->Reserve(g.input_size());
  for (onnx::ValueInfoProto& vi : *g.mutable_input()) {
    absl::StatusOr<v1::ValueInfo> v = ValueInfoFromOnnx(vi, "graph input");
    if (!v.ok()) return v.status();
    *out.add_inputs() = *std::move(v);
  }
  out.mutable_outputs()->Reserve(g.output_size());
  for (onnx::ValueInfoProto& vi : *g.mutable_output()) {
    absl::StatusOr<v1::ValueInfo> v = ValueInfoFromOnnx(vi, "graph output");
    if (!v.ok()) return v.status();
    *out.add_outputs() = *std::move(v);
  }
  out.mutable_value_info()->Reserve(g.value_info_size());
  for (onnx::ValueInfoProto& vi : *g.mutable_value_info()) {
    absl::StatusOr<v1::ValueInfo> v = ValueInfoFromOnnx(vi, "value_info");
    if (!v.ok()) return v.status();
    *out.add_value_info() = *std::move(v);
  }
  out.mutable_initializers()->Reserve(g.initializer_size());
  for (onnx::TensorProto& t : *g.mutable_initializer()) {
    std::string what = absl::StrCat("initializer ", Quoted(t.name()));
    absl::StatusOr<v1::Tensor> tensor = TensorFromOnnx(std::move(t), what);
    if (!tensor.ok()) return tensor.status();
    *out.add_initializers() = *std::move(tensor);
  }
  out.mutable_nodes()->Reserve(g.node_size());
  for (int i = 0; i < g.node_size(); ++i) {
    onnx::NodeProto& n = *g.mutable_node(i);
    const std::string what = NodeWhat(n, i);
    v1::Node* node = out.add_nodes();
    node->set_name(std::move(*n.mutable_name()));
    node->set_op_type(std::move(*n.mutable_op_type()));
    if (n.domain() != "ai.onnx") node->set_domain(std::move(*n.mutable_domain()));
    node->mutable_inputs()->Reserve(n.input_size());
    for (std::string& s : *n.mutable_input()) node->add_inputs(std::move(s));
    node->mutable_outputs()->Reserve(n.output_size());
    for (std::string& s : *n.mutable_output()) node->add_outputs(std::move(s));
    node->mutable_attributes()->Reserve(n.attribute_size());
    for (onnx::AttributeProto& a : *n.mutable_attribute()) {
      absl::StatusOr<v1::Attribute> attr = AttributeFromOnnx(a, what, depth);
      if (!attr.ok()) return attr.status();
      *node->add_attributes() = *std::move(attr);
    }
    if (!n.doc_string().empty()) node->set_doc_string(std::move(*n.mutable_doc_string()));
  }
  return out;
}

}  // namespace

absl::StatusOr<v1::Tensor> TensorFromOnnx(onnx::TensorProto t, absl::string_view what) {
  v1::Tensor out;
  if (t.has_segment()) {
    return absl::UnimplementedError(absl::StrCat(what, " is a segment of a larger tensor"));
  }
  absl::StatusOr<v1::DataType> dtype = DataTypeFromOnnx(t.data_type(), what);
  if (!dtype.ok()) return dtype.status();
  if (*dtype == v1::DT_UNDEFINED) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has no data type"));
  }
  out.set_dtype(*dtype);
  int64_t count = 0;
  if (absl::Status s = DimsFromOnnx(t, &out, &count, what); !s.ok()) return s;
  out.set_name(std::move(*t.mutable_name()));
  if (!t.doc_string().empty()) out.set_doc_string(std::move(*t.mutable_doc_string()));

  const int elem_size = DataTypeSize(*dtype);
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    int64_t length = -1;
    for (const onnx::StringStringEntryProto& e : t.external_data()) {
      if (e.key() == "location") location = e.value();
      if (e.key() == "length" && !absl::SimpleAtoi(e.value(), &length)) length = -2;
    }
    if (!absl::StartsWith(location, kBlobLocationPrefix)) {
      return absl::UnimplementedError(absl::StrCat(
          what, " keeps its data in external file ", Quoted(location),
          "; load the model with its external data (onnx.load(path)) and send the tensors "
          "inline or as graphopt blobs"));
    }
    if (*dtype == v1::DT_STRING) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": string tensors cannot be blobs"));
    }
    if (length >= 0 && length != count * elem_size) {
      return absl::InvalidArgumentError(absl::StrCat(what, " declares ", length,
                                                     " bytes of external data; its dims need ",
                                                     count * elem_size));
    }
    out.set_blob(location.substr(kBlobLocationPrefix.size()));
    return out;
  }

  if (*dtype == v1::DT_STRING) {
    if (t.string_data_size() != count) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has ", t.string_data_size(),
                                                     " strings; its dims need ", count));
    }
    for (std::string& s : *t.mutable_string_data()) out.add_string_data(std::move(s));
    return out;
  }
  const int64_t want_bytes = count * elem_size;
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != want_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, " has ", t.raw_data().size(),
                                                     " bytes of raw_data; its dims and type ",
                                                     DataTypeName(*dtype), " need ", want_bytes));
    }
    out.set_raw_data(std::move(*t.mutable_raw_data()));
    return out;
  }
  std::string raw;
  absl::StatusOr<int64_t> entries = TypedFieldsToRaw(t, *dtype, &raw, what);
  if (!entries.ok()) return entries.status();
  const bool complex = *dtype == v1::DT_COMPLEX64 || *dtype == v1::DT_COMPLEX128;
  const int64_t want_entries = complex ? 2 * count : count;
  if (*entries != want_entries) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has ", *entries,
                                                   " data entries; its dims and type ",
                                                   DataTypeName(*dtype), " need ", want_entries));
  }
  out.set_raw_data(std::move(raw));
  return out;
}

absl::StatusOr<v1::Graph> GraphFromOnnx(onnx::ModelProto model) {
  if (absl::Status s = InlineLocalFunctions(&model); !s.ok()) return s;
  if (model.training_info_size() > 0) {
    return absl::UnimplementedError("the model has training_info, which graphopt does not carry");
  }
  if (!model.has_graph()) return absl::InvalidArgumentError("the model has no graph");
  absl::StatusOr<v1::Graph> graph = GraphFromOnnxGraph(std::move(*model.mutable_graph()), 0);
  if (!graph.ok()) return graph.status();

  for (const onnx::OperatorSetIdProto& o : model.opset_import()) {
    v1::OpsetImport* out = graph->add_opset_imports();
    if (o.domain() != "ai.onnx") out->set_domain(o.domain());
    out->set_version(o.version());
  }
  v1::ModelMetadata* meta = graph->mutable_model();
  meta->set_ir_version(model.ir_version());
  meta->set_producer_name(std::move(*model.mutable_producer_name()));
  meta->set_producer_version(std::move(*model.mutable_producer_version()));
  meta->set_domain(std::move(*model.mutable_domain()));
  meta->set_model_version(model.model_version());
  meta->set_doc_string(std::move(*model.mutable_doc_string()));
  for (onnx::StringStringEntryProto& e : *model.mutable_metadata_props()) {
    if (e.key() == kStateUpdatesMetadataKey) {
      // Written by GraphToOnnx: "state<TAB>update" lines, names C-escaped.
      for (absl::string_view line : absl::StrSplit(e.value(), '\n', absl::SkipEmpty())) {
        std::vector<absl::string_view> names = absl::StrSplit(line, '\t');
        std::string state, update;
        if (names.size() != 2 || !absl::CUnescape(names[0], &state) ||
            !absl::CUnescape(names[1], &update)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "metadata_props '", kStateUpdatesMetadataKey, "': the line '",
              absl::CHexEscape(line.substr(0, 200)), "' is not 'state<TAB>update'"));
        }
        v1::StateUpdate* u = graph->add_state_updates();
        u->set_state(std::move(state));
        u->set_update(std::move(update));
      }
      continue;
    }
    v1::StringEntry* out = meta->add_metadata_props();
    out->set_key(std::move(*e.mutable_key()));
    out->set_value(std::move(*e.mutable_value()));
  }
  return graph;
}

absl::StatusOr<v1::Graph> GraphFromOnnxBytes(std::string bytes) {
  onnx::ModelProto model;
  const size_t size = bytes.size();
  const bool parsed = model.ParseFromString(bytes);
  std::string().swap(bytes);  // release the serialized copy before converting
  if (!parsed) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ", size, " bytes given as an ONNX model do not parse as onnx.ModelProto"));
  }
  return GraphFromOnnx(std::move(model));
}

}  // namespace graphopt
