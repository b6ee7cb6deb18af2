// Meta functions of the sort prims: sort (values + int64 indices, same shape) and topk (the
// sorted dim becomes k).
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {

KILN_META(sort) {
  const Tensor& x = a.tensor(0);
  wrap_dim(a.i64(1), x.dim());
  return {spec_like(x, x.dtype()), spec_like(x, kInt64)};
}

KILN_META(topk) {
  const Tensor& x = a.tensor(0);
  const int64_t k = a.i64(1);
  const int64_t d = wrap_dim(a.i64(2), x.dim());
  SymShape shape = x.sym_sizes();
  const SymInt n = x.dim() == 0 ? SymInt(1) : shape[size_t(d)];
  KILN_CHECK_HINT(k >= 0 && SymInt(k) <= n, "k must be in [0, size of the dim]", "topk: k = ", k,
                  " is out of range for dimension ", d, " of size ", n.str());
  if (x.dim() > 0) shape[size_t(d)] = SymInt(k);
  return {spec_like(x, shape, x.dtype()), spec_like(x, shape, kInt64)};
}

}  // namespace kiln::ops
