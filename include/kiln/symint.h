// SymInt: a size that is either a concrete int64 or a symbolic expression (kiln::sym::Expr)
// over size symbols. A symbolic SymInt also carries a hint: the value seen in the example input,
// used to answer comparisons while tracing (each answer is recorded as a guard).
#pragma once
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace kiln {
namespace sym {
struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;
}  // namespace sym

class SymInt {
 public:
  SymInt(int64_t v = 0) : v_(v) {}
  SymInt(int v) : v_(v) {}
  SymInt(sym::ExprPtr e, int64_t hint);  // folds to concrete if e is a constant

  bool is_symbolic() const { return e_ != nullptr; }
  // The concrete value; throws if symbolic (use hint() while tracing).
  int64_t value() const;
  int64_t hint() const { return v_; }
  const sym::ExprPtr& expr() const { return e_; }
  sym::ExprPtr as_expr() const;  // a constant expression if concrete
  std::string str() const;

  friend SymInt operator+(const SymInt& a, const SymInt& b);
  friend SymInt operator-(const SymInt& a, const SymInt& b);
  friend SymInt operator*(const SymInt& a, const SymInt& b);
  friend SymInt floordiv(const SymInt& a, const SymInt& b);
  friend SymInt operator%(const SymInt& a, const SymInt& b);
  friend SymInt min(const SymInt& a, const SymInt& b);
  friend SymInt max(const SymInt& a, const SymInt& b);
  SymInt& operator+=(const SymInt& o) { return *this = *this + o; }
  SymInt& operator*=(const SymInt& o) { return *this = *this * o; }

  // Comparisons answer with hints; on symbolic operands the answer is reported to the
  // active guard recorder (capture/), so a compiled graph is reused only where it still holds.
  // Compiler code asks sym::statically_known_* / sym::guard_* instead (below).
  friend bool operator==(const SymInt& a, const SymInt& b);
  friend bool operator!=(const SymInt& a, const SymInt& b) { return !(a == b); }
  friend bool operator<(const SymInt& a, const SymInt& b);
  friend bool operator<=(const SymInt& a, const SymInt& b);
  friend bool operator>(const SymInt& a, const SymInt& b) { return b < a; }
  friend bool operator>=(const SymInt& a, const SymInt& b) { return b <= a; }

 private:
  int64_t v_;
  sym::ExprPtr e_;
};
std::ostream& operator<<(std::ostream& os, const SymInt& s);

using SymShape = std::vector<SymInt>;
using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);
std::string shape_str(const SymShape& s);

namespace sym {
// Receives every decision a symbolic comparison made; installed by capture while tracing.
struct GuardRecorder {
  virtual ~GuardRecorder() = default;
  virtual void record(const char* rel, const ExprPtr& a, const ExprPtr& b, bool result) = 0;
};
GuardRecorder* set_guard_recorder(GuardRecorder* r);  // returns the previous one

// Size questions for compiler code (docs/sym.md). statically_known_* decide from the canonical
// forms and the symbols' ranges and never add a guard: true is a proof, false means "can't
// prove" (not "false"). guard_* decide at the hints and record the decision as a guard (unless
// it holds for every value in the ranges, which needs none): for the choices a compiled graph
// may specialize on.
bool statically_known_equal(const SymInt& a, const SymInt& b);
bool statically_known_leq(const SymInt& a, const SymInt& b);
bool statically_known_lt(const SymInt& a, const SymInt& b);
bool statically_known_multiple_of(const SymInt& a, const SymInt& b);  // a == k*b, k an integer
bool guard_equal(const SymInt& a, const SymInt& b);
bool guard_leq(const SymInt& a, const SymInt& b);
bool guard_lt(const SymInt& a, const SymInt& b);

// Inside this scope (per thread, nestable) a bare SymInt comparison (==, !=, <, <=, >, >=) on a
// symbolic size is an error naming the comparison: code that must not add guards silently (the
// fusion scheduler) asks statically_known_* or guard_* instead.
class NoImplicitGuards {
 public:
  NoImplicitGuards();
  ~NoImplicitGuards();
  NoImplicitGuards(const NoImplicitGuards&) = delete;
  NoImplicitGuards& operator=(const NoImplicitGuards&) = delete;
};
}  // namespace sym

}  // namespace kiln
