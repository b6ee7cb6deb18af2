// Python values -> kiln values: numbers, dtypes, devices, tensors, and op arguments by schema.
#include <string>

#include "bind.h"

namespace kiln::py {
namespace {

nb::handle g_dtypes[kNumDTypes];  // owned by the module's attributes (kiln.float32, ...)

[[noreturn]] void bad_arg(const std::string& fn, const ops::SchemaArg& sa, nb::handle h, const char* want) {
  throw nb::type_error((fn + "(): argument '" + sa.name + "' must be " + want + ", not " + py_type_name(h)).c_str());
}

bool is_bool(nb::handle h) { return PyBool_Check(h.ptr()); }
// Python ints and objects with __index__ (numpy integers, integer 0-d tensors), not bools.
bool is_index(nb::handle h) { return !is_bool(h) && (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())); }

// h as an int64 (h is an int or has __index__); ValueError naming fn and arg past int64's range.
int64_t to_i64(nb::handle h, const std::string& fn, const std::string& arg) {
  int overflow = 0;
  if (PyLong_CheckExact(h.ptr())) {  // the common case, without a new reference
    long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
    if (!overflow) return v;
  }
  nb::object i = nb::steal(PyNumber_Index(h.ptr()));
  if (!i.is_valid()) throw nb::python_error();
  long long v = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  if (overflow) {
    std::string where = fn.empty() ? "an int" : fn + "(): argument '" + arg + "'";
    throw nb::value_error((where + " must be in int64's range [-2**63, 2**63 - 1], got " + nb::cast<std::string>(nb::str(i))).c_str());
  }
  return v;
}

// A list of ints from an int or a sequence of ints; false (with the offending item in `bad`) if
// h is neither.
bool to_ints(nb::handle h, std::vector<int64_t>& out, const std::string& fn, const std::string& arg, nb::handle& bad) {
  bad = h;
  if (is_index(h)) {
    out.push_back(to_i64(h, fn, arg));
    return true;
  }
  if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr())) return false;
  for (nb::handle e : h) {
    bad = e;
    if (!is_index(e)) return false;
    out.push_back(to_i64(e, fn, arg));
  }
  return true;
}

}  // namespace

std::string py_type_name(nb::handle h) {
  return nb::cast<std::string>(nb::handle((PyObject*)Py_TYPE(h.ptr())).attr("__name__"));
}

std::string py_given(nb::handle h) {
  std::string type = py_type_name(h);
  if (!PyLong_Check(h.ptr()) && !PyFloat_Check(h.ptr()) && !PyUnicode_Check(h.ptr())) return type;
  nb::object r = nb::steal(PyObject_Repr(h.ptr()));
  if (!r.is_valid()) {
    PyErr_Clear();
    return type;
  }
  std::string text = nb::cast<std::string>(r);
  return text.size() > 40 ? type : type + " (" + text + ")";
}

void arg_type_error(const char* fn, const char* arg, const char* accepted, nb::handle given) {
  throw nb::type_error((std::string(fn) + "(): argument '" + arg + "' must be " + accepted + ", not " + py_given(given)).c_str());
}

int64_t int_arg(nb::handle h, const char* fn, const char* arg) {
  if (!is_index(h)) arg_type_error(fn, arg, "an int", h);
  return to_i64(h, fn, arg);
}

bool bool_arg(nb::handle h, const char* fn, const char* arg) {
  if (!is_bool(h)) arg_type_error(fn, arg, "a bool", h);
  return h.ptr() == Py_True;
}

Tensor tensor_arg(nb::handle h, const char* fn, const char* arg) {
  const Tensor* t = as_tensor(h);
  if (!t) arg_type_error(fn, arg, "a kiln.Tensor", h);
  return *t;
}

std::string str_arg(nb::handle h, const char* fn, const char* arg) {
  if (!PyUnicode_Check(h.ptr())) arg_type_error(fn, arg, "a str", h);
  return nb::cast<std::string>(h);
}

nb::object dtype_object(DType t) { return nb::borrow(g_dtypes[int(t)]); }

std::optional<DType> as_dtype(nb::handle h) {
  for (int i = 0; i < kNumDTypes; i++)
    if (h.is(g_dtypes[i])) return DType(i);
  return std::nullopt;
}

std::optional<Device> as_device(nb::handle h) {
  if (PyUnicode_Check(h.ptr())) return Device(nb::cast<std::string>(h));
  PyDevice* d = nullptr;
  if (nb::try_cast<PyDevice*>(h, d) && d) return d->device;
  return std::nullopt;
}

bool is_py_number(nb::handle h) { return PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()); }

Scalar to_scalar(nb::handle h) {
  if (is_bool(h)) return Scalar(h.ptr() == Py_True);
  if (PyFloat_Check(h.ptr())) return Scalar(PyFloat_AS_DOUBLE(h.ptr()));
  if (PyLong_Check(h.ptr())) return Scalar(to_i64(h, "", ""));
  if (const Tensor* t = as_tensor(h)) {
    if (t->numel() != 1)
      throw nb::type_error(("a Tensor with " + std::to_string(t->numel()) + " elements cannot be used as a number").c_str());
    return t->item_scalar();
  }
  if (PyIndex_Check(h.ptr())) return Scalar(to_i64(h, "", ""));
  if (PyFloat_Check(h.ptr()) || PyObject_HasAttrString(h.ptr(), "__float__")) {
    double d = PyFloat_AsDouble(h.ptr());
    if (d == -1.0 && PyErr_Occurred()) throw nb::python_error();
    return Scalar(d);
  }
  throw nb::type_error(("expected a number, not " + py_type_name(h)).c_str());
}

nb::object scalar_to_py(const Scalar& s) {
  if (s.is_bool()) return nb::bool_(s.to_bool());
  if (s.is_int()) return nb::int_(s.to_int());
  return nb::float_(s.to_double());
}

const Tensor* as_tensor(nb::handle h) {
  Tensor* t = nullptr;
  if (nb::try_cast<Tensor*>(h, t) && t) return t;
  return nullptr;
}

Tensor to_tensor_or_number(nb::handle h, const char* what) {
  if (const Tensor* t = as_tensor(h)) return *t;
  if (is_py_number(h) || PyIndex_Check(h.ptr()) || PyObject_HasAttrString(h.ptr(), "__float__"))
    return ops::scalar_to_tensor(to_scalar(h));
  throw nb::type_error((std::string(what) + " must be a Tensor or a number, not " + py_type_name(h)).c_str());
}

ops::Arg to_arg(const ops::SchemaArg& sa, nb::handle h, const std::string& fn) {
  using ops::ArgType;
  if (h.is_none()) {
    if (sa.optional()) return std::monostate{};
    bad_arg(fn, sa, h, ops::arg_type_name(sa.type));
  }
  switch (sa.type) {
    case ArgType::Tensor: case ArgType::OptTensor: {
      if (const Tensor* t = as_tensor(h)) return *t;
      if (PyLong_Check(h.ptr()) && !is_bool(h)) return ops::scalar_to_tensor(Scalar(to_i64(h, fn, sa.name)));
      if (is_py_number(h)) return ops::scalar_to_tensor(to_scalar(h));
      bad_arg(fn, sa, h, "a Tensor or a number");
    }
    case ArgType::TensorList: case ArgType::OptTensorList: {
      if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr())) bad_arg(fn, sa, h, "a list or tuple of Tensors");
      TensorList out;
      for (nb::handle e : h) {
        if (e.is_none() && sa.type == ArgType::OptTensorList) {
          out.emplace_back();
        } else if (const Tensor* t = as_tensor(e)) {
          out.push_back(*t);
        } else {
          bad_arg(fn, sa, e, "a list of Tensors (found an element that is not a Tensor)");
        }
      }
      return out;
    }
    case ArgType::Scalar: case ArgType::OptScalar:
      if (PyLong_Check(h.ptr()) && !is_bool(h)) return Scalar(to_i64(h, fn, sa.name));
      if (is_py_number(h) || as_tensor(h) || PyIndex_Check(h.ptr())) return to_scalar(h);
      bad_arg(fn, sa, h, "a number");
    case ArgType::Int: case ArgType::OptInt:
      if (is_index(h)) return to_i64(h, fn, sa.name);
      bad_arg(fn, sa, h, "an int");
    case ArgType::SymInt: case ArgType::OptSymInt:
      if (is_index(h)) return SymInt(to_i64(h, fn, sa.name));
      bad_arg(fn, sa, h, "an int");
    case ArgType::IntList: case ArgType::OptIntList: case ArgType::SymIntList: case ArgType::OptSymIntList: {
      std::vector<int64_t> v;
      nb::handle bad;
      if (!to_ints(h, v, fn, sa.name, bad)) {
        if (bad.is(h)) bad_arg(fn, sa, h, "an int or a sequence of ints");
        throw nb::type_error((fn + "(): argument '" + sa.name + "' must be an int or a sequence of ints, but " +
                              py_type_name(h) + " element " + std::to_string(v.size()) + " is " + py_given(bad))
                                 .c_str());
      }
      if (sa.type == ArgType::SymIntList || sa.type == ArgType::OptSymIntList) return SymShape(v.begin(), v.end());
      return v;
    }
    case ArgType::Float: case ArgType::OptFloat:
      if (!is_bool(h) && (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr()) ||
                          PyObject_HasAttrString(h.ptr(), "__float__")))
        return to_scalar(h).to_double();
      bad_arg(fn, sa, h, "a float");
    case ArgType::OptFloatList: {
      std::vector<double> v;
      if (PyFloat_Check(h.ptr()) || is_index(h)) return std::vector<double>{to_scalar(h).to_double()};
      if (!PyList_Check(h.ptr()) && !PyTuple_Check(h.ptr())) bad_arg(fn, sa, h, "a float or a sequence of floats");
      for (nb::handle e : h) v.push_back(to_scalar(e).to_double());
      return v;
    }
    case ArgType::Bool: case ArgType::OptBool:
      if (is_bool(h)) return h.ptr() == Py_True;
      bad_arg(fn, sa, h, "a bool");
    case ArgType::ScalarType: case ArgType::OptScalarType:
      if (auto d = as_dtype(h)) return *d;
      bad_arg(fn, sa, h, "a kiln.dtype (kiln.float32, ...)");
    case ArgType::OptDevice:
      if (auto d = as_device(h)) return *d;
      bad_arg(fn, sa, h, "a kiln.device or a string like 'cpu'");
    case ArgType::Str: case ArgType::OptStr:
      if (PyUnicode_Check(h.ptr())) return nb::cast<std::string>(h);
      bad_arg(fn, sa, h, "a str");
  }
  bad_arg(fn, sa, h, "?");
}

void bind_dtypes(nb::module_& m) {
  nb::class_<PyDType>(m, "dtype", "An element type: kiln.float32, kiln.bfloat16, kiln.int64, ...")
      .def_prop_ro("is_floating_point", [](const PyDType& d) { return is_floating(d.type); })
      .def_prop_ro("itemsize", [](const PyDType& d) { return itemsize(d.type); })
      .def("__repr__", [](const PyDType& d) { return std::string("kiln.") + name(d.type); })
      .def("__str__", [](const PyDType& d) { return std::string("kiln.") + name(d.type); })
      .def("__reduce__", [](const PyDType& d) { return std::string(name(d.type)); });
  for (int i = 0; i < kNumDTypes; i++) {
    nb::object d = nb::cast(PyDType{DType(i)});
    m.attr(name(DType(i))) = d;
    g_dtypes[i] = d;
  }
  // PyTorch's other names for the same types.
  m.attr("float") = g_dtypes[int(kFloat32)];
  m.attr("double") = g_dtypes[int(kFloat64)];
  m.attr("half") = g_dtypes[int(kFloat16)];
  m.attr("long") = g_dtypes[int(kInt64)];
  m.attr("int") = g_dtypes[int(kInt32)];
  m.attr("short") = g_dtypes[int(kInt16)];
  nb::class_<PyDevice>(m, "device", "Where a tensor lives: kiln.device('cpu'), kiln.device('cuda:0')")
      // device('cuda:0'), device('cuda', 0). (args, kwargs) and its own checks: nanobind constructs
      // without the argument-error translation (kiln/_argerrors.py).
      .def("__init__", [](PyDevice* self, nb::args args, nb::kwargs kwargs) {
        nb::handle type = args.size() > 0 ? args[0] : nb::handle(PyDict_GetItemString(kwargs.ptr(), "type"));
        nb::handle index = args.size() > 1 ? args[1] : nb::handle(PyDict_GetItemString(kwargs.ptr(), "index"));
        size_t known = args.size() + (PyDict_GetItemString(kwargs.ptr(), "type") != nullptr) +
                       (PyDict_GetItemString(kwargs.ptr(), "index") != nullptr);
        if (!type.is_valid() || args.size() > 2 || known != args.size() + kwargs.size())
          throw nb::type_error("device() takes type (a str like 'cpu' or 'cuda:0') and optionally index (an int)");
        std::string spec = str_arg(type, "device", "type");
        if (index.is_valid() && !index.is_none())
          spec.append(1, ':').append(std::to_string(int_arg(index, "device", "index")));
        new (self) PyDevice{Device(spec)};
      })
      .def_prop_ro("type", [](const PyDevice& d) { return name(d.device.type); })
      .def_prop_ro("index", [](const PyDevice& d) { return d.device.index; })
      .def("__eq__", [](const PyDevice& a, nb::handle b) {
        auto d = as_device(b);
        return d && *d == a.device;
      })
      .def("__hash__", [](const PyDevice& d) { return int(d.device.type) * 1000 + d.device.index; })
      .def("__str__", [](const PyDevice& d) { return d.device.str(); })
      .def("__repr__", [](const PyDevice& d) {
        const std::string type = std::string("device(type='") + name(d.device.type) + "'";
        return d.device.is_cpu() ? type + ")" : type + ", index=" + std::to_string(d.device.index) + ")";
      });
}

}  // namespace kiln::py
