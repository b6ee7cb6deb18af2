// kiln::Error -> kiln.Error (a RuntimeError) whose location is the Python caller's line, not
// kiln's C++ or kiln's own Python wrappers; and argument errors that say what is wrong.
//
// nanobind answers a call whose arguments do not fit the C++ signature with "incompatible function
// arguments" and a dump of every overload, and a failed nb::cast with "std::bad_cast". Instead of
// a hand check in every binding, kiln/_argerrors.py wraps each public function of kiln._C once, at
// import, in a `_checked` object: it forwards the call unchanged (vectorcall, nothing allocated)
// and, only when nanobind refused the arguments of this very call, asks _argerrors.explain for the
// promised message (the function, the argument, what was given, what is accepted). An error from
// inside the binding's body (a failed nb::cast there, a hook or callback raising nanobind's refusal
// of another call) is not about this call's arguments and is never explained as if it were.
#include <string>
#include <typeinfo>

#include "bind.h"  // Python.h first

#include <frameobject.h>
#include <structmember.h>

#include <cstring>
#include <vector>

namespace kiln::py {
namespace {

PyObject* g_error_type = nullptr;
std::string g_package_dir;  // frames in kiln's own Python files are skipped

}  // namespace

// The innermost Python frame outside the kiln package: file and line.
std::pair<std::string, int> python_caller() {
  if (g_package_dir.empty()) {  // the package's folder, known once kiln/__init__.py has run
    nb::object mods = nb::module_::import_("sys").attr("modules");
    if (PyMapping_HasKeyString(mods.ptr(), "kiln")) {
      nb::object file = nb::getattr(mods["kiln"], "__file__", nb::none());
      if (!file.is_none()) {
        std::string path = nb::cast<std::string>(file);
        g_package_dir = path.substr(0, path.rfind('/') + 1);
      }
    }
  }
  PyFrameObject* f = PyEval_GetFrame();  // borrowed
  Py_XINCREF(f);
  std::pair<std::string, int> first{"", 0};
  while (f) {
    PyCodeObject* code = PyFrame_GetCode(f);
    nb::object file = nb::steal(PyObject_GetAttrString((PyObject*)code, "co_filename"));
    Py_DECREF(code);
    std::string name = file.is_valid() && PyUnicode_Check(file.ptr()) ? nb::cast<std::string>(file) : "";
    PyErr_Clear();
    std::pair<std::string, int> here{name, PyFrame_GetLineNumber(f)};
    if (first.first.empty()) first = here;
    bool ours = !g_package_dir.empty() && name.rfind(g_package_dir, 0) == 0;
    PyFrameObject* back = ours ? PyFrame_GetBack(f) : nullptr;
    Py_DECREF(f);
    if (!ours) return here;
    f = back;
  }
  return first;
}

namespace {

// Text for Python; bytes that are not UTF-8 (a file's broken header quoted in a message) are escaped.
nb::object py_text(const std::string& s) {
  return nb::steal(PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "backslashreplace"));
}

void set_kiln_error(const Error& e) {
  Error::Info info = e.info();
  auto [file, line] = python_caller();
  if (!file.empty()) info.file = file, info.line = unsigned(line);
  Error located(info);
  nb::object exc = nb::steal(PyObject_CallOneArg(g_error_type, py_text(located.what()).ptr()));
  if (!exc.is_valid()) return;  // the error from the call is already set
  exc.attr("op") = py_text(info.op);
  exc.attr("message") = py_text(info.message);
  exc.attr("inputs") = py_text(info.inputs);
  exc.attr("hint") = py_text(info.hint);
  exc.attr("file") = py_text(info.file);
  exc.attr("line") = info.line;
  PyErr_SetObject(g_error_type, exc.ptr());
}

// What a failed nb::cast inside a binding's body raises (a value of the wrong type or range where
// the binding converts it itself: no argument conversion of nanobind's); a _checked wrapper puts
// the function's name in front.
constexpr const char* kBadCast = "a value converted inside the call has the wrong type or is out of range";

// A nanobind function whose argument errors are explained (see the top of this file).
struct Checked {
  PyObject_HEAD
  PyObject* fn;         // the nanobind function (or method, or property setter)
  vectorcallfunc call;  // fn's own vectorcall
  PyObject* qualname;   // "load", "Tensor.size", "Tensor.requires_grad"
  PyObject* explain;    // explain(fn, qualname, args, kwargs) -> (exception type, message) or None
  vectorcallfunc vectorcall;
};

// nanobind's refusal of this call's own arguments: raised by its dispatcher before the body ran,
// so it names this function, and no Python frame (a hook, a callback the body ran) has added a
// traceback to it. A refusal of another call raised inside the body fails one of the two.
bool refused_at_boundary(const Checked* c, const char* msg, PyObject* trace) {
  if (trace) return false;
  nb::object name = nb::steal(PyObject_GetAttrString(c->fn, "__name__"));
  const char* n = name.is_valid() && PyUnicode_Check(name.ptr()) ? PyUnicode_AsUTF8(name.ptr()) : nullptr;
  if (!n) return PyErr_Clear(), false;
  const std::string expected = std::string(n) + "(): incompatible function arguments";
  return strncmp(msg, expected.data(), expected.size()) == 0;
}

// The call failed with a TypeError: nanobind's refusal of its arguments gets explain's message,
// a failed nb::cast in its body the function's name; anything else stands as raised.
PyObject* explain_failure(Checked* c, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  PyObject *type, *value, *trace;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  nb::object text = nb::steal(value ? PyObject_Str(value) : nullptr);
  const char* msg = text.is_valid() ? PyUnicode_AsUTF8(text.ptr()) : nullptr;
  if (msg && strcmp(msg, kBadCast) == 0 && !trace) {
    PyErr_Format(PyExc_TypeError, "%U(): %s", c->qualname, kBadCast);
    Py_XDECREF(type), Py_XDECREF(value);
    return nullptr;
  }
  if (!msg || !refused_at_boundary(c, msg, trace)) {
    PyErr_Clear();
    PyErr_Restore(type, value, trace);
    return nullptr;
  }
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  nb::object pos = nb::steal(PyTuple_New(n));
  for (Py_ssize_t i = 0; i < n; i++) PyTuple_SET_ITEM(pos.ptr(), i, Py_NewRef(args[i]));
  nb::object kw = nb::steal(PyDict_New());
  Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t i = 0; i < nk; i++) PyDict_SetItem(kw.ptr(), PyTuple_GET_ITEM(kwnames, i), args[n + i]);
  nb::object r = nb::steal(PyObject_CallFunctionObjArgs(c->explain, c->fn, c->qualname, pos.ptr(), kw.ptr(), nullptr));
  if (!r.is_valid() || !PyTuple_Check(r.ptr()) || PyTuple_GET_SIZE(r.ptr()) != 2) {
    PyErr_Clear();  // no better message: the original error stands
    PyErr_Restore(type, value, trace);
    return nullptr;
  }
  Py_XDECREF(type), Py_XDECREF(value), Py_XDECREF(trace);
  PyErr_SetObject(PyTuple_GET_ITEM(r.ptr(), 0), PyTuple_GET_ITEM(r.ptr(), 1));
  return nullptr;
}

PyObject* checked_vectorcall(PyObject* self, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Checked* c = reinterpret_cast<Checked*>(self);
  PyObject* r = c->call(c->fn, args, nargsf, kwnames);
  if (r || !PyErr_ExceptionMatches(PyExc_TypeError)) return r;
  return explain_failure(c, args, nargsf, kwnames);
}

PyObject* checked_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  return PyVectorcall_Call(self, args, kwargs);
}

// Everything else (__name__, __doc__, __nb_signature__, ...) is the wrapped function's.
PyObject* checked_getattro(PyObject* self, PyObject* name) {
  if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "__wrapped__") == 0)
    return Py_NewRef(reinterpret_cast<Checked*>(self)->fn);
  return PyObject_GetAttr(reinterpret_cast<Checked*>(self)->fn, name);
}

PyObject* checked_repr(PyObject* self) { return PyObject_Repr(reinterpret_cast<Checked*>(self)->fn); }

void checked_dealloc(PyObject* self) {
  Checked* c = reinterpret_cast<Checked*>(self);
  Py_XDECREF(c->fn), Py_XDECREF(c->qualname), Py_XDECREF(c->explain);
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

// Methods bind to their instance as Python functions do (and, flagged as method descriptors,
// x.size() calls the wrapper with x first without making a bound method).
PyObject* checked_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (!obj || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyTypeObject* make_checked_type(bool method) {
  std::vector<PyType_Slot> slots = {{Py_tp_call, (void*)checked_call},
                                    {Py_tp_getattro, (void*)checked_getattro},
                                    {Py_tp_repr, (void*)checked_repr},
                                    {Py_tp_dealloc, (void*)checked_dealloc}};
  if (method) slots.push_back({Py_tp_descr_get, (void*)checked_descr_get});
  static PyMemberDef members[] = {
      {"__vectorcalloffset__", T_PYSSIZET, offsetof(Checked, vectorcall), READONLY, nullptr}, {nullptr, 0, 0, 0, nullptr}};
  slots.push_back({Py_tp_members, members});
  slots.push_back({0, nullptr});
  unsigned long flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | (method ? Py_TPFLAGS_METHOD_DESCRIPTOR : 0);
  PyType_Spec spec{method ? "kiln._checked_method" : "kiln._checked_function", int(sizeof(Checked)), 0,
                   (unsigned)flags, slots.data()};
  return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
}

nb::object make_checked(nb::handle fn, nb::handle qualname, nb::handle explain, bool method) {
  static PyTypeObject* types[2] = {make_checked_type(false), make_checked_type(true)};
  vectorcallfunc call = PyVectorcall_Function(fn.ptr());
  if (!call) throw nb::type_error("_checked(): fn must support vectorcall (a nanobind function)");
  PyTypeObject* type = types[method];
  Checked* c = PyObject_New(Checked, type);
  if (!c) throw nb::python_error();
  c->fn = Py_NewRef(fn.ptr());
  c->call = call;
  c->qualname = Py_NewRef(qualname.ptr());
  c->explain = Py_NewRef(explain.ptr());
  c->vectorcall = checked_vectorcall;
  return nb::steal(reinterpret_cast<PyObject*>(c));
}

}  // namespace

void register_errors(nb::module_& m) {
  g_error_type = PyErr_NewExceptionWithDoc(
      "kiln.Error",
      "A kiln error: what went wrong, in which op, with which inputs, a hint, and your source line.\n"
      "Attributes: op, message, inputs, hint, file, line.",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = nb::handle(g_error_type);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error& e) {
      set_kiln_error(e);
    } catch (const std::bad_cast&) {
      PyErr_SetString(PyExc_TypeError, kBadCast);
    }
  });
  m.def("_checked", &make_checked, nb::arg("fn"), nb::arg("qualname"), nb::arg("explain"), nb::arg("method"),
        "fn, whose argument errors explain(fn, qualname, args, kwargs) turns into a clear message.");
}

}  // namespace kiln::py
