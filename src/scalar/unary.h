// The unary pointwise prims of ops.def, one function each, named after the op. A function
// takes the compute types its op is defined for (KILN_IF); the callers convert first (an op
// with dtype rule INT_TO_FLOAT gets floats, as its output dtype).
#pragma once
#include "scalar/base.h"
#include "scalar/int.h"
#include "scalar/inline_math.h"
#include "scalar/inline_math_avx512.h"
#include "scalar/special.h"

namespace kiln::scalar {

// The exp, log, erf and tanh below (and sigmoid's exp): libm's, or in generated CPU code
// (KILN_SCALAR_INLINE_MATH, defined before the prelude by src/tile/cpu/emit_c.cc) the float
// polynomials of inline_math.h, which vectorize in place. Compiled float results then differ
// from eager's by a few ulp there, within the tolerances they are compared with.
#if defined(KILN_SCALAR_VECTOR_MATH)
namespace math = vector_math;  // exp, erf, sigmoid in AVX-512 (inline_math_avx512.h)
#elif defined(KILN_SCALAR_INLINE_MATH) && !defined(KILN_SCALAR_DEVICE)
namespace math = inline_math;
#else
namespace math = libm;
#endif

// Floating functions: float and double only (float16/bfloat16 are computed in float).
#define KILN_FLOAT_UNARY(name, ...) \
  template <class T, KILN_IF(is_float<T>)> KILN_SCALAR T name(T x) { return __VA_ARGS__; }
KILN_FLOAT_UNARY(exp, math::exp(x))
KILN_FLOAT_UNARY(exp2, libm::exp2(x))
KILN_FLOAT_UNARY(expm1, libm::expm1(x))
KILN_FLOAT_UNARY(log, math::log(x))
KILN_FLOAT_UNARY(log2, libm::log2(x))
KILN_FLOAT_UNARY(log1p, libm::log1p(x))
KILN_FLOAT_UNARY(sqrt, libm::sqrt(x))
KILN_FLOAT_UNARY(rsqrt, T(1) / libm::sqrt(x))
KILN_FLOAT_UNARY(reciprocal, T(1) / x)
KILN_FLOAT_UNARY(sin, libm::sin(x))
KILN_FLOAT_UNARY(cos, libm::cos(x))
KILN_FLOAT_UNARY(tan, libm::tan(x))
KILN_FLOAT_UNARY(tanh, math::tanh(x))
KILN_FLOAT_UNARY(asin, libm::asin(x))
KILN_FLOAT_UNARY(acos, libm::acos(x))
KILN_FLOAT_UNARY(atan, libm::atan(x))
KILN_FLOAT_UNARY(sinh, libm::sinh(x))
KILN_FLOAT_UNARY(cosh, libm::cosh(x))
KILN_FLOAT_UNARY(asinh, libm::asinh(x))
KILN_FLOAT_UNARY(acosh, libm::acosh(x))
KILN_FLOAT_UNARY(atanh, libm::atanh(x))
KILN_FLOAT_UNARY(erf, math::erf(x))
KILN_FLOAT_UNARY(erfc, libm::erfc(x))
KILN_FLOAT_UNARY(erfinv, T(erfinv_f64(double(x))))  // in double, then rounded
#if defined(KILN_SCALAR_INLINE_MATH) && !defined(KILN_SCALAR_DEVICE)
KILN_FLOAT_UNARY(sigmoid, math::sigmoid(x))
#else
KILN_FLOAT_UNARY(sigmoid, T(1) / (T(1) + libm::exp(-x)))
#endif
KILN_FLOAT_UNARY(lgamma, libm::lgamma(x))
KILN_FLOAT_UNARY(digamma, T(digamma_f64(double(x))))
#undef KILN_FLOAT_UNARY

// -x, wrapping for integers (-INT_MIN == INT_MIN). Not for bool.
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T neg(T x) { return wrap_neg(x); }

// |x|: abs(INT_MIN) wraps to INT_MIN; abs(-0.0) is +0.0; NaN is returned as it is (sign kept).
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T abs(T x) {
  if constexpr (is_bool<T> || !type_traits<T>::is_signed) return x;
  else if constexpr (is_int<T>) return x < 0 ? wrap_neg(x) : x;
  else return x < 0 ? -x : x == 0 ? T(0) : x;
}

// -1, 0 or 1; sign(NaN) is NaN, sign(-0.0) is +0.0; bool is returned as it is.
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T sign(T x) {
  if constexpr (is_bool<T>) return x;
  else if constexpr (is_float<T>) return libm::isnan(x) ? x : T((x > 0) - (x < 0));
  else return T((T(0) < x) - is_negative(x));
}

// Rounding to an integral value; integers and bool are returned as they are. round is
// half-to-even (nearbyint in the default rounding mode), as PyTorch's.
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T floor(T x) {
  if constexpr (is_float<T>) return libm::floor(x); else return x;
}
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T ceil(T x) {
  if constexpr (is_float<T>) return libm::ceil(x); else return x;
}
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T round(T x) {
  if constexpr (is_float<T>) return libm::nearbyint(x); else return x;
}
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T trunc(T x) {
  if constexpr (is_float<T>) return libm::trunc(x); else return x;
}

// Predicates: any compute type, a bool result (integers are never NaN or infinite).
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR bool isnan(T x) {
  if constexpr (is_float<T>) return libm::isnan(x); else return false;
}
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR bool isinf(T x) {
  if constexpr (is_float<T>) return libm::isinf(x); else return false;
}
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR bool isfinite(T x) {
  if constexpr (is_float<T>) return libm::isfinite(x); else return true;
}
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR bool logical_not(T x) { return !(x != T(0)); }

// ~x for integers, !x for bool.
template <class T, KILN_IF(is_integral<T>)>
KILN_SCALAR T bitwise_not(T x) {
  if constexpr (is_bool<T>) return !x; else return T(~x);
}

// relu (a composite; this is its fast eager kernel's function): as its decomposition
// where(x <= 0, 0, x), so NaN stays NaN and -0.0 becomes +0.0. Not for bool.
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T relu(T x) { return x <= T(0) ? T(0) : x; }

}  // namespace kiln::scalar
