// The tile IR's CUDA backend: TileProgram -> CUDA C++, compiled by NVRTC for the GPU's exact
// arch (sm_90a on the H200) and launched through the driver API (cuda/kernel.h). A program
// instance is a thread block of num_warps * 32 threads; blockIdx is the program id.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tile/ir.h"

namespace kiln::tile::cuda {

// One kernel's CUDA: its `extern "C" __global__` entry point and what a launch needs.
struct EmittedKernel {
  std::string source;        // the kernel (no prelude)
  std::string entry;         // its symbol: kiln_tile_<name>
  int threads = 128;         // per block: num_warps * 32
  int64_t shared_bytes = 0;  // dynamic shared memory per block (the program's blocks)
};

// arch: the target's NVRTC arch ("sm_90a"); on an sm_90a target the dots whose shapes allow it
// run on wgmma, else on mma.sync (docs/cuda.md). in_flight: a pipelined loop's wgmmas may stay
// in flight into the next iteration (false: each iteration waits for its own; the choice where
// ptxas would serialize them, kernel.cc).
// aligned: every pointer argument is 16-byte aligned (the launch checks it: cuda::Kernel runs
// the variant without this assumption for a launch where one is not).
EmittedKernel emit_kernel(const Program& p, const std::string& arch = "", bool in_flight = true, bool aligned = false);
// A translation unit for NVRTC: the scalar prelude, the CUDA support code, then the kernels.
std::string translation_unit(const std::vector<EmittedKernel>& kernels);

// Dynamic shared memory a block may have on sm_90 (227 KB, after raising the kernel's limit).
constexpr int64_t kMaxSharedBytes = 227 * 1024;

}  // namespace kiln::tile::cuda
