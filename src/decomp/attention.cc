// scaled_dot_product_attention, decomposed as PyTorch's math backend: softmax(q k^T * scale +
// bias) v, where fully masked rows give zeros (its _safe_softmax) rather than NaN.
#include <cmath>

#include "decomp/nn_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

KILN_DECOMP(scaled_dot_product_attention) {
  Tensor q = a.tensor(0), k = a.tensor(1), v = a.tensor(2);
  Tensor mask = a.opt_tensor(3);
  const double p = a.f64(4);
  const bool causal = a.b(5);
  const bool gqa = a.b(7);
  const char* op = "scaled_dot_product_attention";
  KILN_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op, ": expected query, key and value with at least 2 dims");
  KILN_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
             ": expected query, key and value to have the same floating dtype, got ", name(q.dtype()), ", ",
             name(k.dtype()), " and ", name(v.dtype()));
  KILN_CHECK(q.sym_size(-1) == k.sym_size(-1), op, ": query and key must have the same embedding size, got ",
             q.sym_size(-1), " and ", k.sym_size(-1));
  KILN_CHECK(k.sym_size(-2) == v.sym_size(-2), op, ": key and value must have the same sequence length, got ",
             k.sym_size(-2), " and ", v.sym_size(-2));
  KILN_CHECK_HINT(!(causal && mask.defined()), "pass either attn_mask or is_causal=true, not both", op,
                  ": explicit attn_mask should not be set when is_causal=true");
  KILN_CHECK(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
  KILN_CHECK(!mask.defined() || mask.dtype() == kBool || is_floating(mask.dtype()), op,
             ": expected attn_mask of dtype bool or floating point, got ", name(mask.dtype()));
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
