#include "graph/onnx_type_bytes.h"

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/wire_format_lite.h"

namespace graphopt {
namespace {

using google::protobuf::io::CodedInputStream;
using WireFormat = google::protobuf::internal::WireFormatLite;

// Field numbers of onnx.proto (ONNX 1.12): TypeProto, TypeProto.Tensor, TensorShapeProto and
// its Dimension.
constexpr int kTypeTensor = 1;
constexpr int kTypeSequence = 4;
constexpr int kTypeMap = 5;
constexpr int kTypeSparseTensor = 8;
constexpr int kTypeOptional = 9;
constexpr int kTensorElemType = 1;
constexpr int kTensorShape = 2;
constexpr int kShapeDim = 1;
constexpr int kDimValue = 1;
constexpr int kDimParam = 2;
// Sequence and Optional hold their element's TypeProto as field 1.
constexpr int kElemType = 1;

absl::Status Malformed() {
  return absl::InvalidArgumentError("the attribute's bytes are not an ONNX TypeProto");
}

// Reads a length-delimited field's bytes.
bool ReadBytes(CodedInputStream& in, std::string* out) {
  uint32_t size = 0;
  return in.ReadVarint32(&size) && in.ReadString(out, static_cast<int>(size));
}

absl::StatusOr<Dim> ParseDim(const std::string& bytes) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  Dim dim;
  while (uint32_t tag = in.ReadTag()) {
    const int field = WireFormat::GetTagFieldNumber(tag);
    if (field == kDimValue && WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_VARINT) {
      uint64_t v = 0;
      if (!in.ReadVarint64(&v)) return Malformed();
      dim = Dim::Known(static_cast<int64_t>(v));
    } else if (field == kDimParam &&
               WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      std::string param;
      if (!ReadBytes(in, &param)) return Malformed();
      dim = param.empty() ? Dim::Unknown() : Dim::Symbol(param);
    } else if (!WireFormat::SkipField(&in, tag)) {
      return Malformed();
    }
  }
  return dim;
}

absl::Status ParseTensor(const std::string& bytes, TensorType* out) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  while (uint32_t tag = in.ReadTag()) {
    const int field = WireFormat::GetTagFieldNumber(tag);
    if (field == kTensorElemType &&
        WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_VARINT) {
      uint32_t v = 0;
      if (!in.ReadVarint32(&v)) return Malformed();
      if (!v1::DataType_IsValid(static_cast<int>(v))) {
        return absl::InvalidArgumentError(absl::StrCat("element type ", v, " is not defined"));
      }
      out->dtype = static_cast<v1::DataType>(v);
    } else if (field == kTensorShape &&
               WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      std::string shape;
      if (!ReadBytes(in, &shape)) return Malformed();
      CodedInputStream dims_in(reinterpret_cast<const uint8_t*>(shape.data()), shape.size());
      Dims dims;
      while (uint32_t dim_tag = dims_in.ReadTag()) {
        if (WireFormat::GetTagFieldNumber(dim_tag) != kShapeDim) {
          if (!WireFormat::SkipField(&dims_in, dim_tag)) return Malformed();
          continue;
        }
        std::string dim_bytes;
        if (!ReadBytes(dims_in, &dim_bytes)) return Malformed();
        absl::StatusOr<Dim> dim = ParseDim(dim_bytes);
        if (!dim.ok()) return dim.status();
        dims.push_back(*std::move(dim));
      }
      out->shape = std::move(dims);
    } else if (!WireFormat::SkipField(&in, tag)) {
      return Malformed();
    }
  }
  return absl::OkStatus();
}

// The TypeProto's one value case: its field number and bytes.
absl::Status ValueCase(const std::string& bytes, int* field, std::string* value) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  *field = 0;
  while (uint32_t tag = in.ReadTag()) {
    const int f = WireFormat::GetTagFieldNumber(tag);
    if ((f == kTypeTensor || f == kTypeSequence || f == kTypeMap || f == kTypeSparseTensor ||
         f == kTypeOptional) &&
        WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      if (!ReadBytes(in, value)) return Malformed();
      *field = f;
    } else if (!WireFormat::SkipField(&in, tag)) {
      return Malformed();
    }
  }
  return absl::OkStatus();
}

// The element TypeProto (field 1) of a Sequence or Optional message.
absl::Status ElementOf(const std::string& bytes, std::string* element) {
  CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  while (uint32_t tag = in.ReadTag()) {
    if (WireFormat::GetTagFieldNumber(tag) == kElemType &&
        WireFormat::GetTagWireType(tag) == WireFormat::WIRETYPE_LENGTH_DELIMITED) {
      if (!ReadBytes(in, element)) return Malformed();
    } else if (!WireFormat::SkipField(&in, tag)) {
      return Malformed();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TensorType> TensorTypeFromOnnxTypeBytes(absl::string_view bytes) {
  // At most three levels: optional(sequence(tensor)).
  std::string current(bytes);
  bool optional = false, sequence = false;
  for (int level = 0; level < 3; ++level) {
    int field = 0;
    std::string value;
    if (absl::Status s = ValueCase(current, &field, &value); !s.ok()) return s;
    if (field == kTypeTensor) {
      TensorType t;
      if (absl::Status s = ParseTensor(value, &t); !s.ok()) return s;
      t.kind = optional ? (sequence ? v1::VALUE_OPTIONAL_SEQUENCE : v1::VALUE_OPTIONAL_TENSOR)
                        : (sequence ? v1::VALUE_SEQUENCE : v1::VALUE_TENSOR);
      return t;
    }
    if (field == kTypeSequence && !sequence) {
      sequence = true;
    } else if (field == kTypeOptional && !optional && !sequence) {
      optional = true;
    } else if (field == 0) {
      return Malformed();
    } else {
      break;
    }
    current.clear();
    if (absl::Status s = ElementOf(value, &current); !s.ok()) return s;
  }
  return absl::UnimplementedError(
      "the type is not a tensor, a sequence of tensors or an optional of either");
}

absl::StatusOr<TensorType> TensorTypeFromTypeAttribute(const v1::Attribute& attribute) {
  if (attribute.value_case() != v1::Attribute::kOpaque ||
      attribute.opaque().kind() != "onnx.TypeProto" || attribute.opaque().is_list() ||
      attribute.opaque().values_size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute '", attribute.name(), "' must be one ONNX TypeProto"));
  }
  absl::StatusOr<TensorType> t = TensorTypeFromOnnxTypeBytes(attribute.opaque().values(0));
  if (!t.ok()) {
    return absl::Status(t.status().code(),
                        absl::StrCat("attribute '", attribute.name(), "': ", t.status().message()));
  }
  return t;
}

}  // namespace graphopt
