// Reductions defined by other reductions.
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

// Number of elements each output of a reduction over `dims` combines.
SymInt reduced_count(const Tensor& x, const std::optional<std::vector<int64_t>>& dims) {
  SymInt n = 1;
  const SymShape s = x.sym_sizes();
  std::optional<std::vector<int64_t>> d = dims;
  if (d && d->empty()) d.reset();
  for (int64_t i : ops::wrap_dims(d, x.dim())) n = n * s[size_t(i)];
  return n;
}

KILN_DECOMP(mean) {
  const Tensor& x = a.tensor(0);
  auto dt = a.opt_dtype(3);
  DType out_dt = dt.value_or(x.dtype());
  KILN_CHECK_HINT(is_floating(out_dt), "convert it first, e.g. x.to(kFloat32), or pass dtype=",
                  "mean(): could not infer output dtype; the input dtype must be floating point, got ", name(out_dt));
  Tensor s = sum(x, a.opt_ints(1) ? IntList(*a.opt_ints(1)) : IntList(std::nullopt), a.b(2), out_dt);
  return {div(s, ops::scalar_to_tensor(Scalar(reduced_count(x, a.opt_ints(1)).hint())))};
}

KILN_DECOMP(any) {
  const Tensor& x = a.tensor(0);
  Tensor nz = ne(x, ops::scalar_to_tensor(Scalar(int64_t(0))));
  auto dims = a.opt_ints(1);
  return {gt(sum(nz, dims ? IntList(*dims) : IntList(std::nullopt), a.b(2)), ops::scalar_to_tensor(Scalar(int64_t(0))))};
}

KILN_DECOMP(all) {
  const Tensor& x = a.tensor(0);
  Tensor z = eq(x, ops::scalar_to_tensor(Scalar(int64_t(0))));
  auto dims = a.opt_ints(1);
  return {eq(sum(z, dims ? IntList(*dims) : IntList(std::nullopt), a.b(2)), ops::scalar_to_tensor(Scalar(int64_t(0))))};
}

}  // namespace
}  // namespace kiln::decomp
