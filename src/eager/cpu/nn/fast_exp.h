// Branch-free helpers for the row loops of the NN kernels, written so that GCC vectorizes them
// without -ffast-math: exp of non-positive floats, and sums / maxima kept in 8 lanes.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace kiln::eager::cpu {

// What the NN row kernels accumulate in: double for float64 rows, float otherwise.
template <class T>
using row_acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// exp(x) for x <= 0 (float): x = k ln2 + r with |r| <= ln2 / 2, exp(r) by its degree-6 Taylor
// polynomial (relative error ~1e-7), 2^k through the exponent bits. |x| is clamped at 87 on its
// bits (an integer min, which vectorizes where a float compare would become a branch), so
// inputs below -87 (also -inf, and NaN: callers check for NaN) give ~1.6e-38 instead of 0,
// which vanishes against a softmax sum >= 1.
inline float exp_nonpos(float x) {
  uint32_t mag = std::bit_cast<uint32_t>(x) & 0x7fffffffu;
  mag = mag < 0x42ae0000u ? mag : 0x42ae0000u;  // 87.0f
  x = -std::bit_cast<float>(mag);
  const float kf = (x * 1.44269504f + 12582912.0f) - 12582912.0f;  // round to nearest
  const float r = (x - kf * 0.693145751953125f) - kf * 1.42860677e-06f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((int32_t(kf) + 127) << 23);
}
inline double exp_nonpos(double x) { return std::exp(x); }

// Sum and max of n values, accumulated in 8 interleaved lanes (a fixed order: deterministic).
template <class A>
A lane_sum(const A* v, int64_t n) {
  A part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) part[l] += v[i + l];
  A s = 0;
  for (; i < n; ++i) s += v[i];
  for (int l = 0; l < 8; ++l) s += part[l];
  return s;
}
template <class A>
A lane_max(const A* v, int64_t n) {
  A part[8];
  for (int l = 0; l < 8; ++l) part[l] = -std::numeric_limits<A>::infinity();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; ++l) part[l] = v[i + l] > part[l] ? v[i + l] : part[l];
  A m = -std::numeric_limits<A>::infinity();
  for (; i < n; ++i) m = v[i] > m ? v[i] : m;
  for (int l = 0; l < 8; ++l) m = part[l] > m ? part[l] : m;
  return m;
}

}  // namespace kiln::eager::cpu
