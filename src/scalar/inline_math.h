// exp, log, erf, tanh and sigmoid in float as branch-free polynomials: what the pointwise prims
// compute in generated CPU code (scalar.h: KILN_SCALAR_INLINE_MATH). Each is a few multiply-adds
// and selects with no call (erf: a small table), so a per-element loop over them vectorizes in
// place (on AVX-512, exp, erf and sigmoid call their vector forms, inline_math_avx512.h): as
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

// Host code only (unary.h uses these off the device): a GPU has its own exp, erf, ... and NVRTC
// would not take the tables.
#if !defined(KILN_SCALAR_DEVICE)
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
inline constexpr float kExp2[7] = {2.76292220e-3f, 1.67374201e-2f, 8.33367748e-2f, 3.33330414e-1f,
                                   9.99999869e-1f, 2.0f, 2.0f};  // 2 * (1/720, 1/120, ..., 1, 1), fitted
KILN_INLINE_MATH float exp_reduced(float x, i32 nb) {
  const float n = float_of(u32(nb)) - 12582912.0f;
  const float r = madd(n, 2.12194440e-4f, madd(n, -0.693359375f, x));  // x - n ln2, ln2 = 0.693359375 - 2.12e-4
  float p = kExp2[0];
  for (int k = 1; k < 7; ++k) p = madd(p, r, kExp2[k]);
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

// erf x: a degree-5 polynomial in |x| - c_i on 16 intervals of |x| in [0, 4) (width 1/3.875,
// centered at i / 3.875: i = |x| * 3.875 rounded, read from the bits of |x| * 3.875 + 1.5 * 2^23),
// the sign copied from x. The first interval's polynomial has no constant term (u p(u)), so small
// and subnormal x keep their relative accuracy; |x| is clamped below 4, where the last one is 1 in
// float. Within 2 ulp. The same tables serve the AVX-512 variant (inline_math_avx512.h): a lane's
// coefficients are register permutes there, so both compute the same bits.
struct ErfTable {
  float center[16];
  float c[6][16];  // c[k][i]: the coefficient of u^k on interval i
};
inline constexpr ErfTable kErf = {
    {0.0f, 0.258064508f, 0.516129017f, 0.774193525f, 1.03225803f, 1.29032254f, 1.54838705f, 1.80645156f,
     2.06451607f, 2.32258058f, 2.58064508f, 2.83870959f, 3.0967741f, 3.35483861f, 3.61290312f, 3.87096763f},
    {{0.0f, 0.284857482f, 0.534558833f, 0.726428568f, 0.855664134f, 0.931967497f, 0.971457601f, 0.989372313f,
      0.996495962f, 0.998978794f, 0.999737322f, 0.999940455f, 0.999988079f, 0.999997914f, 0.999999702f,
      0.99999994f},
     {1.12837923f, 1.0556798f, 0.864497423f, 0.619654417f, 0.388767272f, 0.213493258f, 0.102620229f,
      0.0431753732f, 0.0158998705f, 0.00512513565f, 0.00144601066f, 0.000357101701f, 7.71910054e-05f,
      1.46048069e-05f, 2.41868452e-06f, 5.57241151e-07f},
     {-1.40706652e-05f, -0.272427469f, -0.446168751f, -0.479719251f, -0.401321083f, -0.275466561f,
      -0.158886909f, -0.0779929459f, -0.0328359716f, -0.0118916146f, -0.00372582069f, -0.00102128508f,
      -0.000226799559f, -5.1097144e-05f, -2.06207897e-05f, 8.49278877e-06f},
     {-0.375590295f, -0.305015504f, -0.134632677f, 0.0410465598f, 0.146576345f, 0.165803209f, 0.129815251f,
      0.0795377493f, 0.039879512f, 0.016722925f, 0.00593792601f, 0.00179930346f, 0.000467737613f,
      0.000104700259f, 2.02367592e-05f, -1.0218555e-05f},
     {-0.0065199472f, 0.129160881f, 0.181249201f, 0.142834947f, 0.0590217933f, -0.0152938953f, -0.0477785841f,
      -0.0458068848f, -0.0296127386f, -0.0162187144f, -0.00680778129f, -0.00178327493f, -0.00138695189f,
      -3.61384264e-05f, 0.000677825185f, -0.000574447331f},
     {0.137266234f, 0.0774742886f, 0.0024383245f, -0.0563195087f, -0.0675576553f, -0.0418776944f,
      -0.00963125098f, 0.00911029056f, 0.01293563f, 0.00933496375f, 0.00486022932f, 0.00199061912f,
      0.000665477477f, 0.000185179699f, 4.33836976e-05f, 0.000295618462f}}};
inline constexpr float kErfClamp = 3.99999976f;  // the float below 4
KILN_INLINE_MATH float erf(float x) {
  const float ab = float_of(bits_of(x) & 0x7fffffffu);
  const float a = kErfClamp < ab ? kErfClamp : ab;  // min(|x|, below 4); NaN stays NaN
  const u32 i = bits_of(madd(a, 3.875f, 12582912.0f)) & 15u;
  const float u = a - kErf.center[i];
  float p = kErf.c[5][i];
  for (int k = 4; k >= 0; --k) p = madd(p, u, kErf.c[k][i]);
  return copysign(p, x);
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
// accuracy down to e^-87 (beyond, 0). One division (vdivps: 3 uops, where reciprocal is 7).
// Within 2 ulp.
KILN_INLINE_MATH float sigmoid(float x) {
  const float e = exp(-float_of(bits_of(x) & 0x7fffffffu));  // in (0, 1]: 1 + e in [1, 2]
  return select(x < 0.0f, e, 1.0f) / (1.0f + e);  // NaN: e is NaN
}

// double: libm (the overloads make inline_math a drop-in for libm in unary.h).
KILN_SCALAR double exp(double x) { return libm::exp(x); }
KILN_SCALAR double log(double x) { return libm::log(x); }
KILN_SCALAR double erf(double x) { return libm::erf(x); }
KILN_SCALAR double tanh(double x) { return libm::tanh(x); }
KILN_SCALAR double sigmoid(double x) { return 1.0 / (1.0 + libm::exp(-x)); }

}  // namespace kiln::scalar::inline_math
#endif
