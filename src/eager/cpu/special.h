// Special functions the C++ library lacks, in double precision (float callers round).
#pragma once
#include <cmath>
#include <limits>

namespace kiln::eager::cpu {

// Inverse error function: a rational initial guess refined by two Newton steps on erf.
inline double erfinv(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y == -1) return -std::numeric_limits<double>::infinity();
  // Giles' single-precision approximation as the starting point.
  double w = -std::log((1.0 - y) * (1.0 + y)), x;
  if (w < 5.0) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3.0;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w;
    x = p * y;
  }
  const double k = 1.1283791670955126;  // 2/sqrt(pi)
  for (int i = 0; i < 2; ++i) x -= (std::erf(x) - y) / (k * std::exp(-x * x));
  return x;
}

// Digamma (psi): reflection for x < 0.5, recurrence up to x >= 10, then the asymptotic series.
inline double digamma(double x) {
  if (x == 0) return std::signbit(x) ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
  if (x < 0 && x == std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  if (x < 0.5) return digamma(1.0 - x) - M_PI / std::tan(M_PI * x);
  double r = 0;
  while (x < 10) {
    r -= 1.0 / x;
    x += 1;
  }
  const double z = 1.0 / (x * x);
  const double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132)))));
  return r + std::log(x) - 0.5 / x - series;
}

}  // namespace kiln::eager::cpu
