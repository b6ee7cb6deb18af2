// Meta functions of the data-dependent prims (nonzero, unique): their output shapes depend on
// the values, so they cannot run on fake tensors (tracing breaks the graph there). For real
// tensors the meta only gives dtypes and device; the kernel decides the sizes.
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

void check_not_fake(const Tensor& x, const char* what) {
  KILN_CHECK_HINT(!x.is_fake(), "compute it eagerly outside the traced region, or use a fixed-size alternative",
                  what, " has a data-dependent output shape and cannot run on fake (traced) tensors");
}

KILN_META(nonzero) {
  const Tensor& x = a.tensor(0);
  check_not_fake(x, "nonzero");
  return {spec_like(x, SymShape{SymInt(0), SymInt(x.dim())}, kInt64)};
}

KILN_META(unique) {
  const Tensor& x = a.tensor(0);
  check_not_fake(x, "unique");
  if (!a.is_none(4)) {  // unique slices along dim: the output keeps x's rank
    KILN_CHECK(x.dim() > 0, "unique: dim given for a 0-d tensor");
    wrap_dim(*a.opt_i64(4), x.dim());  // checks the range
    SymShape s = x.sym_sizes();
    s[size_t(wrap_dim(*a.opt_i64(4), x.dim()))] = SymInt(0);
    return {spec_like(x, s, x.dtype()), spec_like(x, SymShape{SymInt(0)}, kInt64),
            spec_like(x, SymShape{SymInt(0)}, kInt64)};
  }
  return {spec_like(x, SymShape{SymInt(0)}, x.dtype()), spec_like(x, SymShape{SymInt(0)}, kInt64),
          spec_like(x, SymShape{SymInt(0)}, kInt64)};
}

}  // namespace
}  // namespace kiln::ops
