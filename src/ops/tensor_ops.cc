// The Tensor methods and operators that run ops (declared in kiln/tensor.h, a core header; a
// class's methods may be defined in a higher layer), and the entry points of kiln/ops.h that
// make tensors from data.
#include <kiln/ops.h>

#include <cstring>

#include "core/call_site.h"
#include "core/element.h"
#include "core/tensor_impl.h"
#include "ops/dispatch.h"
#include "runtime/device.h"

namespace kiln {

// ------------------------------------------------------------------------------ Tensor methods
template <class T>
std::vector<T> Tensor::to_vector(SourceLoc loc) const {
  CallSite site(loc);
  note_values_read(impl());
  Tensor c = kiln::contiguous(to(kCPU, loc), loc);
  if (c.dtype() != dtype_of<T>()) c = convert_element_type(c, dtype_of<T>());
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}
#define KILN_INSTANTIATE(T) template std::vector<T> Tensor::to_vector<T>(SourceLoc) const;
KILN_INSTANTIATE(float)
KILN_INSTANTIATE(double)
KILN_INSTANTIATE(int64_t)
KILN_INSTANTIATE(int32_t)
KILN_INSTANTIATE(int16_t)
KILN_INSTANTIATE(int8_t)
KILN_INSTANTIATE(uint8_t)
KILN_INSTANTIATE(bool)
#undef KILN_INSTANTIATE

Tensor Tensor::to(DType t, SourceLoc loc) const {
  if (dtype() == t) return *this;
  return convert_element_type(*this, t, loc);
}

// A fresh tensor on d, filled by copy_ (which moves the bytes through the device interface):
// recorded by capture and differentiated like any copy_.
Tensor Tensor::to(Device d, SourceLoc loc) const {
  CallSite site(loc);
  if (device() == d) return *this;
  runtime::device_interface(d.type);  // a device this build has no backend for: say so first
  return copy_(empty(sym_sizes(), dtype(), d, loc), *this, loc);
}

Tensor& Tensor::fill_(Scalar v, SourceLoc loc) {
  CallSite site(loc);
  copy_(*this, scalar_tensor(v, dtype(), loc), loc);
  return *this;
}

Tensor& Tensor::copy_from(const Tensor& src, SourceLoc loc) {
  copy_(*this, src, loc);
  return *this;
}

// ------------------------------------------------------------------------------ factories
template <class T>
Tensor tensor(const std::vector<T>& values, const Shape& sh, std::optional<DType> dtype, SourceLoc loc) {
  CallSite site(loc);
  KILN_CHECK_HINT(numel_of(sh) == int64_t(values.size()), "pass as many values as the shape holds",
                  "tensor(): ", values.size(), " values do not fill shape ", shape_str(sh));
  Tensor t = make_tensor(sh, dtype_of<T>());
  if (!values.empty()) std::memcpy(t.data_ptr(), values.data(), values.size() * sizeof(T));
  return dtype && *dtype != t.dtype() ? convert_element_type(t, *dtype) : t;
}
template <>
Tensor tensor(const std::vector<bool>& values, const Shape& shape, std::optional<DType> dtype, SourceLoc loc) {
  std::vector<uint8_t> bytes(values.begin(), values.end());
  Tensor t = tensor(bytes, shape, std::nullopt, loc);
  t.impl()->dtype = DType::Bool;
  return dtype && *dtype != DType::Bool ? convert_element_type(t, *dtype) : t;
}
template Tensor tensor(const std::vector<float>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<double>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<int64_t>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<int32_t>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<int16_t>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<int8_t>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<uint8_t>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<Half>&, const Shape&, std::optional<DType>, SourceLoc);
template Tensor tensor(const std::vector<BFloat16>&, const Shape&, std::optional<DType>, SourceLoc);

Tensor scalar_tensor(Scalar value, std::optional<DType> dtype, SourceLoc loc) {
  CallSite site(loc);
  DType dt = dtype ? *dtype : value.is_float() ? default_float_dtype() : value.dtype();
  Tensor t = make_tensor({}, dt);
  write_scalar(t.data_ptr(), dt, value);
  return t;
}

Tensor from_blob(void* data, const Shape& sizes, DType dtype, const Shape& strides, SourceLoc loc) {
  CallSite site(loc);
  KILN_CHECK(data || numel_of(sizes) == 0, "from_blob: null data pointer");
  KILN_CHECK(strides.empty() || strides.size() == sizes.size(), "from_blob: ", strides.size(), " strides for ",
             sizes.size(), " sizes");
  auto impl = std::make_shared<TensorImpl>();
  impl->sizes = sizes;
  impl->strides = strides.empty() ? contiguous_strides(sizes) : strides;
  impl->dtype = dtype;
  impl->storage = std::make_shared<Storage>();  // borrowed: never freed here
  // The storage is the memory the layout spans, from its lowest element (negative strides, as in
  // a reversed NumPy array, reach below `data`): views of it are checked against that extent.
  const StorageExtent e = storage_extent(impl->sizes, impl->strides, 0);
  const int64_t item = int64_t(itemsize(dtype));
  impl->storage->data = e.last < e.first ? data : static_cast<char*>(data) + e.first * item;
  impl->storage->nbytes = e.last < e.first ? 0 : size_t(e.last - e.first + 1) * size_t(item);
  impl->offset = e.last < e.first ? 0 : -e.first;
  check_bool_bytes(*impl, "from_blob (memory shared with NumPy, DLPack or a file)");
  return Tensor(std::move(impl));
}

// ------------------------------------------------------------------------------ operators
Tensor operator+(const Tensor& a, TensorAt b) { return add(a, b.t, b.loc); }
Tensor operator-(const Tensor& a, TensorAt b) { return sub(a, b.t, b.loc); }
Tensor operator*(const Tensor& a, TensorAt b) { return mul(a, b.t, b.loc); }
Tensor operator/(const Tensor& a, TensorAt b) { return div(a, b.t, std::nullopt, b.loc); }
Tensor operator+(const Tensor& a, ScalarAt b) { return add(a, b.s, b.loc); }
Tensor operator-(const Tensor& a, ScalarAt b) { return sub(a, b.s, b.loc); }
Tensor operator*(const Tensor& a, ScalarAt b) { return mul(a, b.s, b.loc); }
Tensor operator/(const Tensor& a, ScalarAt b) { return div(a, b.s, std::nullopt, b.loc); }
Tensor operator+(ScalarAt a, const Tensor& b) { return add(ops::scalar_to_tensor(a.s), b, a.loc); }
Tensor operator-(ScalarAt a, const Tensor& b) { return sub(ops::scalar_to_tensor(a.s), b, a.loc); }
Tensor operator*(ScalarAt a, const Tensor& b) { return mul(ops::scalar_to_tensor(a.s), b, a.loc); }
Tensor operator/(ScalarAt a, const Tensor& b) { return div(ops::scalar_to_tensor(a.s), b, std::nullopt, a.loc); }
Tensor operator-(const Tensor& a) { return neg(a); }
Tensor operator==(const Tensor& a, TensorAt b) { return eq(a, b.t, b.loc); }
Tensor operator!=(const Tensor& a, TensorAt b) { return ne(a, b.t, b.loc); }
Tensor operator<(const Tensor& a, TensorAt b) { return lt(a, b.t, b.loc); }
Tensor operator<=(const Tensor& a, TensorAt b) { return le(a, b.t, b.loc); }
Tensor operator>(const Tensor& a, TensorAt b) { return gt(a, b.t, b.loc); }
Tensor operator>=(const Tensor& a, TensorAt b) { return ge(a, b.t, b.loc); }
Tensor operator==(const Tensor& a, ScalarAt b) { return eq(a, b.s, b.loc); }
Tensor operator!=(const Tensor& a, ScalarAt b) { return ne(a, b.s, b.loc); }
Tensor operator<(const Tensor& a, ScalarAt b) { return lt(a, b.s, b.loc); }
Tensor operator<=(const Tensor& a, ScalarAt b) { return le(a, b.s, b.loc); }
Tensor operator>(const Tensor& a, ScalarAt b) { return gt(a, b.s, b.loc); }
Tensor operator>=(const Tensor& a, ScalarAt b) { return ge(a, b.s, b.loc); }
Tensor operator&(const Tensor& a, TensorAt b) {
  return a.dtype() == kBool ? logical_and(a, b.t, b.loc) : bitwise_and(a, b.t, b.loc);
}
Tensor operator|(const Tensor& a, TensorAt b) {
  return a.dtype() == kBool ? logical_or(a, b.t, b.loc) : bitwise_or(a, b.t, b.loc);
}
Tensor operator^(const Tensor& a, TensorAt b) {
  return a.dtype() == kBool ? logical_xor(a, b.t, b.loc) : bitwise_xor(a, b.t, b.loc);
}
Tensor operator~(const Tensor& a) { return a.dtype() == kBool ? logical_not(a) : bitwise_not(a); }
Tensor& operator+=(Tensor& a, TensorAt b) { return a.add_(b.t, b.loc); }
Tensor& operator-=(Tensor& a, TensorAt b) { return a.sub_(b.t, b.loc); }
Tensor& operator*=(Tensor& a, TensorAt b) { return a.mul_(b.t, b.loc); }
Tensor& operator/=(Tensor& a, TensorAt b) { return a.div_(b.t, std::nullopt, b.loc); }
Tensor& operator+=(Tensor& a, ScalarAt b) { return a.add_(b.s, b.loc); }
Tensor& operator-=(Tensor& a, ScalarAt b) { return a.sub_(b.s, b.loc); }
Tensor& operator*=(Tensor& a, ScalarAt b) { return a.mul_(b.s, b.loc); }
Tensor& operator/=(Tensor& a, ScalarAt b) { return a.div_(b.s, std::nullopt, b.loc); }

}  // namespace kiln
