// Fast CPU kernels of layer_norm and rms_norm: one row per normalized slice (the last dims),
// statistics accumulated in double, the rest in float (double for float64) as the
// decomposition computes; rows split across OpenMP threads.
#include <kiln/ops.h>

#include "eager/cpu/loops.h"
#include "eager/cpu/nn/fast_exp.h"
#include "ops/meta/nn_util.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;

int64_t row_size(const SymShape& ns) {
  int64_t m = 1;
  for (const SymInt& s : ns) m *= s.hint();
  return m;
}

// A parameter as a contiguous buffer of the row accumulation type (empty if undefined).
template <class A>
Tensor param(const Tensor& p) {
  return p.defined() ? contiguous(ops::cast_to(p, dtype_of<A>())) : Tensor();
}

KILN_KERNEL(layer_norm) {
  Tensor out = make_tensor(specs[0]);
  const int64_t m = row_size(a.symints(1));
  if (out.numel() == 0) return {out};
  Tensor x = contiguous(a.tensor(0));
  const int64_t rows = x.numel() / m;
  const double eps = a.f64(4);
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<acc_t<T>>) {
      using A = row_acc<T>;
      Tensor w = param<A>(a.opt_tensor(2)), b = param<A>(a.opt_tensor(3));
      const A* wp = w.defined() ? w.data<A>() : nullptr;
      const A* bp = b.defined() ? b.data<A>() : nullptr;
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
#pragma omp parallel for schedule(static) if (rows * m > 16384 && rows > 1)
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = xp + r * m;
        T* yr = yp + r * m;
        double s = 0;
        for (int64_t i = 0; i < m; ++i) s += double(A(xr[i]));
        const A mu = A(s / double(m));
        double v = 0;
        for (int64_t i = 0; i < m; ++i) {
          const A d = A(xr[i]) - mu;
          v += double(d * d);
        }
        const A rstd = A(1) / std::sqrt(A(v / double(m)) + A(eps));
        for (int64_t i = 0; i < m; ++i) {
          A y = (A(xr[i]) - mu) * rstd;
          if (wp) y = y * wp[i];
          if (bp) y = y + bp[i];
          yr[i] = T(y);
        }
      }
    }
  });
  return {out};
}

KILN_KERNEL(rms_norm) {
  Tensor out = make_tensor(specs[0]);
  const int64_t m = row_size(a.symints(1));
  if (out.numel() == 0) return {out};
  Tensor x = contiguous(a.tensor(0));
  const int64_t rows = x.numel() / m;
  const double eps = ops::rms_norm_eps(x.dtype(), a.opt_f64(3));
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<acc_t<T>>) {
      visit_all(out.dtype(), [&]<class O>(type_tag<O>) {
        if constexpr (std::is_floating_point_v<acc_t<O>>) {
          using A = row_acc<T>;
          using W = acc_t<O>;  // the product with the weight is computed in the output's type
          Tensor w = param<W>(a.opt_tensor(2));
          const W* wp = w.defined() ? w.data<W>() : nullptr;
          const T* xp = x.data<T>();
          O* yp = out.data<O>();
#pragma omp parallel for schedule(static) if (rows * m > 16384 && rows > 1)
          for (int64_t r = 0; r < rows; ++r) {
            const T* xr = xp + r * m;
            O* yr = yp + r * m;
            double s = 0;
            for (int64_t i = 0; i < m; ++i) s += double(A(xr[i]) * A(xr[i]));
            const A rr = A(1) / std::sqrt(A(s / double(m)) + A(eps));
            for (int64_t i = 0; i < m; ++i) {
              const T y = T(A(xr[i]) * rr);
              yr[i] = wp ? O(W(acc_t<T>(y)) * wp[i]) : O(acc_t<T>(y));
            }
          }
        }
      });
    }
  });
  return {out};
}

}  // namespace
}  // namespace kiln::eager::cpu
