// Hand-written tile kernels on the GPU at workloads.md's shapes (../shared/bench/workloads.md):
// vector_add, pointwise, softmax, layernorm, rmsnorm and cross_entropy in bf16 (fp32 math), each timed with
// device events (median of 50 launches after 5 warm-up ones) against its DRAM floor: the bytes it
// must read and write at 4.3 TB/s, the H200's measured copy bandwidth; and a tile matmul on
// tensor cores at 8192^3 bf16 (f32 accumulators) beside cuBLAS's (cublasGemmEx, loaded with
// dlopen as the driver is: $KILN_CUBLAS_LIBRARY, else libcublas.so.13/.12 where the loader or
// the CUDA toolkit has it), its result checked against cuBLAS's. bench/gpu.sh runs it.
//
//   ./build/kiln_bench_gpu_tile [--reps N]      # one line per workload, and a JSON line each
//   ./build/kiln_bench_gpu_tile --sweep [--reps N]  # the row kernels under other warps / blocks
//   ./build/kiln_bench_gpu_tile --sources [ARCH]  # the kernels' CUDA translation unit (for ARCH: sm_90a: wgmma)
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
#include "runtime/cuda/library.h"
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
bool g_sweep = false;  // --sweep: the row kernels' other configurations too (sweep_rows)

// The tile matmul's configurations timed (the GPU call is the only place to choose one): BM,
// BN, BK, warps, stages, and whether the dot may take wgmma on sm_90a (else mma.sync:
// KILN_TILE_WGMMA=0 while it compiles).
struct MatmulConfig {
  int64_t bm, bn, bk;
  int warps, stages;
  bool wgmma = true;
  cuda::Kernel compile() const {
    setenv("KILN_TILE_WGMMA", wgmma ? "1" : "0", 1);
    cuda::Kernel k = cuda::compile(make());
    unsetenv("KILN_TILE_WGMMA");
    return k;
  }
  Program make() const {
    Program p = gb::matmul(bm, bn, bk, warps, stages);
    p.name = "matmul_bf16_" + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "_w" + std::to_string(warps) +
             "_s" + std::to_string(stages);
    return p;
  }
  std::string str() const {
    return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + " w" + std::to_string(warps) + " s" +
           std::to_string(stages) + (wgmma ? "" : " mma.sync");
  }
};
// On sm_90a the first seven run on wgmma (their shapes allow it); the last is the best mma.sync
// configuration before wgmma, for comparison in the same call.
const MatmulConfig kMatmulConfigs[] = {
    {128, 256, 64, 8, 4}, {128, 256, 64, 8, 3}, {256, 128, 64, 8, 4}, {128, 128, 64, 8, 4},
    {256, 128, 64, 8, 3}, {128, 256, 32, 8, 4}, {128, 128, 32, 4, 4}, {256, 128, 32, 8, 3, false},
};

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

// cuBLAS's GEMM, loaded at run time (the ABI of cublas_api.h: int status, opaque handle).
class Cublas {
 public:
  Cublas() : lib_("cuBLAS", rc::library_candidates("KILN_CUBLAS_LIBRARY", {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})) {
    ok_ = lib_.ok() && lib_.get(create_, "cublasCreate_v2") && lib_.get(destroy_, "cublasDestroy_v2") &&
          lib_.get(set_stream_, "cublasSetStream_v2") && lib_.get(gemm_, "cublasGemmEx") && create_(&handle_) == 0;
  }
  ~Cublas() {
    if (handle_) destroy_(handle_);
  }
  bool ok() const { return ok_; }
  std::string error() const { return lib_.ok() ? "cublasCreate failed or a symbol is missing: " + lib_.error() : lib_.error(); }
  // c[M, N] = a[M, K] @ b[K, N], row-major bf16, f32 compute: column-major c^T = b^T a^T.
  int gemm_bf16(const void* a, const void* b, void* c, int M, int N, int K, rc::Stream s) {
    const float one = 1, zero = 0;
    constexpr int kOpN = 0, kBF16 = 14 /* CUDA_R_16BF */, kCompute32F = 68, kDefaultAlgo = -1;
    set_stream_(handle_, s);
    return gemm_(handle_, kOpN, kOpN, N, M, K, &one, b, kBF16, N, a, kBF16, K, &zero, c, kBF16, N, kCompute32F, kDefaultAlgo);
  }

 private:
  rc::Library lib_;
  bool ok_ = false;
  void* handle_ = nullptr;
  int (*create_)(void**) = nullptr;
  int (*destroy_)(void*) = nullptr;
  int (*set_stream_)(void*, void*) = nullptr;
  int (*gemm_)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int, const void*, void*,
               int, int, int, int) = nullptr;
};

// The row kernels under each number of warps (and cross_entropy's chunk of columns), one line
// each: where the hand-written kernels' choices come from.
void sweep_rows(const cuda::Kernel& fill) {
  const int64_t rows = 16384, cols = 8192, n = rows * cols, vocab = 32000;
  Buffer x(size_t(n) * 2), w(size_t(cols) * 2), bias(size_t(cols) * 2), out(size_t(n) * 2);
  fill(cuda::Grid(cdiv(n, 1024)), x.ptr(), n, 0.1);
  fill(cuda::Grid(cdiv(cols, 1024)), w.ptr(), cols, 0.3);
  fill(cuda::Grid(cdiv(cols, 1024)), bias.ptr(), cols, 0.4);
  auto line = [](const char* name, const std::string& cfg, const cuda::Kernel& k, double ms, double bytes) {
    const double floor_ms = bytes / kBandwidth * 1e3;
    const rc::FunctionResources r = k.resources();
    std::printf("sweep %-14s %-22s %8.3f ms   %5.1f%% of the floor   %3d registers, %d B spilled, %d blocks/SM\n", name,
                cfg.c_str(), ms, 100 * floor_ms / ms, r.registers, r.local_bytes, r.blocks_per_sm);
    std::fflush(stdout);
  };
  for (int warps : {4, 8, 16, 32}) {
    const std::string cfg = "w" + std::to_string(warps);
    const cuda::Kernel sm = cuda::compile(gb::softmax(cols, warps));
    line("softmax", cfg, sm, time_ms([&] { sm(cuda::Grid(rows), x.ptr(), out.ptr()); }), 2.0 * n * 2);
    const cuda::Kernel ln = cuda::compile(gb::layernorm(cols, warps));
    line("layernorm", cfg, ln, time_ms([&] { ln(cuda::Grid(rows), x.ptr(), w.ptr(), bias.ptr(), out.ptr()); }), 2.0 * n * 2);
    const cuda::Kernel rms = cuda::compile(gb::rmsnorm(cols, warps));
    line("rmsnorm", cfg, rms, time_ms([&] { rms(cuda::Grid(rows), x.ptr(), w.ptr(), out.ptr()); }), 2.0 * n * 2);
  }
  Buffer logits(size_t(rows) * vocab * 2), target(size_t(rows) * 8), loss(4);
  fill(cuda::Grid(cdiv(rows * vocab, 1024)), logits.ptr(), rows * vocab, 0.5);
  std::vector<int64_t> t(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) t[size_t(i)] = (i * 7919) % vocab;
  rc::copy_sync(target.p, t.data(), t.size() * 8, rc::CopyKind::HostToDevice, nullptr);
  for (auto [name, make] : {std::pair{"cross_entropy", &gb::cross_entropy}})
    for (int64_t block : {2048, 4096, 8192})
      for (int warps : {4, 8}) {
        const std::string cfg = "block " + std::to_string(block) + " w" + std::to_string(warps);
        try {
          const cuda::Kernel ce = cuda::compile(make(vocab, rows, block, warps));
          line(name, cfg, ce, time_ms([&] { ce(cuda::Grid(rows), logits.ptr(), target.ptr(), loss.ptr()); }),
               double(rows) * vocab * 2);
        } catch (const kiln::Error& e) {
          std::printf("sweep %s %s: %s\n", name, cfg.c_str(), e.what());
        }
      }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--reps")) g_reps = std::max(1, std::atoi(argv[i + 1]));
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--sweep")) g_sweep = true;
  if (argc > 1 && !std::strcmp(argv[1], "--sources")) {  // the CUDA of the kernels (no GPU needed)
    const std::string arch = argc > 2 ? argv[2] : "";
    std::vector<cuda::EmittedKernel> ks;
    for (Program* p : {new Program(gb::fill_kernel(kBFloat16)), new Program(gb::vector_add(4096)), new Program(gb::pointwise(8192)),
                       new Program(gb::softmax(8192)),
                       new Program(gb::layernorm(8192)), new Program(gb::rmsnorm(8192)), new Program(gb::cross_entropy(32000, 16384, 8192))}) {
      verify(*p);
      run_passes(*p, default_passes());
      ks.push_back(cuda::emit_kernel(*p));
      delete p;
    }
    for (const MatmulConfig& cfg : kMatmulConfigs) {
      Program p = cfg.make();
      verify(p);
      run_passes(p, default_passes());
      ks.push_back(cuda::emit_kernel(p, cfg.wgmma ? arch : std::string()));
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
    if (g_sweep) {
      sweep_rows(fill);
      return 0;
    }
    auto x = filled(n, 0.1), y = filled(n, 0.2), w = filled(cols, 0.3), bias = filled(cols, 0.4);
    Buffer out(size_t(n) * 2);

    const cuda::Kernel add = cuda::compile(gb::vector_add(4096));
    report("vector_add", "16384x8192", time_ms([&] { add(cuda::Grid(cdiv(n, 4096)), x->ptr(), y->ptr(), out.ptr(), n); }), 3.0 * n * 2);

    const cuda::Kernel pw = cuda::compile(gb::pointwise(cols));
    report("pointwise", "16384x8192", time_ms([&] { pw(cuda::Grid(n / 4096), x->ptr(), w->ptr(), bias->ptr(), out.ptr()); }), 2.0 * n * 2);

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
    // 4096 columns a chunk at 4 warps: the fastest of --sweep on the H200 (43.7% of the floor
    // against 40.4% at 8192 and 8 warps).
    const cuda::Kernel ce = cuda::compile(gb::cross_entropy(vocab, rows, 4096, 4));
    report("cross_entropy", "16384x32000", time_ms([&] { ce(cuda::Grid(rows), logits->ptr(), target.ptr(), loss.ptr()); }),
           double(rows) * vocab * 2);
    logits.reset();

    // The tile matmul beside cuBLAS at 8192^3 bf16.
    const int64_t mn = 8192;
    auto a = filled(mn * mn, 0.6), b = filled(mn * mn, 0.7);
    Buffer c(size_t(mn * mn) * 2), c_ref(size_t(mn * mn) * 2);
    const double tflop = 2.0 * double(mn) * mn * mn / 1e12;
    double tile_ms = 0;
    std::string best;
    for (const MatmulConfig& cfg : kMatmulConfigs) {  // each config's result lands in c; the best one's is run last
      try {
        const cuda::Kernel mm = cfg.compile();
        const double ms = time_ms([&] { mm(cuda::Grid(cdiv(mn, cfg.bm) * cdiv(mn, cfg.bn)), a->ptr(), b->ptr(), c.ptr(), mn, mn, mn); });
        std::printf("%-14s %-16s %8.3f ms   %6.1f TFLOP/s   tile %s\n", "matmul_tile", "8192^3 bf16", ms, tflop / ms * 1e3,
                    cfg.str().c_str());
        if (tile_ms == 0 || ms < tile_ms) tile_ms = ms, best = cfg.str();
      } catch (const kiln::Error& e) {
        std::printf("matmul_tile %s: %s\n", cfg.str().c_str(), e.what());
      }
      std::fflush(stdout);
    }
    for (const MatmulConfig& cfg : kMatmulConfigs)
      if (cfg.str() == best) cfg.compile()(cuda::Grid(cdiv(mn, cfg.bm) * cdiv(mn, cfg.bn)), a->ptr(), b->ptr(), c.ptr(), mn, mn, mn);
    Cublas blas;
    if (!blas.ok()) {
      std::printf("matmul: cuBLAS not loaded: %s\n", blas.error().c_str());
      std::printf("{\"bench\": \"gpu_tile\", \"workload\": \"matmul\", \"mode\": \"tile %s\", \"shape\": \"8192^3 bf16\", \"median_ms\": %.4f}\n",
                  best.c_str(), tile_ms);
    } else {
      const rc::Stream s = rc::current_stream(rc::current_device());
      int status = 0;
      const double blas_ms = time_ms([&] { status |= blas.gemm_bf16(a->p, b->p, c_ref.p, int(mn), int(mn), int(mn), s); });
      if (status != 0) std::printf("matmul: cublasGemmEx failed (status %d)\n", status);
      // The tile result against cuBLAS's (both bf16, f32 accumulators: they differ by rounding).
      std::vector<uint16_t> got(size_t(mn * mn)), want(size_t(mn * mn));
      rc::copy_sync(got.data(), c.p, got.size() * 2, rc::CopyKind::DeviceToHost, nullptr);
      rc::copy_sync(want.data(), c_ref.p, want.size() * 2, rc::CopyKind::DeviceToHost, nullptr);
      auto f = [](uint16_t h) {
        const uint32_t u = uint32_t(h) << 16;
        float x;
        std::memcpy(&x, &u, 4);
        return double(x);
      };
      double max_diff = 0, max_ref = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        max_diff = std::max(max_diff, std::abs(f(got[i]) - f(want[i])));
        max_ref = std::max(max_ref, std::abs(f(want[i])));
      }
      std::printf("%-14s %-16s %8.3f ms   %6.1f TFLOP/s   the best tile (%s) at %5.1f%% of cuBLAS; max |tile - cuBLAS| %.3g (max |cuBLAS| %.3g)\n",
                  "matmul_cublas", "8192^3 bf16", blas_ms, tflop / blas_ms * 1e3, best.c_str(), 100 * blas_ms / tile_ms, max_diff, max_ref);
      // floor_ms: cuBLAS's time, so the summary's floor / median is the tile kernel's share of it.
      std::printf("{\"bench\": \"gpu_tile\", \"workload\": \"matmul\", \"mode\": \"tile %s vs cublas\", \"shape\": \"8192^3 bf16\", "
                  "\"median_ms\": %.4f, \"floor_ms\": %.4f, \"max_abs_diff\": %.4g}\n",
                  best.c_str(), tile_ms, blas_ms, max_diff);
    }
    std::fflush(stdout);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "gpu_tile: %s\n", e.what());
    return 1;
  }
  return 0;
}
