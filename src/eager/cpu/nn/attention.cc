// Fast CPU kernel of scaled_dot_product_attention (dropout_p == 0): blocked attention with an
// online softmax, so the (L, S) score matrix is never materialized. Each task is one block of
// query rows of one (batch, head); it walks blocks of keys, keeping per row the running max,
// the running sum of exp and the unnormalized output, in float (double for float64). Causal
// masks (top-left aligned, as PyTorch) skip key blocks past the diagonal. Fully masked rows
// give zeros, as the decomposition. dropout_p > 0 is left to the decomposition (kernel_applies).
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

bool sdpa_applies(const Args& a) { return a.f64(4) == 0; }

struct Problem {
  int64_t NB, L, S, D, Dv;
  bool causal;
};

// q (NB, L, D), k (NB, S, D), v (NB, S, Dv) contiguous; mask (optional, additive) at
// mask + moff[b] + i * msL + j * msS; out (NB, L, Dv).
template <class T, class A>
void attend(const A* q, const A* k, const A* v, const A* mask, const std::vector<int64_t>& moff, int64_t msL,
            int64_t msS, T* out, const Problem& P, A scale) {
  constexpr int64_t BQ = 32, BK = 64;
  constexpr A kNegInf = -std::numeric_limits<A>::infinity();
  const int64_t L = P.L, S = P.S, D = P.D, Dv = P.Dv;
  const int64_t nqb = (L + BQ - 1) / BQ;
#pragma omp parallel if (P.NB * L * S * (D + Dv) > 65536)
  {
    std::vector<A> kt(static_cast<size_t>(D * BK)), sc(static_cast<size_t>(BK)), acc(static_cast<size_t>(BQ * Dv));
    std::vector<A> mrow(static_cast<size_t>(BQ)), lrow(static_cast<size_t>(BQ));
#pragma omp for schedule(dynamic) collapse(2)
    for (int64_t b = 0; b < P.NB; ++b)
      for (int64_t qb = 0; qb < nqb; ++qb) {
        const int64_t i0 = qb * BQ, ni = std::min(BQ, L - i0);
        const A* kb = k + b * S * D;
        const A* vb = v + b * S * Dv;
        std::fill(acc.begin(), acc.end(), A(0));
        std::fill(mrow.begin(), mrow.end(), kNegInf);
        std::fill(lrow.begin(), lrow.end(), A(0));
        // Causal: no row of this block sees keys past its last row.
        const int64_t send = P.causal ? std::min(S, i0 + ni) : S;
        for (int64_t j0 = 0; j0 < send; j0 += BK) {
          const int64_t nj = std::min(BK, send - j0);
          for (int64_t j = 0; j < nj; ++j)  // the key block transposed, so scores are axpys
            for (int64_t e = 0; e < D; ++e) kt[size_t(e * BK + j)] = kb[(j0 + j) * D + e];
          for (int64_t ii = 0; ii < ni; ++ii) {
            const int64_t i = i0 + ii;
            A* s = sc.data();
            std::fill(s, s + nj, A(0));
            const A* qi = q + (b * L + i) * D;
            for (int64_t e = 0; e < D; ++e) {
              const A qe = qi[e] * scale;
              const A* kr = kt.data() + e * BK;
              for (int64_t j = 0; j < nj; ++j) s[j] += qe * kr[j];
            }
            if (mask) {
              const A* mr = mask + moff[size_t(b)] + i * msL + j0 * msS;
              for (int64_t j = 0; j < nj; ++j) s[j] += mr[j * msS];
            }
            if (P.causal)
              for (int64_t j = std::max<int64_t>(i + 1 - j0, 0); j < nj; ++j) s[j] = kNegInf;
            if (!std::isfinite(lane_sum(s, nj)))  // the max and exp_nonpos skip NaN: find it here
              for (int64_t j = 0; j < nj; ++j) lrow[size_t(ii)] = std::isnan(s[j]) ? s[j] : lrow[size_t(ii)];
            const A mnew = std::max(mrow[size_t(ii)], lane_max(s, nj));
            if (mnew == kNegInf) continue;  // every key so far masked
            A* ac = acc.data() + ii * Dv;
            const A corr = std::exp(mrow[size_t(ii)] - mnew);
            if (corr != A(1)) {
              for (int64_t e = 0; e < Dv; ++e) ac[e] *= corr;
              lrow[size_t(ii)] *= corr;
            }
            mrow[size_t(ii)] = mnew;
            for (int64_t j = 0; j < nj; ++j) s[j] = s[j] == kNegInf ? A(0) : exp_nonpos(s[j] - mnew);
            lrow[size_t(ii)] += lane_sum(s, nj);
            for (int64_t j = 0; j < nj; ++j) {
              const A pj = s[j];
              if (pj == A(0)) continue;
              const A* vr = vb + (j0 + j) * Dv;
              for (int64_t e = 0; e < Dv; ++e) ac[e] += pj * vr[e];
            }
          }
        }
        for (int64_t ii = 0; ii < ni; ++ii) {
          T* o = out + (b * L + i0 + ii) * Dv;
          const A l = lrow[size_t(ii)];
          const A inv = std::isnan(l) ? l : l > A(0) ? A(1) / l : A(0);  // fully masked rows give zeros
          for (int64_t e = 0; e < Dv; ++e) o[e] = T(acc[size_t(ii * Dv + e)] * inv);
        }
      }
  }
}

std::vector<Tensor> sdpa_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  Tensor q = a.tensor(0), k = a.tensor(1), v = a.tensor(2), mask = a.opt_tensor(3);
  const DType adt = q.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const double scale = a.opt_f64(6).value_or(1.0 / std::sqrt(double(q.size(-1))));
  if (a.b(7)) {
    k = ops::repeat_heads(k, q.size(-3) / k.size(-3));
    v = ops::repeat_heads(v, q.size(-3) / v.size(-3));
  }
  const Shape ob(out.sizes().begin(), out.sizes().end() - 2);
  Problem P{1, q.size(-2), k.size(-2), q.size(-1), v.size(-1), a.b(5)};
  for (int64_t n : ob) P.NB *= n;
  // Each operand in the accumulation dtype, broadcast to the batch and made contiguous.
  auto flat = [&](const Tensor& t, int64_t rows, int64_t cols) {
    Shape s = ob;
    s.push_back(rows);
    s.push_back(cols);
    return contiguous(expand(ops::cast_to(t, adt), SymShape(s.begin(), s.end())));
  };
  Tensor qf = flat(q, P.L, P.D), kf = flat(k, P.S, P.D), vf = flat(v, P.S, P.Dv);
  // The mask as additive biases, broadcast as a view (zero strides, no copy of repeats).
  Tensor mf;
  std::vector<int64_t> moff(size_t(P.NB), 0);
  int64_t msL = 0, msS = 0;
  if (mask.defined()) {
    Tensor bias = mask.dtype() == kBool ? where(mask, scalar_tensor(0.0, adt), scalar_tensor(-INFINITY, adt))
                                        : ops::cast_to(mask, adt);
    Shape s = ob;
    s.push_back(P.L);
    s.push_back(P.S);
    mf = expand(bias, SymShape(s.begin(), s.end()));
    const Shape& st = mf.strides();
    msL = st[st.size() - 2];
    msS = st.back();
    for (int64_t b = 0; b < P.NB; ++b) {
      int64_t r = b, off = 0;
      for (size_t d = ob.size(); d-- > 0;) {
        off += (r % ob[d]) * st[d];
        r /= ob[d];
      }
      moff[size_t(b)] = off;
    }
  }
  visit_all(out.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<acc_t<T>>) {
      using A = std::conditional_t<std::is_same_v<T, double>, double, float>;
      attend<T, A>(qf.data<A>(), kf.data<A>(), vf.data<A>(), mf.defined() ? mf.data<A>() : nullptr, moff, msL, msS,
                   out.data<T>(), P, A(scale));
    }
  });
  return {out};
}

KILN_REGISTER(kernel, scaled_dot_product_attention, sdpa_kernel);
KILN_REGISTER(kernel_applies, scaled_dot_product_attention, sdpa_applies);

}  // namespace
}  // namespace kiln::eager::cpu
