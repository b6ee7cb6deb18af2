// Randomized checks of the simplifier and the prover: random expression trees over symbols with
// ranges (signed ones among them) and index variables, evaluated directly as trees (an evaluator
// written here, with Python's floor semantics computed in floating point) against sym::evaluate
// of what the smart constructors made of them, at random values in the symbols' ranges.
// Building a tree throws where a divisor simplifies to 0: the tree must then have no value at all.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "graph/reader.h"
#include "sym/expr_builder.h"

using namespace kiln;
using namespace kiln::symtest;

namespace {

struct Tree {
  enum Op { Const, Var, Add, Sub, Mul, Div, Mod, Min, Max } op;
  int64_t value = 0;  // Const
  int var = -1;       // Var
  std::shared_ptr<const Tree> a, b;
};
using TreePtr = std::shared_ptr<const Tree>;

TreePtr leaf_const(int64_t v) { return std::make_shared<Tree>(Tree{Tree::Const, v}); }
TreePtr node(Tree::Op op, TreePtr a, TreePtr b) { return std::make_shared<Tree>(Tree{op, 0, -1, a, b}); }

// The variables: sizes with small ranges, a signed one, a constant-range one, a size of unknown
// range, and index variables over them.
struct Vars {
  X s0 = sym_("s0", {0, 12}), s1 = sym_("s1", {1, 6}), n = sym_("n", {-6, 6}), k = sym_("k", {3, 3});
  X s4 = sym_("s4"), s5 = sym_("s5");
  X i0 = idx("i0", s1), i1 = idx("i1", s0 * s1 + 1), i2 = idx("i2", s4);
  std::vector<std::pair<std::string, X>> all{{"s0", s0}, {"s1", s1}, {"n", n},   {"k", k},  {"s4", s4},
                                             {"s5", s5}, {"i0", i0}, {"i1", i1}, {"i2", i2}};
  // Values in the ranges (index variables below their extents); false where an extent is 0.
  bool draw(std::mt19937_64& rng, std::map<std::string, int64_t>& env) const {
    auto in = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
    env["s0"] = in(0, 12), env["s1"] = in(1, 6), env["n"] = in(-6, 6), env["k"] = 3;
    env["s4"] = in(0, 15), env["s5"] = in(0, 15);
    const int64_t e1 = env["s0"] * env["s1"] + 1;
    if (env["s4"] == 0) return false;
    env["i0"] = in(0, env["s1"] - 1), env["i1"] = in(0, e1 - 1), env["i2"] = in(0, env["s4"] - 1);
    return true;
  }
};

std::optional<int64_t> eval(const TreePtr& t, const std::vector<std::pair<std::string, X>>& vars,
                            const std::map<std::string, int64_t>& env) {
  if (t->op == Tree::Const) return t->value;
  if (t->op == Tree::Var) return env.at(vars[size_t(t->var)].first);
  auto a = eval(t->a, vars, env), b = eval(t->b, vars, env);
  if (!a || !b) return std::nullopt;
  const double x = double(*a), y = double(*b);
  switch (t->op) {
    case Tree::Add: return *a + *b;
    case Tree::Sub: return *a - *b;
    case Tree::Mul: return *a * *b;
    case Tree::Div:
      if (*b == 0) return std::nullopt;
      return int64_t(std::floor(x / y));
    case Tree::Mod:
      if (*b == 0) return std::nullopt;
      return *a - *b * int64_t(std::floor(x / y));
    case Tree::Min: return std::min(*a, *b);
    case Tree::Max: return std::max(*a, *b);
    default: return std::nullopt;
  }
}

X build(const TreePtr& t, const std::vector<std::pair<std::string, X>>& vars) {
  switch (t->op) {
    case Tree::Const: return X(t->value);
    case Tree::Var: return vars[size_t(t->var)].second;
    case Tree::Add: return build(t->a, vars) + build(t->b, vars);
    case Tree::Sub: return build(t->a, vars) - build(t->b, vars);
    case Tree::Mul: return build(t->a, vars) * build(t->b, vars);
    case Tree::Div: return fdiv(build(t->a, vars), build(t->b, vars));
    case Tree::Mod: return build(t->a, vars) % build(t->b, vars);
    case Tree::Min: return smin(build(t->a, vars), build(t->b, vars));
    case Tree::Max: return smax(build(t->a, vars), build(t->b, vars));
  }
  return X(0);
}

struct Gen {
  std::mt19937_64 rng{20240611};
  std::vector<int> vars;  // which variables leaves may use
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
  TreePtr leaf() {
    if (pick(10) < 4) return leaf_const(pick(15) - 6);
    return std::make_shared<Tree>(Tree{Tree::Var, 0, vars[size_t(pick(int(vars.size())))]});
  }
  TreePtr divisor(int depth) {
    switch (pick(4)) {
      case 0: return leaf_const(pick(6) + 1);
      case 1: return leaf_const(-pick(4) - 1);
      case 2: return leaf();
      default: return tree(depth - 1);
    }
  }
  TreePtr tree(int depth) {
    if (depth <= 0 || pick(10) < 3) return leaf();
    // Flat-index shapes, so the index-variable rules meet random context: x*s1 + i0.
    if (pick(8) == 0 && vars.size() > 6) return node(Tree::Add, node(Tree::Mul, tree(depth - 1), leaf_var(1)), leaf_var(6));
    const auto op = Tree::Op(Tree::Add + pick(7));
    switch (op) {
      case Tree::Mul: return node(op, tree(depth - 1), leaf());  // one side a leaf: values stay small
      case Tree::Div:
      case Tree::Mod: return node(op, tree(depth - 1), divisor(depth));
      default: return node(op, tree(depth - 1), tree(depth - 1));
    }
  }
  TreePtr leaf_var(int v) { return std::make_shared<Tree>(Tree{Tree::Var, 0, v}); }
};

}  // namespace

TEST(SymRandom, SimplifiedExpressionsEvaluateLikeTheTrees) {
  Vars v;
  Gen g;
  for (int i = 0; i < int(v.all.size()); ++i) g.vars.push_back(i);
  std::mt19937_64 rng(7);
  int checked = 0;
  for (int n = 0; n < 3000; ++n) {
    const TreePtr t = g.tree(4);
    std::optional<X> built;
    try {
      built = build(t, v.all);
    } catch (const Error&) {
    }
    for (int s = 0; s < 12; ++s) {
      std::map<std::string, int64_t> env;
      if (!v.draw(rng, env)) continue;
      const std::optional<int64_t> want = eval(t, v.all, env);
      if (!built) {
        ASSERT_FALSE(want) << "building the tree failed, but it has a value";
        continue;
      }
      const X& e = *built;
      if (!want) continue;  // a division by zero: no value to preserve
      int64_t got = 0;
      ASSERT_NO_THROW(got = sym::evaluate(e.e, env)) << S(e);
      ASSERT_EQ(got, *want) << S(e) << " at s0=" << env["s0"] << " s1=" << env["s1"] << " n=" << env["n"]
                            << " s4=" << env["s4"] << " s5=" << env["s5"] << " i0=" << env["i0"] << " i1=" << env["i1"]
                            << " i2=" << env["i2"];
      const sym::Range r = sym::bound(e.e);
      ASSERT_TRUE(r.contains(*want)) << S(e) << " = " << *want << " outside [" << r.lo << ", " << r.hi << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
}

TEST(SymRandom, StaticallyKnownAnswersHoldAtEveryValue) {
  Vars v;
  Gen g;
  for (int i = 0; i < int(v.all.size()); ++i) g.vars.push_back(i);
  std::mt19937_64 rng(11);
  int proven = 0;
  for (int n = 0; n < 2000; ++n) {
    // Half the pairs are related (b built from a), so that some relations are provable.
    const TreePtr a = g.tree(3);
    TreePtr b;
    switch (g.pick(6)) {
      case 0: b = node(Tree::Add, a, leaf_const(g.pick(3))); break;
      case 1: b = node(Tree::Max, a, g.tree(2)); break;
      case 2: b = node(Tree::Mul, a, leaf_const(g.pick(3) + 1)); break;
      default: b = g.tree(3); break;
    }
    std::optional<X> built_a, built_b;
    try {
      built_a = build(a, v.all), built_b = build(b, v.all);
    } catch (const Error&) {
      continue;  // a divisor that is 0 (the test above checks those)
    }
    const X &ea = *built_a, &eb = *built_b;
    const bool leq = sym::statically_known_leq(ea.e, eb.e), lt = sym::statically_known_lt(ea.e, eb.e);
    const bool eq = sym::statically_known_equal(ea.e, eb.e), mult = sym::statically_known_multiple_of(eb.e, ea.e);
    proven += leq + lt + eq + mult;
    for (int s = 0; s < 12; ++s) {
      std::map<std::string, int64_t> env;
      if (!v.draw(rng, env)) continue;
      const auto x = eval(a, v.all, env), y = eval(b, v.all, env);
      if (!x || !y) continue;
      const std::string what = S(ea) + " vs " + S(eb);
      if (leq) ASSERT_LE(*x, *y) << what;
      if (lt) ASSERT_LT(*x, *y) << what;
      if (eq) ASSERT_EQ(*x, *y) << what;
      if (mult) ASSERT_TRUE(*x == 0 ? *y == 0 : *y % *x == 0) << S(eb) << " multiple of " << S(ea);
    }
  }
  EXPECT_GT(proven, 500);
}

TEST(SymRandom, PrintedFormsParseBackToTheSameNode) {
  // Over symbols of the default range: what the graph reader makes of a name.
  Vars v;
  Gen g;
  g.vars = {4, 5};
  int read = 0;
  for (int n = 0; n < 2000; ++n) {
    std::optional<X> e, back;
    try {
      e = build(g.tree(4), v.all);
    } catch (const Error&) {
      continue;  // a divisor that is 0
    }
    graph::Lexer lx(S(*e));
    try {
      back = X(graph::read_symint(lx, 1).as_expr());
    } catch (const Error&) {
      continue;  // the reader computes hints (every symbol 1): a hint may divide by zero
    }
    ASSERT_TRUE(same(*back, *e)) << S(*e) << " read back as " << S(*back);
    ++read;
  }
  EXPECT_GT(read, 1500);
}
