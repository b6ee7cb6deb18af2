// Pointwise composites (clamp, lerp, addcmul, logit, xlogy, nan_to_num, masked_fill, dropout, ...),
// decomposed into elementwise prims.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

Tensor num(Scalar s) { return ops::scalar_to_tensor(s); }

// An int bound of an integer tensor, as PyTorch: past the dtype's range on its own side it clamps
// nothing (it moves to the range's end: min -1 of a uint8 tensor is 0, not 255); a min above the
// range or a max below it would clamp everything to a value the dtype lacks, and is an error.
std::optional<Scalar> fit_bound(const Tensor& x, std::optional<Scalar> b, bool is_min) {
  if (!b || !b->is_int() || !is_integral(x.dtype())) return b;
  const auto [lo, hi] = ops::int_range(x.dtype());
  const int64_t v = b->to_int();
  KILN_CHECK_HINT(is_min ? v <= hi : v >= lo, "pass a bound in the tensor's range, or convert the tensor",
                  "clamp: ", is_min ? "min" : "max", " = ", v, " is outside the range of ", name(x.dtype()), " [", lo,
                  ", ", hi, "]");
  return Scalar(std::clamp(v, lo, hi));
}

// Gradient 1 on [lo, hi] inclusive (PyTorch's clamp_backward); NaN propagates; lo > hi gives hi.
Tensor clamp_impl(const Tensor& x, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  KILN_CHECK_HINT(lo || hi, "pass min, max or both", "clamp: at least one of min and max must be given");
  lo = fit_bound(x, lo, true);
  hi = fit_bound(x, hi, false);
  // A NaN bound makes every element NaN, as in PyTorch (no comparison with NaN is ever true).
  auto is_nan = [](const Scalar& s) { return s.is_float() && std::isnan(s.to_double()); };
  Tensor y = x;
  if (lo) y = where(is_nan(*lo) ? num(true) : lt(y, num(*lo)), num(*lo), y);
  if (hi) y = where(is_nan(*hi) ? num(true) : gt(y, num(*hi)), num(*hi), y);
  return y;
}
KILN_DECOMP(clamp) { return {clamp_impl(a.tensor(0), a.opt_scalar(1), a.opt_scalar(2))}; }
KILN_DECOMP(clamp_min) { return {clamp_impl(a.tensor(0), a.scalar(1), std::nullopt)}; }
KILN_DECOMP(clamp_max) { return {clamp_impl(a.tensor(0), std::nullopt, a.scalar(1))}; }

// self + w (end - self) for |w| < 0.5, else end - (end - self)(1 - w): exact at w = 0 and w = 1.
KILN_DECOMP(lerp) {
  const Tensor &self = a.tensor(0), &end = a.tensor(1), &w = a.tensor(2);
  KILN_CHECK_HINT(is_floating(self.dtype()) && is_floating(end.dtype()), "convert the inputs to a float dtype",
                  "lerp needs floating point inputs, got ", name(self.dtype()), " and ", name(end.dtype()));
  Tensor diff = sub(end, self);
  if (w.is_wrapped_number()) {  // a Python number: 1 - w in double, and no promotion by a 0-d result
    double wv = w.item_scalar().to_double();
    return {std::abs(wv) < 0.5 ? add(self, mul(diff, num(wv))) : sub(end, mul(diff, num(1 - wv)))};
  }
  Tensor lo = add(self, mul(w, diff));
  Tensor hi = sub(end, mul(diff, rsub(w, num(1))));
  return {where(lt(abs(w), num(0.5)), lo, hi)};
}

KILN_DECOMP(addcmul) {
  const Tensor &self = a.tensor(0), &t1 = a.tensor(1), &t2 = a.tensor(2);
  Scalar v = a.scalar(3);
  // On integers PyTorch converts the value to the result's dtype (2.5 -> 2): it never promotes.
  const DType dt = result_type({self, t1, t2});
  if (is_integral(dt)) v = ops::integer_scalar("addcmul", "value", v, dt);
  Tensor prod = mul(t1, t2);
  return {add(self, v == Scalar(1) ? prod : mul(prod, num(v)))};
}

KILN_DECOMP(addcdiv) {
  const Tensor &self = a.tensor(0), &t1 = a.tensor(1), &t2 = a.tensor(2);
  KILN_CHECK_HINT(!(is_integral(t1.dtype(), true) && is_integral(t2.dtype(), true)),
                  "convert tensor1 or tensor2 to a float dtype, or use (tensor1 // tensor2)",
                  "addcdiv: integer division of tensor1 by tensor2 is not supported");
  Scalar v = a.scalar(3);
  Tensor q = div(t1, t2);
  return {add(self, v == Scalar(1) ? q : mul(q, num(v)))};
}

KILN_DECOMP(square) {
  const Tensor& x = a.tensor(0);
  // PyTorch computes pow(x, 2): bool becomes int64 rather than staying bool.
  Tensor u = x.dtype() == kBool ? convert_element_type(x, kInt64) : x;
  return {mul(u, u)};
}

KILN_DECOMP(logit) {
  const Tensor& x = a.tensor(0);
  std::optional<double> eps = a.opt_f64(1);
  Tensor u = is_floating(x.dtype()) ? x : convert_element_type(x, default_float_dtype());
  if (eps) u = clamp_impl(u, Scalar(*eps), Scalar(1 - *eps));
  return {log(div(u, rsub(u, num(1))))};
}

// x * log(y), 0 where x == 0 (even for y <= 0 or inf), NaN where y is NaN. Where x == 0 and log(y)
// is not finite, log sees 1: the value is x * 0 = 0 and no inf/NaN reaches the gradient. Elsewhere
// x * log(y) is 0 by itself at x == 0, and x's gradient stays log(y), as PyTorch's.
Tensor xlogy_impl(const Tensor& x, const Tensor& y) {
  DType dt = ops::float_result(result_type({x, y}));
  Tensor xf = x.dtype() == dt ? x : convert_element_type(x, dt);
  Tensor yf = y.dtype() == dt ? y : convert_element_type(y, dt);
  Tensor unused = logical_and(eq(xf, num(0)), logical_or(le(yf, num(0)), isinf(yf)));
  return mul(xf, log(where(unused, num(1), yf)));
}
KILN_DECOMP(xlogy) { return {xlogy_impl(a.tensor(0), a.tensor(1))}; }

double largest(DType t) {
  switch (t) {
    case kFloat16: return 65504.0;
    case kBFloat16: return 3.3895313892515355e38;
    case kFloat32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

KILN_DECOMP(nan_to_num) {
  const Tensor& x = a.tensor(0);
  if (!is_floating(x.dtype())) return {clone(x)};  // integers have no NaN or inf
  const double big = largest(x.dtype());
  const double nan_v = a.opt_f64(1).value_or(0.0), pos = a.opt_f64(2).value_or(big), neg = a.opt_f64(3).value_or(-big);
  const double inf = std::numeric_limits<double>::infinity();
  Tensor y = where(eq(x, num(inf)), num(pos), x);
  y = where(eq(x, num(-inf)), num(neg), y);
  return {where(isnan(x), num(nan_v), y)};
}

KILN_DECOMP(masked_fill) {
  const Tensor &self = a.tensor(0), &mask = a.tensor(1);
  KILN_CHECK_HINT(mask.dtype() == kBool, "compare first, e.g. x.masked_fill(x < 0, 0)",
                  "masked_fill: the mask must be a bool tensor, got ", name(mask.dtype()));
  Scalar v = a.scalar(2);
  KILN_CHECK_HINT(is_floating(self.dtype()) || !v.is_float(), "convert the tensor to a float dtype first",
                  "masked_fill: cannot fill a ", name(self.dtype()), " tensor with the float value ", v);
  // The value takes self's dtype (a 0-d tensor of it does not promote). Out of place, self and the
  // mask broadcast together, as in PyTorch; masked_fill_ then refuses a result larger than self.
  return {where(mask, scalar_tensor(v, self.dtype()), self)};
}

KILN_DECOMP(dropout) {
  const Tensor& x = a.tensor(0);
  const double p = a.f64(1);
  KILN_CHECK_HINT(p >= 0 && p <= 1, "p is a probability", "dropout: p must be in [0, 1], got ", p);
  if (!a.b(2) || p == 0) return {x};
  KILN_CHECK_HINT(is_floating(x.dtype()), "convert it first, e.g. x.to(kFloat32)",
                  "dropout needs a floating point tensor, got ", name(x.dtype()));
  if (p == 1) return {mul(x, zeros_like(x))};  // keeps the graph: the gradient is zero
  Tensor u = rand_like(x, x.dtype() == kFloat64 ? kFloat64 : kFloat32);
  Tensor keep = ge(u, num(p));  // P(keep) = 1 - p
  return {mul(mul(x, keep), num(1.0 / (1.0 - p)))};
}

KILN_DECOMP(rsub) { return {sub(a.tensor(1), a.tensor(0))}; }

KILN_DECOMP(true_divide) { return {div(a.tensor(0), a.tensor(1))}; }

KILN_DECOMP(float_power) {
  const Tensor &x = a.tensor(0), &e = a.tensor(1);
  return {pow(x.dtype() == kFloat64 ? x : convert_element_type(x, kFloat64),
              e.dtype() == kFloat64 ? e : convert_element_type(e, kFloat64))};
}

}  // namespace
}  // namespace kiln::decomp
