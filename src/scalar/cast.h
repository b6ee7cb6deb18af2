// convert_element_type between the compute types, with a result defined for every input, and
// the rounding of float to and from the 16-bit storage types (float16, bfloat16).
#pragma once
#include "scalar/base.h"

namespace kiln::scalar {

// Float -> integer (the plain C++ conversion is undefined for NaN and out-of-range values):
// NaN -> 0, truncate toward zero, saturate to int64's range, then wrap to T's width like integer
// conversions (-1.0 -> uint8 255, as PyTorch on x86).
template <class T, class F, KILN_IF(is_int<T> && is_float<F>)>
KILN_SCALAR T float_to_int(F v) {
  if (libm::isnan(v)) return T(0);
  if (v >= F(9223372036854775808.0)) return T(i64(0x7fffffffffffffffll));
  if (v < F(-9223372036854775808.0)) return T(i64(-0x7fffffffffffffffll - 1));
  return T(i64(v));
}

// convert_element_type's semantics on the compute types: to bool is "!= 0"; float -> int as
// float_to_int; int -> narrower int wraps; int -> float and double -> float round to nearest.
// (float16/bfloat16 targets: convert to float, then float_to_float16 / float_to_bfloat16.)
template <class To, class From, KILN_IF(is_compute<To> && is_compute<From>)>
KILN_SCALAR To convert_element_type(From v) {
  if constexpr (is_same<To, From>) return v;
  else if constexpr (is_bool<To>) return v != From(0);
  else if constexpr (is_int<To> && is_float<From>) return float_to_int<To>(v);
  else return To(v);
}

// float16 <-> float: IEEE binary16, round to nearest even; NaN keeps its sign and becomes the
// quiet NaN 0x7e00 (payload dropped); overflow gives inf. Bit for bit what kiln::Half does.
KILN_SCALAR u16 float_to_float16(float f) {
  u32 x = bits_of(f);
  const u32 sign = (x >> 16) & 0x8000;
  x &= 0x7fffffff;
  if (x >= 0x7f800000) return u16(sign | 0x7c00 | (x > 0x7f800000 ? 0x200 : 0));  // inf, NaN
  if (x >= 0x477ff000) return u16(sign | 0x7c00);                                 // overflow
  if (x < 0x38800000) {  // a subnormal half (or zero): round to nearest even in units of 2^-24
    const float scaled = float_of(x) * 16777216.0f;
    return u16(sign | u32(libm::nearbyint(scaled)));
  }
  const u32 m = x + 0xc8000fff + ((x >> 13) & 1);  // rebias the exponent, round to nearest even
  return u16(sign | (m >> 13));
}
KILN_SCALAR float float16_to_float(u16 h) {
  const u32 sign = u32(h & 0x8000) << 16;
  const u32 exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact
    const float f = float(man) * 5.9604644775390625e-08f;
    return float_of(bits_of(f) | sign);
  }
  if (exp == 31) return float_of(sign | 0x7f800000 | (man << 13));
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

// bfloat16 <-> float: the top half of a float, round to nearest even; every NaN becomes 0x7fc0.
KILN_SCALAR u16 float_to_bfloat16(float f) {
  if (libm::isnan(f)) return 0x7fc0;
  const u32 u = bits_of(f);
  return u16((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
KILN_SCALAR float bfloat16_to_float(u16 b) { return float_of(u32(b) << 16); }

}  // namespace kiln::scalar
