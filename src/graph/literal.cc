#include "graph/literal.h"

#include "core/tensor_impl.h"

namespace kiln::graph {
namespace {

template <class F>
void with_type(DType t, F f) {
  switch (t) {
    case kBool: return f(bool{});
    case kUInt8: return f(uint8_t{});
    case kInt8: return f(int8_t{});
    case kInt16: return f(int16_t{});
    case kInt32: return f(int32_t{});
    case kInt64: return f(int64_t{});
    case kFloat16: return f(Half{});
    case kBFloat16: return f(BFloat16{});
    case kFloat32: return f(float{});
    case kFloat64: return f(double{});
  }
}

}  // namespace

std::vector<Scalar> literal_elements(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<Scalar> out;
  const int64_t n = c.numel();
  with_type(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = c.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>) out.push_back(Scalar(p[i]));
      else if constexpr (std::is_integral_v<T>) out.push_back(Scalar(int64_t(p[i])));
      else if constexpr (std::is_same_v<T, double>) out.push_back(Scalar(p[i]));
      else out.push_back(Scalar(float(p[i])));
    }
  });
  return out;
}

Tensor literal_tensor(const Shape& sizes, DType dtype, const std::vector<Scalar>& elements) {
  Tensor t = make_tensor(sizes, dtype);
  KILN_CHECK(int64_t(elements.size()) == t.numel(), "constant of shape ", shape_str(sizes), " needs ", t.numel(),
             " elements, got ", elements.size());
  with_type(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* p = t.data<T>();
    for (size_t i = 0; i < elements.size(); ++i) {
      const Scalar& s = elements[i];
      if constexpr (std::is_same_v<T, bool>) p[i] = s.to_bool();
      else if constexpr (std::is_integral_v<T>) p[i] = T(s.to_int());
      else if constexpr (std::is_same_v<T, double>) p[i] = s.to_double();
      else p[i] = T(float(s.to_double()));
    }
  });
  return t;
}

}  // namespace kiln::graph
