// The smart constructors: canonical sums and products, and the floordiv / mod / min / max rules.
//
// Every rule is exact under Python semantics (floor division, the remainder takes the divisor's
// sign) for every value of the symbols in their ranges, negative operands included. A rule may
// assume that a divisor is not 0: a division by zero has no value to preserve.
#include <kiln/error.h>

#include <algorithm>
#include <numeric>

#include "sym/expr.h"

namespace kiln::sym {
namespace {

using detail::make_term;
using detail::split_term;
using detail::sum_parts;
using detail::Term;

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  KILN_CHECK(!__builtin_add_overflow(a, b, &r), "symbolic size arithmetic overflows int64: ", a, " + ", b);
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  KILN_CHECK(!__builtin_mul_overflow(a, b, &r), "symbolic size arithmetic overflows int64: ", a, " * ", b);
  return r;
}

uint64_t magnitude(int64_t v) { return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v); }
int64_t gcd_of(int64_t a, int64_t b) {  // >= 0; 1 where the gcd would not fit (|INT64_MIN|)
  const uint64_t g = std::gcd(magnitude(a), magnitude(b));
  return g > uint64_t(INT64_MAX) ? 1 : int64_t(g);
}

bool is(const ExprPtr& e, int64_t v) { return e->kind == Kind::Const && e->value == v; }

// A node whose bound is one value is that value (s0 % 1, min(s0, 1) where s0 >= 2, ...).
// (A bound saturated at INT64_MIN / INT64_MAX is not a value.)
ExprPtr node(Kind k, std::vector<ExprPtr> args) {
  const Range r = detail::range_of(k, args);
  if (r.lo == r.hi && r.lo != INT64_MIN && r.lo != INT64_MAX) return constant(r.lo);
  return detail::make(k, std::move(args), r);
}

// ---- sums ----

// `terms` sorted by base, bases distinct, coefficients not 0.
ExprPtr build_sum(int64_t c, const std::vector<Term>& terms) {
  if (terms.empty()) return constant(c);
  if (terms.size() == 1 && c == 0) return make_term(terms[0].coeff, terms[0].base);
  std::vector<ExprPtr> args;
  args.reserve(terms.size() + 1);
  if (c != 0) args.push_back(constant(c));
  for (const Term& t : terms) args.push_back(make_term(t.coeff, t.base));
  return node(Kind::Add, std::move(args));
}

// Merges two sorted term lists, combining like terms.
std::vector<Term> merge_terms(const std::vector<Term>& x, const std::vector<Term>& y) {
  std::vector<Term> out;
  out.reserve(x.size() + y.size());
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    const int c = i == x.size() ? 1 : j == y.size() ? -1 : compare(x[i].base, y[j].base);
    if (c < 0) {
      out.push_back(x[i++]);
    } else if (c > 0) {
      out.push_back(y[j++]);
    } else {
      const int64_t k = checked_add(x[i].coeff, y[j].coeff);
      if (k != 0) out.push_back({k, x[i].base});
      ++i, ++j;
    }
  }
  return out;
}

// k*(x // m)*m + k*(x % m) -> k*x: how a flat index comes back from its decomposition.
ExprPtr recombine_div_mod(int64_t c, std::vector<Term>& terms) {
  for (size_t i = 0; i < terms.size(); ++i) {
    const ExprPtr& r = terms[i].base;
    if (r->kind != Kind::Mod) continue;
    const ExprPtr &x = r->args[0], &m = r->args[1];
    const ExprPtr q = mul(constant(terms[i].coeff), mul(floordiv(x, m), m));
    if (q->kind == Kind::Add || q->kind == Kind::Const) continue;
    const Term want = split_term(q);
    for (size_t j = 0; j < terms.size(); ++j) {
      if (j == i || terms[j].base != want.base || terms[j].coeff != want.coeff) continue;
      const int64_t k = terms[i].coeff;
      std::vector<Term> rest;
      for (size_t n = 0; n < terms.size(); ++n)
        if (n != i && n != j) rest.push_back(terms[n]);
      return add(build_sum(c, rest), mul(constant(k), x));
    }
  }
  return nullptr;
}

ExprPtr scale_sum(const ExprPtr& s, int64_t k) {
  int64_t c;
  std::vector<Term> terms;
  sum_parts(s, &c, &terms);
  for (Term& t : terms) t.coeff = checked_mul(t.coeff, k);
  return build_sum(checked_mul(c, k), terms);  // the bases keep their order
}

// A sum as g * P with P primitive: the gcd of its coefficients 1 and its first term positive.
std::pair<int64_t, ExprPtr> primitive(const ExprPtr& s) {
  int64_t c;
  std::vector<Term> terms;
  sum_parts(s, &c, &terms);
  int64_t g = c;
  for (const Term& t : terms) g = gcd_of(g, t.coeff);
  if (g == 0) g = 1;
  if (terms[0].coeff < 0) g = -g;
  if (g == 1) return {1, s};
  for (Term& t : terms) t.coeff /= g;
  return {g, build_sum(c / g, terms)};
}

// ---- products ----

// e as coefficient * factors (sorted); a sum is its content times its primitive part.
struct Monomial {
  int64_t coeff;
  std::vector<ExprPtr> factors;
};
Monomial monomial(const ExprPtr& e) {
  switch (e->kind) {
    case Kind::Const: return {e->value, {}};
    case Kind::Mul: {
      const Term t = split_term(e);
      if (t.base->kind == Kind::Mul) return {t.coeff, t.base->args};
      return {t.coeff, {t.base}};
    }
    case Kind::Add: {
      auto [g, p] = primitive(e);
      return {g, {p}};
    }
    default: return {1, {e}};
  }
}

ExprPtr product(int64_t coeff, const std::vector<ExprPtr>& factors) {
  ExprPtr p = constant(coeff);
  for (const ExprPtr& f : factors) p = mul(p, f);
  return p;
}

// Removes `sub` from `set` (both sorted multisets); false if sub is not contained.
bool remove_factors(std::vector<ExprPtr>& set, const std::vector<ExprPtr>& sub) {
  for (const ExprPtr& f : sub) {
    auto it = std::find(set.begin(), set.end(), f);
    if (it == set.end()) return false;
    set.erase(it);
  }
  return true;
}

std::vector<ExprPtr> common_factors(std::vector<ExprPtr> a, const std::vector<ExprPtr>& b) {
  std::vector<ExprPtr> out;
  for (const ExprPtr& f : b) {
    auto it = std::find(a.begin(), a.end(), f);
    if (it == a.end()) continue;
    out.push_back(f);
    a.erase(it);
  }
  return out;
}

// The largest monomial dividing every term of e: gcd of the coefficients (>= 0) and the factors
// all terms share.
Monomial content(const ExprPtr& e) {
  if (e->kind != Kind::Add) {
    Monomial m = monomial(e);
    m.coeff = gcd_of(m.coeff, 0);
    return m;
  }
  int64_t c;
  std::vector<Term> terms;
  sum_parts(e, &c, &terms);
  Monomial m{gcd_of(c, 0), {}};
  for (size_t i = 0; i < terms.size(); ++i) {
    const Monomial t = monomial(make_term(terms[i].coeff, terms[i].base));
    m.coeff = gcd_of(m.coeff, t.coeff);
    m.factors = i == 0 ? t.factors : common_factors(m.factors, t.factors);
  }
  if (c != 0) m.factors.clear();
  return m;
}

// The common content of a and b as an expression; null if it is 1.
ExprPtr common_content(const ExprPtr& a, const ExprPtr& b) {
  const Monomial ca = content(a), cb = content(b);
  const int64_t g = gcd_of(ca.coeff, cb.coeff);
  std::vector<ExprPtr> f = common_factors(ca.factors, cb.factors);
  if (g <= 1 && f.empty()) return nullptr;
  return product(std::max<int64_t>(g, 1), f);
}

// A divisor that is >= 0 is > 0 wherever the division has a value.
bool positive_divisor(const ExprPtr& b) { return bound(b).lo >= 0; }

// ---- floordiv rules: a // b ----
using Rule = ExprPtr (*)(const ExprPtr& a, const ExprPtr& b);

ExprPtr fold_floordiv(const ExprPtr& a, const ExprPtr& b) {
  int64_t x, y;
  if (is_const(a, &x) && is_const(b, &y)) return constant(detail::floordiv_int(x, y));
  return nullptr;
}

ExprPtr floordiv_by_unit(const ExprPtr& a, const ExprPtr& b) {
  if (is(b, 1) || is(a, 0)) return a;
  if (is(b, -1)) return mul(constant(-1), a);
  return nullptr;
}

// a == q*b by the form (the whole of a, not term by term): (2 + 2*s0) // (1 + s0) -> 2.
ExprPtr floordiv_exact(const ExprPtr& a, const ExprPtr& b) { return detail::divide_exact(a, b); }

// Splits a into the terms b divides and the rest r: (q*b + r) // b -> q + r // b (exact: q is an
// integer). With a constant b, the sum's constant c splits as (c // b)*b + c % b.
ExprPtr floordiv_split_multiples(const ExprPtr& a, const ExprPtr& b) {
  int64_t c, bc;
  std::vector<Term> terms, rest;
  sum_parts(a, &c, &terms);
  ExprPtr q = constant(0);
  bool split = false;
  if (is_const(b, &bc) && bc != 0 && detail::floordiv_int(c, bc) != 0) {
    q = constant(detail::floordiv_int(c, bc));
    c = detail::mod_int(c, bc);
    split = true;
  }
  for (const Term& t : terms) {
    if (ExprPtr d = detail::divide_exact(make_term(t.coeff, t.base), b)) {
      q = add(q, d);
      split = true;
    } else {
      rest.push_back(t);
    }
  }
  if (!split) return nullptr;
  return add(q, floordiv(build_sum(c, rest), b));
}

// (g*x) // (g*y) -> x // y: the quotient is the same rational number (g != 0 since b != 0).
ExprPtr floordiv_cancel_common(const ExprPtr& a, const ExprPtr& b) {
  ExprPtr g = common_content(a, b);
  if (!g) return nullptr;
  return floordiv(detail::divide_exact(a, g), detail::divide_exact(b, g));
}

// (x // c1) // c2 -> x // (c1*c2) for c2 > 0 (any c1): floor(floor(q) / c2) = floor(q / c2) for
// every rational q = x / c1 and positive integer c2.
ExprPtr floordiv_nested(const ExprPtr& a, const ExprPtr& b) {
  if (a->kind != Kind::FloorDiv || !positive_divisor(b)) return nullptr;
  int64_t x, y, p;
  if (is_const(a->args[1], &x) && is_const(b, &y) && __builtin_mul_overflow(x, y, &p)) return nullptr;
  return floordiv(a->args[0], mul(a->args[1], b));
}

// 0 <= a < b -> 0 (by ranges, and by index variables' extents: i1 // s1 where i1 < s1).
ExprPtr floordiv_below_divisor(const ExprPtr& a, const ExprPtr& b) {
  if (statically_known_nonneg(a) && statically_known_lt(a, b)) return constant(0);
  return nullptr;
}

constexpr Rule kFloorDivRules[] = {fold_floordiv,          floordiv_by_unit, floordiv_exact,        floordiv_split_multiples,
                                   floordiv_cancel_common, floordiv_nested,  floordiv_below_divisor};

// ---- mod rules: a % b ----

ExprPtr fold_mod(const ExprPtr& a, const ExprPtr& b) {
  int64_t x, y;
  if (is_const(a, &x) && is_const(b, &y)) return constant(detail::mod_int(x, y));
  return nullptr;
}

ExprPtr mod_by_unit(const ExprPtr& a, const ExprPtr& b) {
  if (is(b, 1) || is(b, -1) || is(a, 0)) return constant(0);
  return nullptr;
}

ExprPtr mod_of_multiple(const ExprPtr& a, const ExprPtr& b) {
  return detail::divide_exact(a, b) ? constant(0) : nullptr;
}

// (q*b + r) % b -> r % b: drops the terms b divides; with a constant b, every coefficient and
// the constant are reduced mod b.
ExprPtr mod_drop_multiples(const ExprPtr& a, const ExprPtr& b) {
  int64_t c, bc;
  std::vector<Term> terms, rest;
  sum_parts(a, &c, &terms);
  const bool by_const = is_const(b, &bc) && bc != 0;
  bool changed = false;
  if (by_const && detail::mod_int(c, bc) != c) c = detail::mod_int(c, bc), changed = true;
  for (const Term& t : terms) {
    if (by_const) {
      const int64_t k = detail::mod_int(t.coeff, bc);
      changed |= k != t.coeff;
      if (k != 0) rest.push_back({k, t.base});
    } else if (detail::divide_exact(make_term(t.coeff, t.base), b)) {
      changed = true;
    } else {
      rest.push_back(t);
    }
  }
  if (!changed) return nullptr;
  return mod(build_sum(c, rest), b);
}

// (g*x) % (g*y) -> g*(x % y): g*x - g*y*floor(x/y), for any g != 0.
ExprPtr mod_pull_common(const ExprPtr& a, const ExprPtr& b) {
  ExprPtr g = common_content(a, b);
  if (!g) return nullptr;
  return mul(g, mod(detail::divide_exact(a, g), detail::divide_exact(b, g)));
}

// (x % m) % b -> x % b where b divides m: x % m differs from x by a multiple of m.
ExprPtr mod_nested(const ExprPtr& a, const ExprPtr& b) {
  if (a->kind != Kind::Mod || !detail::divide_exact(a->args[1], b)) return nullptr;
  return mod(a->args[0], b);
}

// 0 <= a < b -> a.
ExprPtr mod_below_divisor(const ExprPtr& a, const ExprPtr& b) {
  if (statically_known_nonneg(a) && statically_known_lt(a, b)) return a;
  return nullptr;
}

constexpr Rule kModRules[] = {fold_mod,        mod_by_unit, mod_of_multiple,  mod_drop_multiples,
                              mod_pull_common, mod_nested,  mod_below_divisor};

template <size_t N>
ExprPtr apply(const Rule (&rules)[N], Kind k, ExprPtr a, ExprPtr b) {
  for (Rule r : rules)
    if (ExprPtr e = r(a, b)) return e;
  return node(k, {std::move(a), std::move(b)});
}

// ---- min / max ----
// Operands of nested mins (maxes) are gathered; one provably no smaller (no larger) than another
// is dropped; the rest are sorted and chained left to right: min(min(a, b), c).
ExprPtr min_max(Kind k, const ExprPtr& a, const ExprPtr& b) {
  int64_t x, y;
  if (is_const(a, &x) && is_const(b, &y)) return constant(k == Kind::Min ? std::min(x, y) : std::max(x, y));
  std::vector<ExprPtr> ops;
  auto gather = [&](auto& self, const ExprPtr& e) -> void {
    if (e->kind == k) {
      for (const ExprPtr& o : e->args) self(self, o);
    } else if (std::find(ops.begin(), ops.end(), e) == ops.end()) {
      ops.push_back(e);
    }
  };
  gather(gather, a);
  gather(gather, b);
  for (size_t i = 0; i < ops.size() && ops.size() > 1;) {
    bool dominated = false;
    for (size_t j = 0; j < ops.size() && !dominated; ++j)
      dominated = j != i && (k == Kind::Min ? statically_known_leq(ops[j], ops[i]) : statically_known_leq(ops[i], ops[j]));
    if (dominated)
      ops.erase(ops.begin() + long(i));
    else
      ++i;
  }
  std::sort(ops.begin(), ops.end(), [](const ExprPtr& p, const ExprPtr& q) { return compare(p, q) < 0; });
  ExprPtr r = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) r = node(k, {r, ops[i]});
  return r;
}

}  // namespace

namespace {
// a + sign*b, merging the terms of both (no node for -b).
ExprPtr add_scaled(const ExprPtr& a, const ExprPtr& b, int64_t sign) {
  int64_t ca, cb;
  std::vector<Term> ta, tb;
  sum_parts(a, &ca, &ta);
  sum_parts(b, &cb, &tb);
  for (Term& t : tb) t.coeff = checked_mul(t.coeff, sign);
  const int64_t c = checked_add(ca, checked_mul(cb, sign));
  std::vector<Term> terms = merge_terms(ta, tb);
  if (ExprPtr r = recombine_div_mod(c, terms)) return r;
  return build_sum(c, terms);
}
}  // namespace

ExprPtr add(ExprPtr a, ExprPtr b) { return add_scaled(a, b, 1); }
ExprPtr sub(ExprPtr a, ExprPtr b) { return add_scaled(a, b, -1); }

ExprPtr mul(ExprPtr a, ExprPtr b) {
  int64_t k = 1;
  std::vector<ExprPtr> factors;
  for (const ExprPtr& x : {a, b}) {
    if (x->kind == Kind::Const) {
      k = checked_mul(k, x->value);
    } else if (x->kind == Kind::Mul) {
      const Term t = split_term(x);
      k = checked_mul(k, t.coeff);
      if (t.base->kind == Kind::Mul)
        factors.insert(factors.end(), t.base->args.begin(), t.base->args.end());
      else
        factors.push_back(t.base);
    } else {
      factors.push_back(x);
    }
  }
  if (k == 0) return constant(0);
  if (factors.empty()) return constant(k);
  // A constant times a sum distributes; a sum in a longer product gives its content away.
  if (factors.size() == 1 && factors[0]->kind == Kind::Add) return k == 1 ? factors[0] : scale_sum(factors[0], k);
  if (factors.size() == 1 && k == 1) return factors[0];
  for (ExprPtr& f : factors) {
    if (f->kind != Kind::Add) continue;
    auto [g, p] = primitive(f);
    k = checked_mul(k, g);
    f = p;
  }
  std::sort(factors.begin(), factors.end(), [](const ExprPtr& p, const ExprPtr& q) { return compare(p, q) < 0; });
  if (k != 1) factors.insert(factors.begin(), constant(k));
  return node(Kind::Mul, std::move(factors));
}

ExprPtr floordiv(ExprPtr a, ExprPtr b) { return apply(kFloorDivRules, Kind::FloorDiv, std::move(a), std::move(b)); }
ExprPtr mod(ExprPtr a, ExprPtr b) { return apply(kModRules, Kind::Mod, std::move(a), std::move(b)); }
ExprPtr min(ExprPtr a, ExprPtr b) { return min_max(Kind::Min, a, b); }
ExprPtr max(ExprPtr a, ExprPtr b) { return min_max(Kind::Max, a, b); }

namespace detail {

ExprPtr divide_exact(const ExprPtr& e, const ExprPtr& d) {
  if (e == d) return constant(1);
  if (is(e, 0)) return e;
  int64_t dv;
  if (is_const(d, &dv)) {
    if (dv == 0) return nullptr;
    int64_t c;
    std::vector<Term> terms;
    sum_parts(e, &c, &terms);
    auto divides = [&](int64_t v) { return v % dv == 0 && !(v == INT64_MIN && dv == -1); };
    if (!divides(c)) return nullptr;
    for (Term& t : terms) {
      if (!divides(t.coeff)) return nullptr;
      t.coeff /= dv;
    }
    return build_sum(c / dv, terms);
  }
  const Monomial md = monomial(d);
  Monomial me = monomial(e);
  if (md.coeff != 0 && me.coeff % md.coeff == 0 && !(me.coeff == INT64_MIN && md.coeff == -1) &&
      remove_factors(me.factors, md.factors))
    return product(me.coeff / md.coeff, me.factors);
  if (e->kind != Kind::Add) return nullptr;
  int64_t c;
  std::vector<Term> terms;
  sum_parts(e, &c, &terms);
  if (c != 0) return nullptr;  // a non-constant d does not divide a constant
  ExprPtr q = constant(0);
  for (const Term& t : terms) {
    ExprPtr p = divide_exact(make_term(t.coeff, t.base), d);
    if (!p) return nullptr;
    q = add(q, p);
  }
  return q;
}

}  // namespace detail

}  // namespace kiln::sym
