// Operators over sym::ExprPtr for the sym tests: X(s0) * 2 + 1 builds through the smart
// constructors (sym::add, sym::mul, ...), so tests read like the expressions they check.
#pragma once
#include <string>

#include <kiln/error.h>

#include "sym/expr.h"

namespace kiln::symtest {

struct X {
  sym::ExprPtr e;
  X(int64_t v) : e(sym::constant(v)) {}  // NOLINT: implicit on purpose
  X(int v) : e(sym::constant(v)) {}      // NOLINT
  X(sym::ExprPtr p) : e(std::move(p)) {}  // NOLINT
  const sym::Expr* operator->() const { return e.get(); }
};
inline X operator+(const X& a, const X& b) { return sym::add(a.e, b.e); }
inline X operator-(const X& a, const X& b) { return sym::sub(a.e, b.e); }
inline X operator-(const X& a) { return sym::mul(sym::constant(-1), a.e); }
inline X operator*(const X& a, const X& b) { return sym::mul(a.e, b.e); }
inline X operator%(const X& a, const X& b) { return sym::mod(a.e, b.e); }
inline X fdiv(const X& a, const X& b) { return sym::floordiv(a.e, b.e); }
inline X smin(const X& a, const X& b) { return sym::min(a.e, b.e); }
inline X smax(const X& a, const X& b) { return sym::max(a.e, b.e); }
inline bool same(const X& a, const X& b) { return a.e == b.e; }  // one node (interned)
inline std::string S(const X& a) { return sym::str(a.e); }
inline X sym_(const char* name, sym::Range r = sym::kSizeRange) { return sym::symbol(name, r); }
inline X idx(const char* name, const X& extent) { return sym::index(name, extent.e); }

}  // namespace kiln::symtest
