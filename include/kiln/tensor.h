// kiln::Tensor: a reference-counted handle to an n-d array (sizes, strides, offset into a shared
// Storage) with autograd state. Copies of a Tensor share the same array, as in PyTorch.
#pragma once
#include <kiln/device.h>
#include <kiln/dtype.h>
#include <kiln/error.h>
#include <kiln/symint.h>

#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace kiln {

class TensorImpl;
class Tensor;
using TensorList = std::vector<Tensor>;

// An int[] argument: a list of ints, a single int, or None (for int[]? arguments).
class IntList {
 public:
  IntList() = default;
  IntList(std::nullopt_t) : none_(true) {}
  IntList(std::initializer_list<int64_t> v) : v_(v) {}
  IntList(const std::vector<int64_t>& v) : v_(v) {}
  IntList(int64_t v) : v_{v} {}
  IntList(int v) : v_{v} {}
  bool is_none() const { return none_; }
  const std::vector<int64_t>& vec() const { return v_; }
  size_t size() const { return v_.size(); }

 private:
  std::vector<int64_t> v_;
  bool none_ = false;
};

// A SymInt[] argument (sizes): concrete ints or symbolic sizes.
class SymIntList {
 public:
  SymIntList() = default;
  SymIntList(std::initializer_list<int64_t> v) : v_(v.begin(), v.end()) {}
  SymIntList(const std::vector<int64_t>& v) : v_(v.begin(), v.end()) {}
  SymIntList(const SymShape& v) : v_(v) {}
  SymIntList(int64_t v) : v_{SymInt(v)} {}
  SymIntList(int v) : v_{SymInt(v)} {}
  const SymShape& vec() const { return v_; }

 private:
  SymShape v_;
};

using Hook = std::function<Tensor(const Tensor&)>;

// Metadata of a tensor without data: what meta functions compute and fake tensors carry.
struct TensorSpec {
  SymShape sizes;
  SymShape strides;  // empty: contiguous
  SymInt offset = 0;
  DType dtype = DType::Float32;
  Device device;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  bool defined() const { return impl_ != nullptr; }
  TensorImpl* impl() const;  // throws on an undefined (default-constructed or moved-from) tensor
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

  // --- metadata (sizes() etc. throw for symbolic tensors; use sym_sizes() there)
  int64_t dim() const;
  const Shape& sizes() const;
  const Shape& strides() const;
  int64_t size(int64_t d) const;
  int64_t stride(int64_t d) const;
  int64_t storage_offset() const;
  int64_t numel() const;
  SymShape sym_sizes() const;
  SymShape sym_strides() const;
  SymInt sym_size(int64_t d) const;
  SymInt sym_numel() const;
  SymInt sym_storage_offset() const;
  TensorSpec spec() const;
  DType dtype() const;
  DType scalar_type() const { return dtype(); }
  Device device() const;
  size_t element_size() const { return itemsize(dtype()); }
  bool is_contiguous() const;
  bool is_fake() const;            // metadata only; touching data throws
  bool is_wrapped_number() const;  // a 0-d tensor made from a C++/Python number
  bool is_floating_point() const { return is_floating(dtype()); }
  bool shares_storage(const Tensor& o) const;

  // --- data (CPU tensors)
  void* data_ptr() const;
  template <class T>
  T* data() const { return static_cast<T*>(data_ptr()); }
  template <class T>
  T item(SourceLoc loc = SourceLoc::current()) const;
  Scalar item_scalar(SourceLoc loc = SourceLoc::current()) const;
  // The elements in logical (row-major) order, converted to T.
  template <class T>
  std::vector<T> to_vector(SourceLoc loc = SourceLoc::current()) const;
  std::string str() const;  // printed like PyTorch

  // --- autograd
  bool requires_grad() const;
  Tensor& requires_grad_(bool r = true, SourceLoc loc = SourceLoc::current());
  Tensor grad() const;
  void set_grad(const Tensor& g);
  bool is_leaf() const;
  std::string grad_fn_name() const;  // "" for leaves
  void backward(const Tensor& gradient = {}, bool retain_graph = false, bool create_graph = false,
                SourceLoc loc = SourceLoc::current()) const;
  void retain_grad() const;
  // Runs on this tensor's gradient during backward; may return a replacement (or undefined to keep).
  void register_hook(Hook hook) const;
  Tensor detach() const;
  Tensor& detach_();

  // --- conversions and copies
  Tensor to(DType t, SourceLoc loc = SourceLoc::current()) const;
  Tensor to(Device d, SourceLoc loc = SourceLoc::current()) const;
  Tensor cpu() const { return to(kCPU); }
  Tensor float_() const { return to(kFloat32); }
  Tensor& fill_(Scalar v, SourceLoc loc = SourceLoc::current());
  Tensor& zero_(SourceLoc loc = SourceLoc::current()) { return fill_(0, loc); }
  Tensor& copy_from(const Tensor& src, SourceLoc loc = SourceLoc::current());

  // --- generated: one method per op marked METHOD in ops.def (and in-place variants)
#include <kiln/tensor_methods_gen.inc>

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// A Tensor argument that remembers where it was passed from: lets binary operators
// (which cannot take a defaulted location parameter) report the user's line.
struct TensorAt {
  const Tensor& t;
  SourceLoc loc;
  TensorAt(const Tensor& t, SourceLoc loc = SourceLoc::current()) : t(t), loc(loc) {}
};
struct ScalarAt {
  Scalar s;
  SourceLoc loc;
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  ScalarAt(T v, SourceLoc loc = SourceLoc::current()) : s(v), loc(loc) {}
};

Tensor operator+(const Tensor& a, TensorAt b);
Tensor operator-(const Tensor& a, TensorAt b);
Tensor operator*(const Tensor& a, TensorAt b);
Tensor operator/(const Tensor& a, TensorAt b);
Tensor operator+(const Tensor& a, ScalarAt b);
Tensor operator-(const Tensor& a, ScalarAt b);
Tensor operator*(const Tensor& a, ScalarAt b);
Tensor operator/(const Tensor& a, ScalarAt b);
Tensor operator+(ScalarAt a, const Tensor& b);
Tensor operator-(ScalarAt a, const Tensor& b);
Tensor operator*(ScalarAt a, const Tensor& b);
Tensor operator/(ScalarAt a, const Tensor& b);
Tensor operator-(const Tensor& a);
Tensor operator==(const Tensor& a, TensorAt b);
Tensor operator!=(const Tensor& a, TensorAt b);
Tensor operator<(const Tensor& a, TensorAt b);
Tensor operator<=(const Tensor& a, TensorAt b);
Tensor operator>(const Tensor& a, TensorAt b);
Tensor operator>=(const Tensor& a, TensorAt b);
Tensor operator==(const Tensor& a, ScalarAt b);
Tensor operator!=(const Tensor& a, ScalarAt b);
Tensor operator<(const Tensor& a, ScalarAt b);
Tensor operator<=(const Tensor& a, ScalarAt b);
Tensor operator>(const Tensor& a, ScalarAt b);
Tensor operator>=(const Tensor& a, ScalarAt b);
Tensor operator&(const Tensor& a, TensorAt b);
Tensor operator|(const Tensor& a, TensorAt b);
Tensor operator^(const Tensor& a, TensorAt b);
Tensor operator~(const Tensor& a);
Tensor& operator+=(Tensor& a, TensorAt b);
Tensor& operator-=(Tensor& a, TensorAt b);
Tensor& operator*=(Tensor& a, TensorAt b);
Tensor& operator/=(Tensor& a, TensorAt b);
Tensor& operator+=(Tensor& a, ScalarAt b);
Tensor& operator-=(Tensor& a, ScalarAt b);
Tensor& operator*=(Tensor& a, ScalarAt b);
Tensor& operator/=(Tensor& a, ScalarAt b);

}  // namespace kiln
