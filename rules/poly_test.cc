#include "rules/poly.h"

#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace graphopt {
namespace rules {
namespace {

std::string S(const Poly& p) { return p.ToString().value_or("<unprintable>"); }

Poly Sym(const std::string& s) { return Poly::FromSymbol(s); }

Poly Add(const Poly& a, const Poly& b) {
  Poly r;
  EXPECT_EQ(Poly::Add(a, b, &r), PolyStatus::kOk);
  return r;
}
Poly Sub(const Poly& a, const Poly& b) {
  Poly r;
  EXPECT_EQ(Poly::Sub(a, b, &r), PolyStatus::kOk);
  return r;
}
Poly Mul(const Poly& a, const Poly& b) {
  Poly r;
  EXPECT_EQ(Poly::Mul(a, b, &r), PolyStatus::kOk);
  return r;
}
Poly C(int64_t c) { return Poly::Constant(c); }

TEST(PolyTest, AtomsStayThemselves) {
  EXPECT_EQ(S(Sym("batch")), "batch");
  EXPECT_EQ(S(Sym("N")), "N");
  EXPECT_EQ(S(Sym("unk__3")), "unk__3");
  EXPECT_EQ(Sym("batch").terms().size(), 1u);
}

TEST(PolyTest, CanonicalStringsAreReadAsPolynomials) {
  EXPECT_EQ(Sym("2*seq"), Mul(C(2), Poly::Atom("seq")));
  EXPECT_EQ(Sym("seq+1"), Add(Poly::Atom("seq"), C(1)));
  EXPECT_EQ(Sym("batch*seq"), Mul(Poly::Atom("seq"), Poly::Atom("batch")));
  EXPECT_EQ(Sym("-seq+3"), Sub(C(3), Poly::Atom("seq")));
  EXPECT_EQ(Sym("seq*seq-1"), Sub(Mul(Poly::Atom("seq"), Poly::Atom("seq")), C(1)));
}

TEST(PolyTest, NonCanonicalStringsAreAtoms) {
  for (const char* s : {"seq*2", "1+seq", "seq*batch", "2 * seq", "1*seq", "seq+0", "3", "-4",
                        "", "seq+", "a b", "(x)", "2*(x"}) {
    const Poly p = Sym(s);
    ASSERT_EQ(p.terms().size(), 1u) << s;
    EXPECT_EQ(p.terms()[0].coef, 1) << s;
    ASSERT_EQ(p.terms()[0].factors.size(), 1u) << s;
    EXPECT_EQ(p.terms()[0].factors[0], s);
  }
}

TEST(PolyTest, ArithmeticIsCanonical) {
  const Poly seq = Poly::Atom("seq");
  EXPECT_EQ(S(Mul(seq, C(2))), "2*seq");
  EXPECT_EQ(Mul(seq, C(2)), Mul(C(2), seq));
  EXPECT_EQ(S(Add(seq, C(1))), "seq+1");
  EXPECT_EQ(S(Add(C(1), seq)), "seq+1");
  EXPECT_TRUE(Sub(seq, seq).is_constant());
  EXPECT_EQ(Sub(seq, seq).constant_term(), 0);
  EXPECT_EQ(S(Mul(Add(seq, C(1)), Sub(seq, C(1)))), "seq*seq-1");
  EXPECT_EQ(S(Mul(Poly::Atom("seq"), Poly::Atom("batch"))), "batch*seq");
  EXPECT_EQ(S(Add(Mul(C(3), Poly::Atom("b")), Poly::Atom("a"))), "a+3*b");
  EXPECT_EQ(S(Sub(C(0), seq)), "-seq");
  EXPECT_EQ(S(C(-7)), "-7");
}

TEST(PolyTest, RoundTripsThroughItsString) {
  const Poly p = Sub(Add(Mul(C(4), Mul(Poly::Atom("h"), Poly::Atom("w"))), Poly::Atom("c")),
                     C(5));
  EXPECT_EQ(S(p), "4*h*w+c-5");
  EXPECT_EQ(Sym(S(p)), p);
  // A non-identifier atom inside a larger polynomial is parenthesised and reads back.
  const Poly q = Mul(C(2), Poly::Atom("a b"));
  EXPECT_EQ(S(q), "2*(a b)");
  EXPECT_EQ(Sym("2*(a b)"), q);
  // An atom with parentheses cannot be written inside a larger polynomial.
  EXPECT_FALSE(Mul(C(2), Poly::Atom("f(x)")).ToString().has_value());
  EXPECT_EQ(S(Poly::Atom("f(x)")), "f(x)");
}

TEST(PolyTest, ExactDivision) {
  Poly r;
  const Poly seq = Poly::Atom("seq");
  ASSERT_TRUE(Poly::FloorDiv(Sym("2*seq"), C(2), &r));
  EXPECT_EQ(S(r), "seq");
  ASSERT_TRUE(Poly::FloorDiv(Sym("2*seq+1"), C(2), &r));
  EXPECT_EQ(S(r), "seq");
  ASSERT_TRUE(Poly::FloorDiv(Sym("2*seq-1"), C(2), &r));
  EXPECT_EQ(S(r), "seq-1");
  ASSERT_TRUE(Poly::CeilDiv(Sym("2*seq+1"), C(2), &r));
  EXPECT_EQ(S(r), "seq+1");
  ASSERT_TRUE(Poly::Mod(Sym("2*seq+3"), C(2), &r));
  EXPECT_EQ(S(r), "1");
  ASSERT_TRUE(Poly::Mod(Sym("2*seq-1"), C(2), &r));
  EXPECT_EQ(S(r), "1");
  EXPECT_FALSE(Poly::FloorDiv(seq, C(2), &r));
  EXPECT_FALSE(Poly::Mod(Sym("seq+1"), C(2), &r));
  ASSERT_TRUE(Poly::FloorDiv(Sym("batch*seq"), seq, &r));
  EXPECT_EQ(S(r), "batch");
  ASSERT_TRUE(Poly::FloorDiv(Sym("8*batch*seq"), Sym("2*seq"), &r));
  EXPECT_EQ(S(r), "4*batch");
  ASSERT_TRUE(Poly::Mod(Sym("8*batch*seq"), Sym("2*seq"), &r));
  EXPECT_TRUE(r.is_constant());
  EXPECT_FALSE(Poly::FloorDiv(C(12), Poly::Atom("batch"), &r));
  EXPECT_FALSE(Poly::FloorDiv(Sym("batch*seq+1"), seq, &r));
  EXPECT_FALSE(Poly::FloorDiv(Sym("batch+1"), Sym("seq+1"), &r));
  ASSERT_TRUE(Poly::FloorDiv(Sym("seq+1"), Sym("seq+1"), &r));
  EXPECT_EQ(S(r), "1");
}

TEST(PolyTest, OverflowAndSizeLimits) {
  Poly r;
  const Poly big = Mul(C(std::numeric_limits<int64_t>::max()), Poly::Atom("x"));
  EXPECT_EQ(Poly::Mul(big, C(2), &r), PolyStatus::kOverflow);
  EXPECT_EQ(Poly::Add(big, Poly::Atom("x"), &r), PolyStatus::kOverflow);
  // (a0 + ... + a9)^2 has 55 terms; ^3 would have 220.
  Poly sum;
  for (int i = 0; i < 10; ++i) sum = Add(sum, Poly::Atom("a" + std::to_string(i)));
  Poly sq = Mul(sum, sum);
  EXPECT_EQ(sq.terms().size(), 55u);
  EXPECT_EQ(Poly::Mul(sq, sum, &r), PolyStatus::kTooLarge);
  Poly x = Poly::Atom("x");
  Poly power = x;
  for (int i = 1; i < Poly::kMaxDegree; ++i) power = Mul(power, x);
  EXPECT_EQ(Poly::Mul(power, x, &r), PolyStatus::kTooLarge);
}

TEST(PolyTest, IntegerDivisionHelpers) {
  EXPECT_EQ(FloorDivInt(7, 2), 3);
  EXPECT_EQ(FloorDivInt(-7, 2), -4);
  EXPECT_EQ(FloorDivInt(7, -2), -4);
  EXPECT_EQ(FloorModInt(-7, 2), 1);
  EXPECT_EQ(FloorModInt(7, -2), -1);
  EXPECT_EQ(CeilDivInt(7, 2), 4);
  EXPECT_EQ(CeilDivInt(-7, 2), -3);
  EXPECT_EQ(CeilDivInt(6, 3), 2);
}

}  // namespace
}  // namespace rules
}  // namespace graphopt
