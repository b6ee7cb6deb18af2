// Fast CPU kernel of gelu (exact and tanh-approximated): one pass over the input instead of the
// decomposition's 6-8 pointwise ops (each a full-size temporary, and pow(x, 3) through libm's
// powf), computed in acc_t<T> (float for the 16-bit floats) as the decomposition computes;
// the float tanh form as u sigmoid(2 z) with a fast exp.
// Integer inputs and unknown modes go to the decomposition, which raises its errors.
#include <kiln/ops.h>

#include <algorithm>
#include <cmath>

#include "eager/cpu/loops.h"
#include "eager/cpu/nn/fast_exp.h"
#include "ops/applies.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;

// 0.5 (1 + tanh(z)) = sigmoid(2 z): 1 / (1 + e) for z >= 0, e / (1 + e) below, with
// e = exp(-2|z|) <= 1 (the fast exp, relative error ~1e-7): accurate also where 1 + tanh(z) is
// tiny, and libm's tanhf (a call, ~15 ns) was most of the kernel's time. Branch-free (random
// signs mispredict): the selects are a max and products with 0/1; 0 below z = -44 (exp(2z) is
// below float's normal range there), so gelu(-inf) is NaN as in the decomposition, as is NaN.
inline float sigmoid_2x(float z) {
  const float e = exp_nonpos(-2 * std::fabs(z));
  return std::max(e, float(z >= 0)) * float(z > -44) / (1 + e);
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
      if (tanh_mode) {
        const A k = A(std::sqrt(2.0 / M_PI)), c = A(0.044715);
        map_unary<T, T>(out, x, [=](A u) {
          const A z = (u + u * u * u * c) * k;
          if constexpr (std::is_same_v<A, float>) return u * sigmoid_2x(z);
          else return u * A(0.5) * (std::tanh(z) + A(1));
        });
      } else {
        map_unary<T, T>(out, x, [](A u) { return u * A(0.5) * (std::erf(u * A(M_SQRT1_2)) + A(1)); });
      }
    }
  });
  return {out};
}

}  // namespace
}  // namespace kiln::eager::cpu
