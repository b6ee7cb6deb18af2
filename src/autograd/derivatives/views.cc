// Derivative formulas of the view prims.
#include "autograd/derivatives/common.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

Tensor num_i(int64_t v) { return ops::scalar_to_tensor(Scalar(v)); }

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

// split and split_with_sizes: one node for all the pieces, so their gradients meet in one cat
// (the engine gives a piece without a gradient zeros) instead of a zero-padded copy of the whole
// input per piece summed by the engine.
KILN_DERIVATIVE(split) { return {cat(g.grads, ops::wrap_dim(g.args.i64(2), g.inputs[0].dim()))}; }
KILN_DERIVATIVE(split_with_sizes) { return {cat(g.grads, ops::wrap_dim(g.args.i64(2), g.inputs[0].dim()))}; }

// slice: zero padding where step is 1, otherwise an index_put of the picked positions.
KILN_DERIVATIVE(slice) {
  const Tensor& x = g.inputs[0];
  const Tensor& d = g.grads[0];
  const int64_t dim = ops::wrap_dim(g.args.i64(1), x.dim());
  const SymInt n = x.sym_size(dim), len = d.sym_size(dim), step = g.args.symint(4);
  SymInt start = 0;
  if (auto s = g.args.opt_symint(2)) {  // the meta's clamping of the start
    start = *s < 0 ? *s + n : *s;
    start = max(min(start, n), SymInt(0));
  }
  if (step == 1) {
    SymShape pad;
    for (int64_t i = x.dim() - 1; i > dim; --i) pad.insert(pad.end(), {SymInt(0), SymInt(0)});
    pad.insert(pad.end(), {start, n - start - len});
    return {constant_pad(d, pad, 0)};
  }
  TensorList idx(static_cast<size_t>(dim));
  idx.push_back(arange(start.value(), (start + step * len).value(), step.value(), kInt64));
  return {index_put(zeros(x.sym_sizes(), d.dtype(), x.device()), idx, d, false)};
}

// diagonal: an index_put of the diagonal positions (the diagonal dim moved to where advanced
// indexing puts it).
KILN_DERIVATIVE(diagonal) {
  const Tensor& x = g.inputs[0];
  const Tensor& d = g.grads[0];
  const int64_t off = g.args.i64(1);
  const int64_t d1 = ops::wrap_dim(g.args.i64(2), x.dim()), d2 = ops::wrap_dim(g.args.i64(3), x.dim());
  const int64_t len = d.size(-1);
  Tensor r = arange(0, len, 1, kInt64);
  TensorList idx(static_cast<size_t>(std::max(d1, d2) + 1));
  idx[size_t(d1)] = off < 0 ? add(r, num_i(-off)) : r;
  idx[size_t(d2)] = off > 0 ? add(r, num_i(off)) : r;
  const int64_t at = std::abs(d1 - d2) == 1 ? std::min(d1, d2) : 0;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < d.dim() - 1; ++i) perm.push_back(i);
  perm.insert(perm.begin() + at, d.dim() - 1);
  return {index_put(zeros(x.sym_sizes(), d.dtype(), x.device()), idx, permute(d, perm), false)};
}

// Storage position of every element of a (sizes, strides, offset) layout, as an int64 tensor.
Tensor storage_positions(const SymShape& sizes, const SymShape& strides, int64_t offset) {
  Tensor idx = full({}, offset, kInt64);
  for (size_t i = 0; i < sizes.size(); ++i) {
    Tensor r = mul(arange(0, sizes[i].value(), 1, kInt64), scalar_tensor(strides[i].value(), kInt64));
    idx = add(unsqueeze(idx, -1), r);
  }
  return idx;
}

KILN_DERIVATIVE(as_strided) {
  // Accumulate the gradient over the storage the view addresses (overlapping views sum), then
  // read back the input's own storage positions.
  const Tensor& x = g.inputs[0];
  const Tensor& d = g.grads[0];
  for (int64_t i = 0; i < x.dim(); ++i)
    KILN_CHECK(x.stride(i) != 0 || x.size(i) <= 1, "as_strided backward: the input must not overlap itself");
  const SymShape& sizes = g.args.symints(1);
  const SymShape& strides = g.args.symints(2);
  const int64_t off = g.args.opt_symint(3).value_or(x.sym_storage_offset()).value();
  Tensor out_pos = reshape(storage_positions(sizes, strides, off), {-1});
  Tensor in_pos = storage_positions(x.sym_sizes(), x.sym_strides(), x.storage_offset());
  int64_t extent = 1;
  if (out_pos.numel() > 0) extent = std::max(extent, amax(out_pos).item<int64_t>() + 1);
  if (in_pos.numel() > 0) extent = std::max(extent, amax(in_pos).item<int64_t>() + 1);
  Tensor buf = index_put(zeros({extent}, d.dtype(), x.device()), {out_pos}, reshape(d, {-1}), true);
  return {reshape(index(buf, {reshape(in_pos, {-1})}), x.sym_sizes())};
}

}  // namespace
}  // namespace kiln::autograd
