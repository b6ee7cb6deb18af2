// Value ranges and the questions answered from them without guarding (statically_known_*).
//
// Two levels. Every node caches an interval (range_of, computed once when it is interned, in
// saturating arithmetic). Where intervals lose a relation between expressions (an index variable
// i1 < s1, a remainder x % s1 < s1: `relational` nodes), the prover also bounds e by expressions:
// sides(e) = {lo, hi} with lo <= e <= hi, where each index variable is replaced by its extremes
// (0 and extent - 1) following the monotonicity of its context; lo, multiplied out, then often
// cancels to a constant: s1 - i1 - 1 >= s1 - (s1 - 1) - 1 = 0.
#include <kiln/error.h>

#include <algorithm>

#include "sym/expr.h"

namespace kiln::sym {
namespace {

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (a < 0 ? INT64_MIN : INT64_MAX) : r;
}
int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}
int64_t sat_neg(int64_t a) { return a == INT64_MIN ? INT64_MAX : -a; }

Range mul_range(Range a, Range b) {
  const int64_t c[] = {sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo), sat_mul(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// a // b. For b > 0 the quotient grows with a, and for a fixed a moves toward 0 (a >= 0) or
// toward -1 (a < 0) as b grows; b < 0 is (-a) // (-b); a b that may be either sign gives |q| <= |a|.
// (A divisor is never 0 where the quotient has a value: [0, n] divides as [1, n].)
Range nonzero(Range b) {
  if (b.lo == 0 && b.hi > 0) b.lo = 1;
  if (b.hi == 0 && b.lo < 0) b.hi = -1;
  return b;
}

Range floordiv_range(Range a, Range b) {
  b = nonzero(b);
  if (b.lo > 0) {
    using detail::floordiv_int;
    return {a.lo >= 0 ? floordiv_int(a.lo, b.hi) : floordiv_int(a.lo, b.lo),
            a.hi >= 0 ? floordiv_int(a.hi, b.lo) : floordiv_int(a.hi, b.hi)};
  }
  if (b.hi < 0) return floordiv_range({sat_neg(a.hi), sat_neg(a.lo)}, {sat_neg(b.hi), sat_neg(b.lo)});
  const int64_t m = std::max(sat_neg(a.lo), a.hi);
  return {std::min<int64_t>(sat_neg(m), 0), std::max<int64_t>(m, 0)};
}

// a % b has the sign of b and |a % b| < |b|; it is a itself when a already lies in [0, b) (or
// in (b, 0] for a negative b).
Range mod_range(Range a, Range b) {
  b = nonzero(b);
  if (b.lo > 0) {
    if (a.lo >= 0 && a.hi < b.lo) return a;
    return {0, a.lo >= 0 ? std::min(a.hi, b.hi - 1) : b.hi - 1};
  }
  if (b.hi < 0) {
    if (a.hi <= 0 && a.lo > b.hi) return a;
    return {a.hi <= 0 ? std::max(a.lo, b.lo + 1) : b.lo + 1, 0};
  }
  return {std::min<int64_t>(0, sat_add(b.lo, 1)), std::max<int64_t>(0, sat_add(b.hi, -1))};
}

// ---- the prover ----
struct Sides {
  ExprPtr lo, hi;
};

Sides sides(const ExprPtr& e);

Sides scaled(int64_t k, const Sides& s) {
  const ExprPtr c = constant(k);
  return k > 0 ? Sides{mul(c, s.lo), mul(c, s.hi)} : Sides{mul(c, s.hi), mul(c, s.lo)};
}

Sides sides(const ExprPtr& e) {
  if (!e->relational) return {e, e};
  switch (e->kind) {
    case Kind::Symbol:  // an index variable
      return {constant(e->range.lo), sub(e->extent, constant(1))};
    case Kind::Add: {
      Sides r{constant(0), constant(0)};
      for (const ExprPtr& a : e->args) {
        const detail::Term t = a->kind == Kind::Const ? detail::Term{a->value, constant(1)} : detail::split_term(a);
        const Sides s = scaled(t.coeff, sides(t.base));
        r = {add(r.lo, s.lo), add(r.hi, s.hi)};
      }
      return r;
    }
    case Kind::Mul: {
      // Monotone in each factor where all factors are >= 0; below by 0 if a factor's lower
      // side is not itself provably >= 0.
      const detail::Term t = detail::split_term(e);
      const std::vector<ExprPtr> factors = t.base->kind == Kind::Mul ? t.base->args : std::vector<ExprPtr>{t.base};
      Sides p{constant(1), constant(1)};
      bool lo_ok = true;
      for (const ExprPtr& f : factors) {
        if (f->range.lo < 0) return {e, e};
        const Sides s = sides(f);
        lo_ok &= s.lo->range.lo >= 0;
        p = {mul(p.lo, s.lo), mul(p.hi, s.hi)};
      }
      if (!lo_ok) p.lo = constant(0);
      return scaled(t.coeff, p);
    }
    case Kind::FloorDiv: {
      const ExprPtr& b = e->args[1];
      if (b->range.lo < 0 || b->relational) return {e, e};  // (b >= 0: b > 0, as a divisor)
      const Sides s = sides(e->args[0]);
      return {floordiv(s.lo, b), floordiv(s.hi, b)};
    }
    case Kind::Mod:
      if (e->args[1]->range.lo < 0) return {e, e};
      return {constant(0), sub(e->args[1], constant(1))};
    case Kind::Min:
    case Kind::Max: {
      const Sides a = sides(e->args[0]), b = sides(e->args[1]);
      if (e->kind == Kind::Min) return {min(a.lo, b.lo), min(a.hi, b.hi)};
      return {max(a.lo, b.lo), max(a.hi, b.hi)};
    }
    case Kind::Const: break;
  }
  return {e, e};
}

// The prover builds expressions, whose rules ask the prover again; the depth is bounded (each
// level replaces index variables by their extents, so two levels cover extents of extents).
thread_local int g_depth = 0;
constexpr int kMaxDepth = 3;

}  // namespace

namespace detail {

Range range_of(Kind k, const std::vector<ExprPtr>& args) {
  switch (k) {
    case Kind::Add: {
      Range r{0, 0};
      for (const ExprPtr& a : args) r = {sat_add(r.lo, a->range.lo), sat_add(r.hi, a->range.hi)};
      return r;
    }
    case Kind::Mul: {
      Range r{1, 1};
      for (const ExprPtr& a : args) r = mul_range(r, a->range);
      return r;
    }
    case Kind::FloorDiv: return floordiv_range(args[0]->range, args[1]->range);
    case Kind::Mod: return mod_range(args[0]->range, args[1]->range);
    case Kind::Min: return {std::min(args[0]->range.lo, args[1]->range.lo), std::min(args[0]->range.hi, args[1]->range.hi)};
    case Kind::Max: return {std::max(args[0]->range.lo, args[1]->range.lo), std::max(args[0]->range.hi, args[1]->range.hi)};
    case Kind::Const:
    case Kind::Symbol: break;
  }
  return {};
}

ExprPtr expand(const ExprPtr& e) {
  auto has_sum_factor = [](const ExprPtr& x) {
    return x->kind == Kind::Mul && std::any_of(x->args.begin(), x->args.end(), [](const ExprPtr& f) { return f->kind == Kind::Add; });
  };
  if (e->kind == Kind::Add && std::none_of(e->args.begin(), e->args.end(), has_sum_factor)) return e;  // nothing to do
  if (e->kind == Kind::Add) {
    ExprPtr s = constant(0);
    for (const ExprPtr& a : e->args) s = add(s, expand(a));
    return s;
  }
  if (!has_sum_factor(e)) return e;
  constexpr size_t kMaxTerms = 64;  // beyond that, multiplying out costs more than it tells
  std::vector<ExprPtr> acc{constant(1)};
  for (const ExprPtr& f : e->args) {
    const ExprPtr x = expand(f);
    const std::vector<ExprPtr> parts = x->kind == Kind::Add ? x->args : std::vector<ExprPtr>{x};
    if (acc.size() * parts.size() > kMaxTerms) return e;
    std::vector<ExprPtr> next;
    for (const ExprPtr& p : acc)
      for (const ExprPtr& q : parts) next.push_back(mul(p, q));
    acc = std::move(next);
  }
  ExprPtr s = constant(0);
  for (const ExprPtr& t : acc) s = add(s, t);
  return s;
}

}  // namespace detail

// A proof that would need a coefficient beyond int64 is not made (false), never an error.
template <class F>
bool attempt(F f) {
  try {
    return f();
  } catch (const Error&) {
    return false;
  }
}

bool statically_known_nonneg(const ExprPtr& e) {
  if (e->range.lo >= 0) return true;
  if (g_depth >= kMaxDepth) return false;
  ++g_depth;
  struct Leave {
    ~Leave() { --g_depth; }
  } leave;
  return attempt([&] {
    const ExprPtr lo = detail::expand(e->relational ? sides(e).lo : e);
    return lo != e && lo->range.lo >= 0;
  });
}

bool statically_known_leq(const ExprPtr& a, const ExprPtr& b) {
  return a == b || a->range.hi <= b->range.lo || attempt([&] { return statically_known_nonneg(sub(b, a)); });
}

bool statically_known_lt(const ExprPtr& a, const ExprPtr& b) {
  return a->range.hi < b->range.lo ||
         (a != b && attempt([&] { return statically_known_nonneg(sub(sub(b, a), constant(1))); }));
}

bool statically_known_equal(const ExprPtr& a, const ExprPtr& b) {
  return a == b || (statically_known_leq(a, b) && statically_known_leq(b, a));
}

bool statically_known_multiple_of(const ExprPtr& a, const ExprPtr& b) {
  if (is_const(b) && b->value == 0) return is_const(a) && a->value == 0;
  return attempt([&] {
    // a == q*b by the form holds for b == 0 too; a % b == 0 (whose rules assume b != 0) only
    // answers for a b that cannot be 0.
    int64_t r;
    return detail::divide_exact(a, b) || (!b->range.contains(0) && is_const(mod(a, b), &r) && r == 0);
  });
}

}  // namespace kiln::sym
