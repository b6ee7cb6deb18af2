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
    const int64_t d = wrap_dim(*a.opt_i64(4), x.dim());  // checks the range
    // As PyTorch: a zero-size dim other than dim leaves slices of no elements, whose uniqueness is undefined.
    int64_t zero_dims = 0;
    for (int64_t i = 0; i < x.dim(); ++i) zero_dims += x.size(i) == 0;
    KILN_CHECK(zero_dims == 0 || (zero_dims == 1 && x.size(d) == 0), "unique: the input ", shape_str(x.sym_sizes()),
               " has a zero-size dim other than dim ", d, ", so unique along dim ", d, " cannot be applied");
    SymShape s = x.sym_sizes();
    s[size_t(d)] = SymInt(0);
    return {spec_like(x, s, x.dtype()), spec_like(x, SymShape{SymInt(0)}, kInt64),
            spec_like(x, SymShape{SymInt(0)}, kInt64)};
  }
  return {spec_like(x, SymShape{SymInt(0)}, x.dtype()), spec_like(x, SymShape{SymInt(0)}, kInt64),
          spec_like(x, SymShape{SymInt(0)}, kInt64)};
}

}  // namespace
}  // namespace kiln::ops
