// Symbolic integer expressions over size symbols: const, symbol, +, *, floordiv, mod, min, max.
// Built through the smart constructors below, which fold constants and canonicalize sums and
// products, so equal expressions usually have equal text.
#pragma once
#include <kiln/symint.h>

#include <map>
#include <string>
#include <vector>

namespace kiln::sym {

enum class Kind : uint8_t { Const, Symbol, Add, Mul, FloorDiv, Mod, Min, Max };

struct Expr {
  Kind kind;
  int64_t value = 0;          // Const
  std::string name;           // Symbol
  std::vector<ExprPtr> args;  // operands
};

ExprPtr constant(int64_t v);
ExprPtr symbol(const std::string& name);
ExprPtr add(ExprPtr a, ExprPtr b);
ExprPtr mul(ExprPtr a, ExprPtr b);
ExprPtr floordiv(ExprPtr a, ExprPtr b);
ExprPtr mod(ExprPtr a, ExprPtr b);
ExprPtr min(ExprPtr a, ExprPtr b);
ExprPtr max(ExprPtr a, ExprPtr b);

bool is_const(const ExprPtr& e, int64_t* v = nullptr);
int64_t evaluate(const ExprPtr& e, const std::map<std::string, int64_t>& env);
std::string str(const ExprPtr& e);
bool equal(const ExprPtr& a, const ExprPtr& b);  // structural, after canonicalization

}  // namespace kiln::sym
