// Reads the loop IR's text form (loop_ir.cc's print) back into a Program, with the graph IR's
// lexer and size reader (graph/reader.h): errors are kiln::Error "line:col: message".
// Index variables (i0 < 8) are the node's own: the header defines them, its bodies use them.
// Index expressions are read as printed (sym::str's canonical form) and rebuilt node for node:
// simplifying them again could fold what the printed one kept (a sum of extent-1 variables is
// always 0, but "i1 + i2 + r0" printed it), and the round trip would not give the same text.
#include <algorithm>
#include <limits>
#include <map>

#include "graph/reader.h"
#include "inductor/loop_ir.h"

namespace kiln::inductor {
namespace {

using graph::Lexer;
using graph::Token;

constexpr int64_t kHint = 64;  // the hint of a size symbol, as graph::parse gives it

class Parser {
 public:
  explicit Parser(const std::string& text) : lx_(text) {}

  Program run() {
    while (!at_ident("outputs")) {
      if (lx_.peek().kind == Token::End) lx_.fail(lx_.peek(), "expected 'outputs:' at the end of the program");
      Token name = ident("a buffer or node name");
      lx_.expect(":");
      Token kind = ident("a buffer kind (input, constant, temp) or node kind (pointwise, reduction, extern)");
      if (kind.text == "input" || kind.text == "constant" || kind.text == "temp") buffer(name, kind);
      else node(name, kind);
    }
    lx_.next();
    lx_.expect(":");
    while (lx_.peek().kind == Token::Ident) p_.outputs.push_back(buffer_ref());
    if (lx_.peek().kind != Token::End) lx_.fail(lx_.peek(), "expected a buffer name or the end of the program");
    return std::move(p_);
  }

 private:
  bool at_ident(const char* word) const { return lx_.peek().kind == Token::Ident && lx_.peek().text == word; }

  Token ident(const char* what) {
    Token t = lx_.next();
    if (t.kind != Token::Ident) lx_.fail(t, std::string("expected ") + what);
    return t;
  }

  void keyword(const char* word) {
    Token t = lx_.next();
    if (t.kind != Token::Ident || t.text != word) lx_.fail(t, std::string("expected '") + word + "'");
  }

  DType dtype() {
    Token t = lx_.next();
    DType d;
    if (t.kind != Token::Ident || !graph::dtype_from_short(t.text, &d)) lx_.fail(t, "expected a dtype (f32, i64, ...)");
    return d;
  }

  SymInt size() { return graph::read_symint(lx_, kHint); }

  // ---- index expressions, as sym::str prints them (sym/expr.cc) ----
  // expr   := sum | side ("//" | "%") side          side := atom | "(" expr ")"
  // sum    := [const | term] ((" + " | " - ") term)*   term := [int "*"] factor ("*" factor)*
  // factor := int | name | "(" expr ")" | min(expr, expr) | max(expr, expr)
  ExprPtr index_expr() {
    const Token at = lx_.peek();
    std::vector<ExprPtr> args;  // the sum's: its constant first, then its terms
    bool one_factor = false;    // the sum is a single factor (it may be a side of // or %)
    ExprPtr first = signed_term(lx_.accept("-") ? -1 : 1, true, &one_factor);
    args.push_back(first);
    if (one_factor && (lx_.at_punct("//") || lx_.at_punct("%"))) {
      const sym::Kind k = lx_.next().text == "//" ? sym::Kind::FloorDiv : sym::Kind::Mod;
      return sym::detail::make(k, {first, factor()});
    }
    for (;;) {
      int sign;
      if (lx_.accept("+")) sign = 1;
      else if (lx_.accept("-")) sign = -1;
      else break;
      args.push_back(signed_term(sign, false, nullptr));
    }
    if (args.size() == 1) return args[0];
    if (args[0]->kind == sym::Kind::Const && sym::bound(args[0]).lo == 0) lx_.fail(at, "a sum's constant is not 0");
    return sym::detail::make(sym::Kind::Add, std::move(args));
  }

  // coeff*factor*...: a Mul whose first operand is the coefficient (make_term), or the
  // factor itself; a lone integer where a constant may stand.
  ExprPtr signed_term(int sign, bool constant_ok, bool* one_factor) {
    int64_t coeff = sign;
    std::vector<ExprPtr> factors;
    if (lx_.peek().kind == Token::Int) {
      const int64_t k = integer();
      if (!lx_.accept("*")) {
        if (!constant_ok) lx_.fail(lx_.peek(), "expected '*' after a term's coefficient");
        if (one_factor) *one_factor = true;
        return sym::constant(sign * k);
      }
      coeff = sign * k;
    }
    do factors.push_back(factor());
    while (lx_.accept("*"));
    if (one_factor) *one_factor = coeff == 1 && factors.size() == 1;
    const ExprPtr base = factors.size() == 1 ? factors[0] : sym::detail::make(sym::Kind::Mul, factors);
    return sym::detail::make_term(coeff, base);
  }

  ExprPtr factor() {
    const Token& t = lx_.peek();
    if (t.kind == Token::Int) return sym::constant(integer());
    if (lx_.accept("(")) {
      ExprPtr e = index_expr();
      lx_.expect(")");
      return e;
    }
    if (lx_.at_punct("-") && lx_.peek(1).kind == Token::Int) {  // a negative constant side of // or %
      lx_.next();
      return sym::constant(-integer());
    }
    Token name = ident("an index expression (integer, variable, size symbol or parenthesized)");
    if ((name.text == "min" || name.text == "max") && lx_.accept("(")) {
      ExprPtr a = index_expr();
      lx_.expect(",");
      ExprPtr b = index_expr();
      lx_.expect(")");
      return sym::detail::make(name.text == "min" ? sym::Kind::Min : sym::Kind::Max, {a, b});
    }
    if (ExprPtr v = var(name.text)) return v;
    return sym::symbol(name.text);
  }

  int64_t integer() {
    Token t = lx_.next();
    try {
      return std::stoll(t.text);
    } catch (const std::exception&) {
      lx_.fail(t, "integer out of range");
    }
  }

  SymShape dims() {
    SymShape s;
    lx_.expect("[");
    if (!lx_.accept("]")) {
      do s.push_back(size());
      while (lx_.accept(","));
      lx_.expect("]");
    }
    return s;
  }

  // An index variable of the node being read, or null (a size symbol).
  ExprPtr var(const std::string& name) const {
    auto it = vars_.find(name);
    return it == vars_.end() ? nullptr : it->second;
  }

  int buffer_ref() {
    Token t = ident("a buffer name");
    auto it = buffer_ids_.find(t.text);
    if (it == buffer_ids_.end()) lx_.fail(t, "unknown buffer '" + t.text + "'");
    return it->second;
  }

  // name: input N dtype[sizes] strides [..] [offset e]   (or constant / temp, without N)
  void buffer(const Token& name, const Token& kind) {
    if (!p_.nodes.empty()) lx_.fail(name, "buffers come before the nodes");
    Buffer b;
    b.name = name.text;
    b.kind = kind.text == "input" ? BufferKind::Input : kind.text == "constant" ? BufferKind::Constant : BufferKind::Temp;
    if (b.kind == BufferKind::Input) {
      Token n = lx_.next();
      if (n.kind != Token::Int) lx_.fail(n, "expected the input's index");
      b.input = std::stoi(n.text);
    }
    b.dtype = dtype();
    b.sizes = dims();
    keyword("strides");
    b.strides = dims();
    if (b.strides.size() != b.sizes.size()) lx_.fail(name, "buffer " + name.text + ": strides and sizes differ in rank");
    if (at_ident("offset")) {
      lx_.next();
      b.offset = size();
    }
    if (!buffer_ids_.emplace(b.name, int(p_.buffers.size())).second) lx_.fail(name, "buffer " + name.text + " is defined twice");
    p_.add_buffer(std::move(b));
  }

  // [i0 < 4, i1 < s0]: defines the variables for the node's bodies.
  void ranges(SymShape& ranges, std::vector<ExprPtr>& vars) {
    lx_.expect("[");
    if (lx_.accept("]")) return;
    do {
      Token v = ident("an index variable");
      lx_.expect("<");
      SymInt extent = size();
      ExprPtr e = sym::index(v.text, extent.as_expr());
      if (!vars_.emplace(v.text, e).second) lx_.fail(v, "index variable " + v.text + " is defined twice");
      ranges.push_back(extent);
      vars.push_back(e);
    } while (lx_.accept(","));
    lx_.expect("]");
  }

  std::vector<int> outputs(Node& n) {
    std::vector<int> outs;
    if (!lx_.accept("->")) return outs;
    do {
      const int b = buffer_ref();
      Buffer& buf = p_.buffers[size_t(b)];
      if (buf.kind != BufferKind::Temp) lx_.fail(lx_.peek(), "node " + n.name + " writes " + buf.name + ", which is not a temp");
      if (buf.producer >= 0) lx_.fail(lx_.peek(), "buffer " + buf.name + " is written twice");
      buf.producer = int(p_.nodes.size());
      outs.push_back(b);
    } while (lx_.accept(","));
    return outs;
  }

  void node(const Token& name, const Token& kind) {
    Node n;
    n.name = name.text;
    vars_.clear();
    values_.clear();
    if (kind.text == "pointwise") n.kind = NodeKind::Pointwise;
    else if (kind.text == "reduction") n.kind = NodeKind::Reduction;
    else if (kind.text == "scan") n.kind = NodeKind::Scan;
    else if (kind.text == "extern") n.kind = NodeKind::Extern;
    else lx_.fail(kind, "unknown buffer or node kind '" + kind.text + "'");
    n.outputs = outputs(n);
    if (n.kind == NodeKind::Extern) {
      lx_.expect("=");
      Token op = ident("the extern's op");
      if (!ops::find_op(op.text)) lx_.fail(op, "unknown op '" + op.text + "'");
      n.extern_op = op.text;
      lx_.expect("(");
      if (!lx_.accept(")")) {
        do n.inputs.push_back(buffer_ref());
        while (lx_.accept(","));
        lx_.expect(")");
      }
    } else {
      keyword("over");
      ranges(n.ranges, n.vars);
      if (n.kind == NodeKind::Reduction) {
        Token r = ident("a reduction (sum, prod, max, min, argmax, argmin)");
        n.reduce = reduce_kind(r);
        keyword("over");
        ranges(n.reduction_ranges, n.reduction_vars);
      }
      if (n.kind == NodeKind::Scan) scan(n);
    }
    if (lx_.peek().kind == Token::Origin) origins(lx_.next(), n.origins);
    if (n.kind != NodeKind::Extern) body(n);
    p_.nodes.push_back(std::move(n));
  }

  // "cumsum along i1" (cummax / cummin: "-> values, positions ... cummax along i1")
  void scan(Node& n) {
    Token k = ident("a scan (cumsum, cumprod, cummax, cummin)");
    bool known = false;
    for (tile::ScanKind s : {tile::ScanKind::Cumsum, tile::ScanKind::Cumprod, tile::ScanKind::Cummax, tile::ScanKind::Cummin})
      if (k.text == tile::scan_name(s)) n.scan = s, known = true;
    if (!known) lx_.fail(k, "unknown scan '" + k.text + "' (cumsum, cumprod, cummax, cummin)");
    keyword("along");
    Token v = ident("the scanned index variable");
    const ExprPtr e = var(v.text);
    const auto at = std::find(n.vars.begin(), n.vars.end(), e);
    if (!e || at == n.vars.end()) lx_.fail(v, "a scan runs along one of its node's variables, not '" + v.text + "'");
    n.scan_axis = int(at - n.vars.begin());
  }

  static bool is_reduce_name(const std::string& s) {
    for (int k = 0; k <= int(tile::ReduceKind::Argmin); ++k)
      if (s == tile::reduce_name(tile::ReduceKind(k))) return true;
    return false;
  }

  tile::ReduceKind reduce_kind(const Token& t) {
    for (int k = 0; k <= int(tile::ReduceKind::Argmin); ++k)
      if (t.text == tile::reduce_name(tile::ReduceKind(k))) return tile::ReduceKind(k);
    lx_.fail(t, "unknown reduction '" + t.text + "'");
  }

  // "exp, sum @ model.py:3, ...": origin_str's, comma-separated.
  void origins(const Token& t, std::vector<graph::Origin>& out) {
    size_t start = 0;
    while (start <= t.text.size()) {
      size_t comma = t.text.find(", ", start);
      Token one = t;
      one.text = t.text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      out.push_back(graph::read_origin(lx_, one));
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
  }

  // The value lines (tN: dtype = rhs) and stores of a node, up to the next header.
  void body(Node& n) {
    std::vector<std::optional<tile::ReduceKind>> stages;  // per store
    for (;;) {
      const Token& t = lx_.peek();
      if (t.kind != Token::Ident || lx_.at_line_start() == false) break;
      if (t.text == "store") {
        lx_.next();
        int out = n.outputs.size() == 1 ? n.outputs[0] : -1;
        if (n.outputs.size() > 1) {
          Token b = lx_.peek();
          out = buffer_ref();
          if (std::find(n.outputs.begin(), n.outputs.end(), out) == n.outputs.end())
            lx_.fail(b, "node " + n.name + " stores " + b.text + ", which it does not write");
        }
        if (out < 0) lx_.fail(t, "node " + n.name + " stores but writes no buffer");
        const size_t i = size_t(std::find(n.outputs.begin(), n.outputs.end(), out) - n.outputs.begin());
        if (n.bodies.size() != i) lx_.fail(t, "node " + n.name + ": stores come in the order of its outputs");
        // A row group's stage names its reduction ("store buf2 sum t3"); an epilogue names none.
        std::optional<tile::ReduceKind> stage;
        if (n.kind == NodeKind::Reduction && lx_.peek().kind == Token::Ident && is_reduce_name(lx_.peek().text))
          stage = reduce_kind(lx_.next());
        stages.push_back(stage);
        n.bodies.push_back(operand(p_.buffers[size_t(out)].dtype));
        continue;
      }
      // "tN: <dtype> =" starts a value; anything else (a header "name: <kind> ...") the next node.
      DType d;
      if (!(lx_.peek(1).kind == Token::Punct && lx_.peek(1).text == ":" && lx_.peek(2).kind == Token::Ident &&
            graph::dtype_from_short(lx_.peek(2).text, &d)))
        break;
      value_line();
    }
    if (n.bodies.size() != n.outputs.size()) lx_.fail(lx_.peek(), "node " + n.name + " stores " + std::to_string(n.bodies.size()) +
                                                                        " values into " + std::to_string(n.outputs.size()) + " buffers");
    // A reduction storing more than one body, or naming a stage, is a row group (Node::stages).
    const bool named = std::any_of(stages.begin(), stages.end(), [](const auto& s) { return s.has_value(); });
    if (n.kind == NodeKind::Reduction && (named || n.outputs.size() > 1)) n.stages = stages;
  }

  // tN: dtype = load buf[e] [if mask] | index e | cast x | check op ok, i, n | op[rounding] x, y, ...
  void value_line() {
    Token name = lx_.next();
    lx_.expect(":");
    const DType d = dtype();
    lx_.expect("=");
    Token what = ident("load, index, cast or a prim");
    const Value* v = nullptr;
    if (what.text == "load") {
      Value lv;
      lv.kind = ValueKind::Load;
      lv.dtype = d;
      lv.args = gather_vars(d);
      lv.buffer = buffer_ref();
      lx_.expect("[");
      lv.index = index_expr();
      lx_.expect("]");
      if (p_.buffers[size_t(lv.buffer)].dtype != d) lx_.fail(what, "a load's dtype is its buffer's");
      end_gather_vars(lv.args.size());
      if (lx_.peek().kind == Token::Ident && lx_.peek().text == "if") {  // a masked load: "if tN"
        lx_.next();
        lv.args.push_back(named(lx_.next()));
        if (lv.args.back()->dtype != kBool) lx_.fail(what, "a load's mask is a bool value");
        lv.masked = true;
      }
      v = p_.make(std::move(lv));
    } else if (what.text == "index") {
      Value iv;
      iv.kind = ValueKind::Index;
      iv.dtype = d;
      iv.args = gather_vars(d);
      iv.index = index_expr();
      end_gather_vars(iv.args.size());
      v = p_.make(std::move(iv));
    } else if (what.text == "check") {  // check <op> ok, index, size
      Token op = ident("the op whose index it checks");
      const ops::OpInfo* info = ops::find_op(op.text);
      if (!info) lx_.fail(op, "unknown op '" + op.text + "'");
      Value cv;
      cv.kind = ValueKind::Check;
      cv.dtype = d;
      cv.op = info->id;
      cv.args.push_back(operand(kBool));
      for (int k = 0; k < 2; ++k) {
        lx_.expect(",");
        cv.args.push_back(operand(kInt64));
      }
      v = p_.make(std::move(cv));
    } else if (what.text == "cast") {
      Value cv;
      cv.kind = ValueKind::Cast;
      cv.dtype = d;
      cv.args = {operand(d)};  // (a cast of a constant folds: never printed)
      v = p_.make(std::move(cv));
    } else {
      const ops::OpInfo* info = ops::find_op(what.text);
      if (!info) lx_.fail(what, "unknown prim '" + what.text + "'");
      tile::Rounding r = tile::Rounding::None;
      if (lx_.accept("[")) {
        Token m = ident("a rounding mode (trunc, floor)");
        if (m.text != "trunc" && m.text != "floor") lx_.fail(m, "expected a rounding mode (trunc, floor)");
        r = m.text == "trunc" ? tile::Rounding::Trunc : tile::Rounding::Floor;
        lx_.expect("]");
      }
      // Operands first as tokens: a constant's implied dtype depends on the others.
      std::vector<const Value*> args;
      std::vector<std::pair<size_t, Token>> constants;  // (position, its first token)
      std::vector<kiln::Scalar> numbers;
      std::vector<int> explicit_dtype;  // -1: implied
      do {
        const Token& t = lx_.peek();
        if (t.kind == Token::Ident && t.text != "True" && t.text != "False" && t.text != "inf" && t.text != "nan") {
          args.push_back(named(lx_.next()));
        } else {
          constants.emplace_back(args.size(), t);
          numbers.push_back(number());
          explicit_dtype.push_back(lx_.accept(":") ? int(dtype()) : -1);
          args.push_back(nullptr);
        }
      } while (lx_.accept(","));
      Value cv;
      cv.kind = ValueKind::Call;
      cv.dtype = d;
      cv.op = info->id;
      cv.rounding = r;
      cv.args = args;
      for (size_t c = 0; c < constants.size(); ++c) {
        const size_t at = constants[c].first;
        const DType cd = explicit_dtype[c] >= 0 ? DType(explicit_dtype[c]) : implied_constant_dtype(&cv, int(at), d);
        cv.args[at] = p_.constant(numbers[c], cd);
      }
      v = p_.make(std::move(cv));
    }
    if (!values_.emplace(name.text, v).second) lx_.fail(name, "value " + name.text + " is defined twice");
  }

  // A value name or an inline constant ("2.", "-3", "True", "inf", "0.5:f64").
  // An indirect load's "(g0 < extent = t3, ...)": defines g0, ... for its index expression and
  // returns their values (the load's args). None: a plain load.
  std::vector<const Value*> gather_vars(DType implied) {
    std::vector<const Value*> args;
    // ("(" alone may open an index expression: a gather variable's name and "<" follow it here)
    if (!lx_.at_punct("(") || lx_.peek(1).kind != Token::Ident || lx_.peek(2).kind != Token::Punct || lx_.peek(2).text != "<")
      return args;
    lx_.next();
    do {
      Token v = ident("a gather variable");
      lx_.expect("<");
      const ExprPtr e = gather_var(args.size(), size().as_expr());
      if (v.text != e->name) lx_.fail(v, "expected gather variable " + e->name);
      lx_.expect("=");
      args.push_back(operand(implied));
      vars_[e->name] = e;
    } while (lx_.accept(","));
    lx_.expect(")");
    return args;
  }
  void end_gather_vars(size_t n) {
    for (size_t k = 0; k < n; ++k) vars_.erase("g" + std::to_string(k));
  }

  const Value* operand(DType implied) {
    const Token& t = lx_.peek();
    if (t.kind == Token::Ident && t.text != "True" && t.text != "False" && t.text != "inf" && t.text != "nan")
      return named(lx_.next());
    kiln::Scalar x = number();
    const DType d = lx_.accept(":") ? dtype() : implied;
    return p_.constant(x, d);
  }

  const Value* named(const Token& t) {
    auto it = values_.find(t.text);
    if (it == values_.end()) lx_.fail(t, "use of undefined value " + t.text);
    return it->second;
  }

  kiln::Scalar number() {
    const Token& t = lx_.peek();
    if (t.kind == Token::Ident && (t.text == "True" || t.text == "False")) return kiln::Scalar(lx_.next().text == "True");
    const Token& digits = lx_.at_punct("-") ? lx_.peek(1) : t;
    if (digits.kind == Token::Int) {
      const bool neg = lx_.accept("-");
      Token n = lx_.next();
      try {
        // (the most negative i64 prints as -9223372036854775808: its digits overflow stoll)
        if (neg && n.text == "9223372036854775808") return kiln::Scalar(std::numeric_limits<int64_t>::min());
        const int64_t v = std::stoll(n.text);
        return kiln::Scalar(neg ? -v : v);
      } catch (const std::exception&) {
        lx_.fail(n, "integer out of range");
      }
    }
    return kiln::Scalar(graph::read_float(lx_));
  }

  Lexer lx_;
  Program p_;
  std::map<std::string, int> buffer_ids_;
  std::map<std::string, ExprPtr> vars_;           // the current node's index variables
  std::map<std::string, const Value*> values_;    // the current node's values
};

}  // namespace

Program parse(const std::string& text) { return Parser(text).run(); }

}  // namespace kiln::inductor
