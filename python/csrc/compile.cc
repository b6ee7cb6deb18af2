// kiln.compile's engine: the C++ capture engine (guards, graph cache, recompiles, breaks) driving a
// Python function. python/kiln/_compile.py flattens the call's arguments into tensors, numbers
// and modules; the engine calls back into Python to trace the function on fake tensors.
#include <kiln/compile.h>
#include <kiln/log.h>

#include <nanobind/stl/vector.h>  // list_backends() returns a std::vector<std::string>

#include "bind.h"
#include "capture/guards.h"
#include "capture/lazy.h"
#include "py_guards.h"

namespace kiln::py {
namespace {

struct PyEngine {
  std::shared_ptr<capture::Engine> engine;  // null once the GC cleared it (an unreachable cycle)
};

// The guards a graph holds reach back to the function (its globals): report them to the GC, and
// drop the graphs when the cycle is garbage (py_guards.cc).
int engine_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  const PyEngine* e = nb::inst_ptr<PyEngine>(self);
  int r = 0;
  if (e->engine)
    capture::for_each_external_guards(*e->engine, [&](const capture::ExternalGuards& g) {
      if (!r) r = visit_guards(g, visit, arg);
    });
  return r;
}
int engine_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<PyEngine>(self)->engine.reset();
  return 0;
}
PyType_Slot engine_slots[] = {{Py_tp_traverse, (void*)engine_traverse}, {Py_tp_clear, (void*)engine_clear}, {0, nullptr}};

std::pair<std::string, unsigned> python_location() {
  auto [file, line] = python_caller();
  return {file, unsigned(line)};
}

// One flattened argument: a Tensor, a number, or a module given as (module, [its tensors], version).
capture::ArgValue to_arg_value(nb::handle h, std::vector<nb::handle>& modules) {
  capture::ArgValue a;
  if (const Tensor* t = as_tensor(h)) {
    a.kind = capture::ArgValue::Kind::Tensor;
    a.tensor = *t;
  } else if (is_py_number(h)) {
    a.kind = capture::ArgValue::Kind::Scalar;
    a.scalar = to_scalar(h);
  } else if (PyTuple_Check(h.ptr()) && nb::len(h) == 3) {
    a.kind = capture::ArgValue::Kind::Module;
    nb::handle m = h[0];
    a.module = m.ptr();
    for (nb::handle t : h[1]) {
      const Tensor* p = as_tensor(t);
      a.module_state.push_back(p ? static_cast<const void*>(p->impl()) : nullptr);
    }
    a.module_state.push_back(reinterpret_cast<const void*>(uintptr_t(nb::cast<uint64_t>(h[2]))));
    modules.push_back(m);
  } else {
    throw nb::type_error(("compile: cannot pass a " + py_type_name(h) + " as a flattened argument").c_str());
  }
  return a;
}


nb::dict report_dict(const ExplainReport& r) {
  nb::dict d;
  d["graph_count"] = r.graph_count;
  nb::list ops, breaks, guards, reasons, ms, graphs, spec;
  for (int n : r.ops_per_graph) ops.append(n);
  for (const auto& b : r.breaks) breaks.append(nb::make_tuple(b.reason, b.file, b.line));
  for (const auto& g : r.guards) guards.append(g);
  for (const auto& g : r.recompile_reasons) reasons.append(g);
  for (double t : r.compile_ms) ms.append(t);
  for (const auto& g : r.graphs) graphs.append(g);
  for (const auto& g : r.specializations) spec.append(g);
  d["ops_per_graph"] = ops;
  d["breaks"] = breaks;
  d["guards"] = guards;
  d["recompile_reasons"] = reasons;
  d["compile_ms"] = ms;
  d["graphs"] = graphs;
  d["specializations"] = spec;
  nb::list consts;
  for (const auto& c : r.constants) consts.append(c);
  d["constants"] = consts;
  d["eager_fallback"] = r.eager_fallback;
  d["text"] = r.str();
  return d;
}

}  // namespace

void bind_compile(nb::module_& m) {
  capture::set_location_provider(&python_location);
  bind_guards(m);
  nb::class_<PyEngine>(m, "_CompileEngine", nb::type_slots(engine_slots))
      .def("__init__", [](PyEngine* self, const std::string& backend, nb::handle dynamic, int recompile_limit,
                          bool error_on_recompile_limit, bool fullgraph, const std::string& name) {
        CompileOptions o;
        o.backend = backend;
        if (!dynamic.is_none()) o.dynamic = nb::cast<bool>(dynamic);
        o.recompile_limit = recompile_limit;
        o.error_on_recompile_limit = error_on_recompile_limit;
        o.fullgraph = fullgraph;
        o.name = name;
        new (self) PyEngine{capture::make_engine(o)};
      }, nb::arg("backend"), nb::arg("dynamic").none(), nb::arg("recompile_limit"), nb::arg("error_on_recompile_limit"),
         nb::arg("fullgraph"), nb::arg("name"))
      // flat: the call's leaves; body(list) runs the function on them (fake tensors while tracing)
      // and returns its output tensors as a list.
      // roots: the call's (args, kwargs), which guards on values reached from arguments read.
      .def("call", [](PyEngine& e, nb::list flat, nb::object body, nb::handle roots) {
        KILN_CHECK(e.engine, "internal: a compiled function's engine was cleared by the garbage collector");
        std::vector<capture::ArgValue> args;
        std::vector<nb::handle> modules;
        args.reserve(flat.size());
        for (nb::handle h : flat) args.push_back(to_arg_value(h, modules));
        capture::Body run = [&](const std::vector<capture::ArgValue>& vals) {
          nb::list l;
          size_t mi = 0;
          for (const capture::ArgValue& v : vals) {
            if (v.kind == capture::ArgValue::Kind::Tensor) l.append(v.tensor.defined() ? nb::cast(v.tensor) : nb::none());
            else if (v.kind == capture::ArgValue::Kind::Scalar) l.append(scalar_to_py(v.scalar));
            else l.append(modules.at(mi++));
          }
          nb::object r = body(l);
          std::vector<Tensor> out;
          for (nb::handle t : r) {
            const Tensor* p = as_tensor(t);
            if (!p) throw nb::type_error("a compiled function must return tensors (or lists/tuples/dicts of them)");
            out.push_back(*p);
          }
          return out;
        };
        CallRootsScope scope(roots.ptr());
        std::vector<Tensor> outs = capture::run(*e.engine, args, run);
        nb::list result;
        for (auto& t : outs) result.append(nb::cast(std::move(t)));
        return result;
      }, nb::arg("flat"), nb::arg("body"), nb::arg("roots").none() = nb::none())
      .def("report", [](const PyEngine& e) { return report_dict(e.engine ? capture::report(*e.engine) : ExplainReport{}); });
  m.def("cond", [](const Tensor& pred, nb::object true_fn, nb::object false_fn, nb::tuple operands) {
    auto branch = [&](nb::object fn) {
      return [fn, &operands]() -> Tensor {
        nb::object r = fn(*operands);
        const Tensor* t = as_tensor(r);
        if (!t) throw nb::type_error("cond: each branch must return one Tensor");
        return *t;
      };
    };
    return cond(pred, branch(true_fn), branch(false_fn));
  }, nb::arg("pred"), nb::arg("true_fn"), nb::arg("false_fn"), nb::arg("operands") = nb::tuple(),
     "true_fn(*operands) if pred else false_fn(*operands); under kiln.compile both branches are captured\n"
     "(no graph break) and the result is selected with where, so they must not have side effects.");
  nb::class_<capture::OpaqueScope>(m, "_OpaqueScope")
      .def("__init__", [](capture::OpaqueScope* self, const std::string& what) { new (self) capture::OpaqueScope(what); });
  nb::class_<LazyScope>(m, "_LazyScope")
      .def("__init__", [](LazyScope* self, const std::string& backend) { new (self) LazyScope(backend); },
           nb::arg("backend") = "eager")
      .def("sync", &LazyScope::sync);
  m.def("set_logs", &set_logs, nb::arg("components"),
        "Turns on per-component logs: 'graph,guards,recompiles,graph_breaks,dynamic,aot,...', 'all' or ''.");
  m.def("enabled_logs", &enabled_logs);
  m.def("list_backends", &list_backends);
  m.def("mark_dynamic", [](const Tensor& t, int64_t dim, nb::handle min, nb::handle max) {
    mark_dynamic(t, dim, min.is_none() ? 2 : nb::cast<int64_t>(min), max.is_none() ? INT64_MAX : nb::cast<int64_t>(max));
  }, nb::arg("t"), nb::arg("dim"), nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
}

}  // namespace kiln::py
