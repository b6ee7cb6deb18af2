// The BLAS behind the matmul family: OpenBLAS runs kernels for this CPU's vector units, not the
// generic fallback it picks for CPU models newer than its release (blas_core.cc).
#include <cstdlib>

#include "eager/cpu/blas_core.h"
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

}  // namespace
}  // namespace kiln
