// Fast CPU kernels of gelu (exact and tanh-approximated) and of its gradient: one pass over the
// input instead of the decomposition's 6-8 pointwise ops forward and the derivative formula's
// ~14 backward (each a full-size temporary), computed in acc_t<T> (float for the 16-bit floats)
// as the decomposition and the formula compute; the float tanh form as u sigmoid(2 z) with a
// fast exp, branch-free so that the float loops vectorize.
// Integer inputs and unknown modes go to the decomposition, which raises its errors.
#include <kiln/ops.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "eager/cpu/loops.h"
#include "eager/cpu/nn/backward.h"
#include "eager/cpu/nn/fast_exp.h"
#include "ops/applies.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;

// tanh form: gelu(u) = u 0.5 (1 + tanh(z)), z = k (u + c u^3). Constants (not captures) in the
// loop bodies, so that the compiler keeps them in registers.
constexpr double kGeluK = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kGeluC = 0.044715;

// 0.5 (1 + tanh(z)) = sigmoid(2 z): 1 / (1 + e) for z >= 0, e / (1 + e) below, with
// e = exp(-2|z|) <= 1 (the fast exp, relative error ~1e-7): accurate also where 1 + tanh(z) is
// tiny, and libm's tanhf (a call, ~15 ns) was most of the kernel's time. 0 below z = -44
// (exp(2z) is below float's normal range there), so gelu(-inf) is NaN as in the decomposition,
// as is NaN (any s times NaN). The selects test z's bits: a float compare may trap, and GCC
// then keeps a branch (random signs mispredict) and leaves the loop scalar.
inline float sigmoid_2x(float z) {
  const uint32_t bits = std::bit_cast<uint32_t>(z), mag = bits & 0x7fffffffu;
  const float e = exp_nonpos(-2 * std::fabs(z));
  const float num = bits >> 31 ? (mag < 0x42300000u ? e : 0.0f) : 1.0f;  // 0x42300000: 44.0f
  return num / (1 + e);
}
inline double sigmoid_2x(double z) { return 1 / (1 + std::exp(-2 * z)); }  // the formula's sigmoid

template <class A>
A gelu_tanh(A u) {
  constexpr A k = A(kGeluK), c = A(kGeluC);
  const A z = (u + u * u * u * c) * k;
  if constexpr (std::is_same_v<A, float>) return u * sigmoid_2x(z);
  else return u * A(0.5) * (std::tanh(z) + A(1));
}

// The derivative formula's slope (autograd/derivatives/nn.cc), operation for operation:
// s + u (2k + 6ck u^2) s (1 - s) with s = sigmoid(2 k (u + c u^3)).
template <class A>
A gelu_tanh_grad(A d, A u) {
  constexpr A k = A(kGeluK), k2 = A(2 * kGeluK), c = A(kGeluC), ck6 = A(6 * kGeluC * kGeluK);
  const A x2 = u * u;
  const A s = sigmoid_2x((u + x2 * u * c) * k);  // sigmoid(w 2k) as sigmoid(2 (w k)): the same float
  const A poly = x2 * ck6 + k2;
  return d * (s + (u * poly) * (s * (A(1) - s)));
}

// Exact form: Phi(u) + u phi(u).
template <class A>
A gelu_erf(A u) {
  return u * A(0.5) * (std::erf(u * A(M_SQRT1_2)) + A(1));
}
template <class A>
A gelu_erf_grad(A d, A u) {
  const A cdf = (std::erf(u * A(M_SQRT1_2)) + A(1)) * A(0.5);
  const A pdf = std::exp(u * u * A(-0.5)) * A(0.5 * M_2_SQRTPI * M_SQRT1_2);
  return d * (cdf + u * pdf);
}

bool gelu_applies(const Args& a) {
  const std::string& mode = a.str(1);
  return is_floating(a.tensor(0).dtype()) && (mode == "none" || mode == "tanh");
}
[[maybe_unused]] const bool gelu_applies_reg = ops::register_kernel_applies(ops::OpId::gelu, &gelu_applies);

KILN_KERNEL(gelu) {
  const Tensor& x = a.tensor(0);
  Tensor out = make_tensor(specs[0]);
  const bool tanh_mode = a.str(1) == "tanh";
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<acc_t<T>>) {
      using A = acc_t<T>;
      if (tanh_mode) map_unary<T, T>(out, x, [](A u) { return gelu_tanh(u); });
      else map_unary<T, T>(out, x, [](A u) { return gelu_erf(u); });
    }
  });
  return {out};
}

}  // namespace

Tensor gelu_backward(const Tensor& grad, const Tensor& x, bool tanh_mode) {
  KILN_CHECK(grad.dtype() == x.dtype() && grad.sizes() == x.sizes() && is_floating(x.dtype()),
             "internal: gelu_backward wants a floating x and a gradient of its shape and dtype");
  Tensor out = make_tensor(x.sizes(), x.dtype());
  visit_all(x.dtype(), [&]<class T>(type_tag<T>) {
    if constexpr (std::is_floating_point_v<acc_t<T>>) {
      using A = acc_t<T>;
      if (tanh_mode) map_binary<T, T>(out, grad, x, [](A d, A u) { return gelu_tanh_grad(d, u); });
      else map_binary<T, T>(out, grad, x, [](A d, A u) { return gelu_erf_grad(d, u); });
    }
  });
  return out;
}

}  // namespace kiln::eager::cpu
