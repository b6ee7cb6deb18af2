// kiln.compile's guards on Python values: a tree of sources (a global, a closure cell, the call's
// arguments; then attributes and items of those) with a check on the values the trace read,
// evaluated in C++ with the CPython API on every compiled call. python/kiln/_guards.py builds one
// per trace while the function runs on fake tensors, and attaches it to the traced graph
// (capture::add_external_guards): the engine checks it with the graph's other guards.
#include "py_guards.h"

#include <kiln/compile.h>

#include <cstring>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define KILN_FRAME_STACK 1
#define Py_BUILD_CORE
#include <internal/pycore_frame.h>  // the value stack of a frame stopped in a trace callback
#undef Py_BUILD_CORE
#endif

namespace kiln::py {
namespace {

thread_local CallRootsScope* g_call_roots = nullptr;  // the running compiled call's (args, kwargs)

std::string repr_of(PyObject* o) {
  PyObject* r = PyObject_Repr(o);
  if (!r) {
    PyErr_Clear();
    return "<unprintable>";
  }
  Py_ssize_t n = 0;
  const char* s = PyUnicode_AsUTF8AndSize(r, &n);
  std::string out = s ? std::string(s, size_t(n)) : "<unprintable>";
  if (!s) PyErr_Clear();
  Py_DECREF(r);
  return out.size() > 80 ? out.substr(0, 77) + "..." : out;
}

bool is_primitive(PyObject* o) {
  return o == Py_None || PyBool_Check(o) || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o) ||
         PyBytes_CheckExact(o) || PyComplex_CheckExact(o);
}

// What a value was when the trace read it, compared on every call: numbers and strings by value,
// tensors by identity, lists/tuples/dicts/sets item by item (to a depth and a size), anything else
// by identity.
struct Snap {
  enum class Kind : uint8_t { Value, Identity, Tensor, Seq, Map };
  Kind kind = Kind::Identity;
  PyTypeObject* type = nullptr;
  nb::object obj;  // Value: the value (a frozenset copy for sets); Identity: the object; Tensor: it
  std::vector<nb::object> keys;  // Map
  std::vector<Snap> items;       // Seq, Map

  static Snap of(PyObject* o, int depth, size_t& budget) {
    Snap s;
    s.type = Py_TYPE(o);
    s.obj = nb::borrow(o);
    if (is_primitive(o)) {
      s.kind = Kind::Value;
    } else if (as_tensor(o)) {
      s.kind = Kind::Tensor;
    } else if (depth > 0 && (PyList_CheckExact(o) || PyTuple_CheckExact(o)) && size_t(PySequence_Fast_GET_SIZE(o)) <= budget) {
      s.kind = Kind::Seq;
      Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
      budget -= size_t(n);
      for (Py_ssize_t i = 0; i < n; i++) s.items.push_back(of(PySequence_Fast_GET_ITEM(o, i), depth - 1, budget));
    } else if (depth > 0 && PyDict_Check(o) && size_t(PyDict_Size(o)) <= budget) {
      s.kind = Kind::Map;
      budget -= size_t(PyDict_Size(o));
      PyObject *k, *v;
      Py_ssize_t pos = 0;
      while (PyDict_Next(o, &pos, &k, &v)) {
        s.keys.push_back(nb::borrow(k));
        s.items.push_back(of(v, depth - 1, budget));
      }
    } else if ((PyAnySet_CheckExact(o)) && size_t(PySet_GET_SIZE(o)) <= budget) {
      s.kind = Kind::Value;  // compared as a set of hashable values
      s.obj = nb::steal(PyFrozenSet_New(o));
      if (!s.obj.is_valid()) throw nb::python_error();
    }
    return s;
  }

  int traverse(visitproc visit, void* arg) const {
    Py_VISIT(obj.ptr());
    for (const nb::object& k : keys) Py_VISIT(k.ptr());
    for (const Snap& s : items)
      if (int r = s.traverse(visit, arg)) return r;
    return 0;
  }

  bool holds(PyObject* o) const {
    if (Py_TYPE(o) != type) return false;
    switch (kind) {
      case Kind::Identity: return o == obj.ptr();
      case Kind::Tensor: return as_tensor(o)->impl() == as_tensor(obj)->impl();
      case Kind::Value: {
        if (o == obj.ptr()) return true;
        if (PyFloat_CheckExact(o)) {  // bit for bit: NaN holds for NaN, -0.0 differs from 0.0
          double a = PyFloat_AS_DOUBLE(o), b = PyFloat_AS_DOUBLE(obj.ptr());
          return std::memcmp(&a, &b, sizeof a) == 0;
        }
        int r = PyObject_RichCompareBool(o, obj.ptr(), Py_EQ);
        if (r < 0) PyErr_Clear();
        return r == 1;
      }
      case Kind::Seq: {
        if (PySequence_Fast_GET_SIZE(o) != Py_ssize_t(items.size())) return false;
        for (size_t i = 0; i < items.size(); i++)
          if (!items[i].holds(PySequence_Fast_GET_ITEM(o, Py_ssize_t(i)))) return false;
        return true;
      }
      case Kind::Map: {
        if (PyDict_Size(o) != Py_ssize_t(items.size())) return false;
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        size_t i = 0;
        while (PyDict_Next(o, &pos, &k, &v)) {  // the same keys in the same order
          if (i >= items.size() || (k != keys[i].ptr() && PyObject_RichCompareBool(k, keys[i].ptr(), Py_EQ) != 1)) {
            PyErr_Clear();
            return false;
          }
          if (!items[i++].holds(v)) return false;
        }
        return true;
      }
    }
    return false;
  }
};

}  // namespace

CallRootsScope::CallRootsScope(PyObject* roots) : prev_(g_call_roots), roots_(nb::borrow(roots)) { g_call_roots = this; }
CallRootsScope::CallRootsScope(PyObject* args, PyObject* kwargs) : prev_(g_call_roots), args_(args), kwargs_(kwargs) {
  g_call_roots = this;
}
CallRootsScope::~CallRootsScope() { g_call_roots = prev_; }
PyObject* CallRootsScope::roots() {
  if (!roots_.is_valid() && args_) {
    nb::object kw = kwargs_ ? nb::borrow(kwargs_) : nb::steal(PyDict_New());
    if (kw.is_valid()) roots_ = nb::steal(PyTuple_Pack(2, args_, kw.ptr()));
  }
  return roots_.is_valid() ? roots_.ptr() : nullptr;
}

namespace {

class GuardTree : public capture::ExternalGuards {
 public:
  enum class Src : uint8_t { Roots, Global, Cell, Const, Attr, Item };
  enum class Check : uint8_t { None, Snap, Type, Module };
  struct Node {
    Src src;
    int parent = -1;
    nb::object a, b;  // Global: the globals dict, the builtins dict; Cell: the cell; Const: the object; Attr: name; Item: key
    nb::object name;  // Global: the name
    Check check = Check::None;
    Snap snap;
    PyTypeObject* type = nullptr;  // Type
    nb::object module;             // Module: the module (identity; the tree checks its state)
    int64_t state = 0;             // Module: its attribute state's number when the trace ended
    std::string label, where, traced_repr;
  };

  GuardTree(nb::object config, nb::object fingerprint) : config_(std::move(config)), fingerprint_(std::move(fingerprint)) {}

  int add(const std::string& src, int parent, nb::object a, nb::object b, nb::object name, const std::string& label) {
    Node n;
    n.src = src == "roots" ? Src::Roots : src == "global" ? Src::Global : src == "cell" ? Src::Cell
          : src == "const" ? Src::Const : src == "attr" ? Src::Attr : Src::Item;
    KILN_CHECK(n.src < Src::Attr || (parent >= 0 && parent < int(nodes_.size())), "internal: guard source without a parent");
    n.parent = parent, n.a = std::move(a), n.b = std::move(b), n.name = std::move(name), n.label = label;
    nodes_.push_back(std::move(n));
    return int(nodes_.size()) - 1;
  }

  // kind: "value" (a snapshot: by value, identity, or item by item), "type", "module".
  void guard(int i, nb::handle value, const std::string& kind, const std::string& where) {
    Node& n = nodes_.at(size_t(i));
    n.where = where;
    n.traced_repr = repr_of(value.ptr());
    if (kind == "type") {
      if (n.check == Check::None) n.check = Check::Type, n.type = Py_TYPE(value.ptr());
    } else if (kind == "module") {
      n.check = Check::Module, n.module = nb::borrow(value);
      watch_modules();
    } else {
      size_t budget = 10000;
      n.check = Check::Snap, n.snap = Snap::of(value.ptr(), 4, budget);
    }
  }

  std::optional<std::string> check() const override { return check_roots(g_call_roots); }
  std::optional<std::string> check_roots(PyObject* roots) const {
    CallRootsScope scope(roots);
    return check_roots(&scope);
  }

  // Modules are guarded by identity and by the state of their attributes (training mode,
  // settings, submodules: kiln.nn.module.state_fingerprint). The state is compared only after
  // kiln.nn's counter of attribute assignments on any module moved: one compare per call
  // otherwise, however many modules were read. So a train()/eval() switch selects the graph
  // traced in that mode, and switching back finds the first again.
  void watch_modules() { watch_modules_ = true; }
  void seal() {  // at the end of the trace
    checked_ = watch_modules_ ? counter() : 0;
    for (Node& n : nodes_)
      if (n.check == Check::Module) n.state = state_of(n.module.ptr()).value_or(-1);
  }

  std::optional<std::string> check_roots(CallRootsScope* roots) const {
    if (watch_modules_ && counter() != checked_) {
      for (const Node& n : nodes_)
        if (n.check == Check::Module && state_of(n.module.ptr()) != n.state)
          return n.label + " (a kiln.nn.Module the function uses) changed since the trace: its training mode, a "
                           "setting or a submodule (" + (n.where.empty() ? "read by the function" : n.where) + ")";
      checked_ = counter();  // every module's state is as traced: the next call compares the counter only
    }
    std::vector<nb::object> vals(nodes_.size());
    for (size_t i = 0; i < nodes_.size(); i++) {
      const Node& n = nodes_[i];
      PyObject* v = nullptr;  // a new reference
      switch (n.src) {
        case Src::Roots: v = roots ? Py_XNewRef(roots->roots()) : nullptr; break;
        case Src::Global:
          v = PyDict_GetItemWithError(n.a.ptr(), n.name.ptr());
          if (!v && !PyErr_Occurred() && n.b.is_valid()) v = PyDict_GetItemWithError(n.b.ptr(), n.name.ptr());
          Py_XINCREF(v);
          break;
        case Src::Cell: v = PyCell_GET(n.a.ptr()); Py_XINCREF(v); break;
        case Src::Const: v = Py_NewRef(n.a.ptr()); break;  // an object held by identity (guarded where it was found)
        case Src::Attr: v = PyObject_GetAttr(vals[size_t(n.parent)].ptr(), n.a.ptr()); break;
        case Src::Item: v = PyObject_GetItem(vals[size_t(n.parent)].ptr(), n.a.ptr()); break;
      }
      if (!v) {
        PyErr_Clear();
        return n.label + " no longer exists (traced with " + n.traced_repr + ")";
      }
      vals[i] = nb::steal(v);
      bool ok = true;
      switch (n.check) {
        case Check::None: break;
        case Check::Snap: ok = n.snap.holds(v); break;
        case Check::Type: ok = Py_TYPE(v) == n.type; break;
        case Check::Module: ok = v == n.module.ptr(); break;
      }
      if (!ok) {
        return n.label + " is " + repr_of(v) + ", traced with " + n.traced_repr + (n.where.empty() ? "" : " (" + n.where + ")");
      }
    }
    return std::nullopt;
  }

  std::vector<std::string> describe() const override {
    std::vector<std::string> out;
    if (watch_modules_) out.push_back("the kiln.nn.Modules the function uses have the attributes they had (training mode, settings, submodules)");
    for (const Node& n : nodes_) {
      std::string at = n.where.empty() ? "" : " (" + n.where + ")";
      switch (n.check) {
        case Check::None: break;
        case Check::Type: out.push_back(n.label + ": of type " + std::string(n.type->tp_name) + at); break;
        case Check::Module: out.push_back(n.label + ": the same module, with the attributes it had (training mode, settings)" + at); break;
        case Check::Snap:
          out.push_back(n.label + (n.snap.kind == Snap::Kind::Value ? " == " + n.traced_repr
                                   : n.snap.kind == Snap::Kind::Seq || n.snap.kind == Snap::Kind::Map
                                       ? ": the same items as " + n.traced_repr
                                       : " is the object it was (" + n.traced_repr + ")") + at);
          break;
      }
    }
    return out;
  }

  std::vector<std::string> constants() const override {
    std::vector<std::string> out;
    for (const Node& n : nodes_)
      if (n.check == Check::Snap && n.snap.kind == Snap::Kind::Value)
        out.push_back(n.label + " = " + n.traced_repr + " (a Python value the function read" + (n.where.empty() ? "" : ", " + n.where) +
                      "; guarded: a change recompiles)");
    return out;
  }

  size_t size() const { return nodes_.size(); }

  int traverse(visitproc visit, void* arg) const {
    Py_VISIT(config_.ptr());
    Py_VISIT(fingerprint_.ptr());
    for (const Node& n : nodes_) {
      for (const nb::object* o : {&n.a, &n.b, &n.name, &n.module}) Py_VISIT(o->ptr());
      if (int r = n.snap.traverse(visit, arg)) return r;
    }
    return 0;
  }
  void clear() { nodes_.clear(); }

 private:
  int64_t counter() const { return PyLong_AsLongLong(PyList_GET_ITEM(config_.ptr(), 0)); }
  // The module's attribute state number (nullopt when computing it raised: the guard fails).
  std::optional<int64_t> state_of(PyObject* module) const {
    PyObject* r = PyObject_CallOneArg(fingerprint_.ptr(), module);
    if (!r) {
      PyErr_Clear();
      return std::nullopt;
    }
    int64_t v = PyLong_AsLongLong(r);
    Py_DECREF(r);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return std::nullopt;
    }
    return v;
  }

  std::vector<Node> nodes_;
  bool watch_modules_ = false;
  mutable int64_t checked_ = 0;  // the counter when the modules' states last checked out
  nb::object config_;       // kiln.nn.module._config: [the attribute-assignment counter]
  nb::object fingerprint_;  // kiln.nn.module.state_fingerprint
};

// A tree attached to a graph: the engine holds it as ExternalGuards.
struct HeldTree : capture::ExternalGuards {
  nb::object tree;  // keeps the Python object (and so the C++ tree) alive with the graph
  const GuardTree* t = nullptr;
  std::optional<std::string> check() const override { return t->check(); }
  std::vector<std::string> describe() const override { return t->describe(); }
  std::vector<std::string> constants() const override { return t->constants(); }
};

// Garbage collection: a tree holds the globals dicts it reads, which hold the compiled function,
// which holds the engine, which holds the tree. Both types report what they hold, so such a
// cycle is collected (tp_clear drops the tree's nodes and the engine's graphs).
int tree_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  return nb::inst_ptr<GuardTree>(self)->traverse(visit, arg);
}
int tree_clear(PyObject* self) {
  if (nb::inst_ready(self)) nb::inst_ptr<GuardTree>(self)->clear();
  return 0;
}
PyType_Slot tree_slots[] = {{Py_tp_traverse, (void*)tree_traverse}, {Py_tp_clear, (void*)tree_clear}, {0, nullptr}};

}  // namespace

int visit_guards(const capture::ExternalGuards& g, visitproc visit, void* arg) {
  if (const auto* h = dynamic_cast<const HeldTree*>(&g)) Py_VISIT(h->tree.ptr());
  return 0;
}

void bind_guards(nb::module_& m) {
  nb::class_<GuardTree>(m, "_GuardTree", nb::type_slots(tree_slots))
      .def(nb::init<nb::object, nb::object>(), nb::arg("config"), nb::arg("fingerprint"))
      .def("add", &GuardTree::add, nb::arg("src"), nb::arg("parent"), nb::arg("a").none(), nb::arg("b").none(),
           nb::arg("name").none(), nb::arg("label"))
      .def("guard", &GuardTree::guard, nb::arg("node"), nb::arg("value").none(), nb::arg("kind"), nb::arg("where"))
      .def("check", [](const GuardTree& t, nb::handle roots) { return t.check_roots(roots.ptr()); }, nb::arg("roots").none())
      .def("describe", &GuardTree::describe)
      .def("watch_modules", &GuardTree::watch_modules)
      .def("__len__", &GuardTree::size)
      // During a trace: the traced graph holds only while this tree's guards do.
      .def("attach", [](nb::handle self) {
        nb::cast<GuardTree&>(self).seal();
        auto h = std::make_shared<HeldTree>();
        h->tree = nb::borrow(self);
        h->t = &nb::cast<const GuardTree&>(self);
        capture::add_external_guards(std::move(h));
      });
  m.def("_tracing", &capture::tracing);
  // The top n values of a frame's value stack, top first (None for an empty slot), read from a
  // sys.settrace callback (where CPython 3.11 has stored the stack pointer); None on other versions.
  m.def("_frame_stack", [](nb::handle frame, int n) -> nb::object {
#ifdef KILN_FRAME_STACK
    if (!PyFrame_Check(frame.ptr())) throw nb::type_error("_frame_stack: not a frame");
    _PyInterpreterFrame* f = reinterpret_cast<PyFrameObject*>(frame.ptr())->f_frame;
    int base = f->f_code->co_nlocalsplus, top = f->stacktop;
    nb::list out;
    for (int i = top - 1; i >= base && i >= top - n; i--) {
      PyObject* v = f->localsplus[i];
      out.append(v ? nb::borrow(v) : nb::none());
    }
    return out;
#else
    (void)frame, (void)n;
    return nb::none();
#endif
  }, nb::arg("frame"), nb::arg("n"));
  // Slot i of a frame's locals-plus array (a cell for a cell variable, once MAKE_CELL ran).
  m.def("_frame_local", [](nb::handle frame, int i) -> nb::object {
#ifdef KILN_FRAME_STACK
    if (!PyFrame_Check(frame.ptr())) throw nb::type_error("_frame_local: not a frame");
    _PyInterpreterFrame* f = reinterpret_cast<PyFrameObject*>(frame.ptr())->f_frame;
    if (i < 0 || i >= f->f_code->co_nlocalsplus || !f->localsplus[i]) return nb::none();
    return nb::borrow(f->localsplus[i]);
#else
    (void)frame, (void)i;
    return nb::none();
#endif
  }, nb::arg("frame"), nb::arg("i"));
  m.def("_graph_break", [](const std::string& reason) { capture::graph_break(reason); }, nb::arg("reason"));
}

}  // namespace kiln::py
