// The CUDA backend on a GPU: each kernel of cuda_kernels.h run by tile::cuda and by the CPU
// backend on the same inputs (cuda_cases.h), the results compared (bit for bit where both compute
// the same operations in the same order; within a tolerance where a reduction's order differs or
// the GPU's libm does). Skipped, with the reason, on a machine without a CUDA GPU.
#include <gtest/gtest.h>

#include "runtime/cuda/driver.h"
#include "tile/cuda/kernel.h"
#include "tests/unit/tile/cuda_cases.h"

namespace kiln::tile {
namespace {

namespace rc = runtime::cuda;

TEST(CudaGpuTile, EveryKernelMatchesTheCpuBackend) {
  if (!rc::available()) GTEST_SKIP() << "no CUDA GPU: " << rc::unavailable_reason();
  std::map<std::string, test::NamedKernel> kernels;
  for (const test::NamedKernel& k : test::cuda_kernels()) kernels.emplace(k.name, k);
  for (const test::Case& c : test::cases()) {
    SCOPED_TRACE(c.kernel);
    const std::vector<Tensor> want = test::run_on_cpu(c);
    // The GPU run on device copies of the same inputs.
    std::vector<void*> dev(c.args.size(), nullptr);
    std::vector<cuda::Arg> args;
    for (size_t i = 0; i < c.args.size(); ++i) {
      const test::CaseArg& a = c.args[i];
      if (a.is_tensor) {
        dev[i] = rc::mem_alloc(test::nbytes(a.t), rc::current_device());
        rc::copy_sync(dev[i], a.t.data_ptr(), test::nbytes(a.t), rc::CopyKind::HostToDevice, nullptr);
        args.emplace_back(cuda::DevicePtr{dev[i]});
      } else if (a.is_float) {
        args.emplace_back(a.f);
      } else {
        args.emplace_back(a.i);
      }
    }
    cuda::compile(kernels.at(c.kernel).make()).launch(c.grid, args);
    std::vector<Tensor> got(c.args.size());
    for (size_t i = 0; i < c.args.size(); ++i) {
      if (!dev[i]) continue;
      got[i] = c.args[i].t.clone();
      rc::copy_sync(got[i].data_ptr(), dev[i], test::nbytes(got[i]), rc::CopyKind::DeviceToHost, nullptr);
      rc::mem_free(dev[i], rc::current_device());
    }
    test::expect_like_cpu(c, got, want, "on the GPU");
  }
}

TEST(CudaGpuTile, LaunchChecksItsArguments) {
  if (!rc::available()) GTEST_SKIP() << "no CUDA GPU: " << rc::unavailable_reason();
  cuda::Kernel k = cuda::compile(test::vector_add(1024));
  EXPECT_EQ(k.threads(), 128);
  Tensor cpu_x = zeros({8});
  EXPECT_THROW(k(cuda::Grid(1), cpu_x, cpu_x, cpu_x, 8), Error);  // CPU tensors
  EXPECT_THROW(k(cuda::Grid(1), 1, 2, 3), Error);                 // too few, wrong kinds
  EXPECT_THROW(k(cuda::Grid(int64_t(1) << 32), cuda::DevicePtr{}, cuda::DevicePtr{}, cuda::DevicePtr{}, 8), Error);
}

// A launch with pointers that are not 16-byte aligned (views one element in) runs the variant
// for any alignment: the sum is right at both offsets, x, y and out each one float off.
TEST(CudaGpuTile, ALaunchAtMisalignedPointersRunsTheVariantForAnyAlignment) {
  if (!rc::available()) GTEST_SKIP() << "no CUDA GPU: " << rc::unavailable_reason();
  const int64_t n = 3000;
  cuda::Kernel k = cuda::compile(test::vector_add(1024));
  const Tensor x = randn({n + 1}), y = randn({n + 1});
  const size_t bytes = size_t(n + 1) * 4;
  void* dx = rc::mem_alloc(bytes, rc::current_device());
  void* dy = rc::mem_alloc(bytes, rc::current_device());
  void* dout = rc::mem_alloc(bytes, rc::current_device());
  rc::copy_sync(dx, x.data_ptr(), bytes, rc::CopyKind::HostToDevice, nullptr);
  rc::copy_sync(dy, y.data_ptr(), bytes, rc::CopyKind::HostToDevice, nullptr);
  const std::vector<float> xs = x.to_vector<float>(), ys = y.to_vector<float>();
  for (int64_t off : {int64_t(0), int64_t(1)}) {
    auto at = [&](void* p) { return cuda::DevicePtr{static_cast<float*>(p) + off}; };
    k(cuda::Grid(cdiv(n, 1024)), at(dx), at(dy), at(dout), n);
    std::vector<float> got(static_cast<size_t>(n));
    rc::copy_sync(got.data(), static_cast<float*>(dout) + off, size_t(n) * 4, rc::CopyKind::DeviceToHost, nullptr);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[size_t(i)], xs[size_t(i + off)] + ys[size_t(i + off)]) << "offset " << off << ", element " << i;
  }
  for (void* p : {dx, dy, dout}) rc::mem_free(p, rc::current_device());
}

TEST(CudaGpuTile, AKernelReportsItsRegistersAndOccupancy) {
  if (!rc::available()) GTEST_SKIP() << "no CUDA GPU: " << rc::unavailable_reason();
  cuda::Kernel k = cuda::compile(test::vector_add(1024));
  const rc::FunctionResources r = k.resources();
  EXPECT_GT(r.registers, 0);
  EXPECT_LE(r.registers, 255);
  EXPECT_EQ(r.local_bytes, 0);  // nothing spilled in a vector add
  // 128 threads a block: at least one block fits, and no more than the SM's 2048 threads allow.
  EXPECT_GE(r.blocks_per_sm, 1);
  EXPECT_LE(r.blocks_per_sm, 2048 / k.threads());
}

}  // namespace
}  // namespace kiln::tile
