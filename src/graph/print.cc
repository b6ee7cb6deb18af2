// The text form of a graph (docs/graph-ir.md). Unnamed values are numbered in definition order,
// so printing is canonical: equal graphs print equal text.
#include <charconv>
#include <cmath>
#include <unordered_map>

#include "graph/graph.h"
#include "graph/literal.h"
#include "graph/reader.h"

namespace kiln::graph {
namespace {

std::string syms(const SymShape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + s[i].str();
  return r + "]";
}

class Printer {
 public:
  Printer(const Graph& g, const PrintOptions& o) : g_(g), options_(o) {}

  std::string run() {
    std::string s = "graph(";
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      const Value* v = g_.inputs()[i];
      s += (i ? ", " : "") + define(v) + ": " + type(v->spec);
    }
    s += "):\n";
    for (const auto& n : g_.nodes()) s += "  " + node(*n) + "\n";
    s += "  return (";
    for (size_t i = 0; i < g_.outputs().size(); ++i) s += (i ? ", " : "") + ref(g_.outputs()[i]);
    return s + ")\n";
  }

 private:
  std::string define(const Value* v) {
    names_[v] = v->name.empty() ? std::to_string(counter_++) : v->name;
    return ref(v);
  }
  std::string ref(const Value* v) const {
    auto it = names_.find(v);
    return "%" + (it == names_.end() ? "<undefined:" + std::to_string(v->id) + ">" : it->second);
  }

  static std::string type(const TensorSpec& spec) { return spec_str(spec); }

  template <class L, class F>
  static std::string list(const L& l, F each) {
    std::string r = "[";
    for (size_t i = 0; i < l.size(); ++i) r += (i ? ", " : "") + each(l[i]);
    return r + "]";
  }

  std::string arg(const NodeArg& a) const {
    struct {
      const Printer* p;
      std::string operator()(std::monostate) const { return "None"; }
      std::string operator()(Value* v) const { return p->ref(v); }
      std::string operator()(const ValueList& l) const {
        return list(l, [&](Value* v) { return v ? p->ref(v) : std::string("None"); });
      }
      std::string operator()(const Scalar& s) const { return format_scalar(s); }
      std::string operator()(int64_t i) const { return std::to_string(i); }
      std::string operator()(double d) const { return format_float(d); }
      std::string operator()(bool b) const { return b ? "True" : "False"; }
      std::string operator()(const std::vector<int64_t>& l) const {
        return list(l, [](int64_t i) { return std::to_string(i); });
      }
      std::string operator()(const SymInt& s) const { return s.str(); }
      std::string operator()(const SymShape& s) const { return syms(s); }
      std::string operator()(DType t) const { return short_name(t); }
      std::string operator()(const Device& d) const { return format_string(d.str()); }
      std::string operator()(const std::string& s) const { return format_string(s); }
      std::string operator()(const std::vector<double>& l) const { return list(l, format_float); }
    } visitor{this};
    return std::visit(visitor, a);
  }

  static std::string element(const Scalar& s, DType t) {
    if (!s.is_float() || t == kFloat64) return format_scalar(s);
    // Narrow floats print as their shortest float text (0.1, not 0.10000000149011612).
    const float f = float(s.to_double());
    if (!std::isfinite(f)) return format_float(f);
    char buf[32];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, f);
    std::string r(buf, p);
    return r.find_first_of(".e") == std::string::npos ? r + ".0" : r;
  }

  std::string constant(const Node& n) const {
    const std::vector<Scalar> el = literal_elements(n.literal);
    const DType t = n.literal.dtype();
    std::string s = n.literal.dim() == 0 ? element(el.at(0), t) : list(el, [&](const Scalar& x) { return element(x, t); });
    return "constant(" + s + (n.wrapped ? ", wrapped=True" : "") + ")";
  }

  std::string call(const Node& n) const {
    const Schema& sc = schema_of(n.op);
    std::vector<std::string> parts;
    bool keyword = false;
    for (size_t i = 0; i < n.args.size(); ++i) {
      const SchemaArg* s = i < sc.args.size() ? &sc.args[i] : nullptr;
      if (s && s->default_value) {
        keyword = true;
        if (arg_equal(n.args[i], *s->default_value)) continue;
      }
      parts.push_back((keyword && s ? s->name + "=" : "") + arg(n.args[i]));
    }
    std::string r = std::string(ops::op_info(n.op).name) + "(";
    for (size_t i = 0; i < parts.size(); ++i) r += (i ? ", " : "") + parts[i];
    return r + ")";
  }

  std::string node(const Node& n) {
    std::string rhs = n.kind == NodeKind::Constant ? constant(n) : call(n);
    std::string lhs;
    for (size_t i = 0; i < n.outputs.size(); ++i) lhs += (i ? ", " : "") + define(n.outputs[i]) + ": " + type(n.outputs[i]->spec);
    std::string s = (lhs.empty() ? "()" : lhs) + " = " + rhs;
    if (options_.origins && n.origin.known()) s += "  # " + origin_str(n.origin);
    return s;
  }

  const Graph& g_;
  const PrintOptions& options_;
  std::unordered_map<const Value*, std::string> names_;
  int counter_ = 0;
};

}  // namespace

std::string spec_str(const TensorSpec& spec) {
  std::string s = std::string(short_name(spec.dtype)) + syms(spec.sizes);
  std::vector<std::string> attrs;
  if (!is_contiguous_spec(spec)) attrs.push_back("strides=" + syms(normalized(spec).strides));
  if (spec.offset.is_symbolic() || spec.offset.hint() != 0) attrs.push_back("offset=" + spec.offset.str());
  if (!spec.device.is_cpu()) attrs.push_back("device=" + format_string(spec.device.str()));
  if (attrs.empty()) return s;
  s += "{";
  for (size_t i = 0; i < attrs.size(); ++i) s += (i ? ", " : "") + attrs[i];
  return s + "}";
}

std::string origin_str(const Origin& o) {
  std::string s = ops::op_info(o.op).name;
  if (o.backward) s += " backward";
  if (o.file) s += detail::cat(" @ ", o.file, ":", o.line);
  return s;
}

std::string print(const Graph& g, const PrintOptions& options) {
  ops::SuspendDispatchMode eager;  // constants are read with eager ops, never recorded
  return Printer(g, options).run();
}

}  // namespace kiln::graph
