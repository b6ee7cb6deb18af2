// CPU kernels of the arithmetic binary pointwise prims (pointwise_kernels.h).
#include "eager/cpu/pointwise_kernels.h"

namespace kiln::eager::cpu {
namespace {
// div's rounding mode picks the function: None div, "trunc" div_trunc, "floor" floor_divide.
std::vector<Tensor> div_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  if (a.is_none(2)) return binary_kernel<SCALAR_FN(div)>(a, specs);
  if (a.str(2) == "floor") return binary_kernel<SCALAR_FN(floor_divide), ZeroDivisor::DivisionError>(a, specs);
  return binary_kernel<SCALAR_FN(div_trunc), ZeroDivisor::DivisionError>(a, specs);
}

std::vector<Tensor> pow_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  // As PyTorch: a negative scalar exponent of an integer base is an error; a tensor of
  // exponents may hold negative ones (the result is then 1, -1 or 0).
  const Tensor& y = a.tensor(1);
  if (is_integral(specs[0].dtype) && y.is_wrapped_number()) {
    Tensor neg_exp = lt(y, ops::scalar_to_tensor(Scalar(int64_t(0))));
    KILN_CHECK_HINT(!any(neg_exp).item<bool>(), "convert the base to a float dtype",
                    "integers to negative integer powers are not allowed");
  }
  return binary_kernel<SCALAR_FN(pow)>(a, specs);
}

std::vector<Tensor> nextafter_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const DType rdt = specs[0].dtype;
  if (rdt != kFloat16 && rdt != kBFloat16) return binary_kernel<SCALAR_FN(nextafter)>(a, specs);
  // 16-bit floats step in their own precision: the neighbour of the storage value.
  Tensor out = make_tensor(specs[0]);
  Tensor xa = a.tensor(0).to(rdt), ya = a.tensor(1).to(rdt);
  if (rdt == kFloat16) map_binary<Half, Half>(out, xa, ya, scalar::nextafter_float16);
  else map_binary<BFloat16, BFloat16>(out, xa, ya, scalar::nextafter_bfloat16);
  return {out};
}

}  // namespace

KernelFn arith_kernel_of(OpId op) {
  switch (op) {
    BINARY(add) BINARY(sub) BINARY(mul) BINARY(maximum) BINARY(minimum) BINARY(atan2) BINARY(hypot)
    BINARY(copysign)
    BINARY_NONZERO(floor_divide, DivisionError) BINARY_NONZERO(remainder, ModuloError) BINARY_NONZERO(fmod, ModuloError)
    case OpId::div: return div_kernel;
    case OpId::pow: return pow_kernel;
    case OpId::nextafter: return nextafter_kernel;
    default: return nullptr;
  }
}

}  // namespace kiln::eager::cpu
