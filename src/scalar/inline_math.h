// exp, log, erf, tanh in float as branch-free polynomials: what the pointwise prims compute in
// generated CPU code (scalar.h: KILN_SCALAR_INLINE_MATH). Each is a few multiply-adds and
// selects with no call and no table, so a per-element loop over them vectorizes in place: as
// libm calls (even libmvec's vector ones) they cost more than the memory traffic of the kernel
// around them. Accurate to a few float ulp (tests/unit/scalar/inline_math_test.cc measures it
// against double libm), well inside the float tolerances eager and compiled results are
// compared with; inf, NaN, +-0 and subnormal results are handled as libm handles them. The
// coefficients are near-minimax fits (weighted least squares, Lawson iteration) made for kiln.
// double (and eager) keep libm.
#pragma once
#include "scalar/base.h"

// Inlined however large: a call left in a loop keeps it from vectorizing.
#if defined(__GNUC__) && !defined(__CUDACC__)
#define KILN_INLINE_MATH KILN_SCALAR __attribute__((always_inline))
#else
#define KILN_INLINE_MATH KILN_SCALAR
#endif

namespace kiln::scalar::inline_math {

// a * b + c, fused where the target has the instruction (polynomials only: the prims' own
// arithmetic never fuses, -ffp-contract=off).
KILN_SCALAR float madd(float a, float b, float c) {
#if defined(__FMA__) && !defined(KILN_SCALAR_DEVICE)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
// c ? a : b as bit operations. GCC turns a ?: into a branch, may sink the arithmetic of the
// selected values into it, and then (FP operations may trap) cannot make the loop branch-free.
KILN_SCALAR float select(bool c, float a, float b) {
  const u32 m = 0u - u32(c);
  return float_of((bits_of(a) & m) | (bits_of(b) & ~m));
}
KILN_SCALAR float copysign(float magnitude, float sign) {
  return float_of((bits_of(magnitude) & 0x7fffffffu) | (bits_of(sign) & 0x80000000u));
}
// 1 / y for y in [1, 2^126): a first guess from y's bits (within 12%) and three Newton steps,
// within 1 ulp. A vector division costs as much as all of exp on AVX-512 (vdivps: one per ~10
// cycles).
KILN_SCALAR float reciprocal(float y) {
  float r = float_of(0x7ef311c3u - bits_of(y));
  r = madd(r, madd(-y, r, 1.0f), r);
  r = madd(r, madd(-y, r, 1.0f), r);
  return madd(r, madd(-y, r, 1.0f), r);
}

// e^x: x = n ln2 + r with |r| <= ln2/2 (Cody and Waite's two-part ln2; n rounded by adding
// 1.5 * 2^23, which leaves n in the low bits), e^r as a degree-6 polynomial (its coefficients
// doubled: 2 e^r) times 2^(n-1) built from n's bits. n is clamped to [-125, 128] as an integer
// (float clamps vectorize poorly): above, 2^127 times the polynomial of a large r overflows to
// inf as it should; below, x < ln FLT_MIN = -87.34 (a subnormal result) gives 0, as under FTZ: an absolute
// error under 1.2e-38. Within 1 ulp elsewhere (a few ulp just above FLT_MIN, where r reaches
// -0.7); NaN stays NaN through r.
// e^x from x and the bits of 1.5 * 2^23 + n (see exp).
KILN_INLINE_MATH float exp_reduced(float x, i32 nb) {
  const float n = float_of(u32(nb)) - 12582912.0f;
  const float r = madd(n, 2.12194440e-4f, madd(n, -0.693359375f, x));  // x - n ln2, ln2 = 0.693359375 - 2.12e-4
  float p = 2.76292220e-3f;  // 2 * (1/720, 1/120, ..., 1, 1), fitted
  p = madd(p, r, 1.67374201e-2f);
  p = madd(p, r, 8.33367748e-2f);
  p = madd(p, r, 3.33330414e-1f);
  p = madd(p, r, 9.99999869e-1f);
  p = madd(p, r, 2.0f);
  p = madd(p, r, 2.0f);
  // 2^(n-1): n + 126 in the exponent field (the shifter's own bits shift out: its low 9 are 0).
  return p * float_of((u32(nb) + 126u) << 23);
}
KILN_INLINE_MATH float exp(float x) {
  const i32 shifter = i32(bits_of(12582912.0f));  // 1.5 * 2^23
  i32 nb = i32(bits_of(madd(x, 1.44269504f, 12582912.0f)));  // shifter + n (NaN, +-inf: clamped)
  nb = nb < shifter - 125 ? shifter - 125 : nb;
  nb = nb > shifter + 128 ? shifter + 128 : nb;
  const float y = exp_reduced(x, nb);
  return x < -87.3365448f ? 0.0f : y;  // ln FLT_MIN
}
// e^x for x in [-86.6, 88.7] only (no clamps): the arguments erf and tanh give it.
KILN_INLINE_MATH float exp_in_range(float x) {
  return exp_reduced(x, i32(bits_of(madd(x, 1.44269504f, 12582912.0f))));
}

// ln x: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^23 first), ln m = f -
// f^2/2 + f^3 q(f) for f = m - 1. ln +-0 = -inf, ln x < 0 = NaN, ln inf = inf. Within 2 ulp. The
// special cases are tested on x's bits: float comparisons (which may trap) keep GCC from
// turning more than one select into blends.
KILN_INLINE_MATH float log(float x) {
  const u32 u = bits_of(x);
  const float scale = u < 0x00800000u ? 8388608.0f : 1.0f;  // +0 and subnormals: * 2^23
  const u32 b = bits_of(x * scale) - 0x3f3504f3u;           // offset: m lands in [sqrt(1/2), sqrt(2))
  const float e = float((i32(b) >> 23) - (i32(bits_of(scale) >> 23) - 127));
  const float f = float_of((b & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
  float q = -7.63442991e-2f;
  q = madd(q, f, 1.27615504e-1f);
  q = madd(q, f, -1.31601951e-1f);
  q = madd(q, f, 1.42017625e-1f);
  q = madd(q, f, -1.66233565e-1f);
  q = madd(q, f, 2.00012267e-1f);
  q = madd(q, f, -2.50008211e-1f);
  q = madd(q, f, 3.33333317e-1f);
  const float f2 = f * f;
  const float lnm = madd(q, f2 * f, madd(-0.5f, f2, f));
  float y = madd(e, 0.693359375f, madd(e, -2.12194440e-4f, lnm));
  y = select(u >= 0x7f800000u, float_of(0x7fc00000u), y);  // NaN, x < 0 (and inf, next line)
  y = select(u == 0x7f800000u, x, y);                       // inf
  return select((u << 1) == 0, -float_of(0x7f800000u), y);  // +-0
}

// erf x: x p(x^2) for |x| < 1; 1 - e^(q(|x| - 2.5)) beyond (q fits ln erfc on [1, 4]; |x|
// clamped at 4, where erf is 1 in float). Within 2.5 ulp.
KILN_INLINE_MATH float erf(float x) {
  const u32 ab = bits_of(x) & 0x7fffffffu;
  const float a = float_of(ab), x2 = x * x;
  float p = 7.85402482e-5f;
  p = madd(p, x2, -8.01024716e-4f);
  p = madd(p, x2, 5.18833444e-3f);
  p = madd(p, x2, -2.68538160e-2f);
  p = madd(p, x2, 1.12835853e-1f);
  p = madd(p, x2, -3.76126258e-1f);
  p = madd(p, x2, 1.12837917e+0f);
  const float small = x * p;
  const float t = float_of(ab < 0x40800000u ? ab : 0x40800000u) - 2.5f;  // min(|x|, 4) on the bits
  float q = 1.59981910e-6f;
  q = madd(q, t, -1.33017092e-5f);
  q = madd(q, t, 7.74549205e-5f);
  q = madd(q, t, -4.20173124e-4f);
  q = madd(q, t, 2.16508152e-3f);
  q = madd(q, t, -1.08584873e-2f);
  q = madd(q, t, -9.43893608e-1f);
  q = madd(q, t, -5.35268069e+0f);
  q = madd(q, t, -7.80681528e+0f);
  const float large = float_of(bits_of(1.0f - exp_in_range(q)) | (bits_of(x) & 0x80000000u));
  return select(a >= 1.0f, large, small);  // NaN: the small branch's NaN
}

// tanh x: x (1 + x^2 p(x^2)) for |x| < 0.625; 1 - 2 / (e^(2|x|) + 1) beyond (|x| clamped at 10,
// where tanh is 1 in float). Within 2 ulp.
KILN_INLINE_MATH float tanh(float x) {
  const u32 ab = bits_of(x) & 0x7fffffffu;
  const float a = float_of(ab), x2 = x * x;
  float p = -5.70499037e-3f;
  p = madd(p, x2, 2.06390906e-2f);
  p = madd(p, x2, -5.37397163e-2f);
  p = madd(p, x2, 1.33314422e-1f);
  p = madd(p, x2, -3.33332819e-1f);
  const float small = x * madd(p, x2, 1.0f);  // (x (1 + x^2 p) rather than x + x^3 p: -0 stays -0)
  const float e = exp_in_range(2.0f * float_of(ab < 0x41200000u ? ab : 0x41200000u));  // min(|x|, 10)
  const float large = float_of(bits_of(madd(-2.0f, reciprocal(e + 1.0f), 1.0f)) | (bits_of(x) & 0x80000000u));
  return select(a >= 0.625f, large, small);  // NaN: the small branch's NaN
}

// 1 / (1 + e^-x), as e^-|x| / (1 + e^-|x|) for x < 0 so that the result keeps its relative
// accuracy down to e^-87 (beyond, 0). Within 2 ulp.
KILN_INLINE_MATH float sigmoid(float x) {
  const float e = exp(-float_of(bits_of(x) & 0x7fffffffu));  // in (0, 1]: 1 + e in [1, 2]
  const float s = reciprocal(1.0f + e);
  return select(x < 0.0f, e * s, s);  // NaN: e is NaN
}

// double: libm (the overloads make inline_math a drop-in for libm in unary.h).
KILN_SCALAR double exp(double x) { return libm::exp(x); }
KILN_SCALAR double log(double x) { return libm::log(x); }
KILN_SCALAR double erf(double x) { return libm::erf(x); }
KILN_SCALAR double tanh(double x) { return libm::tanh(x); }
KILN_SCALAR double sigmoid(double x) { return 1.0 / (1.0 + libm::exp(-x)); }

}  // namespace kiln::scalar::inline_math
