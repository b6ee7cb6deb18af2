// Indexing composites: advanced indexing (index), index_add, masked_select, take_along_dim.
#include <kiln/ops.h>

#include "ops/dispatch.h"
#include "ops/meta/indexing.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

// idx with negative entries wrapped into [0, n); out-of-range entries raise (eagerly; fake
// tensors cannot be checked).
Tensor wrapped_index(const Tensor& idx, const SymInt& n, const char* what) {
  Tensor i = idx.dtype() == kInt64 ? idx : convert_element_type(idx, kInt64);
  Tensor size = scalar_tensor(n.hint(), kInt64);
  if (!i.is_fake() && i.numel() > 0) {
    const int64_t lo = amin(i).item<int64_t>(), hi = amax(i).item<int64_t>();
    KILN_CHECK_HINT(lo >= -n.value() && hi < n.value(), "indices must be in [-size, size)", what, ": index ",
                    lo < -n.value() ? lo : hi, " is out of bounds for dimension with size ", n.value());
  }
  return where(lt(i, ops::scalar_to_tensor(Scalar(int64_t(0)))), add(i, size), i);
}

KILN_DECOMP(index) {
  const Tensor& x = a.tensor(0);
  std::vector<Tensor> idx = ops::expand_bool_indices(x, a.tensors(1));
  const SymShape xs = x.sym_sizes();
  const SymShape rs = ops::advanced_index_shape(xs, idx);
  std::vector<int64_t> pos;
  std::vector<Tensor> defined;
  for (size_t d = 0; d < idx.size(); ++d)
    if (idx[d].defined()) {
      pos.push_back(int64_t(d));
      defined.push_back(idx[d]);
    }
  if (pos.empty()) return {view(x, xs)};
  const SymShape bs = ops::broadcast_shapes(defined);
  // One linear index over the indexed dims (row-major), then a single index_select.
  Tensor lin;
  SymInt span = 1;
  for (size_t k = pos.size(); k-- > 0;) {
    const SymInt n = xs[size_t(pos[k])];
    Tensor w = wrapped_index(defined[k], n, "index");
    Tensor term = span == 1 ? w : mul(w, scalar_tensor(span.hint(), kInt64));
    lin = lin.defined() ? add(lin, term) : term;
    span = span * n;
  }
  lin = reshape(expand(lin, bs), {-1});
  const bool adjacent = pos.back() - pos.front() + 1 == int64_t(pos.size());
  Tensor y;
  int64_t at = 0;  // where the indexed dims sit in y
  if (adjacent) {
    at = pos.front();
    SymShape merged(xs.begin(), xs.begin() + at);
    merged.push_back(span);
    merged.insert(merged.end(), xs.begin() + pos.back() + 1, xs.end());
    y = pos.size() == 1 ? x : reshape(x, merged);
  } else {
    std::vector<int64_t> perm = pos;
    SymShape merged{span};
    for (int64_t d = 0; d < x.dim(); ++d)
      if (!idx[size_t(d)].defined()) {
        perm.push_back(d);
        merged.push_back(xs[size_t(d)]);
      }
    y = reshape(permute(x, perm), merged);
  }
  y = index_select(y, at, lin);
  return {reshape(y, rs)};
}

}  // namespace
}  // namespace kiln::decomp
