// Derivative formulas of the scan prims.
#include <kiln/autograd.h>

#include "autograd/derivatives/common.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

// r[k] = sum_{j >= k} t[j] along dim.
Tensor reverse_cumsum(const Tensor& t, int64_t dim) { return flip(cumsum(flip(t, {dim}), dim), {dim}); }

int64_t scan_dim(const ops::GradCtx& g) { return ops::wrap_dim(g.args.i64(1), g.inputs[0].dim()); }

KILN_DERIVATIVE(cumsum) {
  if (g.inputs[0].dim() == 0) return {g.grads[0]};
  return {reverse_cumsum(g.grads[0], scan_dim(g))};
}

KILN_DERIVATIVE(cumprod) {
  // d out_j / d x_k = prod_{i <= j, i != k} x_i for j >= k, summed against g_j:
  //   x_k != 0:          reverse_cumsum(g * out)_k / x_k (PyTorch's formula)
  //   k = first zero z:  reverse_cumsum(g * cumprod(x with x_z = 1))_k   (exact, no division)
  //   k = second zero:   x_z * reverse_cumsum(g * cumprod(x with x_z = x_k = 1))_k, which is 0
  //                      but has the right derivative in x_z (needed only for double backward)
  //   later zeros:       0 (every term has two zero factors)
  // The masks are data but not branches, so the formula traces; each case is the exact
  // polynomial near x, so differentiating it again is right.
  const Tensor& x0 = g.inputs[0];
  if (x0.dim() == 0) return {g.grads[0]};
  const int64_t dim = scan_dim(g);
  const Tensor x = convert_element_type(x0, g.outputs[0].dtype());
  const Tensor& gr = g.grads[0];
  const bool second_order = is_grad_enabled();
  Tensor is_zero = eq(x, num(0));
  Tensor zeros_seen = cumsum(is_zero, dim);
  Tensor first = logical_and(is_zero, eq(zeros_seen, num(1)));
  Tensor out = second_order ? cumprod(x, dim) : g.outputs[0];
  Tensor nonzero = div(reverse_cumsum(mul(gr, out), dim), where(is_zero, num(1), x));
  Tensor at_first = reverse_cumsum(mul(gr, cumprod(where(first, num(1), x), dim)), dim);
  Tensor at_later = zeros_like(gr);
  if (second_order) {
    Tensor second = logical_and(is_zero, eq(zeros_seen, num(2)));
    Tensor x_first = sum(where(first, x, num(0)), {dim}, true);
    Tensor cp = cumprod(where(logical_or(first, second), num(1), x), dim);
    at_later = where(second, mul(x_first, reverse_cumsum(mul(gr, cp), dim)), num(0));
  }
  return {where(is_zero, where(first, at_first, at_later), nonzero)};
}

// cummax/cummin: each output's gradient goes to the element its index points at.
Tensor cum_extreme_grad(const ops::GradCtx& g) {
  const Tensor& x = g.inputs[0];
  if (x.dim() == 0) return g.grads[0];
  return scatter_add(zeros_like(g.grads[0]), scan_dim(g), g.outputs[1], g.grads[0]);
}
KILN_DERIVATIVE(cummax) { return {cum_extreme_grad(g)}; }
KILN_DERIVATIVE(cummin) { return {cum_extreme_grad(g)}; }

}  // namespace
}  // namespace kiln::autograd
