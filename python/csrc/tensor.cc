// kiln.Tensor: properties, conversions, autograd methods and Python operators. Op methods
// (x.sum, x.add_) are attached from ops.def by ops.cc; indexing lives in indexing.cc.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bind.h"
#include "core/tensor_impl.h"

namespace kiln::py {

Tensor index_get(const Tensor& self, nb::handle index);
Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype);
void index_set(Tensor& self, nb::handle index, nb::handle value);

namespace {

nb::tuple int_tuple(const Shape& s) {
  nb::list l;
  for (int64_t v : s) l.append(v);
  return nb::tuple(l);
}

// Binary operators: the other operand may be a Tensor or a number; anything else is
// NotImplemented, so Python can try the reflected operator or raise its TypeError.
template <class F>
auto binary(F f) {
  return [f](const Tensor& a, nb::handle b) -> nb::object {
    const Tensor* bt = as_tensor(b);
    if (bt) return nb::cast(f(a, *bt));
    if (!is_py_number(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(f(a, ops::scalar_to_tensor(to_scalar(b))));
  };
}
template <class F>
auto reflected(F f) {
  return [f](const Tensor& a, nb::handle b) -> nb::object {
    if (!is_py_number(b)) return nb::borrow(Py_NotImplemented);
    return nb::cast(f(ops::scalar_to_tensor(to_scalar(b)), a));
  };
}
template <class F>
auto inplace(F f, const char* name) {
  return [f, name](nb::handle self, nb::handle b) -> nb::object {
    Tensor& a = nb::cast<Tensor&>(self);
    const Tensor* bt = as_tensor(b);
    if (!bt && !is_py_number(b)) return nb::borrow(Py_NotImplemented);
    Tensor other = bt ? *bt : ops::scalar_to_tensor(to_scalar(b));
    ops::assign_inplace(a, f(a, other), name);
    return nb::borrow(self);
  };
}

Tensor to_dtype_or_device(const Tensor& t, nb::args args, nb::kwargs kwargs) {
  std::optional<DType> dtype;
  std::optional<Device> device;
  auto take = [&](nb::handle h) {
    if (auto d = as_dtype(h)) dtype = d;
    else if (auto d = as_device(h)) device = d;
    else if (const Tensor* o = as_tensor(h)) dtype = o->dtype(), device = o->device();
    else throw nb::type_error(("Tensor.to(): expected a dtype, a device or a Tensor, not " + py_given(h)).c_str());
  };
  for (nb::handle a : args) take(a);
  for (auto [k, v] : kwargs) {
    std::string key = nb::cast<std::string>(k);
    if (key == "dtype" || key == "device") {
      if (!v.is_none()) take(v);
    } else if (key != "non_blocking" && key != "copy") {
      throw nb::type_error(("to() got an unexpected keyword argument '" + key + "'").c_str());
    }
  }
  Tensor r = t;
  if (device) r = r.to(*device);
  if (dtype) r = r.to(*dtype);
  return r;
}

nb::object item(const Tensor& t) {
  KILN_CHECK_HINT(t.numel() == 1, "use .tolist() for tensors of several elements",
                  "item(): a Tensor with ", t.numel(), " elements cannot be converted to a Python number");
  return scalar_to_py(t.item_scalar());
}

}  // namespace

void bind_tensor(nb::module_& m) {
  const auto kOther = nb::arg("other").none();  // x == None is False, not a TypeError
  auto cls = nb::class_<Tensor>(m, "Tensor", nb::dynamic_attr(), nb::is_weak_referenceable(),
                                "An n-dimensional array with autograd, as torch.Tensor. Make one with kiln.tensor, "
                                "kiln.zeros, kiln.randn, ... or kiln.from_dlpack.");
  // Tensor(t) shares t's data (what nn.Parameter(t) builds on); Tensor(data) copies data, as
  // torch.Tensor, into float32 unless it is already a tensor or array with its own dtype.
  // (args, kwargs) and its own check: nanobind constructs without the argument-error translation.
  cls.def("__init__", [](Tensor* self, nb::args args, nb::kwargs kwargs) {
    const bool keyword = kwargs.size() == 1 && PyDict_GetItemString(kwargs.ptr(), "data");
    if (args.size() + kwargs.size() != 1 || (kwargs.size() == 1 && !keyword))
      throw nb::type_error(("Tensor() takes one argument, data (a Tensor, an array or nested lists of numbers), but " +
                            std::to_string(args.size() + kwargs.size()) + " were given").c_str());
    nb::handle data = keyword ? nb::handle(PyDict_GetItemString(kwargs.ptr(), "data")) : args[0];
    if (const Tensor* t = as_tensor(data)) {
      new (self) Tensor(*t);
      return;
    }
    bool array = PyObject_HasAttrString(data.ptr(), "__dlpack__") || PyObject_CheckBuffer(data.ptr());
    new (self) Tensor(tensor_from_data(data, array ? std::nullopt : std::optional(kFloat32)));
  });
  cls.def_prop_ro("shape", [](const Tensor& t) { return int_tuple(t.sizes()); })
      .def_prop_ro("dtype", [](const Tensor& t) { return dtype_object(t.dtype()); })
      .def_prop_ro("device", [](const Tensor& t) { return PyDevice{t.device()}; })
      .def_prop_ro("ndim", &Tensor::dim)
      .def_prop_ro("is_cuda", [](const Tensor& t) { return t.device().is_cuda(); })
      .def_prop_ro("itemsize", [](const Tensor& t) { return t.element_size(); })
      .def_prop_ro("nbytes", [](const Tensor& t) { return size_t(t.numel()) * t.element_size(); })
      .def_prop_ro("T", [](const Tensor& t) { return t.dim() < 2 ? t : kiln::permute(t, [&] {
        std::vector<int64_t> p;
        for (int64_t i = t.dim() - 1; i >= 0; i--) p.push_back(i);
        return p;
      }()); })
      .def_prop_ro("mT", [](const Tensor& t) { return kiln::mT(t); })
      // `p.data = t` repoints p at t's data (as PyTorch): handles to p, its autograd state and
      // grad slot carry over; Module.to(dtype) relies on it.
      .def_prop_rw("data", [](const Tensor& t) { return t.detach(); },
                   [](Tensor& t, const Tensor& src) { t.impl()->adopt_data(*src.impl()); })
      .def_prop_rw("requires_grad", [](const Tensor& t) { return t.requires_grad(); },
                   [](Tensor& t, bool r) { t.requires_grad_(r); })
      .def_prop_rw("grad", [](const Tensor& t) -> nb::object {
        Tensor g = t.grad();
        return g.defined() ? nb::cast(g) : nb::none();
      }, [](Tensor& t, nb::handle g) {
        if (g.is_none()) t.set_grad(Tensor());
        else if (const Tensor* gt = as_tensor(g)) t.set_grad(*gt);
        else throw nb::type_error("grad must be a Tensor or None");
      }, nb::arg("grad").none())
      .def_prop_ro("is_leaf", &Tensor::is_leaf)
      .def_prop_ro("grad_fn", [](const Tensor& t) -> nb::object {
        std::string n = t.grad_fn_name();
        if (n.empty()) return nb::none();
        return nb::str(n.c_str());
      })
      .def("size", [](const Tensor& t, nb::object dim) -> nb::object {
        if (dim.is_none()) return int_tuple(t.sizes());
        return nb::int_(t.size(int_arg(dim, "Tensor.size", "dim")));
      }, nb::arg("dim") = nb::none())
      .def("stride", [](const Tensor& t, nb::object dim) -> nb::object {
        if (dim.is_none()) return int_tuple(t.strides());
        return nb::int_(t.stride(int_arg(dim, "Tensor.stride", "dim")));
      }, nb::arg("dim") = nb::none())
      .def("dim", &Tensor::dim)
      .def("ndimension", &Tensor::dim)
      .def("numel", &Tensor::numel)
      .def("nelement", &Tensor::numel)
      .def("element_size", &Tensor::element_size)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def("is_floating_point", &Tensor::is_floating_point)
      .def("storage_offset", &Tensor::storage_offset)
      .def("data_ptr", [](const Tensor& t) { return uintptr_t(t.data_ptr()); })
      .def("item", &item)
      .def("__repr__", &Tensor::str)
      .def("__len__", [](const Tensor& t) {
        KILN_CHECK(t.dim() > 0, "len() of a 0-d tensor");
        return t.size(0);
      })
      .def("__iter__", [](const Tensor& t) {
        KILN_CHECK(t.dim() > 0, "iteration over a 0-d tensor");
        nb::list l;
        for (int64_t i = 0; i < t.size(0); i++) l.append(nb::cast(kiln::select(t, 0, i)));
        return nb::iter(l);
      })
      .def("__bool__", [](const Tensor& t) {
        KILN_CHECK_HINT(t.numel() == 1, "use .any() or .all()", "the truth value of a Tensor with ", t.numel(),
                        " elements is ambiguous");
        return t.item_scalar().to_bool();
      })
      .def("__float__", [](const Tensor& t) { return nb::cast<double>(nb::float_(item(t))); })
      .def("__int__", [](const Tensor& t) { return t.item_scalar().to_int(); })
      .def("__index__", [](const Tensor& t) {
        KILN_CHECK(t.numel() == 1 && is_integral(t.dtype(), true),
                   "only integer tensors of a single element can be converted to an index");
        return t.item_scalar().to_int();
      })
      .def("__hash__", [](nb::handle self) { return (Py_ssize_t)(uintptr_t)self.ptr(); })
      // autograd
      .def("backward", [](const Tensor& t, nb::object gradient, nb::object retain_graph, bool create_graph) {
        if (!gradient.is_none() && !as_tensor(gradient))
          arg_type_error("Tensor.backward", "gradient", "a kiln.Tensor or None", gradient);
        Tensor g = gradient.is_none() ? Tensor() : *as_tensor(gradient);
        bool retain = retain_graph.is_none() ? create_graph : bool_arg(retain_graph, "Tensor.backward", "retain_graph");
        t.backward(g, retain, create_graph);
      }, nb::arg("gradient") = nb::none(), nb::arg("retain_graph") = nb::none(), nb::arg("create_graph") = false)
      .def("detach", &Tensor::detach)
      .def("detach_", [](nb::handle self) { nb::cast<Tensor&>(self).detach_(); return nb::borrow(self); })
      .def("requires_grad_", [](nb::handle self, bool r) {
        nb::cast<Tensor&>(self).requires_grad_(r);
        return nb::borrow(self);
      }, nb::arg("requires_grad") = true)
      .def("retain_grad", &Tensor::retain_grad)
      .def("register_hook", [](const Tensor& t, nb::object fn) {
        t.register_hook([fn](const Tensor& g) -> Tensor {
          nb::gil_scoped_acquire gil;
          nb::object r = fn(g);
          if (r.is_none()) return Tensor();
          if (const Tensor* t = as_tensor(r)) return *t;
          throw nb::type_error(("Tensor.register_hook(): a hook must return a kiln.Tensor or None, but it returned " +
                                py_given(r)).c_str());
        });
      })
      // conversions
      .def("to", &to_dtype_or_device)
      .def("cpu", [](const Tensor& t) { return t.to(kCPU); })
      .def("cuda", [](const Tensor& t, nb::handle device, bool) {
        // torch's: cuda(device=None) -> the current device; an int or a device names another.
        Device d{DeviceType::CUDA, cuda::is_available() ? cuda::current_device() : 0};
        if (PyLong_Check(device.ptr())) d.index = int16_t(nb::cast<int>(device));
        else if (!device.is_none()) {
          std::optional<Device> given = as_device(device);
          if (!given || !given->is_cuda()) throw nb::type_error(("Tensor.cuda(): expected a CUDA device or an index, not " + py_given(device)).c_str());
          d = *given;
        }
        return t.to(d);
      }, nb::arg("device").none() = nb::none(), nb::arg("non_blocking") = false)
      .def("float", [](const Tensor& t) { return t.to(kFloat32); })
      .def("double", [](const Tensor& t) { return t.to(kFloat64); })
      .def("half", [](const Tensor& t) { return t.to(kFloat16); })
      .def("bfloat16", [](const Tensor& t) { return t.to(kBFloat16); })
      .def("long", [](const Tensor& t) { return t.to(kInt64); })
      .def("int", [](const Tensor& t) { return t.to(kInt32); })
      .def("short", [](const Tensor& t) { return t.to(kInt16); })
      .def("bool", [](const Tensor& t) { return t.to(kBool); })
      .def("byte", [](const Tensor& t) { return t.to(kUInt8); })
      .def("type_as", [](const Tensor& t, const Tensor& o) { return t.to(o.dtype()); })
      .def("fill_", [](nb::handle self, nb::handle v) {
        nb::cast<Tensor&>(self).fill_(to_scalar(v));
        return nb::borrow(self);
      })
      .def("zero_", [](nb::handle self) { nb::cast<Tensor&>(self).zero_(); return nb::borrow(self); })
      .def("copy_", [](nb::handle self, nb::handle src) {
        Tensor& t = nb::cast<Tensor&>(self);
        kiln::copy_(t, to_tensor_or_number(src, "copy_(): src"));
        return nb::borrow(self);
      })
      .def("__getitem__", &index_get, nb::arg("index").none())
      .def("__setitem__", [](Tensor& t, nb::handle i, nb::handle v) { index_set(t, i, v); }, nb::arg("index").none(), nb::arg("value").none())
      // operators
      .def("__add__", binary([](const Tensor& a, const Tensor& b) { return kiln::add(a, b); }), kOther)
      .def("__radd__", reflected([](const Tensor& a, const Tensor& b) { return kiln::add(a, b); }), kOther)
      .def("__sub__", binary([](const Tensor& a, const Tensor& b) { return kiln::sub(a, b); }), kOther)
      .def("__rsub__", reflected([](const Tensor& a, const Tensor& b) { return kiln::sub(a, b); }), kOther)
      .def("__mul__", binary([](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); }), kOther)
      .def("__rmul__", reflected([](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); }), kOther)
      .def("__truediv__", binary([](const Tensor& a, const Tensor& b) { return kiln::div(a, b); }), kOther)
      .def("__rtruediv__", reflected([](const Tensor& a, const Tensor& b) { return kiln::div(a, b); }), kOther)
      .def("__floordiv__", binary([](const Tensor& a, const Tensor& b) { return kiln::floor_divide(a, b); }), kOther)
      .def("__rfloordiv__", reflected([](const Tensor& a, const Tensor& b) { return kiln::floor_divide(a, b); }), kOther)
      .def("__mod__", binary([](const Tensor& a, const Tensor& b) { return kiln::remainder(a, b); }), kOther)
      .def("__rmod__", reflected([](const Tensor& a, const Tensor& b) { return kiln::remainder(a, b); }), kOther)
      .def("__pow__", binary([](const Tensor& a, const Tensor& b) { return kiln::pow(a, b); }), kOther)
      .def("__rpow__", reflected([](const Tensor& a, const Tensor& b) { return kiln::pow(a, b); }), kOther)
      .def("__matmul__", binary([](const Tensor& a, const Tensor& b) { return kiln::matmul(a, b); }), kOther)
      .def("__and__", binary([](const Tensor& a, const Tensor& b) { return kiln::bitwise_and(a, b); }), kOther)
      .def("__rand__", reflected([](const Tensor& a, const Tensor& b) { return kiln::bitwise_and(a, b); }), kOther)
      .def("__or__", binary([](const Tensor& a, const Tensor& b) { return kiln::bitwise_or(a, b); }), kOther)
      .def("__ror__", reflected([](const Tensor& a, const Tensor& b) { return kiln::bitwise_or(a, b); }), kOther)
      .def("__xor__", binary([](const Tensor& a, const Tensor& b) { return kiln::bitwise_xor(a, b); }), kOther)
      .def("__rxor__", reflected([](const Tensor& a, const Tensor& b) { return kiln::bitwise_xor(a, b); }), kOther)
      .def("__lshift__", binary([](const Tensor& a, const Tensor& b) { return kiln::shift_left(a, b); }), kOther)
      .def("__rshift__", binary([](const Tensor& a, const Tensor& b) { return kiln::shift_right_arithmetic(a, b); }), kOther)
      .def("__eq__", binary([](const Tensor& a, const Tensor& b) { return kiln::eq(a, b); }), kOther)
      .def("__ne__", binary([](const Tensor& a, const Tensor& b) { return kiln::ne(a, b); }), kOther)
      .def("__lt__", binary([](const Tensor& a, const Tensor& b) { return kiln::lt(a, b); }), kOther)
      .def("__le__", binary([](const Tensor& a, const Tensor& b) { return kiln::le(a, b); }), kOther)
      .def("__gt__", binary([](const Tensor& a, const Tensor& b) { return kiln::gt(a, b); }), kOther)
      .def("__ge__", binary([](const Tensor& a, const Tensor& b) { return kiln::ge(a, b); }), kOther)
      .def("__iadd__", inplace([](const Tensor& a, const Tensor& b) { return kiln::add(a, b); }, "add_"), kOther)
      .def("__isub__", inplace([](const Tensor& a, const Tensor& b) { return kiln::sub(a, b); }, "sub_"), kOther)
      .def("__imul__", inplace([](const Tensor& a, const Tensor& b) { return kiln::mul(a, b); }, "mul_"), kOther)
      .def("__itruediv__", inplace([](const Tensor& a, const Tensor& b) { return kiln::div(a, b); }, "div_"), kOther)
      .def("__neg__", [](const Tensor& a) { return kiln::neg(a); })
      .def("__pos__", [](const Tensor& a) { return a; })
      .def("__abs__", [](const Tensor& a) { return kiln::abs(a); })
      .def("__invert__", [](const Tensor& a) {
        return a.dtype() == kBool ? kiln::logical_not(a) : kiln::bitwise_not(a);
      });
}

}  // namespace kiln::py
