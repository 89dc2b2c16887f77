#include "rules/program.h"

#include "absl/strings/str_cat.h"

namespace graphopt {
namespace rules {

std::pair<int, int> Diag::LineCol(absl::string_view source, int32_t pos) {
  int line = 1;
  int col = 1;
  for (int32_t i = 0; i < pos && i < static_cast<int32_t>(source.size()); ++i) {
    if (source[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

absl::Status Diag::Error(int32_t pos, absl::string_view message) const {
  const auto [line, col] = LineCol(source_, pos);
  return absl::InvalidArgumentError(absl::StrCat(prefix_, " ", line, ":", col, ": ", message));
}

std::string TypeName(Type t) {
  std::string base;
  switch (t.base) {
    case Base::kAny:
      base = "?";
      break;
    case Base::kInt:
      base = "int";
      break;
    case Base::kBool:
      base = "bool";
      break;
    case Base::kString:
      base = "string";
      break;
    case Base::kDType:
      base = "dtype";
      break;
  }
  for (int i = 0; i < t.depth; ++i) base = absl::StrCat("list<", base, ">");
  return base;
}

bool Unify(Type a, Type b, Type* out) {
  if (a == b) {
    *out = a;
    return true;
  }
  if (a.base == Base::kAny && b.base == Base::kAny) {
    *out = a.depth > b.depth ? a : b;
    return true;
  }
  if (a.base == Base::kAny && a.depth <= b.depth) {
    *out = b;
    return true;
  }
  if (b.base == Base::kAny && b.depth <= a.depth) {
    *out = a;
    return true;
  }
  return false;
}

}  // namespace rules
}  // namespace graphopt
