// One element of a tensor: the C++ type of each dtype, dispatch on a dtype, and reading or
// writing one element as a Scalar (item(), 0-d tensors made from numbers). Core needs these for
// its own scalar tensors; the CPU kernels build on them (eager/cpu/loops.h).
#pragma once
#include <kiln/dtype.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "scalar/cast.h"

namespace kiln {

template <class T>
struct type_tag {
  using type = T;
};

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, Half>) return DType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::BFloat16;
  else if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else return DType::Float64;
}

// The type arithmetic on T is done in: float for the 16-bit floats, T otherwise.
template <class T>
using acc_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// Calls f(type_tag<T>{}) with T the C++ type of dtype t.
template <class F>
decltype(auto) visit_all(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(type_tag<bool>{});
    case DType::UInt8: return f(type_tag<uint8_t>{});
    case DType::Int8: return f(type_tag<int8_t>{});
    case DType::Int16: return f(type_tag<int16_t>{});
    case DType::Int32: return f(type_tag<int32_t>{});
    case DType::Int64: return f(type_tag<int64_t>{});
    case DType::Float16: return f(type_tag<Half>{});
    case DType::BFloat16: return f(type_tag<BFloat16>{});
    case DType::Float32: return f(type_tag<float>{});
    case DType::Float64: return f(type_tag<double>{});
  }
  return f(type_tag<float>{});
}

// Float -> integer with a result defined for every input: the scalar header's (NaN -> 0,
// truncate, saturate to int64, wrap to the width).
using scalar::float_to_int;

inline Scalar read_scalar(const void* p, DType t) {
  return visit_all(t, [&]<class T>(type_tag<T>) -> Scalar {
    T v;
    std::memcpy(&v, p, sizeof(T));
    if constexpr (std::is_same_v<T, bool>) return Scalar(bool(v));
    else if constexpr (std::is_integral_v<T>) return Scalar(int64_t(v));
    else return Scalar(double(acc_t<T>(v)));
  });
}

inline void write_scalar(void* p, DType t, Scalar s) {
  visit_all(t, [&]<class T>(type_tag<T>) {
    T v;
    if constexpr (std::is_same_v<T, bool>) v = s.to_bool();
    else if constexpr (std::is_integral_v<T>) v = s.is_float() ? float_to_int<T>(s.to_double()) : T(s.to_int());
    else if constexpr (std::is_same_v<T, double>) v = s.to_double();
    else v = T(float(s.to_double()));
    std::memcpy(p, &v, sizeof(T));
  });
}

}  // namespace kiln
