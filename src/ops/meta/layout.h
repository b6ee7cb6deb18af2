// Helpers shared by the layout prims' meta, kernels and derivatives.
#pragma once
#include <kiln/tensor.h>

namespace kiln::ops {

// cat ignores 1-d tensors of size 0 whatever the other inputs' shapes (PyTorch's legacy rule).
bool cat_skips(const Tensor& t);

}  // namespace kiln::ops
