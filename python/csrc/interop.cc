// Data in and out of kiln: kiln.tensor(nested lists / numbers / arrays), DLPack both ways
// (kiln.from_dlpack shares memory; torch.from_dlpack(kiln_tensor) too), NumPy (.numpy(),
// __array__), .tolist().
#include <nanobind/ndarray.h>

#include "bind.h"
#include "core/tensor_impl.h"

namespace kiln::py {
namespace {

using nb::dlpack::dtype_code;

std::optional<DType> from_dl(nb::dlpack::dtype t) {
  if (t.lanes != 1) return std::nullopt;
  switch (dtype_code(t.code)) {
    case dtype_code::Int:
      return t.bits == 8 ? kInt8 : t.bits == 16 ? kInt16 : t.bits == 32 ? kInt32 : t.bits == 64 ? std::optional(kInt64) : std::nullopt;
    case dtype_code::UInt:
      return t.bits == 8 ? std::optional(kUInt8) : std::nullopt;
    case dtype_code::Float:
      return t.bits == 16 ? kFloat16 : t.bits == 32 ? kFloat32 : t.bits == 64 ? std::optional(kFloat64) : std::nullopt;
    case dtype_code::Bfloat:
      return t.bits == 16 ? std::optional(kBFloat16) : std::nullopt;
    case dtype_code::Bool:
      return t.bits == 8 ? std::optional(kBool) : std::nullopt;
    default:
      return std::nullopt;
  }
}

nb::dlpack::dtype to_dl(DType t) {
  nb::dlpack::dtype d{0, uint8_t(itemsize(t) * 8), 1};
  switch (t) {
    case kBool: d.code = uint8_t(dtype_code::Bool); break;
    case kUInt8: d.code = uint8_t(dtype_code::UInt); break;
    case kInt8: case kInt16: case kInt32: case kInt64: d.code = uint8_t(dtype_code::Int); break;
    case kBFloat16: d.code = uint8_t(dtype_code::Bfloat); break;
    default: d.code = uint8_t(dtype_code::Float); break;
  }
  return d;
}

// A kiln tensor over an array's memory; the array stays alive as long as the storage.
template <class Array>
Tensor wrap_array(const Array& a) {
  KILN_CHECK_HINT(a.device_type() == nb::device::cpu::value, "copy it to the CPU first",
                  "from_dlpack: kiln can only share CPU memory in this build (device type ", a.device_type(), ")");
  auto dt = from_dl(a.dtype());
  KILN_CHECK_HINT(dt.has_value(), "convert the array to a real, non-complex type first",
                  "from_dlpack: unsupported element type (code ", int(a.dtype().code), ", ", int(a.dtype().bits), " bits)");
  Shape sizes, strides;
  for (size_t i = 0; i < a.ndim(); i++) {
    sizes.push_back(int64_t(a.shape(i)));
    strides.push_back(int64_t(a.stride(i)));
  }
  Tensor t = from_blob(const_cast<void*>(static_cast<const void*>(a.data())), sizes, *dt, strides);
  auto* keep = new Array(a);
  t.impl()->storage->owner = std::shared_ptr<void>(keep, [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<Array*>(p);
  });
  return t;
}

template <class... Framework>
nb::ndarray<Framework...> to_array(const Tensor& t) {
  // Reading the data of a fake tensor computes it under kiln.lazy() and breaks the graph while
  // compiling, as item() and tolist() do; the values now leave kiln (capture's hook).
  t.data_ptr();
  note_values_read(t.impl());
  KILN_CHECK(t.device().is_cpu(), "only CPU tensors can be exported in this build");
  std::vector<size_t> shape;
  std::vector<int64_t> strides;
  for (int64_t i = 0; i < t.dim(); i++) {
    shape.push_back(size_t(t.size(i)));
    strides.push_back(t.stride(i));
  }
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  return nb::ndarray<Framework...>(t.data_ptr(), shape.size(), shape.data(), owner, strides.data(), to_dl(t.dtype()),
                                nb::device::cpu::value, 0);
}

Tensor from_dlpack(nb::handle obj) {
  if (const Tensor* t = as_tensor(obj)) return *t;
  nb::ndarray<> a;
  if (nb::try_cast(obj, a)) return wrap_array(a);
  nb::ndarray<nb::ro> ro;
  if (nb::try_cast(obj, ro)) return wrap_array(ro).clone();  // read-only memory: kiln tensors are writable
  throw nb::type_error("from_dlpack: expected an object with __dlpack__ or the buffer protocol (a PyTorch tensor, "
                       "a NumPy array, ...)");
}

// The shape and kind of nested Python sequences of numbers.
struct DataShape {
  Shape sizes;
  bool any_float = false, any_int = false, any_bool = false;
};

// Deeper nesting is refused (ValueError, as PyTorch's "too many dimensions"): scan recurses on
// the C stack, and a list nested 1e5 deep would overflow it.
constexpr size_t kMaxNesting = 128;

void scan(nb::handle h, size_t depth, DataShape& s) {
  if (depth > kMaxNesting)
    throw nb::value_error(("tensor(): the data is nested more than " + std::to_string(kMaxNesting) +
                           " levels deep (too many dimensions)")
                              .c_str());
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr()) || as_tensor(h)) {
    if (const Tensor* t = as_tensor(h)) {
      KILN_CHECK(t->dim() == 0, "tensor(): nested tensors must be 0-d (got ", t->dim(), "-d); use kiln.stack");
      if (is_floating(t->dtype())) s.any_float = true;
      else if (t->dtype() != kBool) s.any_int = true;
      else s.any_bool = true;
      KILN_CHECK(depth == s.sizes.size(), "tensor(): ragged nested sequence");
      return;
    }
    int64_t n = int64_t(nb::len(h));
    if (depth == s.sizes.size()) s.sizes.push_back(n);
    KILN_CHECK(depth < s.sizes.size() && s.sizes[depth] == n, "tensor(): ragged nested sequence: expected length ",
               depth < s.sizes.size() ? s.sizes[depth] : -1, " at depth ", depth, ", got ", n);
    for (nb::handle e : h) scan(e, depth + 1, s);
    return;
  }
  KILN_CHECK(depth == s.sizes.size(), "tensor(): ragged nested sequence");
  if (PyBool_Check(h.ptr())) {
    s.any_bool = true;
    return;
  }
  if (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())) {
    s.any_int = true;
  } else if (PyFloat_Check(h.ptr()) || PyObject_HasAttrString(h.ptr(), "__float__")) {
    s.any_float = true;
  } else {
    throw nb::type_error(("tensor(): cannot make a tensor from an element of type " +
                          py_type_name(h))
                             .c_str());
  }
}

void flatten(nb::handle h, std::vector<double>& out) {
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    for (nb::handle e : h) flatten(e, out);
    return;
  }
  out.push_back(to_scalar(h).to_double());
}
void flatten(nb::handle h, std::vector<int64_t>& out) {
  if (PyList_Check(h.ptr()) || PyTuple_Check(h.ptr())) {
    for (nb::handle e : h) flatten(e, out);
    return;
  }
  out.push_back(to_scalar(h).to_int());
}

// Nested lists over `sizes` from the row-major elements.
nb::object nest(const std::vector<nb::object>& flat, const Shape& sizes, size_t d, size_t& pos) {
  if (d == sizes.size()) return flat[pos++];
  nb::list l;
  for (int64_t i = 0; i < sizes[d]; i++) l.append(nest(flat, sizes, d + 1, pos));
  return l;
}

nb::object tolist(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<nb::object> flat;
  int64_t n = c.numel();
  flat.reserve(size_t(n));
  if (is_floating(c.dtype())) {
    for (double v : c.to_vector<double>()) flat.push_back(nb::float_(v));
  } else if (c.dtype() == kBool) {
    for (int64_t v : c.to_vector<int64_t>()) flat.push_back(nb::bool_(v != 0));
  } else {
    for (int64_t v : c.to_vector<int64_t>()) flat.push_back(nb::int_(v));
  }
  size_t pos = 0;
  return nest(flat, c.sizes(), 0, pos);
}

}  // namespace

Tensor tensor_from_data(nb::handle data, std::optional<DType> dtype) {
  if (const Tensor* t = as_tensor(data)) {
    Tensor r = t->detach().clone();
    return dtype ? r.to(*dtype) : r;
  }
  if (!PyList_Check(data.ptr()) && !PyTuple_Check(data.ptr()) && !is_py_number(data) &&
      (PyObject_HasAttrString(data.ptr(), "__dlpack__") || PyObject_CheckBuffer(data.ptr()))) {
    Tensor r = from_dlpack(data).clone();
    return dtype ? r.to(*dtype) : r;
  }
  DataShape s;
  scan(data, 0, s);
  // As torch.tensor: no element at all (tensor([]), tensor([[]])) is float32.
  DType t = dtype ? *dtype : s.any_float ? kFloat32 : s.any_int ? kInt64 : s.any_bool ? kBool : kFloat32;
  if (is_floating(t)) {
    std::vector<double> v;
    flatten(data, v);
    return kiln::tensor(v, s.sizes, t);
  }
  std::vector<int64_t> v;
  flatten(data, v);
  return kiln::tensor(v, s.sizes, t);
}

void bind_interop(nb::module_& m, nb::handle tensor_cls) {
  m.def("tensor", [](nb::handle data, nb::handle dtype, nb::handle device, bool requires_grad) {
    std::optional<DType> dt;
    if (!dtype.is_none()) {
      dt = as_dtype(dtype);
      if (!dt) throw nb::type_error("tensor(): dtype must be a kiln.dtype");
    }
    std::optional<Device> dev;
    if (!device.is_none()) {
      dev = as_device(device);
      if (!dev) throw nb::type_error("tensor(): device must be a kiln.device or a string like 'cpu'");
    }
    Tensor t = tensor_from_data(data, dt);
    if (dev) t = t.to(*dev);  // made on the host, then moved
    if (requires_grad) t.requires_grad_(true);
    return t;
  }, nb::arg("data"), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(),
     nb::arg("requires_grad") = false,
     "A new tensor holding a copy of `data` (nested lists of numbers, a NumPy array, a tensor).");
  m.def("from_dlpack", &from_dlpack, nb::arg("obj"),
        "A kiln tensor sharing memory with `obj` (PyTorch tensor, NumPy array, any DLPack or buffer provider).");
  m.def("from_numpy", &from_dlpack, nb::arg("array"), "A kiln tensor sharing memory with a NumPy array.");

  nb::object cls = nb::borrow(tensor_cls);
  nb::setattr(cls, "tolist", nb::cpp_function(&tolist, nb::is_method(), nb::name("tolist"), nb::scope(cls)));
  nb::setattr(cls, "numpy", nb::cpp_function([](const Tensor& t) {
    KILN_CHECK_HINT(!t.requires_grad(), "use tensor.detach().numpy()", "numpy() on a tensor that requires grad");
    KILN_CHECK_HINT(t.dtype() != kBFloat16, "convert first: t.float().numpy()", "NumPy has no bfloat16");
    return to_array<nb::numpy>(t);
  }, nb::is_method(), nb::name("numpy"), nb::scope(cls)));
  nb::setattr(cls, "__array__", nb::cpp_function([](const Tensor& t, nb::handle dtype, nb::handle) {
    // NumPy has no bfloat16: without this, np.asarray would silently make an array of objects.
    if (t.dtype() == kBFloat16)
      throw nb::type_error("np.asarray(): NumPy has no bfloat16; convert first: np.asarray(t.float())");
    nb::object a = nb::cast(to_array<nb::numpy>(t.detach()));
    return dtype.is_none() ? a : a.attr("astype")(dtype);
  }, nb::is_method(), nb::name("__array__"), nb::scope(cls), nb::arg("dtype").none() = nb::none(), nb::arg("copy").none() = nb::none()));
  // A DLPack capsule (unversioned; every consumer accepts it whatever max_version it asks for).
  nb::setattr(cls, "__dlpack__", nb::cpp_function([](const Tensor& t, nb::kwargs) {
    return nb::cast(to_array<>(t.detach()));
  }, nb::is_method(), nb::name("__dlpack__"), nb::scope(cls)));
  nb::setattr(cls, "__dlpack_device__", nb::cpp_function([](const Tensor& t) {
    return nb::make_tuple(t.device().is_cpu() ? 1 : 2, int(t.device().index));
  }, nb::is_method(), nb::name("__dlpack_device__"), nb::scope(cls)));
}

}  // namespace kiln::py
