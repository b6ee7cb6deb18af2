// Fast CPU kernels of layer_norm and rms_norm, and layer_norm's gradients: one row per normalized
// slice (the last dims), statistics accumulated in double, the rest in float (double for
// float64) as the decomposition and the derivative formula compute; rows split across OpenMP
// threads.
#include <kiln/ops.h>

#include "eager/cpu/loops.h"
#include "eager/cpu/nn/backward.h"
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

// A row's mean and 1 / sqrt(variance + eps), the sums in double.
template <class A, class T>
std::pair<A, A> row_stats(const T* xr, int64_t m, double eps) {
  double s = 0;
  for (int64_t i = 0; i < m; ++i) s += double(A(xr[i]));
  const A mu = A(s / double(m));
  double v = 0;
  for (int64_t i = 0; i < m; ++i) {
    const A d = A(xr[i]) - mu;
    v += double(d * d);
  }
  return {mu, A(1) / std::sqrt(A(v / double(m)) + A(eps))};
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
        const auto [mu, rstd] = row_stats<A>(xr, m, eps);
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

// The formula's gradients (autograd/derivatives/nn.cc) with xhat = (x - mean) rstd and gy = g w:
// dx = rstd ((gy - mean(gy)) - xhat mean(gy xhat)) per row, dw = sum over rows of g xhat, db = sum
// of g (the column sums in double). Rows first (dx, and each row's mean and rstd), then the
// columns, each thread a block of them over every row, so that no sum is shared between threads.
std::vector<Tensor> layer_norm_backward(const Tensor& grad, const Tensor& input, const Shape& ns, const Tensor& weight,
                                        double eps, bool need_x, bool need_w, bool need_b) {
  const DType dt = input.dtype();
  const int64_t m = numel_of(ns);
  KILN_CHECK((dt == kFloat32 || dt == kFloat64) && grad.dtype() == dt && grad.sizes() == input.sizes() && m > 0 &&
                 (!weight.defined() || (weight.dtype() == dt && weight.sizes() == ns)),
             "internal: layer_norm_backward wants float32/float64 tensors of matching shapes");
  Tensor x = contiguous(input), g = contiguous(grad), w = weight.defined() ? contiguous(weight) : Tensor();
  const int64_t rows = x.numel() / m;
  Tensor dx = need_x ? make_tensor(x.sizes(), dt) : Tensor();
  Tensor dw = need_w ? make_tensor(ns, dt) : Tensor(), db = need_b ? make_tensor(ns, dt) : Tensor();
  visit_all(dt, [&]<class A>(type_tag<A>) {
    if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
      const A* xp = x.data<A>();
      const A* gp = g.data<A>();
      const A* wp = w.defined() ? w.data<A>() : nullptr;
      std::vector<A> mus(static_cast<size_t>(rows)), rstds(static_cast<size_t>(rows));
#pragma omp parallel if (rows * m > 16384 && rows > 1)
      {
        std::vector<A> gy(static_cast<size_t>(m));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          const A* xr = xp + r * m;
          const A* gr = gp + r * m;
          const auto [mu, rstd] = row_stats<A>(xr, m, eps);
          mus[size_t(r)] = mu, rstds[size_t(r)] = rstd;
          if (!need_x) continue;
          double sg = 0, sgx = 0;
          for (int64_t i = 0; i < m; ++i) {
            gy[size_t(i)] = wp ? gr[i] * wp[i] : gr[i];
            sg += double(gy[size_t(i)]);
            sgx += double(gy[size_t(i)] * ((xr[i] - mu) * rstd));
          }
          const A mg = A(sg / double(m)), mgx = A(sgx / double(m));
          A* dr = dx.data<A>() + r * m;
          for (int64_t i = 0; i < m; ++i) dr[i] = rstd * ((gy[size_t(i)] - mg) - ((xr[i] - mu) * rstd) * mgx);
        }
      }
      if (!need_w && !need_b) return;
      A* dwp = need_w ? dw.data<A>() : nullptr;
      A* dbp = need_b ? db.data<A>() : nullptr;
      constexpr int64_t kCols = 64;
#pragma omp parallel for schedule(static) if (rows * m > 16384 && m > kCols)
      for (int64_t c0 = 0; c0 < m; c0 += kCols) {
        const int64_t nc = std::min(kCols, m - c0);
        double sw[kCols] = {}, sb[kCols] = {};
        for (int64_t r = 0; r < rows; ++r) {
          const A* xr = xp + r * m + c0;
          const A* gr = gp + r * m + c0;
          const A mu = mus[size_t(r)], rstd = rstds[size_t(r)];
          for (int64_t j = 0; j < nc; ++j) {
            sw[j] += double(gr[j] * ((xr[j] - mu) * rstd));
            sb[j] += double(gr[j]);
          }
        }
        for (int64_t j = 0; j < nc; ++j) {
          if (dwp) dwp[c0 + j] = A(sw[j]);
          if (dbp) dbp[c0 + j] = A(sb[j]);
        }
      }
    }
  });
  return {dx, dw, db};
}

}  // namespace kiln::eager::cpu
