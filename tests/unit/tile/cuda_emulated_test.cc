// The generated CUDA run without a GPU: the translation unit of each kernel of cuda_kernels.h,
// compiled for the host against a small emulation of the CUDA built-ins it uses (one host
// thread per CUDA thread, a thread block at a time: threadIdx/blockIdx, __syncthreads as a
// barrier, warp shuffles through a shared slot per thread, atomics), run on the cases of
// cuda_cases.h and compared with the CPU backend. So CI checks what the emitter computes (the
// blocked layout, register and shared blocks, shuffle reductions, atomics once per program),
// not only that NVRTC accepts it; the GPU tests (cuda_gpu_test.cc) check the real thing.
#include <gtest/gtest.h>

#include "tile/cpu/cc.h"
#include "tile/cuda/emit_cuda.h"
#include "tile/passes/passes.h"
#include "tests/unit/tile/cuda_cases.h"

namespace kiln::tile {
namespace {

const char* kEmulation = R"(// kiln tile: the CUDA built-ins the generated code uses, emulated on the host (tests only).
#include <pthread.h>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#define __global__
#define __device__
#define __host__
#define __launch_bounds__(n)
#define __restrict__ __restrict
#define __shared__ static  // one thread block at a time: a static is the block's
struct kiln_emu_dim3 { unsigned x = 0, y = 0, z = 0; };
struct uint2 { unsigned x, y; };
struct alignas(16) uint4 { unsigned x, y, z, w; };
template <class T>
static inline void __stwb(T* p, T v) { *p = v; }
static thread_local kiln_emu_dim3 threadIdx, blockIdx;
static kiln_emu_dim3 gridDim, blockDim;
// A block's dynamic shared memory, 1024-byte aligned as wgmma's swizzle needs; a shared
// address is the offset in it.
alignas(1024) static unsigned char kiln_tile_smem_base[232448];
static unsigned char* const kiln_tile_smem = kiln_tile_smem_base;
static inline unsigned long long __cvta_generic_to_shared(const void* p) {
  return (unsigned long long)(static_cast<const unsigned char*>(p) - kiln_tile_smem_base);
}
static pthread_barrier_t kiln_emu_barrier;
static inline void __syncthreads() { pthread_barrier_wait(&kiln_emu_barrier); }
// Tensor cores (the PTX ISA's fragment layouts): each lane's registers or row address through
// a slot per thread; declared here, defined after the prelude (kEmulationAfter).
#define KILN_TILE_EMULATED 1
static inline void kiln_tile_cp_async16(uint16_t* dst, const uint16_t* src) { std::memcpy(dst, src, 16); }
static inline void kiln_tile_cp_async_wait_all() {}
static inline void kiln_tile_cp_async_commit() {}
template <int N> static inline void kiln_tile_cp_async_wait() {}
template <int N, bool TRANS> static void kiln_tile_ldmatrix(unsigned* r, const uint16_t* row);
template <bool BF16> static void kiln_tile_mma_m16n8k16(float* c, const unsigned* a, const unsigned* b);
template <int N, bool BF16> static void kiln_tile_wgmma(float* d, unsigned long long a, unsigned long long b);
static inline void kiln_tile_wgmma_fence() {}
static inline void kiln_tile_wgmma_commit() {}
template <int N> static inline void kiln_tile_wgmma_wait() {}
static inline void kiln_tile_wgmma_reg(float&) {}
static inline void kiln_tile_fence_async() {}
static unsigned long long kiln_emu_lane[1024];
template <class T>
static inline T kiln_emu_exchange(T v, unsigned from) {
  kiln_emu_lane[threadIdx.x] = (unsigned long long)v;
  __syncthreads();
  const T got = T(kiln_emu_lane[from]);
  __syncthreads();
  return got;
}
static inline unsigned __shfl_xor_sync(unsigned, unsigned v, int m) { return kiln_emu_exchange(v, threadIdx.x ^ unsigned(m)); }
static inline unsigned long long __shfl_xor_sync(unsigned, unsigned long long v, int m) { return kiln_emu_exchange(v, threadIdx.x ^ unsigned(m)); }
static inline unsigned __shfl_sync(unsigned, unsigned v, int l) { return kiln_emu_exchange(v, (threadIdx.x & ~31u) | unsigned(l)); }
static inline unsigned long long __shfl_sync(unsigned, unsigned long long v, int l) { return kiln_emu_exchange(v, (threadIdx.x & ~31u) | unsigned(l)); }
static inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
template <class T>
static inline T kiln_emu_add_float(T* p, T v) {
  T old, next;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do next = old + v;
  while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}
static inline float atomicAdd(float* p, float v) { return kiln_emu_add_float(p, v); }
static inline double atomicAdd(double* p, double v) { return kiln_emu_add_float(p, v); }
static inline unsigned atomicCAS(unsigned* p, unsigned expected, unsigned desired) {
  __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return expected;
}
// Runs `block` (one CUDA thread's body) for every thread of every block of the grid.
template <class F>
static void kiln_emu_launch(const int64_t* grid, unsigned threads, F block) {
  gridDim = {unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2])};
  blockDim = {threads, 1, 1};
  pthread_barrier_init(&kiln_emu_barrier, nullptr, threads);
  for (unsigned z = 0; z < gridDim.z; ++z)
    for (unsigned y = 0; y < gridDim.y; ++y)
      for (unsigned x = 0; x < gridDim.x; ++x) {
        std::vector<std::thread> ts;
        for (unsigned t = 0; t < threads; ++t)
          ts.emplace_back([=] {
            threadIdx = {t, 0, 0};
            blockIdx = {x, y, z};
            block();
          });
        for (std::thread& t : ts) t.join();
      }
  pthread_barrier_destroy(&kiln_emu_barrier);
}
)";

const char* kEmulationAfter = R"(
static const uint16_t* kiln_emu_rows[1024];
template <int N, bool TRANS>
static void kiln_tile_ldmatrix(unsigned* r, const uint16_t* row) {
  const unsigned l = threadIdx.x & 31, w = threadIdx.x & ~31u;
  kiln_emu_rows[threadIdx.x] = row;
  __syncthreads();
  for (unsigned i = 0; i < unsigned(N); ++i) {
    unsigned lo, hi;
    if (TRANS) {  // column l / 4, rows 2 (l % 4) and 2 (l % 4) + 1 of matrix i
      lo = kiln_emu_rows[w + 8 * i + 2 * (l % 4)][l / 4];
      hi = kiln_emu_rows[w + 8 * i + 2 * (l % 4) + 1][l / 4];
    } else {  // row l / 4, columns 2 (l % 4) and 2 (l % 4) + 1
      lo = kiln_emu_rows[w + 8 * i + l / 4][2 * (l % 4)];
      hi = kiln_emu_rows[w + 8 * i + l / 4][2 * (l % 4) + 1];
    }
    r[i] = lo | hi << 16;
  }
  __syncthreads();
}
static unsigned kiln_emu_frag[1024][6];
template <bool BF16>
static void kiln_tile_mma_m16n8k16(float* c, const unsigned* a, const unsigned* b) {
  const unsigned l = threadIdx.x & 31, w = threadIdx.x & ~31u;
  for (int i = 0; i < 4; ++i) kiln_emu_frag[threadIdx.x][i] = a[i];
  for (int i = 0; i < 2; ++i) kiln_emu_frag[threadIdx.x][4 + i] = b[i];
  __syncthreads();
  auto half = [](unsigned reg, unsigned k) {
    const uint16_t h = uint16_t(k % 2 ? reg >> 16 : reg & 0xffffu);
    return BF16 ? ks::bfloat16_to_float(h) : ks::float16_to_float(h);
  };
  auto A = [&](unsigned row, unsigned k) { return half(kiln_emu_frag[w + row % 8 * 4 + k % 8 / 2][row / 8 + 2 * (k / 8)], k); };
  auto B = [&](unsigned k, unsigned n) { return half(kiln_emu_frag[w + n * 4 + k % 8 / 2][4 + k / 8], k); };
  for (unsigned q = 0; q < 4; ++q) {
    const unsigned row = l / 4 + (q / 2) * 8, col = 2 * (l % 4) + q % 2;
    for (unsigned k = 0; k < 16; ++k) c[q] = std::fma(A(row, k), B(k, col), c[q]);
  }
  __syncthreads();
}
// wgmma m64nNk16 read through its descriptors as the PTX ISA defines them (not through the
// emitter's layout function): start address, leading and stride byte offsets (bits 16.. and
// 32.., in 16 bytes), the swizzle (bits 62..: 1, 2, 3 = 128, 64, 32 bytes), which XORs the byte
// address's bits 4.. with its bits 7... a is K-major: 8-row groups SBO apart, a group's rows W
// (the swizzle's bytes) apart, k at 2 bytes; b N-major: W / 2 columns contiguous, the next
// W / 2 at LBO, k rows W apart in groups of 8 SBO apart. Each thread computes its accumulators
// (the warp's 16 rows of the m64 tile; register 4i + q: row g + 8 (q / 2), column 8i + 2t + q % 2).
template <int N, bool BF16>
static void kiln_tile_wgmma(float* d, unsigned long long da, unsigned long long db) {
  auto offset = [](unsigned long long desc, int at) { return ((desc >> at) & 0x3fff) << 4; };
  auto bytes = [](unsigned long long desc) { return (desc >> 62) == 1 ? 128u : (desc >> 62) == 2 ? 64u : (desc >> 62) == 3 ? 32u : 0u; };
  auto element = [&](unsigned long long desc, unsigned long long at) {
    unsigned long long addr = offset(desc, 0) + at;
    const unsigned W = bytes(desc);
    if (W) addr ^= ((addr >> 7) & (W / 16 - 1)) << 4;
    uint16_t h;
    std::memcpy(&h, kiln_tile_smem_base + addr, 2);
    return BF16 ? ks::bfloat16_to_float(h) : ks::float16_to_float(h);
  };
  auto A = [&](unsigned r, unsigned k) { return element(da, r / 8 * offset(da, 32) + r % 8 * bytes(da) + k * 2); };
  auto B = [&](unsigned k, unsigned n) {
    const unsigned W = bytes(db);
    return element(db, n / (W / 2) * offset(db, 16) + n % (W / 2) * 2 + k / 8 * offset(db, 32) + k % 8 * W);
  };
  const unsigned l = threadIdx.x & 31, w = threadIdx.x / 32 % 4;
  for (unsigned i = 0; i < unsigned(N) / 8; ++i)
    for (unsigned q = 0; q < 4; ++q) {
      const unsigned row = 16 * w + l / 4 + (q / 2) * 8, col = 8 * i + 2 * (l % 4) + q % 2;
      for (unsigned k = 0; k < 16; ++k) d[4 * i + q] = std::fma(A(row, k), B(k, col), d[4 * i + q]);
    }
}
)";

// The parameter types of an emitted entry point, from its signature.
std::vector<std::string> param_types(const cuda::EmittedKernel& k) {
  const size_t open = k.source.find(k.entry + "(") + k.entry.size() + 1;
  const std::string list = k.source.substr(open, k.source.find(')', open) - open);
  std::vector<std::string> types;
  for (size_t at = 0; at <= list.size();) {
    size_t comma = list.find(", ", at);
    if (comma == std::string::npos) comma = list.size();
    std::string p = list.substr(at, comma - at);
    p = p.substr(0, p.rfind(' '));  // drop the name
    for (const char* word : {" __restrict__", "const "})
      if (size_t w = p.find(word); w != std::string::npos) p.erase(w, std::strlen(word));
    types.push_back(p);
    at = comma + 2;
  }
  return types;
}

// Runs the cases of `kernels` (the variant for any pointer alignment, or for 16-byte aligned
// pointers: the cases' tensors are fresh, so aligned) in the emulation against the CPU backend.
void emulate(const std::vector<test::NamedKernel>& kernels, bool aligned) {
  // One translation unit: the kernels, and per kernel a kiln_emu_run_<entry>(args, grid) that
  // launches it with args[i] pointing to parameter i's value (as the driver API takes them).
  std::vector<cuda::EmittedKernel> emitted;
  std::map<std::string, std::vector<std::string>> types;  // by kernel name
  std::string runners;
  for (const test::NamedKernel& nk : kernels) {
    Program p = nk.make();
    verify(p);
    run_passes(p, default_passes());
    emitted.push_back(cuda::emit_kernel(p, test::host_test_arch(nk.name), true, aligned));
    const cuda::EmittedKernel& k = emitted.back();
    types[nk.name] = param_types(k);
    std::string call;
    for (size_t i = 0; i < types[nk.name].size(); ++i)
      call += (i ? ", " : "") + std::string("*static_cast<") + types[nk.name][i] + "*>(args[" + std::to_string(i) + "])";
    runners += "extern \"C\" void kiln_emu_run_" + k.entry + "(void** args, const int64_t* grid) {\n  kiln_emu_launch(grid, " +
               std::to_string(k.threads) + ", [=] { " + k.entry + "(" + call + "); });\n}\n";
  }
  std::string tu = cuda::translation_unit(emitted);
  for (const std::string smem : {"extern __shared__ __align__(16) unsigned char kiln_tile_smem[];",
                                 "extern __shared__ __align__(1024) unsigned char kiln_tile_smem_base[];"})
    for (size_t at; (at = tu.find(smem)) != std::string::npos;) tu.erase(at, smem.size());  // the emulation's global
  std::shared_ptr<cpu::Library> lib = cpu::compile_source(kEmulation + tu + kEmulationAfter + runners, "cuda_emulated");

  for (const test::Case& c : test::cases()) {
    if (!types.count(c.kernel)) continue;
    SCOPED_TRACE(c.kernel);
    auto run = reinterpret_cast<void (*)(void**, const int64_t*)>(lib->symbol("kiln_emu_run_kiln_tile_" + c.kernel));
    const std::vector<std::string>& ts = types.at(c.kernel);
    ASSERT_EQ(ts.size(), c.args.size());
    const std::vector<Tensor> want = test::run_on_cpu(c);
    std::vector<Tensor> got(c.args.size());
    struct Slot {
      void* p;
      int32_t i32;
      int64_t i64;
      float f32;
      double f64;
    };
    std::vector<Slot> slots(c.args.size());
    std::vector<void*> args(c.args.size());
    for (size_t i = 0; i < c.args.size(); ++i) {
      const test::CaseArg& a = c.args[i];
      Slot& s = slots[i];
      if (a.is_tensor) {
        got[i] = a.t.clone();
        s.p = got[i].data_ptr();
        args[i] = &s.p;
      } else if (ts[i] == "float" || ts[i] == "double") {
        s.f32 = float(a.is_float ? a.f : double(a.i));
        s.f64 = a.is_float ? a.f : double(a.i);
        args[i] = ts[i] == "float" ? static_cast<void*>(&s.f32) : &s.f64;
      } else {
        s.i32 = int32_t(a.i);
        s.i64 = a.i;
        args[i] = ts[i] == "int32_t" ? static_cast<void*>(&s.i32) : &s.i64;
      }
    }
    const int64_t grid[3] = {c.grid.x, c.grid.y, c.grid.z};
    run(args.data(), grid);
    test::expect_like_cpu(c, got, want, "in the emulation");
  }
}

TEST(TileCudaEmulated, EveryKernelMatchesTheCpuBackend) { emulate(test::cuda_kernels(), false); }

// The variant a launch with aligned pointers runs (its runs' alignment proven, not tested), for
// the row kernels.
TEST(TileCudaEmulated, TheAlignedVariantMatchesTheCpuBackend) {
  std::vector<test::NamedKernel> rows;
  for (const test::NamedKernel& k : test::cuda_kernels())
    if (k.name.starts_with("bench_") && k.name != "bench_matmul") rows.push_back(k);
  ASSERT_GE(rows.size(), 5u);
  emulate(rows, true);
}

}  // namespace
}  // namespace kiln::tile
