// Derivatives of the fast cross_entropy (class-index targets) and scaled_dot_product_attention
// (dropout_p == 0) kernels, written with kiln ops. The other cases run the decomposition
// (kernel_applies), which records its own graph.
#include <kiln/autograd.h>

#include <cmath>

#include "autograd/derivatives/common.h"
#include "eager/cpu/nn/backward.h"
#include "ops/meta/nn_util.h"

namespace kiln::autograd {
namespace {
using ops::cast_to;
using ops::upcast;

// Per-class weight (C) shaped to broadcast along dim cd of an n-dim tensor.
Tensor along(const Tensor& w, int64_t n, int64_t cd) {
  SymShape s(size_t(n), SymInt(1));
  s[size_t(cd)] = w.sym_size(0);
  return reshape(w, s);
}

// loss_i = -(1 - eps) w_y lp_y - eps / C sum_c w_c lp_c over non-ignored rows, lp = log_softmax(x):
//   d/dx_c  = p_c ((1 - eps) w_y + eps / C sum w) - (1 - eps) w_y [c = y] - eps / C w_c
//   d/dw_c  = -(1 - eps) lp_c [c = y] - eps / C lp_c (mean also divides by sum_i w_{y_i}).
KILN_DERIVATIVE(cross_entropy) {
  const Tensor &x = g.inputs[0], &t = g.inputs[1];
  const bool has_w = !g.args.is_none(2);
  const std::string& reduction = g.args.str(3);
  const int64_t ignore = g.args.i64(4);
  const double eps = g.args.f64(5);
  const int64_t n = x.dim(), cd = n == 1 ? 0 : 1;
  const double C = double(x.sym_size(cd).hint());
  const DType c = ops::compute_dtype(x.dtype());
  Tensor lp = log_softmax(cast_to(x, c), cd);
  Tensor valid = ne(t, num(double(ignore)));
  Tensor safe = cast_to(where(valid, t, num(0)), kInt64);
  Tensor cls = along(iota(x.sym_size(cd), 0, 1, kInt64, x.device()), n, cd);
  Tensor onehot = convert_element_type(eq(unsqueeze(safe, cd), cls), c);
  Tensor wc = has_w ? cast_to(g.inputs[2], c) : Tensor();
  Tensor wy = has_w ? where(valid, reshape(index_select(wc, 0, reshape(safe, {-1})), t.sym_sizes()), num(0))
                    : convert_element_type(valid, c);
  Tensor gr = upcast(g.grads[0]);
  // Every target ignored: the mean is 0/0 = NaN, its gradient 0 (PyTorch's), not inf * 0.
  Tensor total = sum(wy), none = eq(total, num(0));
  if (reduction == "mean") gr = div(gr, where(none, num(1), total));
  Tensor gi = mul(expand(gr, t.sym_sizes()), convert_element_type(valid, c));  // 0 on ignored rows
  Tensor gu = unsqueeze(gi, cd);
  std::vector<Tensor> r(g.inputs.size());
  if (g.needs(0)) {
    Tensor coef = mul(wy, num(1 - eps));
    // (num * num would be a float32 product of two wrapped numbers: eps itself when unweighted.)
    if (eps > 0) coef = add(coef, has_w ? mul(sum(wc), num(eps / C)) : num(eps));
    Tensor inner = sub(mul(exp(lp), unsqueeze(coef, cd)), mul(onehot, unsqueeze(mul(wy, num(1 - eps)), cd)));
    if (eps > 0) inner = sub(inner, has_w ? mul(along(wc, n, cd), num(eps / C)) : num(eps / C));
    r[0] = mul(gu, inner);
  }
  if (has_w && g.needs(2)) {
    Tensor pick = mul(onehot, mul(lp, num(-(1 - eps))));
    if (reduction == "mean") {
      // The mean's denominator depends on the weights too: d(S/T) = (dS - (S/T) dT) / T.
      Tensor out = is_grad_enabled() ? cross_entropy(x, t, g.inputs[2], reduction, ignore, eps) : g.outputs[0];
      pick = sub(pick, mul(onehot, where(none, num(0), upcast(out))));
    }
    Tensor contrib = mul(gu, eps > 0 ? sub(pick, mul(lp, num(eps / C))) : pick);
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < n; ++d)
      if (d != cd) dims.push_back(d);
    r[2] = dims.empty() ? contrib : sum(contrib, dims);
  }
  return r;
}

// Undoes repeat_heads: sums each group of `rep` consecutive heads (dim -3).
Tensor fold_heads(const Tensor& t, int64_t rep) {
  if (rep == 1) return t;
  SymShape s = t.sym_sizes();
  const size_t h = s.size() - 3;
  SymShape split(s.begin(), s.begin() + int64_t(h));
  split.push_back(SymInt(s[h].hint() / rep));
  split.push_back(SymInt(rep));
  split.insert(split.end(), s.begin() + int64_t(h) + 1, s.end());
  return sum(reshape(t, split), {int64_t(h) + 1});
}

// With W = softmax(S), S = scale q k^T + bias, O = W v:
//   dv = W^T dO, dW = dO v^T, dS = W (dW - rowsum(dW W)), dq = scale dS k, dk = scale dS^T q.
KILN_DERIVATIVE(scaled_dot_product_attention) {
  const Tensor &q = g.inputs[0], &k = g.inputs[1], &v = g.inputs[2];
  const bool has_mask = !g.args.is_none(3);
  const Tensor mask = has_mask ? g.inputs[3] : Tensor();
  const bool causal = g.args.b(5), gqa = g.args.b(7);
  const double scale = g.args.opt_f64(6).value_or(1.0 / std::sqrt(double(q.sym_size(-1).hint())));
  const int64_t rk = gqa ? q.size(-3) / k.size(-3) : 1, rv = gqa ? q.size(-3) / v.size(-3) : 1;
  Tensor qc = upcast(q), kc = ops::repeat_heads(upcast(k), rk), vc = ops::repeat_heads(upcast(v), rv);
  const Tensor& gy = g.grads[0];
  // Eager on CPU without a mask: the probabilities and their softmax gradient each in one pass
  // (eager/cpu/nn/backward.h) instead of the ~12 ops below; the products stay matmuls.
  if (!has_mask && (q.dtype() == kFloat32 || q.dtype() == kFloat64) && gy.dtype() == q.dtype() &&
      q.numel() > 0 && k.numel() > 0 && fused_cpu_backward({q, k, v, gy})) {
    Tensor w = eager::cpu::attention_probs(contiguous(matmul(qc, transpose(kc, -2, -1))), scale, causal);
    Tensor d = contiguous(gy);
    std::vector<Tensor> r(g.inputs.size());
    if (g.needs(0) || g.needs(1)) {
      Tensor ds = eager::cpu::softmax_backward(contiguous(matmul(d, transpose(vc, -2, -1))), w);
      if (g.needs(0)) r[0] = to_input(g, 0, mul(matmul(ds, kc), num(scale)));
      if (g.needs(1)) r[1] = to_input(g, 1, fold_heads(mul(matmul(transpose(ds, -2, -1), qc), num(scale)), rk));
    }
    if (g.needs(2)) r[2] = to_input(g, 2, fold_heads(matmul(transpose(w, -2, -1), d), rv));
    return r;
  }
  Tensor s = mul(matmul(qc, transpose(kc, -2, -1)), num(scale));
  if (causal) {
    Tensor rows = unsqueeze(iota(q.sym_size(-2), 0, 1, kInt64, q.device()), 1);
    Tensor cols = unsqueeze(iota(k.sym_size(-2), 0, 1, kInt64, q.device()), 0);
    s = where(le(cols, rows), s, num(-INFINITY));
  }
  if (has_mask) s = mask.dtype() == kBool ? where(mask, s, num(-INFINITY)) : add(s, cast_to(mask, s.dtype()));
  Tensor w = softmax(s, -1);
  if (k.sym_size(-2) != 0) w = where(eq(amax(s, {-1}, true), num(-INFINITY)), num(0), w);  // fully masked rows
  Tensor d = upcast(g.grads[0]);
  std::vector<Tensor> r(g.inputs.size());
  Tensor ds;
  if (g.needs(0) || g.needs(1) || (has_mask && g.needs(3))) {
    Tensor dw = matmul(d, transpose(vc, -2, -1));
    ds = mul(w, sub(dw, sum(mul(dw, w), {-1}, true)));
  }
  if (g.needs(0)) r[0] = to_input(g, 0, mul(matmul(ds, kc), num(scale)));
  if (g.needs(1)) r[1] = to_input(g, 1, fold_heads(mul(matmul(transpose(ds, -2, -1), qc), num(scale)), rk));
  if (g.needs(2)) r[2] = to_input(g, 2, fold_heads(matmul(transpose(w, -2, -1), d), rv));
  if (has_mask && g.needs(3)) r[3] = to_input(g, 3, ds);
  return r;
}

}  // namespace
}  // namespace kiln::autograd
