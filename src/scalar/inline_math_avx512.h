// inline_math's float exp, erf and sigmoid as AVX-512 code, for generated CPU code on a host
// with AVX-512 (F and DQ). GCC vectorizes the scalar polynomials, but C cannot reach the
// instructions that make them cheap: vscalefps (p * 2^n, with overflow to inf and underflow to
// 0 built in), vrcp14ps (a reciprocal to 2^-14, one Newton step from float accuracy), vpermps
// (erf's per-interval coefficients from registers; a gather per coefficient costs more than the
// polynomial). So each function here is declared `omp declare simd`: in a loop the vectorizer
// vectorizes, a call of it becomes a call of its 16-lane form _ZGVeN16v_<symbol>, defined below;
// elsewhere it is the scalar function. Both forms compute the same bits (erf, exp in the normal
// range), sigmoid's vector form within 1 ulp of its scalar one (rcp14 and a Newton step for
// the division). tests/unit/scalar/inline_math_test.cc sweeps both against double libm.
#pragma once
#include "scalar/inline_math.h"

#if defined(KILN_SCALAR_INLINE_MATH) && defined(__AVX512F__) && defined(__AVX512DQ__) && defined(_OPENMP) && \
    !defined(KILN_SCALAR_DEVICE)
#define KILN_SCALAR_VECTOR_MATH 1
#include <immintrin.h>

// Hidden, emitted once per shared object however many translation units include it.
#define KILN_VECTOR_MATH_DEF extern "C" inline __attribute__((used, visibility("hidden")))

namespace kiln::scalar::inline_math {

// The scalar forms, under the symbols the vector forms are named after.
KILN_VECTOR_MATH_DEF float kiln_vm_exp(float x) { return exp(x); }
KILN_VECTOR_MATH_DEF float kiln_vm_erf(float x) { return erf(x); }
KILN_VECTOR_MATH_DEF float kiln_vm_sigmoid(float x) { return sigmoid(x); }

// e^x as exp: n = round(x / ln2) by the 1.5 * 2^23 shifter, the same reduction and (halved)
// polynomial, 2^n by vscalefps. x is clamped above at 89 (e^89 is inf in float: so is the
// scaled result, and +inf leaves no inf - inf in the reduction); below ln FLT_MIN the result is 0.
// (kNonPositive: x <= 0 or NaN, no clamp.)
template <bool kNonPositive = false>
inline __m512 exp_avx512(__m512 x) {
  const __m512 shifter = _mm512_set1_ps(12582912.0f);
  if (!kNonPositive) x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);  // NaN stays (vminps returns its second operand)
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504f), shifter), shifter);
  __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-0.693359375f), x);
  r = _mm512_fmadd_ps(n, _mm512_set1_ps(2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(0.5f * kExp2[0]);  // exp_reduced's coefficients halved: e^r, not 2 e^r
  for (int k = 1; k < 7; ++k) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f * kExp2[k]));
  const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3365448f), _CMP_NLT_UQ);  // and NaN
  return _mm512_maskz_scalef_ps(normal, p, n);
}

KILN_VECTOR_MATH_DEF __m512 _ZGVeN16v_kiln_vm_exp(__m512 x) { return exp_avx512(x); }

// erf as the scalar one: the interval's index in the low bits of |x| * 3.875 + shifter.
KILN_VECTOR_MATH_DEF __m512 _ZGVeN16v_kiln_vm_erf(__m512 x) {
  const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32(int(0x80000000u)));
  const __m512 a = _mm512_min_ps(_mm512_set1_ps(kErfClamp), _mm512_andnot_ps(sign, x));
  const __m512i i = _mm512_castps_si512(_mm512_fmadd_ps(a, _mm512_set1_ps(3.875f), _mm512_set1_ps(12582912.0f)));
  const __m512 u = _mm512_sub_ps(a, _mm512_permutexvar_ps(i, _mm512_loadu_ps(kErf.center)));
  __m512 p = _mm512_permutexvar_ps(i, _mm512_loadu_ps(kErf.c[5]));
  for (int k = 4; k >= 0; --k) p = _mm512_fmadd_ps(p, u, _mm512_permutexvar_ps(i, _mm512_loadu_ps(kErf.c[k])));
  return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(_mm512_castps_si512(sign), _mm512_castps_si512(x),
                                                       _mm512_castps_si512(p), 0xca));  // sign ? x : p, bitwise
}

// sigmoid as the scalar one, the division 1 / (1 + e) as rcp14 and one Newton step.
KILN_VECTOR_MATH_DEF __m512 _ZGVeN16v_kiln_vm_sigmoid(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 e = exp_avx512<true>(_mm512_or_ps(x, _mm512_castsi512_ps(_mm512_set1_epi32(int(0x80000000u)))));  // e^-|x|
  const __m512 d = _mm512_add_ps(one, e);
  __m512 s = _mm512_rcp14_ps(d);
  s = _mm512_fmadd_ps(s, _mm512_fnmadd_ps(d, s, one), s);
  return _mm512_mask_mul_ps(s, _mm512_movepi32_mask(_mm512_castps_si512(x)), e, s);  // x < 0: e / (1 + e)
}

}  // namespace kiln::scalar::inline_math

namespace kiln::scalar::vector_math {

// What generated loops call: the declarations `omp declare simd` names the vector forms after.
extern "C" {
#pragma omp declare simd notinbranch simdlen(16)
__attribute__((const)) float kiln_vm_exp_simd(float) noexcept __asm__("kiln_vm_exp");
#pragma omp declare simd notinbranch simdlen(16)
__attribute__((const)) float kiln_vm_erf_simd(float) noexcept __asm__("kiln_vm_erf");
#pragma omp declare simd notinbranch simdlen(16)
__attribute__((const)) float kiln_vm_sigmoid_simd(float) noexcept __asm__("kiln_vm_sigmoid");
}

// unary.h's `math` in generated CPU code on such a host: these three vectorized, the rest inline_math's.
KILN_SCALAR float exp(float x) { return kiln_vm_exp_simd(x); }
KILN_SCALAR float erf(float x) { return kiln_vm_erf_simd(x); }
KILN_SCALAR float sigmoid(float x) { return kiln_vm_sigmoid_simd(x); }
using inline_math::log;
using inline_math::tanh;
KILN_SCALAR double exp(double x) { return inline_math::exp(x); }
KILN_SCALAR double erf(double x) { return inline_math::erf(x); }
KILN_SCALAR double sigmoid(double x) { return inline_math::sigmoid(x); }

}  // namespace kiln::scalar::vector_math

#undef KILN_VECTOR_MATH_DEF
#endif
