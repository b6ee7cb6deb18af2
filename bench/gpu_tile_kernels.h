// The hand-written tile kernels of bench/gpu_tile.cc (bf16 in memory, fp32 math), also run by
// the CUDA backend's tests at small shapes (tests/unit/tile/cuda_kernels.h).
#pragma once
#include <cmath>
#include <string>
#include <vector>

#include "tile/builder.h"

namespace kiln::tile::gpu_bench {

// Non-zero pseudo-random values in [-2, 2) from each element's index (no host round trip).
inline Program fill_kernel(DType d) {
  Builder b(std::string("fill_") + short_name(d));
  auto out = b.arg_ptr("out", d);
  auto n = b.arg_int("n", kInt64);
  auto seed = b.arg_float("seed");
  auto offs = b.program_id(0).to(kInt64) * 1024 + b.arange(0, 1024).to(kInt64);
  auto s = b.sin(offs.to(kFloat32) * 12.9898 + seed) * 43758.5453;
  b.store(out + offs, (s - b.floor(s)) * 4.0 - 2.0 + 1e-3, offs < n);
  return b.finish();
}

// out = x + y over n elements.
inline Program vector_add(int64_t block) {
  Builder b("vector_add");
  auto x = b.arg_ptr("x", kBFloat16), y = b.arg_ptr("y", kBFloat16), out = b.arg_ptr("out", kBFloat16);
  auto n = b.arg_int("n", kInt64);
  auto offs = b.program_id(0).to(kInt64) * block + b.arange(0, block).to(kInt64);
  auto m = offs < n;
  b.store(out + offs, b.load(x + offs, m).to(kFloat32) + b.load(y + offs, m).to(kFloat32), m);
  return b.finish();
}

// workloads.md's pointwise: out = gelu(x * a + b) * sigmoid(x), a and b broadcast along the rows
// of x[rows, cols]; one program per `block` columns of a row (block divides cols), fp32 math.
inline Program pointwise(int64_t cols, int64_t block = 4096) {
  Builder b("pointwise");
  auto x = b.arg_ptr("x", kBFloat16), a = b.arg_ptr("a", kBFloat16), bias = b.arg_ptr("b", kBFloat16);
  auto out = b.arg_ptr("out", kBFloat16);
  auto pid = b.program_id(0).to(kInt64);
  auto col = (pid % (cols / block)) * block + b.arange(0, block).to(kInt64);
  auto at = b.floor_divide(pid, cols / block) * cols + col;
  auto v = b.load(x + at).to(kFloat32);
  auto h = v * b.load(a + col).to(kFloat32) + b.load(bias + col).to(kFloat32);
  b.store(out + at, h * 0.5 * (b.erf(h * 0.7071067811865476) + 1.0) * b.sigmoid(v));
  return b.finish();
}

// One program per row of cols (== BLOCK) elements; fp32 math, bf16 in and out. `warps`: the
// thread block's warps (bench/gpu_tile.cc --sweep times others).
inline Program softmax(int64_t cols, int warps = 8) {
  Builder b("softmax");
  // 8 warps: 256 threads, 32 elements each (as layernorm's below).
  b.set_num_warps(warps);
  auto x = b.arg_ptr("x", kBFloat16), out = b.arg_ptr("out", kBFloat16);
  auto row = b.program_id(0).to(kInt64) * cols;
  auto offs = b.arange(0, cols);
  auto v = b.load(x + row + offs).to(kFloat32);
  auto e = b.exp(v - b.max(v, 0));
  b.store(out + row + offs, e / b.sum(e, 0));
  return b.finish();
}

// warps: 8 (256 threads, 32 elements each) measured fastest on the H200 (bench/gpu_tile.cc
// --sweep: 48-64 registers, 4-5 blocks per SM; at 16 warps 3-4 blocks, at 4 warps 2-3).
inline Program layernorm(int64_t cols, int warps = 8) {
  Builder b("layernorm");
  b.set_num_warps(warps);
  auto x = b.arg_ptr("x", kBFloat16), w = b.arg_ptr("w", kBFloat16), bias = b.arg_ptr("bias", kBFloat16);
  auto out = b.arg_ptr("out", kBFloat16);
  auto row = b.program_id(0).to(kInt64) * cols;
  auto offs = b.arange(0, cols);
  auto v = b.load(x + row + offs).to(kFloat32);
  auto d = v - b.sum(v, 0) / double(cols);
  auto rstd = b.rsqrt(b.sum(d * d, 0) / double(cols) + 1e-5);
  b.store(out + row + offs, d * rstd * b.load(w + offs).to(kFloat32) + b.load(bias + offs).to(kFloat32));
  return b.finish();
}

inline Program rmsnorm(int64_t cols, int warps = 8) {  // warps: as layernorm's
  Builder b("rmsnorm");
  b.set_num_warps(warps);
  auto x = b.arg_ptr("x", kBFloat16), w = b.arg_ptr("w", kBFloat16), out = b.arg_ptr("out", kBFloat16);
  auto row = b.program_id(0).to(kInt64) * cols;
  auto offs = b.arange(0, cols);
  auto v = b.load(x + row + offs).to(kFloat32);
  auto r = b.rsqrt(b.sum(v * v, 0) / double(cols) + 1e-6);
  b.store(out + row + offs, v * r * b.load(w + offs).to(kFloat32));
  return b.finish();
}

// The mean over rows of logsumexp(x[row]) - x[row, target[row]]: one program per row, an online
// logsumexp over chunks of BLOCK columns, each row's loss added into loss[0] / rows.
inline Program cross_entropy(int64_t cols, int64_t rows, int64_t block, int warps = 8) {  // warps: as layernorm's
  Builder b("cross_entropy");
  b.set_num_warps(warps);
  auto x = b.arg_ptr("x", kBFloat16), target = b.arg_ptr("target", kInt64), loss = b.arg_ptr("loss", kFloat32);
  auto row = b.program_id(0).to(kInt64);
  auto base = row * cols;
  auto offs = b.arange(0, block).to(kInt64);
  auto r = b.for_loop(int64_t(0), cols, block, {b.constant(Scalar(-INFINITY), kFloat32), b.constant(Scalar(0.0), kFloat32)},
                      [&](Val c, const std::vector<Val>& carried) {
                        auto m = c + offs < cols;
                        auto v = b.load(x + base + c + offs, m, -INFINITY).to(kFloat32);
                        auto mx = b.maximum(carried[0], b.max(v, 0));
                        auto s = carried[1] * b.exp(carried[0] - mx) + b.sum(b.exp(v - mx), 0);
                        return std::vector<Val>{mx, s};
                      });
  auto t = b.load(target + row);
  auto picked = b.load(x + base + t).to(kFloat32);
  b.atomic_add(loss, (b.log(r[1]) + r[0] - picked) / double(rows));
  return b.finish();
}

// c[M, N] = a[M, K] @ b[K, N], bf16 in memory (row-major, contiguous), f32 accumulators:
// tests/unit/tile/tile_kernels.h's blocked matmul, one program per BM x BN tile of c and a
// loop over K in BK steps. Its dot runs on tensor cores (docs/cuda.md). The grid is 1-D,
// cdiv(M, BM) * cdiv(N, BN) programs, in groups of 8 tile rows: consecutive programs take the
// tiles of 8 rows column by column, so the blocks running at once share their a and b panels
// in L2 (rather than every column of tiles reading all of a).
inline Program matmul(int64_t bm, int64_t bn, int64_t bk, int num_warps, int num_stages = 3) {
  Builder b("matmul_bf16");
  b.set_num_warps(num_warps);
  b.set_num_stages(num_stages);
  auto a = b.arg_ptr("a", kBFloat16), bp = b.arg_ptr("b", kBFloat16), c = b.arg_ptr("c", kBFloat16);
  auto M = b.arg_int("M"), N = b.arg_int("N"), K = b.arg_int("K");
  const int64_t BM = b.constexpr_int("BM", bm), BN = b.constexpr_int("BN", bn), BK = b.constexpr_int("BK", bk);
  const int64_t group = 8;
  auto pid = b.program_id(0);
  auto tiles_m = b.floor_divide(M + (BM - 1), BM), tiles_n = b.floor_divide(N + (BN - 1), BN);
  auto first_m = b.floor_divide(pid, tiles_n * group) * group;
  auto rows = b.minimum(tiles_m - first_m, group);  // the group's tile rows (fewer in the last)
  auto in_group = pid % (tiles_n * group);
  auto rm = (first_m + in_group % rows) * BM + b.arange(0, BM);
  auto rn = b.floor_divide(in_group, rows) * BN + b.arange(0, BN);
  auto rk = b.arange(0, BK);
  auto acc = b.for_loop(0, K, BK, {b.zeros({BM, BN})}, [&](Val k, const std::vector<Val>& carried) {
    auto ka = k + rk;
    auto at = b.load(a + rm.expand_dims(1) * K + ka.expand_dims(0), (rm.expand_dims(1) < M) & (ka.expand_dims(0) < K), 0.0);
    auto bt = b.load(bp + ka.expand_dims(1) * N + rn.expand_dims(0), (ka.expand_dims(1) < K) & (rn.expand_dims(0) < N), 0.0);
    return std::vector<Val>{b.dot(at, bt, carried[0])};
  })[0];
  b.store(c + rm.expand_dims(1) * N + rn.expand_dims(0), acc.to(kBFloat16), (rm.expand_dims(1) < M) & (rn.expand_dims(0) < N));
  return b.finish();
}

}  // namespace kiln::tile::gpu_bench
