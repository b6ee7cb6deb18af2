// Hand-written tile kernels on the GPU at workloads.md's shapes (../shared/bench/workloads.md):
// vector_add, softmax, layernorm, rmsnorm and cross_entropy in bf16 (fp32 math), each timed with
// device events (median of 50 launches after 5 warm-up ones) against its DRAM floor: the bytes it
// must read and write at 4.3 TB/s, the H200's measured copy bandwidth. bench/gpu.sh runs it.
//
//   ./build/kiln_bench_gpu_tile [--reps N]      # one line per workload, and a JSON line each
//   ./build/kiln_bench_gpu_tile --sources       # the kernels' CUDA translation unit
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "runtime/cuda/driver.h"
#include "gpu_tile_kernels.h"
#include "tile/cuda/kernel.h"
#include "tile/passes/passes.h"

namespace {

using namespace kiln;
using namespace kiln::tile;
namespace gb = kiln::tile::gpu_bench;
namespace rc = kiln::runtime::cuda;

constexpr double kBandwidth = 4.3e12;  // bytes/s

struct Buffer {
  void* p = nullptr;
  explicit Buffer(size_t bytes) : p(rc::mem_alloc(bytes, rc::current_device())) {
    if (!p) std::fprintf(stderr, "out of GPU memory (%zu bytes)\n", bytes), std::exit(1);
  }
  ~Buffer() { rc::mem_free(p, rc::current_device()); }
  cuda::DevicePtr ptr() const { return {p}; }
};

int g_reps = 50;

// The median of g_reps timed launches, in ms.
double time_ms(const std::function<void()>& launch) {
  const int dev = rc::current_device();
  rc::Event start = rc::event_create(dev, true), end = rc::event_create(dev, true);
  const rc::Stream s = rc::current_stream(dev);
  for (int i = 0; i < 5; ++i) launch();
  std::vector<double> ms;
  for (int i = 0; i < g_reps; ++i) {
    rc::event_record(start, s);
    launch();
    rc::event_record(end, s);
    rc::event_synchronize(end);
    ms.push_back(rc::event_elapsed_ms(start, end));
  }
  rc::event_destroy(start);
  rc::event_destroy(end);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void report(const char* name, const char* shape, double ms, double bytes) {
  const double floor_ms = bytes / kBandwidth * 1e3;
  std::printf("%-14s %-16s %8.3f ms   floor %6.3f ms   %5.1f%% of the floor\n", name, shape, ms, floor_ms, 100 * floor_ms / ms);
  std::printf("{\"bench\": \"gpu_tile\", \"workload\": \"%s\", \"shape\": \"%s\", \"median_ms\": %.4f, \"floor_ms\": %.4f}\n", name,
              shape, ms, floor_ms);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--reps")) g_reps = std::max(1, std::atoi(argv[i + 1]));
  if (argc > 1 && !std::strcmp(argv[1], "--sources")) {  // the CUDA of the kernels (no GPU needed)
    std::vector<cuda::EmittedKernel> ks;
    for (Program* p : {new Program(gb::fill_kernel(kBFloat16)), new Program(gb::vector_add(4096)), new Program(gb::softmax(8192)),
                       new Program(gb::layernorm(8192)), new Program(gb::rmsnorm(8192)), new Program(gb::cross_entropy(32000, 16384, 8192))}) {
      verify(*p);
      run_passes(*p, default_passes());
      ks.push_back(cuda::emit_kernel(*p));
      delete p;
    }
    std::fputs(cuda::translation_unit(ks).c_str(), stdout);
    return 0;
  }
  if (!rc::available()) {
    std::printf("gpu_tile: skipped: no CUDA GPU: %s\n", rc::unavailable_reason().c_str());
    return 0;
  }
  try {
    rc::set_device(0);
    std::printf("gpu_tile on %s (%s), median of %d\n", rc::properties(0).name.c_str(), rc::properties(0).arch().c_str(), g_reps);
    const int64_t rows = 16384, cols = 8192, n = rows * cols, vocab = 32000;
    const cuda::Kernel fill = cuda::compile(gb::fill_kernel(kBFloat16));
    auto filled = [&](int64_t count, double seed) {
      auto* b = new Buffer(size_t(count) * 2);
      fill(cuda::Grid(cdiv(count, 1024)), b->ptr(), count, seed);
      return std::unique_ptr<Buffer>(b);
    };
    auto x = filled(n, 0.1), y = filled(n, 0.2), w = filled(cols, 0.3), bias = filled(cols, 0.4);
    Buffer out(size_t(n) * 2);

    const cuda::Kernel add = cuda::compile(gb::vector_add(4096));
    report("vector_add", "16384x8192", time_ms([&] { add(cuda::Grid(cdiv(n, 4096)), x->ptr(), y->ptr(), out.ptr(), n); }), 3.0 * n * 2);

    const cuda::Kernel sm = cuda::compile(gb::softmax(cols));
    report("softmax", "16384x8192", time_ms([&] { sm(cuda::Grid(rows), x->ptr(), out.ptr()); }), 2.0 * n * 2);

    const cuda::Kernel ln = cuda::compile(gb::layernorm(cols));
    report("layernorm", "16384x8192", time_ms([&] { ln(cuda::Grid(rows), x->ptr(), w->ptr(), bias->ptr(), out.ptr()); }), 2.0 * n * 2);

    const cuda::Kernel rms = cuda::compile(gb::rmsnorm(cols));
    report("rmsnorm", "16384x8192", time_ms([&] { rms(cuda::Grid(rows), x->ptr(), w->ptr(), out.ptr()); }), 2.0 * n * 2);

    x.reset();
    y.reset();
    auto logits = filled(rows * vocab, 0.5);
    Buffer target(size_t(rows) * 8), loss(4);
    std::vector<int64_t> t(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) t[size_t(i)] = (i * 7919) % vocab;
    rc::copy_sync(target.p, t.data(), t.size() * 8, rc::CopyKind::HostToDevice, nullptr);
    const cuda::Kernel ce = cuda::compile(gb::cross_entropy(vocab, rows, 8192));
    report("cross_entropy", "16384x32000", time_ms([&] { ce(cuda::Grid(rows), logits->ptr(), target.ptr(), loss.ptr()); }),
           double(rows) * vocab * 2);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "gpu_tile: %s\n", e.what());
    return 1;
  }
  return 0;
}
