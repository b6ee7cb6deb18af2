// The BLAS behind the matmul family: OpenBLAS runs kernels for this CPU's vector units, not the
// generic fallback it picks for CPU models newer than its release (blas_core.cc); and operands
// that gemm can read in place (transposes, batches stacked onto rows) are not copied first.
#include <cstdlib>
#include <functional>

#include "eager/cpu/blas_core.h"
#include "runtime/device.h"
#include "support/test_util.h"

namespace kiln {
namespace {

TEST(Blas, OpenBlasRunsKernelsForThisCpu) {
  const std::string core = eager::cpu::blas_core();
  if (core.empty()) GTEST_SKIP() << "not OpenBLAS";
  if (std::getenv("OPENBLAS_CORETYPE")) GTEST_SKIP() << "OPENBLAS_CORETYPE set by the user";
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx")) GTEST_SKIP() << "no AVX: Prescott is the right kernel set";
  EXPECT_NE(core, "Prescott");
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(core, "Sandybridge");
  }
  // The selection leaves the environment as it found it.
  EXPECT_EQ(std::getenv("OPENBLAS_CORETYPE"), nullptr);
}

// Blocks allocated while f runs (its result included).
size_t blocks_during(const std::function<Tensor()>& f) {
  const size_t before = runtime::memory_stats(kCPU).allocated_blocks;
  Tensor r = f();
  return runtime::memory_stats(kCPU).allocated_blocks - before;
}

TEST(Blas, OperandsInGemmLayoutsAreNotCopied) {
  Tensor x = randn({6, 4}), w = randn({5, 4}), x3 = randn({3, 6, 4}), q = randn({2, 3, 6, 4}), k = randn({2, 3, 7, 4});
  // Only the output is allocated: a transposed operand is a trans flag, a 3-d input times a
  // weight is one gemm over the stacked rows, a batch of transposed matrices is read in place.
  EXPECT_EQ(blocks_during([&] { return linear(x, w); }), 1u);
  EXPECT_EQ(blocks_during([&] { return matmul(x.t(), x); }), 1u);
  EXPECT_EQ(blocks_during([&] { return linear(x3, w); }), 1u);
  EXPECT_EQ(blocks_during([&] { return matmul(q, k.transpose(-1, -2)); }), 1u);
  EXPECT_EQ(blocks_during([&] { return bmm(x3.transpose(1, 2), x3); }), 1u);
  // The count sees copies: a last dim with stride 2 is not a BLAS layout.
  Tensor wide = randn({6, 8});
  EXPECT_GT(blocks_during([&] { return matmul(wide.slice(1, 0, 8, 2), w.t()); }), 1u);
}

}  // namespace
}  // namespace kiln
