// The tile IR's parser: the text print() writes (print.cc has the form) back into a Program.
// `//` lines are comments; `# ...` after an op is its origin. Errors name the line.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include "tile/ir.h"
#include "tile/prims.h"

namespace kiln::tile {
namespace {

enum class Tok { Ident, Ref, Int, Float, String, Punct, Comment, Newline, End };

struct Token {
  Tok kind;
  std::string text;
  int line;
};

std::vector<Token> lex(const std::string& s) {
  std::vector<Token> out;
  int line = 1;
  size_t i = 0;
  auto ident_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      out.push_back({Tok::Newline, "\n", line++});
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '#') {
      size_t e = s.find('\n', i);
      if (e == std::string::npos) e = s.size();
      std::string text = s.substr(i + 1, e - i - 1);
      text.erase(0, text.find_first_not_of(' '));
      text.erase(text.find_last_not_of(" \r") + 1);
      out.push_back({Tok::Comment, text, line});
      i = e;
    } else if (c == '%') {
      size_t j = i + 1;
      while (j < s.size() && ident_char(s[j])) ++j;
      out.push_back({Tok::Ref, s.substr(i + 1, j - i - 1), line});
      i = j;
    } else if (c == '"') {
      size_t j = s.find('"', i + 1);
      if (j == std::string::npos) j = s.size();
      out.push_back({Tok::String, s.substr(i + 1, j - i - 1), line});
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '-' && i + 1 < s.size() && (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s.compare(i + 1, 3, "inf") == 0))) {
      if (s.compare(i, 4, "-inf") == 0) {
        out.push_back({Tok::Float, "-inf", line});
        i += 4;
        continue;
      }
      size_t j = i + 1;
      bool is_float = false;
      while (j < s.size()) {
        const char d = s[j];
        if (std::isdigit(static_cast<unsigned char>(d))) ++j;
        else if (d == '.' || d == 'e' || d == 'E') is_float = true, ++j;
        else if ((d == '-' || d == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E')) ++j;
        else break;
      }
      out.push_back({is_float ? Tok::Float : Tok::Int, s.substr(i, j - i), line});
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      out.push_back({Tok::Ident, s.substr(i, j - i), line});
      i = j;
    } else {
      out.push_back({Tok::Punct, std::string(1, c), line});
      ++i;
    }
  }
  out.push_back({Tok::End, "", line});
  return out;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

DType dtype_from_short(const std::string& s, bool* ok) {
  static const std::pair<const char*, DType> table[] = {
      {"b8", kBool}, {"u8", kUInt8}, {"i8", kInt8}, {"i16", kInt16}, {"i32", kInt32},
      {"i64", kInt64}, {"f16", kFloat16}, {"bf16", kBFloat16}, {"f32", kFloat32}, {"f64", kFloat64}};
  for (const auto& [n, d] : table)
    if (s == n) return *ok = true, d;
  *ok = false;
  return kFloat32;
}

struct Parser {
  std::vector<Token> toks;
  size_t pos = 0;
  Program prog;
  std::vector<std::map<std::string, Value*>> scopes;

  const Token& peek(size_t k = 0) const { return toks[std::min(pos + k, toks.size() - 1)]; }

  [[noreturn]] void error(const std::string& msg, const Token* at = nullptr) const {
    const Token& t = at ? *at : peek();
    const std::string got = t.kind == Tok::Newline ? "the end of the line" : t.kind == Tok::End ? "the end of the text" : "'" + t.text + "'";
    Error::Info info;
    info.op = "tile.parse";
    info.message = detail::cat("line ", t.line, ": ", msg, " (got ", got, ")");
    throw Error(std::move(info));
  }

  bool at(Tok k, const char* text = nullptr) const {
    return peek().kind == k && (!text || peek().text == text);
  }
  bool accept(Tok k, const char* text = nullptr) {
    if (!at(k, text)) return false;
    ++pos;
    return true;
  }
  const Token& expect(Tok k, const char* text, const char* what) {
    if (!at(k, text)) error(std::string("expected ") + what);
    return toks[pos++];
  }
  void punct(const char* p) { expect(Tok::Punct, p, (std::string("'") + p + "'").c_str()); }
  void skip_newlines() {
    while (accept(Tok::Newline)) {}
  }

  int64_t integer() {
    const Token& t = expect(Tok::Int, nullptr, "an integer");
    return std::strtoll(t.text.c_str(), nullptr, 10);
  }

  Scalar number() {
    if (at(Tok::Int)) return Scalar(int64_t(integer()));
    if (at(Tok::Float)) {
      const std::string& t = toks[pos++].text;
      if (t == "-inf") return Scalar(-HUGE_VAL);
      return Scalar(std::strtod(t.c_str(), nullptr));
    }
    if (accept(Tok::Ident, "inf")) return Scalar(HUGE_VAL);
    if (accept(Tok::Ident, "nan")) return Scalar(std::nan(""));
    if (accept(Tok::Ident, "true")) return Scalar(true);
    if (accept(Tok::Ident, "false")) return Scalar(false);
    error("expected a number");
  }

  std::vector<int64_t> int_list() {
    punct("[");
    std::vector<int64_t> v;
    if (!at(Tok::Punct, "]")) {
      do v.push_back(integer());
      while (accept(Tok::Punct, ","));
    }
    punct("]");
    return v;
  }

  Type type() {
    Type t;
    const Token& first = expect(Tok::Ident, nullptr, "a type (f32, ptr<f16>, i32[64], ...)");
    bool ok = false;
    if (first.text == "ptr") {
      punct("<");
      const Token& d = expect(Tok::Ident, nullptr, "a dtype");
      t.dtype = dtype_from_short(d.text, &ok);
      if (!ok) error("unknown dtype " + d.text, &d);
      t.ptr = true;
      punct(">");
    } else {
      t.dtype = dtype_from_short(first.text, &ok);
      if (!ok) error("unknown type " + first.text, &first);
    }
    if (at(Tok::Punct, "[")) {
      t.shape = int_list();
      if (t.shape.empty()) error("a block needs at least one dim");
      for (int64_t d : t.shape)
        if (d <= 0) error("block dims must be positive");
    }
    return t;
  }

  Value* lookup(const Token& t) {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto f = it->find(t.text);
      if (f != it->end()) return f->second;
    }
    error("unknown value %" + t.text, &t);
  }
  Value* ref() { return lookup(expect(Tok::Ref, nullptr, "a value (%name)")); }

  Value* define(const Token& name, Type t) {
    for (const auto& s : scopes)
      if (s.count(name.text)) error("%" + name.text + " is defined twice", &name);
    Value* v = prog.new_value(std::move(t), all_digits(name.text) ? "" : name.text);
    scopes.back()[name.text] = v;
    return v;
  }

  Origin origin_text(const Token& t) {
    Origin o;
    std::string s = t.text;
    const size_t at_pos = s.find(" @ ");
    if (at_pos != std::string::npos) {
      o.op = s.substr(0, at_pos);
      s = s.substr(at_pos + 3);
    }
    const size_t colon = s.rfind(':');
    if (colon == std::string::npos || !all_digits(s.substr(colon + 1))) {
      if (at_pos == std::string::npos && s.find(':') == std::string::npos) {
        o.op = s;  // an origin with only an op name
        return o;
      }
      error("an origin is '# file:line' or '# op @ file:line'", &t);
    }
    o.file = s.substr(0, colon);
    o.line = std::atoi(s.c_str() + colon + 1);
    return o;
  }

  // The rest of an op's line: an optional origin comment, then the newline.
  void end_of_line(Op& op) {
    if (at(Tok::Comment)) op.origin = origin_text(toks[pos++]);
    if (!accept(Tok::Newline) && !at(Tok::End)) error("expected the end of the line");
  }

  struct Pending {
    Token name;
    Type type;
  };

  void region(Region& r) {
    skip_newlines();
    while (!at(Tok::Punct, "}")) {
      if (at(Tok::End)) error("expected '}' to close the region");
      op_line(r);
      skip_newlines();
    }
  }

  void op_line(Region& r) {
    std::vector<Pending> results;
    if (at(Tok::Ref) && peek(1).kind == Tok::Punct && peek(1).text == ":") {
      do {
        Token n = expect(Tok::Ref, nullptr, "a result (%name)");
        punct(":");
        results.push_back({n, type()});
      } while (accept(Tok::Punct, ","));
      punct("=");
    }
    auto op = std::make_unique<Op>();
    Op& o = *op;
    const Token& head = expect(Tok::Ident, nullptr, "an op name");
    auto make_results = [&]() {
      for (size_t i = 0; i < results.size(); ++i) {
        Value* v = define(results[i].name, results[i].type);
        v->def = &o;
        v->index = int(i);
        o.results.push_back(v);
      }
    };
    if (head.text == "for") {
      o.code = OpCode::For;
      const Token iv = expect(Tok::Ref, nullptr, "the induction variable");
      punct(":");
      Type ivt = type();
      punct("=");
      o.operands.push_back(ref());
      expect(Tok::Ident, "to", "'to'");
      o.operands.push_back(ref());
      expect(Tok::Ident, "step", "'step'");
      o.operands.push_back(ref());
      // The initial carried values are read outside the body: look them up before entering it.
      std::vector<Pending> carried;
      if (accept(Tok::Ident, "iter")) {
        punct("(");
        do {
          Token a = expect(Tok::Ref, nullptr, "a carried value (%name)");
          punct(":");
          Type at = type();
          punct("=");
          o.operands.push_back(ref());
          carried.push_back({a, at});
        } while (accept(Tok::Punct, ","));
        punct(")");
      }
      o.regions.resize(1);
      scopes.emplace_back();
      o.regions[0].args.push_back(define(iv, ivt));
      for (const Pending& c : carried) o.regions[0].args.push_back(define(c.name, c.type));
      punct("{");
      end_of_line(o);
      region(o.regions[0]);
      punct("}");
      scopes.pop_back();
      make_results();
      if (!accept(Tok::Newline) && !at(Tok::End)) error("expected the end of the line after '}'");
    } else if (head.text == "if") {
      o.code = OpCode::If;
      o.operands.push_back(ref());
      o.regions.resize(2);
      punct("{");
      end_of_line(o);
      for (int b = 0; b < 2; ++b) {
        scopes.emplace_back();
        if (b == 1 && !accept(Tok::Ident, "else")) {
          // No else branch: it yields nothing.
          auto y = std::make_unique<Op>();
          y->code = OpCode::Yield;
          o.regions[1].ops.push_back(std::move(y));
          scopes.pop_back();
          break;
        }
        if (b == 1) {
          punct("{");
          if (!accept(Tok::Newline)) error("expected the end of the line after 'else {'");
        }
        region(o.regions[b]);
        punct("}");
        scopes.pop_back();
      }
      make_results();
      if (!accept(Tok::Newline) && !at(Tok::End)) error("expected the end of the line after '}'");
    } else {
      simple_op(o, head);
      make_results();
      end_of_line(o);
    }
    r.ops.push_back(std::move(op));
  }

  void simple_op(Op& o, const Token& head) {
    static const std::map<std::string, OpCode> codes = {
        {"program_id", OpCode::ProgramId}, {"num_programs", OpCode::NumPrograms}, {"constant", OpCode::Constant},
        {"arange", OpCode::Arange}, {"splat", OpCode::Splat}, {"broadcast", OpCode::Broadcast},
        {"expand_dims", OpCode::ExpandDims}, {"reshape", OpCode::Reshape}, {"permute", OpCode::Permute},
        {"addptr", OpCode::AddPtr}, {"load", OpCode::Load}, {"store", OpCode::Store},
        {"atomic_add", OpCode::AtomicAdd}, {"cast", OpCode::Cast}, {"dot", OpCode::Dot}, {"yield", OpCode::Yield}};
    static const std::map<std::string, ReduceKind> reduces = {
        {"sum", ReduceKind::Sum}, {"prod", ReduceKind::Prod}, {"max", ReduceKind::Max},
        {"min", ReduceKind::Min}, {"argmax", ReduceKind::Argmax}, {"argmin", ReduceKind::Argmin}};
    static const std::map<std::string, ScanKind> scans = {
        {"cumsum", ScanKind::Cumsum}, {"cumprod", ScanKind::Cumprod}, {"cummax", ScanKind::Cummax}, {"cummin", ScanKind::Cummin}};
    if (auto c = codes.find(head.text); c != codes.end()) {
      o.code = c->second;
    } else if (auto rk = reduces.find(head.text); rk != reduces.end()) {
      o.code = OpCode::Reduce;
      o.reduce = rk->second;
    } else if (auto sk = scans.find(head.text); sk != scans.end()) {
      o.code = OpCode::Scan;
      o.scan = sk->second;
    } else if (const ops::OpInfo* info = ops::find_op(head.text); info && is_prim(info->id)) {
      o.code = OpCode::Pointwise;
      o.prim = info->id;
    } else {
      error("unknown op " + head.text, &head);
    }
    punct("(");
    bool first = true;
    int numbers = 0;  // positional numbers seen
    while (!at(Tok::Punct, ")")) {
      if (!first) punct(",");
      first = false;
      if (at(Tok::Ref)) {
        o.operands.push_back(ref());
      } else if (at(Tok::Ident) && peek(1).kind == Tok::Punct && peek(1).text == "=") {
        const Token key = toks[pos];
        pos += 2;
        if (key.text == "axis") o.axis = integer();
        else if (key.text == "order") o.order = int_list();
        else if (key.text == "rounding") {
          const Token& m = expect(Tok::String, nullptr, "\"trunc\" or \"floor\"");
          if (m.text == "trunc") o.rounding = Rounding::Trunc;
          else if (m.text == "floor") o.rounding = Rounding::Floor;
          else error("rounding is \"trunc\" or \"floor\"", &m);
        } else {
          error("unknown attribute " + key.text, &key);
        }
      } else {
        // Positional numbers: program_id's axis, constant's value, arange's bounds.
        const Token& t = peek();
        const Scalar s = number();
        if (o.code == OpCode::ProgramId || o.code == OpCode::NumPrograms) o.axis = s.to_int();
        else if (o.code == OpCode::Constant) o.value = s;
        else if (o.code == OpCode::Arange && numbers < 2) (numbers == 0 ? o.start : o.end) = s.to_int();
        else error("unexpected number", &t);
        ++numbers;
      }
    }
    punct(")");
  }

  void program() {
    skip_newlines();
    expect(Tok::Ident, "kernel", "'kernel'");
    prog.name = expect(Tok::Ident, nullptr, "the kernel's name").text;
    punct("(");
    scopes.emplace_back();
    while (!at(Tok::Punct, ")")) {
      if (!prog.params.empty()) punct(",");
      const Token n = expect(Tok::Ref, nullptr, "a parameter (%name)");
      punct(":");
      Type t = type();
      ParamKind kind = t.ptr ? ParamKind::Pointer : is_floating(t.dtype) ? ParamKind::Float : ParamKind::Int;
      if (accept(Tok::Ident, "sym")) kind = ParamKind::Sym;
      for (const Param& p : prog.params)
        if (p.name == n.text) error("two parameters are named " + n.text, &n);
      Value* v = prog.add_param(n.text, kind, t);
      scopes.back()[n.text] = v;
    }
    punct(")");
    expect(Tok::Ident, "meta", "'meta'");
    punct("(");
    bool first = true;
    while (!at(Tok::Punct, ")")) {
      if (!first) punct(",");
      first = false;
      const Token k = expect(Tok::Ident, nullptr, "a meta-parameter name");
      punct("=");
      const Scalar v = number();
      if (k.text == "num_warps") prog.meta.num_warps = int(v.to_int());
      else if (k.text == "num_stages") prog.meta.num_stages = int(v.to_int());
      else prog.meta.constexprs.push_back({k.text, v});
    }
    punct(")");
    punct("{");
    scopes.emplace_back();
    region(prog.body);
    punct("}");
    skip_newlines();
    if (!at(Tok::End)) error("expected the end of the text after the kernel");
  }
};

}  // namespace

Program parse(const std::string& text) {
  Parser p;
  p.toks = lex(text);
  p.program();
  return std::move(p.prog);
}

}  // namespace kiln::tile
