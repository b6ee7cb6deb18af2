// The kernels the CUDA backend's tests compile (cuda_emit_test.cc, through NVRTC) and run on a
// GPU against the CPU backend (cuda_gpu_test.cc): each exercises a part of the emitter.
#pragma once
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "bench/gpu_tile_kernels.h"
#include "tests/unit/tile/tile_kernels.h"

namespace kiln::tile::test {

// x: f16, a: f32 (64 values, read at i % 64), out: bf16; masked; casts both ways.
inline Program pointwise_chain(int64_t block = 512) {
  Builder b("pointwise_chain");
  auto x = b.arg_ptr("x", kFloat16), a = b.arg_ptr("a", kFloat32), out = b.arg_ptr("out", kBFloat16);
  auto n = b.arg_int("n");
  const int64_t BLOCK = b.constexpr_int("BLOCK", block);
  auto offs = b.program_id(0) * BLOCK + b.arange(0, BLOCK);
  auto m = offs < n;
  auto v = b.load(x + offs, m, 0.0).to(kFloat32);
  auto w = b.where(v > 0.0, v * b.load(a + offs % 64, m, 0.0), b.exp(v) - 1.0);
  b.store(out + offs, b.sigmoid(w).to(kBFloat16) * 3.0, m);  // bf16 math after the cast
  return b.finish();
}

// One program per row of x[rows, cols]: (x - mean) * rstd * w + bias, BLOCK >= cols (masked).
inline Program layer_norm(int64_t block = 1024) {
  Builder b("layer_norm");
  auto x = b.arg_ptr("x", kFloat32), w = b.arg_ptr("w", kFloat32), bias = b.arg_ptr("bias", kFloat32);
  auto out = b.arg_ptr("out", kFloat32);
  auto cols = b.arg_int("cols");
  auto eps = b.arg_float("eps");
  const int64_t BLOCK = b.constexpr_int("BLOCK", block);
  auto row = b.program_id(0);
  auto offs = b.arange(0, BLOCK);
  auto m = offs < cols;
  auto v = b.load(x + row * cols + offs, m, 0.0);
  auto n = cols.to(kFloat32);
  auto mean = b.sum(v, 0) / n;
  auto d = b.where(m, v - mean, 0.0);
  auto rstd = b.rsqrt(b.sum(d * d, 0) / n + eps);
  b.store(out + row * cols + offs, d * rstd * b.load(w + offs, m, 0.0) + b.load(bias + offs, m, 0.0), m);
  return b.finish();
}

// Every program adds its block into 8 bins (block atomics) and counts itself in count[0] (a
// scalar atomic: once per program); old[i] gets the bin's value before x[i] went in.
inline Program histogram(DType d) {
  Builder b(std::string("histogram_") + short_name(d));
  auto x = b.arg_ptr("x", d), out = b.arg_ptr("out", d), old = b.arg_ptr("old", d);
  auto count = b.arg_ptr("count", kInt32);
  auto n = b.arg_int("n");
  auto offs = b.program_id(0) * 256 + b.arange(0, 256);
  auto m = offs < n;
  b.store(old + offs, b.atomic_add(out + offs % 8, b.load(x + offs, m), m), m);
  b.atomic_add(count, 1);
  return b.finish();
}

// out[pid] = sum_{i < n} i (a carried scalar) then an if; and a carried block: acc = acc * 0.5 +
// x[pid, :] over n steps, with a swap of two carried blocks.
inline Program loops() {
  Builder b("loops");
  auto x = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", kInt64), outf = b.arg_ptr("outf", kFloat32);
  auto n = b.arg_int("n", kInt64);
  auto pid = b.program_id(0);
  auto offs = b.arange(0, 64);
  auto xv = b.load(x + pid * 64 + offs);
  auto r = b.for_loop(0, n, 1, {b.constant(Scalar(int64_t(0)), kInt64), b.zeros({64}), b.full({64}, 1.0, kFloat32)},
                      [&](Val i, const std::vector<Val>& c) {
                        return std::vector<Val>{c[0] + i, c[2], c[1] * 0.5 + xv};
                      });
  auto t = b.if_else(pid % 2 == 0, [&] { return std::vector<Val>{r[0] * 2}; }, [&] { return std::vector<Val>{r[0] + pid}; });
  b.store(out + pid, t[0]);
  b.store(outf + pid * 128 + offs, r[1]);
  b.store(outf + pid * 128 + 64 + offs, r[2]);
  return b.finish();
}

// x[4, 32] per program: sums along each axis, max, argmax, a cumsum along the rows.
inline Program reductions() {
  Builder b("reductions");
  auto x = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", kFloat32), idx = b.arg_ptr("idx", kInt32);
  auto r = b.arange(0, 4), c = b.arange(0, 32);
  auto v = b.load(x + r.expand_dims(1) * 32 + c.expand_dims(0));
  b.store(out + c, b.sum(v, 0));                    // [32]
  b.store(out + 32 + r, b.max(v, 1));               // [4]
  b.store(out + 36, b.sum(v));                      // a scalar
  b.store(idx + r, b.argmax(v, 1));                 // [4]
  b.store(out + 40 + r.expand_dims(1) * 32 + c.expand_dims(0), b.cumsum(v, 1));
  return b.finish();
}

// out[i] = x[i + 1] * 2 in bf16 (exact): each run of x starts 2 bytes past a 16-byte boundary,
// so its loads take the per-element path; with n odd the last run of out is partly masked.
inline Program shifted() {
  Builder b("shifted");
  auto x = b.arg_ptr("x", kBFloat16), out = b.arg_ptr("out", kBFloat16);
  auto n = b.arg_int("n", kInt64);
  auto offs = b.program_id(0).to(kInt64) * 256 + b.arange(0, 256).to(kInt64);
  auto m = offs < n;
  b.store(out + offs, b.load(x + 1 + offs, m).to(kFloat32) * 2.0, m);
  return b.finish();
}

inline Program renamed(Program p, std::string name) {
  p.name = std::move(name);
  return p;
}

struct NamedKernel {
  std::string name;
  std::function<Program()> make;
};

// The set compiled through NVRTC and run on the GPU.
inline std::vector<NamedKernel> cuda_kernels() {
  return {
      {"vector_add", [] { return vector_add(1024); }},
      {"vector_add_f16", [] { return renamed(vector_add(2048, kFloat16), "vector_add_f16"); }},
      {"pointwise_chain", [] { return pointwise_chain(); }},
      {"softmax", [] { return softmax(1024); }},
      {"layer_norm", [] { return layer_norm(1024); }},
      {"histogram_i32", [] { return histogram(kInt32); }},
      {"histogram_f32", [] { return histogram(kFloat32); }},
      {"loops", [] { return loops(); }},
      {"reductions", [] { return reductions(); }},
      {"matmul", [] { return matmul(32, 32, 16); }},
      {"shifted", [] { return shifted(); }},
      // bench/gpu_tile.cc's kernels (bf16, 512 threads) at small shapes.
      {"bench_vector_add", [] { return renamed(gpu_bench::vector_add(1024), "bench_vector_add"); }},
      {"bench_pointwise", [] { return renamed(gpu_bench::pointwise(1024, 256), "bench_pointwise"); }},
      {"bench_softmax", [] { return renamed(gpu_bench::softmax(1024), "bench_softmax"); }},
      {"bench_layernorm", [] { return renamed(gpu_bench::layernorm(1024), "bench_layernorm"); }},
      {"bench_rmsnorm", [] { return renamed(gpu_bench::rmsnorm(1024), "bench_rmsnorm"); }},
      {"bench_cross_entropy", [] { return renamed(gpu_bench::cross_entropy(1000, 2, 256), "bench_cross_entropy"); }},
      // dot on tensor cores: the benchmark's tile (8 warps, 2 x 4 of 64 x 32) and a smaller one
      // (4 warps, 2 x 2 of 32 x 16; an odd count of n8 tiles per warp at BN = 24).
      {"bench_matmul", [] { return renamed(gpu_bench::matmul(128, 128, 32, 8), "bench_matmul"); }},
      {"matmul_bf16_small", [] { return renamed(gpu_bench::matmul(64, 48, 16, 4), "matmul_bf16_small"); }},
      // dot on wgmma where the target is sm_90a (the emulation emits the wgmma_ kernels for it, the
      // GPU test everything for the device): the benchmark's tile (2 warpgroups of m64n256, a's and
      // b's 128-byte swizzle), K = 16 (a's 32-byte swizzle), K = 128 (two panels of a, 2 x m64 per
      // warpgroup) and N = 32 (b's 64-byte swizzle).
      {"wgmma_matmul", [] { return renamed(gpu_bench::matmul(128, 256, 64, 8, 4), "wgmma_matmul"); }},
      {"wgmma_matmul_k16", [] { return renamed(gpu_bench::matmul(64, 64, 16, 4, 3), "wgmma_matmul_k16"); }},
      {"wgmma_matmul_k128", [] { return renamed(gpu_bench::matmul(128, 64, 128, 4, 2), "wgmma_matmul_k128"); }},
      {"wgmma_matmul_n32", [] { return renamed(gpu_bench::matmul(64, 32, 32, 4, 2), "wgmma_matmul_n32"); }},
  };
}

// The arch the tests without a GPU emit a kernel of cuda_kernels() for: sm_90a (wgmma) for the
// wgmma_ ones, none (mma.sync) for the others; the GPU test emits every one for its device.
inline std::string host_test_arch(const std::string& kernel) { return kernel.starts_with("wgmma_") ? "sm_90a" : ""; }

}  // namespace kiln::tile::test
