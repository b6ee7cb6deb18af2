// Derivative formulas of the elementwise prims, written with kiln ops.
#include <kiln/autograd.h>

#include <cmath>

#include "autograd/derivatives/common.h"
#include "core/tensor_impl.h"

namespace kiln::autograd {
namespace {

// The forward output for use in a formula. The engine keeps outputs without their history, so
// while the backward pass is itself recorded (create_graph) the output is recomputed from the
// inputs: otherwise second derivatives would miss its dependence on them.
#define SAVED_OUTPUT(recompute) (is_grad_enabled() ? Tensor(recompute) : g.outputs[0])

// Unary ops: d(out)/d(x) as a tensor, from the input x.
#define UNARY_DERIV(op, expr)                                   \
  KILN_DERIVATIVE(op) {                                         \
    const Tensor& x = g.inputs[0];                              \
    (void)x;                                                    \
    return {mul(g.grads[0], (expr))};                           \
  }
// ... and from the output y = fwd(x).
#define UNARY_DERIV_Y(op, fwd, expr)                            \
  KILN_DERIVATIVE(op) {                                         \
    const Tensor& x = g.inputs[0];                              \
    const Tensor y = SAVED_OUTPUT(fwd);                         \
    return {mul(g.grads[0], (expr))};                           \
  }
#define ZERO_DERIV(op) \
  KILN_DERIVATIVE(op) { return {zeros_like(g.inputs[0])}; }

UNARY_DERIV(neg, num(-1))
UNARY_DERIV(abs, sign(x))
UNARY_DERIV_Y(exp, exp(x), y)
UNARY_DERIV_Y(exp2, exp2(x), mul(y, num(M_LN2)))
// exp(x), not y + 1: that cancels to 0 once expm1(x) rounds to -1 (elu's gradient for x << 0).
UNARY_DERIV(expm1, exp(x))
UNARY_DERIV(log, reciprocal(x))
UNARY_DERIV(log2, reciprocal(mul(x, num(M_LN2))))
UNARY_DERIV(log1p, reciprocal(add(x, num(1))))
UNARY_DERIV_Y(sqrt, sqrt(x), div(num(0.5), y))
UNARY_DERIV_Y(rsqrt, rsqrt(x), mul(num(-0.5), pow(y, num(3))))
UNARY_DERIV_Y(reciprocal, reciprocal(x), neg(mul(y, y)))
UNARY_DERIV(sin, cos(x))
UNARY_DERIV(cos, neg(sin(x)))
UNARY_DERIV_Y(tan, tan(x), add(num(1), mul(y, y)))
UNARY_DERIV_Y(tanh, tanh(x), sub(num(1), mul(y, y)))
UNARY_DERIV(asin, rsqrt(sub(num(1), mul(x, x))))
UNARY_DERIV(acos, neg(rsqrt(sub(num(1), mul(x, x)))))
UNARY_DERIV(atan, reciprocal(add(num(1), mul(x, x))))
UNARY_DERIV(sinh, cosh(x))
UNARY_DERIV(cosh, sinh(x))
UNARY_DERIV(asinh, rsqrt(add(mul(x, x), num(1))))
UNARY_DERIV(acosh, rsqrt(sub(mul(x, x), num(1))))
UNARY_DERIV(atanh, reciprocal(sub(num(1), mul(x, x))))
UNARY_DERIV(erf, mul(num(2 / std::sqrt(M_PI)), exp(neg(mul(x, x)))))
UNARY_DERIV(erfc, mul(num(-2 / std::sqrt(M_PI)), exp(neg(mul(x, x)))))
UNARY_DERIV_Y(erfinv, erfinv(x), mul(num(std::sqrt(M_PI) / 2), exp(mul(y, y))))
UNARY_DERIV_Y(sigmoid, sigmoid(x), mul(y, sub(num(1), y)))
UNARY_DERIV(lgamma, digamma(x))
ZERO_DERIV(sign)
ZERO_DERIV(floor)
ZERO_DERIV(ceil)
ZERO_DERIV(round)
ZERO_DERIV(trunc)

KILN_DERIVATIVE(add) { return {to_input(g, 0, g.grads[0]), to_input(g, 1, g.grads[0])}; }
KILN_DERIVATIVE(sub) { return {to_input(g, 0, g.grads[0]), to_input(g, 1, neg(g.grads[0]))}; }
KILN_DERIVATIVE(mul) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  return {g.needs(0) ? to_input(g, 0, mul(d, y)) : Tensor(), g.needs(1) ? to_input(g, 1, mul(d, x)) : Tensor()};
}
KILN_DERIVATIVE(div) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  if (!g.args.is_none(2)) return {zeros_like(x), zeros_like(y)};  // rounded division is piecewise constant
  return {g.needs(0) ? to_input(g, 0, div(d, y)) : Tensor(),
          g.needs(1) ? to_input(g, 1, neg(div(mul(d, x), mul(y, y)))) : Tensor()};
}
KILN_DERIVATIVE(remainder) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  return {to_input(g, 0, d), g.needs(1) ? to_input(g, 1, mul(neg(d), floor(div(x, y)))) : Tensor()};
}
KILN_DERIVATIVE(fmod) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  return {to_input(g, 0, d), g.needs(1) ? to_input(g, 1, mul(neg(d), trunc(div(x, y)))) : Tensor()};
}
KILN_DERIVATIVE(pow) {
  const Tensor &x = g.inputs[0], &e = g.inputs[1], &d = g.grads[0];
  const Tensor y = SAVED_OUTPUT(pow(x, e));
  Tensor gx, gexp;
  if (g.needs(0)) {
    // e * x^(e-1), taken as 0 where e == 0 (so 0^0 has no NaN gradient)
    // A Python-number exponent is a wrapped number, and wrapped - wrapped would be computed in
    // the default dtype (float32): e - 1 is taken in double instead.
    Tensor em1 = e.impl()->wrapped_number ? num(e.item<double>() - 1) : sub(e, num(1));
    Tensor t = mul(e, pow(x, em1));
    gx = to_input(g, 0, mul(d, where(eq(e, num(0)), zeros_like(t), t)));
  }
  if (g.needs(1)) {
    // y * log(x), taken as 0 where x == 0 and e >= 0
    Tensor t = mul(y, log(x));
    gexp = to_input(g, 1, mul(d, where(logical_and(eq(x, num(0)), ge(e, num(0))), zeros_like(t), t)));
  }
  return {gx, gexp};
}
// max/min: the gradient goes to the larger (smaller) input, split evenly on ties.
Tensor pick_mask(const Tensor& self, const Tensor& other, bool is_max) {
  Tensor win = is_max ? gt(self, other) : lt(self, other);
  return add(convert_element_type(win, self.dtype()), mul(convert_element_type(eq(self, other), self.dtype()), num(0.5)));
}
KILN_DERIVATIVE(maximum) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  return {g.needs(0) ? to_input(g, 0, mul(d, pick_mask(x, y, true))) : Tensor(),
          g.needs(1) ? to_input(g, 1, mul(d, pick_mask(y, x, true))) : Tensor()};
}
KILN_DERIVATIVE(minimum) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  return {g.needs(0) ? to_input(g, 0, mul(d, pick_mask(x, y, false))) : Tensor(),
          g.needs(1) ? to_input(g, 1, mul(d, pick_mask(y, x, false))) : Tensor()};
}
KILN_DERIVATIVE(atan2) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  Tensor r2 = add(mul(x, x), mul(y, y));
  return {g.needs(0) ? to_input(g, 0, div(mul(d, y), r2)) : Tensor(),
          g.needs(1) ? to_input(g, 1, div(mul(neg(d), x), r2)) : Tensor()};
}
KILN_DERIVATIVE(hypot) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1], &d = g.grads[0];
  const Tensor h = SAVED_OUTPUT(hypot(x, y));
  return {g.needs(0) ? to_input(g, 0, div(mul(d, x), h)) : Tensor(),
          g.needs(1) ? to_input(g, 1, div(mul(d, y), h)) : Tensor()};
}
KILN_DERIVATIVE(copysign) {
  const Tensor &x = g.inputs[0], &d = g.grads[0], &out = g.outputs[0];
  // d/dx copysign(x, y) = sign(x) * sign(out); 0 at x == 0
  return {to_input(g, 0, mul(d, mul(sign(x), sign(out)))), g.needs(1) ? zeros_like(g.inputs[1]) : Tensor()};
}

KILN_DERIVATIVE(where) {
  const Tensor &c = g.inputs[0], &d = g.grads[0];
  Tensor z = zeros_like(d);
  return {Tensor(), g.needs(1) ? to_input(g, 1, where(c, d, z)) : Tensor(),
          g.needs(2) ? to_input(g, 2, where(c, z, d)) : Tensor()};
}

KILN_DERIVATIVE(convert_element_type) { return {convert_element_type(g.grads[0], g.inputs[0].dtype())}; }

// copy_(self, src): the old value of self is overwritten (no gradient); src receives it all.
KILN_DERIVATIVE(copy_) {
  // Across devices (x.to(device)) the source's gradient goes back to the source's device.
  return {zeros_like(g.inputs[0]), g.needs(1) ? to_input(g, 1, g.grads[0]).to(g.inputs[1].device()) : Tensor()};
}

}  // namespace
}  // namespace kiln::autograd
