// Small helpers for the float64 reference computations of the layout/indexing tests:
// row-major coordinates, and index tensors built from plain vectors.
#pragma once
#include <kiln/kiln.h>

#include <random>
#include <vector>

#include "support/test_util.h"

namespace kiln::test {

inline std::vector<int64_t> unravel(int64_t p, const Shape& shape) {
  std::vector<int64_t> c(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    c[d] = p % shape[d];
    p /= shape[d];
  }
  return c;
}

inline int64_t ravel(const std::vector<int64_t>& c, const Shape& shape) {
  int64_t p = 0;
  for (size_t d = 0; d < shape.size(); ++d) p = p * shape[d] + c[d];
  return p;
}

// Random integers in [lo, hi] as an int64 tensor (and the values).
inline Tensor random_index(const Shape& shape, int64_t lo, int64_t hi, std::vector<int64_t>* values = nullptr,
                           DType dtype = kInt64) {
  std::uniform_int_distribution<int64_t> u(lo, hi);
  std::vector<int64_t> v(size_t(numel(shape)));
  for (auto& x : v) x = u(rng());
  if (values) *values = v;
  return tensor(v, shape, dtype);
}

inline std::vector<DType> float_dtypes() { return {kFloat32, kFloat64, kBFloat16, kFloat16}; }

}  // namespace kiln::test
