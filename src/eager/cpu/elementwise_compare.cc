// CPU kernels of the comparison, logical and bitwise binary pointwise prims (pointwise_kernels.h).
#include "eager/cpu/pointwise_kernels.h"

namespace kiln::eager::cpu {

KernelFn compare_kernel_of(OpId op) {
#define UNARY(fn) case OpId::fn: return unary_kernel<SCALAR_FN(fn)>;
#define BINARY(fn) case OpId::fn: return binary_kernel<SCALAR_FN(fn)>;
#define BINARY_NONZERO(fn, error) case OpId::fn: return binary_kernel<SCALAR_FN(fn), ZeroDivisor::error>;
  switch (op) {
    BINARY(eq) BINARY(ne) BINARY(lt) BINARY(le) BINARY(gt) BINARY(ge) BINARY(logical_and) BINARY(logical_or)
    BINARY(logical_xor) BINARY(bitwise_and) BINARY(bitwise_or) BINARY(bitwise_xor) BINARY(shift_left)
    BINARY(shift_right_arithmetic)
    default: return nullptr;
  }
#undef UNARY
#undef BINARY
#undef BINARY_NONZERO
}

}  // namespace kiln::eager::cpu
