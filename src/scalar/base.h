// The ground the scalar functions stand on, the same on the host and on a GPU: the KILN_HD
// qualifier, fixed-width integer names, a few type traits, bit casts and the C math functions.
// Nothing here may need the C++ standard library on the device side: NVRTC has no standard
// headers, so the device branch uses the CUDA math builtins instead of <cmath>.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define KILN_HD __host__ __device__
#else
#define KILN_HD
#endif
// Every scalar function: inline, callable from host and device code.
#define KILN_SCALAR KILN_HD inline

// __CUDA_ARCH__ is defined while compiling for a GPU (nvcc's device pass, and always in NVRTC).
#if defined(__CUDA_ARCH__)
#define KILN_SCALAR_DEVICE 1
#endif

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstdint>
#include <cstring>
#endif

namespace kiln::scalar {

#if defined(__CUDACC_RTC__)
typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
#else
using i8 = std::int8_t;
using i16 = std::int16_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using u16 = std::uint16_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
#endif

// What the functions need to know about a compute type (bool, u8, i8..i64, float, double; the
// 16-bit floats are computed in float). Other types are not supported: every flag is false.
// wrap: the unsigned type integer arithmetic wraps in (at least unsigned int, so that u8 * u8
// never overflows a promoted int).
template <class T>
struct type_traits {
  static constexpr bool supported = false, is_bool = false, is_int = false, is_signed = false, is_float = false;
  static constexpr int bits = 0;
  typedef void wrap;
};
#define KILN_SCALAR_TYPE(T, BOOL, INT, SIGNED, FLOAT, BITS, WRAP)                                    \
  template <>                                                                                     \
  struct type_traits<T> {                                                                         \
    static constexpr bool supported = true, is_bool = BOOL, is_int = INT, is_signed = SIGNED, is_float = FLOAT; \
    static constexpr int bits = BITS;                                                             \
    typedef WRAP wrap;                                                                            \
  };
KILN_SCALAR_TYPE(bool, true, false, false, false, 1, u32)
KILN_SCALAR_TYPE(u8, false, true, false, false, 8, u32)
KILN_SCALAR_TYPE(i8, false, true, true, false, 8, u32)
KILN_SCALAR_TYPE(i16, false, true, true, false, 16, u32)
KILN_SCALAR_TYPE(i32, false, true, true, false, 32, u32)
KILN_SCALAR_TYPE(i64, false, true, true, false, 64, u64)
KILN_SCALAR_TYPE(float, false, false, true, true, 32, u32)
KILN_SCALAR_TYPE(double, false, false, true, true, 64, u64)
#undef KILN_SCALAR_TYPE

template <class T> constexpr bool is_compute = type_traits<T>::supported;
template <class T> constexpr bool is_bool = type_traits<T>::is_bool;
template <class T> constexpr bool is_float = type_traits<T>::is_float;
template <class T> constexpr bool is_int = type_traits<T>::is_int;  // integers, not bool
template <class T> constexpr bool is_integral = type_traits<T>::is_int || type_traits<T>::is_bool;
template <class T> constexpr bool is_signed_int = type_traits<T>::is_int && type_traits<T>::is_signed;
template <class T> constexpr bool is_number = type_traits<T>::supported && !type_traits<T>::is_bool;  // all but bool
template <class T> using wrap_t = typename type_traits<T>::wrap;

template <class A, class B> struct same_type { static constexpr bool value = false; };
template <class A> struct same_type<A, A> { static constexpr bool value = true; };
template <class A, class B> constexpr bool is_same = same_type<A, B>::value;

// x < 0, written so that unsigned types need no (pointless, warned about) comparison.
template <class T>
KILN_SCALAR bool is_negative(T x) {
  if constexpr (type_traits<T>::is_signed) return x < T(0); else return false;
}

// KILN_IF(cond) in a template parameter list: the function exists only for types meeting cond
// (callers detect the types a function takes; a call with another type does not compile).
template <bool B> struct enable_if {};
template <> struct enable_if<true> { typedef int type; };
#define KILN_IF(...) typename ::kiln::scalar::enable_if<(__VA_ARGS__)>::type = 0

// The bits of a float and back.
KILN_SCALAR u32 bits_of(float f) {
#if defined(KILN_SCALAR_DEVICE)
  return __float_as_uint(f);
#else
  u32 u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}
KILN_SCALAR float float_of(u32 u) {
#if defined(KILN_SCALAR_DEVICE)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}
KILN_SCALAR double double_of(u64 u) {
#if defined(KILN_SCALAR_DEVICE)
  return __longlong_as_double((long long)u);
#else
  double d;
  std::memcpy(&d, &u, 8);
  return d;
#endif
}

// The C math library for float and double: <cmath> on the host, the CUDA builtins on a GPU.
// The functions of the prims (exp, floor, ...) call these; nothing else calls libm.
namespace libm {
#if defined(KILN_SCALAR_DEVICE)
#define KILN_LIBM1(name)                                                   \
  KILN_SCALAR float name(float x) { return ::name##f(x); }                 \
  KILN_SCALAR double name(double x) { return ::name(x); }
#define KILN_LIBM2(name)                                                   \
  KILN_SCALAR float name(float x, float y) { return ::name##f(x, y); }     \
  KILN_SCALAR double name(double x, double y) { return ::name(x, y); }
#define KILN_LIBM_PRED(name)                                               \
  KILN_SCALAR bool name(float x) { return ::name(x); }                     \
  KILN_SCALAR bool name(double x) { return ::name(x); }
#else
#define KILN_LIBM1(name)                                                   \
  KILN_SCALAR float name(float x) { return std::name(x); }                 \
  KILN_SCALAR double name(double x) { return std::name(x); }
#define KILN_LIBM2(name)                                                   \
  KILN_SCALAR float name(float x, float y) { return std::name(x, y); }     \
  KILN_SCALAR double name(double x, double y) { return std::name(x, y); }
#define KILN_LIBM_PRED(name)                                               \
  KILN_SCALAR bool name(float x) { return std::name(x); }                  \
  KILN_SCALAR bool name(double x) { return std::name(x); }
#endif
KILN_LIBM1(exp) KILN_LIBM1(exp2) KILN_LIBM1(expm1) KILN_LIBM1(log) KILN_LIBM1(log2) KILN_LIBM1(log1p)
KILN_LIBM1(sqrt) KILN_LIBM1(sin) KILN_LIBM1(cos) KILN_LIBM1(tan) KILN_LIBM1(tanh) KILN_LIBM1(asin)
KILN_LIBM1(acos) KILN_LIBM1(atan) KILN_LIBM1(sinh) KILN_LIBM1(cosh) KILN_LIBM1(asinh) KILN_LIBM1(acosh)
KILN_LIBM1(atanh) KILN_LIBM1(erf) KILN_LIBM1(erfc) KILN_LIBM1(lgamma) KILN_LIBM1(floor) KILN_LIBM1(ceil)
KILN_LIBM1(trunc) KILN_LIBM1(nearbyint)
KILN_LIBM2(fmod) KILN_LIBM2(pow) KILN_LIBM2(atan2) KILN_LIBM2(hypot) KILN_LIBM2(copysign) KILN_LIBM2(nextafter)
KILN_LIBM_PRED(isnan) KILN_LIBM_PRED(isinf) KILN_LIBM_PRED(isfinite) KILN_LIBM_PRED(signbit)
#undef KILN_LIBM1
#undef KILN_LIBM2
#undef KILN_LIBM_PRED

KILN_SCALAR double nan() { return double_of(0x7ff8000000000000ull); }  // the quiet NaN of <limits>
KILN_SCALAR double inf() { return double_of(0x7ff0000000000000ull); }
constexpr double kPi = 3.14159265358979323846;
}  // namespace libm

}  // namespace kiln::scalar
