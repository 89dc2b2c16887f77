#include "onnx_io/onnx_values.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "graph/types.h"
#include "onnx_io/onnx_import.h"

namespace graphopt {
namespace {

using runtime::Tensor;

absl::StatusOr<Tensor> FromTensorProto(onnx::TensorProto proto, absl::string_view what) {
  const std::string name = std::string(what);
  absl::StatusOr<v1::Tensor> t = TensorFromOnnx(std::move(proto), what);
  if (!t.ok()) return t.status();
  return Tensor::FromProto(*t, name);
}

absl::Status Unsupported(absl::string_view what, int elem_type) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, " holds values of ONNX element kind ", elem_type,
                   "; graphopt carries sequences of tensors and optionals of a tensor or of "
                   "such a sequence"));
}

}  // namespace

absl::StatusOr<Tensor> ValueFromOnnxSequence(const onnx::SequenceProto& sequence,
                                             absl::string_view what) {
  if (sequence.elem_type() != onnx::SequenceProto::TENSOR &&
      sequence.elem_type() != onnx::SequenceProto::UNDEFINED) {
    return Unsupported(what, sequence.elem_type());
  }
  if (sequence.sparse_tensor_values_size() > 0 || sequence.sequence_values_size() > 0 ||
      sequence.map_values_size() > 0 || sequence.optional_values_size() > 0) {
    return Unsupported(what, sequence.elem_type());
  }
  std::vector<Tensor> items;
  items.reserve(sequence.tensor_values_size());
  v1::DataType dtype = v1::DT_UNDEFINED;
  for (int i = 0; i < sequence.tensor_values_size(); ++i) {
    absl::StatusOr<Tensor> t =
        FromTensorProto(sequence.tensor_values(i), absl::StrCat(what, " item ", i));
    if (!t.ok()) return t.status();
    if (i > 0 && t->dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrCat(what, " item ", i, " is ", t->DebugString(),
                                                     " but item 0 is ", DataTypeName(dtype)));
    }
    dtype = t->dtype();
    items.push_back(*std::move(t));
  }
  return Tensor::Sequence(dtype, std::move(items));
}

absl::StatusOr<Tensor> ValueFromOnnxOptional(const onnx::OptionalProto& optional,
                                             absl::string_view what) {
  switch (optional.elem_type()) {
    case onnx::OptionalProto::TENSOR:
      if (!optional.has_tensor_value()) {
        return Tensor::EmptyOptional(v1::VALUE_OPTIONAL_TENSOR, v1::DT_UNDEFINED);
      }
      {
        absl::StatusOr<Tensor> t = FromTensorProto(optional.tensor_value(), what);
        if (!t.ok()) return t.status();
        return Tensor::OptionalOf(*std::move(t));
      }
    case onnx::OptionalProto::SEQUENCE:
      if (!optional.has_sequence_value()) {
        return Tensor::EmptyOptional(v1::VALUE_OPTIONAL_SEQUENCE, v1::DT_UNDEFINED);
      }
      {
        absl::StatusOr<Tensor> s = ValueFromOnnxSequence(optional.sequence_value(), what);
        if (!s.ok()) return s.status();
        return Tensor::OptionalOf(*std::move(s));
      }
    case onnx::OptionalProto::UNDEFINED:
      // Written by ONNX for an empty optional whose element type it did not record.
      return Tensor::EmptyOptional(v1::VALUE_OPTIONAL_TENSOR, v1::DT_UNDEFINED);
    default:
      return Unsupported(what, optional.elem_type());
  }
}

absl::StatusOr<Tensor> ValueFromOnnxBytes(const std::string& bytes, v1::ValueKind kind,
                                          absl::string_view what, std::string* name) {
  auto parse_error = [&](const char* message) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not an ONNX ", message));
  };
  switch (kind) {
    case v1::VALUE_SEQUENCE: {
      onnx::SequenceProto proto;
      if (!proto.ParseFromString(bytes)) return parse_error("SequenceProto");
      if (name != nullptr) *name = proto.name();
      return ValueFromOnnxSequence(proto, what);
    }
    case v1::VALUE_OPTIONAL_TENSOR:
    case v1::VALUE_OPTIONAL_SEQUENCE: {
      onnx::OptionalProto proto;
      if (!proto.ParseFromString(bytes)) return parse_error("OptionalProto");
      if (name != nullptr) *name = proto.name();
      absl::StatusOr<Tensor> t = ValueFromOnnxOptional(proto, what);
      // An empty optional says nothing of its kind: the declared one.
      if (t.ok() && t->items().empty()) return Tensor::EmptyOptional(kind, t->element_dtype());
      return t;
    }
    default: {
      onnx::TensorProto proto;
      if (!proto.ParseFromString(bytes)) return parse_error("TensorProto");
      if (name != nullptr) *name = proto.name();
      return FromTensorProto(std::move(proto), what);
    }
  }
}

}  // namespace graphopt
