// statically_known_* (decide without a guard), guard_* (decide at the hint, record a guard) and
// the NoImplicitGuards scope in which a bare SymInt comparison is an error.
#include <gtest/gtest.h>
#include <kiln/error.h>
#include <kiln/symint.h>

#include <thread>

#include "sym/expr_builder.h"

using namespace kiln;
using namespace kiln::symtest;

namespace {

struct Recorder : sym::GuardRecorder {
  std::vector<std::string> seen;
  sym::GuardRecorder* prev;
  Recorder() : prev(sym::set_guard_recorder(this)) {}
  ~Recorder() override { sym::set_guard_recorder(prev); }
  void record(const char* rel, const sym::ExprPtr& a, const sym::ExprPtr& b, bool r) override {
    seen.push_back(sym::str(a) + " " + rel + " " + sym::str(b) + " -> " + (r ? "true" : "false"));
  }
};

SymInt size(const char* name, int64_t hint, sym::Range r = sym::kSizeRange) { return SymInt(sym::symbol(name, r), hint); }

}  // namespace

TEST(SymStaticallyKnown, DecidesFromFormsAndRangesWithoutGuards) {
  Recorder rec;
  SymInt s0 = size("s0", 6), s1 = size("s1", 4), r = size("r", 8, {2, 64});
  EXPECT_TRUE(sym::statically_known_equal(s0 * 2, s0 + s0));
  EXPECT_TRUE(sym::statically_known_equal(floordiv(s0 * s1, s1), s0));
  EXPECT_TRUE(sym::statically_known_leq(s0, s0 + 1));
  EXPECT_TRUE(sym::statically_known_lt(s0, s0 + 1));
  EXPECT_TRUE(sym::statically_known_leq(s0, s0 * s1 + s0));  // s1 >= 0
  EXPECT_TRUE(sym::statically_known_leq(SymInt(0), s0));
  EXPECT_TRUE(sym::statically_known_lt(SymInt(1), r));
  EXPECT_TRUE(sym::statically_known_leq(r, SymInt(64)));
  EXPECT_TRUE(sym::statically_known_multiple_of(s0 * s1 * 6, s1 * 3));
  EXPECT_TRUE(sym::statically_known_multiple_of(s0 * 4 + 8, SymInt(4)));
  EXPECT_TRUE(sym::statically_known_multiple_of(SymInt(12), SymInt(4)));
  // Products of sums stay as written, but the prover multiplies them out.
  EXPECT_TRUE(sym::statically_known_equal(s0 * (s1 + 1) - s0 * s1, s0));
  // A multiple of something that may be 0 only by the form (0 is a multiple only of itself).
  X z = sym_("z", {0, 3});
  EXPECT_TRUE(sym::statically_known_multiple_of((z * sym_("s0")).e, z.e));
  // s0 % d folds to 0 (a divisor in [-1, 0] is -1 where the remainder has a value), but d may be 0.
  X d = sym_("d", {-1, 0});
  EXPECT_TRUE(same(sym_("s0") % d, X(0)));
  EXPECT_FALSE(sym::statically_known_multiple_of(sym_("s0").e, d.e));
  // false means "can't prove", for things that may hold at some sizes and not at others.
  EXPECT_FALSE(sym::statically_known_equal(s0, s1));
  EXPECT_FALSE(sym::statically_known_leq(s0, s1));
  EXPECT_FALSE(sym::statically_known_lt(s0, s0));
  EXPECT_FALSE(sym::statically_known_lt(SymInt(2), r));
  EXPECT_FALSE(sym::statically_known_multiple_of(s0, SymInt(2)));
  EXPECT_FALSE(sym::statically_known_multiple_of(s0 * 4 + 2, SymInt(4)));
  // Asked of an index variable against its extent.
  X i = idx("i", sym_("s1"));
  EXPECT_TRUE(sym::statically_known_lt(i.e, sym_("s1").e));
  EXPECT_FALSE(sym::statically_known_lt(i.e, (sym_("s1") - 1).e));
  EXPECT_TRUE(rec.seen.empty()) << rec.seen.front();
}

TEST(SymGuard, DecidesAtTheHintAndRecords) {
  Recorder rec;
  SymInt s0 = size("s0", 6), s1 = size("s1", 4);
  EXPECT_FALSE(sym::guard_equal(s0, s1));
  EXPECT_TRUE(sym::guard_lt(s1, s0));
  EXPECT_TRUE(sym::guard_leq(s0 * 2, s1 * 3));
  EXPECT_FALSE(sym::guard_lt(s0 * 2, s1 * 3));
  ASSERT_EQ(rec.seen.size(), 4u);
  EXPECT_EQ(rec.seen[0], "s0 == s1 -> false");
  EXPECT_EQ(rec.seen[1], "s1 < s0 -> true");
  EXPECT_EQ(rec.seen[2], "(2*s0) <= (3*s1) -> true");
  EXPECT_EQ(rec.seen[3], "(2*s0) < (3*s1) -> false");
  // What holds for every value in the ranges needs no guard; concrete sizes need none either.
  rec.seen.clear();
  EXPECT_TRUE(sym::guard_leq(s0, s0 + 1));
  EXPECT_FALSE(sym::guard_lt(s0 + 1, s0));
  EXPECT_FALSE(sym::guard_equal(s0, s0 + 1));
  EXPECT_TRUE(sym::guard_equal(s0 * 2, s0 + s0));
  EXPECT_TRUE(sym::guard_lt(SymInt(2), SymInt(3)));
  EXPECT_TRUE(rec.seen.empty()) << rec.seen.front();
}

TEST(SymGuard, BareOperatorsStillRecord) {
  Recorder rec;
  SymInt s0 = size("s0", 6);
  EXPECT_TRUE(s0 > 1);
  EXPECT_FALSE(s0 == 5);
  EXPECT_TRUE(SymInt(2) == 2);  // concrete: nothing to record
  ASSERT_EQ(rec.seen.size(), 2u);
  EXPECT_EQ(rec.seen[0], "1 < s0 -> true");
  EXPECT_EQ(rec.seen[1], "s0 == 5 -> false");
}

// Capture checks every symbol's range on each call, so a relation the ranges decide is no guard.
TEST(SymGuard, BareOperatorsDecidedByRangesRecordNothing) {
  Recorder rec;
  SymInt s0 = size("s0", 6, {2, INT64_MAX}), s1 = size("s1", 6, {2, INT64_MAX});
  EXPECT_FALSE(s0 == 1);       // s0 >= 2
  EXPECT_TRUE(s0 * s1 != -1);  // a product of sizes is >= 4
  EXPECT_TRUE(0 <= s0);
  EXPECT_TRUE(s0 < s0 + 1);
  EXPECT_TRUE(rec.seen.empty()) << rec.seen.front();
  EXPECT_TRUE(s0 == s1);  // not decided by the ranges: recorded at the hints
  ASSERT_EQ(rec.seen.size(), 1u);
  EXPECT_EQ(rec.seen[0], "s0 == s1 -> true");
}

TEST(SymNoImplicitGuards, BareComparisonOnASymbolicSizeIsAnError) {
  Recorder rec;
  SymInt s0 = size("s0", 6), s1 = size("s1", 4);
  {
    sym::NoImplicitGuards scope;
    try {
      (void)(s0 * 2 < s1);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("(2*s0) < s1"), std::string::npos) << m;
      EXPECT_NE(m.find("statically_known_lt"), std::string::npos) << m;
      EXPECT_NE(m.find("guard_lt"), std::string::npos) << m;
    }
    EXPECT_THROW((void)(s0 == s1), Error);
    EXPECT_THROW((void)(s0 != 3), Error);
    EXPECT_THROW((void)(s0 >= s1), Error);
    {
      sym::NoImplicitGuards nested;
      EXPECT_THROW((void)(s0 <= s1), Error);
    }
    EXPECT_THROW((void)(s0 <= s1), Error);  // still inside the outer scope
    // Concrete comparisons and the explicit calls work inside.
    EXPECT_TRUE(SymInt(3) < SymInt(4));
    EXPECT_TRUE(sym::statically_known_lt(s0, s0 + 1));
    EXPECT_TRUE(sym::guard_lt(s1, s0));
  }
  EXPECT_TRUE(s1 < s0);  // after the scope, bare comparisons record again
  ASSERT_EQ(rec.seen.size(), 2u);
  EXPECT_EQ(rec.seen[0], "s1 < s0 -> true");  // from guard_lt
  EXPECT_EQ(rec.seen[1], "s1 < s0 -> true");  // from the bare <
}

TEST(SymNoImplicitGuards, IsPerThread) {
  sym::NoImplicitGuards scope;
  SymInt s0 = size("s0", 6);
  bool other_ok = false;
  std::thread([&] { other_ok = s0 > 1; }).join();
  EXPECT_TRUE(other_ok);
  EXPECT_THROW((void)(s0 > 1), Error);
}
