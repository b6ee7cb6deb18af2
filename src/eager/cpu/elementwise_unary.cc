// CPU kernels of the unary pointwise prims that are not transcendental (pointwise_kernels.h).
#include "eager/cpu/pointwise_kernels.h"

namespace kiln::eager::cpu {

KernelFn unary_kernel_of(OpId op) {
  switch (op) {
    UNARY(neg) UNARY(abs) UNARY(sign) UNARY(reciprocal) UNARY(floor) UNARY(ceil) UNARY(round) UNARY(trunc)
    UNARY(isnan) UNARY(isinf) UNARY(isfinite) UNARY(logical_not) UNARY(bitwise_not)
    UNARY(relu)  // a composite with a fast kernel
    default: return nullptr;
  }
}

}  // namespace kiln::eager::cpu
