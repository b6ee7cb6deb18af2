// Helpers shared by the convolution and pooling composites.
#pragma once
#include <kiln/ops.h>

#include <vector>

namespace kiln::decomp {

// An identity kernel [K, 1, *kernel] of dtype dt (K = prod(kernel)).
Tensor identity_kernel(const Shape& kernel, DType dt);
// A per-dim argument given as 1 value or nd values, expanded to nd values.
std::vector<int64_t> expand_param(const std::vector<int64_t>& v, int64_t nd, const char* op, const char* what);

// x [N, C, H, W] padded by (top, bottom, left, right) with `fill`: exact (a 1x1 convolution with a
// unit kernel multiplies every value by 1; non-zero fills come from a mask), differentiable.
Tensor pad2d(const Tensor& x, int64_t top, int64_t bottom, int64_t left, int64_t right, double fill);

}  // namespace kiln::decomp
