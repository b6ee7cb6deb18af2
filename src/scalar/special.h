// Special functions the C math library lacks, in double precision (float callers round).
#pragma once
#include "scalar/base.h"

namespace kiln::scalar {

// Inverse error function: a rational initial guess refined by two Newton steps on erf.
KILN_SCALAR double erfinv_f64(double y) {
  if (libm::isnan(y) || y < -1 || y > 1) return libm::nan();
  if (y == 1) return libm::inf();
  if (y == -1) return -libm::inf();
  // Giles' single-precision approximation as the starting point.
  double w = -libm::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = libm::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    x = p * y;
  }
  const double k = 1.1283791670955126;  // 2/sqrt(pi)
  for (int i = 0; i < 2; ++i) x -= (libm::erf(x) - y) / (k * libm::exp(-x * x));
  return x;
}

// Digamma (psi): reflection for x < 0.5, recurrence up to x >= 10, then the asymptotic series.
// (No recursion, so a GPU thread needs no call stack for it.)
KILN_SCALAR double digamma_f64(double x) {
  if (x == 0) return libm::signbit(x) ? libm::inf() : -libm::inf();
  if (x < 0 && x == libm::floor(x)) return libm::nan();
  double reflection = 0;  // psi(x) = psi(1 - x) - pi / tan(pi x)
  if (x < 0.5) {
    reflection = libm::kPi / libm::tan(libm::kPi * x);
    x = 1.0 - x;
  }
  double r = 0;
  while (x < 10) {
    r -= 1.0 / x;
    x += 1;
  }
  const double z = 1.0 / (x * x);
  const double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132)))));
  return r + libm::log(x) - 0.5 / x - series - reflection;
}

}  // namespace kiln::scalar
