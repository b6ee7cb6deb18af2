// Compiled tile kernels on an NVIDIA GPU: a program emitted as CUDA (emit_cuda.h), compiled by
// NVRTC for the current device's exact arch through the disk cache, loaded with the driver API
// and launched on a stream.
//
//   tile::cuda::Kernel k = tile::cuda::compile(b.finish());
//   k(tile::cuda::Grid(cdiv(n, 1024)), x, y, out, n);   // CUDA tensors or device pointers, ints, floats
//
// A launch checks each argument against its parameter (a pointer parameter takes a CUDA tensor
// of its dtype, or a raw device pointer; an int's range against i32) and queues the kernel on
// the current stream (or the one given): it does not wait for it.
#pragma once
#include <kiln/tensor.h>

#include <initializer_list>
#include <memory>
#include <span>

#include "runtime/cuda/driver.h"
#include "tile/cpu/kernel.h"
#include "tile/cuda/emit_cuda.h"

namespace kiln::tile::cuda {

using cpu::Grid;
using cpu::GridFn;
using cpu::ParamSig;

// A device address for a pointer parameter (memory from runtime::cuda::mem_alloc or a tensor's).
struct DevicePtr {
  void* p = nullptr;
};

// One launch argument: a CUDA tensor or a device pointer (pointer parameters), an integer (int
// and sym parameters), or a float (float parameters; an integer converts).
struct Arg {
  enum class Kind : uint8_t { Tensor, Pointer, Int, Float } kind;
  const Tensor* tensor = nullptr;
  void* ptr = nullptr;
  int64_t i = 0;
  double f = 0;
  Arg(const Tensor& t) : kind(Kind::Tensor), tensor(&t) {}
  Arg(DevicePtr p) : kind(Kind::Pointer), ptr(p.p) {}
  template <class T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Arg(T v) : kind(Kind::Int), i(int64_t(v)) {}
  Arg(double v) : kind(Kind::Float), f(v) {}
  Arg(float v) : kind(Kind::Float), f(v) {}
};

class Kernel {
 public:
  const std::string& name() const;
  const std::vector<ParamSig>& params() const;
  const Meta& meta() const;
  const std::string& source() const;  // the translation unit NVRTC compiled
  const std::string& arch() const;    // what it was compiled for ("sm_90a")
  int threads() const;                // per block: num_warps * 32
  int64_t shared_bytes() const;       // dynamic shared memory per block
  int device() const;                 // the device its module is loaded on
  // Its registers and spills per thread, and its blocks per SM (from the loaded function).
  runtime::cuda::FunctionResources resources() const;

  // Queues the kernel on `stream` (null: the device's current stream).
  void launch(const Grid& grid, std::span<const Arg> args, runtime::cuda::Stream stream = nullptr) const;
  void launch(const Grid& grid, std::initializer_list<Arg> args) const { launch(grid, std::span<const Arg>(args.begin(), args.size())); }
  void launch(const GridFn& grid, std::span<const Arg> args) const { launch(grid(meta()), args); }
  template <class... A>
  void operator()(const Grid& grid, const A&... args) const {
    const Arg a[] = {Arg(args)...};
    launch(grid, std::span<const Arg>(a, sizeof...(A)));
  }

 private:
  struct Data;
  friend Kernel compile(Program p, const std::string& passes);
  std::shared_ptr<const Data> d_;
};

// Verifies, runs the passes (a list for run_passes; "" for none), emits, compiles (a warm disk
// cache runs no NVRTC) and loads on the current device. Without a GPU: kiln::Error "no CUDA GPU: ...".
Kernel compile(Program p, const std::string& passes = "default");

// The cubin of a translation unit for `arch`, through the disk cache ("tile-cuda"); where ptxas
// would serialize its wgmmas (C7515), that of `fallback` (if given) instead.
std::string cubin(const std::string& source, const std::string& file, const std::string& arch, const std::string& fallback = "");

}  // namespace kiln::tile::cuda
