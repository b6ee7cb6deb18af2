// Derivative formulas of cat, constant_pad and flip.
#include "autograd/derivatives/common.h"
#include "ops/meta/layout.h"
#include "ops/meta/meta_util.h"

namespace kiln::autograd {
namespace {

KILN_DERIVATIVE(cat) {
  const Tensor& d = g.grads[0];
  std::vector<Tensor> r;
  const int64_t dim = d.dim() > 0 ? ops::wrap_dim(g.args.i64(1), d.dim()) : 0;
  SymInt at = 0;
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor& t = g.inputs[i];
    if (ops::cat_skips(t)) {  // contributed nothing
      r.push_back(g.needs(i) ? zeros(t.sym_sizes(), t.dtype(), t.device()) : Tensor());
      continue;
    }
    const SymInt n = t.sym_size(dim);
    if (g.needs(i)) {
      Tensor gi = slice(d, dim, at, at + n);
      r.push_back(gi.dtype() == t.dtype() ? gi : convert_element_type(gi, t.dtype()));
    } else {
      r.emplace_back();
    }
    at = at + n;
  }
  return r;
}

KILN_DERIVATIVE(constant_pad) {
  SymShape pad = g.args.symints(1);
  for (auto& p : pad) p = SymInt(0) - p;  // padding undone by cropping, cropping by zero padding
  return {constant_pad(g.grads[0], pad, 0)};
}

KILN_DERIVATIVE(flip) { return {flip(g.grads[0], g.args.ints(1))}; }

}  // namespace
}  // namespace kiln::autograd
