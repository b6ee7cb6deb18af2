// cumsum and cumprod as a tile program: the input (converted to the output's dtype, contiguous)
// seen as [outer, n, inner], one program per line along n, which it walks BLOCK elements at a
// time: a block's scan plus the carried total of the blocks before. Floats accumulate in f64 and
// integers in i64 (wrapping), as the CPU's kernel; within a block the scan is a tree, so float
// sums round differently from the CPU's running sum, by far less than the output's precision.
#include <kiln/ops.h>

#include "core/tensor_impl.h"
#include "eager/tile/tiled.h"
#include "ops/args_gen.h"
#include "ops/meta/meta_util.h"

namespace kiln::eager::tiled {
namespace {

using ops::OpId;
constexpr int64_t kBlock = 256;

tile::Program build(OpId op, DType d) {
  tile::Builder b(std::string("eager_") + ops::op_info(op).name);
  const bool sum = op == OpId::cumsum;
  const DType acc = is_floating(d) ? kFloat64 : kInt64;
  const Scalar id = is_floating(d) ? Scalar(sum ? 0.0 : 1.0) : Scalar(int64_t(sum ? 0 : 1));
  tile::Val x = b.arg_ptr("x", d), out = b.arg_ptr("out", d);
  tile::Val n = b.arg_int("n", kInt64), inner = b.arg_int("inner", kInt64);
  const int64_t BLOCK = b.constexpr_int("BLOCK", kBlock);
  b.set_num_warps(4);
  tile::Val line = b.program_id(0).to(kInt64);
  tile::Val base = b.floor_divide(line, inner) * n * inner + line % inner;
  tile::Val init = b.constant(id, acc);
  b.for_loop(0, n, BLOCK, {init}, [&](tile::Val k0, const std::vector<tile::Val>& carried) {
    tile::Val k = k0 + b.arange(0, BLOCK).to(kInt64);
    tile::Val m = k < n;
    tile::Val at = base + k * inner;
    tile::Val v = b.where(m, b.cast(b.load(x + at, m), acc), b.constant(id, acc));
    tile::Val s = b.scan(sum ? tile::ScanKind::Cumsum : tile::ScanKind::Cumprod, v, 0);
    s = sum ? s + carried[0] : s * carried[0];
    b.store(out + at, b.cast(s, d), m);
    return std::vector<tile::Val>{sum ? carried[0] + b.sum(v, 0) : carried[0] * b.prod(v, 0)};
  });
  return b.finish();
}

}  // namespace

std::vector<Tensor> scan(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  KILN_CHECK(a.op == OpId::cumsum || a.op == OpId::cumprod, "internal: ", ops::op_info(a.op).name, " is not a tiled scan");
  const ops::args::cumsum c{a};  // (cumprod's arguments too)
  Tensor out = make_tensor(specs.at(0));
  if (out.numel() == 0) return {out};
  KILN_CHECK(out.dtype() != kBool, "internal: bool scan output");
  Tensor x = make_tensor(out.sizes(), out.dtype(), out.device());
  copy_into(x, c.self(), run);  // (converted and contiguous)
  const int64_t dim = x.dim() == 0 ? 0 : ops::wrap_dim(c.dim(), x.dim());
  int64_t n = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d == dim) n = x.size(d);
    else if (d > dim) inner *= x.size(d);
  }
  Launch l;
  l.key = std::string("scan.") + ops::op_info(a.op).name + "." + tile::short_name(out.dtype());
  l.build = [op = a.op, d = out.dtype()] { return build(op, d); };
  l.grid = out.numel() / n;
  l.args = {x, out, n, inner};
  run(l);
  return {out};
}

}  // namespace kiln::eager::tiled
