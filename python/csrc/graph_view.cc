// The captured graph, readable from Python (kiln.onnx builds its ModelProto from it).
//
// kiln.onnx compiles the model with the backend "_graph_view" and calls it once on the example
// inputs inside _C._graph_view(call): the engine traces it as kiln.compile does (guards, the
// Python-value recorder, graph breaks: fullgraph), and the backend hands the graph and the real
// tensors of its first run to a _CapturedGraph. Its view() decomposes the graph to prims
// (keeping whole the composites in `keep`, which the exporter maps directly), functionalizes it
// (value semantics, as ONNX has) and returns it as Python objects: inputs with their bound
// tensors (named after `named`, the module's state_dict), nodes (op, arguments by schema name,
// outputs, origin), outputs. Without a capture waiting, the backend is the eager interpreter.
#include <kiln/compile.h>

#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include <unordered_map>
#include <unordered_set>

#include "aot/aot.h"
#include "bind.h"
#include "core/tensor_impl.h"
#include "graph/graph.h"
#include "ops/schema.h"
#include "sym/expr.h"

namespace kiln::py {
namespace {

// What the backend hands over: the graph and the inputs of its first run (args, then lifted).
struct Captured {
  std::shared_ptr<const graph::Graph> graph;
  std::vector<Tensor> inputs;
  bool ran = false;
};
thread_local Captured* g_sink = nullptr;  // set while _graph_view runs its call

CompiledGraph view_backend(std::shared_ptr<const graph::Graph> g) {
  if (g_sink && !g_sink->graph) g_sink->graph = g;  // (a second graph of the same call is not the view's)
  return [g](const std::vector<Tensor>& inputs) {
    if (g_sink && g_sink->graph == g && !g_sink->ran) g_sink->inputs = inputs, g_sink->ran = true;
    return graph::interpret(*g, inputs);
  };
}

// One value of the view's graph.
struct PyValue {
  int id = 0;
  std::string name;
  nb::tuple shape;  // ints, and symbolic sizes as expressions (sym_expr)
  nb::object dtype;
  std::string type;  // as the IR prints it: f32[s0, 8]
};

// A symbolic size as a tuple: ("sym", "s0"), ("add", a, b, ...), ("mul", a, b, ...),
// ("floordiv", a, b), ("mod", a, b), ("min", a, b), ("max", a, b); constants are ints.
nb::object sym_expr(const sym::ExprPtr& e) {
  static const char* names[] = {"const", "sym", "add", "mul", "floordiv", "mod", "min", "max"};
  if (e->kind == sym::Kind::Const) return nb::int_(e->value);
  nb::list l;
  l.append(names[int(e->kind)]);
  if (e->kind == sym::Kind::Symbol) l.append(e->name);
  for (const sym::ExprPtr& a : e->args) l.append(sym_expr(a));
  return nb::tuple(l);
}
nb::object sym_int(const SymInt& s) { return s.is_symbolic() ? sym_expr(s.expr()) : nb::int_(s.hint()); }
nb::tuple sym_shape(const SymShape& s) {
  nb::list l;
  for (const SymInt& d : s) l.append(sym_int(d));
  return nb::tuple(l);
}

nb::object arg_to_py(const graph::NodeArg& a, const std::function<nb::object(const graph::Value*)>& value) {
  return std::visit([&](const auto& v) -> nb::object {
    using V = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<V, std::monostate>) return nb::none();
    else if constexpr (std::is_same_v<V, graph::Value*>) return value(v);
    else if constexpr (std::is_same_v<V, graph::ValueList>) {
      nb::list l;
      for (const graph::Value* e : v) l.append(e ? value(e) : nb::none());
      return l;
    } else if constexpr (std::is_same_v<V, Scalar>) return scalar_to_py(v);
    else if constexpr (std::is_same_v<V, SymInt>) return sym_int(v);
    else if constexpr (std::is_same_v<V, SymShape>) return nb::list(sym_shape(v));
    else if constexpr (std::is_same_v<V, DType>) return dtype_object(v);
    else if constexpr (std::is_same_v<V, Device>) return nb::str(v.str().c_str());
    else if constexpr (std::is_same_v<V, std::vector<int64_t>> || std::is_same_v<V, std::vector<double>>) {
      nb::list l;
      for (auto x : v) l.append(x);
      return l;
    } else return nb::cast(v);  // int64_t, double, bool, std::string
  }, a);
}

// The view of g as a dict: inputs [{value, tensor, name}], nodes [{op, args, outputs, literal,
// wrapped, origin, file, line}], outputs [value].
nb::dict view_dict(const graph::Graph& g, const std::vector<Tensor>& bound,
                   const std::unordered_map<const void*, std::string>& names) {
  std::unordered_map<const graph::Value*, nb::object> values;
  auto value = [&](const graph::Value* v) -> nb::object {
    auto it = values.find(v);
    if (it != values.end()) return it->second;
    PyValue pv{v->id, v->name, sym_shape(v->spec.sizes), dtype_object(v->spec.dtype), graph::spec_str(v->spec)};
    return values[v] = nb::cast(std::move(pv));
  };
  nb::list inputs, nodes, outputs;
  for (size_t i = 0; i < g.inputs().size(); i++) {
    nb::dict d;
    d["value"] = value(g.inputs()[i]);
    nb::object t = nb::none(), name = nb::none();
    if (i < bound.size() && bound[i].defined()) {
      t = nb::cast(bound[i]);
      auto it = names.find(bound[i].impl());
      if (it != names.end()) name = nb::str(it->second.c_str());
    }
    d["tensor"] = t;
    d["name"] = name;
    inputs.append(d);
  }
  for (const graph::Node* n : g.nodes()) {
    nb::dict d;
    d["op"] = n->name();
    nb::list args;
    if (n->kind == graph::NodeKind::Call) {
      const ops::Schema& s = ops::op_schema(n->op);
      for (size_t k = 0; k < n->args.size(); k++)
        args.append(nb::make_tuple(k < s.args.size() ? s.args[k].name : std::to_string(k), arg_to_py(n->args[k], value)));
    }
    d["args"] = args;
    nb::list outs;
    for (const graph::Value* v : n->outputs) outs.append(value(v));
    d["outputs"] = outs;
    d["literal"] = n->kind == graph::NodeKind::Constant ? nb::cast(n->literal) : nb::none();
    d["wrapped"] = n->wrapped;
    graph::Origin o = graph::origin_of(*n);
    d["origin"] = o.known() ? nb::object(nb::str(ops::op_info(o.op).name)) : nb::none();
    d["file"] = o.file ? nb::object(nb::str(o.file)) : nb::none();
    d["line"] = o.line;
    nodes.append(d);
  }
  for (const graph::Value* v : g.outputs()) outputs.append(value(v));
  nb::dict r;
  r["inputs"] = inputs;
  r["nodes"] = nodes;
  r["outputs"] = outputs;
  r["text"] = graph::print(g, {.origins = true});
  return r;
}

}  // namespace

void bind_graph_view(nb::module_& m) {
  nb::class_<PyValue>(m, "_GraphValue", "A value of a graph seen from Python (kiln._C._graph_view).")
      .def_ro("id", &PyValue::id)
      .def_ro("name", &PyValue::name)
      .def_ro("shape", &PyValue::shape)
      .def_ro("dtype", &PyValue::dtype)
      .def_ro("type", &PyValue::type)
      .def("__repr__", [](const PyValue& v) { return "%" + (v.name.empty() ? std::to_string(v.id) : v.name) + ": " + v.type; });
  // The graph a call traced, before the view decomposes it: its input shapes, then view().
  nb::class_<Captured>(m, "_CapturedGraph")
      .def("input_shapes", [](const Captured& c) {
        nb::list l;
        for (const graph::Value* v : c.graph->inputs()) l.append(sym_shape(v->spec.sizes));
        return l;
      })
      // keep: op names to leave whole; named: (name, tensor) pairs naming the bound inputs.
      .def("view", [](const Captured& c, std::vector<std::string> keep, std::vector<std::pair<std::string, Tensor>> named) {
        std::unordered_set<ops::OpId> kept;
        for (const std::string& k : keep) {
          const ops::OpInfo* info = ops::find_op(k);
          KILN_CHECK(info, "_graph_view: no op named '", k, "'");
          kept.insert(info->id);
        }
        // Value semantics, as ONNX has: in-place ops and writes through views become functional
        // ops (writes into inputs stay, as copy_ nodes at the end).
        graph::Graph prims = aot::functionalize(aot::decompose(*c.graph, [&](ops::OpId op) { return kept.count(op) > 0; }));
        std::unordered_map<const void*, std::string> names;
        for (auto& [name, t] : named)
          if (t.defined()) names.emplace(t.impl(), name);  // the first name of a shared (tied) tensor
        return view_dict(prims, c.inputs, names);
      }, nb::arg("keep"), nb::arg("named"));
  // call(): runs a function compiled with backend "_graph_view" once. Returns (the graph it
  // traced, call's result).
  m.def("_graph_view", [](nb::object call) {
    // Registered at the first export, so list_backends() shows it only once one ran.
    static const bool registered = (register_backend("_graph_view", &view_backend), true);
    (void)registered;
    Captured sink;
    nb::object result;
    {
      Captured* prev = std::exchange(g_sink, &sink);
      try {
        result = call();
      } catch (...) {
        g_sink = prev;
        throw;
      }
      g_sink = prev;
    }
    KILN_CHECK(sink.graph && sink.ran, "_graph_view: the call ran no graph of the \"_graph_view\" backend (was it "
               "compiled with it, and traced by this call?)");
    return nb::make_tuple(nb::cast(std::move(sink)), result);
  }, nb::arg("call"));
  // A new tensor on t's data with t's mark_dynamic marks: the exporter marks its dynamic axes on
  // it, leaving the caller's tensor as it was.
  m.def("_graph_view_alias", [](const Tensor& t) {
    Tensor a = t.detach();
    a.impl()->dynamic_dims = t.impl()->dynamic_dims;
    return a;
  }, nb::arg("t"));
}

}  // namespace kiln::py
