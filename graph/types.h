#ifndef GRAPHOPT_GRAPH_TYPES_H_
#define GRAPHOPT_GRAPH_TYPES_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "proto/graph.pb.h"

namespace graphopt {

// One dimension: a known size, a symbol (e.g. "batch"), or unknown.
//
// 16 bytes: shapes are stored per value and copied by every shape rule, so their size is most
// of what shape inference moves through memory on a large graph. A symbol's text is shared by
// the copies of a dim (reference counted, thread-safe), so copying one never allocates.
class Dim {
 public:
  Dim() = default;  // unknown
  static Dim Known(int64_t size) {
    Dim d;
    d.size_ = size;
    d.tag_ = kKnownTag;
    return d;
  }
  static Dim Symbol(std::string name);
  static Dim Unknown() { return Dim(); }

  Dim(const Dim& other) : size_(other.size_), tag_(other.tag_) {
    if (SymbolText* text = symbol_text()) text->refs.fetch_add(1, std::memory_order_relaxed);
  }
  Dim(Dim&& other) noexcept : size_(other.size_), tag_(other.tag_) {
    other.size_ = 0;
    other.tag_ = kUnknownTag;
  }
  Dim& operator=(const Dim& other) {
    Dim copy(other);
    Swap(copy);
    return *this;
  }
  Dim& operator=(Dim&& other) noexcept {
    Dim moved(std::move(other));
    Swap(moved);
    return *this;
  }
  ~Dim() { Release(); }

  bool is_known() const { return tag_ == kKnownTag; }
  bool is_symbol() const { return tag_ > kKnownTag; }
  bool is_unknown() const { return tag_ == kUnknownTag; }
  // Only for is_known().
  int64_t size() const { return size_; }
  // The symbol for is_symbol(); "" otherwise. The string lives as long as this dim or a copy.
  const std::string& symbol() const;

  // "3", "batch" or "?".
  std::string ToString() const;

  // Structural equality: two unknown dims compare equal here although they need not be the
  // same size at run time; use SameSize for that question.
  friend bool operator==(const Dim& a, const Dim& b) {
    if (a.tag_ == b.tag_) return a.size_ == b.size_;  // the same symbol text, or both sizes
    return a.is_symbol() && b.is_symbol() && a.symbol() == b.symbol();
  }
  friend bool operator!=(const Dim& a, const Dim& b) { return !(a == b); }

  // True only when both are provably the same size (equal known sizes or the same symbol).
  static bool SameSize(const Dim& a, const Dim& b) {
    return !a.is_unknown() && a == b;
  }

 private:
  struct SymbolText {
    std::atomic<int32_t> refs{1};
    std::string text;
  };
  // tag_: kUnknownTag, kKnownTag, or the address of the SymbolText (never 0 or 1).
  static constexpr uintptr_t kUnknownTag = 0;
  static constexpr uintptr_t kKnownTag = 1;

  SymbolText* symbol_text() const {
    return is_symbol() ? reinterpret_cast<SymbolText*>(tag_) : nullptr;
  }
  void Release() {
    SymbolText* text = symbol_text();
    if (text != nullptr && text->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete text;
  }
  void Swap(Dim& other) noexcept {
    std::swap(size_, other.size_);
    std::swap(tag_, other.tag_);
  }

  int64_t size_ = 0;
  uintptr_t tag_ = kUnknownTag;
};

using Dims = std::vector<Dim>;

// Element type plus shape. shape == nullopt means the rank is unknown.
//
// `kind` says whether the value is that tensor or a sequence or optional holding tensors of
// that dtype and shape (v1::ValueKind). Almost every value is a tensor; the rest are produced
// and read only by ops that declare they take them (OpDef::takes_containers).
struct TensorType {
  v1::DataType dtype = v1::DT_UNDEFINED;
  std::optional<Dims> shape;
  v1::ValueKind kind = v1::VALUE_TENSOR;

  bool is_tensor() const { return kind == v1::VALUE_TENSOR; }

  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.dtype == b.dtype && a.kind == b.kind && a.shape == b.shape;
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
// "float32[batch,3]"; "sequence(float32[?,3])", "optional(int64[])",
// "optional(sequence(float32[?..]))" for the other kinds.
std::string TensorTypeToString(const TensorType& type);
// "tensor", "sequence", "optional tensor", "optional sequence".
const char* ValueKindName(v1::ValueKind kind);
// Whether `kind` is one of the optional kinds, and the kind it holds when it has a value.
inline bool IsOptionalKind(v1::ValueKind kind) {
  return kind == v1::VALUE_OPTIONAL_TENSOR || kind == v1::VALUE_OPTIONAL_SEQUENCE;
}
inline v1::ValueKind OptionalElementKind(v1::ValueKind kind) {
  return kind == v1::VALUE_OPTIONAL_SEQUENCE ? v1::VALUE_SEQUENCE : v1::VALUE_TENSOR;
}

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
