// OpenBLAS's kernels on CPUs newer than its release. A DYNAMIC_ARCH OpenBLAS picks its kernel set
// by the CPU model when it loads; a model it does not know gets the Prescott (SSE3) kernels. On
// the development machine (Xeon model 207, OpenBLAS 0.3.21) that made every matmul 4x slower
// than the AVX-512 kernels the CPU runs (1024^3 sgemm: 12 vs 52 GFLOP/s). When OpenBLAS fell back
// so, kiln picks the kernel set by the CPU's features instead (what OPENBLAS_CORETYPE does), once,
// when libkiln loads: OpenBLAS has loaded before it and no BLAS call runs yet. A user's
// OPENBLAS_CORETYPE wins; any other BLAS (no such OpenBLAS entry points) is left alone.
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>

#include "eager/cpu/blas_core.h"

namespace kiln::eager::cpu {
namespace {

// The best OpenBLAS kernel set the CPU (and the OS, for the AVX state) supports; null if none
// beats Prescott.
const char* core_for_features() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  if (__builtin_cpu_supports("avx")) return "Sandybridge";
  return nullptr;
}

template <class F>
F* blas_fn(const char* name) {
  return reinterpret_cast<F*>(dlsym(RTLD_DEFAULT, name));
}

void choose_blas_core() {
  if (std::getenv("OPENBLAS_CORETYPE")) return;
  auto corename = blas_fn<char*()>("openblas_get_corename");
  auto init = blas_fn<void()>("gotoblas_dynamic_init");
  auto quit = blas_fn<void()>("gotoblas_dynamic_quit");
  if (!corename || !init || !quit || std::strcmp(corename(), "Prescott") != 0) return;
  const char* core = core_for_features();
  if (!core) return;
  // OpenBLAS reads the override from the environment; it is set only for this re-selection.
  setenv("OPENBLAS_CORETYPE", core, 1);
  quit();
  init();
  unsetenv("OPENBLAS_CORETYPE");
}

[[maybe_unused]] const bool chosen = (choose_blas_core(), true);

}  // namespace

std::string blas_core() {
  auto corename = blas_fn<char*()>("openblas_get_corename");
  return corename ? corename() : "";
}

}  // namespace kiln::eager::cpu
