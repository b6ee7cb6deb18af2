// Integer arithmetic with a result for every input, as PyTorch's two's complement: overflow
// wraps (signed overflow is undefined in C++, so it is done in the unsigned type), and division
// never traps (INT_MIN / -1 traps on x86; x / 0 traps too).
#pragma once
#include "scalar/base.h"

namespace kiln::scalar {

// a + b, a - b, a * b, -a wrapping for integers; floats and bool pass through (bool + bool is
// then true when either is: the int sum converted back to bool).
template <class V, KILN_IF(is_compute<V>)>
KILN_SCALAR V wrap_add(V a, V b) {
  if constexpr (is_int<V>) return V(wrap_t<V>(a) + wrap_t<V>(b));
  else return V(a + b);
}
template <class V, KILN_IF(is_compute<V>)>
KILN_SCALAR V wrap_sub(V a, V b) {
  if constexpr (is_int<V>) return V(wrap_t<V>(a) - wrap_t<V>(b));
  else return V(a - b);
}
template <class V, KILN_IF(is_compute<V>)>
KILN_SCALAR V wrap_mul(V a, V b) {
  if constexpr (is_int<V>) return V(wrap_t<V>(a) * wrap_t<V>(b));
  else return V(a * b);
}
template <class V, KILN_IF(is_compute<V>)>
KILN_SCALAR V wrap_neg(V a) {
  if constexpr (is_int<V>) return V(wrap_t<V>(0) - wrap_t<V>(a));
  else return V(-a);
}

// Integer a / b truncated and a % b (C's signs) without the traps: b == -1 gives -a (wrapping:
// INT_MIN / -1 == INT_MIN) and 0; b == 0 gives 0 and 0. The eager kernels raise "integer
// division by zero" before computing; the 0 keeps a kernel that gets a zero divisor anyway
// from trapping. One division gives both (floor_divide and remainder need both).
template <class V>
struct quotient_remainder {
  V q, r;
};
template <class V, KILN_IF(is_int<V>)>
KILN_SCALAR quotient_remainder<V> int_divmod(V a, V b) {
  if constexpr (is_signed_int<V>) {
    if (b == V(-1)) return {wrap_neg(a), V(0)};
  }
  if (b == V(0)) return {V(0), V(0)};
  return {V(a / b), V(a % b)};
}
template <class V, KILN_IF(is_int<V>)>
KILN_SCALAR V int_div(V a, V b) { return int_divmod(a, b).q; }
template <class V, KILN_IF(is_int<V>)>
KILN_SCALAR V int_mod(V a, V b) { return int_divmod(a, b).r; }

// base ** e by squaring, wrapping. A negative exponent gives 1, -1 or 0 (the integer part of
// 1 / base**-e), as PyTorch for a tensor of exponents.
template <class V, KILN_IF(is_int<V>)>
KILN_SCALAR V int_pow(V base, V e) {
  if constexpr (is_signed_int<V>) {
    if (e < 0) return base == V(1) ? V(1) : base == V(-1) ? V(e % 2 ? -1 : 1) : V(0);
  }
  V r = 1;
  while (e) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e = V(e >> 1);
  }
  return r;
}

}  // namespace kiln::scalar
