// Interning, the total order, evaluation and printing of sym::Expr nodes.
#include "sym/expr.h"

#include <kiln/error.h>

#include <mutex>
#include <unordered_map>

namespace kiln::sym {
namespace {

// ---- interning: one live node per distinct expression ----
// The table holds weak references: a node is freed when the last ExprPtr to it goes, and its
// destructor removes it from the table. A lookup that finds a node whose last reference is going
// (its destructor waits for the lock) makes a fresh node; the dying one later removes only itself.
struct Entry {
  const Expr* raw;
  std::weak_ptr<const Expr> weak;
};
struct Table {
  std::mutex mu;
  std::unordered_multimap<uint64_t, Entry> map;
};
Table& table() {
  static Table* t = new Table;  // never destroyed: nodes held by static objects outlive main
  return *t;
}

// A node as the table holds it (one allocation with its control block, by make_shared).
struct Node : Expr {
  explicit Node(Expr&& e) : Expr(std::move(e)) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  ~Node() {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    auto [it, end] = t.map.equal_range(hash);
    for (; it != end; ++it)
      if (it->second.raw == this) {
        t.map.erase(it);
        break;
      }
  }  // the operands are released after the lock
};

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull + (h << 6) + (h >> 2); }

uint64_t hash_of(const Expr& e) {
  uint64_t h = mix(0xcbf29ce484222325ull, uint64_t(e.kind));
  h = mix(h, uint64_t(e.value));
  if (e.kind == Kind::Symbol) {
    h = mix(h, std::hash<std::string>()(e.name));
    h = mix(mix(h, uint64_t(e.range.lo)), uint64_t(e.range.hi));
    if (e.extent) h = mix(h, e.extent->hash);
  }
  for (const ExprPtr& a : e.args) h = mix(h, a->hash);
  return h;
}

bool same_node(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.value != b.value || a.args != b.args) return false;  // operands by address
  return a.kind != Kind::Symbol || (a.name == b.name && a.range == b.range && a.extent == b.extent);
}

ExprPtr intern(Expr proto) {
  proto.hash = hash_of(proto);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto [it, end] = t.map.equal_range(proto.hash);
  for (; it != end; ++it)
    if (same_node(*it->second.raw, proto))
      if (ExprPtr live = it->second.weak.lock()) return live;
  ExprPtr e = std::make_shared<const Node>(std::move(proto));
  t.map.emplace(e->hash, Entry{e.get(), e});
  return e;
}

// ---- order ----
int rank(Kind k) {
  // Products before symbols, so a sum reads `i0*s1 + i1`; constants first (coefficients, and
  // the constant of a sum).
  switch (k) {
    case Kind::Const: return 0;
    case Kind::Mul: return 1;
    case Kind::Symbol: return 2;
    case Kind::Add: return 3;
    case Kind::FloorDiv: return 4;
    case Kind::Mod: return 5;
    case Kind::Min: return 6;
    case Kind::Max: return 7;
  }
  return 8;
}

template <class T>
int cmp3(const T& a, const T& b) {
  return a < b ? -1 : (b < a ? 1 : 0);
}

// Names by their letters, then their number (s2 before s10), then as text.
int compare_names(const std::string& a, const std::string& b) {
  auto digits_at = [](const std::string& s) {
    size_t i = s.size();
    while (i > 0 && std::isdigit(static_cast<unsigned char>(s[i - 1]))) --i;
    return i;
  };
  const size_t da = digits_at(a), db = digits_at(b);
  if (int c = a.compare(0, da, b, 0, db)) return c < 0 ? -1 : 1;
  const std::string na = a.substr(da), nb = b.substr(db);
  if (int c = cmp3(na.size(), nb.size())) return c;  // shorter number is smaller (no leading zeros)
  return cmp3(a, b);
}

// ---- printing ----
// Contexts: an operand of min/max or the inside of parentheses; a term of a sum; a factor of a
// product or an operand of // and %.
enum Ctx { kFree, kTerm, kFactor };

std::string print(const ExprPtr& e, Ctx ctx);

std::string print_base(const ExprPtr& base) {  // a term's base: a product without coefficient, or a factor
  if (base->kind != Kind::Mul) return print(base, kFactor);
  std::string s;
  for (size_t i = 0; i < base->args.size(); ++i) s += (i ? "*" : "") + print(base->args[i], kFactor);
  return s;
}

std::string magnitude(int64_t k) {  // |k| without overflow
  return k < 0 ? std::to_string(uint64_t(0) - uint64_t(k)) : std::to_string(k);
}

std::string print_sum(const ExprPtr& e) {
  std::string s;
  for (const ExprPtr& a : e->args) {
    if (a->kind == Kind::Const) {
      s += std::to_string(a->value);
      continue;
    }
    const detail::Term t = detail::split_term(a);
    const std::string base = print_base(t.base);
    if (s.empty())
      s = t.coeff == 1 ? base : t.coeff == -1 ? "-" + base : std::to_string(t.coeff) + "*" + base;
    else
      s += (t.coeff < 0 ? " - " : " + ") + (t.coeff == 1 || t.coeff == -1 ? base : magnitude(t.coeff) + "*" + base);
  }
  return s;
}

std::string print_product(const ExprPtr& e) {
  const detail::Term t = detail::split_term(e);
  const std::string base = print_base(t.base);
  return t.coeff == 1 ? base : t.coeff == -1 ? "-" + base : std::to_string(t.coeff) + "*" + base;
}

std::string print(const ExprPtr& e, Ctx ctx) {
  auto paren = [](const std::string& s) { return "(" + s + ")"; };
  switch (e->kind) {
    case Kind::Const: return std::to_string(e->value);
    case Kind::Symbol: return e->name;
    case Kind::Add: return ctx == kFactor ? paren(print_sum(e)) : print_sum(e);
    case Kind::Mul: return ctx == kFactor ? paren(print_product(e)) : print_product(e);
    case Kind::FloorDiv:
    case Kind::Mod: {
      auto side = [&](const ExprPtr& x) {
        const bool atom = x->kind == Kind::Const || x->kind == Kind::Symbol || x->kind == Kind::Min || x->kind == Kind::Max;
        return atom ? print(x, kFree) : paren(print(x, kFree));
      };
      const std::string s = side(e->args[0]) + (e->kind == Kind::FloorDiv ? " // " : " % ") + side(e->args[1]);
      return ctx == kFree ? s : paren(s);
    }
    case Kind::Min:
    case Kind::Max:
      return std::string(e->kind == Kind::Min ? "min(" : "max(") + print(e->args[0], kFree) + ", " +
             print(e->args[1], kFree) + ")";
  }
  return "?";
}

}  // namespace

namespace detail {

int64_t floordiv_int(int64_t a, int64_t b) {
  KILN_CHECK(b != 0, "integer division by zero in a size computation");
  if (b == -1) return int64_t(uint64_t(0) - uint64_t(a));  // INT64_MIN // -1 wraps, as int64 does
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t mod_int(int64_t a, int64_t b) { return b == -1 ? 0 : a - floordiv_int(a, b) * b; }

ExprPtr make(Kind k, std::vector<ExprPtr> args) {
  const Range r = range_of(k, args);
  return make(k, std::move(args), r);
}

ExprPtr make(Kind k, std::vector<ExprPtr> args, Range bound) {
  Expr e;
  e.kind = k;
  e.range = bound;
  e.relational = k == Kind::Mod && args[1]->kind != Kind::Const;
  for (const ExprPtr& a : args) e.relational |= a->relational;
  e.args = std::move(args);
  return intern(std::move(e));
}

Term split_term(const ExprPtr& t) {
  if (t->kind != Kind::Mul || t->args[0]->kind != Kind::Const) return {1, t};
  if (t->args.size() == 2) return {t->args[0]->value, t->args[1]};
  return {t->args[0]->value, make(Kind::Mul, std::vector<ExprPtr>(t->args.begin() + 1, t->args.end()))};
}

ExprPtr make_term(int64_t coeff, const ExprPtr& base) {
  if (coeff == 0) return constant(0);
  if (coeff == 1) return base;
  std::vector<ExprPtr> args{constant(coeff)};
  if (base->kind == Kind::Mul)
    args.insert(args.end(), base->args.begin(), base->args.end());
  else
    args.push_back(base);
  return make(Kind::Mul, std::move(args));
}

void sum_parts(const ExprPtr& e, int64_t* c, std::vector<Term>* terms) {
  *c = 0;
  terms->clear();
  if (e->kind == Kind::Const) {
    *c = e->value;
    return;
  }
  if (e->kind != Kind::Add) {
    terms->push_back(split_term(e));
    return;
  }
  for (const ExprPtr& a : e->args) {
    if (a->kind == Kind::Const)
      *c = a->value;
    else
      terms->push_back(split_term(a));
  }
}

}  // namespace detail

ExprPtr constant(int64_t v) {
  auto make = [](int64_t c) {
    Expr e;
    e.kind = Kind::Const;
    e.value = c;
    e.range = {c, c};
    return intern(std::move(e));
  };
  // The small constants (coefficients, offsets, units) are made once and kept.
  constexpr int64_t kLo = -16, kHi = 64;
  static const std::vector<ExprPtr>* small = [&] {
    auto* c = new std::vector<ExprPtr>;
    for (int64_t i = kLo; i <= kHi; ++i) c->push_back(make(i));
    return c;
  }();
  if (v >= kLo && v <= kHi) return (*small)[size_t(v - kLo)];
  return make(v);
}

ExprPtr symbol(const std::string& name, Range range) {
  KILN_CHECK(range.lo <= range.hi, "symbol ", name, ": empty range [", range.lo, ", ", range.hi, "]");
  Expr e;
  e.kind = Kind::Symbol;
  e.name = name;
  e.range = range;
  return intern(std::move(e));
}

ExprPtr index(const std::string& name, ExprPtr extent) {
  KILN_CHECK(extent, "index variable ", name, ": no extent");
  Expr e;
  e.kind = Kind::Symbol;
  e.name = name;
  e.range = {0, std::max<int64_t>(0, extent->range.hi == INT64_MAX ? INT64_MAX : extent->range.hi - 1)};
  e.relational = true;
  e.extent = std::move(extent);
  return intern(std::move(e));
}

bool is_const(const ExprPtr& e, int64_t* v) {
  if (e->kind != Kind::Const) return false;
  if (v) *v = e->value;
  return true;
}

int compare(const ExprPtr& a, const ExprPtr& b) {
  if (a == b) return 0;
  if (int c = cmp3(rank(a->kind), rank(b->kind))) return c;
  switch (a->kind) {
    case Kind::Const: return cmp3(a->value, b->value);
    case Kind::Symbol:
      if (int c = compare_names(a->name, b->name)) return c;
      if (int c = cmp3(a->extent != nullptr, b->extent != nullptr)) return c;
      if (a->extent && a->extent != b->extent) return compare(a->extent, b->extent);
      if (int c = cmp3(a->range.lo, b->range.lo)) return c;
      return cmp3(a->range.hi, b->range.hi);
    default:
      for (size_t i = 0; i < a->args.size() && i < b->args.size(); ++i)
        if (int c = compare(a->args[i], b->args[i])) return c;
      return cmp3(a->args.size(), b->args.size());
  }
}

int64_t evaluate(const ExprPtr& e, const std::map<std::string, int64_t>& env) {
  switch (e->kind) {
    case Kind::Const: return e->value;
    case Kind::Symbol: {
      auto it = env.find(e->name);
      KILN_CHECK(it != env.end(), "symbolic size: no value for symbol ", e->name);
      return it->second;
    }
    case Kind::Add: {
      int64_t s = 0;
      for (const ExprPtr& a : e->args) s += evaluate(a, env);
      return s;
    }
    case Kind::Mul: {
      int64_t p = 1;
      for (const ExprPtr& a : e->args) p *= evaluate(a, env);
      return p;
    }
    case Kind::FloorDiv: return detail::floordiv_int(evaluate(e->args[0], env), evaluate(e->args[1], env));
    case Kind::Mod: return detail::mod_int(evaluate(e->args[0], env), evaluate(e->args[1], env));
    case Kind::Min: return std::min(evaluate(e->args[0], env), evaluate(e->args[1], env));
    case Kind::Max: return std::max(evaluate(e->args[0], env), evaluate(e->args[1], env));
  }
  return 0;
}

std::string str(const ExprPtr& e) {
  switch (e->kind) {
    case Kind::Const:
    case Kind::Symbol:
    case Kind::Min:
    case Kind::Max: return print(e, kFree);
    default: return "(" + print(e, kFree) + ")";
  }
}

}  // namespace kiln::sym
