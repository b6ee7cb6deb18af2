// Shared helpers for derivative formulas.
#pragma once
#include <kiln/ops.h>

#include "autograd/engine.h"
#include "ops/dispatch.h"

namespace kiln::autograd {

using ops::num;
// grad reduced to the shape of input i (undoing broadcasting).
inline Tensor to_input(const ops::GradCtx& g, size_t i, const Tensor& grad) {
  return sum_to(grad, g.inputs[i].sym_sizes());
}

}  // namespace kiln::autograd
