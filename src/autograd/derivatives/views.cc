// Derivative formulas of the view prims.
#include "autograd/derivatives/common.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

KILN_DERIVATIVE(view) { return {reshape(g.grads[0], g.inputs[0].sym_sizes())}; }

KILN_DERIVATIVE(expand) { return {sum_to(g.grads[0], g.inputs[0].sym_sizes())}; }

KILN_DERIVATIVE(broadcast_in_dim) {
  const Tensor& x = g.inputs[0];
  const std::vector<int64_t>& bdims = g.args.ints(2);
  const Tensor& d = g.grads[0];
  // Sum the dims that were added, then the ones that were stretched from 1.
  std::vector<int64_t> added, stretched;
  const SymShape xs = x.sym_sizes(), os = d.sym_sizes();
  for (int64_t i = 0; i < d.dim(); ++i) {
    auto it = std::find(bdims.begin(), bdims.end(), i);
    if (it == bdims.end()) added.push_back(i);
    else if (xs[size_t(it - bdims.begin())] == 1 && os[size_t(i)] != 1) stretched.push_back(i);
  }
  Tensor r = stretched.empty() ? d : sum(d, stretched, true);
  if (!added.empty()) r = sum(r, added, false);
  return {reshape(r, xs)};
}

KILN_DERIVATIVE(permute) {
  const std::vector<int64_t>& dims = g.args.ints(1);
  const int64_t n = g.inputs[0].dim();
  std::vector<int64_t> inv(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inv[size_t(ops::wrap_dim(dims[i], n))] = int64_t(i);
  return {permute(g.grads[0], inv)};
}

KILN_DERIVATIVE(squeeze) { return {reshape(g.grads[0], g.inputs[0].sym_sizes())}; }
KILN_DERIVATIVE(unsqueeze) { return {reshape(g.grads[0], g.inputs[0].sym_sizes())}; }

// Views that pick a subset: scatter the gradient into zeros through the same view.
Tensor through_same_view(const ops::GradCtx& g) {
  const Tensor& x = g.inputs[0];
  Tensor z = zeros(x.sym_sizes(), g.grads[0].dtype(), x.device());
  ops::Args args = g.args;
  args.v[0] = z;
  Tensor v = ops::call_backend(args)[0];  // the same view of the zeros
  copy_(v, g.grads[0]);
  return z;
}
KILN_DERIVATIVE(slice) { return {through_same_view(g)}; }
KILN_DERIVATIVE(diagonal) { return {through_same_view(g)}; }

KILN_DERIVATIVE(as_strided) {
  // Overlapping views sum their gradients: accumulate element by element through index_put on
  // the flattened storage range the view covers.
  const Tensor& x = g.inputs[0];
  KILN_CHECK(x.is_contiguous() && x.storage_offset() == 0, "as_strided backward is implemented for a contiguous input",
             " at storage offset 0");
  const SymShape& sizes = g.args.symints(1);
  const SymShape& strides = g.args.symints(2);
  const int64_t off = g.args.opt_symint(3).value_or(SymInt(0)).value();
  Tensor idx = full({}, off, kInt64);
  for (size_t i = 0; i < sizes.size(); ++i) {
    Tensor r = mul(arange(0, sizes[i].value(), 1, kInt64), scalar_tensor(strides[i].value(), kInt64));
    idx = add(unsqueeze(idx, -1), r);
  }
  Tensor flat = zeros({x.numel()}, g.grads[0].dtype());
  flat = index_put(flat, {reshape(idx, {-1})}, reshape(g.grads[0], {-1}), true);
  return {reshape(flat, x.sym_sizes())};
}

}  // namespace
}  // namespace kiln::autograd
