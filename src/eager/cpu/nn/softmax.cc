// Fast CPU kernels of softmax / log_softmax: the input viewed as (outer, n, inner) with the
// softmax dim in the middle; max, sum of exp and output per row with float accumulation
// (double for float64), rows split across OpenMP threads. Same results as the decomposition.
#include <kiln/ops.h>

#include <limits>

#include "eager/cpu/loops.h"
#include "eager/cpu/nn/backward.h"
#include "eager/cpu/nn/fast_exp.h"
#include "ops/meta/nn_util.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;

// One softmax row over the first n of its len entries, each times `scale` (exact for 1); the other
// entries get 0 times the normalizer, as the exp(-inf) entries of a masked softmax do (0, or NaN
// in a row with a NaN).
template <class T, class A>
void softmax_row(const T* xr, T* yr, int64_t n, int64_t len, A scale, A* buf) {
  A m = -std::numeric_limits<A>::infinity();
  for (int64_t k = 0; k < n; ++k) m = std::max(m, A(xr[k]) * scale);
  A s = 0;
  for (int64_t k = 0; k < n; ++k) {
    buf[k] = std::exp(A(xr[k]) * scale - m);
    s += buf[k];
  }
  const A inv = A(1) / s;
  for (int64_t k = 0; k < n; ++k) yr[k] = T(buf[k] * inv);
  for (int64_t k = n; k < len; ++k) yr[k] = T(A(0) * inv);
}

// Rows along the last dim (inner == 1): contiguous, one thread per block of rows.
template <class T, bool LOG>
void softmax_lastdim(const T* x, T* y, int64_t outer, int64_t n) {
  using A = row_acc<T>;
#pragma omp parallel if (outer * n > 16384 && outer > 1)
  {
    std::vector<A> buf(size_t(LOG ? 0 : n));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* xr = x + o * n;
      T* yr = y + o * n;
      if constexpr (LOG) {
        A m = -std::numeric_limits<A>::infinity();
        for (int64_t k = 0; k < n; ++k) m = std::max(m, A(xr[k]));
        A s = 0;
        for (int64_t k = 0; k < n; ++k) s += std::exp(A(xr[k]) - m);
        const A ls = std::log(s);
        for (int64_t k = 0; k < n; ++k) yr[k] = T((A(xr[k]) - m) - ls);
      } else {
        softmax_row(xr, yr, n, n, A(1), buf.data());
      }
    }
  }
}

// Softmax over a middle dim: for each outer block, column-wise max and sums over n rows of inner.
template <class T, bool LOG>
void softmax_inner(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using A = row_acc<T>;
#pragma omp parallel if (outer * n * inner > 16384)
  {
    std::vector<A> m(static_cast<size_t>(inner)), s(static_cast<size_t>(inner));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < outer; ++o) {
      const T* xb = x + o * n * inner;
      T* yb = y + o * n * inner;
      std::fill(m.begin(), m.end(), -std::numeric_limits<A>::infinity());
      std::fill(s.begin(), s.end(), A(0));
      for (int64_t k = 0; k < n; ++k)
        for (int64_t i = 0; i < inner; ++i) m[size_t(i)] = std::max(m[size_t(i)], A(xb[k * inner + i]));
      for (int64_t k = 0; k < n; ++k)
        for (int64_t i = 0; i < inner; ++i) s[size_t(i)] += std::exp(A(xb[k * inner + i]) - m[size_t(i)]);
      for (int64_t i = 0; i < inner; ++i) s[size_t(i)] = LOG ? std::log(s[size_t(i)]) : A(1) / s[size_t(i)];
      for (int64_t k = 0; k < n; ++k)
        for (int64_t i = 0; i < inner; ++i) {
          const A d = A(xb[k * inner + i]) - m[size_t(i)];
          yb[k * inner + i] = LOG ? T(d - s[size_t(i)]) : T(std::exp(d) * s[size_t(i)]);
        }
    }
  }
}

std::vector<Tensor> softmax_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  Tensor x = contiguous(ops::cast_to(a.tensor(0), out.dtype()));
  const int64_t dim = ops::wrap_dim(a.i64(1), x.dim());
  int64_t outer = 1, inner = 1;
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  for (int64_t d = 0; d < dim; ++d) outer *= x.size(d);
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= x.size(d);
  const bool log_ = a.op == ops::OpId::log_softmax;
  visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<acc_t<T>>) {
      const T* xp = x.data<T>();
      T* yp = out.data<T>();
      if (inner == 1) log_ ? softmax_lastdim<T, true>(xp, yp, outer, n) : softmax_lastdim<T, false>(xp, yp, outer, n);
      else log_ ? softmax_inner<T, true>(xp, yp, outer, n, inner) : softmax_inner<T, false>(xp, yp, outer, n, inner);
    }
  });
  return {out};
}

KILN_REGISTER(kernel, softmax, softmax_kernel);
KILN_REGISTER(kernel, log_softmax, softmax_kernel);

// The last dim's rows of contiguous float32/float64 tensors of one dtype, `rows` of `n`.
void check_rows(const Tensor& t, DType dt, const char* who) {
  KILN_CHECK((dt == kFloat32 || dt == kFloat64) && t.dtype() == dt && t.dim() >= 1 && t.is_contiguous(), "internal: ",
             who, " wants contiguous float32/float64 rows");
}

}  // namespace

Tensor attention_probs(const Tensor& scores, double scale, bool causal) {
  const DType dt = scores.dtype();
  check_rows(scores, dt, "attention_probs");
  Tensor out = make_tensor(scores.sizes(), dt);
  const int64_t S = scores.size(-1), L = scores.dim() >= 2 ? scores.size(-2) : 1;
  const int64_t rows = S == 0 ? 0 : scores.numel() / S;
  visit_all(dt, [&]<class A>(type_tag<A>) {
    if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
      const A* xp = scores.data<A>();
      A* yp = out.data<A>();
#pragma omp parallel if (rows * S > 16384 && rows > 1)
      {
        std::vector<A> buf(static_cast<size_t>(S));
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r)  // causal: query i sees keys j <= i (top-left aligned)
          softmax_row(xp + r * S, yp + r * S, causal ? std::min(S, r % L + 1) : S, S, A(scale), buf.data());
      }
    }
  });
  return out;
}

Tensor softmax_backward(const Tensor& grad, const Tensor& y) {
  const DType dt = y.dtype();
  check_rows(y, dt, "softmax_backward");
  check_rows(grad, dt, "softmax_backward");
  KILN_CHECK(grad.sizes() == y.sizes(), "internal: softmax_backward wants a gradient of the output's shape");
  Tensor out = make_tensor(y.sizes(), dt);
  const int64_t n = y.size(-1), rows = n == 0 ? 0 : y.numel() / n;
  visit_all(dt, [&]<class A>(type_tag<A>) {
    if constexpr (std::is_same_v<A, float> || std::is_same_v<A, double>) {
      const A* yp = y.data<A>();
      const A* dp = grad.data<A>();
      A* op = out.data<A>();
#pragma omp parallel for schedule(static) if (rows * n > 16384 && rows > 1)
      for (int64_t r = 0; r < rows; ++r) {
        const A* yr = yp + r * n;
        const A* dr = dp + r * n;
        double s = 0;  // the formula's sum(d y), accumulated in double as the sum op does
        for (int64_t k = 0; k < n; ++k) s += double(dr[k] * yr[k]);
        const A sa = A(s);
        for (int64_t k = 0; k < n; ++k) op[r * n + k] = yr[k] * (dr[k] - sa);
      }
    }
  });
  return out;
}

}  // namespace kiln::eager::cpu
