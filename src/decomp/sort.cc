// Sorting and selection composites: argsort, kthvalue, median, searchsorted, bucketize.
#include <cmath>
#include <limits>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;
using ops::num;

KILN_DECOMP(argsort) {
  return {std::get<1>(sort(a.tensor(0), a.i64(1), a.b(2), a.b(3)))};
}

// Element `pos` of each line of the sorted values/indices along dim (dim kept when keepdim).
std::vector<Tensor> pick(const Tensor& v, const Tensor& i, int64_t dim, int64_t pos, bool keepdim) {
  if (v.dim() == 0) return {v, i};
  Tensor pv = slice(v, dim, pos, pos + 1), pi = slice(i, dim, pos, pos + 1);
  if (keepdim) return {pv, pi};
  return {squeeze(pv, {dim}), squeeze(pi, {dim})};
}

KILN_DECOMP(kthvalue) {
  const Tensor& x = a.tensor(0);
  const int64_t k = a.i64(1);
  const int64_t dim = ops::wrap_dim(a.i64(2), x.dim());
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  KILN_CHECK_HINT(k >= 1 && k <= n, "k counts from 1 (the smallest) to the size of the dim",
                  "kthvalue: k = ", k, " is out of range for dimension ", dim, " of size ", n);
  auto [v, i] = sort(x, dim);
  return pick(v, i, dim, k - 1, a.b(3));
}

// The lower median along dim; a line holding NaN gives NaN and the index of its first NaN
// (NaN sorts last, so it would otherwise hide above the median).
std::vector<Tensor> median_along(const Tensor& x, int64_t dim, bool keepdim) {
  const int64_t n = x.dim() == 0 ? 1 : x.size(dim);
  KILN_CHECK_HINT(n > 0, "reduce over a non-empty dim", "median: cannot take the median of an empty dimension ", dim);
  auto [v, i] = sort(x, dim);
  std::vector<Tensor> mid = pick(v, i, dim, (n - 1) / 2, keepdim);
  if (!is_floating(x.dtype())) return mid;
  Tensor nan_mask = isnan(x);
  Tensor has_nan = x.dim() == 0 ? nan_mask : gt(sum(nan_mask, {dim}, keepdim), num(0));
  Tensor first_nan = x.dim() == 0 ? zeros_like(mid[1]) : argmax(convert_element_type(nan_mask, kInt8), dim, keepdim);
  return {where(has_nan, num(std::numeric_limits<double>::quiet_NaN()), mid[0]), where(has_nan, first_nan, mid[1])};
}

KILN_DECOMP(median) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.sym_numel() != 0, "median: cannot take the median of an empty tensor");
  return {median_along(reshape(x, {-1}), 0, false)[0]};
}

KILN_DECOMP(median_dim) {
  const Tensor& x = a.tensor(0);
  return median_along(x, ops::wrap_dim(a.i64(1), x.dim()), a.b(2));
}

// s < v (right: s <= v) written as !(s >= v) (!(s > v)), PyTorch's binary-search test: a NaN
// value is above every element, so its insertion point is the end.
Tensor below(const Tensor& s, const Tensor& v, bool right) { return logical_not(right ? gt(s, v) : ge(s, v)); }

// For each value, the count of sequence elements below it (right: at or below it): the
// insertion point that keeps the sequence sorted. Compares all pairs, so it traces as plain ops.
Tensor insertion_points(const Tensor& seq, const Tensor& values, bool right, bool out_int32, const char* op) {
  KILN_CHECK(seq.dim() >= 1, op, ": the boundaries / sorted sequence must have at least 1 dim");
  Tensor cmp;
  if (seq.dim() == 1) {
    cmp = below(seq, unsqueeze(values, -1), right);
  } else {
    const SymShape ss = seq.sym_sizes(), vs = values.sym_sizes();
    KILN_CHECK_HINT(vs.size() == ss.size() && SymShape(ss.begin(), ss.end() - 1) == SymShape(vs.begin(), vs.end() - 1),
                    "pass a 1-d sorted sequence, or one whose leading dims equal the values' leading dims", op,
                    ": sorted_sequence ", shape_str(ss), " and values ", shape_str(vs),
                    " must have the same dims except the last");
    cmp = below(unsqueeze(seq, -2), unsqueeze(values, -1), right);
  }
  return sum(cmp, {-1}, false, out_int32 ? kInt32 : kInt64);
}

KILN_DECOMP(searchsorted) {
  return {insertion_points(a.tensor(0), a.tensor(1), a.b(2), a.b(3), "searchsorted")};
}

KILN_DECOMP(bucketize) {
  const Tensor& boundaries = a.tensor(1);
  KILN_CHECK(boundaries.dim() == 1, "bucketize: boundaries must be 1-d, got ", boundaries.dim(), " dims");
  return {insertion_points(boundaries, a.tensor(0), a.b(2), a.b(3), "bucketize")};
}

}  // namespace
}  // namespace kiln::decomp
