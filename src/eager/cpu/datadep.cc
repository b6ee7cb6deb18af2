// CPU kernels of the data-dependent prims: nonzero and unique (sizes decided here, see
// ops/meta/datadep.cc).
#include <kiln/ops.h>

#include <algorithm>
#include <numeric>

#include "eager/cpu/loops.h"
#include "ops/dispatch.h"

namespace kiln::eager::cpu {
namespace {

KILN_KERNEL(nonzero) {
  const Tensor& x = a.tensor(0);
  const Tensor m = contiguous(ne(x, ops::scalar_to_tensor(Scalar(int64_t(0)))));  // NaN counts as nonzero
  const bool* p = m.numel() > 0 ? m.data<bool>() : nullptr;
  const int64_t n = m.numel(), nd = x.dim();
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i) count += p[i];
  Tensor out = make_tensor({count, nd}, kInt64, x.device());
  if (count == 0) return {out};
  int64_t* o = out.data<int64_t>();
  std::vector<int64_t> idx(size_t(nd), 0);
  const Shape& sz = x.sizes();
  for (int64_t i = 0; i < n; ++i) {
    if (p[i]) {
      std::copy(idx.begin(), idx.end(), o);
      o += nd;
    }
    for (int64_t d = nd; d-- > 0;) {  // advance the row-major coordinates
      if (++idx[size_t(d)] < sz[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  return {out};
}

// Sorted unique values (NaNs are never equal, so each stays separate, last), the position of
// each input element's value in them, and how often each occurs. Always sorted: PyTorch leaves
// the order unspecified for sorted=False.
// unique(dim=d): the distinct slices along d, sorted lexicographically (a slice holding a NaN
// equals no other), picked from the input with index_select.
std::vector<Tensor> unique_slices(const Tensor& input, int64_t dim, bool want_inverse, bool want_counts) {
  const Tensor x = contiguous(movedim(input, {dim}, {0}));
  const int64_t n = x.dim() > 0 ? x.size(0) : 0, len = n > 0 ? x.numel() / n : 0;
  std::vector<int64_t> order(static_cast<size_t>(n)), starts;
  std::iota(order.begin(), order.end(), int64_t(0));
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    using A = acc_t<T>;
    const T* p = x.numel() > 0 ? x.data<T>() : nullptr;
    // -1, 0, 1 comparing slices i and j element by element; NaN after every number, and unequal.
    auto compare = [&](int64_t i, int64_t j, bool* equal) {
      *equal = true;
      for (int64_t k = 0; k < len; ++k) {
        const A u = A(p[i * len + k]), v = A(p[j * len + k]);
        if constexpr (std::is_floating_point_v<A>) {
          if (std::isnan(u) || std::isnan(v)) {
            *equal = false;
            if (std::isnan(u) != std::isnan(v)) return std::isnan(u) ? 1 : -1;
            continue;
          }
        }
        if (u < v) return -1;
        if (v < u) return 1;
      }
      return 0;
    };
    bool eq = false;
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) { return compare(i, j, &eq) < 0; });
    for (int64_t k = 0; k < n; ++k)
      if (k == 0 || compare(order[size_t(k - 1)], order[size_t(k)], &eq) != 0 || !eq) starts.push_back(k);
  });
  const int64_t m = int64_t(starts.size());
  Tensor picks = make_tensor({m}, kInt64, input.device());
  Tensor inverse = make_tensor({want_inverse ? n : 0}, kInt64, input.device());
  Tensor counts = make_tensor({want_counts ? m : 0}, kInt64, input.device());
  for (int64_t u = 0; u < m; ++u) {
    const int64_t b = starts[size_t(u)], e = u + 1 < m ? starts[size_t(u + 1)] : n;
    picks.data<int64_t>()[u] = order[size_t(b)];
    if (want_counts) counts.data<int64_t>()[u] = e - b;
    if (want_inverse)
      for (int64_t k = b; k < e; ++k) inverse.data<int64_t>()[order[size_t(k)]] = u;
  }
  return {contiguous(index_select(input, dim, picks)), inverse, counts};
}

KILN_KERNEL(unique) {
  if (!a.is_none(4)) {
    const int64_t d = *a.opt_i64(4), nd = a.tensor(0).dim();
    return unique_slices(a.tensor(0), d < 0 ? d + nd : d, a.b(2), a.b(3));
  }
  const Tensor x = contiguous(a.tensor(0));
  const bool want_inverse = a.b(2), want_counts = a.b(3);
  const int64_t n = x.numel();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t(0));
  Tensor out, inverse = make_tensor(want_inverse ? x.sizes() : Shape{0}, kInt64, x.device()), counts;
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    using A = acc_t<T>;
    const T* p = n > 0 ? x.data<T>() : nullptr;
    auto is_nan = [](A v) {
      if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
      else return false;
    };
    std::stable_sort(order.begin(), order.end(), [&](int64_t i, int64_t j) {
      const A u = A(p[i]), v = A(p[j]);
      if (is_nan(u) || is_nan(v)) return !is_nan(u);
      return u < v;
    });
    std::vector<int64_t> starts;  // first position in `order` of each unique value
    for (int64_t k = 0; k < n; ++k) {
      const A v = A(p[order[size_t(k)]]);
      if (k == 0 || is_nan(v) || !(A(p[order[size_t(k - 1)]]) == v)) starts.push_back(k);
    }
    const int64_t m = int64_t(starts.size());
    out = make_tensor({m}, x.dtype(), x.device());
    counts = make_tensor({want_counts ? m : 0}, kInt64, x.device());
    T* o = m > 0 ? out.data<T>() : nullptr;
    int64_t* inv = want_inverse && n > 0 ? inverse.data<int64_t>() : nullptr;
    int64_t* cnt = want_counts && m > 0 ? counts.data<int64_t>() : nullptr;
    for (int64_t u = 0; u < m; ++u) {
      const int64_t b = starts[size_t(u)], e = u + 1 < m ? starts[size_t(u + 1)] : n;
      o[u] = p[order[size_t(b)]];
      if (cnt) cnt[u] = e - b;
      if (inv)
        for (int64_t k = b; k < e; ++k) inv[order[size_t(k)]] = u;
    }
  });
  return {out, inverse, counts};
}

}  // namespace
}  // namespace kiln::eager::cpu
