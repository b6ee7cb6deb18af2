// Symbolic integer expressions over size symbols: const, symbol, +, *, floordiv, mod, min, max.
//
// Nodes are interned (hash-consed): there is one node per distinct expression, so equality is
// pointer equality and hashing is O(1). They are only built through the smart constructors below,
// which keep every expression in one canonical form (docs/sym.md):
// - a sum is `c + k1*t1 + k2*t2 + ...`: its constant first (if not 0), then its terms, like terms
//   combined, ordered by the total order `compare` on their bases (no printing involved);
// - a product is `k*f1*f2*...`: its constant coefficient first (if not 1), then its factors in
//   that order; a repeated factor stays repeated (`s0*s0`: there is no Pow); a constant times a sum
//   is distributed (`2*(s0 + 1)` is `2 + 2*s0`), a sum inside a longer product is made primitive
//   (gcd of its coefficients 1, first term positive) and its content moves to the coefficient;
// - floordiv / mod / min / max are simplified by the rules in simplify.cc, using value ranges.
// Every symbol carries a range (sizes default to [0, inf)); every node caches its bound.
#pragma once
#include <kiln/symint.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::sym {

enum class Kind : uint8_t { Const, Symbol, Add, Mul, FloorDiv, Mod, Min, Max };

// A closed interval of int64 values. INT64_MIN and INT64_MAX also stand for "unbounded": interval
// arithmetic saturates there, which is sound as long as the expression itself does not overflow.
struct Range {
  int64_t lo = INT64_MIN, hi = INT64_MAX;
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool operator==(const Range&) const = default;
};
constexpr Range kSizeRange{0, INT64_MAX};

struct Expr {
  Kind kind;
  int64_t value = 0;          // Const
  std::string name;           // Symbol
  std::vector<ExprPtr> args;  // operands, in canonical order
  ExprPtr extent;             // Symbol: set for an index variable, which lies in [0, extent)
  Range range;                // Symbol: its declared range; any other node: its bound
  uint64_t hash = 0;          // of the structure (not of addresses): deterministic
  bool relational = false;    // holds an index variable or a mod by a non-constant: bounds
                              // between expressions exist that intervals miss (see bound.cc)
};

// ---- construction (the only way to make nodes) ----
ExprPtr constant(int64_t v);
// A size symbol with its range ([0, inf) by default). Symbols are identified by name and range:
// the same name with another range is another node (it prints the same).
ExprPtr symbol(const std::string& name, Range range = kSizeRange);
// A loop index variable in [0, extent): what lets (i0*s1 + i1) // s1 become i0.
ExprPtr index(const std::string& name, ExprPtr extent);
ExprPtr add(ExprPtr a, ExprPtr b);
ExprPtr sub(ExprPtr a, ExprPtr b);
ExprPtr mul(ExprPtr a, ExprPtr b);
ExprPtr floordiv(ExprPtr a, ExprPtr b);  // Python semantics: rounds toward -inf
ExprPtr mod(ExprPtr a, ExprPtr b);       // Python semantics: the sign of the divisor
ExprPtr min(ExprPtr a, ExprPtr b);
ExprPtr max(ExprPtr a, ExprPtr b);

// ---- inspection ----
bool is_const(const ExprPtr& e, int64_t* v = nullptr);
inline bool equal(const ExprPtr& a, const ExprPtr& b) { return a == b; }  // interned
inline uint64_t hash(const ExprPtr& e) { return e->hash; }
// A total order on nodes that does not depend on printing or addresses: kind, then constant value
// / symbol name (s2 before s10) and range, then operands.
int compare(const ExprPtr& a, const ExprPtr& b);
// Interval of values e can take when its symbols lie in their ranges (index variables in theirs).
inline Range bound(const ExprPtr& e) { return e->range; }
int64_t evaluate(const ExprPtr& e, const std::map<std::string, int64_t>& env);
// Readable and deterministic; compound expressions in parentheses; graph/reader.cc parses it back.
std::string str(const ExprPtr& e);

// ---- questions answered without guarding (false: can't prove) ----
bool statically_known_equal(const ExprPtr& a, const ExprPtr& b);
bool statically_known_leq(const ExprPtr& a, const ExprPtr& b);
bool statically_known_lt(const ExprPtr& a, const ExprPtr& b);
bool statically_known_multiple_of(const ExprPtr& a, const ExprPtr& b);  // a == k*b, k an integer
bool statically_known_nonneg(const ExprPtr& e);

// ---- helpers shared by the simplifier and the prover (terms of sums and products) ----
namespace detail {
// Integer floordiv / mod with Python semantics (a kiln::Error on division by zero).
int64_t floordiv_int(int64_t a, int64_t b);
int64_t mod_int(int64_t a, int64_t b);
// Interns an already-canonical node (its bound given, or computed).
ExprPtr make(Kind k, std::vector<ExprPtr> args, Range bound);
ExprPtr make(Kind k, std::vector<ExprPtr> args);
Range range_of(Kind k, const std::vector<ExprPtr>& args);
// A term of a sum as coefficient * base (base non-constant, no coefficient of its own).
struct Term {
  int64_t coeff;
  ExprPtr base;
};
Term split_term(const ExprPtr& t);
ExprPtr make_term(int64_t coeff, const ExprPtr& base);
// The constant and the terms of e seen as a sum (a non-sum is one term, or a constant).
void sum_parts(const ExprPtr& e, int64_t* constant, std::vector<Term>* terms);
// e / d when that is exact by the form (k*x*y / (j*y) with j | k, or term by term over a sum).
ExprPtr divide_exact(const ExprPtr& e, const ExprPtr& d);
ExprPtr expand(const ExprPtr& e);  // products of sums multiplied out (used by the prover)
}  // namespace detail

}  // namespace kiln::sym
