// Guards on the Python values a traced function read (py_guards.cc), for the compile binding.
#pragma once
#include <kiln/compile.h>

#include "bind.h"

namespace kiln::py {

// While alive: the running compiled call's arguments, as the (args, kwargs) tuple the guards on
// values reached from them ("argument cfg, attribute k") read.
class CallRootsScope {
 public:
  explicit CallRootsScope(PyObject* roots);
  ~CallRootsScope();
  CallRootsScope(const CallRootsScope&) = delete;
  CallRootsScope& operator=(const CallRootsScope&) = delete;

 private:
  PyObject* prev_;
};

// GC traversal of the Python objects an engine's external guards hold (a tree's Python object).
int visit_guards(const capture::ExternalGuards& g, visitproc visit, void* arg);

void bind_guards(nb::module_& m);  // kiln._C._GuardTree, _tracing, _graph_break

}  // namespace kiln::py
