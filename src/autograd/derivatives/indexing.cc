// Derivative formulas of the indexing prims (gather/scatter family, index_select, index_put).
#include "autograd/derivatives/common.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

Tensor zeros_of(const Tensor& shape_of, const Tensor& dtype_of) {
  return zeros(shape_of.sym_sizes(), dtype_of.dtype(), shape_of.device());
}

// The part of src a scatter reads: its leading index.shape block.
Tensor used_part(const Tensor& src, const Tensor& index) {
  Tensor r = src;
  for (int64_t d = 0; d < index.dim(); ++d)
    if (src.sym_size(d) != index.sym_size(d)) r = slice(r, d, 0, index.sym_size(d));
  return r;
}

// t (of index's shape) zero-padded at the end of each dim up to src's shape.
Tensor pad_to(const Tensor& t, const Tensor& src) {
  SymShape pad;
  bool any = false;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    SymInt extra = src.sym_size(d) - t.sym_size(d);
    any = any || extra != 0;
    pad.push_back(0);
    pad.push_back(extra);
  }
  return any ? constant_pad(t, pad, 0) : t;
}

KILN_DERIVATIVE(gather) {
  const Tensor &x = g.inputs[0], &index = g.inputs[1], &d = g.grads[0];
  return {scatter_add(zeros_of(x, d), g.args.i64(1), index, d), Tensor()};
}

KILN_DERIVATIVE(scatter) {
  const Tensor &index = g.inputs[1], &src = g.inputs[2], &d = g.grads[0];
  const int64_t dim = g.args.i64(1);
  Tensor gx, gs;
  if (g.needs(0)) gx = scatter(d, dim, index, zeros_of(src, d));  // overwritten entries get nothing
  if (g.needs(2)) gs = pad_to(gather(d, dim, index), src);
  return {gx, Tensor(), gs};
}

KILN_DERIVATIVE(scatter_add) {
  const Tensor &index = g.inputs[1], &src = g.inputs[2], &d = g.grads[0];
  return {d, Tensor(), g.needs(2) ? pad_to(gather(d, g.args.i64(1), index), src) : Tensor()};
}

KILN_DERIVATIVE(scatter_reduce) {
  const Tensor &x = g.inputs[0], &index = g.inputs[1], &src = g.inputs[2], &d = g.grads[0];
  const Tensor& out = g.outputs[0];
  const int64_t dim = g.args.i64(1);
  const std::string& r = g.args.str(4);
  const bool incl = g.args.b(5);
  const Tensor s = used_part(src, index);
  // How many src elements land on each output element.
  const Tensor n = scatter_add(zeros_of(x, d), dim, index, ones_like(s, d.dtype()));
  const Tensor untouched = convert_element_type(eq(n, num(0)), d.dtype());
  Tensor gx, gs;
  if (r == "sum") {
    gx = incl ? d : mul(d, untouched);
    gs = gather(d, dim, index);
  } else if (r == "mean") {
    Tensor cnt = maximum(incl ? add(n, num(1)) : n, num(1));
    gx = incl ? div(d, cnt) : mul(d, untouched);
    gs = gather(div(d, cnt), dim, index);
  } else if (r == "prod") {
    // Products "of the others" without dividing by zero: zeros are replaced by one where a
    // single zero is the one being differentiated.
    const Tensor x0 = eq(x, num(0));
    const Tensor xm = where(x0, num(1), x);
    gx = incl ? div(mul(d, scatter_reduce(xm, dim, index, s, "prod", true)), xm) : mul(d, untouched);
    const Tensor s0 = eq(s, num(0));
    const Tensor zeros_in_group =
        gather(scatter_add(zeros_of(x, d), dim, index, convert_element_type(s0, d.dtype())), dim, index);
    const Tensor single = logical_and(s0, eq(zeros_in_group, num(1)));
    const Tensor others = scatter_reduce(x, dim, index, where(single, num(1), s), "prod", incl);
    gs = where(single, gather(mul(d, others), dim, index),
               div(gather(mul(d, out), dim, index), where(s0, num(1), s)));
  } else {  // amax, amin: shared evenly among the elements equal to the result
    const Tensor self_hit = incl ? convert_element_type(eq(x, out), d.dtype()) : untouched;
    const Tensor src_hit = convert_element_type(eq(s, gather(out, dim, index)), d.dtype());
    const Tensor cnt = maximum(add(self_hit, scatter_add(zeros_of(x, d), dim, index, src_hit)), num(1));
    gx = div(mul(d, self_hit), cnt);
    gs = mul(gather(div(d, cnt), dim, index), src_hit);
  }
  return {g.needs(0) ? gx : Tensor(), Tensor(), g.needs(2) ? pad_to(gs, src) : Tensor()};
}

KILN_DERIVATIVE(index_select) {
  const Tensor &x = g.inputs[0], &index = g.inputs[1], &d = g.grads[0];
  if (x.dim() == 0) return {reshape(d, SymShape{}), Tensor()};
  const int64_t dim = ops::wrap_dim(g.args.i64(1), x.dim());
  TensorList idx(static_cast<size_t>(dim));
  idx.push_back(reshape(index, {-1}));
  return {index_put(zeros_of(x, d), idx, d, true), Tensor()};
}

KILN_DERIVATIVE(index_put) {
  const Tensor& d = g.grads[0];
  const TensorList& indices = g.args.tensors(1);
  const size_t nv = g.inputs.size() - 1;  // values come after self and the defined indices
  std::vector<Tensor> r(g.inputs.size());
  if (g.needs(0))
    r[0] = g.args.b(3) ? d : index_put(d, indices, zeros({}, d.dtype(), d.device()), false);
  if (g.needs(nv)) r[nv] = sum_to(index(d, indices), g.inputs[nv].sym_sizes());
  return r;
}

}  // namespace
}  // namespace kiln::autograd
