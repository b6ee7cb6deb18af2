// Meta functions of the scan prims: cumsum, cumprod (same shape; integers and bool accumulate
// into int64 as in PyTorch, unless dtype= says otherwise) and cummax, cummin (values + int64
// indices).
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

std::vector<TensorSpec> cum_meta(const Args& a) {
  const Tensor& x = a.tensor(0);
  wrap_dim(a.i64(1), x.dim());
  DType dt = a.opt_dtype(2).value_or(is_integral(x.dtype(), true) ? kInt64 : x.dtype());
  return {spec_like(x, dt)};
}

std::vector<TensorSpec> cum_extreme_meta(const Args& a) {
  const Tensor& x = a.tensor(0);
  wrap_dim(a.i64(1), x.dim());
  return {spec_like(x, x.dtype()), spec_like(x, kInt64)};
}

}  // namespace

KILN_REGISTER(meta, cumsum, cum_meta);
KILN_REGISTER(meta, cumprod, cum_meta);
KILN_REGISTER(meta, cummax, cum_extreme_meta);
KILN_REGISTER(meta, cummin, cum_extreme_meta);

}  // namespace kiln::ops
