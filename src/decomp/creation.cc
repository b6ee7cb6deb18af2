// Creation ops, decomposed into the full / empty / iota / rand_* prims.
#include <cmath>

#include "ops/dispatch.h"

namespace kiln::decomp {
namespace {
using ops::Args;

KILN_DECOMP(zeros) { return {full(a.symints(0), 0, a.opt_dtype(1).value_or(default_float_dtype()), a.opt_device(2))}; }
KILN_DECOMP(ones) { return {full(a.symints(0), 1, a.opt_dtype(1).value_or(default_float_dtype()), a.opt_device(2))}; }
KILN_DECOMP(zeros_like) {
  const Tensor& x = a.tensor(0);
  return {full(x.sym_sizes(), 0, a.opt_dtype(1).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(ones_like) {
  const Tensor& x = a.tensor(0);
  return {full(x.sym_sizes(), 1, a.opt_dtype(1).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(full_like) {
  const Tensor& x = a.tensor(0);
  return {full(x.sym_sizes(), a.scalar(1), a.opt_dtype(2).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(empty_like) {
  const Tensor& x = a.tensor(0);
  return {empty(x.sym_sizes(), a.opt_dtype(1).value_or(x.dtype()), x.device())};
}

SymInt numel_of(const SymShape& s) {
  SymInt n = 1;
  for (auto& x : s) n = n * x;
  return n;
}

Tensor draw(bool normal, const SymShape& size, std::optional<DType> dtype, std::optional<Device> dev) {
  GeneratorState g = next_random_range(uint64_t(numel_of(size).hint()));
  const int64_t seed = int64_t(g.seed), offset = int64_t(g.offset);
  return normal ? rand_normal(size, seed, offset, dtype, dev) : rand_uniform(size, seed, offset, dtype, dev);
}

KILN_DECOMP(rand) { return {draw(false, a.symints(0), a.opt_dtype(1), a.opt_device(2))}; }
KILN_DECOMP(randn) { return {draw(true, a.symints(0), a.opt_dtype(1), a.opt_device(2))}; }
KILN_DECOMP(rand_like) {
  const Tensor& x = a.tensor(0);
  return {draw(false, x.sym_sizes(), a.opt_dtype(1).value_or(x.dtype()), x.device())};
}
KILN_DECOMP(randn_like) {
  const Tensor& x = a.tensor(0);
  return {draw(true, x.sym_sizes(), a.opt_dtype(1).value_or(x.dtype()), x.device())};
}

KILN_DECOMP(arange) {
  Scalar start = a.scalar(0), end = a.scalar(1), step = a.scalar(2);
  KILN_CHECK(step.to_double() != 0, "arange: step must be nonzero");
  const bool any_float = start.is_float() || end.is_float() || step.is_float();
  DType dt = a.opt_dtype(3).value_or(any_float ? default_float_dtype() : kInt64);
  double n = std::ceil((end.to_double() - start.to_double()) / step.to_double());
  KILN_CHECK_HINT(n >= 0, "the sign of step must take start towards end", "arange: upper bound and larger bound inconsistent with step sign (start ",
                  start, ", end ", end, ", step ", step, ")");
  return {iota(int64_t(n), start, step, dt, a.opt_device(4))};
}

}  // namespace
}  // namespace kiln::decomp
