// Helpers shared by the convolution and pooling composites.
#pragma once
#include <kiln/ops.h>

#include <vector>

namespace kiln::decomp {

// An identity kernel [K, 1, *kernel] of dtype dt (K = prod(kernel)).
Tensor identity_kernel(const Shape& kernel, DType dt);
// A per-dim argument given as 1 value or nd values, expanded to nd values.
std::vector<int64_t> expand_param(const std::vector<int64_t>& v, int64_t nd, const char* op, const char* what);

}  // namespace kiln::decomp
