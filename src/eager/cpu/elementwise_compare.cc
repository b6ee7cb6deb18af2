// CPU kernels of the comparison, logical and bitwise binary pointwise prims (pointwise_kernels.h).
#include "eager/cpu/pointwise_kernels.h"

namespace kiln::eager::cpu {

KernelFn compare_kernel_of(OpId op) {
  switch (op) {
    BINARY(eq) BINARY(ne) BINARY(lt) BINARY(le) BINARY(gt) BINARY(ge) BINARY(logical_and) BINARY(logical_or)
    BINARY(logical_xor) BINARY(bitwise_and) BINARY(bitwise_or) BINARY(bitwise_xor) BINARY(shift_left)
    BINARY(shift_right_arithmetic)
    default: return nullptr;
  }
}

}  // namespace kiln::eager::cpu
