// softmax, log_softmax and layer_norm as one program per row (instead of the five to eight
// kernels of their decompositions): the row, masked to its length, is held in registers, and
// its max / sums are block reductions. A row's length is a launch argument and the block its
// next power of two, so every length up to the same power of two runs one compiled program.
// Math in f32 (f64 for f64), as the CPU's kernels; the result is converted once.
#include <kiln/ops.h>

#include <bit>

#include "core/tensor_impl.h"
#include "eager/tile/tiled.h"
#include "ops/args_gen.h"
#include "ops/meta/meta_util.h"

namespace kiln::eager::tiled {
namespace {

using ops::OpId;
constexpr int64_t kMaxBlock = 16384;  // longer rows take the decomposition

int64_t block_for(int64_t n) { return std::max<int64_t>(16, int64_t(std::bit_ceil(uint64_t(n)))); }
// 8 warps for rows of 8192 measured fastest on the H200 (bench/gpu_tile.cc --sweep); fewer
// for short rows, so that every thread has work.
int warps_for(int64_t block) { return int(std::clamp<int64_t>(block / 512, 1, 8)); }
DType math_dtype(DType in, DType out) { return in == kFloat64 || out == kFloat64 ? kFloat64 : kFloat32; }

struct RowKernel {
  OpId op;
  DType in, out;
  int64_t block;
  bool weight, bias;
  std::string key() const {
    return std::string("rows.") + ops::op_info(op).name + "." + tile::short_name(in) + "." + tile::short_name(out) + ".b" +
           std::to_string(block) + (weight ? ".w" : "") + (bias ? ".b" : "");
  }
};

// Parameters: x, out, [weight], [bias], n (the row's length), [eps]. One program per row.
tile::Program build(const RowKernel& k) {
  tile::Builder b(std::string("eager_") + ops::op_info(k.op).name + "_rows");
  const DType acc = math_dtype(k.in, k.out);
  const bool norm = k.op == OpId::layer_norm;
  tile::Val x = b.arg_ptr("x", k.in), out = b.arg_ptr("out", k.out), w, bias;
  if (k.weight) w = b.arg_ptr("weight", k.in);
  if (k.bias) bias = b.arg_ptr("bias", k.in);
  tile::Val n = b.arg_int("n", kInt64);
  tile::Val eps = norm ? b.arg_float("eps", kFloat64) : tile::Val();
  const int64_t BLOCK = b.constexpr_int("BLOCK", k.block);
  b.set_num_warps(warps_for(k.block));
  tile::Val row = b.program_id(0).to(kInt64) * n;
  tile::Val offs = b.arange(0, BLOCK).to(kInt64);
  tile::Val mask = offs < n;
  tile::Val r;
  if (!norm) {
    tile::Val v = b.cast(b.cast(b.load(x + row + offs, mask), k.out), acc);  // (softmax's dtype= converts first)
    v = b.where(mask, v, b.constant(Scalar(-INFINITY), acc));
    tile::Val shifted = v - b.max(v, 0);
    tile::Val e = b.exp(shifted);
    tile::Val s = b.sum(e, 0);
    r = k.op == OpId::softmax ? e / s : shifted - b.log(s);
  } else {
    tile::Val v = b.cast(b.load(x + row + offs, mask, 0), acc);
    tile::Val nf = b.cast(n, acc);
    tile::Val d = b.where(mask, v - b.sum(v, 0) / nf, b.constant(Scalar(0.0), acc));
    r = d * b.rsqrt(b.sum(d * d, 0) / nf + b.cast(eps, acc));
    if (k.weight) r = r * b.cast(b.load(w + offs, mask), acc);
    if (k.bias) r = r + b.cast(b.load(bias + offs, mask), acc);
  }
  b.store(out + row + offs, b.cast(r, k.out), mask);
  return b.finish();
}

void launch(const RowKernel& k, int64_t rows, std::vector<KernelArg> args, const Runner& run) {
  Launch l;
  l.key = k.key();
  l.build = [k] { return build(k); };
  l.grid = rows;
  l.args = std::move(args);
  run(l);
}

bool float_dtype(DType d) { return d == kFloat32 || d == kFloat64 || d == kBFloat16 || d == kFloat16; }

}  // namespace

std::optional<std::vector<Tensor>> rows(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  if (a.op == OpId::softmax || a.op == OpId::log_softmax) {
    const ops::args::softmax s{a};  // (log_softmax's arguments are softmax's)
    const Tensor& x = s.self();
    const int64_t n = x.dim() == 0 ? 1 : x.size(-1);
    if ((x.dim() > 0 && ops::wrap_dim(s.dim(), x.dim()) != x.dim() - 1) || n > kMaxBlock || !float_dtype(x.dtype()) ||
        !float_dtype(specs.at(0).dtype))
      return std::nullopt;
    Tensor out = make_tensor(specs[0]);
    if (out.numel() == 0) return std::vector<Tensor>{out};
    const Tensor xc = x.contiguous();
    launch({a.op, x.dtype(), out.dtype(), block_for(n), false, false}, out.numel() / n, {xc, out, n}, run);
    return std::vector<Tensor>{out};
  }
  if (a.op == OpId::layer_norm) {
    const ops::args::layer_norm l{a};
    const Tensor& x = l.input();
    const Tensor w = l.weight(), bias = l.bias();
    int64_t n = 1;
    for (const SymInt& s : l.normalized_shape()) n *= s.value();
    if (n > kMaxBlock || n == 0 || !float_dtype(x.dtype()) || (w.defined() && w.dtype() != x.dtype()) ||
        (bias.defined() && bias.dtype() != x.dtype()))
      return std::nullopt;
    Tensor out = make_tensor(specs.at(0));
    if (out.numel() == 0) return std::vector<Tensor>{out};
    std::vector<KernelArg> args{x.contiguous(), out};
    if (w.defined()) args.emplace_back(w.contiguous());
    if (bias.defined()) args.emplace_back(bias.contiguous());
    args.emplace_back(n);
    args.emplace_back(l.eps());
    launch({a.op, x.dtype(), out.dtype(), block_for(n), w.defined(), bias.defined()}, out.numel() / n, std::move(args), run);
    return std::vector<Tensor>{out};
  }
  return std::nullopt;
}

}  // namespace kiln::eager::tiled
