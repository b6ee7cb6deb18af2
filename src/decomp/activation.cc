// Activation functions, decomposed into elementwise prims. 16-bit float inputs are computed in
// float32 and rounded once at the end (as PyTorch's kernels do), so that the chain of prims
// does not round at every step.
#include <cmath>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

Tensor num(Scalar s) { return ops::scalar_to_tensor(s); }
bool is_half(DType t) { return t == kFloat16 || t == kBFloat16; }
Tensor up(const Tensor& x) { return is_half(x.dtype()) ? convert_element_type(x, kFloat32) : x; }
Tensor down(const Tensor& y, DType dt) { return y.dtype() == dt ? y : convert_element_type(y, dt); }
// The smooth activations (elu, gelu, softplus, mish) of an integer tensor: PyTorch has no kernel
// for them, and the float result truncated to the integer dtype (gelu([3]) == [2]) is no answer.
void check_floating(const Tensor& x, const char* op) {
  KILN_CHECK_HINT(is_floating(x.dtype()), "convert it first, e.g. x.to(kFloat32)", op,
                  " needs a floating point tensor, got ", name(x.dtype()));
}

// where(x <= 0, 0, x): NaN propagates, and the gradient at 0 is 0 (as PyTorch's threshold_backward).
KILN_DECOMP(relu) {
  const Tensor& x = a.tensor(0);
  return {where(le(x, num(0)), num(0), x)};
}

// min/max with zero gradient on and outside the bounds (PyTorch's hardtanh_backward); a NaN bound
// makes every element NaN, as in PyTorch. An integer tensor (no gradient) is clamped with the
// bounds converted to int64 as PyTorch does (-1.5 -> -1; NaN, inf: an error), so the result keeps
// its dtype, and clamp's rule for bounds past the dtype's range applies (uint8, min -1: 0).
Tensor hardtanh_impl(const Tensor& x, Scalar lo, Scalar hi) {
  KILN_CHECK(!(lo.to_double() > hi.to_double()), "hardtanh: min_val (", lo, ") must not exceed max_val (", hi, ")");
  if (is_integral(x.dtype()))
    return clamp(x, ops::integer_scalar("hardtanh", "min_val", lo, kInt64),
                 ops::integer_scalar("hardtanh", "max_val", hi, kInt64));
  if (std::isnan(lo.to_double()) || std::isnan(hi.to_double())) return where(num(true), num(NAN), x);
  return where(le(x, num(lo)), num(lo), where(ge(x, num(hi)), num(hi), x));
}
KILN_DECOMP(hardtanh) { return {hardtanh_impl(a.tensor(0), a.scalar(1), a.scalar(2))}; }
KILN_DECOMP(relu6) { return {hardtanh_impl(a.tensor(0), 0, 6)}; }

KILN_DECOMP(leaky_relu) {
  const Tensor& x = a.tensor(0);
  return {where(gt(x, num(0)), x, mul(x, num(a.scalar(1))))};
}

Tensor elu_impl(const Tensor& x, double alpha, double scale) {
  check_floating(x, "elu");
  Tensor u = up(x);
  // expm1 of min(u, 0): for large u the unused branch's exp would be inf, and inf * 0 a NaN gradient.
  Tensor neg_part = mul(expm1(where(gt(u, num(0)), num(0), u)), num(alpha * scale));
  Tensor y = where(gt(u, num(0)), scale == 1 ? u : mul(u, num(scale)), neg_part);
  return down(y, x.dtype());
}
KILN_DECOMP(elu) { return {elu_impl(a.tensor(0), a.scalar(1).to_double(), 1.0)}; }
KILN_DECOMP(selu) {
  const double alpha = 1.6732632423543772848170429916717, scale = 1.0507009873554804934193349852946;
  return {elu_impl(a.tensor(0), alpha, scale)};
}

KILN_DECOMP(gelu) {
  const Tensor& x = a.tensor(0);
  check_floating(x, "gelu");
  const std::string& mode = a.str(1);
  KILN_CHECK_HINT(mode == "none" || mode == "tanh", "use approximate=\"none\" or \"tanh\"",
                  "gelu: unknown approximate mode \"", mode, "\"");
  Tensor u = up(x);
  Tensor inner;
  if (mode == "none") {
    inner = erf(mul(u, num(M_SQRT1_2)));
  } else {
    const double k = std::sqrt(2.0 / M_PI);
    inner = tanh(mul(add(u, mul(pow(u, num(3)), num(0.044715))), num(k)));
  }
  return {down(mul(mul(u, num(0.5)), add(inner, num(1))), x.dtype())};
}

KILN_DECOMP(silu) {
  const Tensor& x = a.tensor(0);
  Tensor u = up(x);
  return {down(mul(u, sigmoid(u)), x.dtype())};
}

// log1p(exp(beta x)) / beta, or x where beta x > threshold. The exp branch sees a masked input
// so that it cannot overflow and poison the gradient of the branch where() discards.
Tensor softplus_impl(const Tensor& u, double beta, double threshold) {
  Tensor bx = beta == 1 ? u : mul(u, num(beta));
  Tensor linear = gt(bx, num(threshold));
  Tensor safe = where(linear, num(0), bx);
  Tensor soft = log1p(exp(safe));
  if (beta != 1) soft = div(soft, num(beta));
  return where(linear, u, soft);
}
KILN_DECOMP(softplus) {
  const Tensor& x = a.tensor(0);
  check_floating(x, "softplus");
  return {down(softplus_impl(up(x), a.scalar(1).to_double(), a.scalar(2).to_double()), x.dtype())};
}

KILN_DECOMP(mish) {
  const Tensor& x = a.tensor(0);
  check_floating(x, "mish");
  Tensor u = up(x);
  return {down(mul(u, tanh(softplus_impl(u, 1, 20))), x.dtype())};
}

KILN_DECOMP(hardsigmoid) {
  const Tensor& x = a.tensor(0);
  return {div(hardtanh_impl(add(x, num(3)), 0, 6), num(6))};
}

KILN_DECOMP(hardswish) {
  const Tensor& x = a.tensor(0);
  return {mul(x, div(hardtanh_impl(add(x, num(3)), 0, 6), num(6)))};
}

}  // namespace
}  // namespace kiln::decomp
