// sum, prod, amax and amin as tile programs. The input's dims split into kept dims (one output
// element each, in order) and reduced dims, each group collapsed. A program owns XBLOCK outputs
// and walks the reduced elements RBLOCK at a time, carrying a block of partial results that it
// reduces at the end. The block is laid out so that the input's contiguous dim, if any, runs
// along the block's last axis (loads coalesce): "rows" reduce along the last axis (a contiguous
// reduced dim), "cols" along the first (a contiguous kept dim: column sums).
#include <kiln/ops.h>

#include <cmath>
#include <limits>

#include "core/tensor_impl.h"
#include "eager/tile/tiled.h"
#include "ops/args_gen.h"
#include "ops/meta/meta_util.h"
#include "tile/builder.h"

namespace kiln::eager::tiled {
namespace {

using ops::OpId;

struct ReduceKernel {
  OpId op;
  DType in, out, acc;
  int keep_rank, red_rank;
  bool rows;  // reduce along the block's last axis
  int64_t xblock, rblock;
  bool wide;

  std::string key() const {
    return std::string("reduce.") + ops::op_info(op).name + "." + tile::short_name(in) + "." + tile::short_name(out) + "." +
           tile::short_name(acc) + ".k" + std::to_string(keep_rank) + ".r" + std::to_string(red_rank) +
           (rows ? ".rows" : ".cols") + ".x" + std::to_string(xblock) + ".b" + std::to_string(rblock) +
           (wide ? ".i64" : ".i32");
  }
};

tile::ReduceKind kind_of(OpId op) {
  switch (op) {
    case OpId::sum: return tile::ReduceKind::Sum;
    case OpId::prod: return tile::ReduceKind::Prod;
    case OpId::amax: return tile::ReduceKind::Max;
    default: return tile::ReduceKind::Min;
  }
}

// The reduction's identity in the accumulator's dtype.
Scalar identity(OpId op, DType acc) {
  if (op == OpId::sum) return is_floating(acc) ? Scalar(0.0) : Scalar(int64_t(0));
  if (op == OpId::prod) return is_floating(acc) ? Scalar(1.0) : Scalar(int64_t(1));
  const bool max = op == OpId::amax;
  if (is_floating(acc)) return Scalar(max ? -INFINITY : INFINITY);
  if (acc == kInt64) return Scalar(max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
  return Scalar(int64_t(max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max()));
}

// Floats accumulate in f32 (f64 for f64); integers in their own width (at least 32 bits), so a
// sum wraps as the CPU's does; bool extrema in i32.
DType accumulator(OpId op, DType in, DType out) {
  if (op == OpId::argmax || op == OpId::argmin) return in == kFloat64 ? kFloat64 : is_floating(in) ? kFloat32 : in == kInt64 ? kInt64 : kInt32;
  const DType d = op == OpId::sum || op == OpId::prod ? out : in;
  if (d == kFloat64) return kFloat64;
  if (is_floating(d)) return kFloat32;
  return d == kInt64 ? kInt64 : kInt32;
}

// argmax / argmin: each lane of the block carries the best value it has seen and its index
// (the first one: a later equal value does not replace it; NaN counts as the extreme, the first
// NaN stays); then the lanes meet: the smallest index among the NaN lanes, else among the lanes
// holding the extreme. An index of `none` marks a lane that has seen nothing.
template <class Offset>
void store_arg_extreme(tile::Builder& b, const ReduceKernel& k, tile::Val x, tile::Val out, tile::Val o, tile::Val o_mask,
                       tile::Val o_mask2, tile::Val o_off, tile::Val n_red, const std::vector<int64_t>& shape, int red_axis,
                       const Offset& red_offset) {
  const DType index = k.wide ? kInt64 : kInt32;
  const bool is_max = k.op == OpId::argmax, real = is_floating(k.acc);
  const Scalar none = k.wide ? Scalar(std::numeric_limits<int64_t>::max()) : Scalar(int64_t(std::numeric_limits<int32_t>::max()));
  // (red_axis is where a 1-D block of the reduced dim is expanded: the reduced axis is the other)
  const int axis = 1 - red_axis;
  const int64_t RBLOCK = shape[size_t(axis)];
  tile::Val init_v = b.full(shape, real ? Scalar(0.0) : Scalar(int64_t(0)), k.acc), init_i = b.full(shape, none, index);
  std::vector<tile::Val> best = b.for_loop(0, n_red, RBLOCK, {init_v, init_i}, [&](tile::Val r0, const std::vector<tile::Val>& c) {
    tile::Val r = r0 + b.arange(0, RBLOCK);
    if (k.wide) r = r.to(kInt64);
    tile::Val rb = r.expand_dims(red_axis);
    tile::Val m = o_mask2 & (r < n_red).expand_dims(red_axis);
    tile::Val v = b.cast(b.load(x + o_off + red_offset(r).expand_dims(red_axis), m), k.acc);
    const tile::Val &old_v = c[0], &old_i = c[1];
    tile::Val better = is_max ? v > old_v : v < old_v;
    if (real) better = better | (b.isnan(v) & !b.isnan(old_v));
    tile::Val take = m & ((old_i == b.constant(none, index)) | better);
    return std::vector<tile::Val>{b.where(take, v, old_v), b.where(take, rb, old_i)};
  });
  const tile::Val& val = best[0];
  const tile::Val& idx = best[1];
  tile::Val seen = idx != b.constant(none, index);
  tile::Val pick;
  if (real) {
    tile::Val nan = b.isnan(val) & seen;
    tile::Val nan_idx = b.min(b.where(nan, idx, b.constant(none, index)), axis);
    tile::Val plain = b.where(b.isnan(val), b.constant(Scalar(is_max ? -INFINITY : INFINITY), k.acc), val);
    tile::Val ext = is_max ? b.max(b.where(seen, plain, b.constant(Scalar(-INFINITY), k.acc)), axis)
                           : b.min(b.where(seen, plain, b.constant(Scalar(INFINITY), k.acc)), axis);
    tile::Val eq_idx = b.min(b.where(seen & (plain == ext.expand_dims(axis)), idx, b.constant(none, index)), axis);
    pick = b.where(nan_idx != b.constant(none, index), nan_idx, eq_idx);
  } else {
    // Unseen lanes hold the extreme's identity, so they never win.
    tile::Val lanes = b.where(seen, val, b.constant(identity(is_max ? OpId::amax : OpId::amin, k.acc), k.acc));
    tile::Val ext = is_max ? b.max(lanes, axis) : b.min(lanes, axis);
    pick = b.min(b.where(seen & (lanes == ext.expand_dims(axis)), idx, b.constant(none, index)), axis);
  }
  b.store(out + o, b.cast(pick, kInt64), o_mask);
}

tile::Program build(const ReduceKernel& k) {
  tile::Builder b(std::string("eager_") + ops::op_info(k.op).name);
  const DType index = k.wide ? kInt64 : kInt32;
  tile::Val x = b.arg_ptr("x", k.in), out = b.arg_ptr("out", k.out);
  tile::Val n_out = b.arg_int("n_out", index), n_red = b.arg_int("n_red", index);
  auto ints = [&](const std::string& name, int from, int to) { return int_args(b, name, from, to, index); };
  const std::vector<tile::Val> keep_size = ints("keep_size", 1, k.keep_rank), keep_stride = ints("keep_stride", 0, k.keep_rank);
  const std::vector<tile::Val> red_size = ints("red_size", 1, k.red_rank), red_stride = ints("red_stride", 0, k.red_rank);
  const int64_t XBLOCK = b.constexpr_int("XBLOCK", k.xblock), RBLOCK = b.constexpr_int("RBLOCK", k.rblock);
  b.set_num_warps(4);

  // The offset of linear index `i` over dims of `sizes` and `strides`.
  auto offset = [&](tile::Val i, const std::vector<tile::Val>& sizes, const std::vector<tile::Val>& strides) {
    return offset_of(coordinates(b, i, sizes), strides);
  };
  const int out_axis = k.rows ? 1 : 0, red_axis = k.rows ? 0 : 1;  // where each 1-D block is expanded
  tile::Val pid = b.program_id(0);
  if (k.wide) pid = pid.to(kInt64);
  tile::Val o = pid * XBLOCK + b.arange(0, XBLOCK);
  tile::Val o_mask = o < n_out;
  tile::Val o_off = offset(o, keep_size, keep_stride).expand_dims(out_axis);
  tile::Val o_mask2 = o_mask.expand_dims(out_axis);
  const std::vector<int64_t> shape = k.rows ? std::vector<int64_t>{XBLOCK, RBLOCK} : std::vector<int64_t>{RBLOCK, XBLOCK};
  if (k.op == OpId::argmax || k.op == OpId::argmin) {
    store_arg_extreme(b, k, x, out, o, o_mask, o_mask2, o_off, n_red, shape, red_axis,
                      [&](tile::Val r) { return offset(r, red_size, red_stride); });
    return b.finish();
  }
  const Scalar id = identity(k.op, k.acc);
  tile::Val init = b.full(shape, id, k.acc);
  tile::Val acc = b.for_loop(0, n_red, RBLOCK, {init}, [&](tile::Val r0, const std::vector<tile::Val>& carried) {
    tile::Val r = r0 + b.arange(0, RBLOCK);
    tile::Val m = o_mask2 & (r < n_red).expand_dims(red_axis);
    tile::Val v = b.load(x + o_off + offset(r, red_size, red_stride).expand_dims(red_axis), m);
    v = b.cast(b.cast(v, k.out == kBool ? k.in : k.out), k.acc);  // sum and prod: converted to the result's dtype first
    v = b.where(m, v, b.constant(id, k.acc));
    const tile::Val& a = carried[0];
    switch (k.op) {
      case OpId::sum: return std::vector<tile::Val>{a + v};
      case OpId::prod: return std::vector<tile::Val>{a * v};
      case OpId::amax: return std::vector<tile::Val>{b.maximum(a, v)};
      default: return std::vector<tile::Val>{b.minimum(a, v)};
    }
  })[0];
  tile::Val res = b.reduce(kind_of(k.op), acc, k.rows ? 1 : 0);
  b.store(out + o, b.cast(res, k.out), o_mask);
  return b.finish();
}

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

std::vector<Tensor> reduction(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  Tensor out = make_tensor(specs.at(0));
  const bool arg = a.op == OpId::argmax || a.op == OpId::argmin;
  const Tensor& x = a.tensor(0);
  std::optional<std::vector<int64_t>> dim;  // none: every dim
  if (arg) {
    if (const auto d = ops::args::argmax{a}.dim()) dim = std::vector<int64_t>{*d};
  } else {
    dim = ops::args::amax{a}.dim();  // (sum's, prod's and amin's first arguments too)
    if (dim && dim->empty()) dim.reset();
  }
  const std::vector<int64_t> dims = ops::wrap_dims(dim, x.dim());
  Shape keep_sizes, keep_strides, red_sizes, red_strides;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), d) != dims.end();
    (reduced ? red_sizes : keep_sizes).push_back(x.sizes()[size_t(d)]);
    (reduced ? red_strides : keep_strides).push_back(x.strides()[size_t(d)]);
  }
  const Collapsed keep = collapse(keep_sizes, {keep_strides}), red = collapse(red_sizes, {red_strides});
  const int64_t n_out = out.numel(), n_red = x.numel() / std::max<int64_t>(n_out, 1);
  if (n_out == 0) return {out};

  ReduceKernel k{a.op, x.dtype(), out.dtype(), accumulator(a.op, x.dtype(), out.dtype()), int(keep.sizes.size()),
                 int(red.sizes.size()), true, 1, 1, false};
  const bool keep_contiguous = keep.strides[0].back() == 1 && keep.sizes.back() > 1;
  const bool red_contiguous = red.strides[0].back() == 1 && red.sizes.back() > 1;
  k.rows = red_contiguous || !keep_contiguous;
  if (k.rows) {
    k.rblock = std::clamp<int64_t>(pow2_at_least(n_red), 16, 1024);
    k.xblock = std::min<int64_t>(1024 / k.rblock, pow2_at_least(n_out));
  } else {
    k.xblock = 64;
    k.rblock = 16;
  }
  const int64_t most = std::numeric_limits<int32_t>::max();
  k.wide = reach(keep.sizes, keep.strides[0]) + reach(red.sizes, red.strides[0]) > most || x.numel() > most;

  Launch l;
  l.args = {x, out, n_out, std::max<int64_t>(n_red, 0)};
  for (const Collapsed* c : {&keep, &red}) {
    for (size_t d = 1; d < c->sizes.size(); ++d) l.args.emplace_back(c->sizes[d]);
    for (int64_t s : c->strides[0]) l.args.emplace_back(s);
  }
  l.key = k.key();
  l.build = [k] { return build(k); };
  l.grid = (n_out + k.xblock - 1) / k.xblock;
  run(l);
  return {out};
}

}  // namespace kiln::eager::tiled
