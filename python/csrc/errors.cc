// kiln::Error -> kiln.Error (a RuntimeError) whose location is the Python caller's line, not
// kiln's C++ or kiln's own Python wrappers.
#include <string>

#include "bind.h"  // Python.h first

#include <frameobject.h>

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

void set_kiln_error(const Error& e) {
  Error::Info info = e.info();
  auto [file, line] = python_caller();
  if (!file.empty()) info.file = file, info.line = unsigned(line);
  Error located(info);
  nb::object exc = nb::steal(PyObject_CallOneArg(g_error_type, nb::str(located.what()).ptr()));
  if (!exc.is_valid()) return;  // the error from the call is already set
  exc.attr("op") = nb::str(info.op.c_str());
  exc.attr("message") = nb::str(info.message.c_str());
  exc.attr("inputs") = nb::str(info.inputs.c_str());
  exc.attr("hint") = nb::str(info.hint.c_str());
  exc.attr("file") = nb::str(info.file.c_str());
  exc.attr("line") = info.line;
  PyErr_SetObject(g_error_type, exc.ptr());
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
    }
  });
}

}  // namespace kiln::py
