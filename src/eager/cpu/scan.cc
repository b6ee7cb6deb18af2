// CPU kernels of the scan prims. The input is made contiguous and seen as [outer, n, inner]
// with n the scanned dim; each (outer, block of inner) runs its own scan, so scans along an
// outer dim still read memory row by row.
#include <kiln/ops.h>

#include "eager/cpu/loops.h"
#include "ops/family.h"
#include "ops/meta/meta_util.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;
using ops::OpId;

constexpr int64_t kBlock = 64;  // inner elements scanned side by side

struct Lines {
  int64_t outer = 1, n = 1, inner = 1;
};

Lines lines_of(const Tensor& x, int64_t dim) {
  Lines l;
  if (x.dim() == 0) return l;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < dim) l.outer *= x.size(d);
    else if (d > dim) l.inner *= x.size(d);
  }
  l.n = x.size(dim);
  return l;
}

// Calls f(o, i0, i1) for every (outer row, inner block), in parallel when there is enough work.
template <class F>
void for_blocks(const Lines& l, F f) {
  const int64_t nblk = (l.inner + kBlock - 1) / kBlock, total = l.outer * nblk;
  const int threads = max_threads();
#pragma omp parallel for num_threads(threads) if (l.outer * l.n * l.inner > 32768 && total > 1 && threads > 1)
  for (int64_t t = 0; t < total; ++t) {
    const int64_t o = t / nblk, i0 = (t % nblk) * kBlock;
    f(o, i0, std::min(l.inner, i0 + kBlock));
  }
}

static_assert(ops::args_prefix<ops::args::cumsum, ops::args::cumprod>());
std::vector<Tensor> cum_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const ops::args::cumsum c{a};  // cumprod's arguments too
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  const Tensor x = c.self().to(out.dtype()).contiguous();
  const Lines l = lines_of(x, ops::wrap_dim(c.dim(), x.dim()));
  const bool is_sum = a.op == OpId::cumsum;
  visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_same_v<T, bool>) {
      detail::fail("internal: bool scan output");
    } else {
      // Floats accumulate in double (as PyTorch's CPU cumsum), integers in int64 with
      // wrapping arithmetic (loops.h's wrap_add/wrap_mul), as PyTorch's two's complement.
      using A = std::conditional_t<std::is_floating_point_v<acc_t<T>>, double, int64_t>;
      const T* in = x.data<T>();
      T* o = out.data<T>();
      for_blocks(l, [&](int64_t r, int64_t i0, int64_t i1) {
        A acc[kBlock];
        std::fill(acc, acc + (i1 - i0), A(is_sum ? 0 : 1));
        for (int64_t k = 0; k < l.n; ++k) {
          const int64_t base = (r * l.n + k) * l.inner;
          for (int64_t i = i0; i < i1; ++i) {
            const A v = A(acc_t<T>(in[base + i]));
            A& s = acc[i - i0];
            s = is_sum ? wrap_add(s, v) : wrap_mul(s, v);
            o[base + i] = T(acc_t<T>(s));
          }
        }
      });
    }
  });
  return {out};
}

template <class V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return std::isnan(v);
  else return false;
}

static_assert(ops::args_prefix<ops::args::cummax, ops::args::cummin>());
std::vector<Tensor> cum_extreme_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const ops::args::cummax c{a};  // cummin's arguments too
  Tensor values = make_tensor(specs[0]), indices = make_tensor(specs[1]);
  if (values.numel() == 0) return {values, indices};
  const Tensor x = c.self().contiguous();
  const Lines l = lines_of(x, ops::wrap_dim(c.dim(), x.dim()));
  const bool is_max = a.op == OpId::cummax;
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    using V = acc_t<T>;
    const T* in = x.data<T>();
    T* ov = values.data<T>();
    int64_t* oi = indices.data<int64_t>();
    for_blocks(l, [&](int64_t r, int64_t i0, int64_t i1) {
      V best[kBlock];
      int64_t at[kBlock];
      for (int64_t k = 0; k < l.n; ++k) {
        const int64_t base = (r * l.n + k) * l.inner;
        for (int64_t i = i0; i < i1; ++i) {
          const V v = V(in[base + i]);
          V& b = best[i - i0];
          // A NaN takes over and stays; among equal values the later one wins (PyTorch).
          const bool take = k == 0 || is_nan(v) || (!is_nan(b) && (is_max ? v >= b : v <= b));
          if (take) {
            b = v;
            at[i - i0] = k;
          }
          ov[base + i] = T(b);
          oi[base + i] = at[i - i0];
        }
      }
    });
  });
  return {values, indices};
}

}  // namespace

KILN_REGISTER(kernel, cumsum, cum_kernel);
KILN_REGISTER(kernel, cumprod, cum_kernel);
KILN_REGISTER(kernel, cummax, cum_extreme_kernel);
KILN_REGISTER(kernel, cummin, cum_extreme_kernel);

}  // namespace kiln::eager::cpu
