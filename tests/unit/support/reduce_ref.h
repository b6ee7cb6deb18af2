// Float64 references for reduction, scan and sort tests: plain loops over the input values.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "support/test_util.h"

namespace kiln::test {

inline int64_t wrap(int64_t d, int64_t nd) { return d < 0 ? d + std::max<int64_t>(nd, 1) : d; }

// Splits row-major `vals` of `shape` into one group per output of a reduction over `dims`
// (empty = all dims). Groups come in output order; each group's values in row-major order of the
// reduced dims, so the position inside a group is the flattened reduced index.
inline std::vector<std::vector<double>> groups(const std::vector<double>& vals, const Shape& shape,
                                               std::vector<int64_t> dims) {
  const int64_t nd = int64_t(shape.size());
  std::vector<bool> red(size_t(nd), dims.empty());
  for (int64_t d : dims) red[size_t(wrap(d, nd))] = true;
  int64_t n_out = 1;
  for (int64_t d = 0; d < nd; ++d)
    if (!red[size_t(d)]) n_out *= shape[size_t(d)];
  std::vector<std::vector<double>> g(static_cast<size_t>(n_out));
  std::vector<int64_t> idx(size_t(nd), 0);
  for (size_t lin = 0; lin < vals.size(); ++lin) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d)
      if (!red[size_t(d)]) o = o * shape[size_t(d)] + idx[size_t(d)];
    g[size_t(o)].push_back(vals[lin]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[size_t(d)] < shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return g;
}

inline std::vector<double> reduce_ref(const std::vector<double>& vals, const Shape& shape,
                                      const std::vector<int64_t>& dims,
                                      const std::function<double(const std::vector<double>&)>& f) {
  std::vector<double> out;
  for (const auto& grp : groups(vals, shape, dims)) out.push_back(f(grp));
  return out;
}

// The shape of a reduction's output.
inline Shape reduced(const Shape& shape, const std::vector<int64_t>& dims, bool keepdim) {
  const int64_t nd = int64_t(shape.size());
  std::vector<bool> red(size_t(nd), dims.empty());
  for (int64_t d : dims) red[size_t(wrap(d, nd))] = true;
  Shape out;
  for (int64_t d = 0; d < nd; ++d) {
    if (!red[size_t(d)]) out.push_back(shape[size_t(d)]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

inline double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
inline double ref_prod(const std::vector<double>& v) {
  double s = 1;
  for (double x : v) s *= x;
  return s;
}
// PyTorch's max: NaN propagates.
inline double ref_max(const std::vector<double>& v) {
  double m = -INFINITY;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}
inline double ref_min(const std::vector<double>& v) {
  double m = INFINITY;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}
// First index of the max (NaN counts as the largest; the first NaN wins).
inline double ref_argmax(const std::vector<double>& v) {
  size_t b = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return double(i);
    if (v[i] > v[b]) b = i;
  }
  return double(b);
}
inline double ref_argmin(const std::vector<double>& v) {
  size_t b = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return double(i);
    if (v[i] < v[b]) b = i;
  }
  return double(b);
}

// Moves dimension `dim` of row-major `vals` to be innermost: returns rows (one per other index,
// in row-major order of the remaining dims), each the values along `dim`.
inline std::vector<std::vector<double>> lines(const std::vector<double>& vals, const Shape& shape, int64_t dim) {
  const int64_t nd = int64_t(shape.size());
  if (nd == 0) return {vals};
  dim = wrap(dim, nd);
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= shape[size_t(d)];
  const int64_t n = shape[size_t(dim)];
  const int64_t outer = n * inner == 0 ? 0 : int64_t(vals.size()) / (n * inner);
  std::vector<std::vector<double>> r;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<double> l;
      for (int64_t k = 0; k < n; ++k) l.push_back(vals[size_t((o * n + k) * inner + i)]);
      r.push_back(l);
    }
  if (n == 0) return {};
  return r;
}

// The inverse of lines(): puts per-line results (each of length m) back with `dim` of size m.
inline std::vector<double> unlines(const std::vector<std::vector<double>>& ls, const Shape& shape, int64_t dim,
                                   int64_t m) {
  const int64_t nd = int64_t(shape.size());
  if (nd == 0) return ls.empty() ? std::vector<double>{} : ls[0];
  dim = wrap(dim, nd);
  int64_t inner = 1;
  for (int64_t d = dim + 1; d < nd; ++d) inner *= shape[size_t(d)];
  std::vector<double> out(ls.size() * size_t(m));
  for (size_t l = 0; l < ls.size(); ++l) {
    const int64_t o = int64_t(l) / inner, i = int64_t(l) % inner;
    for (int64_t k = 0; k < m; ++k) out[size_t((o * m + k) * inner + i)] = ls[l][size_t(k)];
  }
  return out;
}

}  // namespace kiln::test
