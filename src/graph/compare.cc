// Structural equality of two graphs: values are matched by position, names are ignored.
#include <unordered_map>

#include "graph/graph.h"
#include "graph/literal.h"
#include "graph/schema.h"

namespace kiln::graph {
namespace {

struct Matcher {
  std::unordered_map<const Value*, const Value*> map;  // a's value -> b's value

  bool same_value(const Value* x, const Value* y) const {
    if (!x || !y) return x == y;
    auto it = map.find(x);
    return it != map.end() && it->second == y;
  }

  bool same_arg(const NodeArg& x, const NodeArg& y) const {
    if (x.index() != y.index()) return false;
    if (auto* v = std::get_if<Value*>(&x)) return same_value(*v, std::get<Value*>(y));
    if (auto* l = std::get_if<ValueList>(&x)) {
      const ValueList& m = std::get<ValueList>(y);
      if (l->size() != m.size()) return false;
      for (size_t i = 0; i < l->size(); ++i)
        if (!same_value((*l)[i], m[i])) return false;
      return true;
    }
    return arg_equal(x, y);
  }

  bool same_node(const Node& x, const Node& y) {
    if (x.kind != y.kind || x.outputs.size() != y.outputs.size()) return false;
    if (x.kind == NodeKind::Constant) {
      if (x.wrapped != y.wrapped || x.literal.dtype() != y.literal.dtype()) return false;
      const auto ex = literal_elements(x.literal), ey = literal_elements(y.literal);
      if (ex.size() != ey.size()) return false;
      for (size_t i = 0; i < ex.size(); ++i)
        if (!arg_equal(NodeArg(ex[i]), NodeArg(ey[i]))) return false;
    } else {
      if (x.op != y.op || x.args.size() != y.args.size()) return false;
      for (size_t i = 0; i < x.args.size(); ++i)
        if (!same_arg(x.args[i], y.args[i])) return false;
    }
    for (size_t i = 0; i < x.outputs.size(); ++i) {
      if (!same_spec(x.outputs[i]->spec, y.outputs[i]->spec)) return false;
      map[x.outputs[i]] = y.outputs[i];
    }
    return true;
  }
};

}  // namespace

bool structurally_equal(const Graph& a, const Graph& b) {
  if (a.inputs().size() != b.inputs().size() || a.nodes().size() != b.nodes().size() ||
      a.outputs().size() != b.outputs().size())
    return false;
  Matcher m;
  for (size_t i = 0; i < a.inputs().size(); ++i) {
    if (!same_spec(a.inputs()[i]->spec, b.inputs()[i]->spec)) return false;
    m.map[a.inputs()[i]] = b.inputs()[i];
  }
  for (auto x = a.nodes().begin(), y = b.nodes().begin(); x != a.nodes().end(); ++x, ++y)
    if (!m.same_node(**x, **y)) return false;
  for (size_t i = 0; i < a.outputs().size(); ++i)
    if (!m.same_value(a.outputs()[i], b.outputs()[i])) return false;
  return true;
}

}  // namespace kiln::graph
