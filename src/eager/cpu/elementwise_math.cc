// CPU kernels of the transcendental unary pointwise prims (pointwise_kernels.h).
#include "eager/cpu/pointwise_kernels.h"

namespace kiln::eager::cpu {

KernelFn unary_math_kernel_of(OpId op) {
  switch (op) {
    UNARY(exp) UNARY(exp2) UNARY(expm1) UNARY(log) UNARY(log2) UNARY(log1p) UNARY(sqrt) UNARY(rsqrt) UNARY(sin)
    UNARY(cos) UNARY(tan) UNARY(tanh) UNARY(asin) UNARY(acos) UNARY(atan) UNARY(sinh) UNARY(cosh) UNARY(asinh)
    UNARY(acosh) UNARY(atanh) UNARY(erf) UNARY(erfc) UNARY(erfinv) UNARY(sigmoid) UNARY(lgamma) UNARY(digamma)
    default: return nullptr;
  }
}

}  // namespace kiln::eager::cpu
