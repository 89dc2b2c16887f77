#ifndef GRAPHOPT_GRAPH_TYPES_H_
#define GRAPHOPT_GRAPH_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "proto/graph.pb.h"

namespace graphopt {

// One dimension: a known size, a symbol (e.g. "batch"), or unknown.
class Dim {
 public:
  Dim() = default;  // unknown
  static Dim Known(int64_t size) { return Dim(Kind::kKnown, size, {}); }
  static Dim Symbol(std::string name) { return Dim(Kind::kSymbol, 0, std::move(name)); }
  static Dim Unknown() { return Dim(); }

  bool is_known() const { return kind_ == Kind::kKnown; }
  bool is_symbol() const { return kind_ == Kind::kSymbol; }
  bool is_unknown() const { return kind_ == Kind::kUnknown; }
  // Only for is_known().
  int64_t size() const { return size_; }
  // Only for is_symbol().
  const std::string& symbol() const { return symbol_; }

  // "3", "batch" or "?".
  std::string ToString() const;

  // Structural equality: two unknown dims compare equal here although they need not be the
  // same size at run time; use SameSize for that question.
  friend bool operator==(const Dim& a, const Dim& b) {
    return a.kind_ == b.kind_ && a.size_ == b.size_ && a.symbol_ == b.symbol_;
  }
  friend bool operator!=(const Dim& a, const Dim& b) { return !(a == b); }

  // True only when both are provably the same size (equal known sizes or the same symbol).
  static bool SameSize(const Dim& a, const Dim& b) {
    return !a.is_unknown() && a == b;
  }

 private:
  enum class Kind : uint8_t { kUnknown, kKnown, kSymbol };
  Dim(Kind kind, int64_t size, std::string symbol)
      : kind_(kind), size_(size), symbol_(std::move(symbol)) {}

  Kind kind_ = Kind::kUnknown;
  int64_t size_ = 0;
  std::string symbol_;
};

using Dims = std::vector<Dim>;

// Element type plus shape. shape == nullopt means the rank is unknown.
struct TensorType {
  v1::DataType dtype = v1::DT_UNDEFINED;
  std::optional<Dims> shape;

  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.shape == b.shape;
  }
  friend bool operator!=(const TensorType& a, const TensorType& b) { return !(a == b); }
};

// "float32", "int64", ... ("undefined" for DT_UNDEFINED, "dtype(N)" for unknown numbers).
std::string DataTypeName(v1::DataType dtype);
// Inverse of DataTypeName; also accepts ONNX spellings ("float", "double", "float16").
absl::StatusOr<v1::DataType> ParseDataType(absl::string_view name);
// Bytes per element; 0 for DT_STRING and DT_UNDEFINED.
int DataTypeSize(v1::DataType dtype);
bool IsFloatingPoint(v1::DataType dtype);
bool IsInteger(v1::DataType dtype);

// "[batch,3,224,224]" or "[?..]" when the rank is unknown.
std::string ShapeToString(const std::optional<Dims>& shape);
// "float32[batch,3]".
std::string TensorTypeToString(const TensorType& type);

// Proto conversion.
Dim DimFromProto(const v1::Dim& dim);
void DimToProto(const Dim& dim, v1::Dim* out);
Dims ShapeFromProto(const v1::Shape& shape);
void ShapeToProto(const Dims& dims, v1::Shape* out);
TensorType TensorTypeFromProto(const v1::TensorType& type);
void TensorTypeToProto(const TensorType& type, v1::TensorType* out);

// Number of elements when every dim is known; nullopt otherwise (or on overflow).
std::optional<int64_t> NumElements(const Dims& dims);

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_TYPES_H_
