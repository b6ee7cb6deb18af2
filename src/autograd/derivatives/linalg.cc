// Derivative formulas of the linear algebra prims (matmul, convolution).
#include "autograd/derivatives/common.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

// matmul: with 1-d operands promoted to matrices (x: a row, y: a column) and the gradient
// given the matching [..., n, p] shape, dx = g y^T and dy = x^T g, summed over broadcast batches.
KILN_DERIVATIVE(matmul) {
  const Tensor &x = g.inputs[0], &y = g.inputs[1];
  Tensor x2 = x.dim() == 1 ? unsqueeze(x, 0) : x;
  Tensor y2 = y.dim() == 1 ? unsqueeze(y, 1) : y;
  Tensor g2 = g.grads[0];
  if (x.dim() == 1) g2 = unsqueeze(g2, y.dim() == 1 ? 0 : -2);
  if (y.dim() == 1) g2 = unsqueeze(g2, -1);
  Tensor gx, gy;
  if (g.needs(0)) {
    Tensor r = matmul(g2, mT(y2));
    gx = reshape(sum_to(r, x2.sym_sizes()), x.sym_sizes());
  }
  if (g.needs(1)) {
    Tensor r;
    if (y2.dim() == 2 && x2.dim() > 2) {
      // A shared matrix: fold x's batches into rows, one product instead of a batch and a sum.
      const SymShape xs = x2.sym_sizes(), gs = g2.sym_sizes();
      r = matmul(mT(reshape(x2, SymShape{SymInt(-1), xs.back()})), reshape(g2, SymShape{SymInt(-1), gs.back()}));
    } else {
      r = sum_to(matmul(mT(x2), g2), y2.sym_sizes());
    }
    gy = reshape(r, y.sym_sizes());
  }
  return {gx, gy};
}


}  // namespace
}  // namespace kiln::autograd
