// The cases the CUDA backend's kernels (cuda_kernels.h) run on: arguments, grid and how close
// the result must be to the CPU backend's, for the GPU tests (cuda_gpu_test.cc) and the host
// emulation of the generated CUDA (cuda_emulated_test.cc); and the CPU backend's run of a case.
#pragma once
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <cmath>
#include <map>

#include "tile/cpu/kernel.h"
#include "tests/unit/tile/cuda_kernels.h"

namespace kiln::tile::test {

// An argument of a case: a tensor (copied to the GPU for the CUDA run) or a number.
struct CaseArg {
  Tensor t;
  bool is_tensor = false;
  int64_t i = 0;
  double f = 0;
  bool is_float = false;
  CaseArg(Tensor x) : t(std::move(x)), is_tensor(true) {}
  CaseArg(int64_t v) : i(v) {}
  CaseArg(int v) : i(v) {}
  CaseArg(double v) : f(v), is_float(true) {}
};

struct Case {
  std::string kernel;
  cpu::Grid grid;
  std::vector<CaseArg> args;
  double tol = 0;                 // 0: bit for bit
  std::vector<size_t> unordered;  // arguments whose values depend on the order of atomics: not compared
  Case(std::string k, cpu::Grid g, std::vector<CaseArg> a, double t = 0, std::vector<size_t> u = {})
      : kernel(std::move(k)), grid(g), args(std::move(a)), tol(t), unordered(std::move(u)) {}
};

inline size_t nbytes(const Tensor& t) { return size_t(t.numel()) * itemsize(t.dtype()); }

inline std::vector<Case> cases() {
  const int64_t n = 5000, rows = 37, cols = 1000;
  Tensor x2d = randn({rows, cols});
  return {
      {"vector_add", cpu::Grid(cdiv(n, 1024)), {randn({n}), randn({n}), zeros({n}), n}},
      {"vector_add_f16", cpu::Grid(cdiv(n, 2048)), {randn({n}).to(kFloat16), randn({n}).to(kFloat16), zeros({n}, kFloat16), n}},
      {"pointwise_chain", cpu::Grid(cdiv(n, 512)), {randn({n}).to(kFloat16), randn({64}), zeros({n}, kBFloat16), n}, 8e-3},
      {"softmax", cpu::Grid(rows), {x2d, zeros({rows, cols}), cols, cols}, 1e-6},
      {"layer_norm", cpu::Grid(rows), {x2d, randn({cols}), randn({cols}), zeros({rows, cols}), cols, 1e-5}, 1e-4},
      {"histogram_i32", cpu::Grid(4), {randint(-50, 50, {1000}).to(kInt32), zeros({8}, kInt32), zeros({1000}, kInt32), zeros({1}, kInt32), 1000}, 0, {2}},
      {"histogram_f32", cpu::Grid(4), {randint(-50, 50, {1000}).to(kFloat32), zeros({8}), zeros({1000}), zeros({1}, kInt32), 1000}, 0, {2}},
      {"loops", cpu::Grid(5), {randn({5 * 64}), zeros({5}, kInt64), zeros({5 * 128}), int64_t(10)}},
      {"reductions", cpu::Grid(1), {randn({128}), zeros({40 + 128}), zeros({4}, kInt32)}, 1e-5},
      {"matmul", cpu::Grid(cdiv(70, 32), cdiv(50, 32)), {randn({70, 40}), randn({40, 50}), zeros({70, 50}), 70, 50, 40, 40, 50, 50}},
      {"shifted", cpu::Grid(4), {randn({1000}).to(kBFloat16), zeros({999}, kBFloat16), int64_t(999)}},
      {"bench_vector_add", cpu::Grid(3), {randn({2999}).to(kBFloat16), randn({2999}).to(kBFloat16), zeros({2999}, kBFloat16), int64_t(2999)}},
      {"bench_vector_add", cpu::Grid(3), {randn({3000}).to(kBFloat16), randn({3000}).to(kBFloat16), zeros({3000}, kBFloat16), int64_t(3000)}},
      {"bench_pointwise", cpu::Grid(8), {randn({2, 1024}).to(kBFloat16), randn({1024}).to(kBFloat16), randn({1024}).to(kBFloat16), zeros({2, 1024}, kBFloat16)}, 8e-3},
      {"bench_softmax", cpu::Grid(2), {randn({2, 1024}).to(kBFloat16), zeros({2, 1024}, kBFloat16)}, 8e-3},
      {"bench_layernorm", cpu::Grid(2), {randn({2, 1024}).to(kBFloat16), randn({1024}).to(kBFloat16), randn({1024}).to(kBFloat16), zeros({2, 1024}, kBFloat16)}, 8e-3},
      {"bench_rmsnorm", cpu::Grid(2), {randn({2, 1024}).to(kBFloat16), randn({1024}).to(kBFloat16), zeros({2, 1024}, kBFloat16)}, 8e-3},
      {"bench_cross_entropy", cpu::Grid(2), {randn({2, 1000}).to(kBFloat16), tensor(std::vector<double>{999, 3}, {2}, kInt64), zeros({1})}, 1e-5},
      // Masked edges in M, N and K; N = 70 leaves b's rows misaligned for 16-byte loads.
      {"bench_matmul", cpu::Grid(4), {randn({200, 80}).to(kBFloat16), randn({80, 256}).to(kBFloat16), zeros({200, 256}, kBFloat16), 200, 256, 80}, 8e-3},
      {"matmul_bf16_small", cpu::Grid(4), {randn({100, 40}).to(kBFloat16), randn({40, 70}).to(kBFloat16), zeros({100, 70}, kBFloat16), 100, 70, 40}, 8e-3},
      // wgmma: masked edges in M, N and K (N = 300 and K = 150: rows misaligned for 16-byte loads);
      // whole tiles at K = 16 / 128 and N = 32 but for M.
      {"wgmma_matmul", cpu::Grid(4), {randn({200, 150}).to(kBFloat16), randn({150, 300}).to(kBFloat16), zeros({200, 300}, kBFloat16), 200, 300, 150}, 8e-3},
      {"wgmma_matmul", cpu::Grid(4), {randn({256, 128}).to(kBFloat16), randn({128, 512}).to(kBFloat16), zeros({256, 512}, kBFloat16), 256, 512, 128}, 8e-3},
      {"wgmma_matmul_k16", cpu::Grid(6), {randn({130, 48}).to(kBFloat16), randn({48, 128}).to(kBFloat16), zeros({130, 128}, kBFloat16), 130, 128, 48}, 8e-3},
      {"wgmma_matmul_k128", cpu::Grid(8), {randn({512, 256}).to(kBFloat16), randn({256, 128}).to(kBFloat16), zeros({512, 128}, kBFloat16), 512, 128, 256}, 8e-3},
      {"wgmma_matmul_n32", cpu::Grid(4), {randn({100, 64}).to(kBFloat16), randn({64, 64}).to(kBFloat16), zeros({100, 64}, kBFloat16), 100, 64, 64}, 8e-3},
  };
}

inline void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i])) || (std::isnan(a[i]) && std::isnan(b[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", the CPU backend gives " << b[i];
      return;
    }
}

// The case on the CPU backend: its tensor arguments (copies) after the launch.
inline std::vector<Tensor> run_on_cpu(const Case& c) {
  std::map<std::string, NamedKernel> kernels;
  for (const NamedKernel& k : cuda_kernels()) kernels.emplace(k.name, k);
  std::vector<Tensor> host;
  std::vector<cpu::Arg> args;
  for (const CaseArg& a : c.args) host.push_back(a.is_tensor ? a.t.clone() : Tensor());
  for (size_t i = 0; i < c.args.size(); ++i) {
    const CaseArg& a = c.args[i];
    if (a.is_tensor) args.emplace_back(host[i]);
    else if (a.is_float) args.emplace_back(a.f);
    else args.emplace_back(a.i);
  }
  cpu::compile(kernels.at(c.kernel).make()).launch(c.grid, args);
  return host;
}

// Each tensor argument of `got` against the CPU backend's (but the unordered ones).
inline void expect_like_cpu(const Case& c, const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& where) {
  for (size_t i = 0; i < c.args.size(); ++i) {
    if (!c.args[i].is_tensor || std::find(c.unordered.begin(), c.unordered.end(), i) != c.unordered.end()) continue;
    expect_near(got[i], want[i], c.tol, c.kernel + " argument " + std::to_string(i) + " " + where);
  }
}

}  // namespace kiln::tile::test
