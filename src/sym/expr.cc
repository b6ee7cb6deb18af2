#include "sym/expr.h"

#include <kiln/error.h>

#include <algorithm>

namespace kiln::sym {
namespace {

ExprPtr make(Kind k, std::vector<ExprPtr> args) {
  auto e = std::make_shared<Expr>();
  e->kind = k;
  e->args = std::move(args);
  return e;
}

int64_t floordiv_int(int64_t a, int64_t b) {
  KILN_CHECK(b != 0, "symbolic size: division by zero");
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t mod_int(int64_t a, int64_t b) { return a - floordiv_int(a, b) * b; }

// Flattens nested sums (or products), folds their constants, and sorts the rest by text so
// that a+b and b+a are the same expression.
ExprPtr assoc(Kind k, ExprPtr a, ExprPtr b) {
  const int64_t unit = k == Kind::Add ? 0 : 1;
  int64_t c = unit;
  std::vector<ExprPtr> terms;
  for (const ExprPtr& x : {a, b}) {
    const std::vector<ExprPtr> parts = x->kind == k ? x->args : std::vector<ExprPtr>{x};
    for (const ExprPtr& p : parts) {
      if (p->kind == Kind::Const)
        c = k == Kind::Add ? c + p->value : c * p->value;
      else
        terms.push_back(p);
    }
  }
  if (k == Kind::Mul && c == 0) return constant(0);
  std::sort(terms.begin(), terms.end(), [](const ExprPtr& x, const ExprPtr& y) { return str(x) < str(y); });
  if (c != unit) terms.insert(terms.begin(), constant(c));
  if (terms.empty()) return constant(unit);
  if (terms.size() == 1) return terms[0];
  return make(k, std::move(terms));
}

}  // namespace

ExprPtr constant(int64_t v) {
  auto e = std::make_shared<Expr>();
  e->kind = Kind::Const;
  e->value = v;
  return e;
}

ExprPtr symbol(const std::string& name) {
  auto e = std::make_shared<Expr>();
  e->kind = Kind::Symbol;
  e->name = name;
  return e;
}

bool is_const(const ExprPtr& e, int64_t* v) {
  if (e->kind != Kind::Const) return false;
  if (v) *v = e->value;
  return true;
}

ExprPtr add(ExprPtr a, ExprPtr b) { return assoc(Kind::Add, std::move(a), std::move(b)); }
ExprPtr mul(ExprPtr a, ExprPtr b) { return assoc(Kind::Mul, std::move(a), std::move(b)); }

ExprPtr floordiv(ExprPtr a, ExprPtr b) {
  int64_t x, y;
  if (is_const(a, &x) && is_const(b, &y)) return constant(floordiv_int(x, y));
  if (is_const(b, &y) && y == 1) return a;
  return make(Kind::FloorDiv, {std::move(a), std::move(b)});
}

ExprPtr mod(ExprPtr a, ExprPtr b) {
  int64_t x, y;
  if (is_const(a, &x) && is_const(b, &y)) return constant(mod_int(x, y));
  if (is_const(b, &y) && y == 1) return constant(0);
  return make(Kind::Mod, {std::move(a), std::move(b)});
}

ExprPtr min(ExprPtr a, ExprPtr b) {
  int64_t x, y;
  if (is_const(a, &x) && is_const(b, &y)) return constant(std::min(x, y));
  if (equal(a, b)) return a;
  return make(Kind::Min, {std::move(a), std::move(b)});
}

ExprPtr max(ExprPtr a, ExprPtr b) {
  int64_t x, y;
  if (is_const(a, &x) && is_const(b, &y)) return constant(std::max(x, y));
  if (equal(a, b)) return a;
  return make(Kind::Max, {std::move(a), std::move(b)});
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
      for (auto& a : e->args) s += evaluate(a, env);
      return s;
    }
    case Kind::Mul: {
      int64_t p = 1;
      for (auto& a : e->args) p *= evaluate(a, env);
      return p;
    }
    case Kind::FloorDiv: return floordiv_int(evaluate(e->args[0], env), evaluate(e->args[1], env));
    case Kind::Mod: return mod_int(evaluate(e->args[0], env), evaluate(e->args[1], env));
    case Kind::Min: return std::min(evaluate(e->args[0], env), evaluate(e->args[1], env));
    case Kind::Max: return std::max(evaluate(e->args[0], env), evaluate(e->args[1], env));
  }
  return 0;
}

std::string str(const ExprPtr& e) {
  auto join = [&](const char* sep) {
    std::string s = "(";
    for (size_t i = 0; i < e->args.size(); ++i) s += (i ? sep : "") + str(e->args[i]);
    return s + ")";
  };
  switch (e->kind) {
    case Kind::Const: return std::to_string(e->value);
    case Kind::Symbol: return e->name;
    case Kind::Add: return join(" + ");
    case Kind::Mul: return join("*");
    case Kind::FloorDiv: return join(" // ");
    case Kind::Mod: return join(" % ");
    case Kind::Min: return "min" + join(", ");
    case Kind::Max: return "max" + join(", ");
  }
  return "?";
}

bool equal(const ExprPtr& a, const ExprPtr& b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->value != b->value || a->name != b->name || a->args.size() != b->args.size())
    return false;
  for (size_t i = 0; i < a->args.size(); ++i)
    if (!equal(a->args[i], b->args[i])) return false;
  return true;
}

}  // namespace kiln::sym
