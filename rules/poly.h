#ifndef GRAPHOPT_RULES_POLY_H_
#define GRAPHOPT_RULES_POLY_H_

// Symbolic sizes of the rule language: polynomials over symbol names with int64 coefficients.
//
// A polynomial is kept canonical (terms sorted by degree, highest first, then by their factor
// names; equal terms merged; no zero coefficients), so structural equality is mathematical
// equality and every polynomial has exactly one written form, e.g. "batch", "2*seq",
// "batch*seq", "seq+1", "seq*seq-1". That form is what a symbolic Dim carries
// (Dim::Symbol). A symbol string arriving from a graph is read back as the polynomial it
// spells when it is in exactly this canonical form and not a constant; any other string
// ("N", "seq*batch", "1+seq", "unk__3") is an atom: a single opaque symbol of that name.
//
// Symbols stand for arbitrary integers: every result here holds for any values of them (no
// sign assumption), except that division by a symbolic monomial assumes it is not zero (a size
// an op divides by).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace graphopt {
namespace rules {

// coef * factors[0] * factors[1] * ...; factors sorted, repeated for powers. Small terms and
// polynomials (the usual "batch", "2*seq", "seq+1") live inline, without allocating.
using Factors = absl::InlinedVector<std::string, 2>;

struct Term {
  int64_t coef = 0;
  Factors factors;

  friend bool operator==(const Term& a, const Term& b) {
    return a.coef == b.coef && a.factors == b.factors;
  }
};

// Outcome of an arithmetic operation on polynomials.
enum class PolyStatus {
  kOk,
  kOverflow,  // a coefficient left the int64 range
  kTooLarge,  // more than kMaxTerms terms or a degree above kMaxDegree: not represented
};

class Poly {
 public:
  static constexpr int kMaxTerms = 64;
  static constexpr int kMaxDegree = 16;

  Poly() = default;  // zero
  static Poly Constant(int64_t c);
  static Poly Atom(std::string name);
  // A symbol string from a graph: its polynomial when it is a canonical non-constant one,
  // else an atom named by the whole string.
  static Poly FromSymbol(absl::string_view symbol);
  // The polynomial `text` spells when it is in canonical form (see above), else nullopt.
  static std::optional<Poly> ParseCanonical(absl::string_view text);

  bool is_constant() const {
    return terms_.empty() || (terms_.size() == 1 && terms_[0].factors.empty());
  }
  // The constant term (0 when there is none).
  int64_t constant_term() const {
    return !terms_.empty() && terms_.back().factors.empty() ? terms_.back().coef : 0;
  }
  using Terms = absl::InlinedVector<Term, 2>;
  const Terms& terms() const { return terms_; }
  int degree() const { return terms_.empty() ? 0 : static_cast<int>(terms_[0].factors.size()); }

  // The canonical written form; nullopt when an atom cannot be written unambiguously inside a
  // larger expression (an atom containing '(' or ')'). A single atom is written as its name.
  std::optional<std::string> ToString() const;

  static PolyStatus Add(const Poly& a, const Poly& b, Poly* out);
  static PolyStatus Sub(const Poly& a, const Poly& b, Poly* out);
  static PolyStatus Mul(const Poly& a, const Poly& b, Poly* out);
  static PolyStatus Neg(const Poly& a, Poly* out);

  // Exact integer division by `d` (not zero): floor(a / d), a mod d (the sign of d, as
  // Python), and ceil(a / d). Each returns false when the result is not determined by the
  // polynomials alone. For a constant d = c: a = c*M + k with M's coefficients divisible by
  // c gives M + floor(k/c), k mod c and M + ceil(k/c). For a single-term d: every term of a
  // divisible by d gives the quotient (and remainder 0).
  static bool FloorDiv(const Poly& a, const Poly& d, Poly* out);
  static bool Mod(const Poly& a, const Poly& d, Poly* out);
  static bool CeilDiv(const Poly& a, const Poly& d, Poly* out);

  friend bool operator==(const Poly& a, const Poly& b) { return a.terms_ == b.terms_; }
  friend bool operator!=(const Poly& a, const Poly& b) { return !(a == b); }

 private:
  // Sorts, merges equal terms and drops zero ones.
  PolyStatus Normalize();
  Terms terms_;
};

// True when `symbol` is an identifier ([A-Za-z_][A-Za-z0-9_.]*): FromSymbol reads it as an atom
// of that name.
bool IsAtomName(absl::string_view symbol);

// Floor division and modulo of int64 values as Python defines them (b != 0; the caller
// excludes INT64_MIN / -1).
int64_t FloorDivInt(int64_t a, int64_t b);
int64_t FloorModInt(int64_t a, int64_t b);
int64_t CeilDivInt(int64_t a, int64_t b);

}  // namespace rules
}  // namespace graphopt

#endif  // GRAPHOPT_RULES_POLY_H_
