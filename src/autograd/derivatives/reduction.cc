// Derivative formulas of the reduction prims.
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
  // d/dx_i prod = prod / x_i where x_i != 0; with zeros, the product of the others.
  const Tensor& x = g.inputs[0];
  Tensor d = expand(unreduce(g, g.grads[0]), x.sym_sizes());
  Tensor p = expand(unreduce(g, g.outputs[0]), x.sym_sizes());
  Tensor is_zero = eq(x, num(0));
  if (!any(is_zero).item<bool>()) return {mul(d, div(p, x))};
  // Slow exact path: product of all other elements along the reduced dims, via exclusive
  // cumulative products from both ends (flattening the reduced dims last).
  std::vector<int64_t> dims = reduced_dims(g), keep;
  for (int64_t i = 0; i < x.dim(); ++i)
    if (std::find(dims.begin(), dims.end(), i) == dims.end()) keep.push_back(i);
  std::vector<int64_t> perm = keep;
  perm.insert(perm.end(), dims.begin(), dims.end());
  Tensor xp = permute(x, perm);
  SymShape ps = xp.sym_sizes();
  SymShape flat_shape(ps.begin(), ps.begin() + int64_t(keep.size()));
  flat_shape.push_back(-1);
  Tensor xf = reshape(xp, flat_shape);
  Tensor ones1 = ones_like(narrow(xf, -1, 0, 1));
  Tensor left = cumprod(cat({ones1, narrow(xf, -1, 0, xf.size(-1) - 1)}, -1), -1);
  Tensor right = flip(cumprod(flip(cat({narrow(xf, -1, 1, xf.size(-1) - 1), ones1}, -1), {-1}), -1), {-1});
  Tensor others = reshape(mul(left, right), ps);
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  return {mul(d, permute(others, inv))};
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

}  // namespace
}  // namespace kiln::autograd
