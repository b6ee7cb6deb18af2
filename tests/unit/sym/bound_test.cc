// Value ranges: every symbol's range, and bound(e) over +, *, //, %, min, max (saturating).
#include <gtest/gtest.h>

#include "sym/expr_builder.h"

using namespace kiln;
using namespace kiln::symtest;

namespace {
sym::Range B(const X& e) { return sym::bound(e.e); }
}  // namespace

TEST(SymBound, SymbolsCarryTheirRanges) {
  EXPECT_EQ(B(sym_("s0")), (sym::Range{0, INT64_MAX}));  // a size: >= 0
  EXPECT_EQ(B(sym_("s0", {2, 64})), (sym::Range{2, 64}));
  EXPECT_EQ(B(X(-4)), (sym::Range{-4, -4}));
  EXPECT_EQ(B(idx("i", sym_("n", {1, 10}))), (sym::Range{0, 9}));
  EXPECT_THROW(sym_("bad", {3, 2}), Error);
}

TEST(SymBound, Arithmetic) {
  X a = sym_("a", {2, 5}), b = sym_("b", {-3, 4}), c = sym_("c", {1, 3});
  EXPECT_EQ(B(a + b), (sym::Range{-1, 9}));
  EXPECT_EQ(B(a - b), (sym::Range{-2, 8}));
  EXPECT_EQ(B(a * b), (sym::Range{-15, 20}));
  EXPECT_EQ(B(b * b), (sym::Range{-12, 16}));  // intervals do not know both factors are one b
  EXPECT_EQ(B(smin(a, b)), (sym::Range{-3, 4}));
  EXPECT_EQ(B(smax(a, b)), (sym::Range{2, 5}));
  // Floor division by a positive divisor; by a negative one; by one of either sign.
  EXPECT_EQ(B(fdiv(a, c)), (sym::Range{0, 5}));
  EXPECT_EQ(B(fdiv(b, c)), (sym::Range{-3, 4}));
  EXPECT_EQ(B(fdiv(b, X(2))), (sym::Range{-2, 2}));
  EXPECT_EQ(B(fdiv(a, X(0) - c)), (sym::Range{-5, -1}));
  EXPECT_EQ(B(fdiv(a, b)), (sym::Range{-5, 5}));
  // Remainders take the divisor's sign.
  EXPECT_EQ(B(b % 4), (sym::Range{0, 3}));
  EXPECT_EQ(B(a % 3), (sym::Range{0, 2}));
  EXPECT_EQ(B(a % 8), (sym::Range{2, 5}));  // a < 8: a itself
  EXPECT_EQ(B(a % -3), (sym::Range{-2, 0}));
  EXPECT_EQ(B(a % b), (sym::Range{-2, 3}));
  // A size divisor in [0, n] counts as [1, n]: a division by 0 has no value to bound.
  EXPECT_EQ(B(fdiv(a, sym_("s", {0, 4}))), (sym::Range{0, 5}));
}

TEST(SymBound, SaturatesInsteadOfOverflowing) {
  X s = sym_("s"), n = sym_("n", {INT64_MIN, INT64_MAX});
  EXPECT_EQ(B(s * s), (sym::Range{0, INT64_MAX}));
  EXPECT_EQ(B(s * 3 + s * 5), (sym::Range{0, INT64_MAX}));
  EXPECT_EQ(B(s * -3), (sym::Range{INT64_MIN, 0}));
  EXPECT_EQ(B(n * n), (sym::Range{INT64_MIN, INT64_MAX}));
  EXPECT_EQ(B(fdiv(n, X(-1))), (sym::Range{-INT64_MAX, INT64_MAX}));  // -n
  EXPECT_EQ(B(X(0) - n), (sym::Range{-INT64_MAX, INT64_MAX}));
  EXPECT_EQ(B(fdiv(n, sym_("d", {-2, 2}))), (sym::Range{-INT64_MAX, INT64_MAX}));
  // A saturated bound is not a value: s*s*4 with s near the top is not folded to INT64_MAX.
  X big = sym_("big", {INT64_MAX / 2, INT64_MAX});
  EXPECT_FALSE(sym::is_const((big * 4).e));
}

TEST(SymBound, AnExpressionWithOneValueIsThatValue) {
  X a = sym_("a", {2, 5}), k = sym_("k", {3, 3});
  EXPECT_TRUE(same(a % 1, X(0)));
  EXPECT_TRUE(same(fdiv(a, 8), X(0)));
  EXPECT_TRUE(same(smin(a, X(2)), X(2)));
  EXPECT_TRUE(same(k * 2 + 1, X(7)));
  EXPECT_EQ(S(k), "k");  // a symbol stays a symbol
}
