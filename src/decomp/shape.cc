// Shape ops, decomposed into the view prims (and a copy where a view cannot express them).
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

KILN_DECOMP(clone) {
  const Tensor& x = a.tensor(0);
  return {convert_element_type(x, x.dtype())};  // always a fresh contiguous buffer
}

KILN_DECOMP(contiguous) {
  const Tensor& x = a.tensor(0);
  return {x.is_contiguous() ? x : clone(x)};
}

KILN_DECOMP(reshape) {
  const Tensor& x = a.tensor(0);
  SymShape sizes = ops::infer_size(a.symints(1), x.sym_numel());
  if (ops::view_strides(x.sym_sizes(), x.sym_strides(), sizes)) return {view(x, sizes)};
  return {view(clone(x), sizes)};
}

KILN_DECOMP(transpose) {
  const Tensor& x = a.tensor(0);
  const int64_t n = x.dim();
  if (n == 0) {
    ops::wrap_dim(a.i64(1), 0);
    ops::wrap_dim(a.i64(2), 0);
    return {view(x, SymShape{})};
  }
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
  std::swap(perm[size_t(ops::wrap_dim(a.i64(1), n))], perm[size_t(ops::wrap_dim(a.i64(2), n))]);
  return {permute(x, perm)};
}

KILN_DECOMP(t) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK_HINT(x.dim() <= 2, "use transpose(d0, d1) or mT for batches of matrices",
                  "t() expects a tensor with <= 2 dims, got ", x.dim());
  return {x.dim() < 2 ? view(x, x.sym_sizes()) : transpose(x, 0, 1)};
}

KILN_DECOMP(mT) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() >= 2, "mT expects a tensor with at least 2 dims, got ", x.dim());
  return {transpose(x, -2, -1)};
}

KILN_DECOMP(select) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "select: cannot select from a 0-d tensor");
  const int64_t dim = ops::wrap_dim(a.i64(1), x.dim());
  const SymInt n = x.sym_size(dim);
  SymInt i = a.symint(2);
  KILN_CHECK_HINT(i >= SymInt(0) - n && i < n, "valid indices are -size .. size-1", "select: index ", i.str(),
                  " is out of range for dimension ", dim, " of size ", n.str());
  if (i < 0) i = i + n;
  return {squeeze(slice(x, dim, i, i + 1), std::vector<int64_t>{dim})};
}

}  // namespace
}  // namespace kiln::decomp
