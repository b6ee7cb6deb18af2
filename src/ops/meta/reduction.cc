// Meta functions of the reduction prims.
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

// sum and prod promote integers and bool to int64, as PyTorch does.
DType accumulate_dtype(DType t, std::optional<DType> requested) {
  if (requested) return *requested;
  return is_integral(t, true) ? kInt64 : t;
}

std::vector<TensorSpec> sum_prod_meta(const Args& a) {
  const Tensor& x = a.tensor(0);
  std::vector<int64_t> dims = wrap_dims(a.opt_ints(1), x.dim());
  if (a.opt_ints(1) && a.opt_ints(1)->empty()) dims = wrap_dims(std::nullopt, x.dim());  // dim=[] means all
  return {spec_like(x, reduced_shape(x.sym_sizes(), dims, a.b(2)), accumulate_dtype(x.dtype(), a.opt_dtype(3)))};
}

std::vector<TensorSpec> minmax_meta(const Args& a) {
  const Tensor& x = a.tensor(0);
  std::vector<int64_t> dims = wrap_dims(a.opt_ints(1), x.dim());
  if (a.opt_ints(1) && a.opt_ints(1)->empty()) dims = wrap_dims(std::nullopt, x.dim());
  const SymShape xs = x.sym_sizes();
  for (int64_t d : dims)
    KILN_CHECK_HINT(xs[size_t(d)] != 0, "reduce over non-empty dims, or use sum() which is defined on empty input",
                    op_info(a.op).name, ": cannot reduce over dimension ", d, " of size 0 (no identity)");
  if (dims.empty() || x.dim() == 0)
    KILN_CHECK(x.sym_numel() != 0, op_info(a.op).name, ": cannot reduce an empty tensor (no identity)");
  return {spec_like(x, reduced_shape(xs, dims, a.b(2)), x.dtype())};
}

std::vector<TensorSpec> arg_meta(const Args& a) {
  const Tensor& x = a.tensor(0);
  auto dim = a.opt_i64(1);
  if (!dim) {
    KILN_CHECK(x.sym_numel() != 0, op_info(a.op).name, ": cannot take the arg of an empty tensor");
    SymShape shape = a.b(2) ? SymShape(size_t(x.dim()), SymInt(1)) : SymShape{};
    return {spec_like(x, shape, kInt64)};
  }
  const int64_t d = wrap_dim(*dim, x.dim());
  if (x.dim() > 0)
    KILN_CHECK(x.sym_size(d) != 0, op_info(a.op).name, ": cannot reduce over dimension ", d, " of size 0");
  return {spec_like(x, reduced_shape(x.sym_sizes(), x.dim() ? std::vector<int64_t>{d} : std::vector<int64_t>{}, a.b(2)), kInt64)};
}

}  // namespace

KILN_REGISTER(meta, sum, sum_prod_meta);
KILN_REGISTER(meta, prod, sum_prod_meta);
KILN_REGISTER(meta, amax, minmax_meta);
KILN_REGISTER(meta, amin, minmax_meta);
KILN_REGISTER(meta, argmax, arg_meta);
KILN_REGISTER(meta, argmin, arg_meta);

}  // namespace kiln::ops
