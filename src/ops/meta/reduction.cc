// The meta function of the reduction family (every REDUCTION op of ops.def with a dtype rule):
// `dim` (a list, or one dim for the arg reductions; None or [] means all) is reduced, kept as size
// 1 with keepdim, and the output dtype is the op's dtype rule (sum and prod widen integers to
// int64 unless dtype= says otherwise, as PyTorch).
#include "ops/family.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

std::vector<int64_t> reduced_dims(const std::optional<std::vector<int64_t>>& dim, int64_t ndim) {
  return dim && !dim->empty() ? wrap_dims(dim, ndim) : wrap_dims(std::nullopt, ndim);
}
std::vector<int64_t> reduced_dims(std::optional<int64_t> dim, int64_t ndim) {
  return dim ? wrap_dims(std::vector<int64_t>{*dim}, ndim) : wrap_dims(std::nullopt, ndim);
}

template <class V>
std::vector<TensorSpec> reduction_meta(const Args& boxed) {
  constexpr OpId op = V::kOp;
  const V a{boxed};
  const Tensor& x = a.self();
  const std::vector<int64_t> dims = reduced_dims(a.dim(), x.dim());
  const SymShape xs = x.sym_sizes();
  // Only sum and prod have an identity: the others cannot reduce an empty dim.
  if constexpr (op == OpId::argmax || op == OpId::argmin) {
    if (!a.dim()) KILN_CHECK(x.sym_numel() != 0, op_info(op).name, ": cannot take the arg of an empty tensor");
    else if (x.dim() > 0)
      KILN_CHECK(xs[size_t(dims[0])] != 0, op_info(op).name, ": cannot reduce over dimension ", dims[0], " of size 0");
  } else if constexpr (op != OpId::sum && op != OpId::prod) {
    for (int64_t d : dims)
      KILN_CHECK_HINT(xs[size_t(d)] != 0, "reduce over non-empty dims, or use sum() which is defined on empty input",
                      op_info(op).name, ": cannot reduce over dimension ", d, " of size 0 (no identity)");
    if (dims.empty() || x.dim() == 0)
      KILN_CHECK(x.sym_numel() != 0, op_info(op).name, ": cannot reduce an empty tensor (no identity)");
  }
  const DType dt = rule_dtype(kOpDTypeRule[size_t(op)], x.dtype(), dtype_arg(a));
  return {spec_like(x, reduced_shape(xs, dims, a.keepdim()), dt)};
}

}  // namespace

KILN_FAMILY_META(REDUCTION, reduction_meta);

}  // namespace kiln::ops
