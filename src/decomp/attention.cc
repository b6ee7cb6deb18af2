// scaled_dot_product_attention, decomposed as PyTorch's math backend: softmax(q k^T * scale +
// bias) v, where fully masked rows give zeros (its _safe_softmax) rather than NaN.
#include <cmath>

#include "ops/meta/nn_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;
using ops::cast_to;
using ops::check_attention_args;
using ops::num;
using ops::repeat_heads;
using ops::upcast;

KILN_DECOMP(scaled_dot_product_attention) {
  Tensor q = a.tensor(0), k = a.tensor(1), v = a.tensor(2);
  Tensor mask = a.opt_tensor(3);
  const double p = a.f64(4);
  const bool causal = a.b(5);
  const bool gqa = a.b(7);
  const char* op = "scaled_dot_product_attention";
  check_attention_args(q, k, v, mask, p, causal);
  if (gqa) {
    KILN_CHECK(q.dim() >= 3 && k.dim() >= 3 && v.dim() >= 3, op, ": enable_gqa needs inputs with a head dim (-3)");
    const int64_t hq = q.size(-3), hk = k.size(-3), hv = v.size(-3);
    KILN_CHECK(hk > 0 && hv > 0 && hq % hk == 0 && hq % hv == 0, op,
               ": number of heads in key and value must divide the number of heads in query, got ", hq, ", ", hk,
               " and ", hv);
    k = repeat_heads(k, hq / hk);
    v = repeat_heads(v, hq / hv);
  }
  const DType out_dt = q.dtype();
  const double scale = a.opt_f64(6).value_or(1.0 / std::sqrt(double(q.sym_size(-1).hint())));
  q = upcast(q);
  k = upcast(k);
  v = upcast(v);
  Tensor s = mul(matmul(q, transpose(k, -2, -1)), num(scale));
  const SymInt L = q.sym_size(-2), S = k.sym_size(-2);
  if (causal) {
    // Top-left aligned: query i attends to keys j <= i.
    Tensor rows = unsqueeze(iota(L, 0, 1, kInt64, q.device()), 1);
    Tensor cols = unsqueeze(iota(S, 0, 1, kInt64, q.device()), 0);
    s = where(le(cols, rows), s, num(-INFINITY));
  }
  if (mask.defined()) {
    if (mask.dtype() == kBool) s = where(mask, s, num(-INFINITY));
    else s = add(s, cast_to(mask, s.dtype()));
  }
  Tensor w = softmax(s, -1);
  if (S != 0) {
    Tensor all_masked = eq(amax(s.detach(), {-1}, true), num(-INFINITY));
    w = where(all_masked, num(0), w);
  }
  if (p > 0) w = dropout(w, p, true);
  return {cast_to(matmul(w, v), out_dt)};
}

}  // namespace
}  // namespace kiln::decomp
