// NVRTC, CUDA's run-time compiler, loaded with dlopen (library.h): CUDA C++ source -> a cubin for
// one exact GPU ("sm_90a") or PTX for a virtual one ("compute_90a"), with no nvcc and no CUDA
// header at kiln's build time. docs/cuda.md.
//
//   auto out = runtime::cuda::nvrtc::compile(src, "vector_add.cu", "sm_90a", {"--std=c++17"});
//   // out.binary: the cubin, ready for the driver's module load; out.log: NVRTC's warnings
//
// Where libnvrtc is absent, available() is false and compile() raises a kiln::Error naming every
// library path it tried. A source NVRTC rejects raises a kiln::Error with NVRTC's log and the path
// of the source, written to the cache folder (or the temporary folder) so it can be read.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace kiln::runtime::cuda::nvrtc {

// Whether libnvrtc loaded (once per process; $KILN_NVRTC_LIBRARY names a path to try first).
bool available();
// Why not, when it did not: the candidates tried and the loader's message for each.
const std::string& unavailable_reason();
// NVRTC's version as major * 1000 + minor * 10 (13.0 -> 13000, as CUDA_VERSION counts); 0 when absent.
int version();

// The CUDA toolkit's include folder (the one with cuda_bf16.h and cuda_fp16.h, which NVRTC does
// not carry): beside the loaded libnvrtc (../include), else $CUDA_HOME, $CUDA_PATH, /usr/local/cuda,
// else the pip wheels' nvidia/cuda_runtime/include next to nvidia/cuda_nvrtc. Empty when none has
// it. compile() passes it to NVRTC as -I.
const std::string& include_dir();

struct Output {
  std::string binary;  // the cubin (arch "sm_XX[a]") or the NUL-terminated PTX (arch "compute_XX[a]")
  bool is_cubin = false;
  std::string log;     // NVRTC's log (warnings), often empty
};

// Compiles one translation unit. `name` is its file name in messages ("vector_add.cu"); `arch` is
// what --gpu-architecture takes; `options` go to NVRTC as they are, after -I<include_dir()> ("--std=c++17", "-I/path", "-DN=4", "-lineinfo").
Output compile(std::string_view source, std::string_view name, std::string_view arch,
               const std::vector<std::string>& options = {});

}  // namespace kiln::runtime::cuda::nvrtc
