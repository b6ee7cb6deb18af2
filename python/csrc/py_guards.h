// Guards on the Python values a traced function read (py_guards.cc), for the compile binding.
#pragma once
#include <kiln/compile.h>

#include "bind.h"

namespace kiln::py {

// While alive: the running compiled call's arguments, as the (args, kwargs) tuple the guards on
// values reached from them ("argument cfg, attribute k") read. The fast call path gives its args
// tuple and kwargs dict (or null): the tuple is built only if a guard reads it.
class CallRootsScope {
 public:
  explicit CallRootsScope(PyObject* roots);
  CallRootsScope(PyObject* args, PyObject* kwargs);
  ~CallRootsScope();
  CallRootsScope(const CallRootsScope&) = delete;
  CallRootsScope& operator=(const CallRootsScope&) = delete;
  PyObject* roots();  // borrowed; null if it cannot be built (a Python error is then set)

 private:
  CallRootsScope* prev_;
  PyObject* args_ = nullptr;
  PyObject* kwargs_ = nullptr;
  nb::object roots_;
};

// GC traversal of the Python objects an engine's external guards hold (a tree's Python object).
int visit_guards(const capture::ExternalGuards& g, visitproc visit, void* arg);

void bind_guards(nb::module_& m);  // kiln._C._GuardTree, _tracing, _graph_break

}  // namespace kiln::py
