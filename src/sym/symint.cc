#include <kiln/error.h>
#include <kiln/symint.h>

#include "sym/expr.h"

namespace kiln {
namespace {
thread_local sym::GuardRecorder* g_recorder = nullptr;

template <class IntOp, class ExprOp>
SymInt binary(const SymInt& a, const SymInt& b, IntOp iop, ExprOp eop) {
  int64_t h = iop(a.hint(), b.hint());
  if (!a.is_symbolic() && !b.is_symbolic()) return SymInt(h);
  return SymInt(eop(a.as_expr(), b.as_expr()), h);
}

bool compare(const char* rel, const SymInt& a, const SymInt& b, bool result) {
  if ((a.is_symbolic() || b.is_symbolic()) && g_recorder) g_recorder->record(rel, a.as_expr(), b.as_expr(), result);
  return result;
}

int64_t floordiv_i(int64_t a, int64_t b) {
  KILN_CHECK(b != 0, "integer division by zero in a size computation");
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
}  // namespace

namespace sym {
GuardRecorder* set_guard_recorder(GuardRecorder* r) {
  auto* prev = g_recorder;
  g_recorder = r;
  return prev;
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
  return binary(a, b, [](int64_t x, int64_t y) { return x - y; },
                [](sym::ExprPtr x, sym::ExprPtr y) { return sym::add(x, sym::mul(sym::constant(-1), y)); });
}
SymInt operator*(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return x * y; }, sym::mul);
}
SymInt floordiv(const SymInt& a, const SymInt& b) { return binary(a, b, floordiv_i, sym::floordiv); }
SymInt operator%(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return x - floordiv_i(x, y) * y; }, sym::mod);
}
SymInt min(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return std::min(x, y); }, sym::min);
}
SymInt max(const SymInt& a, const SymInt& b) {
  return binary(a, b, [](int64_t x, int64_t y) { return std::max(x, y); }, sym::max);
}
bool operator==(const SymInt& a, const SymInt& b) { return compare("==", a, b, a.hint() == b.hint()); }
bool operator<(const SymInt& a, const SymInt& b) { return compare("<", a, b, a.hint() < b.hint()); }
bool operator<=(const SymInt& a, const SymInt& b) { return compare("<=", a, b, a.hint() <= b.hint()); }

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
