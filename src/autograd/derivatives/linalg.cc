// Derivative formulas of the linear algebra prims (matmul, convolution).
#include "autograd/derivatives/common.h"
#include "ops/meta/conv.h"
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


// sum over n and o of gout[n, g*Co + co, o] * input[n, g*Ci + ci, o*stride - pad + k*dilation]
// -> [G*Co, Ci, *kernel]: itself a convolution, with the batch as channels and stride and
// dilation swapped. Channels become (group, n) pairs so that groups stay groups.
Tensor conv_weight_grad(const Tensor& input, const Tensor& gout, const Shape& kernel, const ops::ConvParams& p) {
  const int64_t G = p.groups;
  const SymShape is = input.sym_sizes();
  const SymInt ci = floordiv(is[1], SymInt(G));
  SymShape split{is[0], SymInt(G), ci}, merged{ci, is[0] * G};
  std::vector<int64_t> perm{2, 1, 0};
  for (int64_t d = 0; d < p.nd; ++d) {
    split.push_back(is[size_t(d + 2)]);
    merged.push_back(is[size_t(d + 2)]);
    perm.push_back(d + 3);
  }
  Tensor xr = reshape(permute(reshape(input, split), perm), merged);  // [Ci, G*N, *spatial]
  Tensor r = convolution(xr, transpose(gout, 0, 1), Tensor(), p.dilation, p.padding, p.stride, false, {0}, G);
  for (int64_t d = 0; d < p.nd; ++d) r = slice(r, d + 2, 0, kernel[size_t(d)]);
  return transpose(r, 0, 1);
}

KILN_DERIVATIVE(convolution) {
  const ops::ConvParams p = ops::conv_params(g.args);
  const Tensor &x = g.inputs[0], &w = g.inputs[1], &gy = g.grads[0];
  Shape kernel(w.sizes().begin() + 2, w.sizes().end());
  std::vector<Tensor> r(g.inputs.size());
  if (g.needs(0)) {
    if (!p.transposed) {
      // The transposed convolution is the adjoint; output_padding restores the rows the
      // forward stride skipped at the end.
      std::vector<int64_t> op;
      for (int64_t d = 0; d < p.nd; ++d) {
        const size_t i = size_t(d);
        op.push_back(x.size(d + 2) - ((gy.size(d + 2) - 1) * p.stride[i] - 2 * p.padding[i] +
                                      p.dilation[i] * (kernel[i] - 1) + 1));
      }
      r[0] = convolution(gy, w, Tensor(), p.stride, p.padding, p.dilation, true, op, p.groups);
    } else {
      Tensor gx = convolution(gy, w, Tensor(), p.stride, p.padding, p.dilation, false, {0}, p.groups);
      for (int64_t d = 0; d < p.nd; ++d)
        if (gx.size(d + 2) != x.size(d + 2)) gx = slice(gx, d + 2, 0, x.size(d + 2));
      r[0] = gx;
    }
  }
  if (g.needs(1)) r[1] = p.transposed ? conv_weight_grad(gy, x, kernel, p) : conv_weight_grad(x, gy, kernel, p);
  if (g.inputs.size() > 2 && g.needs(2)) {
    std::vector<int64_t> dims{0};
    for (int64_t d = 0; d < p.nd; ++d) dims.push_back(d + 2);
    r[2] = sum(gy, dims);
  }
  return r;
}

// unfold and fold are each other's adjoints.
KILN_DERIVATIVE(unfold) {
  const Tensor& x = g.inputs[0];
  const std::vector<int64_t> size{x.size(-2), x.size(-1)};
  return {fold(g.grads[0], size, g.args.ints(1), g.args.ints(2), g.args.ints(3), g.args.ints(4))};
}

KILN_DERIVATIVE(fold) {
  return {unfold(g.grads[0], g.args.ints(2), g.args.ints(3), g.args.ints(4), g.args.ints(5))};
}

}  // namespace
}  // namespace kiln::autograd
