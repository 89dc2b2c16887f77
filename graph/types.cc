#include "graph/types.h"

#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace graphopt {

Dim Dim::Symbol(std::string name) {
  Dim d;
  auto* text = new SymbolText();
  text->text = std::move(name);
  d.tag_ = reinterpret_cast<uintptr_t>(text);
  return d;
}

const std::string& Dim::symbol() const {
  if (const SymbolText* text = symbol_text()) return text->text;
  static const std::string* const kEmpty = new std::string();
  return *kEmpty;
}

std::string Dim::ToString() const {
  if (is_known()) return absl::StrCat(size_);
  if (is_symbol()) return symbol();
  return "?";
}

namespace {

struct DataTypeEntry {
  v1::DataType dtype;
  const char* name;
  int size;
};

constexpr DataTypeEntry kDataTypes[] = {
    {v1::DT_UNDEFINED, "undefined", 0}, {v1::DT_FLOAT32, "float32", 4},
    {v1::DT_UINT8, "uint8", 1},         {v1::DT_INT8, "int8", 1},
    {v1::DT_UINT16, "uint16", 2},       {v1::DT_INT16, "int16", 2},
    {v1::DT_INT32, "int32", 4},         {v1::DT_INT64, "int64", 8},
    {v1::DT_STRING, "string", 0},       {v1::DT_BOOL, "bool", 1},
    {v1::DT_FLOAT16, "float16", 2},     {v1::DT_FLOAT64, "float64", 8},
    {v1::DT_UINT32, "uint32", 4},       {v1::DT_UINT64, "uint64", 8},
    {v1::DT_COMPLEX64, "complex64", 8}, {v1::DT_COMPLEX128, "complex128", 16},
    {v1::DT_BFLOAT16, "bfloat16", 2},
};

const DataTypeEntry* FindEntry(v1::DataType dtype) {
  for (const DataTypeEntry& e : kDataTypes) {
    if (e.dtype == dtype) return &e;
  }
  return nullptr;
}

}  // namespace

std::string DataTypeName(v1::DataType dtype) {
  const DataTypeEntry* e = FindEntry(dtype);
  return e != nullptr ? e->name : absl::StrCat("dtype(", static_cast<int>(dtype), ")");
}

absl::StatusOr<v1::DataType> ParseDataType(absl::string_view name) {
  std::string lower = absl::AsciiStrToLower(name);
  if (lower == "float") return v1::DT_FLOAT32;
  if (lower == "double") return v1::DT_FLOAT64;
  if (lower == "half") return v1::DT_FLOAT16;
  for (const DataTypeEntry& e : kDataTypes) {
    if (lower == e.name && e.dtype != v1::DT_UNDEFINED) return e.dtype;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown data type '", name, "'"));
}

int DataTypeSize(v1::DataType dtype) {
  const DataTypeEntry* e = FindEntry(dtype);
  return e != nullptr ? e->size : 0;
}

bool IsFloatingPoint(v1::DataType dtype) {
  return dtype == v1::DT_FLOAT32 || dtype == v1::DT_FLOAT16 || dtype == v1::DT_FLOAT64 ||
         dtype == v1::DT_BFLOAT16;
}

bool IsInteger(v1::DataType dtype) {
  switch (dtype) {
    case v1::DT_UINT8:
    case v1::DT_INT8:
    case v1::DT_UINT16:
    case v1::DT_INT16:
    case v1::DT_INT32:
    case v1::DT_INT64:
    case v1::DT_UINT32:
    case v1::DT_UINT64:
      return true;
    default:
      return false;
  }
}

std::string ShapeToString(const std::optional<Dims>& shape) {
  if (!shape) return "[?..]";
  return absl::StrCat(
      "[",
      absl::StrJoin(*shape, ",", [](std::string* out, const Dim& d) { out->append(d.ToString()); }),
      "]");
}

std::string TensorTypeToString(const TensorType& type) {
  const std::string tensor = absl::StrCat(DataTypeName(type.dtype), ShapeToString(type.shape));
  switch (type.kind) {
    case v1::VALUE_SEQUENCE:
      return absl::StrCat("sequence(", tensor, ")");
    case v1::VALUE_OPTIONAL_TENSOR:
      return absl::StrCat("optional(", tensor, ")");
    case v1::VALUE_OPTIONAL_SEQUENCE:
      return absl::StrCat("optional(sequence(", tensor, "))");
    default:
      return tensor;
  }
}

const char* ValueKindName(v1::ValueKind kind) {
  switch (kind) {
    case v1::VALUE_TENSOR:
      return "tensor";
    case v1::VALUE_SEQUENCE:
      return "sequence";
    case v1::VALUE_OPTIONAL_TENSOR:
      return "optional tensor";
    case v1::VALUE_OPTIONAL_SEQUENCE:
      return "optional sequence";
    default:
      return "unknown kind";
  }
}

Dim DimFromProto(const v1::Dim& dim) {
  switch (dim.value_case()) {
    case v1::Dim::kSize:
      return Dim::Known(dim.size());
    case v1::Dim::kSymbol:
      return dim.symbol().empty() ? Dim::Unknown() : Dim::Symbol(dim.symbol());
    case v1::Dim::VALUE_NOT_SET:
      break;
  }
  return Dim::Unknown();
}

void DimToProto(const Dim& dim, v1::Dim* out) {
  out->Clear();
  if (dim.is_known()) {
    out->set_size(dim.size());
  } else if (dim.is_symbol()) {
    out->set_symbol(dim.symbol());
  }
}

Dims ShapeFromProto(const v1::Shape& shape) {
  Dims dims;
  dims.reserve(shape.dims_size());
  for (const v1::Dim& d : shape.dims()) dims.push_back(DimFromProto(d));
  return dims;
}

void ShapeToProto(const Dims& dims, v1::Shape* out) {
  out->Clear();
  for (const Dim& d : dims) DimToProto(d, out->add_dims());
}

TensorType TensorTypeFromProto(const v1::TensorType& type) {
  TensorType t;
  t.dtype = type.dtype();
  t.kind = type.kind();
  if (type.has_shape()) t.shape = ShapeFromProto(type.shape());
  return t;
}

void TensorTypeToProto(const TensorType& type, v1::TensorType* out) {
  out->Clear();
  out->set_dtype(type.dtype);
  out->set_kind(type.kind);
  if (type.shape) ShapeToProto(*type.shape, out->mutable_shape());
}

std::optional<int64_t> NumElements(const Dims& dims) {
  int64_t n = 1;
  for (const Dim& d : dims) {
    if (!d.is_known() || d.size() < 0) return std::nullopt;
    if (d.size() != 0 && n > std::numeric_limits<int64_t>::max() / d.size()) return std::nullopt;
    n *= d.size();
  }
  return n;
}

}  // namespace graphopt
