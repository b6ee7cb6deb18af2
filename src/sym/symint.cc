// SymInt arithmetic and comparisons; the guard recorder; statically_known_* / guard_* on SymInts.
#include <kiln/error.h>
#include <kiln/symint.h>

#include "sym/expr.h"

namespace kiln {
namespace {
thread_local sym::GuardRecorder* g_recorder = nullptr;
thread_local int g_no_implicit_guards = 0;

template <class IntOp, class ExprOp>
SymInt binary(const SymInt& a, const SymInt& b, IntOp iop, ExprOp eop) {
  int64_t h = iop(a.hint(), b.hint());
  if (!a.is_symbolic() && !b.is_symbolic()) return SymInt(h);
  return SymInt(eop(a.as_expr(), b.as_expr()), h);
}

struct Relation {
  const char* rel;   // as recorded: "==", "<", "<="
  const char* name;  // of the explicit calls: equal, lt, leq
};
constexpr Relation kEq{"==", "equal"}, kLt{"<", "lt"}, kLeq{"<=", "leq"};

void record(const Relation& r, const SymInt& a, const SymInt& b, bool result) {
  if (g_recorder) g_recorder->record(r.rel, a.as_expr(), b.as_expr(), result);
}

// A bare operator: answers at the hints and records the answer as a guard, as guard_* does (no
// guard where the symbols' ranges decide it: capture checks every symbol's range on each call, so
// such a guard could never fail and would only cost time per call).
bool compare(const Relation& r, const SymInt& a, const SymInt& b, bool at_hints) {
  if (!a.is_symbolic() && !b.is_symbolic()) return at_hints;
  KILN_CHECK_HINT(g_no_implicit_guards == 0,
                  std::string("ask sym::statically_known_") + r.name + "(a, b) (decides without a guard) or sym::guard_" +
                      r.name + "(a, b) (decides at the hint and records a guard)",
                  "size comparison ", a.str(), " ", r.rel, " ", b.str(),
                  " inside a sym::NoImplicitGuards scope: a bare SymInt comparison would add a guard silently");
  return &r == &kEq ? sym::guard_equal(a, b) : &r == &kLeq ? sym::guard_leq(a, b) : sym::guard_lt(a, b);
}

// An explicit guard: no guard where the ranges decide it.
bool guard(const Relation& r, const SymInt& a, const SymInt& b, bool holds, bool known_true, bool known_false) {
  if (!a.is_symbolic() && !b.is_symbolic()) return holds;
  if (known_true) return true;
  if (known_false) return false;
  record(r, a, b, holds);
  return holds;
}
}  // namespace

namespace sym {
GuardRecorder* set_guard_recorder(GuardRecorder* r) {
  auto* prev = g_recorder;
  g_recorder = r;
  return prev;
}

NoImplicitGuards::NoImplicitGuards() { ++g_no_implicit_guards; }
NoImplicitGuards::~NoImplicitGuards() { --g_no_implicit_guards; }

bool statically_known_equal(const SymInt& a, const SymInt& b) { return statically_known_equal(a.as_expr(), b.as_expr()); }
bool statically_known_leq(const SymInt& a, const SymInt& b) { return statically_known_leq(a.as_expr(), b.as_expr()); }
bool statically_known_lt(const SymInt& a, const SymInt& b) { return statically_known_lt(a.as_expr(), b.as_expr()); }
bool statically_known_multiple_of(const SymInt& a, const SymInt& b) {
  return statically_known_multiple_of(a.as_expr(), b.as_expr());
}

bool guard_equal(const SymInt& a, const SymInt& b) {
  const bool maybe = a.is_symbolic() || b.is_symbolic();
  return guard(kEq, a, b, a.hint() == b.hint(), maybe && statically_known_equal(a, b),
               maybe && (statically_known_lt(a, b) || statically_known_lt(b, a)));
}
bool guard_leq(const SymInt& a, const SymInt& b) {
  const bool maybe = a.is_symbolic() || b.is_symbolic();
  return guard(kLeq, a, b, a.hint() <= b.hint(), maybe && statically_known_leq(a, b), maybe && statically_known_lt(b, a));
}
bool guard_lt(const SymInt& a, const SymInt& b) {
  const bool maybe = a.is_symbolic() || b.is_symbolic();
  return guard(kLt, a, b, a.hint() < b.hint(), maybe && statically_known_lt(a, b), maybe && statically_known_leq(b, a));
}
}  // namespace sym

SymInt::SymInt(sym::ExprPtr e, int64_t hint) : v_(hint) {
  int64_t c;
  if (sym::is_const(e, &c))
    v_ = c;
  else
    e_ = std::move(e);
}

int64_t SymInt::value() const {
  KILN_CHECK(!e_, "size ", sym::str(e_), " is symbolic; its concrete value is known only at run time");
  return v_;
}

sym::ExprPtr SymInt::as_expr() const { return e_ ? e_ : sym::constant(v_); }
std::string SymInt::str() const { return e_ ? sym::str(e_) : std::to_string(v_); }

SymInt operator+(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return x + y; }, sym::add);
}
SymInt operator-(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return x - y; }, sym::sub);
}
SymInt operator*(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return x * y; }, sym::mul);
}
SymInt floordiv(const SymInt& a, const SymInt& b) { return binary(a, b, sym::detail::floordiv_int, sym::floordiv); }
SymInt operator%(const SymInt& a, const SymInt& b) { return binary(a, b, sym::detail::mod_int, sym::mod); }
SymInt min(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return std::min(x, y); }, sym::min);
}
SymInt max(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return std::max(x, y); }, sym::max);
}
bool operator==(const SymInt& a, const SymInt& b) { return compare(kEq, a, b, a.hint() == b.hint()); }
bool operator<(const SymInt& a, const SymInt& b) { return compare(kLt, a, b, a.hint() < b.hint()); }
bool operator<=(const SymInt& a, const SymInt& b) { return compare(kLeq, a, b, a.hint() <= b.hint()); }

std::ostream& operator<<(std::ostream& os, const SymInt& s) { return os << s.str(); }

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
std::string shape_str(const SymShape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

}  // namespace kiln
