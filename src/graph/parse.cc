// Reads the text form printed by print.cc. Errors are kiln::Error "line:col: message".
#include <charconv>
#include <unordered_map>

#include "graph/graph.h"
#include "graph/literal.h"
#include "graph/reader.h"

namespace kiln::graph {
namespace {

SchemaArg simple_arg(const char* name, ArgBase base) {
  SchemaArg a;
  a.name = name;
  a.base = base;
  return a;
}

class Parser {
 public:
  Parser(const std::string& text, int64_t hint) : lx_(text), hint_(hint) {}

  Graph run() {
    Token kw = lx_.next();
    if (kw.kind != Token::Ident || kw.text != "graph") lx_.fail(kw, "expected 'graph('");
    lx_.expect("(");
    if (!lx_.at_punct(")")) {
      do {
        Token r = ref_token();
        lx_.expect(":");
        define(r, g_.add_input(type()));
      } while (lx_.accept(","));
    }
    lx_.expect(")");
    lx_.expect(":");
    for (;;) {
      const Token& t = lx_.peek();
      if (t.kind == Token::Ident && t.text == "return") break;
      if (t.kind == Token::End) lx_.fail(t, "expected 'return (...)' at the end of the graph");
      node();
    }
    lx_.next();
    lx_.expect("(");
    std::vector<Value*> outs;
    if (!lx_.at_punct(")")) {
      do outs.push_back(lookup(ref_token()));
      while (lx_.accept(","));
    }
    lx_.expect(")");
    if (lx_.peek().kind != Token::End) lx_.fail(lx_.peek(), "expected the end of the graph after return");
    g_.set_outputs(std::move(outs));
    return std::move(g_);
  }

 private:
  Token ref_token() {
    Token r = lx_.next();
    if (r.kind != Token::Ref) lx_.fail(r, "expected a value (%name)");
    return r;
  }

  static bool numbered(const std::string& n) { return n.find_first_not_of("0123456789") == std::string::npos; }

  void define(const Token& r, Value* v) {
    if (!values_.emplace(r.text, v).second) lx_.fail(r, "value %" + r.text + " is defined twice");
    if (!numbered(r.text)) g_.rename(v, r.text);
  }

  Value* lookup(const Token& r) {
    auto it = values_.find(r.text);
    if (it == values_.end()) lx_.fail(r, "use of undefined value %" + r.text);
    return it->second;
  }

  SymShape sizes() {
    SymShape s;
    lx_.expect("[");
    if (!lx_.accept("]")) {
      do s.push_back(read_symint(lx_, hint_));
      while (lx_.accept(","));
      lx_.expect("]");
    }
    return s;
  }

  TensorSpec type() {
    Token d = lx_.next();
    TensorSpec spec;
    if (d.kind != Token::Ident || !dtype_from_short(d.text, &spec.dtype)) lx_.fail(d, "expected a dtype (f32, i64, ...)");
    spec.sizes = sizes();
    if (lx_.accept("{")) {
      do {
        Token key = lx_.next();
        lx_.expect("=");
        if (key.text == "strides") {
          spec.strides = sizes();
        } else if (key.text == "offset") {
          spec.offset = read_symint(lx_, hint_);
        } else if (key.text == "device") {
          Token s = lx_.next();
          if (s.kind != Token::Str) lx_.fail(s, "expected a device string");
          spec.device = Device(s.text);
        } else {
          lx_.fail(key, "unknown tensor attribute (strides, offset, device)");
        }
      } while (lx_.accept(","));
      lx_.expect("}");
    }
    if (!spec.strides.empty() && spec.strides.size() != spec.sizes.size()) lx_.fail(d, "strides and sizes differ in rank");
    return spec;
  }

  void node() {
    std::vector<std::pair<Token, TensorSpec>> defs;
    if (lx_.accept("(")) {
      lx_.expect(")");  // a node without outputs
    } else {
      do {
        Token r = ref_token();
        lx_.expect(":");
        defs.emplace_back(r, type());
      } while (lx_.accept(","));
    }
    lx_.expect("=");
    Token op = lx_.next();
    if (op.kind != Token::Ident) lx_.fail(op, "expected an op name");
    std::vector<Value*> outs;
    if (op.text == "constant") {
      if (defs.size() != 1) lx_.fail(op, "a constant has exactly one output");
      outs.push_back(constant(op, defs[0].second));
    } else {
      const ops::OpInfo* info = ops::find_op(op.text);
      if (!info) lx_.fail(op, "unknown op '" + op.text + "'");
      std::vector<TensorSpec> specs;
      for (auto& d : defs) specs.push_back(d.second);
      outs = g_.add_node(info->id, call_args(op, info->id), std::move(specs))->outputs;
    }
    for (size_t i = 0; i < defs.size(); ++i) define(defs[i].first, outs[i]);
    if (lx_.peek().kind == Token::Origin) {
      Node* n = outs.empty() ? last_node() : outs[0]->producer;
      n->origin = read_origin(lx_, lx_.next());
    }
  }

  Node* last_node() const { return g_.nodes().back(); }

  std::vector<NodeArg> call_args(const Token& op, ops::OpId id) {
    const Schema& sc = schema_of(id);
    std::vector<std::optional<NodeArg>> args(sc.args.size());
    RefLookup look = [&](const Token& t) { return lookup(t); };
    lx_.expect("(");
    size_t pos = 0;
    bool keyword = false;
    if (!lx_.at_punct(")")) {
      do {
        size_t i = pos;
        if (lx_.peek().kind == Token::Ident && lx_.peek(1).kind == Token::Punct && lx_.peek(1).text == "=") {
          Token name = lx_.next();
          lx_.next();
          keyword = true;
          for (i = 0; i < sc.args.size() && sc.args[i].name != name.text; ++i) {}
          if (i == sc.args.size()) lx_.fail(name, op.text + " has no argument '" + name.text + "'");
          if (args[i]) lx_.fail(name, "argument '" + name.text + "' given twice");
        } else {
          if (keyword) lx_.fail(lx_.peek(), "positional argument after a keyword argument");
          if (pos >= sc.args.size()) lx_.fail(lx_.peek(), detail::cat(op.text, " takes ", sc.args.size(), " arguments"));
          ++pos;
        }
        args[i] = read_arg(lx_, sc.args[i], look, hint_);
      } while (lx_.accept(","));
    }
    lx_.expect(")");
    std::vector<NodeArg> out;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i] && !sc.args[i].default_value) lx_.fail(op, op.text + ": missing argument '" + sc.args[i].name + "'");
      out.push_back(args[i] ? *args[i] : *sc.args[i].default_value);
    }
    return out;
  }

  Scalar element() {
    const Token& t = lx_.peek();
    if (t.kind == Token::Ident && (t.text == "True" || t.text == "False")) return Scalar(lx_.next().text == "True");
    const Token& num = lx_.at_punct("-") ? lx_.peek(1) : t;
    if (num.kind == Token::Int) return std::get<int64_t>(read_arg(lx_, simple_arg("element", ArgBase::Int), nullptr, 0));
    return Scalar(read_float(lx_));
  }

  Value* constant(const Token& op, const TensorSpec& spec) {
    lx_.expect("(");
    std::vector<Scalar> el;
    if (lx_.accept("[")) {
      if (!lx_.at_punct("]")) {
        do el.push_back(element());
        while (lx_.accept(","));
      }
      lx_.expect("]");
    } else {
      el.push_back(element());
    }
    bool wrapped = false;
    if (lx_.accept(",")) {
      Token k = lx_.next();
      if (k.text != "wrapped") lx_.fail(k, "expected 'wrapped=True'");
      lx_.expect("=");
      wrapped = std::get<bool>(read_arg(lx_, simple_arg("wrapped", ArgBase::Bool), nullptr, 0));
    }
    lx_.expect(")");
    Shape sizes;
    for (const SymInt& s : spec.sizes) {
      if (s.is_symbolic()) lx_.fail(op, "a constant needs concrete sizes");
      sizes.push_back(s.hint());
    }
    if (!spec.device.is_cpu() || !is_contiguous_spec(spec) || spec.offset.hint() != 0)
      lx_.fail(op, "a constant is a contiguous CPU tensor");
    try {
      return g_.add_constant(literal_tensor(sizes, spec.dtype, el), wrapped);
    } catch (const Error& e) {
      lx_.fail(op, e.message());
    }
  }

  Lexer lx_;
  int64_t hint_;
  Graph g_;
  std::unordered_map<std::string, Value*> values_;
};

}  // namespace

Graph parse(const std::string& text, int64_t symbol_hint) { return Parser(text, symbol_hint).run(); }

}  // namespace kiln::graph
