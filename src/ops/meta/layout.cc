// Meta functions of the layout prims that copy: cat, constant_pad, flip.
#include <kiln/ops.h>

#include "ops/dispatch.h"
#include "ops/meta/layout.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {

bool cat_skips(const Tensor& t) { return t.dim() == 1 && t.sym_size(0) == 0; }

namespace {

KILN_META(cat) {
  const TensorList& ts = a.tensors(0);
  KILN_CHECK(!ts.empty(), "cat: expected a non-empty list of tensors");
  const Tensor* ref = nullptr;
  for (const Tensor& t : ts) {
    KILN_CHECK_HINT(t.dim() > 0, "use stack() for 0-d tensors, or unsqueeze them first",
                    "cat: zero-dimensional tensors cannot be concatenated");
    if (!ref && !cat_skips(t)) ref = &t;
  }
  const DType dt = result_type(ts);
  if (!ref) return {spec_like(ts[0], ts[0].sym_sizes(), dt)};
  const int64_t dim = wrap_dim(a.i64(1), ref->dim());
  SymShape sizes = ref->sym_sizes();
  SymInt total = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    KILN_CHECK(t.device() == ref->device(), "cat: all tensors must be on the same device");
    if (cat_skips(t)) continue;
    KILN_CHECK(t.dim() == ref->dim(), "cat: tensors must have the same number of dims: tensor ", i, " has ", t.dim(),
               ", expected ", ref->dim());
    for (int64_t d = 0; d < t.dim(); ++d)
      KILN_CHECK_HINT(d == dim || t.sym_size(d) == sizes[size_t(d)], "only the concatenated dim may differ",
                      "cat: sizes of tensors must match except in dimension ", dim, ": expected size ",
                      sizes[size_t(d)].str(), " but got size ", t.sym_size(d).str(), " for tensor ", i, " at dim ", d);
    total = total + t.sym_size(dim);
  }
  sizes[size_t(dim)] = total;
  return {spec_like(*ref, sizes, dt)};
}

KILN_META(constant_pad) {
  const Tensor& x = a.tensor(0);
  const SymShape& pad = a.symints(1);
  KILN_CHECK(pad.size() % 2 == 0, "pad: the padding length must be even, got ", pad.size());
  KILN_CHECK(int64_t(pad.size() / 2) <= x.dim(), "pad: padding length ", pad.size(), " is too large for a ", x.dim(),
             "-d input (at most ", 2 * x.dim(), ")");
  SymShape sizes = x.sym_sizes();
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const size_t d = sizes.size() - 1 - i;  // pads list the last dim first
    SymInt n = sizes[d] + pad[2 * i] + pad[2 * i + 1];
    KILN_CHECK(n >= 0, "pad: the padded size of dim ", d, " would be negative (", n.str(), ")");
    sizes[d] = n;
  }
  if (is_integral(x.dtype())) integer_scalar("pad", "value", a.scalar(2), x.dtype());  // NaN, inf, out of range
  return {spec_like(x, sizes, x.dtype())};
}

KILN_META(flip) {
  const Tensor& x = a.tensor(0);
  wrap_dims(a.ints(1), x.dim());  // checks range and repeats
  return {spec_like(x, x.dtype())};
}

}  // namespace
}  // namespace kiln::ops
