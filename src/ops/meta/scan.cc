// The meta function of the scan family (every SCAN op of ops.def with a dtype rule): the output
// has the input's shape and the op's dtype rule (cumsum and cumprod accumulate integers and bool
// into int64 as in PyTorch, unless dtype= says otherwise); ops with a second output (cummax,
// cummin) return the int64 indices of the running extreme there.
#include "ops/family.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

template <class V>
std::vector<TensorSpec> scan_meta(const Args& boxed) {
  const V a{boxed};
  const Tensor& x = a.self();
  wrap_dim(a.dim(), x.dim());
  std::vector<TensorSpec> out{spec_like(x, rule_dtype(kOpDTypeRule[size_t(V::kOp)], x.dtype(), dtype_arg(a)))};
  static_assert(V::kNumOutputs == 1 || V::kNumOutputs == 2);
  if constexpr (V::kNumOutputs == 2) out.push_back(spec_like(x, kInt64));
  return out;
}

}  // namespace

KILN_FAMILY_META(SCAN, scan_meta);

}  // namespace kiln::ops
