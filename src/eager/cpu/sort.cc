// CPU kernels of sort and topk. Each line along the dim is copied out with its indices,
// ordered, and written back; lines run in parallel. NaN orders as the largest value (PyTorch).
#include <kiln/ops.h>

#include <algorithm>
#include <numeric>

#include "eager/cpu/loops.h"
#include "ops/args_gen.h"
#include "ops/meta/meta_util.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;

template <class V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return std::isnan(v);
  else return false;
}

// a < b with NaN above everything (NaNs equal to each other).
template <class V>
bool less_nan_last(V a, V b) {
  if (is_nan(a)) return false;
  return is_nan(b) || a < b;
}

// Runs f(line_values, line_indices, out_offset_of(k)) for every line of x along dim, where the
// input is contiguous and seen as [outer, n, inner]; out_n is the output's length along dim.
template <class T, class F>
void for_lines(const Tensor& x, int64_t dim, F f) {
  int64_t outer = 1, inner = 1, n = 1;
  if (x.dim() > 0) {
    for (int64_t d = 0; d < x.dim(); ++d) {
      if (d < dim) outer *= x.size(d);
      else if (d > dim) inner *= x.size(d);
    }
    n = x.size(dim);
  }
  const T* in = x.data<T>();
  const int64_t lines = outer * inner;
#pragma omp parallel for if (lines > 1 && lines * n > 16384)
  for (int64_t l = 0; l < lines; ++l) {
    const int64_t o = l / inner, i = l % inner;
    std::vector<acc_t<T>> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) v[size_t(k)] = acc_t<T>(in[(o * n + k) * inner + i]);
    f(v, o, i, inner);
  }
}

std::vector<Tensor> sort_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor values = make_tensor(specs[0]), indices = make_tensor(specs[1]);
  if (values.numel() == 0) return {values, indices};
  // A 0-d input is its own top element, for k = 1 and (as in PyTorch) for k = 0 too.
  const ops::args::sort s{a};
  if (s.self().dim() == 0) return {clone(s.self()), zeros(SymIntList{}, kInt64, s.self().device())};
  const Tensor x = s.self().contiguous();
  const int64_t dim = ops::wrap_dim(s.dim(), x.dim());
  const bool desc = s.descending();
  const int64_t n = x.dim() ? x.size(dim) : 1;
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    T* ov = values.data<T>();
    int64_t* oi = indices.data<int64_t>();
    for_lines<T>(x, dim, [&](const std::vector<acc_t<T>>& v, int64_t o, int64_t i, int64_t inner) {
      std::vector<int64_t> idx(static_cast<size_t>(n));
      std::iota(idx.begin(), idx.end(), int64_t(0));
      // Stable: equal values keep their original order, in both directions.
      if (desc)
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t p, int64_t q) { return less_nan_last(v[size_t(q)], v[size_t(p)]); });
      else
        std::stable_sort(idx.begin(), idx.end(), [&](int64_t p, int64_t q) { return less_nan_last(v[size_t(p)], v[size_t(q)]); });
      for (int64_t k = 0; k < n; ++k) {
        const int64_t at = (o * n + k) * inner + i;
        ov[at] = T(v[size_t(idx[size_t(k)])]);
        oi[at] = idx[size_t(k)];
      }
    });
  });
  return {values, indices};
}

std::vector<Tensor> topk_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor values = make_tensor(specs[0]), indices = make_tensor(specs[1]);
  if (values.numel() == 0) return {values, indices};
  // A 0-d input is its own top element, for k = 1 and (as in PyTorch) for k = 0 too.
  const ops::args::topk t{a};
  if (t.self().dim() == 0) return {clone(t.self()), zeros(SymIntList{}, kInt64, t.self().device())};
  const Tensor x = t.self().contiguous();
  const int64_t k = t.k();
  const int64_t dim = ops::wrap_dim(t.dim(), x.dim());
  const bool largest = t.largest();
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    T* ov = values.data<T>();
    int64_t* oi = indices.data<int64_t>();
    for_lines<T>(x, dim, [&](const std::vector<acc_t<T>>& v, int64_t o, int64_t i, int64_t inner) {
      std::vector<int64_t> idx(v.size());
      std::iota(idx.begin(), idx.end(), int64_t(0));
      // Ties go to the lower index, so results are deterministic; always returned sorted.
      auto before = [&](int64_t p, int64_t q) {
        const auto vp = v[size_t(p)], vq = v[size_t(q)];
        if (largest ? less_nan_last(vq, vp) : less_nan_last(vp, vq)) return true;
        if (largest ? less_nan_last(vp, vq) : less_nan_last(vq, vp)) return false;
        return p < q;
      };
      std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        const int64_t at = (o * k + j) * inner + i;
        ov[at] = T(v[size_t(idx[size_t(j)])]);
        oi[at] = idx[size_t(j)];
      }
    });
  });
  return {values, indices};
}

}  // namespace

KILN_REGISTER(kernel, sort, sort_kernel);
KILN_REGISTER(kernel, topk, topk_kernel);

}  // namespace kiln::eager::cpu
