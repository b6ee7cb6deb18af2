// Meta functions of the creation prims.
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {
namespace {

TensorSpec fresh(const SymShape& size, DType dt, std::optional<Device> dev) {
  for (auto& s : size) KILN_CHECK(s >= 0, "negative dimension ", s.str(), " in size ", shape_str(size));
  TensorSpec s;
  s.sizes = size;
  s.dtype = dt;
  s.device = dev.value_or(kCPU);
  return s;
}

KILN_META(full) {
  Scalar v = a.scalar(1);
  DType inferred = v.is_float() ? default_float_dtype() : v.dtype();
  const DType dt = a.opt_dtype(2).value_or(inferred);
  if (is_integral(dt)) integer_scalar("full", "fill_value", v, dt);  // NaN, inf, out of range: an error
  return {fresh(a.symints(0), dt, a.opt_device(3))};
}

KILN_META(empty) { return {fresh(a.symints(0), a.opt_dtype(1).value_or(default_float_dtype()), a.opt_device(2))}; }

KILN_META(iota) { return {fresh({a.symint(0)}, a.dtype(3), a.opt_device(4))}; }

std::vector<TensorSpec> random_meta(const Args& a) {
  DType dt = a.opt_dtype(3).value_or(default_float_dtype());
  KILN_CHECK(is_floating(dt), op_info(a.op).name, " produces floating point values, not ", name(dt));
  return {fresh(a.symints(0), dt, a.opt_device(4))};
}
KILN_REGISTER(meta, rand_uniform, random_meta);
KILN_REGISTER(meta, rand_normal, random_meta);

}  // namespace
}  // namespace kiln::ops
