// max-autotune's kernel tuning (autotune.h): candidate block sizes per kernel, timed by tile::tune.
#include "inductor/autotune.h"

#include <kiln/log.h>
#include <kiln/ops.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>

#include "core/tensor_impl.h"
#include "inductor/index_error.h"
#include "ops/dispatch.h"
#include "tile/autotune.h"
#include "tile/builder.h"
#include "tile/cpu/kernel.h"

namespace kiln::inductor {
namespace {

// The block sizes a kernel may be emitted with; more elements per block than this makes the C
// backend's fixed-size block arrays too large for the stack and the cache.
constexpr int64_t kMaxBlockElements = 16384;

// Each size symbol's hint (the size the graph was traced with).
std::map<std::string, int64_t> hints(const Program& p) {
  std::map<std::string, int64_t> env;
  auto add = [&](const SymInt& s) {
    if (s.is_symbolic() && s.expr()->kind == sym::Kind::Symbol) env[s.expr()->name] = s.hint();
  };
  for (const graph::Value* v : p.graph->inputs())
    for (const SymInt& s : v->spec.sizes) add(s);
  for (const Buffer& b : p.buffers)
    for (const SymInt& s : b.sizes) add(s);
  return env;
}

// A scratch tensor covering every element buffer b addresses at the hinted sizes, filled with
// fixed pseudo-random values in [-1, 1) (its own generator: the user's random stream is untouched).
Tensor scratch(const Buffer& b) {
  if (b.kind == BufferKind::Constant) return b.literal;
  int64_t extent = 1;
  for (size_t d = 0; d < b.sizes.size(); ++d) {
    const int64_t n = b.sizes[d].hint();
    if (n == 0) return Tensor();
    extent += (n - 1) * std::max<int64_t>(b.strides[d].hint(), 0);
  }
  Tensor t = make_tensor({extent}, kFloat32);
  uint32_t state = 12345;
  float* x = t.data<float>();
  for (int64_t i = 0; i < extent; ++i) {
    state = state * 1664525u + 1013904223u;
    x[i] = float(state >> 8) / float(1 << 23) - 1.0f;
  }
  return b.dtype == kFloat32 ? t : t.to(b.dtype);
}

std::string blocks_str(const BlockSizes& b) {
  std::string s;
  for (const auto& [name, v] : b) s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(v);
  return s;
}

ExprPtr cdiv(const ExprPtr& n, int64_t block) {
  return sym::floordiv(sym::add(n, sym::constant(block - 1)), sym::constant(block));
}

}  // namespace

// Program p computes row tile p / cdiv(N, BN), column tile p % cdiv(N, BN), K in steps of BK.
tile::Program tile_matmul(const std::string& name, int64_t bm, int64_t bn, int64_t bk) {
  using tile::Val;
  tile::Builder b(name);
  Val out = b.arg_ptr("out", kFloat32), a = b.arg_ptr("a", kFloat32), w = b.arg_ptr("b", kFloat32);
  Val M = b.arg_int("M", kInt64), N = b.arg_int("N", kInt64), K = b.arg_int("K", kInt64);
  Val sam = b.arg_int("stride_am", kInt64), sak = b.arg_int("stride_ak", kInt64);
  Val sbk = b.arg_int("stride_bk", kInt64), sbn = b.arg_int("stride_bn", kInt64);
  const int64_t BM = b.constexpr_int("BM", bm), BN = b.constexpr_int("BN", bn), BK = b.constexpr_int("BK", bk);
  Val pid = b.program_id(0).to(kInt64), tiles_n = b.cdiv(N, BN);
  Val rm = (b.floor_divide(pid, tiles_n) * BM + b.arange(0, BM).to(kInt64)).expand_dims(1);  // [BM, 1]
  Val rn = ((pid % tiles_n) * BN + b.arange(0, BN).to(kInt64)).expand_dims(0);               // [1, BN]
  Val rk = b.arange(0, BK).to(kInt64);
  Val acc = b.for_loop(0, K, BK, {b.zeros({BM, BN})}, [&](Val k, const std::vector<Val>& carried) {
    Val ka = k.to(kInt64) + rk;
    Val at = b.load(a + rm * sam + ka.expand_dims(0) * sak, (rm < M) & (ka.expand_dims(0) < K), 0.0);
    Val bt = b.load(w + ka.expand_dims(1) * sbk + rn * sbn, (ka.expand_dims(1) < K) & (rn < N), 0.0);
    return std::vector<Val>{b.dot(at, bt, carried[0])};
  })[0];
  b.store(out + rm * N + rn, acc, (rm < M) & (rn < N));
  return b.finish();
}

BlockSizes tune_blocks(const Program& p, const Node& n) {
  GeneratedKernel base = emit_tile(p, n);
  for (const KernelArg& a : base.args) {
    if (a.buffer == kIndexErrorArg) return {};  // (timing it on scratch indices would only report errors)
    if (a.buffer >= 0 && !is_floating(p.buffers[size_t(a.buffer)].dtype) &&
        std::find(n.outputs.begin(), n.outputs.end(), a.buffer) == n.outputs.end())
      return {};
  }
  BlockSizes chosen;
  for (const auto& [name, value] : base.program.meta.constexprs)
    if (name == "XBLOCK" || name == "YBLOCK" || name == "RBLOCK") chosen[name] = value.to_int();
  if (chosen.empty()) return {};
  auto elements = [](const BlockSizes& b) {
    int64_t e = 1;
    for (const auto& [_, v] : b) e *= v;
    return e;
  };
  // The candidates: the emitter's choice first, then each block size scaled alone; a candidate
  // the emitter turns into an already listed program (a persistent row's RBLOCK) is dropped.
  std::vector<BlockSizes> blocks = {chosen};
  std::vector<GeneratedKernel> kernels;
  std::set<std::string> seen = {tile::print(base.program, {.origins = false})};
  kernels.push_back(std::move(base));
  for (const auto& [name, value] : chosen)
    for (int64_t scaled : {value / 4, value / 2, value * 2, value * 4}) {
      BlockSizes b = chosen;
      b[name] = scaled;
      if (scaled < 1 || elements(b) > kMaxBlockElements) continue;
      GeneratedKernel k = emit_tile(p, n, b);
      if (!seen.insert(tile::print(k.program, {.origins = false})).second) continue;
      blocks.push_back(b);
      kernels.push_back(std::move(k));
    }
  if (blocks.size() == 1) return {};

  // The launch arguments at the hinted sizes (outputs to scratch buffers too).
  const std::map<std::string, int64_t> env = hints(p);
  std::map<int, Tensor> buffers;
  std::string key;
  for (const KernelArg& a : kernels[0].args) {
    if (a.buffer < 0) {
      key += (key.empty() ? "" : ", ") + sym::str(a.size) + "=" + std::to_string(sym::evaluate(a.size, env));
    } else if (!buffers.count(a.buffer)) {
      Tensor t = scratch(p.buffers[size_t(a.buffer)]);
      if (!t.defined()) return {};  // an empty buffer: nothing to time
      buffers[a.buffer] = std::move(t);
    }
  }
  if (key.empty()) key = "static sizes";
  // The kernel's identity: its code without its names, so kernels of the same code (a model's
  // layers) at the same sizes are tuned once, the others taking the disk cache's choice.
  const std::string code = tile::cpu::code_text(kernels[0].program);
  std::vector<std::vector<tile::cpu::Arg>> args(kernels.size());
  std::vector<int64_t> grids;
  std::vector<tile::Config> configs;
  std::vector<tile::Program> programs;
  for (size_t i = 0; i < kernels.size(); ++i) {
    for (const KernelArg& a : kernels[i].args) {
      if (a.buffer >= 0) args[i].emplace_back(buffers.at(a.buffer));
      else args[i].emplace_back(sym::evaluate(a.size, env));
    }
    grids.push_back(sym::evaluate(kernels[i].grid, env));
    tile::Config c;
    for (const auto& [name, v] : blocks[i]) c.constexprs.push_back({name, Scalar(v)});
    configs.push_back(std::move(c));
    programs.push_back(std::move(kernels[i].program));
    programs.back().name += "_c" + std::to_string(i);  // (one group: an entry point each)
  }
  // Compiled (all candidates in one group) only when the tuner times them: not on a cache hit.
  std::optional<std::vector<tile::cpu::Kernel>> compiled;
  const size_t best = tile::tune(
      "inductor " + n.name, code, key, configs, [&](size_t i) {
        if (!compiled) compiled = tile::cpu::compile_group(std::move(programs));
        if (grids[i] > 0) (*compiled)[i].launch(tile::cpu::Grid(grids[i]), std::span<const tile::cpu::Arg>(args[i]));
      });
  KILN_LOG(autotune) << "inductor: " << n.name << ": " << blocks_str(blocks[best]) << " of " << blocks.size()
                     << " candidates (the emitter's own: " << blocks_str(chosen) << ")";
  return best == 0 ? BlockSizes() : blocks[best];
}

std::optional<GeneratedKernel> tune_matmul(const Program& p, const Node& n) {
  if (!n.call || n.call->op != ops::OpId::matmul || n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  const Buffer& A = p.buffers[size_t(n.inputs[0])];
  const Buffer& B = p.buffers[size_t(n.inputs[1])];
  const Buffer& C = p.buffers[size_t(n.outputs[0])];
  for (const Buffer* x : {&A, &B, &C})
    if (x->dtype != kFloat32 || x->sizes.size() != 2) return std::nullopt;
  if (!sym::statically_known_equal(C.strides[1], SymInt(1)) || !sym::statically_known_equal(C.strides[0], C.sizes[1]))
    return std::nullopt;
  // Config 0 is BLAS; the others are the generated kernel's block sizes (BM, BN, BK).
  const std::vector<std::array<int64_t, 3>> tiles = {{16, 64, 64}, {32, 32, 32}, {32, 64, 16}, {64, 64, 32}};
  std::vector<tile::Config> configs = {tile::Config({{"BLAS", Scalar(int64_t(1))}})};
  std::vector<tile::Program> programs;
  for (const auto& [bm, bn, bk] : tiles) {
    configs.push_back(tile::Config({{"BM", Scalar(bm)}, {"BN", Scalar(bn)}, {"BK", Scalar(bk)}}));
    programs.push_back(tile_matmul(n.name + "_c" + std::to_string(programs.size()), bm, bn, bk));
  }
  const ExprPtr M = A.sizes[0].as_expr(), K = A.sizes[1].as_expr(), N = B.sizes[1].as_expr();
  const std::map<std::string, int64_t> env = hints(p);
  const int64_t m = sym::evaluate(M, env), k = sym::evaluate(K, env), nn = sym::evaluate(N, env);
  if (m == 0 || k == 0 || nn == 0) return std::nullopt;
  Tensor a = scratch(A), b = scratch(B), c = make_tensor({m, nn}, kFloat32);
  auto strides = [&](const Buffer& x) { return Shape{sym::evaluate(x.strides[0].as_expr(), env), sym::evaluate(x.strides[1].as_expr(), env)}; };
  const Shape sa = strides(A), sb = strides(B);
  const Tensor av = as_strided(a, Shape{m, k}, sa), bv = as_strided(b, Shape{k, nn}, sb);
  const std::vector<tile::cpu::Arg> args = {c, a, b, m, nn, k, sa[0], sa[1], sb[0], sb[1]};
  std::optional<std::vector<tile::cpu::Kernel>> compiled;
  const std::string key = "M=" + std::to_string(m) + ", N=" + std::to_string(nn) + ", K=" + std::to_string(k) +
                          ", strides a=" + shape_str(sa) + " b=" + shape_str(sb);
  const std::string code = tile::print(tile_matmul("matmul", 1, 1, 1), {.origins = false});  // its identity
  const size_t best = tile::tune("inductor " + n.name + " (BLAS or tile matmul)", code, key, configs, [&](size_t i) {
    if (i == 0) {
      ops::call(ops::OpId::matmul, {av, bv});
      return;
    }
    if (!compiled) compiled = tile::cpu::compile_group(std::move(programs));
    const auto& [bm, bn, bk] = tiles[i - 1];
    (*compiled)[i - 1].launch(tile::cpu::Grid(((m + bm - 1) / bm) * ((nn + bn - 1) / bn)), std::span<const tile::cpu::Arg>(args));
  });
  KILN_LOG(autotune) << "inductor: " << n.name << " [" << key << "]: " << (best == 0 ? "BLAS" : configs[best].str());
  if (best == 0) return std::nullopt;
  const auto& [bm, bn, bk] = tiles[best - 1];
  GeneratedKernel g{tile_matmul(n.name, bm, bn, bk), {}, nullptr};
  g.args = {{n.outputs[0], nullptr}, {n.inputs[0], nullptr}, {n.inputs[1], nullptr}, {-1, M}, {-1, N}, {-1, K},
            {-1, A.strides[0].as_expr()}, {-1, A.strides[1].as_expr()}, {-1, B.strides[0].as_expr()}, {-1, B.strides[1].as_expr()}};
  g.grid = sym::mul(cdiv(M, bm), cdiv(N, bn));
  return g;
}

}  // namespace kiln::inductor
