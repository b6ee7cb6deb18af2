// The floordiv / mod / min / max rules: each where it must fire, and where it must not (negative
// operands, divisors of unknown sign, unknown ranges). Where a rule must not fire, the test also
// shows values at which the rewrite would be wrong.
#include <gtest/gtest.h>

#include <cmath>

#include "sym/expr_builder.h"

using namespace kiln;
using namespace kiln::symtest;

#define EXPECT_SAME(a, b)        \
  do {                           \
    EXPECT_EQ(S(a), S(b));       \
    EXPECT_TRUE(same((a), (b))); \
  } while (0)

namespace {

int64_t at(const X& e, const std::map<std::string, int64_t>& env) { return sym::evaluate(e.e, env); }

// Python's floor division, written independently of sym.
int64_t py_div(int64_t a, int64_t b) { return int64_t(std::floor(double(a) / double(b))); }

}  // namespace

TEST(SymRules, FloorDivConstantsAndUnits) {
  X s0 = sym_("s0"), n = sym_("n", {-10, 10});
  EXPECT_SAME(fdiv(X(-7), X(2)), X(-4));
  EXPECT_SAME(X(-7) % X(2), X(1));
  EXPECT_SAME(X(7) % X(-2), X(-1));
  EXPECT_SAME(fdiv(n, 1), n);
  EXPECT_SAME(fdiv(n, -1), -n);
  EXPECT_SAME(n % 1, X(0));
  EXPECT_SAME(n % -1, X(0));
  EXPECT_SAME(fdiv(X(0), s0), X(0));
  EXPECT_THROW(fdiv(X(3), X(0)), Error);
}

TEST(SymRules, ProductDividedByAFactor) {
  X a = sym_("a", {-50, 50}), b = sym_("b", {-9, 9});  // signed, b may be anything but 0
  EXPECT_SAME(fdiv(a * b, b), a);
  EXPECT_SAME((a * b) % b, X(0));
  EXPECT_SAME(fdiv(a * b * 6, b * 3), a * 2);
  EXPECT_SAME(fdiv(X(2) + b * 2, b + 1), X(2));  // a multiple of a sum
  EXPECT_TRUE(sym::statically_known_multiple_of((a * b * 6).e, (b * 2).e));
}

TEST(SymRules, MultiplesSplitOutOfASum) {
  X a = sym_("a", {-50, 50}), b = sym_("b", {-9, 9}), c = sym_("c", {-50, 50});
  // (a*b + c) // b -> a + c // b and (a*b + c) % b -> c % b: exact for any signs.
  EXPECT_SAME(fdiv(a * b + c, b), a + fdiv(c, b));
  EXPECT_SAME((a * b + c) % b, c % b);
  // A constant divisor also splits the constant and reduces coefficients mod b.
  X s0 = sym_("s0");
  EXPECT_SAME(fdiv(s0 * 2 + 3, 2), s0 + 1);
  EXPECT_SAME((s0 * 3 + 5) % 2, (s0 + 1) % 2);
  EXPECT_SAME(fdiv(s0 * 4 - 1, 4), s0 - 1);  // (-1) // 4 is -1, not 0
  // Not here: 3*s0 is no multiple of 2, and 3*s0 // 2 is no s0 + s0 // 2 in form.
  EXPECT_EQ(S(fdiv(s0 * 3 + 1, 2)), "((1 + 3*s0) // 2)");
  for (int64_t v : {-7, -1, 0, 3, 8}) {
    for (int64_t w : {-4, -1, 2, 5}) {
      const std::map<std::string, int64_t> env{{"a", v}, {"b", w}, {"c", v * 3 + w}};
      EXPECT_EQ(at(fdiv(a * b + c, b), env), py_div(v * w + v * 3 + w, w));
    }
  }
}

TEST(SymRules, CommonFactorsCancel) {
  X s0 = sym_("s0"), a = sym_("a", {-20, 20}), b = sym_("b", {-20, 20}), g = sym_("g", {-5, 5});
  EXPECT_SAME(fdiv(s0 * 4 + 2, 6), fdiv(s0 * 2 + 1, 3));
  EXPECT_SAME(fdiv(a * g, b * g), fdiv(a, b));       // the same rational number, any sign of g
  EXPECT_SAME((a * g * 2) % (b * g * 2), (a % b) * g * 2);  // (g*x) % (g*y) = g*(x % y)
  EXPECT_SAME((s0 * 2) % 4, (s0 % 2) * 2);
  for (int64_t x : {-7, 3, 11})
    for (int64_t y : {-4, 3})
      for (int64_t z : {-3, 2}) {
        const std::map<std::string, int64_t> env{{"a", x}, {"b", y}, {"g", z}};
        EXPECT_EQ(at(fdiv(a * g, b * g), env), py_div(x * z, y * z));
        EXPECT_EQ(at((a % b) * g * 2, env), x * z * 2 - y * z * 2 * py_div(x * z * 2, y * z * 2));
      }
}

TEST(SymRules, NestedFloorDiv) {
  X s0 = sym_("s0"), n = sym_("n", {-100, 100}), d = sym_("d", {-5, 5});
  EXPECT_SAME(fdiv(fdiv(s0, 2), 3), fdiv(s0, 6));
  EXPECT_SAME(fdiv(fdiv(n, 2), 3), fdiv(n, 6));  // floor(floor(x) / c) = floor(x / c) for c > 0, any x
  EXPECT_SAME(fdiv(fdiv(n, -2), 3), fdiv(n, -6));
  EXPECT_SAME(fdiv(fdiv(s0, sym_("s1")), sym_("s2")), fdiv(s0, sym_("s1") * sym_("s2")));
  // Not when the outer divisor may be negative: at n = 7, d = -3: (7 // 2) // -3 = -1, 7 // -6 = -2.
  const X kept = fdiv(fdiv(n, 2), d);
  EXPECT_EQ(S(kept), "((n // 2) // d)");
  EXPECT_EQ(at(kept, {{"n", 7}, {"d", -3}}), -1);
  EXPECT_EQ(py_div(7, -6), -2);
  EXPECT_EQ(S(fdiv(fdiv(n, 2), -3)), "((n // 2) // -3)");
}

TEST(SymRules, SmallNumeratorByRanges) {
  X x = sym_("x", {0, 3});
  EXPECT_SAME(fdiv(x, 4), X(0));
  EXPECT_SAME(x % 4, x);
  EXPECT_SAME(fdiv(x + 4, 4), X(1));
  // Not when x may reach the divisor, or be negative (-1 // 4 is -1, -1 % 4 is 3).
  X y = sym_("y", {0, 4}), z = sym_("z", {-1, 3});
  EXPECT_EQ(S(fdiv(y, 4)), "(y // 4)");
  EXPECT_EQ(S(y % 4), "(y % 4)");
  EXPECT_EQ(S(fdiv(z, 4)), "(z // 4)");
  EXPECT_EQ(S(z % 4), "(z % 4)");
  EXPECT_EQ(at(fdiv(z, 4), {{"z", -1}}), -1);
  // Unknown ranges (sizes: [0, inf)) decide nothing.
  X s0 = sym_("s0"), s1 = sym_("s1");
  EXPECT_EQ(S(fdiv(s0, s1)), "(s0 // s1)");
  EXPECT_EQ(S(s0 % 4), "(s0 % 4)");
}

TEST(SymRules, FlatIndexDecomposesBack) {
  // A loop nest over [s0, s1] with flat index i = i0*s1 + i1, 0 <= i0 < s0, 0 <= i1 < s1.
  X s0 = sym_("s0"), s1 = sym_("s1");
  X i0 = idx("i0", s0), i1 = idx("i1", s1);
  X i = i0 * s1 + i1;
  EXPECT_SAME(fdiv(i, s1), i0);
  EXPECT_SAME(i % s1, i1);
  EXPECT_SAME(fdiv(i1, s1), X(0));
  EXPECT_SAME(i1 % s1, i1);
  // And a flat index over the whole range: (f // s1) % s0 is f // s1, since f < s0*s1.
  X f = idx("f", s0 * s1);
  EXPECT_SAME(fdiv(f, s1) % s0, fdiv(f, s1));
  EXPECT_SAME(fdiv(fdiv(f, s1), s0), X(0));
  EXPECT_SAME(fdiv(f, s1) * s1 + f % s1, f);  // the decomposition recombines
  // Three levels: (i0*s1*s2 + i1*s2 + i2) // (s1*s2) -> i0.
  X s2 = sym_("s2"), j0 = idx("j0", s0), j1 = idx("j1", s1), j2 = idx("j2", s2);
  X flat = j0 * s1 * s2 + j1 * s2 + j2;
  EXPECT_SAME(fdiv(flat, s1 * s2), j0);
  EXPECT_SAME(fdiv(flat, s2) % s1, j1);
  EXPECT_SAME(flat % s2, j2);
  // Not with a plain size in place of the index variable: nothing says j < s1.
  X j = sym_("j");
  EXPECT_SAME(fdiv(i0 * s1 + j, s1), i0 + fdiv(j, s1));
  EXPECT_EQ(S(fdiv(j, s1)), "(j // s1)");
}

TEST(SymRules, NestedMod) {
  X s0 = sym_("s0"), n = sym_("n", {-100, 100});
  EXPECT_SAME((n % 12) % 4, n % 4);  // 4 divides 12: exact for any sign of n
  EXPECT_SAME((s0 % 4) % 12, s0 % 4);  // by ranges: s0 % 4 < 12
  // Not when the outer divisor does not divide the inner one: at 7, (7 % 6) % 4 = 1, 7 % 4 = 3.
  const X kept = (s0 % 6) % 4;
  EXPECT_EQ(S(kept), "((s0 % 6) % 4)");
  EXPECT_EQ(at(kept, {{"s0", 7}}), 1);
}

TEST(SymRules, DivModRecombine) {
  X x = sym_("x", {-100, 100}), b = sym_("b", {1, 9}), s0 = sym_("s0");
  EXPECT_SAME(fdiv(x, b) * b + x % b, x);
  EXPECT_SAME(fdiv(x, 8) * 8 + x % 8 + s0, x + s0);
  EXPECT_SAME((fdiv(x, b) * b + x % b) * 3, x * 3);
  // Not with a different multiple.
  EXPECT_EQ(S(fdiv(x, 8) * 4 + x % 8), "(4*(x // 8) + (x % 8))");
}

TEST(SymRules, MinMaxByRanges) {
  X s0 = sym_("s0", {2, INT64_MAX}), s1 = sym_("s1"), n = sym_("n", {-5, 5});
  EXPECT_SAME(smin(s0, X(1)), X(1));
  EXPECT_SAME(smax(s0, X(1)), s0);
  EXPECT_SAME(smin(s1, s1 + 1), s1);
  EXPECT_SAME(smax(s1, s1 + 1), s1 + 1);
  EXPECT_SAME(smin(s1, s1 * 2), s1);  // s1 >= 0
  EXPECT_SAME(smin(s0, s0), s0);
  // Commutative, and nested chains have one form.
  X a = sym_("a"), b = sym_("b"), c = sym_("c");
  EXPECT_SAME(smin(a, b), smin(b, a));
  EXPECT_SAME(smin(smin(c, a), b), smin(a, smin(b, c)));
  EXPECT_SAME(smax(smax(c, a), smax(b, a)), smax(smax(a, b), c));
  EXPECT_EQ(S(smin(smin(c, a), b)), "min(min(a, b), c)");
  // Not decided where the sign is unknown: min(n, 2*n) is 2*n for n < 0.
  EXPECT_EQ(S(smin(n, n * 2)), "min(2*n, n)");
  EXPECT_EQ(at(smin(n, n * 2), {{"n", -3}}), -6);
  // Decided by an index variable's extent: i < s1.
  X i = idx("i", s1);
  EXPECT_SAME(smin(i, s1), i);
  EXPECT_SAME(smax(i + 1, s1), s1);
}
