#include "rules/poly.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace graphopt {
namespace rules {
namespace {

constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

bool TermLess(const Term& a, const Term& b) {
  if (a.factors.size() != b.factors.size()) return a.factors.size() > b.factors.size();
  return a.factors < b.factors;
}

bool IsIdentStart(char c) { return absl::ascii_isalpha(c) || c == '_'; }
bool IsIdentChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.'; }

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || !IsIdentStart(s[0])) return false;
  for (char c : s) {
    if (!IsIdentChar(c)) return false;
  }
  return true;
}

// Appends `name` as a factor of a larger expression; false when it cannot be written.
bool AppendFactor(const std::string& name, std::string* out) {
  if (IsIdentifier(name)) {
    out->append(name);
    return true;
  }
  if (name.empty() || name.find_first_of("()") != std::string::npos) return false;
  absl::StrAppend(out, "(", name, ")");
  return true;
}

// `sub` (sorted) removed from `from` (sorted) as multisets; false when not contained.
bool RemoveFactors(const Factors& from, const Factors& sub, Factors* rest) {
  rest->clear();
  size_t j = 0;
  for (const std::string& f : from) {
    if (j < sub.size() && sub[j] == f) {
      ++j;
    } else {
      rest->push_back(f);
    }
  }
  return j == sub.size();
}

}  // namespace

bool IsAtomName(absl::string_view symbol) { return IsIdentifier(symbol); }

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) {
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

int64_t CeilDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) == (b < 0))) ++q;
  return q;
}

Poly Poly::Constant(int64_t c) {
  Poly p;
  if (c != 0) p.terms_.push_back(Term{c, {}});
  return p;
}

Poly Poly::Atom(std::string name) {
  Poly p;
  p.terms_.push_back(Term{1, {std::move(name)}});
  return p;
}

PolyStatus Poly::Normalize() {
  std::sort(terms_.begin(), terms_.end(), TermLess);
  size_t w = 0;
  for (size_t r = 0; r < terms_.size(); ++r) {
    if (w > 0 && terms_[w - 1].factors == terms_[r].factors) {
      int64_t sum;
      if (__builtin_add_overflow(terms_[w - 1].coef, terms_[r].coef, &sum)) {
        return PolyStatus::kOverflow;
      }
      terms_[w - 1].coef = sum;
    } else {
      if (w != r) terms_[w] = std::move(terms_[r]);
      ++w;
    }
  }
  terms_.resize(w);
  terms_.erase(std::remove_if(terms_.begin(), terms_.end(),
                              [](const Term& t) { return t.coef == 0; }),
               terms_.end());
  if (static_cast<int>(terms_.size()) > kMaxTerms || degree() > kMaxDegree) {
    return PolyStatus::kTooLarge;
  }
  return PolyStatus::kOk;
}

PolyStatus Poly::Add(const Poly& a, const Poly& b, Poly* out) {
  Poly r;
  r.terms_.reserve(a.terms_.size() + b.terms_.size());
  r.terms_.insert(r.terms_.end(), a.terms_.begin(), a.terms_.end());
  r.terms_.insert(r.terms_.end(), b.terms_.begin(), b.terms_.end());
  PolyStatus s = r.Normalize();
  if (s == PolyStatus::kOk) *out = std::move(r);
  return s;
}

PolyStatus Poly::Neg(const Poly& a, Poly* out) {
  Poly r = a;
  for (Term& t : r.terms_) {
    if (t.coef == kInt64Min) return PolyStatus::kOverflow;
    t.coef = -t.coef;
  }
  *out = std::move(r);
  return PolyStatus::kOk;
}

PolyStatus Poly::Sub(const Poly& a, const Poly& b, Poly* out) {
  Poly nb;
  if (PolyStatus s = Neg(b, &nb); s != PolyStatus::kOk) return s;
  return Add(a, nb, out);
}

PolyStatus Poly::Mul(const Poly& a, const Poly& b, Poly* out) {
  if (static_cast<int64_t>(a.terms_.size()) * static_cast<int64_t>(b.terms_.size()) >
      int64_t{kMaxTerms} * kMaxTerms) {
    return PolyStatus::kTooLarge;
  }
  if (a.degree() + b.degree() > kMaxDegree) return PolyStatus::kTooLarge;
  Poly r;
  r.terms_.reserve(a.terms_.size() * b.terms_.size());
  for (const Term& x : a.terms_) {
    for (const Term& y : b.terms_) {
      Term t;
      if (__builtin_mul_overflow(x.coef, y.coef, &t.coef)) return PolyStatus::kOverflow;
      t.factors.reserve(x.factors.size() + y.factors.size());
      std::merge(x.factors.begin(), x.factors.end(), y.factors.begin(), y.factors.end(),
                 std::back_inserter(t.factors));
      r.terms_.push_back(std::move(t));
    }
  }
  PolyStatus s = r.Normalize();
  if (s == PolyStatus::kOk) *out = std::move(r);
  return s;
}

namespace {

// Quotient of every term by the single term `d`; false when one is not divisible.
bool DivideByTerm(const Poly& a, const Term& d, Poly* out) {
  Poly result;
  for (const Term& t : a.terms()) {
    if (t.coef % d.coef != 0 || (t.coef == kInt64Min && d.coef == -1)) return false;
    Factors rest;
    if (!RemoveFactors(t.factors, d.factors, &rest)) return false;
    Poly q = Poly::Constant(t.coef / d.coef);
    for (std::string& f : rest) {
      if (Poly::Mul(q, Poly::Atom(std::move(f)), &q) != PolyStatus::kOk) return false;
    }
    if (Poly::Add(result, q, &result) != PolyStatus::kOk) return false;
  }
  *out = std::move(result);
  return true;
}

// a = c*M + k: M (divided by c) and k. False when a coefficient of a non-constant term is not
// divisible by c.
bool SplitByConstant(const Poly& a, int64_t c, Poly* m, int64_t* k) {
  *k = a.constant_term();
  Poly without_k;
  if (Poly::Sub(a, Poly::Constant(*k), &without_k) != PolyStatus::kOk) return false;
  Term divisor{c, {}};
  return DivideByTerm(without_k, divisor, m);
}

}  // namespace

bool Poly::FloorDiv(const Poly& a, const Poly& d, Poly* out) {
  if (d.terms_.empty()) return false;
  if (a == d) {
    *out = Constant(1);
    return true;
  }
  if (d.is_constant()) {
    const int64_t c = d.constant_term();
    Poly m;
    int64_t k;
    if (c == -1 && a.constant_term() == kInt64Min) return false;
    if (!SplitByConstant(a, c, &m, &k)) return false;
    return Add(m, Constant(FloorDivInt(k, c)), out) == PolyStatus::kOk;
  }
  if (d.terms_.size() != 1) return false;
  return DivideByTerm(a, d.terms_[0], out);
}

bool Poly::Mod(const Poly& a, const Poly& d, Poly* out) {
  if (d.terms_.empty()) return false;
  if (a == d) {
    *out = Poly();
    return true;
  }
  if (d.is_constant()) {
    const int64_t c = d.constant_term();
    Poly m;
    int64_t k;
    if (!SplitByConstant(a, c, &m, &k)) return false;
    *out = Constant(c == -1 ? 0 : FloorModInt(k, c));
    return true;
  }
  if (d.terms_.size() != 1) return false;
  Poly q;
  if (!DivideByTerm(a, d.terms_[0], &q)) return false;
  *out = Poly();
  return true;
}

bool Poly::CeilDiv(const Poly& a, const Poly& d, Poly* out) {
  if (d.terms_.empty()) return false;
  if (a == d) {
    *out = Constant(1);
    return true;
  }
  if (d.is_constant()) {
    const int64_t c = d.constant_term();
    Poly m;
    int64_t k;
    if (c == -1 && a.constant_term() == kInt64Min) return false;
    if (!SplitByConstant(a, c, &m, &k)) return false;
    return Add(m, Constant(CeilDivInt(k, c)), out) == PolyStatus::kOk;
  }
  if (d.terms_.size() != 1) return false;
  return DivideByTerm(a, d.terms_[0], out);
}

std::optional<std::string> Poly::ToString() const {
  if (terms_.empty()) return std::string("0");
  if (terms_.size() == 1 && terms_[0].coef == 1 && terms_[0].factors.size() == 1) {
    return terms_[0].factors[0];
  }
  std::string out;
  for (size_t i = 0; i < terms_.size(); ++i) {
    const Term& t = terms_[i];
    const bool negative = t.coef < 0;
    const uint64_t magnitude =
        negative ? uint64_t{0} - static_cast<uint64_t>(t.coef) : static_cast<uint64_t>(t.coef);
    if (negative) {
      out.push_back('-');
    } else if (i > 0) {
      out.push_back('+');
    }
    if (t.factors.empty()) {
      absl::StrAppend(&out, magnitude);
      continue;
    }
    if (magnitude != 1) absl::StrAppend(&out, magnitude, "*");
    for (size_t k = 0; k < t.factors.size(); ++k) {
      if (k > 0) out.push_back('*');
      if (!AppendFactor(t.factors[k], &out)) return std::nullopt;
    }
  }
  return out;
}

std::optional<Poly> Poly::ParseCanonical(absl::string_view s) {
  size_t pos = 0;
  Poly result;
  bool first = true;
  while (pos < s.size() || first) {
    bool negative = false;
    if (pos < s.size() && (s[pos] == '-' || (!first && s[pos] == '+'))) {
      negative = s[pos] == '-';
      ++pos;
    } else if (!first) {
      return std::nullopt;
    }
    first = false;
    if (pos >= s.size()) return std::nullopt;
    Term term;
    uint64_t magnitude = 1;
    bool has_number = false;
    if (absl::ascii_isdigit(s[pos])) {
      magnitude = 0;
      has_number = true;
      while (pos < s.size() && absl::ascii_isdigit(s[pos])) {
        const uint64_t digit = static_cast<uint64_t>(s[pos] - '0');
        if (magnitude > (uint64_t{1} << 63) / 10) return std::nullopt;
        magnitude = magnitude * 10 + digit;
        if (magnitude > (uint64_t{1} << 63)) return std::nullopt;
        ++pos;
      }
    }
    if (magnitude == (uint64_t{1} << 63) && !negative) return std::nullopt;
    term.coef = negative ? static_cast<int64_t>(uint64_t{0} - magnitude)
                         : static_cast<int64_t>(magnitude);
    bool need_factor = !has_number;
    if (has_number && pos < s.size() && s[pos] == '*') {
      ++pos;
      need_factor = true;
    }
    while (need_factor) {
      if (pos >= s.size()) return std::nullopt;
      if (s[pos] == '(') {
        const size_t close = s.find(')', pos + 1);
        if (close == absl::string_view::npos) return std::nullopt;
        absl::string_view name = s.substr(pos + 1, close - pos - 1);
        if (name.find('(') != absl::string_view::npos) return std::nullopt;
        term.factors.emplace_back(name);
        pos = close + 1;
      } else if (IsIdentStart(s[pos])) {
        const size_t start = pos;
        while (pos < s.size() && IsIdentChar(s[pos])) ++pos;
        term.factors.emplace_back(s.substr(start, pos - start));
      } else {
        return std::nullopt;
      }
      need_factor = pos < s.size() && s[pos] == '*';
      if (need_factor) ++pos;
    }
    std::sort(term.factors.begin(), term.factors.end());
    if (static_cast<int>(term.factors.size()) > kMaxDegree) return std::nullopt;
    Poly p;
    p.terms_.push_back(std::move(term));
    if (Add(result, p, &result) != PolyStatus::kOk) return std::nullopt;
  }
  std::optional<std::string> back = result.ToString();
  if (!back || *back != s) return std::nullopt;
  return result;
}

Poly Poly::FromSymbol(absl::string_view symbol) {
  // Fast path: a plain identifier is an atom.
  if (IsIdentifier(symbol)) return Atom(std::string(symbol));
  std::optional<Poly> p = ParseCanonical(symbol);
  if (p && !p->is_constant()) return *std::move(p);
  return Atom(std::string(symbol));
}

}  // namespace rules
}  // namespace graphopt
