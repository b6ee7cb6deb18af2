// Indexing composites: advanced indexing (index), index_add, masked_select, take_along_dim.
#include <kiln/ops.h>

#include <algorithm>

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

KILN_DECOMP(index_add) {
  const Tensor& x = a.tensor(0);
  const Tensor& index = a.tensor(2);
  const Tensor& source = a.tensor(3);
  const Scalar alpha = a.scalar(4);
  ops::check_index_dtype(index, "index_add", true);
  KILN_CHECK(index.dim() <= 1, "index_add: the index must be 0-d or 1-d, got ", index.dim(), " dims");
  KILN_CHECK_HINT(source.dtype() == x.dtype(), "convert source with .to(self.dtype())", "index_add: source dtype ",
                  name(source.dtype()), " does not match self's ", name(x.dtype()));
  if (x.dim() == 0) return {index_add(reshape(x, {1}), 0, reshape(index, {1}), reshape(source, {1}), alpha).reshape({})};
  const int64_t d = ops::wrap_dim(a.i64(1), x.dim());
  SymShape want = x.sym_sizes();
  want[size_t(d)] = index.sym_numel();
  KILN_CHECK(source.sym_sizes() == want || (source.dim() == 0 && index.sym_numel() == 1 && x.dim() == 1),
             "index_add: source of shape ", shape_str(source.sym_sizes()), " should have shape ", shape_str(want));
  if (!index.is_fake() && index.numel() > 0)
    KILN_CHECK(amin(index).item<int64_t>() >= 0, "index_add: negative index ", amin(index).item<int64_t>());
  Tensor v = source;
  if (!(alpha == Scalar(int64_t(1)))) v = convert_element_type(mul(source, ops::scalar_to_tensor(alpha)), x.dtype());
  TensorList idx(static_cast<size_t>(d));
  idx.push_back(reshape(index, {-1}));
  return {index_put(x, idx, v, true)};
}

KILN_DECOMP(masked_select) {
  const Tensor& x = a.tensor(0);
  const Tensor& mask = a.tensor(1);
  KILN_CHECK_HINT(mask.dtype() == kBool, "compare first, e.g. x > 0", "masked_select: mask must be bool, got ",
                  name(mask.dtype()));
  const SymShape shape = ops::broadcast_shapes(x.sym_sizes(), mask.sym_sizes());
  Tensor xb = x.sym_sizes() == shape ? x : expand(x, shape);
  Tensor mb = mask.sym_sizes() == shape ? mask : expand(mask, shape);
  if (shape.empty()) return {index(reshape(xb, {1}), {reshape(mb, {1})})};
  return {index(xb, {mb})};
}

KILN_DECOMP(take_along_dim) {
  const Tensor& x = a.tensor(0);
  const Tensor& idx = a.tensor(1);
  ops::check_index_dtype(idx, "take_along_dim", false);
  auto dim = a.opt_i64(2);
  if (!dim) return {gather(reshape(x, {-1}), 0, reshape(idx, {-1}))};
  KILN_CHECK(x.dim() == idx.dim(), "take_along_dim: input and indices should have the same number of dims, got ",
             x.dim(), " and ", idx.dim());
  const int64_t d = ops::wrap_dim(*dim, x.dim());
  // Broadcast every dim but d.
  SymShape xs = x.sym_sizes(), is = idx.sym_sizes();
  SymShape xs1 = xs, is1 = is;
  if (x.dim() > 0) xs1[size_t(d)] = is1[size_t(d)] = 1;
  SymShape b = ops::broadcast_shapes(xs1, is1);
  SymShape xt = b, it = b;
  if (x.dim() > 0) {
    xt[size_t(d)] = xs[size_t(d)];
    it[size_t(d)] = is[size_t(d)];
  }
  return {gather(xs == xt ? x : expand(x, xt), d, is == it ? idx : expand(idx, it))};
}

// Source positions of a padded dim of size n: j in [-l, n + r) mapped by the mode. Circular, as
// PyTorch: negative pads crop first, and positive pads wrap around the cropped range [lo, hi).
std::vector<int64_t> pad_positions(int64_t n, int64_t l, int64_t r, const std::string& mode) {
  const int64_t lo = std::max<int64_t>(-l, 0), m = n - std::max<int64_t>(-r, 0) - lo;
  std::vector<int64_t> out;
  for (int64_t j = -l; j < n + r; ++j) {
    int64_t i = j;
    if (mode == "reflect") i = j < 0 ? -j : j >= n ? 2 * (n - 1) - j : j;
    else if (mode == "replicate") i = std::clamp<int64_t>(j, 0, n - 1);
    else i = lo + (((j - lo) % m) + m) % m;  // circular
    out.push_back(i);
  }
  return out;
}

KILN_DECOMP(pad) {
  const Tensor& x = a.tensor(0);
  const SymShape& pad = a.symints(1);
  const std::string& mode = a.str(2);
  if (mode == "constant") return {constant_pad(x, pad, a.opt_f64(3).value_or(0.0))};
  KILN_CHECK_HINT(mode == "reflect" || mode == "replicate" || mode == "circular",
                  "mode is one of constant, reflect, replicate, circular", "pad: unknown mode \"", mode, "\"");
  KILN_CHECK(!a.opt_f64(3) || *a.opt_f64(3) == 0.0, "pad: a fill value only applies to mode \"constant\"");
  KILN_CHECK(pad.size() % 2 == 0, "pad: the padding length must be even, got ", pad.size());
  KILN_CHECK(int64_t(pad.size() / 2) <= x.dim(), "pad: padding length ", pad.size(), " is too large for a ", x.dim(),
             "-d input");
  Tensor r = x;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = x.dim() - 1 - int64_t(i);
    const int64_t n = x.sym_size(d).value(), l = pad[2 * i].value(), rr = pad[2 * i + 1].value();
    if (l == 0 && rr == 0) continue;
    KILN_CHECK(n + l + rr >= 0, "pad: the padded size of dim ", d, " would be negative");
    if (mode == "reflect")
      KILN_CHECK(l < n && rr < n, "pad: reflect padding (", l, ", ", rr, ") must be smaller than the dim size ", n);
    else if (mode == "circular") {
      const int64_t m = n + std::min<int64_t>(l, 0) + std::min<int64_t>(rr, 0);  // wraps at most once around it
      KILN_CHECK(l <= m && rr <= m, "pad: circular padding (", l, ", ", rr, ") must be at most the size ", m,
                 " of dim ", d, " after cropping");
    } else
      KILN_CHECK(n > 0 || n + l + rr == 0, "pad: cannot replicate-pad an empty dim");
    r = index_select(r, d, tensor(pad_positions(n, l, rr, mode)));
  }
  return {r.is_same(x) ? view(x, x.sym_sizes()) : r};
}

}  // namespace
}  // namespace kiln::decomp
