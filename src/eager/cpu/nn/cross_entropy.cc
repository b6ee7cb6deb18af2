// Fast CPU kernel of cross_entropy with class-index targets: one pass over each row computes
// its logsumexp (online, a chunk at a time), the target logit and the (weighted) sum of logits
// label smoothing needs; rows split across OpenMP threads, float accumulation (double for
// float64), reductions summed in double in row order (deterministic). Probability targets are
// left to the decomposition (kernel_applies).
#include <kiln/ops.h>

#include <cmath>
#include <limits>

#include "eager/cpu/loops.h"
#include "eager/cpu/nn/fast_exp.h"
#include "ops/applies.h"
#include "ops/meta/nn_util.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;

bool ce_applies(const Args& a) { return is_integral(a.tensor(1).dtype()); }

// One row of C logits at stride st: logsumexp, and sum_c w_c x_c (w may be null: weights 1).
// A chunk at a time: its max, then its exps summed against the running max (rescaled when
// the max grows), so the row is read once.
template <class T, class A>
void row_stats(const T* x, int64_t st, int64_t C, const A* w, bool want_sum, A& lse, A& sx) {
  constexpr int64_t kChunk = 256;
  A buf[kChunk];
  A m = -std::numeric_limits<A>::infinity(), s = 0, acc = 0;
  bool nan = false;  // the max and exp_nonpos skip NaN: looked for where a chunk's sum is not finite
  for (int64_t c0 = 0; c0 < C; c0 += kChunk) {
    const int64_t n = std::min(kChunk, C - c0);
    for (int64_t i = 0; i < n; ++i) buf[i] = A(x[(c0 + i) * st]);
    const A cm = lane_max(buf, n), csum = lane_sum(buf, n);
    if (!std::isfinite(csum))
      for (int64_t i = 0; i < n; ++i) nan = nan || std::isnan(buf[i]);
    if (want_sum) {
      if (w) for (int64_t i = 0; i < n; ++i) acc += w[c0 + i] * buf[i];
      else acc += csum;
    }
    if (cm > m) {  // rescale what was summed against the old max
      s *= std::exp(m - cm);
      m = cm;
    }
    if (m == -std::numeric_limits<A>::infinity()) continue;
    for (int64_t i = 0; i < n; ++i) buf[i] = exp_nonpos(buf[i] - m);
    s += lane_sum(buf, n);
  }
  lse = nan ? std::numeric_limits<A>::quiet_NaN() : m + std::log(s);
  sx = acc;
}

template <class T>
void ce_rows(const T* x, const int64_t* t, int64_t N, int64_t C, int64_t R, const std::vector<double>& wd,
             int64_t ignore, double eps, std::vector<double>& loss, std::vector<double>& tw) {
  using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
  std::vector<A> wa(wd.begin(), wd.end());
  const A* w = wa.empty() ? nullptr : wa.data();
  double wsum = double(C);
  if (w) {
    wsum = 0;
    for (double v : wd) wsum += v;
  }
  const int64_t rows = N * R;
#pragma omp parallel for schedule(static) if (rows * C > 16384 && rows > 1)
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t y = t[i];
    if (y == ignore) {
      loss[size_t(i)] = 0;
      tw[size_t(i)] = 0;
      continue;
    }
    const T* xr = x + (i / R) * C * R + i % R;
    A lse, sx;
    row_stats<T, A>(xr, R, C, w, eps > 0, lse, sx);
    const double wy = w ? double(w[y]) : 1.0;
    double l = -(1 - eps) * wy * (double(A(xr[y * R])) - double(lse));
    if (eps > 0) l -= eps / double(C) * (double(sx) - double(lse) * wsum);
    loss[size_t(i)] = l;
    tw[size_t(i)] = wy;
  }
}

std::vector<Tensor> ce_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const Tensor x = contiguous(a.tensor(0));
  const Tensor t = contiguous(ops::cast_to(a.tensor(1), kInt64));
  const Tensor w = a.opt_tensor(2);
  const std::string& reduction = a.str(3);
  const int64_t ignore = a.i64(4);
  const double eps = a.f64(5);
  const int64_t cd = ops::class_dim(x);
  const int64_t N = cd == 0 ? 1 : x.size(0), C = x.size(cd);
  int64_t R = 1;
  for (int64_t d = 2; d < x.dim(); ++d) R *= x.size(d);
  const int64_t rows = t.numel();
  // Validate every target before the parallel loop (no throwing inside it).
  const int64_t* tp = t.data<int64_t>();
  for (int64_t i = 0; i < rows; ++i)
    KILN_CHECK_HINT(tp[i] == ignore || (tp[i] >= 0 && tp[i] < C), "class indices must lie in [0, C) or equal ignore_index",
                    "cross_entropy: target out of bounds (number of classes ", C, ")");
  const std::vector<double> wd = w.defined() ? w.to_vector<double>() : std::vector<double>{};
  std::vector<double> loss(static_cast<size_t>(rows)), tw(static_cast<size_t>(rows));
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<acc_t<T>>) ce_rows<T>(x.data<T>(), tp, N, C, R, wd, ignore, eps, loss, tw);
  });
  Tensor out = make_tensor(specs[0]);
  if (reduction == "none") {
    visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
      if constexpr (std::is_floating_point_v<acc_t<T>>) {
        T* o = out.data<T>();
        for (int64_t i = 0; i < rows; ++i) o[i] = T(acc_t<T>(loss[size_t(i)]));
      }
    });
    return {out};
  }
  double ls = 0, ws = 0;
  for (int64_t i = 0; i < rows; ++i) ls += loss[size_t(i)], ws += tw[size_t(i)];
  return {scalar_tensor(Scalar(reduction == "mean" ? ls / ws : ls), out.dtype())};
}

KILN_REGISTER(kernel, cross_entropy, ce_kernel);
KILN_REGISTER(kernel_applies, cross_entropy, ce_applies);

}  // namespace
}  // namespace kiln::eager::cpu
