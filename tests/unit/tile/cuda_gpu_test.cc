// The CUDA backend on a GPU: each kernel of cuda_kernels.h run by tile::cuda and by the CPU
// backend on the same inputs, the results compared (bit for bit where both compute the same
// operations in the same order; within a tolerance where a reduction's order differs: the GPU
// combines threads' partial sums). Skipped, with the reason, on a machine without a CUDA GPU.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <cmath>

#include "runtime/cuda/driver.h"
#include "tile/cpu/kernel.h"
#include "tile/cuda/kernel.h"
#include "tests/unit/tile/cuda_kernels.h"

namespace kiln::tile {
namespace {

namespace rc = runtime::cuda;

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

size_t nbytes(const Tensor& t) { return size_t(t.numel()) * itemsize(t.dtype()); }

std::vector<Case> cases() {
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
  };
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::abs(a[i] - b[i]) <= tol * (1 + std::abs(b[i])) || (std::isnan(a[i]) && std::isnan(b[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << " on the GPU, " << b[i] << " on the CPU";
      return;
    }
}

TEST(CudaGpuTile, EveryKernelMatchesTheCpuBackend) {
  if (!rc::available()) GTEST_SKIP() << "no CUDA GPU: " << rc::unavailable_reason();
  std::map<std::string, test::NamedKernel> kernels;
  for (const test::NamedKernel& k : test::cuda_kernels()) kernels.emplace(k.name, k);
  for (Case& c : cases()) {
    SCOPED_TRACE(c.kernel);
    const test::NamedKernel& nk = kernels.at(c.kernel);
    // The CPU run on copies (outputs start equal).
    std::vector<Tensor> host;
    std::vector<cpu::Arg> cargs;
    for (const CaseArg& a : c.args) host.push_back(a.is_tensor ? a.t.clone() : Tensor());
    for (size_t i = 0; i < c.args.size(); ++i) {
      const CaseArg& a = c.args[i];
      if (a.is_tensor) cargs.emplace_back(host[i]);
      else if (a.is_float) cargs.emplace_back(a.f);
      else cargs.emplace_back(a.i);
    }
    cpu::compile(nk.make()).launch(c.grid, cargs);
    // The GPU run on device copies of the same inputs.
    std::vector<void*> dev(c.args.size(), nullptr);
    std::vector<cuda::Arg> gargs;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const CaseArg& a = c.args[i];
      if (a.is_tensor) {
        dev[i] = rc::mem_alloc(nbytes(a.t), rc::current_device());
        rc::copy_sync(dev[i], a.t.data_ptr(), nbytes(a.t), rc::CopyKind::HostToDevice, nullptr);
        gargs.emplace_back(cuda::DevicePtr{dev[i]});
      } else if (a.is_float) {
        gargs.emplace_back(a.f);
      } else {
        gargs.emplace_back(a.i);
      }
    }
    cuda::compile(nk.make()).launch(c.grid, gargs);
    for (size_t i = 0; i < c.args.size(); ++i) {
      if (!dev[i]) continue;
      Tensor got = c.args[i].t.clone();
      rc::copy_sync(got.data_ptr(), dev[i], nbytes(got), rc::CopyKind::DeviceToHost, nullptr);
      rc::mem_free(dev[i], rc::current_device());
      if (std::find(c.unordered.begin(), c.unordered.end(), i) != c.unordered.end()) continue;
      expect_near(got, host[i], c.tol, c.kernel + " argument " + std::to_string(i));
    }
  }
}

TEST(CudaGpuTile, LaunchChecksItsArguments) {
  if (!rc::available()) GTEST_SKIP() << "no CUDA GPU: " << rc::unavailable_reason();
  cuda::Kernel k = cuda::compile(test::vector_add(1024));
  Tensor cpu_x = zeros({8});
  EXPECT_THROW(k(cuda::Grid(1), cpu_x, cpu_x, cpu_x, 8), Error);  // CPU tensors
  EXPECT_THROW(k(cuda::Grid(1), 1, 2, 3), Error);                 // too few, wrong kinds
  EXPECT_THROW(k(cuda::Grid(int64_t(1) << 32), cuda::DevicePtr{}, cuda::DevicePtr{}, cuda::DevicePtr{}, 8), Error);
}

}  // namespace
}  // namespace kiln::tile
