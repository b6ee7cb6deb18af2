#include "graph/reader.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "sym/expr.h"

namespace kiln::graph {
namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

const char* const kPuncts[] = {"->", "//", "(", ")", "[", "]", "{", "}", ",", ":", "=", "+", "-", "*", "%", "<"};

}  // namespace

Lexer::Lexer(const std::string& s) {
  int line = 1, col = 1;
  size_t i = 0;
  bool line_start = true;
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n && i < s.size(); ++k, ++i) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
        line_start = true;
      } else {
        ++col;
      }
    }
  };
  auto fail_at = [&](const std::string& m) { detail::fail(detail::cat(line, ":", col, ": ", m)); };
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance(1);
      continue;
    }
    if (line_start && s.compare(i, 2, "//") == 0) {  // a comment line
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    Token t;
    t.line = line;
    t.col = col;
    const bool first = line_start;
    line_start = false;
    if (c == '%' && i + 1 < s.size() && ident_char(s[i + 1])) {
      size_t j = i + 1;
      while (j < s.size() && ident_char(s[j])) ++j;
      t.kind = Token::Ref;
      t.text = s.substr(i + 1, j - i - 1);
      advance(j - i);
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      t.kind = Token::Ident;
      t.text = s.substr(i, j - i);
      advance(j - i);
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      bool is_float = false;
      while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      if (j < s.size() && s[j] == '.') {
        is_float = true;
        ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      if (j < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        is_float = true;
        ++j;
        if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
      }
      t.kind = is_float ? Token::Float : Token::Int;
      t.text = s.substr(i, j - i);
      advance(j - i);
    } else if (c == '#') {
      size_t j = s.find('\n', i);
      if (j == std::string::npos) j = s.size();
      const size_t b = s.find_first_not_of(" \t", i + 1);
      size_t e = s.find_last_not_of(" \t\r", j - 1);
      t.kind = Token::Origin;
      t.text = b < j && e != std::string::npos && e >= b ? s.substr(b, e + 1 - b) : "";
      advance(j - i);
    } else if (c == '"') {
      size_t j = i + 1;
      std::string v;
      while (j < s.size() && s[j] != '"' && s[j] != '\n') {
        if (s[j] == '\\' && j + 1 < s.size()) {
          ++j;
          v += s[j] == 'n' ? '\n' : s[j] == 't' ? '\t' : s[j];
        } else {
          v += s[j];
        }
        ++j;
      }
      if (j >= s.size() || s[j] != '"') fail_at("unterminated string");
      t.kind = Token::Str;
      t.text = v;
      advance(j + 1 - i);
    } else {
      for (const char* p : kPuncts) {
        if (s.compare(i, std::strlen(p), p) == 0) {
          t.kind = Token::Punct;
          t.text = p;
          break;
        }
      }
      if (t.kind != Token::Punct) fail_at(detail::cat("unexpected character '", c, "'"));
      advance(t.text.size());
    }
    if (first) t.col = -t.col;  // a negative column marks the first token of a line
    toks_.push_back(std::move(t));
  }
  Token end;
  end.line = line;
  end.col = -col;
  toks_.push_back(end);
}

const Token& Lexer::peek(size_t ahead) const { return toks_[std::min(pos_ + ahead, toks_.size() - 1)]; }

Token Lexer::next() {
  Token t = peek();
  if (pos_ < toks_.size() - 1) ++pos_;
  t.col = std::abs(t.col);
  return t;
}

bool Lexer::at_punct(const char* p) const { return peek().kind == Token::Punct && peek().text == p; }
bool Lexer::at_line_start() const { return peek().col < 0; }

bool Lexer::accept(const char* p) {
  if (!at_punct(p)) return false;
  next();
  return true;
}

void Lexer::expect(const char* p) {
  if (!accept(p)) fail(peek(), detail::cat("expected '", p, "'"));
}

void Lexer::fail(const Token& at, const std::string& message) const {
  std::string got = at.kind == Token::End ? "end of input"
                    : at.kind == Token::Ref ? "%" + at.text
                    : at.kind == Token::Str ? format_string(at.text)
                    : at.kind == Token::Origin ? "# " + at.text
                                            : at.text;
  detail::fail(detail::cat(at.line, ":", std::abs(at.col), ": ", message, " (got ", got, ")"));
}

// ----------------------------------------------------------------------------- literals
namespace {

int64_t read_int(Lexer& lx) {
  const bool neg = lx.accept("-");
  Token t = lx.next();
  if (t.kind != Token::Int) lx.fail(t, "expected an integer");
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc() || p != t.text.data() + t.text.size()) lx.fail(t, "integer out of range");
  return neg ? -v : v;
}

bool read_bool(Lexer& lx) {
  Token t = lx.next();
  if (t.kind == Token::Ident && (t.text == "True" || t.text == "False")) return t.text == "True";
  lx.fail(t, "expected True or False");
}

template <class F>
void read_list(Lexer& lx, F each) {
  lx.expect("[");
  if (lx.accept("]")) return;
  do each(); while (lx.accept(","));
  lx.expect("]");
}

SymInt read_sym_sum(Lexer& lx, int64_t hint);

SymInt read_sym_factor(Lexer& lx, int64_t hint) {
  if (lx.accept("-")) return SymInt(0) - read_sym_factor(lx, hint);
  if (lx.accept("(")) {
    SymInt v = read_sym_sum(lx, hint);
    lx.expect(")");
    return v;
  }
  const Token& t = lx.peek();
  if (t.kind == Token::Int) return SymInt(read_int(lx));
  if (t.kind == Token::Ident) {
    Token id = lx.next();
    if ((id.text == "min" || id.text == "max") && lx.at_punct("(")) {
      lx.expect("(");
      SymInt a = read_sym_sum(lx, hint);
      lx.expect(",");
      SymInt b = read_sym_sum(lx, hint);
      lx.expect(")");
      return id.text == "min" ? min(a, b) : max(a, b);
    }
    return SymInt(sym::symbol(id.text), hint);
  }
  lx.fail(t, "expected a size (integer, symbol or expression)");
}

SymInt read_sym_term(Lexer& lx, int64_t hint) {
  SymInt v = read_sym_factor(lx, hint);
  for (;;) {
    if (lx.accept("*")) v = v * read_sym_factor(lx, hint);
    else if (lx.accept("//")) v = floordiv(v, read_sym_factor(lx, hint));
    else if (lx.accept("%")) v = v % read_sym_factor(lx, hint);
    else return v;
  }
}

SymInt read_sym_sum(Lexer& lx, int64_t hint) {
  SymInt v = read_sym_term(lx, hint);
  for (;;) {
    if (lx.accept("+")) v = v + read_sym_term(lx, hint);
    else if (lx.accept("-")) v = v - read_sym_term(lx, hint);
    else return v;
  }
}

}  // namespace

SymInt read_symint(Lexer& lx, int64_t hint) { return read_sym_sum(lx, hint); }

// "<op> [backward] [@ <file>:<line>]", the text after '#' (print.cc's origin_str).
Origin read_origin(const Lexer& lx, const Token& t) {
  Origin o;
  std::string head = t.text, where;
  if (size_t at = t.text.find(" @ "); at != std::string::npos) head = t.text.substr(0, at), where = t.text.substr(at + 3);
  if (head.size() > 9 && head.compare(head.size() - 9, 9, " backward") == 0) {
    o.backward = true;
    head.resize(head.size() - 9);
  }
  const ops::OpInfo* info = ops::find_op(head);
  if (!info) lx.fail(t, "expected an origin '# <op> [backward] [@ <file>:<line>]' with a known op");
  o.op = info->id;
  if (!where.empty()) {
    const size_t colon = where.rfind(':');
    int line = 0;
    const char* end = where.data() + where.size();
    auto [p, ec] = colon == std::string::npos || colon == 0
                       ? std::from_chars_result{end, std::errc::invalid_argument}
                       : std::from_chars(where.data() + colon + 1, end, line);
    if (ec != std::errc() || p != end || line <= 0 || colon + 1 == where.size())
      lx.fail(t, "expected '<file>:<line>' after '@' in the origin");
    o.file = intern_file(where.substr(0, colon));
    o.line = line;
  }
  return o;
}

double read_float(Lexer& lx) {
  const bool neg = lx.accept("-");
  Token t = lx.next();
  double v = 0;
  if (t.kind == Token::Ident && t.text == "inf") {
    v = std::numeric_limits<double>::infinity();
  } else if (t.kind == Token::Ident && t.text == "nan") {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (t.kind == Token::Int || t.kind == Token::Float) {
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size()) lx.fail(t, "bad number");
  } else {
    lx.fail(t, "expected a number");
  }
  return neg ? -v : v;
}

NodeArg read_arg(Lexer& lx, const SchemaArg& s, const RefLookup& lookup, int64_t hint) {
  const Token& t = lx.peek();
  if (t.kind == Token::Ident && t.text == "None") {
    if (!s.optional) lx.fail(t, detail::cat("argument ", s.name, " (", s.type_text, ") can't be None"));
    lx.next();
    return std::monostate{};
  }
  switch (s.base) {
    case ArgBase::Tensor: {
      Token r = lx.next();
      if (r.kind != Token::Ref) lx.fail(r, detail::cat("argument ", s.name, " expects a value (%name)"));
      return lookup(r);
    }
    case ArgBase::TensorList: {
      ValueList l;
      read_list(lx, [&] {
        Token r = lx.next();
        if (s.elem_optional && r.kind == Token::Ident && r.text == "None") return l.push_back(nullptr);
        if (r.kind != Token::Ref) lx.fail(r, detail::cat("argument ", s.name, " expects a list of values"));
        l.push_back(lookup(r));
      });
      return l;
    }
    case ArgBase::Scalar: {
      if (t.kind == Token::Ident && (t.text == "True" || t.text == "False")) return Scalar(read_bool(lx));
      const Token& num = lx.at_punct("-") ? lx.peek(1) : t;
      if (num.kind == Token::Int) return Scalar(read_int(lx));
      return Scalar(read_float(lx));
    }
    case ArgBase::Int: return read_int(lx);
    case ArgBase::IntList: {
      std::vector<int64_t> v;
      if (!lx.at_punct("[")) return std::vector<int64_t>{read_int(lx)};  // "stride=1" defaults
      read_list(lx, [&] { v.push_back(read_int(lx)); });
      return v;
    }
    case ArgBase::SymInt: return read_symint(lx, hint);
    case ArgBase::SymIntList: {
      SymShape v;
      read_list(lx, [&] { v.push_back(read_symint(lx, hint)); });
      return v;
    }
    case ArgBase::Float: return read_float(lx);
    case ArgBase::FloatList: {
      std::vector<double> v;
      read_list(lx, [&] { v.push_back(read_float(lx)); });
      return v;
    }
    case ArgBase::Bool: return read_bool(lx);
    case ArgBase::ScalarType: {
      Token id = lx.next();
      DType d;
      if (id.kind == Token::Ident && dtype_from_short(id.text, &d)) return d;
      lx.fail(id, "expected a dtype (f32, i64, ...)");
    }
    case ArgBase::Device:
    case ArgBase::Str: {
      Token str = lx.next();
      if (str.kind != Token::Str) lx.fail(str, detail::cat("argument ", s.name, " expects a string"));
      if (s.base == ArgBase::Str) return str.text;
      try {
        return Device(str.text);
      } catch (const Error&) {
        lx.fail(str, "bad device");
      }
    }
  }
  lx.fail(t, "internal: unknown argument type");
}

// ----------------------------------------------------------------------------- formatting
namespace {
struct DTypeName {
  DType t;
  const char* short_name;
  const char* schema_name;  // as ops.def defaults write it
};
const DTypeName kDTypes[] = {
    {kBool, "b8", "Bool"},        {kUInt8, "u8", "UInt8"},     {kInt8, "i8", "Int8"},
    {kInt16, "i16", "Int16"},     {kInt32, "i32", "Int32"},    {kInt64, "i64", "Int64"},
    {kFloat16, "f16", "Float16"}, {kBFloat16, "bf16", "BFloat16"}, {kFloat32, "f32", "Float32"},
    {kFloat64, "f64", "Float64"}};
}  // namespace

const char* short_name(DType t) {
  for (auto& d : kDTypes)
    if (d.t == t) return d.short_name;
  return "?";
}

bool dtype_from_short(const std::string& s, DType* out) {
  for (auto& d : kDTypes) {
    if (s == d.short_name || s == d.schema_name) {
      *out = d.t;
      return true;
    }
  }
  return false;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, p);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_scalar(const Scalar& s) {
  if (s.is_bool()) return s.to_bool() ? "True" : "False";
  if (s.is_int()) return std::to_string(s.to_int());
  return format_float(s.to_double());
}

std::string format_string(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\', r += c;
    else if (c == '\n') r += "\\n";
    else if (c == '\t') r += "\\t";
    else r += c;
  }
  return r + "\"";
}

}  // namespace kiln::graph
