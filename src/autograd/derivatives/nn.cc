// Derivative formulas of the hot NN composites (softmax, log_softmax, layer_norm, rms_norm, gelu,
// binary_cross_entropy), written with kiln ops. With these registered, the fast kernels run in
// the forward pass even when gradients are needed.
#include <cmath>

#include <kiln/autograd.h>

#include "autograd/derivatives/common.h"
#include "eager/cpu/nn/backward.h"
#include "ops/meta/nn_util.h"

namespace kiln::autograd {
namespace {
using ops::cast_to;
using ops::upcast;

// Dims before the normalized ones (summed for weight / bias gradients).
std::vector<int64_t> leading_dims(int64_t ndim, int64_t k) {
  std::vector<int64_t> d;
  for (int64_t i = 0; i < ndim - k; ++i) d.push_back(i);
  return d;
}
Tensor sum_leading(const Tensor& t, int64_t k) {
  std::vector<int64_t> d = leading_dims(t.dim(), k);
  return d.empty() ? t : sum(t, d);
}

// The forward output; recomputed from the input when the backward itself is being recorded
// (create_graph), since saved outputs are detached and second derivatives must reach x.
Tensor output_for_grad(const ops::GradCtx& g, const std::function<Tensor()>& recompute) {
  return is_grad_enabled() ? recompute() : g.outputs[0];
}

KILN_DERIVATIVE(softmax) {
  const Tensor& x = g.inputs[0];
  const int64_t dim = ops::wrap_dim(g.args.i64(1), x.dim());
  const Tensor& gy = g.grads[0];
  if ((x.dtype() == kFloat32 || x.dtype() == kFloat64) && dim == x.dim() - 1 && gy.dtype() == x.dtype() &&
      fused_cpu_backward({x, gy}) && g.outputs[0].dtype() == x.dtype())
    return {eager::cpu::softmax_backward(contiguous(gy), contiguous(g.outputs[0]))};
  Tensor y = upcast(output_for_grad(g, [&] { return softmax(x, dim, g.args.opt_dtype(2)); }));
  Tensor d = upcast(g.grads[0]);
  return {mul(y, sub(d, sum(mul(d, y), {dim}, true)))};
}

KILN_DERIVATIVE(log_softmax) {
  const Tensor& x = g.inputs[0];
  const int64_t dim = ops::wrap_dim(g.args.i64(1), x.dim());
  Tensor y = upcast(output_for_grad(g, [&] { return log_softmax(x, dim, g.args.opt_dtype(2)); }));
  Tensor d = upcast(g.grads[0]);
  return {sub(d, mul(exp(y), sum(d, {dim}, true)))};
}

KILN_DERIVATIVE(layer_norm) {
  const Tensor& x = g.inputs[0];
  const int64_t k = int64_t(g.args.symints(1).size());
  const bool has_w = !g.args.is_none(2), has_b = !g.args.is_none(3);
  const Tensor w = has_w ? g.inputs[1] : Tensor();
  const size_t bi = has_w ? 2 : 1;
  const Tensor& gy0 = g.grads[0];
  if ((x.dtype() == kFloat32 || x.dtype() == kFloat64) && gy0.dtype() == x.dtype() &&
      (!has_w || w.dtype() == x.dtype()) && x.numel() > 0 && fused_cpu_backward({x, gy0, has_w ? w : x})) {
    const Shape xs = x.sizes(), ns(xs.end() - k, xs.end());
    std::vector<Tensor> f = eager::cpu::layer_norm_backward(gy0, x, ns, w, g.args.f64(4), g.needs(0),
                                                            has_w && g.needs(1), has_b && g.needs(bi));
    std::vector<Tensor> r(g.inputs.size());
    r[0] = f[0];
    if (has_w) r[1] = f[1];
    if (has_b) r[bi] = f[2];
    return r;
  }
  const std::vector<int64_t> dims = ops::trailing_dims(x.dim(), k);
  Tensor xc = upcast(x);
  Tensor d = sub(xc, mean(xc, dims, true));
  Tensor rstd = rsqrt(add(mean(mul(d, d), dims, true), num(g.args.f64(4))));
  Tensor xhat = mul(d, rstd);
  Tensor gc = upcast(g.grads[0]);
  Tensor gy = has_w ? mul(gc, w) : gc;
  std::vector<Tensor> r(g.inputs.size());
  if (g.needs(0))
    r[0] = mul(rstd, sub(sub(gy, mean(gy, dims, true)), mul(xhat, mean(mul(gy, xhat), dims, true))));
  if (has_w && g.needs(1)) r[1] = sum_leading(mul(gc, xhat), k);
  if (has_b && g.needs(bi)) r[bi] = sum_leading(gc, k);
  return r;
}

KILN_DERIVATIVE(rms_norm) {
  const Tensor& x = g.inputs[0];
  const int64_t k = int64_t(g.args.symints(1).size());
  const bool has_w = !g.args.is_none(2);
  const std::vector<int64_t> dims = ops::trailing_dims(x.dim(), k);
  Tensor xc = upcast(x);
  Tensor rr = rsqrt(add(mean(mul(xc, xc), dims, true), num(ops::rms_norm_eps(x.dtype(), g.args.opt_f64(3)))));
  Tensor gc = upcast(g.grads[0]);
  Tensor gy = has_w ? mul(gc, g.inputs[1]) : gc;
  std::vector<Tensor> r(g.inputs.size());
  // d(x r)/dx = r - x r^3 mean(x .)
  if (g.needs(0)) r[0] = sub(mul(rr, gy), mul(mul(xc, pow(rr, num(3))), mean(mul(gy, xc), dims, true)));
  if (has_w && g.needs(1)) r[1] = sum_leading(mul(gc, cast_to(mul(xc, rr), x.dtype())), k);
  return r;
}

// As PyTorch's gelu_backward (without pow: x^3 and x^2 as products). tanh mode: with
// t = tanh(k (x + c x^3)), d/dx = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2); exact:
// Phi(x) + x phi(x).
KILN_DERIVATIVE(gelu) {
  const Tensor& x = g.inputs[0];
  const Tensor& gy = g.grads[0];
  if (gy.dtype() == x.dtype() && fused_cpu_backward({x, gy}))
    return {eager::cpu::gelu_backward(gy, x, g.args.str(1) == "tanh")};
  Tensor u = upcast(x), d = upcast(g.grads[0]);
  Tensor x2 = mul(u, u), slope;
  if (g.args.str(1) == "tanh") {
    // 0.5 (1 + t) = s and 0.5 (1 - t^2) = 2 s (1 - s) with s = sigmoid(2 k (x + c x^3)): no
    // tanh (libm's tanhf is slow) and no cancellation where t is near -1.
    const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
    Tensor s = sigmoid(mul(add(u, mul(mul(x2, u), num(c))), num(2 * k)));
    Tensor poly = add(mul(x2, num(6 * c * k)), num(2 * k));
    slope = add(s, mul(mul(u, poly), mul(s, sub(num(1), s))));
  } else {
    Tensor cdf = mul(add(erf(mul(u, num(M_SQRT1_2))), num(1)), num(0.5));
    Tensor pdf = mul(exp(mul(x2, num(-0.5))), num(0.5 * M_2_SQRTPI * M_SQRT1_2));
    slope = add(cdf, mul(u, pdf));
  }
  return {cast_to(mul(d, slope), x.dtype())};
}

// As PyTorch's binary_cross_entropy_backward: (x - t) / max(x (1 - x), 1e-12), finite at 0 and 1.
KILN_DERIVATIVE(binary_cross_entropy) {
  const Tensor &x = g.inputs[0], &t = g.inputs[1];
  const bool has_w = !g.args.is_none(2);
  const std::string& reduction = g.args.str(3);
  const DType c = ops::compute_dtype(x.dtype());
  Tensor xc = cast_to(x, c), tc = cast_to(t, c);
  Tensor d = upcast(g.grads[0]);
  if (reduction == "mean") d = div(d, num(double(x.sym_numel().hint())));
  d = expand(d, x.sym_sizes());
  Tensor wd = has_w ? mul(d, cast_to(g.inputs[2], c)) : d;
  std::vector<Tensor> r(g.inputs.size());
  if (g.needs(0)) r[0] = div(mul(wd, sub(xc, tc)), maximum(mul(xc, sub(num(1), xc)), num(1e-12)));
  if (g.needs(1)) r[1] = mul(wd, sub(log1p(neg(xc)), log(xc)));
  if (has_w && g.needs(2)) {
    Tensor loss = neg(add(mul(tc, maximum(log(xc), num(-100))), mul(sub(num(1), tc), maximum(log1p(neg(xc)), num(-100)))));
    r[2] = to_input(g, 2, mul(d, loss));
  }
  return r;
}

}  // namespace
}  // namespace kiln::autograd
