// full and iota as tile programs. full is a conversion of its number into the new tensor (the
// pointwise kernel with one number operand); iota computes start + i * step per element, in f64
// for a float dtype or float numbers and in i64 otherwise, then converts, as the CPU does.
#include "core/tensor_impl.h"
#include "eager/tile/tiled.h"
#include "ops/args_gen.h"
#include "tile/builder.h"

namespace kiln::eager::tiled {
namespace {

constexpr int64_t kBlock = 1024;

tile::Program build_iota(DType out_dtype, bool real, bool wide) {
  tile::Builder b("eager_iota");
  const DType index = wide ? kInt64 : kInt32, math = real ? kFloat64 : kInt64;
  tile::Val out = b.arg_ptr("out", out_dtype);
  tile::Val n = b.arg_int("n", index);
  tile::Val start = real ? b.arg_float("start", kFloat64) : b.arg_int("start", kInt64);
  tile::Val step = real ? b.arg_float("step", kFloat64) : b.arg_int("step", kInt64);
  tile::Val i = flat_block(b, kBlock, wide);
  tile::Val v = start + b.cast(i, math) * step;
  b.store(out + i, b.cast(v, out_dtype), i < n);
  return b.finish();
}

}  // namespace

std::vector<Tensor> creation(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  Tensor out = make_tensor(specs.at(0));
  if (a.op == ops::OpId::empty || out.numel() == 0) return {out};
  if (a.op == ops::OpId::full) {
    copy_into(out, ops::scalar_to_tensor(ops::args::full{a}.fill_value()), run);
    return {out};
  }
  KILN_CHECK(a.op == ops::OpId::iota, "internal: ", ops::op_info(a.op).name, " is not a tiled creation op");
  const ops::args::iota r{a};
  const Scalar start = r.start(), step = r.step();
  const bool real = is_floating(out.dtype()) || start.is_float() || step.is_float();
  const int64_t n = out.numel();
  const bool wide = n > std::numeric_limits<int32_t>::max();
  Launch l;
  l.key = std::string("iota.") + tile::short_name(out.dtype()) + (real ? ".f64" : ".i64") + (wide ? ".i64" : ".i32");
  l.build = [d = out.dtype(), real, wide] { return build_iota(d, real, wide); };
  l.grid = (n + kBlock - 1) / kBlock;
  l.args = {out, n};
  if (real) l.args.insert(l.args.end(), {KernelArg(start.to_double()), KernelArg(step.to_double())});
  else l.args.insert(l.args.end(), {KernelArg(start.to_int()), KernelArg(step.to_int())});
  run(l);
  return {out};
}

}  // namespace kiln::eager::tiled
