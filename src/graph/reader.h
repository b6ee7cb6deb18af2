// Tokens and literals of the IR text, shared by the parser (parse.cc) and the schema defaults
// (schema.cc), and the formatting of literals (print.cc).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "graph/schema.h"

namespace kiln::graph {

struct Token {
  enum Kind : uint8_t { End, Ref, Ident, Int, Float, Str, Punct, Origin } kind = End;
  std::string text;  // Ref: the name after %; Str: unescaped contents; Origin: the rest of the line after '#', trimmed
  int line = 1, col = 1;
};

class Lexer {
 public:
  // Lines whose first non-blank characters are "//" are comments; '#' starts a node's origin,
  // which runs to the end of its line.
  explicit Lexer(const std::string& text);
  const Token& peek(size_t ahead = 0) const;
  Token next();
  bool accept(const char* punct);  // consumes it when the next token is this punctuation
  void expect(const char* punct);
  bool at_punct(const char* punct) const;
  bool at_line_start() const;      // the next token is the first on its line
  [[noreturn]] void fail(const Token& at, const std::string& message) const;

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
};

using RefLookup = std::function<Value*(const Token&)>;

// One argument value of the given schema type. Value references go through `lookup`; symbols
// in sizes become SymInts with hint `hint`.
NodeArg read_arg(Lexer& lx, const SchemaArg& type, const RefLookup& lookup, int64_t hint);
SymInt read_symint(Lexer& lx, int64_t hint);
// A node's origin from the text of an Origin token ("<op> [backward] [@ <file>:<line>]").
Origin read_origin(const Lexer& lx, const Token& t);
double read_float(Lexer& lx);

// dtype short names: f32 f64 f16 bf16 i64 i32 i16 i8 u8 b8.
const char* short_name(DType t);
bool dtype_from_short(const std::string& s, DType* out);

// Text of a literal (not a value reference): floats always show a '.', 'e', inf or nan.
std::string format_float(double d);
std::string format_scalar(const Scalar& s);
std::string format_string(const std::string& s);  // quoted, escaped

}  // namespace kiln::graph
