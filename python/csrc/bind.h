// Shared pieces of the kiln Python extension (kiln._C): Python <-> kiln conversions and the
// binders each source file contributes to the module.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <kiln/kiln.h>

#include "ops/dispatch.h"
#include "ops/schema.h"

namespace nb = nanobind;

namespace kiln::py {

// The kiln.dtype and kiln.device objects (one Python object per dtype).
struct PyDType {
  DType type;
};
struct PyDevice {
  Device device;
};
nb::object dtype_object(DType t);
// A dtype from a kiln.dtype object (nullopt if `h` is not one).
std::optional<DType> as_dtype(nb::handle h);
std::optional<Device> as_device(nb::handle h);

// The name of h's Python type, for error messages.
std::string py_type_name(nb::handle h);
// What a caller passed, for error messages: its type, and its value when short ("float (4.5)").
std::string py_given(nb::handle h);

// Arguments of hand-written bindings, checked: a TypeError (wrong type) or ValueError (out of
// range) that names the function, the argument, what was given and what is accepted, in the
// format of every argument error: "fn(): argument 'arg' must be <accepted>, not <given>".
[[noreturn]] void arg_type_error(const char* fn, const char* arg, const char* accepted, nb::handle given);
int64_t int_arg(nb::handle h, const char* fn, const char* arg);  // an int or __index__, in int64's range
bool bool_arg(nb::handle h, const char* fn, const char* arg);
Tensor tensor_arg(nb::handle h, const char* fn, const char* arg);
std::string str_arg(nb::handle h, const char* fn, const char* arg);

// Python numbers: bool, int (incl. numpy integers via __index__), float (incl. numpy floats).
bool is_py_number(nb::handle h);
Scalar to_scalar(nb::handle h);  // a number or a 0-d tensor; TypeError otherwise
nb::object scalar_to_py(const Scalar& s);

// A kiln.Tensor from `h`: a Tensor, or a Python number as a wrapped 0-d tensor. Null if neither.
const Tensor* as_tensor(nb::handle h);
Tensor to_tensor_or_number(nb::handle h, const char* what);

// Converts one Python value to an op argument as its schema asks; raises TypeError naming
// `fn` and the argument otherwise.
ops::Arg to_arg(const ops::SchemaArg& sa, nb::handle h, const std::string& fn);
// Runs an op given Python arguments (self is the receiver for methods, or null).
nb::object call_op(const std::vector<ops::OpId>& overloads, nb::handle self, nb::args args, nb::kwargs kwargs);
nb::object wrap_outputs(ops::OpId op, std::vector<Tensor>&& out);

// kiln.Error carries the Python caller's file and line; kiln._C._checked wraps a nanobind
// function so that its argument errors say what is wrong (see errors.cc).
void register_errors(nb::module_& m);
// The innermost Python frame outside the kiln package (file, line).
std::pair<std::string, int> python_caller();

void bind_dtypes(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_ops(nb::module_& m, nb::handle tensor_cls);
void bind_interop(nb::module_& m, nb::handle tensor_cls);
void bind_autograd(nb::module_& m);
void bind_runtime(nb::module_& m);
void bind_optim(nb::module_& m);
void bind_compile(nb::module_& m);
void bind_tile(nb::module_& m);
void bind_graph_view(nb::module_& m);  // graph_view.cc: the captured graph for kiln.onnx

}  // namespace kiln::py
