// Derivative formulas of the reduction prims, and of max.dim / min.dim (composites: the index
// output picks the element the gradient goes to).
#include "autograd/derivatives/common.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

std::vector<int64_t> reduced_dims(const ops::GradCtx& g) {
  auto dims = g.args.opt_ints(1);
  if (dims && dims->empty()) dims.reset();
  return ops::wrap_dims(dims, g.inputs[0].dim());
}

// Brings a reduction's output (or its gradient) back to the input's rank (keepdim form).
Tensor unreduce(const ops::GradCtx& g, const Tensor& t) {
  const bool keepdim = g.args.b(2);
  if (keepdim) return t;
  Tensor r = t;
  for (int64_t d : reduced_dims(g)) r = unsqueeze(r, d);
  return r;
}

KILN_DERIVATIVE(sum) { return {expand(unreduce(g, g.grads[0]), g.inputs[0].sym_sizes())}; }

KILN_DERIVATIVE(prod) {
  // d/dx_i prod = product of the other elements. Dividing prod by x_i fails at zeros, so with
  // z zeros in a reduction: z == 0 -> prod / x_i; z == 1 -> only the zero gets the product of
  // the nonzeros; z >= 2 -> all zero. Data-independent (no branch on values), so it traces.
  const Tensor& x = g.inputs[0];
  const std::vector<int64_t> dims = reduced_dims(g);
  Tensor is_zero = eq(x, num(0));
  Tensor zeros_n = sum(is_zero, dims, true);
  Tensor safe = where(is_zero, num(1), x);
  Tensor p_nonzero = prod(safe, dims, true);
  Tensor zero_zeros = eq(zeros_n, num(0)), one_zero = eq(zeros_n, num(1));
  Tensor others = where(is_zero, where(one_zero, p_nonzero, num(0)),
                        where(zero_zeros, div(p_nonzero, safe), num(0)));
  Tensor d = expand(unreduce(g, g.grads[0]), x.sym_sizes());
  return {mul(d, others)};
}

// amax/amin: the gradient is shared evenly among the elements equal to the extreme value.
Tensor extreme_grad(const ops::GradCtx& g) {
  const Tensor& x = g.inputs[0];
  Tensor out = expand(unreduce(g, g.outputs[0]), x.sym_sizes());
  Tensor mask = convert_element_type(eq(x, out), g.grads[0].dtype());
  std::vector<int64_t> dims = reduced_dims(g);
  Tensor count = sum(mask, dims, true);
  Tensor d = g.args.b(2) ? g.grads[0] : unreduce(g, g.grads[0]);
  return div(mul(mask, expand(d, x.sym_sizes())), count);
}
KILN_DERIVATIVE(amax) { return {extreme_grad(g)}; }
KILN_DERIVATIVE(amin) { return {extreme_grad(g)}; }

// max.dim / min.dim: the gradient goes to the one element the index names (PyTorch), not split
// among ties; written as a one-hot mask from iota so it needs no scatter.
Tensor select_grad(const ops::GradCtx& g) {
  const Tensor& x = g.inputs[0];
  if (x.dim() == 0) return g.grads[0];
  const int64_t dim = ops::wrap_dim(g.args.i64(1), x.dim());
  Tensor idx = g.outputs[1], gr = g.grads[0];
  if (!g.args.b(2)) {
    idx = unsqueeze(idx, dim);
    gr = unsqueeze(gr, dim);
  }
  SymShape pos_shape(size_t(x.dim()), SymInt(1));
  pos_shape[size_t(dim)] = x.sym_size(dim);
  Tensor pos = view(iota(x.sym_size(dim)), pos_shape);
  return where(eq(pos, idx), expand(gr, x.sym_sizes()), num(0));
}
KILN_DERIVATIVE(max_dim) { return {select_grad(g)}; }
KILN_DERIVATIVE(min_dim) { return {select_grad(g)}; }

}  // namespace
}  // namespace kiln::autograd
