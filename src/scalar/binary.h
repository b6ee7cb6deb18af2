// The binary pointwise prims of ops.def and where, one function each, named after the op.
// Both operands have one compute type (the caller promotes and converts first).
#pragma once
#include "scalar/base.h"
#include "scalar/cast.h"
#include "scalar/int.h"

namespace kiln::scalar {

// Arithmetic wraps for integers; on bool, add is "or" and mul is "and".
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T add(T a, T b) {
  if constexpr (is_bool<T>) return a || b; else return wrap_add(a, b);
}
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T sub(T a, T b) { return wrap_sub(a, b); }
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T mul(T a, T b) {
  if constexpr (is_bool<T>) return a && b; else return wrap_mul(a, b);
}

// div's three rounding modes: None is true division (floats: the dtype rule makes integers
// floats first), "trunc" is div_trunc, "floor" is floor_divide.
template <class T, KILN_IF(is_float<T>)>
KILN_SCALAR T div(T a, T b) { return a / b; }
// a / b where the loop around the call does not change b (the C emitter's division by a row's
// sum, a scalar): a times 1 / b, which the compiler computes once before the loop, so that the
// loop multiplies (a vector division costs ~10 cycles). Within 1 ulp of a / b; a subnormal b,
// whose reciprocal may overflow, takes the division (the compiler unswitches the loop on it).
template <class T, KILN_IF(is_float<T>)>
KILN_SCALAR T div_by_invariant(T a, T b) {
  const T r = T(1) / b;
  return (r - r == T(0) || b == T(0)) ? a * r : a / b;  // r finite, or b = 0: a * r is a / b's
}
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T div_trunc(T a, T b) {
  if constexpr (is_float<T>) return libm::trunc(a / b); else return int_div(a, b);
}

// Python's a // b: rounds toward -inf. For floats as PyTorch: from fmod (exact), the quotient
// rounded to the nearest integer when float division is off by one, and a zero with the sign
// of a / b; x // 0 is a / 0 (inf or NaN).
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T floor_divide(T a, T b) {
  if constexpr (is_float<T>) {
    if (b == 0) return a / b;
    const T m = libm::fmod(a, b);
    T d = (a - m) / b;
    if (m != 0 && ((b < 0) != (m < 0))) d -= 1;
    T fd = libm::floor(d);
    if (d - fd > T(0.5)) fd += 1;
    return d == 0 ? libm::copysign(T(0), a / b) : fd;
  } else {
    const quotient_remainder<T> d = int_divmod(a, b);
    if constexpr (is_signed_int<T>) {
      if (d.r != 0 && ((a < 0) != (b < 0))) return T(d.q - 1);
    }
    return d.q;
  }
}

// Python's a % b: the sign of the divisor. fmod: C's, the sign of the dividend.
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T remainder(T a, T b) {
  T m;
  if constexpr (is_float<T>) m = libm::fmod(a, b); else m = int_mod(a, b);
  if constexpr (type_traits<T>::is_signed) {
    if (m != 0 && ((b < 0) != (m < 0))) m = T(m + b);
  }
  return m;
}
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T fmod(T a, T b) {
  if constexpr (is_float<T>) return libm::fmod(a, b); else return int_mod(a, b);
}

// Integers by squaring (wrapping; negative exponents give 1, -1 or 0), floats by libm.
template <class T, KILN_IF(is_number<T>)>
KILN_SCALAR T pow(T a, T b) {
  if constexpr (is_float<T>) return libm::pow(a, b); else return int_pow(a, b);
}

// NaN-propagating: a NaN operand gives NaN (a + b).
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T maximum(T a, T b) {
  if constexpr (is_float<T>) {
    if (libm::isnan(a) || libm::isnan(b)) return a + b;
  }
  return a > b ? a : b;
}
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR T minimum(T a, T b) {
  if constexpr (is_float<T>) {
    if (libm::isnan(a) || libm::isnan(b)) return a + b;
  }
  return a < b ? a : b;
}

template <class T, KILN_IF(is_float<T>)>
KILN_SCALAR T atan2(T a, T b) { return libm::atan2(a, b); }
template <class T, KILN_IF(is_float<T>)>
KILN_SCALAR T hypot(T a, T b) { return libm::hypot(a, b); }
template <class T, KILN_IF(is_float<T>)>
KILN_SCALAR T copysign(T a, T b) { return libm::copysign(a, b); }

// The next representable value after a towards b. float16/bfloat16 step in their own
// precision (the neighbour of the 16-bit value, given and returned as floats): towards zero at
// 0 it is the smallest subnormal with b's sign; a == b gives b; a NaN operand gives NaN.
template <class T, KILN_IF(is_float<T>)>
KILN_SCALAR T nextafter(T a, T b) { return libm::nextafter(a, b); }
KILN_SCALAR u16 nextafter_bits16(float a, float b, u16 bits) {
  if (a == 0) return libm::signbit(b) ? 0x8001 : 0x0001;
  return (a < b) == (a > 0) ? u16(bits + 1) : u16(bits - 1);  // away from zero: one more
}
KILN_SCALAR float nextafter_float16(float a, float b) {
  if (libm::isnan(a) || libm::isnan(b)) return a + b;
  if (a == b) return b;
  return float16_to_float(nextafter_bits16(a, b, float_to_float16(a)));
}
KILN_SCALAR float nextafter_bfloat16(float a, float b) {
  if (libm::isnan(a) || libm::isnan(b)) return a + b;
  if (a == b) return b;
  return bfloat16_to_float(nextafter_bits16(a, b, float_to_bfloat16(a)));
}

// Comparisons and logical ops: any compute type, a bool result.
template <class T, KILN_IF(is_compute<T>)> KILN_SCALAR bool eq(T a, T b) { return a == b; }
template <class T, KILN_IF(is_compute<T>)> KILN_SCALAR bool ne(T a, T b) { return a != b; }
template <class T, KILN_IF(is_compute<T>)> KILN_SCALAR bool lt(T a, T b) { return a < b; }
template <class T, KILN_IF(is_compute<T>)> KILN_SCALAR bool le(T a, T b) { return a <= b; }
template <class T, KILN_IF(is_compute<T>)> KILN_SCALAR bool gt(T a, T b) { return a > b; }
template <class T, KILN_IF(is_compute<T>)> KILN_SCALAR bool ge(T a, T b) { return a >= b; }
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR bool logical_and(T a, T b) { return a != T(0) && b != T(0); }
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR bool logical_or(T a, T b) { return a != T(0) || b != T(0); }
template <class T, KILN_IF(is_compute<T>)>
KILN_SCALAR bool logical_xor(T a, T b) { return (a != T(0)) != (b != T(0)); }

// Bitwise ops: integers and bool.
template <class T, KILN_IF(is_integral<T>)> KILN_SCALAR T bitwise_and(T a, T b) { return T(a & b); }
template <class T, KILN_IF(is_integral<T>)> KILN_SCALAR T bitwise_or(T a, T b) { return T(a | b); }
template <class T, KILN_IF(is_integral<T>)> KILN_SCALAR T bitwise_xor(T a, T b) { return T(a ^ b); }

// Shifts by a negative amount or by the width or more give 0 (left) or the sign (right: -1 or
// 0); within range a left shift wraps, a right shift is arithmetic. On bool: b ? false : a.
template <class T, KILN_IF(is_integral<T>)>
KILN_SCALAR T shift_left(T a, T b) {
  if constexpr (is_bool<T>) return b ? false : a;
  else return (is_negative(b) || b >= T(type_traits<T>::bits)) ? T(0) : T(wrap_t<T>(a) << b);
}
template <class T, KILN_IF(is_integral<T>)>
KILN_SCALAR T shift_right_arithmetic(T a, T b) {
  if constexpr (is_bool<T>) return b ? false : a;
  else return (is_negative(b) || b >= T(type_traits<T>::bits)) ? T(is_negative(a) ? -1 : 0) : T(a >> b);
}

// where(c, a, b): a where c holds. Any type, the 16-bit storage types too (no arithmetic).
template <class T>
KILN_SCALAR T where(bool c, T a, T b) { return c ? a : b; }

}  // namespace kiln::scalar
