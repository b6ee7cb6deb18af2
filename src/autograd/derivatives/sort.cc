// Derivative formulas of sort and topk: each output's gradient goes back to the input
// element its index names.
#include "autograd/derivatives/common.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

Tensor scatter_back(const ops::GradCtx& g, int64_t dim_arg) {
  const Tensor& x = g.inputs[0];
  if (x.dim() == 0) return g.grads[0];  // values == input (topk with k = 0 has no grad either way)
  const int64_t dim = ops::wrap_dim(dim_arg, x.dim());
  return scatter_add(zeros_like(x, g.grads[0].dtype()), dim, g.outputs[1], g.grads[0]);
}

KILN_DERIVATIVE(sort) { return {scatter_back(g, g.args.i64(1))}; }
KILN_DERIVATIVE(topk) {
  if (g.inputs[0].dim() == 0 && g.grads[0].numel() == 0) return {zeros_like(g.inputs[0])};
  return {scatter_back(g, g.args.i64(2))};
}

}  // namespace
}  // namespace kiln::autograd
