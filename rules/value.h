#ifndef GRAPHOPT_RULES_VALUE_H_
#define GRAPHOPT_RULES_VALUE_H_

// The rule engine's runtime values: what evaluating an expression yields, and the small types
// the operations on them share. Internal to //rules.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

#include "absl/base/attributes.h"
#include "absl/base/optimization.h"

namespace graphopt {
namespace rules {

inline constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

// A runtime value: 16 bytes, passed and returned in registers. Lists live in the evaluation's
// heap (offset `i`, length `len`) and are immutable, so slices share storage. Symbolic ints
// are `coef * atom` (kMono: coefficient `i`, atom `len` in the evaluation's atom table; an
// input's "batch" is kMono 1 * batch, and "12*batch" is computed without allocating), a symbol
// string read from the node that is not an atom name (kSymRef: "2*seq", "N x"; kept verbatim
// when passed through), or any other polynomial (kSym: index into the polynomial table). None
// is ever a constant, which is a kInt. kError is no value: the evaluation failed, and the
// evaluator holds the message.
enum class Tag : uint8_t {
  kUnknown,
  kInt,
  kBool,
  kSym,
  kSymRef,
  kMono,
  kStr,
  kDType,
  kList,
  kError
};

struct Val {
  // The tag in the low byte, the length (or atom) in the high 32 bits: one word, so that a
  // value moves as two registers.
  uint64_t meta = 0;
  union {
    int64_t i;
    const std::string* s;
  };
  Val() : i(0) {}

  Tag tag() const { return static_cast<Tag>(meta & 0xff); }
  uint32_t len() const { return static_cast<uint32_t>(meta >> 32); }

  static Val Make(Tag tag, uint32_t len, int64_t i) {
    Val x;
    x.meta = static_cast<uint64_t>(tag) | static_cast<uint64_t>(len) << 32;
    x.i = i;
    return x;
  }
  static Val Int(int64_t v) { return Make(Tag::kInt, 0, v); }
  static Val Bool(bool b) { return Make(Tag::kBool, 0, b ? 1 : 0); }
  static Val Str(const std::string* s) {
    Val x = Make(Tag::kStr, 0, 0);
    x.s = s;
    return x;
  }
  static Val DType(int64_t dt) { return Make(Tag::kDType, 0, dt); }
  static Val SymRef(const std::string* s) {
    Val x = Make(Tag::kSymRef, 0, 0);
    x.s = s;
    return x;
  }
  static Val List(size_t offset, size_t len) {
    return Make(Tag::kList, static_cast<uint32_t>(len), static_cast<int64_t>(offset));
  }
  static Val Error() { return Make(Tag::kError, 0, 0); }
  bool unknown() const { return tag() == Tag::kUnknown; }
  bool failed() const { return tag() == Tag::kError; }
  bool symbolic() const {
    const Tag t = tag();
    return t == Tag::kSym || t == Tag::kSymRef || t == Tag::kMono;
  }
};

static_assert(sizeof(Val) == 16, "Val is returned in two registers");
static_assert(std::is_trivially_copyable<Val>::value, "Val must be trivially copyable");
static_assert(std::is_trivially_destructible<Val>::value, "Val must be trivially destructible");

// A growable array of values that starts in an inline buffer. Cheaper than InlinedVector on
// the hot path (one branch per push); values are only ever appended or truncated.
template <size_t kInline>
class ValBuffer {
 public:
  ValBuffer() : data_(reinterpret_cast<Val*>(inline_)), cap_(kInline) {}
  ValBuffer(const ValBuffer&) = delete;
  ValBuffer& operator=(const ValBuffer&) = delete;

  size_t size() const { return size_; }
  Val& operator[](size_t i) { return data_[i]; }
  const Val& operator[](size_t i) const { return data_[i]; }
  void push_back(const Val& v) {
    if (ABSL_PREDICT_FALSE(size_ == cap_)) Grow(size_ + 1);
    new (&data_[size_++]) Val(v);
  }
  // Appends n copies of `fill`; returns the offset of the first.
  size_t Append(size_t n, const Val& fill = Val()) {
    if (ABSL_PREDICT_FALSE(size_ + n > cap_)) Grow(size_ + n);
    const size_t off = size_;
    for (size_t k = 0; k < n; ++k) new (&data_[off + k]) Val(fill);
    size_ += n;
    return off;
  }
  // Appends n values left for the caller to write; returns the offset of the first.
  size_t AppendUninitialized(size_t n) {
    if (ABSL_PREDICT_FALSE(size_ + n > cap_)) Grow(size_ + n);
    const size_t off = size_;
    size_ += n;
    return off;
  }
  void truncate(size_t n) { size_ = n; }

 private:
  ABSL_ATTRIBUTE_NOINLINE void Grow(size_t need) {
    size_t cap = cap_ * 2;
    while (cap < need) cap *= 2;
    auto bigger = std::make_unique<Val[]>(cap);
    std::copy(data_, data_ + size_, bigger.get());
    owned_ = std::move(bigger);
    data_ = owned_.get();
    cap_ = cap;
  }

  // Uninitialised: values are constructed as they are appended (Val is trivially copyable
  // and destructible).
  alignas(Val) unsigned char inline_[kInline * sizeof(Val)];
  Val* data_;
  size_t size_ = 0;
  size_t cap_;
  std::unique_ptr<Val[]> owned_;
};

// Three-valued logic.
enum Tri : uint8_t { kFalse = 0, kTrue = 1, kMaybe = 2 };

inline Val FromTri(Tri t) { return t == kMaybe ? Val() : Val::Bool(t == kTrue); }

enum class Arith : uint8_t { kAdd, kSub, kMul, kFloorDiv, kMod, kCeilDiv };

inline const char* ArithSymbol(Arith op) {
  switch (op) {
    case Arith::kAdd:
      return "+";
    case Arith::kSub:
      return "-";
    case Arith::kMul:
      return "*";
    case Arith::kFloorDiv:
      return "//";
    case Arith::kMod:
      return "%";
    case Arith::kCeilDiv:
      return "cdiv";
  }
  return "?";
}

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_VALUE_H_
