// kiln.compile's engine: the C++ capture engine (guards, graph cache, recompiles, breaks) driving a
// Python function. python/kiln/_compile.py flattens the call's arguments into tensors, numbers
// and modules; the engine calls back into Python to trace the function on fake tensors.
#include <kiln/compile.h>
#include <kiln/log.h>

#include <nanobind/stl/vector.h>  // list_backends() returns a std::vector<std::string>

#include <exception>
#include <utility>

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

// A tensor or a number (the leaves _compile.py's _flatten keeps as they are); false for others.
bool leaf_arg(nb::handle h, capture::ArgValue& a) {
  if (const Tensor* t = as_tensor(h)) {
    a.kind = capture::ArgValue::Kind::Tensor;
    a.tensor = *t;
  } else if (is_py_number(h)) {
    a.kind = capture::ArgValue::Kind::Scalar;
    a.scalar = to_scalar(h);
  } else {
    return false;
  }
  return true;
}

// One flattened argument: a Tensor, a number, or a module given as (module, [its tensors], version).
capture::ArgValue to_arg_value(nb::handle h, std::vector<nb::handle>& modules) {
  capture::ArgValue a;
  if (leaf_arg(h, a)) return a;
  if (PyTuple_Check(h.ptr()) && nb::len(h) == 3) {
    a.kind = capture::ArgValue::Kind::Module;
    nb::handle m = h[0];
    a.module = m.ptr();
    for (nb::handle t : h[1]) {
      const Tensor* p = as_tensor(t);
      a.module_state.push_back(p ? static_cast<const void*>(p->impl()) : nullptr);
    }
    a.module_attrs = nb::cast<uint64_t>(h[2]);
    a.module_training.push_back(nb::cast<bool>(m.attr("training")));
    modules.push_back(m);
  } else {
    throw nb::type_error(("compile: cannot pass a " + py_type_name(h) + " as a flattened argument").c_str());
  }
  return a;
}

// A compiled call's result from its output structure (_compile.py's _flatten_output): "*" the next
// tensor, ("static", v) v, (dict, keys, specs), (list or tuple, specs).
nb::object rebuild_output(nb::handle spec, std::vector<Tensor>& outs, size_t& next) {
  if (PyUnicode_Check(spec.ptr())) {
    KILN_CHECK(next < outs.size(), "internal: a compiled function returned fewer tensors than its output structure holds");
    return nb::cast(std::move(outs[next++]));
  }
  nb::handle head = spec[0];
  if (PyUnicode_Check(head.ptr())) return nb::borrow(spec[1]);
  if (head.ptr() == reinterpret_cast<PyObject*>(&PyDict_Type)) {
    nb::dict d;
    nb::handle keys = spec[1], specs = spec[2];
    for (size_t i = 0, n = nb::len(keys); i < n; i++) d[keys[i]] = rebuild_output(specs[i], outs, next);
    return d;
  }
  nb::handle specs = spec[1];
  size_t n = nb::len(specs);
  nb::list items;
  for (size_t i = 0; i < n; i++) items.append(rebuild_output(specs[i], outs, next));
  return head.ptr() == reinterpret_cast<PyObject*>(&PyList_Type) ? nb::object(items) : nb::object(nb::tuple(items));
}

// --- The call path of a compiled Python function (kiln.compile's CompiledFunction derives from
// _CompiledCall). A call whose arguments are all tensors and numbers, given positionally, goes
// from here straight to the engine's cached graphs: no Python frame, no flattening in Python.
// Anything else (keyword arguments, containers, modules, a first call, a guard that fails, a
// graph break) goes to the Python method _slow_call, which flattens, traces and registers the
// engine in self._fast: a list indexed by the number of arguments of (engine, output structure).

thread_local std::exception_ptr g_pending;  // a C++ exception of the fast path, for _reraise_pending
PyObject* g_reraise = nullptr;              // kiln._C._reraise_pending: nanobind translates it

// New reference; null without an error set: not for the fast path.
PyObject* fast_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  static PyObject* fast_name = PyUnicode_InternFromString("_fast");
  if (kwargs && PyDict_GET_SIZE(kwargs) != 0) return nullptr;
  nb::object fast = nb::steal(PyObject_GetAttr(self, fast_name));
  if (!fast.is_valid()) {
    PyErr_Clear();
    return nullptr;
  }
  const Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (!PyList_CheckExact(fast.ptr()) || n >= PyList_GET_SIZE(fast.ptr())) return nullptr;
  nb::handle entry = PyList_GET_ITEM(fast.ptr(), n);  // (engine, output structure) or None
  if (!PyTuple_CheckExact(entry.ptr())) return nullptr;
  PyEngine& e = nb::cast<PyEngine&>(entry[0]);
  if (!e.engine) return nullptr;
  std::vector<capture::ArgValue> vals(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; i++)
    if (!leaf_arg(PyTuple_GET_ITEM(args, i), vals[size_t(i)])) return nullptr;
  std::shared_ptr<capture::Engine> engine = e.engine;  // alive through the call, whatever the guards run
  std::optional<std::vector<Tensor>> outs;
  {
    CallRootsScope scope(args, kwargs);
    outs = capture::run_cached(*engine, vals);
  }
  if (!outs) return nullptr;
  size_t next = 0;
  return rebuild_output(entry[1], *outs, next).release().ptr();
}

PyObject* compiled_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  static PyObject* slow_name = PyUnicode_InternFromString("_slow_call");
  try {
    PyObject* r = fast_call(self, args, kwargs);
    if (r || PyErr_Occurred()) return r;
  } catch (nb::python_error& e) {
    e.restore();
    return nullptr;
  } catch (...) {
    g_pending = std::current_exception();
    return PyObject_CallNoArgs(g_reraise);
  }
  nb::object slow = nb::steal(PyObject_GetAttr(self, slow_name));
  return slow.is_valid() ? PyObject_Call(slow.ptr(), args, kwargs) : nullptr;
}

nb::object compiled_call_type() {
  static PyType_Slot slots[] = {
      {Py_tp_call, (void*)compiled_call},
      {Py_tp_doc, (void*)"Base of kiln.compile's CompiledFunction: the call path to cached graphs in C++."},
      {0, nullptr}};
  static PyType_Spec spec{"kiln._C._CompiledCall", int(sizeof(PyObject)), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, slots};
  PyObject* t = PyType_FromSpec(&spec);
  if (!t) throw nb::python_error();
  return nb::steal(t);
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
                          bool error_on_recompile_limit, bool fullgraph, const std::string& name, const std::string& mode) {
        CompileOptions o;
        o.backend = backend;
        o.mode = mode;
        if (!dynamic.is_none()) o.dynamic = bool_arg(dynamic, "compile", "dynamic");
        o.recompile_limit = recompile_limit;
        o.error_on_recompile_limit = error_on_recompile_limit;
        o.fullgraph = fullgraph;
        o.name = name;
        new (self) PyEngine{capture::make_engine(o)};
      }, nb::arg("backend"), nb::arg("dynamic").none(), nb::arg("recompile_limit"), nb::arg("error_on_recompile_limit"),
         nb::arg("fullgraph"), nb::arg("name"), nb::arg("mode") = "default")
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
  m.attr("_CompiledCall") = compiled_call_type();
  m.def("_reraise_pending", [] {
    std::exception_ptr p = std::exchange(g_pending, nullptr);
    if (p) std::rethrow_exception(p);
  });
  g_reraise = Py_NewRef(m.attr("_reraise_pending").ptr());  // kept for the process's lifetime
  m.def("_rebuild_output", [](nb::handle spec, std::vector<Tensor> outs) {
    size_t next = 0;
    return rebuild_output(spec, outs, next);
  }, nb::arg("spec"), nb::arg("outs"));
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
  // kiln.compile's check of its backend and mode, at compile() (the engine checks them again).
  m.def("_check_backend", [](const std::string& backend, const std::string& mode) {
    capture::compile_graph(backend, nullptr, mode);
  });
  m.def("mark_dynamic", [](const Tensor& t, int64_t dim, nb::handle min, nb::handle max) {
    int64_t lo = min.is_none() ? 2 : int_arg(min, "mark_dynamic", "min");
    int64_t hi = max.is_none() ? INT64_MAX : int_arg(max, "mark_dynamic", "max");
    if (lo < 0 || hi < lo)
      throw nb::value_error(("mark_dynamic(): a size range needs 0 <= min <= max, got min=" + std::to_string(lo) +
                             ", max=" + std::to_string(hi)).c_str());
    mark_dynamic(t, dim, lo, hi);
  }, nb::arg("t"), nb::arg("dim"), nb::arg("min").none() = nb::none(), nb::arg("max").none() = nb::none());
}

}  // namespace kiln::py
