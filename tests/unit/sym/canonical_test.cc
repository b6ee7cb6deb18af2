// sym::Expr canonical forms: interning, the total order, like terms, distribution, printing and
// its round trip through the graph reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "graph/reader.h"
#include "sym/expr_builder.h"

using namespace kiln;
using namespace kiln::symtest;

#define EXPECT_SAME(a, b)          \
  do {                             \
    EXPECT_EQ(S(a), S(b));         \
    EXPECT_TRUE(same((a), (b)));   \
  } while (0)

namespace {

X parse(const std::string& text) {
  graph::Lexer lx(text);
  return X(graph::read_symint(lx, 1).as_expr());
}

}  // namespace

TEST(SymIntern, OneNodePerExpression) {
  X s0 = sym_("s0"), s1 = sym_("s1");
  EXPECT_TRUE(same(sym_("s0"), s0));
  EXPECT_TRUE(same(X(7), X(7)));
  EXPECT_FALSE(same(X(7), X(8)));
  EXPECT_TRUE(same(s0 * s1 + 3, X(3) + s1 * s0));
  EXPECT_EQ(sym::hash((s0 * s1 + 3).e), sym::hash((s1 * s0 + 3).e));
  // A symbol is its name and its range: the same name with another range is another node.
  X r = sym_("s0", {2, 64});
  EXPECT_FALSE(same(r, s0));
  EXPECT_EQ(S(r), "s0");
  EXPECT_EQ(sym::bound(r.e), (sym::Range{2, 64}));
  // An index variable is its name and its extent.
  EXPECT_TRUE(same(idx("i", s1), idx("i", s1)));
  EXPECT_FALSE(same(idx("i", s1), idx("i", s0)));
  EXPECT_FALSE(same(idx("i", s1), sym_("i")));
}

TEST(SymIntern, NodesAreFreedWithTheirLastReference) {
  std::weak_ptr<const sym::Expr> weak;
  {
    X e = sym_("only_here") * 5 + 1;
    weak = e.e;
    EXPECT_TRUE(same(e, sym_("only_here") * 5 + 1));
  }
  EXPECT_TRUE(weak.expired());
  X again = sym_("only_here") * 5 + 1;  // built afresh, and interned again
  EXPECT_TRUE(same(again, sym_("only_here") * 5 + 1));
}

TEST(SymIntern, ThreadsBuildingTheSameExpressionGetTheSameNode) {
  X s0 = sym_("s0"), s1 = sym_("s1");
  const X held = fdiv(s0 * s1 + 7, s1) + (s0 % 4);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        // Each thread also makes and drops nodes of its own, so interning and freeing interleave.
        X own = sym_(("t" + std::to_string(t)).c_str()) * (i + 2) + i;
        X e = (t % 2 ? (s0 % 4) + fdiv(X(7) + s1 * s0, s1) : fdiv(s0 * s1 + 7, s1) + (s0 % 4));
        if (!same(e, held) || sym::evaluate(own.e, {{"t" + std::to_string(t), 1}}) != 2 * i + 2) ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(SymCanonical, SumsAndProductsDoNotDependOnOperandOrder) {
  X a = sym_("a"), b = sym_("b"), c = sym_("c");
  std::vector<X> v{a, b * 3, c % 5};
  std::vector<int> perm{0, 1, 2};
  const X sum = v[0] + v[1] + v[2], prod = a * b * c;
  do {
    EXPECT_SAME(v[perm[0]] + v[perm[1]] + v[perm[2]], sum);
    EXPECT_SAME(v[perm[0]] + (v[perm[1]] + v[perm[2]]), sum);
    std::vector<X> f{a, b, c};
    EXPECT_SAME(f[perm[0]] * f[perm[1]] * f[perm[2]], prod);
    EXPECT_SAME(f[perm[0]] * (f[perm[1]] * f[perm[2]]), prod);
  } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_EQ(S(sum), "(a + 3*b + (c % 5))");
}

TEST(SymCanonical, OrderIsByStructureNotByText) {
  X s2 = sym_("s2"), s10 = sym_("s10");
  // By name, numbers as numbers: s2 before s10 (as text "s10" < "s2").
  EXPECT_LT(sym::compare(s2.e, s10.e), 0);
  EXPECT_EQ(S(s10 + s2), "(s2 + s10)");
  EXPECT_EQ(S(s10 * s2), "(s2*s10)");
  // Constants first; products before symbols; then sums, //, %, min, max.
  X s0 = sym_("s0"), s1 = sym_("s1");
  EXPECT_EQ(S(s1 + s0 * s1 + 1), "(1 + s0*s1 + s1)");
  EXPECT_EQ(S(smin(s0, s1) + (s0 % 3) + fdiv(s0, 3) + s0), "(s0 + (s0 // 3) + (s0 % 3) + min(s0, s1))");
  EXPECT_EQ(sym::compare(s0.e, s0.e), 0);
  EXPECT_EQ(sym::compare(s0.e, s1.e), -sym::compare(s1.e, s0.e));
}

TEST(SymCanonical, LikeTermsCombine) {
  X s0 = sym_("s0"), s1 = sym_("s1");
  EXPECT_EQ(S(s0 + s0), "(2*s0)");
  EXPECT_SAME(s0 + s0, s0 * 2);
  EXPECT_SAME(s0 * 2 - s0, s0);
  EXPECT_SAME(s0 - s0, X(0));
  EXPECT_SAME(s0 * s1 + s1 * s0, X(2) * s0 * s1);
  EXPECT_SAME((s0 + s1) * 3 - s1 * 3, s0 * 3);
  EXPECT_SAME(s0 + 1 + s1 - 1 - s1, s0);
  EXPECT_EQ(S(s0 * 3 - s1 * 2 + 4), "(4 + 3*s0 - 2*s1)");
}

TEST(SymCanonical, ConstantsDistributeOverSumsOtherProductsDoNot) {
  X s0 = sym_("s0"), s1 = sym_("s1"), s2 = sym_("s2");
  EXPECT_EQ(S((s0 + 1) * 2), "(2 + 2*s0)");
  EXPECT_EQ(S(s0 * (s1 + 1)), "(s0*(1 + s1))");  // not multiplied out
  // In a longer product a sum is primitive; its content joins the coefficient, so one product
  // has one form however it was built.
  EXPECT_SAME((s1 * 2 + 2) * s0, X(2) * s0 * (s1 + 1));
  EXPECT_EQ(S((s1 * 2 + 2) * s0), "(2*s0*(1 + s1))");
  EXPECT_SAME((s0 - s1) * s2, -((s1 - s0) * s2));
  EXPECT_SAME(X(0) * (s0 + s1), X(0));
}

TEST(SymCanonical, RepeatedFactorsStayRepeated) {
  X s0 = sym_("s0"), s1 = sym_("s1");
  EXPECT_EQ(S(s0 * s0), "(s0*s0)");
  EXPECT_SAME(s0 * s1 * s0, s0 * s0 * s1);
  EXPECT_SAME(fdiv(s0 * s0 * s1, s0), s0 * s1);
  EXPECT_SAME(s0 * s0 - s0 * s0, X(0));
}

TEST(SymPrint, ReadableAndStable) {
  X s0 = sym_("s0"), s1 = sym_("s1");
  // The forms the IR goldens hold (tests/golden/graph/symbolic.kir, capture/dynamic_sizes.kir).
  EXPECT_EQ(S(s0 * 4), "(4*s0)");
  EXPECT_EQ(S(s0 + 1), "(1 + s0)");
  EXPECT_EQ(S(s1 * s0), "(s0*s1)");
  EXPECT_EQ(S(fdiv(s0 + 1, 2)), "((1 + s0) // 2)");
  EXPECT_EQ(S(s0), "s0");
  EXPECT_EQ(S(X(-3)), "-3");
  // Signs, products inside sums and sums inside products.
  EXPECT_EQ(S(s0 - s1), "(s0 - s1)");
  EXPECT_EQ(S(X(4) - s0), "(4 - s0)");
  EXPECT_EQ(S(-s0), "(-s0)");
  EXPECT_EQ(S(-s0 * 2 + s1), "(-2*s0 + s1)");
  EXPECT_EQ(S(smin(X(2), s0 - 6)), "min(2, -6 + s0)");
  EXPECT_EQ(S(fdiv(s0 * 4, s1 + 1) * 3), "(3*((4*s0) // (1 + s1)))");
  EXPECT_EQ(S((s0 % 3) * s1), "(s1*(s0 % 3))");
}

TEST(SymPrint, RoundTripsThroughTheGraphReader) {
  X s0 = sym_("s0"), s1 = sym_("s1"), s2 = sym_("s2");
  const std::vector<X> cases{
      s0, X(-3), s0 * 4, s0 + 1, s0 - s1, X(4) - s0, -s0, -s0 * 2 + s1, s0 * s0 * s1, s0 * (s1 + 1) * 2,
      fdiv(s0 + 1, 2), fdiv(s0 * 4, s1 + 1) * 3, (s0 % 3) * s1, smin(X(2), s0 - 6), smax(s0, s1 * 2) - 1,
      fdiv(s0 - 7, -3), (s0 - s1) % s2, smin(smin(s0, s1), s2 + 1), (s0 * s1 - s2) * (s2 - 1) - s0 * 5};
  for (const X& e : cases) {
    SCOPED_TRACE(S(e));
    EXPECT_SAME(parse(S(e)), e);
  }
}
