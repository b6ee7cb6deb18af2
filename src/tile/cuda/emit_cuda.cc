// The CUDA emitter: the C-like emitter's hooks for CUDA C++ compiled by NVRTC.
//
// A program instance is a thread block. Scalars are computed by every thread alike (uniform);
// a block op's elements are shared among the threads in a blocked layout: thread t owns the
// runs of V consecutive elements starting at V * (t + k * threads), so a warp's accesses to a
// contiguous dim are coalesced. Values inside a fused loop stay in each thread's registers;
// a block that something outside the loop reads lives in shared memory (one dynamic
// allocation per kernel, each block at its own offset), and every per-element loop that uses
// shared memory or writes global memory ends with __syncthreads, so whatever reads a block next
// (another thread's elements: a reduction, a view, a dot) sees it written, and no loop
// overwrites a block another thread still reads (a loop of registers only needs none).
// Reductions to a scalar go through warp shuffles, then shared memory across the warps; other
// reductions and dot give each thread its own output elements; a scan runs on one thread.
#include "tile/cuda/emit_cuda.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "scalar/prelude.h"
#include "tile/cpu/emit_c.h"
#include "tile/emit/c_like.h"

namespace kiln::tile::cuda {
namespace {

// What every CUDA translation unit has after the prelude. NVRTC has no standard headers: the
// fixed-width integer names come from the prelude's, and numeric_limits has what the
// emitter's reduction identities use (nvcc, which has them, compiles the same source).
const char* kSupport = R"(
// ---------------------------------------------------------------- kiln tile: CUDA support
namespace ks = kiln::scalar;
typedef ks::i8 int8_t;
typedef ks::i16 int16_t;
typedef ks::i32 int32_t;
typedef ks::i64 int64_t;
typedef ks::u8 uint8_t;
typedef ks::u16 uint16_t;
typedef ks::u32 uint32_t;
typedef ks::u64 uint64_t;

#if defined(__CUDACC_RTC__)
namespace std {
template <class T> struct numeric_limits;
#define KILN_TILE_LIMITS(T, LO, HI)                                     \
  template <> struct numeric_limits<T> {                                \
    static constexpr __device__ T lowest() { return LO; }               \
    static constexpr __device__ T max() { return HI; }                  \
  };
KILN_TILE_LIMITS(uint8_t, 0, 255)
KILN_TILE_LIMITS(int8_t, -128, 127)
KILN_TILE_LIMITS(int16_t, -32768, 32767)
KILN_TILE_LIMITS(int32_t, -2147483647 - 1, 2147483647)
KILN_TILE_LIMITS(int64_t, -9223372036854775807LL - 1, 9223372036854775807LL)
#undef KILN_TILE_LIMITS
}  // namespace std
#else  // nvcc (a generated source checked by hand: nvcc -arch=sm_90a -cubin)
#include <limits>
#endif

// A run's loop is written twice (emit_cuda.cc, finish_run): its addresses, then its values, so
// each copy leaves some of the other's declarations unused (warning 177).
#if defined(__CUDACC__)
#pragma nv_diag_suppress 177
#endif

// A warp shuffle of any 1-8 byte value (its bits).
template <class T>
__device__ inline T kiln_tile_shfl(T v, int lane, bool by_xor) {
  if constexpr (sizeof(T) == 8) {
    unsigned long long u;
    memcpy(&u, &v, 8);
    u = by_xor ? __shfl_xor_sync(0xffffffffu, u, lane) : __shfl_sync(0xffffffffu, u, lane);
    memcpy(&v, &u, 8);
  } else {
    unsigned u = 0;
    memcpy(&u, &v, sizeof(T));
    u = by_xor ? __shfl_xor_sync(0xffffffffu, u, lane) : __shfl_sync(0xffffffffu, u, lane);
    memcpy(&v, &u, sizeof(T));
  }
  return v;
}

// The reductions' combining functions, as the CPU backend's loops compute them: integers wrap,
// bool sums are any / all, float max/min propagate NaN.
struct kiln_tile_sum {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (ks::is_bool<T>) return a || b;
    else if constexpr (ks::is_int<T>) return ks::add<T>(a, b);
    else return a + b;
  }
};
struct kiln_tile_prod {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (ks::is_bool<T>) return a && b;
    else if constexpr (ks::is_int<T>) return ks::mul<T>(a, b);
    else return a * b;
  }
};
struct kiln_tile_max {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (ks::is_bool<T>) return a || b;
    else return a > b || a != a ? a : b;
  }
};
struct kiln_tile_min {
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (ks::is_bool<T>) return a && b;
    else return a < b || a != a ? a : b;
  }
};

// Every thread's partial result combined, the same value in every thread: a butterfly of
// shuffles within each warp, then the warps' results through shared memory.
template <int NT, class T, class F>
__device__ inline T kiln_tile_block_reduce(T v, F f) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = f(v, kiln_tile_shfl(v, o, true));
  if constexpr (NT > 32) {
    __shared__ T part[NT / 32];
    __syncthreads();  // the previous use of part is read
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = part[0];
#pragma unroll
    for (int w = 1; w < NT / 32; ++w) v = f(v, part[w]);
  } else {
    v = kiln_tile_shfl(v, 0, false);  // lane 0's (a max of -0 and 0 may differ between lanes)
  }
  return v;
}

// A block in registers: this thread's elements of it, R of them (V-element runs, S apart). The
// per-element loops that read and write it are unrolled, so after inlining each [i] is a
// constant index into r (i - V * threadIdx.x folds to a constant) and r stays in registers.
template <class T, int R, int V, int S>
struct kiln_tile_regs {
  T r[R];
  __device__ T& operator[](int i) {
    const int c = i - int(threadIdx.x) * V;
    return r[c / S * V + c % V];
  }
};

// A run of R elements at the pointers p[0..R), those whose mask m is true, moved in 16-byte
// accesses (or as wide as the run is) when every element is there, contiguous and the first
// aligned; else one element at a time. Where the compiler sees the pointers are consecutive,
// only the mask and alignment tests are left.
// A run is at least 4 bytes (4 elements), so an access is 4, 8 or 16 bytes.
template <int B> struct kiln_tile_chunk;
template <> struct kiln_tile_chunk<16> { typedef uint4 type; };
template <> struct kiln_tile_chunk<8> { typedef uint2 type; };
template <> struct kiln_tile_chunk<4> { typedef unsigned type; };
template <int B> struct kiln_tile_bits { typedef unsigned type; };
template <> struct kiln_tile_bits<2> { typedef unsigned short type; };
template <> struct kiln_tile_bits<1> { typedef unsigned char type; };
// The 4-byte word k of the elements v (their bits, the first in the low bytes), built with
// shifts: a memcpy into the word leaves the store split into 2-byte pieces.
template <class T>
__device__ inline unsigned kiln_tile_word(const T* v, int k) {
  if constexpr (sizeof(T) == 8) {
    unsigned long long u;
    memcpy(&u, &v[k / 2], 8);
    return unsigned(k % 2 ? u >> 32 : u);
  } else {
    unsigned w = 0;
#pragma unroll
    for (int j = 0; j < int(4 / sizeof(T)); ++j) {
      typename kiln_tile_bits<sizeof(T)>::type b;
      memcpy(&b, &v[k * int(4 / sizeof(T)) + j], sizeof(T));
      w |= unsigned(b) << (8 * sizeof(T) * j);
    }
    return w;
  }
}
// last: the pointers are known to be consecutive and the mask true on a whole run where it is
// at the run's last element (copy_run), so only those are tested (the others are left to the
// element-wise path). consecutive: the pointers are (the emitter knows it: the compiler may not
// prove it through 32-bit index arithmetic), so only the masks and alignment are tested.
// aligned: and p[0] is aligned to `bytes` (the emitter proved it).
template <class T, int R>
__device__ inline bool kiln_tile_whole_run(T* const (&p)[R], const bool (&m)[R], int bytes, bool last = false,
                                           bool consecutive = false, bool aligned = false) {
  bool whole = aligned || reinterpret_cast<unsigned long long>(p[0]) % unsigned(bytes) == 0;
  if (last) return whole && m[R - 1];
#pragma unroll
  for (int i = 0; i < R; ++i) whole = whole && m[i] && (consecutive || p[i] == p[0] + i);
  return whole;
}
template <bool Consecutive = false, bool Aligned = false, class T, int R>
__device__ inline void kiln_tile_vload(T (&v)[R], T* const (&p)[R], const bool (&m)[R]) {
  constexpr int A = R * sizeof(T) < 16 ? R * sizeof(T) : 16;  // bytes per access
  typedef typename kiln_tile_chunk<A>::type C;
  if (kiln_tile_whole_run(p, m, A, false, Consecutive, Aligned)) {
#pragma unroll
    for (int c = 0; c < R * int(sizeof(T)) / A; ++c) {
      const C w = reinterpret_cast<const C*>(p[0])[c];
      memcpy(&v[c * A / sizeof(T)], &w, A);
    }
  } else {
#pragma unroll
    for (int i = 0; i < R; ++i)
      if (m[i]) v[i] = *p[i];
  }
}
template <bool Consecutive = false, bool Aligned = false, class T, int R>
__device__ inline void kiln_tile_vstore(T* const (&p)[R], const bool (&m)[R], const T (&v)[R]) {
  constexpr int A = R * sizeof(T) < 16 ? R * sizeof(T) : 16;
  typedef typename kiln_tile_chunk<A>::type C;
  if (kiln_tile_whole_run(p, m, A, false, Consecutive, Aligned)) {
#pragma unroll
    for (int c = 0; c < R * int(sizeof(T)) / A; ++c) {
      const T* at = &v[c * A / sizeof(T)];
      C w;
      if constexpr (A == 16) w = {kiln_tile_word(at, 0), kiln_tile_word(at, 1), kiln_tile_word(at, 2), kiln_tile_word(at, 3)};
      else if constexpr (A == 8) w = {kiln_tile_word(at, 0), kiln_tile_word(at, 1)};
      else w = kiln_tile_word(at, 0);
      __stwb(reinterpret_cast<C*>(p[0]) + c, w);  // (a plain store of w is split into 4-byte ones)
    }
  } else {
#pragma unroll
    for (int i = 0; i < R; ++i)
      if (m[i]) *p[i] = v[i];
  }
}

// A scalar op with a side effect (an atomic): run by thread 0, its result given to every thread.
template <class F>
__device__ inline auto kiln_tile_by_one_thread(F f) {
  typedef decltype(f()) T;
  __shared__ T slot;
  __syncthreads();  // the previous use of slot is read
  if (threadIdx.x == 0) slot = f();
  __syncthreads();
  return slot;
}

// An atomic update of a 1- or 2-byte value: compare-and-swap on the 4-byte word holding it.
template <class M, class F>
__device__ inline M kiln_tile_atomic_narrow(M* p, F update) {
  unsigned* word = reinterpret_cast<unsigned*>(reinterpret_cast<unsigned long long>(p) & ~3ull);
  const unsigned shift = unsigned(reinterpret_cast<unsigned long long>(p) & 3ull) * 8;
  const unsigned mask = (sizeof(M) == 1 ? 0xffu : 0xffffu) << shift;
  unsigned old = *reinterpret_cast<volatile unsigned*>(word), seen;
  M was;
  do {
    seen = old;
    was = M(seen >> shift);
    const M next = update(was);
    old = atomicCAS(word, seen, (seen & ~mask) | ((unsigned(next) << shift) & mask));
  } while (old != seen);
  return was;
}

// atomic_add: the old value. Integers add with wrap-around, floats natively; 16-bit floats add
// in float and round, as the eager add.
template <class T>
__device__ inline T kiln_tile_atomic_add(T* p, T v) {
  if constexpr (sizeof(T) == 8 && ks::is_int<T>)
    return T(atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)(v)));
  else if constexpr (sizeof(T) < 4)
    return kiln_tile_atomic_narrow(p, [v](T x) { return T(x + v); });
  else
    return atomicAdd(p, v);
}
template <bool BF16>
__device__ inline float kiln_tile_atomic_add16(uint16_t* p, float v) {
  const uint16_t was = kiln_tile_atomic_narrow(p, [v](uint16_t x) {
    return BF16 ? ks::float_to_bfloat16(ks::bfloat16_to_float(x) + v) : ks::float_to_float16(ks::float16_to_float(x) + v);
  });
  return BF16 ? ks::bfloat16_to_float(was) : ks::float16_to_float(was);
}

// ---- dot on tensor cores (emit_cuda.cc, emit_dot)
// An element index of a loop over a dot's result in the accumulator layout of mma.sync (see
// begin_elements): its row-major index, and j, which of this thread's accumulators it is.
struct kiln_tile_at {
  int linear, j;
  __device__ operator int() const { return linear; }
};
// A block in the accumulator layout: this thread's R elements, in registers (j folds to a
// constant in the unrolled loops).
template <class T, int R>
struct kiln_tile_mma_regs {
  T r[R];
  __device__ T& operator[](kiln_tile_at at) { return r[at.j]; }
};
// A dot operand in shared memory: 16-bit elements, row-major in rows of ROW, each 16-byte
// chunk (8 elements) at a swizzled place: chunk s of each 128-byte line at s ^ key, key the
// row % 8 for rows of a multiple of 64 elements, the line % 8 for rows that divide 64 (else 0),
// so the 8 rows an ldmatrix reads at one column fall in 8 different bank groups.
template <int ROW>
__device__ inline int kiln_tile_swizzle(int i) {
  const int key = ROW % 64 == 0 ? i / ROW : 64 % ROW == 0 ? i >> 6 : 0;
  return (i & ~63) | ((((i >> 3) ^ key) & 7) << 3) | (i & 7);
}
#if !defined(KILN_TILE_EMULATED)  // (the host emulation of the tests has its own)
// 16 bytes global -> shared without registers (cp.async.cg: through L2 only); complete at
// the next kiln_tile_cp_async_wait_all.
__device__ inline void kiln_tile_cp_async16(uint16_t* dst, const uint16_t* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(unsigned(__cvta_generic_to_shared(dst))), "l"(src) : "memory");
}
__device__ inline void kiln_tile_cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
// The copies issued since the last commit form a group; wait<N>: all but the N newest groups done.
__device__ inline void kiln_tile_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ inline void kiln_tile_cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }
#endif
template <bool BF16>
struct kiln_tile_half_ref {
  uint16_t* p;
  __device__ operator float() const { return BF16 ? ks::bfloat16_to_float(*p) : ks::float16_to_float(*p); }
  __device__ void operator=(float v) const { *p = BF16 ? ks::float_to_bfloat16(v) : ks::float_to_float16(v); }
};
// The layout wgmma reads (the PTX ISA's canonical swizzled layouts) of an [R, C] operand block:
// C split into panels of P = min(C, 64) columns (P * 2 = W bytes: the 128-, 64- or 32-byte
// swizzle), each panel's R rows of W bytes one after another, the 16-byte chunk s of row r at
// s ^ (r * W / 128) % (W / 16) -- the swizzle wgmma applies to address bits 4.. from bits 7..,
// so a panel starts 1024-byte aligned. a [M, K] is K-major (one row per M), b [K, N] N-major.
template <int R, int C>
__device__ inline int kiln_tile_wgmma_swizzle(int i) {
  constexpr int P = C < 64 ? C : 64;
  const int r = i / C, c = i % C;
  return c / P * (R * P) + r * P + ((((c % P) >> 3) ^ ((r * P / 64) & (P / 8 - 1))) << 3) + (c & 7);
}
// The matrix descriptor of the operand at element (r0, c0), r0 % 8 == 0 and c0 at a k16 step
// (K-major a) or a panel (N-major b): its start address, the leading byte offset (N-major: the
// next panel; unused K-major), the stride byte offset (the next 8 rows of a panel) and the swizzle.
template <int R, int C, bool KMAJOR>
__device__ inline unsigned long long kiln_tile_wgmma_desc(const uint16_t* block, int r0, int c0) {
  constexpr int P = C < 64 ? C : 64;
  constexpr unsigned long long lbo = KMAJOR ? 16 : R * P * 2, sbo = 16 * P, mode = P == 64 ? 1 : P == 32 ? 2 : 3;
  const unsigned long long at = unsigned(__cvta_generic_to_shared(block + kiln_tile_wgmma_swizzle<R, C>(r0 * C + c0)));
  return (at & 0x3ffff) >> 4 | (lbo >> 4) << 16 | (sbo >> 4) << 32 | mode << 62;
}
template <bool BF16, int ROW, int ROWS = 0>  // ROWS > 0: the wgmma layout of a [ROWS, ROW] block
struct kiln_tile_smem16 {
  uint16_t* p;
  static __device__ int at(int i) {
    if constexpr (ROWS > 0) return kiln_tile_wgmma_swizzle<ROWS, ROW>(i);
    else return kiln_tile_swizzle<ROW>(i);
  }
  __device__ kiln_tile_half_ref<BF16> operator[](int i) const { return {p + at(i)}; }
  // A run of R (2, 4 or 8) elements from e, a multiple of R: one store (inside one chunk).
  template <int R>
  __device__ void store_run(int e, const float (&v)[R]) const {
    unsigned w[R / 2];
#pragma unroll
    for (int k = 0; k < R / 2; ++k)
      w[k] = BF16 ? unsigned(ks::float_to_bfloat16(v[2 * k])) | unsigned(ks::float_to_bfloat16(v[2 * k + 1])) << 16
                  : unsigned(ks::float_to_float16(v[2 * k])) | unsigned(ks::float_to_float16(v[2 * k + 1])) << 16;
    uint16_t* to = p + at(e);
    if constexpr (R == 8) *reinterpret_cast<uint4*>(to) = uint4{w[0], w[1], w[2], w[3]};
    else if constexpr (R == 4) *reinterpret_cast<uint2*>(to) = uint2{w[0], w[1]};
    else *reinterpret_cast<unsigned*>(to) = w[0];
  }
  // A run of 8 elements from e (a multiple of 8) loaded from the pointers p where m: one
  // 16-byte cp.async (global -> shared, no registers) when the run is whole, contiguous and
  // aligned; else element by element (other where masked), synchronously.
  // last: consecutive pointers, the mask true on the run where it is at its last element (emit_cuda.cc: prefix_mask).
  __device__ void copy_run(int e, uint16_t* const (&src)[8], const bool (&m)[8], float other, bool last = false) const {
    if (kiln_tile_whole_run(src, m, 16, last)) {
      kiln_tile_cp_async16(p + at(e), src[0]);
    } else {
      uint16_t* to = p + at(e);  // (the run keeps its order inside its chunk)
      const uint16_t o = BF16 ? ks::float_to_bfloat16(other) : ks::float_to_float16(other);
#pragma unroll
      for (int i = 0; i < 8; ++i) to[i] = m[i] ? *src[i] : o;
    }
  }
};
#if !defined(KILN_TILE_EMULATED)  // (the host emulation of the tests has its own)
// N 8x8 matrices of 16-bit elements from shared memory, each row's 16 bytes at the address one
// lane gives (matrix i: lanes 8i..8i+7); thread l gets row l/4, elements 2(l%4) and 2(l%4)+1
// of each (transposed: column l/4, rows 2(l%4) and 2(l%4)+1).
template <int N, bool TRANS>
__device__ inline void kiln_tile_ldmatrix(unsigned* r, const uint16_t* row) {
  const unsigned a = unsigned(__cvta_generic_to_shared(row));
  if constexpr (N == 4 && TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if constexpr (N == 4)
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
  else if constexpr (TRANS)
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
  else
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(a));
}
// c[16x8] += a[16x16] @ b[16x8] for the warp, f32 accumulators: a's fragment (4 registers of 2
// elements: rows g and g+8, columns 2t.. and 2t+8..), b's (2: rows 2t.. and 2t+8.., column g)
// and c's (rows g and g+8, columns 2t and 2t+1), g = lane / 4, t = lane % 4.
template <bool BF16>
__device__ inline void kiln_tile_mma_m16n8k16(float* c, const unsigned* a, const unsigned* b) {
  if constexpr (BF16)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// Warpgroup mma (sm_90a): d[64 x N] += a[64 x 16] @ b[16 x N] for the 4 warps of a warpgroup,
// a and b in shared memory through their descriptors, f32 accumulators in the mma.sync layout
// of each warp's 16 rows (warp w of the group: rows 16w + g and 16w + g + 8; register 4i + q:
// column 8i + 2t + q % 2). One specialization per N, emitted with the kernel that uses it.
template <int N, bool BF16>
__device__ void kiln_tile_wgmma(float* d, unsigned long long a, unsigned long long b);
// Orders the accumulators' registers before the wgmmas; the wgmmas issued since form a group;
// wait<N>: all but the N newest groups done.
__device__ inline void kiln_tile_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ inline void kiln_tile_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ inline void kiln_tile_wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory"); }
// A register the wgmmas write asynchronously: the compiler may not read or move it across this.
__device__ inline void kiln_tile_wgmma_reg(float& r) { asm volatile("" : "+f"(r)::"memory"); }
// This thread's writes to shared memory (stores, completed cp.async) seen by the async proxy
// (wgmma's operand reads): before the barrier after them.
__device__ inline void kiln_tile_fence_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
#endif
)";

// Bytes of an element of a block declared with C type `type`.
int64_t type_bytes(const std::string& type) {
  if (type.back() == '*' || type == "double" || type == "int64_t" || type == "uint64_t") return 8;
  if (type == "float" || type == "int32_t" || type == "uint32_t") return 4;
  if (type == "int16_t" || type == "uint16_t") return 2;
  return 1;
}

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string wgmma_instruction(int64_t n);

class CudaEmitter final : public CLikeEmitter {
 public:
  CudaEmitter(bool wgmma, bool in_flight, bool aligned) : wgmma_target_(wgmma), in_flight_(in_flight), aligned_(aligned) {}
  EmittedKernel run(const Program& p) {
    threads_ = p.meta.num_warps * 32;
    KILN_CHECK(p.meta.num_warps >= 1 && p.meta.num_warps <= 32, "tile cuda: kernel ", p.name, " has num_warps=",
               p.meta.num_warps, "; a thread block has 1 to 32 warps");
    choose_runs(p);
    choose_mma(p);
    EmittedKernel k;
    k.source = emit(p);
    k.entry = cpu::entry_name(p);
    k.threads = threads_;
    k.shared_bytes = shared_bytes_;
    return k;
  }

 protected:
  // Inside a run's loop, a load or store of the element is a token that finish_run turns into
  // its share of a run-wide (16-byte) access.
  std::string load_value(const std::string& ptr, DType d) const override {
    if (!in_run_ || !vector_loads_) return CLikeEmitter::load_value(ptr, d);
    run_loads_.push_back({token("LD", next_access_++), ptr, memory_type(d), "", consecutive(emitting()), aligned_run(emitting())});
    return CLikeEmitter::load_value(run_loads_.back().token, d);  // "*<token>" where the element is read
  }
  std::string store_value(const std::string& value, DType d) const override {
    const std::string v = CLikeEmitter::store_value(value, d);
    if (in_elements_) loop_writes_memory_ = true;
    if (!in_run_) return v;
    run_stores_.push_back({token("ST", next_access_++), "", memory_type(d), v, consecutive(emitting()), aligned_run(emitting())});
    return run_stores_.back().token + v;  // the statement: [if (mask) ]*ptr = <token>value;
  }
  std::string atomic_add(const std::string& ptr, const std::string& value, DType d) const override {
    if (in_elements_) run_atomic_ = loop_writes_memory_ = true;
    std::string call;
    if (d == kFloat16) call = "kiln_tile_atomic_add16<false>(" + ptr + ", " + value + ")";
    else if (d == kBFloat16) call = "kiln_tile_atomic_add16<true>(" + ptr + ", " + value + ")";
    else call = "kiln_tile_atomic_add<" + memory_type(d) + ">(" + ptr + ", " + value + ")";
    // A scalar atomic happens once per program, not once per thread.
    return in_elements_ ? call : "kiln_tile_by_one_thread([&] { return " + call + "; })";
  }
  // A division's IEEE sequence (div.rn.f32 and its slow path) per element costs more than the
  // memory traffic of a row kernel (softmax's e / sum): as on the CPU, one reciprocal per row.
  bool divides_by_reciprocal() const override { return true; }
  std::string program_id(int axis) const override { return std::string("int32_t(blockIdx.") + "xyz"[axis] + ")"; }
  std::string num_programs(int axis) const override { return std::string("int32_t(gridDim.") + "xyz"[axis] + ")"; }
  std::string fma(const std::string& a, const std::string& b, const std::string& c, DType d) const override {
    return (d == kFloat64 ? "fma(" : "fmaf(") + a + ", " + b + ", " + c + ")";
  }

  // This thread's elements of a block: runs of V consecutive elements, V * threads apart. A loop
  // of a constant count over the runs, unrolled (fully, up to kMaxRuns runs: register blocks
  // need constant indices), so that a thread's loads of several runs are in flight together.
  ElementIndex begin_elements(const std::vector<int64_t>& shape) override {
    if (serial_) return CLikeEmitter::begin_elements(shape);
    loop_at_ = out().text().size();
    loop_writes_memory_ = false;
    loop_copies_ = false;
    if (in_mma_layout(shape)) return begin_mma_elements();
    const int64_t n = numel(shape);
    const Layout l = layout(n);
    const int64_t runs = l.per_thread / l.run;
    const std::string v = std::to_string(l.run);
    if (runs > 1) out().line(runs <= kMaxRuns ? "#pragma unroll" : "#pragma unroll " + std::to_string(kMaxRuns));
    out().open("for (int _r = 0; _r < " + std::to_string(runs) + "; ++_r)");
    out().line("const int _e = (int(threadIdx.x) + _r * " + std::to_string(threads_) + ") * " + v + ";");
    if (n % (l.run * threads_) != 0) out().open("if (_e < " + std::to_string(n) + ")");
    if (l.run > 1) {
      run_at_ = out().text().size();
      run_depth_ = out().depth();
      out().line("#pragma unroll");
      out().open("for (int _v = 0; _v < " + v + "; ++_v)");
      run_body_at_ = out().text().size();
      out().line("const int _i = _e + _v;");
      in_run_ = true;
      run_len_ = l.run;
      run_loads_.clear();
      run_stores_.clear();
      run_atomic_ = false;
    } else {
      out().line("const int _i = _e;");
    }
    ElementIndex e;
    const std::vector<int64_t> rm = row_major(shape);
    // Where no run crosses a row (the last dim of size > 1 a multiple of the run), a run's
    // indices are the run's start's but along that dim, + _v: so its addresses are visibly
    // consecutive, and the run-wide access's tests fold to the first element's.
    size_t last = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] > 1) last = d;
    const bool by_row = l.run > 1 && last > 0 && shape[last] % l.run == 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 1) {
        e.dims.push_back("0");
        continue;
      }
      std::string at = rm[d] == 1 ? "_i" : "_i / " + std::to_string(rm[d]);
      if (d > 0) at = "(" + at + ") % " + std::to_string(shape[d]);
      if (by_row) at = d == last ? "_e % " + std::to_string(shape[d]) + " + _v" : "_e / " + std::to_string(rm[d]) + (d > 0 ? " % " + std::to_string(shape[d]) : "");
      e.dims.push_back("(" + at + ")");
    }
    e.linear = "_i";
    in_elements_ = true;
    return e;
  }
  void end_elements(const std::vector<int64_t>& shape) override {
    if (serial_) return CLikeEmitter::end_elements(shape);
    const int64_t n = numel(shape);
    const Layout l = layout(n);
    if (in_mma_layout(shape)) {
      out().close();
    } else {
      if (l.run > 1) finish_run(l.run);
      if (n % (l.run * threads_) != 0) out().close();
      out().close();
    }
    // A loop that touches only registers (and reads global memory) needs no barrier after it.
    if (loop_copies_) out().line("kiln_tile_cp_async_wait_all();");
    if (wgmma() && writes_operand(out().text().substr(loop_at_))) out().line("kiln_tile_fence_async();");
    if (sync_after_ && (loop_writes_memory_ || uses_shared(out().text().substr(loop_at_)))) out().line("__syncthreads();");
    if (loop_copies_) out().line(kCopyEnd);
    in_elements_ = false;
  }
  // A block only ever read at the thread's own elements lives in registers; any other in the
  // kernel's dynamic shared memory, each at its own offset.
  void declare_block(const std::string& name, const std::string& type, int64_t n) override {
    if (!serial_ && mma_ && declare_mma_block(name, type, n)) return;
    if (!serial_ && in_registers(name)) {
      const Layout l = layout(n);
      out().line("kiln_tile_regs<" + type + ", " + std::to_string(l.per_thread) + ", " + std::to_string(l.run) + ", " +
                 std::to_string(l.run * threads_) + "> " + name + ";");
      return;
    }
    const int64_t at = shared_bytes_;
    shared_names_.push_back(name);
    shared_bytes_ += (n * type_bytes(type) + 15) / 16 * 16;
    check_shared_bytes();
    const std::string decl = type + "* const " + name + " = reinterpret_cast<" + type + "*>(kiln_tile_smem + " +
                             std::to_string(at) + ");";
    if (serial_) hoisted_.push_back(decl);
    else out().line(decl);
  }
  void check_shared_bytes() {
    if (shared_bytes_ > kMaxSharedBytes)
      fail_at("emit", {}, detail::cat("kernel ", program().name, ": its blocks need more than ", kMaxSharedBytes / 1024,
                                      " KB of shared memory per thread block"),
              "use smaller block sizes (a program's blocks live in its thread block's shared memory)");
  }
  // Each per-element loop ends with a barrier already (end_elements).
  void barrier() override {}
  void emit_program(const std::string& body) override;
  std::string pipeline_loads(const std::string& body);
  void emit_reduce(const Op& op) override;
  void emit_scan(const Op& op) override;
  void emit_dot(const Op& op) override;

 private:
  static const char* combiner(ReduceKind k) {
    switch (k) {
      case ReduceKind::Sum: return "kiln_tile_sum";
      case ReduceKind::Prod: return "kiln_tile_prod";
      case ReduceKind::Max: return "kiln_tile_max";
      default: return "kiln_tile_min";
    }
  }

  // The blocked layout of n elements: runs of `run` consecutive elements, per_thread of them
  // (a whole number of runs) in each thread. A run is run_ elements (16 bytes of the kernel's
  // narrowest loaded or stored type) where that divides n, else 4, else 1.
  struct Layout {
    int64_t run, per_thread;
  };
  static constexpr int64_t kMaxRuns = 8;
  Layout layout(int64_t n) const {
    const int64_t run = n % run_ == 0 ? run_ : n % 4 == 0 ? 4 : 1;
    return {run, (n + run * threads_ - 1) / (run * threads_) * run};
  }
  void choose_runs(const Program& p);

  // Dot on tensor cores. The dots of a kernel whose operands are f16/bf16 blocks (f32 results)
  // of sizes mma.sync's m16n8k16 tiles divide run on tensor cores when they share one result
  // shape [M, N]: the block's warps split it WM x WN, each warp an (M / WM) x (N / WN) tile of
  // MT x NT mma tiles, each thread 4 accumulators of each (rows g and g + 8, columns 2t and
  // 2t + 1 of it: g = lane / 4, t = lane % 4). Every loop over a block of that shape runs over
  // the thread's accumulators in that layout (so a dot's result, the loop's carried accumulator
  // and the store after the loop stay in registers, kiln_tile_mma_regs); the operands live in
  // shared memory as 16-bit values (kiln_tile_smem16, swizzled), read with ldmatrix.
  // On sm_90a (wgmma) the unit is a warpgroup (4 warps) rather than a warp: the warpgroups split
  // [M, N] WM x WN, each issuing MT wgmma m64nNk16 (N = NT * 8) per k16 step; warp w of a group
  // holds rows 16w + g and 16w + g + 8 of each m64 tile, as mma.sync's m16 tile.
  struct Mma {
    std::vector<int64_t> shape;  // [M, N]
    int64_t wm = 1, wn = 1;      // warps (warpgroups) along M and N
    int64_t mt = 1, nt = 1;      // m16 (m64) and n8 tiles per warp (warpgroup)
    bool wgmma = false;
    int64_t per_thread() const { return mt * nt * 4; }
    int64_t rows() const { return wgmma ? 64 : 16; }  // of an m tile
  };
  static constexpr int64_t kMaxAccumulators = 128;  // per thread
  // A wgmma kernel's shared memory is taken 1024 bytes larger, its blocks from the first 1024-byte
  // boundary in it (the dynamic allocation's alignment is not promised to be more than 16).
  static constexpr int64_t kWgmmaAlignPad = 1024;
  // Around an operand's declaration and its cp.async loop, for pipeline_loads (which removes them).
  static constexpr const char* kCopyBegin = "// @@copy-begin@@";
  static constexpr const char* kCopyEnd = "// @@copy-end@@";
  void choose_mma(const Program& p);
  bool in_mma_layout(const std::vector<int64_t>& shape) const { return mma_ && shape == mma_->shape; }
  ElementIndex begin_mma_elements();
  bool declare_mma_block(const std::string& name, const std::string& type, int64_t n);
  bool in_mma_registers(const Value* v);
  void emit_mma_dot(const Op& op);
  void emit_wgmma_dot(const Op& op);
  void finish_dot(const Value* r, const std::string& res);
  std::optional<Mma> choose_wgmma(const std::vector<int64_t>& rs, int64_t K) const;
  bool wgmma() const { return mma_ && mma_->wgmma; }
  const bool wgmma_target_;  // the target is sm_90a: dots whose shapes allow run on wgmma
  const bool in_flight_;     // a pipelined loop's wgmmas may stay in flight into the next iteration
  const bool aligned_;       // the pointer arguments are 16-byte aligned (emit_kernel)
  std::set<int64_t> wgmma_widths_;  // the N of the wgmma instructions the kernel issues
  std::string wgmma_acc_;           // the accumulator block of the (last) wgmma dot, in registers
  std::optional<Mma> mma_;
  std::set<const Op*> mma_dots_;
  std::set<std::string> operand16_;  // the blocks of tensor-core operands (kiln_tile_smem16)
  std::map<const Value*, const Value*> for_result_;  // a for's carried block -> its result
  void finish_run(int64_t run);

  // A load or store of a run's loop: its token in the loop's text, the pointer (loads) or the
  // stored value (stores), and the type in memory.
  struct RunAccess {
    std::string token, ptr, type, value;
    bool consecutive = false;  // its run's addresses are consecutive (the emitter knows; NVVM may not)
    bool aligned = false;      // and 16-byte aligned (aligned_run)
  };
  // Whether a load's or store's run covers consecutive addresses: its pointer steps by one
  // element along the block's last dim of size > 1, and no run crosses a row of that dim.
  // (The runs go along the block's last dim of size > 1: run_dim.)
  static int run_dim(const std::vector<int64_t>& shape) {
    int last = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] > 1) last = int(d);
    return last;
  }
  bool consecutive(const Op* access) const {
    if (!access || (access->code != OpCode::Load && access->code != OpCode::Store)) return false;
    const std::vector<int64_t>& shape = access->operands[0]->type.shape;
    const int last = run_dim(shape);
    if (shape.empty() || run_len_ < 2 || (last > 0 && shape[size_t(last)] % run_len_ != 0)) return false;
    const std::optional<int64_t> step = step_along(access->operands[0], last);
    return step && *step == 1;
  }
  // Whether a consecutive run of `access` (its pointer's run-wide access) is 16-byte aligned
  // wherever it starts: in the variant for aligned pointer arguments, the pointer's offset from
  // its argument at a run's first element is a multiple of 16 bytes (divisibility). Then
  // kiln_tile_vload/vstore test nothing but the masks: NVVM does not keep __builtin_assume_aligned
  // through every use of a parameter, and cannot see through the 32-bit index arithmetic.
  bool aligned_run(const Op* access) const {
    if (!aligned_ || !consecutive(access)) return false;
    const int64_t bytes = std::min<int64_t>(16, run_len_ * int64_t(itemsize(access->operands[0]->type.dtype)));
    return divisibility(access->operands[0], run_dim(access->operands[0]->type.shape)) % bytes == 0;
  }
  // The largest power of two (up to 2^20) known to divide v at every element whose index along
  // `dim` (-1: none) is a multiple of the run (a run's first element): elements for an integer,
  // bytes for a pointer (its argument counted as aligned to 16).
  static int64_t pow2_of(int64_t c) {
    constexpr int64_t kMost = int64_t(1) << 20;
    return c == 0 ? kMost : std::min(kMost, int64_t(1) << std::countr_zero(uint64_t(c)));
  }
  int64_t divisibility(const Value* v, int dim) const {
    const Op* op = v->def;
    if (!op) {  // a parameter (pointers 16-byte aligned in this variant) or a region's argument
      for (const Param& prm : program().params)
        if (prm.value == v) return prm.kind == ParamKind::Pointer ? 16 : 1;
      return 1;
    }
    switch (op->code) {
      case OpCode::Constant: return is_floating(v->type.dtype) ? 1 : pow2_of(op->value.to_int());
      case OpCode::Arange: return dim == 0 ? std::min(pow2_of(op->start), run_len_) : 1;
      case OpCode::Splat: return divisibility(op->operands[0], -1);
      case OpCode::Broadcast:
        return divisibility(op->operands[0], dim >= 0 && op->operands[0]->type.shape[size_t(dim)] == 1 ? -1 : dim);
      case OpCode::ExpandDims:
        return divisibility(op->operands[0], dim < 0 || dim == op->axis ? -1 : dim < op->axis ? dim : dim - 1);
      case OpCode::Permute: return divisibility(op->operands[0], dim < 0 ? -1 : int(op->order[size_t(dim)]));
      case OpCode::Cast:
        return is_floating(v->type.dtype) || is_floating(op->operands[0]->type.dtype) ? 1 : divisibility(op->operands[0], dim);
      case OpCode::AddPtr: {
        const int64_t size = int64_t(itemsize(v->type.dtype));
        return std::min(divisibility(op->operands[0], dim), std::min<int64_t>(divisibility(op->operands[1], dim) * size, int64_t(1) << 20));
      }
      case OpCode::Pointwise: {
        if (is_floating(v->type.dtype) || op->operands.size() != 2) return 1;
        const int64_t a = divisibility(op->operands[0], dim), b = divisibility(op->operands[1], dim);
        if (op->prim == ops::OpId::add || op->prim == ops::OpId::sub) return std::min(a, b);
        if (op->prim == ops::OpId::mul) return std::min<int64_t>(a * b, int64_t(1) << 20);
        return 1;
      }
      default: return 1;
    }
  }
  static std::string token(const char* kind, int id) { return std::string("@@") + kind + std::to_string(id) + "@@"; }

  // Whether the block named `name` (a value's array_name) may live in registers: it is a value
  // computed elementwise, every reader reads it at the reader's own element (elementwise ops of
  // its shape, a block-to-scalar reduction, a yield's copy), and it is unrolled fully.
  bool in_registers(const std::string& name) {
    const Value* v = block_named(name);
    if (!v) return false;
    const Layout l = layout(v->type.numel());
    if (l.per_thread > kMaxRuns * std::min<int64_t>(l.run, 4) || !v->def || !own_elements(v->def->code)) return false;
    if (mma_ && v->type.shape == mma_->shape) return false;  // its loops are in the accumulator layout
    for (const Op* u : users_of_[v]) {
      const bool to_scalar = u->code == OpCode::Reduce && v->type.rank() == 1 && u->reduce != ReduceKind::Argmax &&
                             u->reduce != ReduceKind::Argmin;
      if (!own_elements(u->code) && !to_scalar && u->code != OpCode::Yield) return false;
    }
    return true;
  }
  // The value whose block is named `name` (an op's result or a for's carried block), or null.
  const Value* block_named(const std::string& name) {
    if (by_array_.empty())
      walk(program().body, [&](const Op& op) {
        for (const Value* r : op.results) by_array_[array_name(r)] = r;
        if (op.code == OpCode::For)
          for (size_t k = 1; k < op.regions[0].args.size(); ++k) by_array_[array_name(op.regions[0].args[k])] = op.regions[0].args[k];
      });
    auto it = by_array_.find(name);
    return it == by_array_.end() ? nullptr : it->second;
  }
  static bool own_elements(OpCode c) {
    return c == OpCode::Pointwise || c == OpCode::Cast || c == OpCode::AddPtr || c == OpCode::Load ||
           c == OpCode::Store || c == OpCode::AtomicAdd;
  }

  // Whether `code` writes a tensor-core operand (its store_run, copy_run or [...] = ).
  bool writes_operand(const std::string& code) const {
    for (const std::string& name : operand16_)
      for (const std::string& use : {name + ".store_run(", name + ".copy_run(", " " + name + "[_i] = "})
        if (code.find(use) != std::string::npos) return true;
    return false;
  }
  // Whether `code` indexes a block in shared memory (name[...], or a run's name.store_run).
  bool uses_shared(const std::string& code) const {
    for (const std::string& name : shared_names_)
      for (const std::string& use : {name + "[", name + ".store_run(", name + ".copy_run("})
        for (size_t at = 0; (at = code.find(use, at)) != std::string::npos; at += name.size())
          if (at == 0 || !(std::isalnum(static_cast<unsigned char>(code[at - 1])) || code[at - 1] == '_')) return true;
    return false;
  }

  int threads_ = 128;
  int64_t run_ = 4;
  bool vector_loads_ = true;  // no loaded value feeds a load's address or mask in its loop
  bool in_run_ = false;       // inside a run's loop (begin_elements .. finish_run)
  int64_t run_len_ = 0;       // its run: elements per thread-run (layout(n).run, which may be below run_)
  size_t run_at_ = 0, run_body_at_ = 0;  // where its text starts, and its body
  int run_depth_ = 0;
  mutable std::vector<RunAccess> run_loads_, run_stores_;
  mutable bool run_atomic_ = false;
  mutable int next_access_ = 0;
  size_t loop_at_ = 0;                     // where the per-element loop being written starts
  mutable bool loop_writes_memory_ = false;  // it stores or has an atomic
  bool loop_copies_ = false;                 // it issues cp.async copies (waited for at its end)
  std::vector<std::string> shared_names_;  // the blocks in shared memory
  int64_t shared_bytes_ = 0;
  std::map<std::string, const Value*> by_array_;
  std::map<const Value*, std::vector<const Op*>> users_of_;
  bool in_elements_ = false;  // inside a per-element loop: each thread's own elements
  bool sync_after_ = true;    // a barrier after each per-element loop (not after one that only reads)
  bool serial_ = false;       // emitting code for one thread (the base's loops)
  std::vector<std::string> hoisted_;  // block declarations of serial code, made before it
};

// How an integer or pointer value varies along its last dim (the runs' dim): not at all, by
// exactly +1 an element (an arange), never down, never up, or unknown. (Index arithmetic is
// taken not to wrap, as the run's own addresses are.)
enum class Along { Const, Unit, Up, Down, Any };
Along rising(Along a) { return a == Along::Unit ? Along::Up : a; }
Along along_last(const Value* v) {
  if (!v->type.is_block()) return Along::Const;
  if (!v->def) return Along::Any;
  const Op& op = *v->def;
  const Value* x = op.operands.empty() ? nullptr : op.operands[0];
  switch (op.code) {
    case OpCode::Constant:
    case OpCode::Splat: return Along::Const;
    case OpCode::Arange: return Along::Unit;
    case OpCode::ExpandDims: return op.axis == v->type.rank() - 1 ? Along::Const : along_last(x);
    case OpCode::Broadcast: return x->type.shape.back() == 1 ? Along::Const : along_last(x);
    case OpCode::Cast:  // to an integer at least as wide
      return is_integral(x->type.dtype) && is_integral(v->type.dtype) &&
                     (x->type.dtype == v->type.dtype || itemsize(v->type.dtype) > itemsize(x->type.dtype))
                 ? along_last(x)
                 : Along::Any;
    case OpCode::AddPtr:  // pointer + offset, as add
    case OpCode::Pointwise: {
      std::vector<Along> a;
      for (const Value* o : op.operands) a.push_back(along_last(o));
      if (std::all_of(a.begin(), a.end(), [](Along k) { return k == Along::Const; })) return Along::Const;
      const bool add = op.code == OpCode::AddPtr || op.prim == ops::OpId::add;
      if ((!add && op.prim != ops::OpId::sub) || a.size() != 2) return Along::Any;
      if (!add && a[1] != Along::Const)  // x - y = x + (-y)
        a[1] = rising(a[1]) == Along::Up ? Along::Down : a[1] == Along::Down ? Along::Up : Along::Any;
      if (a[0] == Along::Const) return a[1];
      if (a[1] == Along::Const) return a[0];
      return rising(a[0]) == rising(a[1]) ? rising(a[0]) : Along::Any;
    }
    default: return Along::Any;
  }
}

// Whether a block mask is, along its last dim, an AND of terms each constant or true on a prefix
// (an index that never goes down, below a bound: x < n, n > x; or one that never goes up, above
// a bound): then where it is true at a run's last element it is true on the whole run.
bool prefix_mask(const Value* m) {
  if (along_last(m) == Along::Const) return true;
  const Op* op = m->def;
  if (!op) return false;
  if (op->code == OpCode::Broadcast || op->code == OpCode::ExpandDims) return prefix_mask(op->operands[0]);
  if (op->code != OpCode::Pointwise || op->operands.size() != 2) return false;
  const ops::OpId k = op->prim;
  if ((k == ops::OpId::bitwise_and || k == ops::OpId::logical_and) && m->type.dtype == kBool)
    return prefix_mask(op->operands[0]) && prefix_mask(op->operands[1]);
  Along x = along_last(op->operands[0]), n = along_last(op->operands[1]);
  if (k == ops::OpId::gt || k == ops::OpId::ge) std::swap(x, n);  // n > x is x < n
  else if (k != ops::OpId::lt && k != ops::OpId::le) return false;
  // x < n: a prefix where x never goes down and n is constant, or x is constant and n never goes up
  return (rising(x) == Along::Up && n == Along::Const) || (x == Along::Const && n == Along::Down);
}

void CudaEmitter::choose_runs(const Program& p) {
  // 16 bytes of the narrowest type a block is loaded or stored as (4 to 8 elements).
  int64_t narrowest = 0;
  walk(p.body, [&](const Op& op) {
    if ((op.code == OpCode::Load || op.code == OpCode::Store) && op.operands[0]->type.is_block()) {
      const int64_t b = int64_t(itemsize(op.operands[0]->type.dtype));
      narrowest = narrowest == 0 ? b : std::min(narrowest, b);
    }
  });
  run_ = narrowest == 0 ? 4 : std::clamp<int64_t>(16 / narrowest, 4, 8);
  // A run's loads are issued before its elements are computed, from addresses and masks computed
  // first: so none of those may depend on a load of the same loop (a gather). Where one might
  // (a block load reached from a load's address or mask before a reduction, dot or scan, which
  // end the loop), the kernel's loads stay per element.
  vector_loads_ = true;
  std::set<const Value*> seen;
  std::function<bool(const Value*)> from_load = [&](const Value* v) {
    if (!v->def || !seen.insert(v).second) return false;
    const OpCode c = v->def->code;
    if (c == OpCode::Load) return v->type.is_block();
    if (c == OpCode::Reduce || c == OpCode::Dot || c == OpCode::Scan) return false;
    for (const Value* u : v->def->operands)
      if (from_load(u)) return true;
    return false;
  };
  walk(p.body, [&](const Op& op) {
    if (op.code != OpCode::Load || !op.result()->type.is_block()) return;
    for (size_t i = 0; i < op.operands.size() && i < 2; ++i)
      if (from_load(op.operands[i])) vector_loads_ = false;
  });
}

// Closes a run's loop (begin_elements opened it), its loads and stores made run-wide. The loop's
// text is taken back and written again as: the run's addresses (the loop with only its
// declarations, recording each load's pointer and, through its token, whether its mask lets it
// be read: the rest is dead code), the loads (kiln_tile_vload: 16 bytes at a time where the run is whole, contiguous
// and aligned, else per element), the loop reading the loaded values and recording each store's
// pointer and value, then the stores (kiln_tile_vstore). A loop with an atomic keeps its per-
// element accesses: it cannot run twice.
void CudaEmitter::finish_run(int64_t run) {
  in_run_ = false;
  // The run's writes of a tensor-core operand (16-bit, in shared memory): one store per run.
  std::vector<std::string> packed;
  const std::string loop_text = out().text().substr(run_body_at_);
  for (const std::string& name : operand16_)
    if (!run_atomic_ && loop_text.find(" " + name + "[_i] = ") != std::string::npos) packed.push_back(name);
  if (run_loads_.empty() && run_stores_.empty() && packed.empty()) {
    out().close();
    return;
  }
  // A loop that only loads a 16-bit operand (8-element runs) into its block: cp.async.
  std::string copy_to, copy_other;
  if (packed.size() == 1 && run_loads_.size() == 1 && run_stores_.empty() && run == 8) {
    const Value* v = block_named(packed[0]);
    const Op* load = v ? v->def : nullptr;
    const Value* other = load && load->operands.size() > 2 ? load->operands[2] : nullptr;  // a number, where masked
    bool only = load && load->code == OpCode::Load &&
                (!other || !other->type.is_block() || (other->def && (other->def->code == OpCode::Constant || other->def->code == OpCode::Splat)));
    const std::string body = loop_text;
    for (size_t at = 0; only && at < body.size();) {  // nothing but declarations and the block's write
      const size_t nl = body.find('\n', at);
      const size_t end = nl == std::string::npos ? body.size() : nl + 1;
      const std::string line = body.substr(at, end - at);
      const size_t text_at = line.find_first_not_of(' ');
      only = text_at == std::string::npos || line.compare(text_at, 6, "const ") == 0 ||
             line.compare(text_at, packed[0].size() + 7, packed[0] + "[_i] = ") == 0;
      at = end;
    }
    if (only) copy_to = packed[0], copy_other = other ? element(other, std::vector<std::string>(size_t(other->type.rank()), "0")) : "0.0f";
    if (only && along_last(load->operands[0]) == Along::Unit && (load->operands.size() < 2 || prefix_mask(load->operands[1])))
      copy_other += ", true";
  }
  auto replace_all = [](std::string s, const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
    return s;
  };
  const std::string text = out().text();
  const std::string head = text.substr(0, run_at_);
  std::string body = text.substr(run_body_at_), first;
  CodeWriter& w = out();
  w.clear(run_depth_);
  w.raw(head);
  const std::string n = std::to_string(run);
  auto loop = [&](const std::string& b) {
    w.line("#pragma unroll");
    w.open("for (int _v = 0; _v < " + n + "; ++_v)");
    w.raw(b);
    w.close();
  };
  if (run_atomic_) {
    for (const RunAccess& l : run_loads_) body = replace_all(body, l.token, l.ptr);
    for (const RunAccess& s : run_stores_) body = replace_all(body, s.token, "");
    loop(body);
    return;
  }
  for (const RunAccess& l : run_loads_) {
    const std::string id = l.token.substr(4, l.token.size() - 6);
    w.line(l.type + "* _lp" + id + "[" + n + "];");
    w.line("bool _lm" + id + "[" + n + "] = {};");
    if (copy_to.empty()) w.line(l.type + " _lv" + id + "[" + n + "] = {};");
  }
  for (const RunAccess& s : run_stores_) {
    const std::string id = s.token.substr(4, s.token.size() - 6);
    w.line(s.type + "* _sp" + id + "[" + n + "];");
    w.line("bool _sm" + id + "[" + n + "] = {};");
    w.line(s.type + " _sv" + id + "[" + n + "];");
  }
  for (size_t k = 0; k < packed.size(); ++k) {
    w.line("float _pk" + std::to_string(k) + "[" + n + "];");
    body = replace_all(body, " " + packed[k] + "[_i] = ", " _pk" + std::to_string(k) + "[_v] = ");
  }
  if (!run_loads_.empty()) {
    std::string addresses;
    for (size_t at = 0; at < body.size();) {
      const size_t nl = body.find('\n', at);
      const size_t end = nl == std::string::npos ? body.size() : nl + 1;
      const std::string line = body.substr(at, end - at);
      const size_t text_at = line.find_first_not_of(' ');
      const size_t eq = line.find(" = ");
      if (line.compare(text_at, 6, "const ") == 0 || (eq != std::string::npos && line.substr(0, eq).find("* const ") != std::string::npos)) {
        addresses += line;
        for (const RunAccess& l : run_loads_)  // its pointer, whatever the mask
          if (line.find(l.token) != std::string::npos)
            addresses += line.substr(0, text_at) + "_lp" + l.token.substr(4, l.token.size() - 6) + "[_v] = " + l.ptr + ";\n";
      }
      at = end;
    }
    for (const RunAccess& l : run_loads_) {
      const std::string id = l.token.substr(4, l.token.size() - 6);
      addresses = replace_all(addresses, "*" + l.token, "(_lm" + id + "[_v] = true, " + l.type + "(0))");
      body = replace_all(body, "*" + l.token, "_lv" + id + "[_v]");
    }
    loop(addresses);
    if (!copy_to.empty()) {
      const std::string id = run_loads_[0].token.substr(4, run_loads_[0].token.size() - 6);
      w.line(copy_to + ".copy_run(_e, _lp" + id + ", _lm" + id + ", " + copy_other + ");");
      loop_copies_ = true;
      return;
    }
    for (const RunAccess& l : run_loads_) {
      const std::string id = l.token.substr(4, l.token.size() - 6);
      w.line(std::string(l.aligned ? "kiln_tile_vload<true, true>" : l.consecutive ? "kiln_tile_vload<true>" : "kiln_tile_vload") +
             "(_lv" + id + ", _lp" + id + ", _lm" + id + ");");
    }
  }
  // [if (mask) ]*ptr = <token>value;<comment>  ->  _spN[_v] = ptr; [if (mask) ]_smN[_v] = true, _svN[_v] = value;<comment>
  for (const RunAccess& s : run_stores_) {
    const std::string id = s.token.substr(4, s.token.size() - 6);
    const size_t at = body.find(s.token);
    const size_t line_at = body.rfind('\n', at) + 1;
    const size_t text_at = body.find_first_not_of(' ', line_at);
    std::string target = body.substr(text_at, at - text_at), mask;
    if (target.compare(0, 4, "if (") == 0) {
      size_t close = 3;
      for (int depth = 0;; ++close) {
        if (target[close] == '(') ++depth;
        else if (target[close] == ')' && --depth == 0) break;
      }
      mask = target.substr(0, close + 2);  // "if (...) "
      target = target.substr(close + 2);
    }
    const std::string ptr = target.substr(1, target.size() - 4);  // "*ptr = "
    body.replace(text_at, at + s.token.size() + s.value.size() - text_at,
                 "_sp" + id + "[_v] = " + ptr + "; " + mask + "_sm" + id + "[_v] = true, _sv" + id + "[_v] = " + s.value);
  }
  loop(body);
  for (const RunAccess& s : run_stores_) {
    const std::string id = s.token.substr(4, s.token.size() - 6);
    w.line(std::string(s.aligned ? "kiln_tile_vstore<true, true>" : s.consecutive ? "kiln_tile_vstore<true>" : "kiln_tile_vstore") +
           "(_sp" + id + ", _sm" + id + ", _sv" + id + ");");
  }
  for (size_t k = 0; k < packed.size(); ++k) w.line(packed[k] + ".store_run(_e, _pk" + std::to_string(k) + ");");
}

// Software pipelining of a for loop's tensor-core operand loads by num_stages (S): a loop whose
// body starts with scalars and the operands' cp.async loops (copy-begin .. copy-end: the
// declaration, the loop, its wait and barrier) gets S copies of the kernel's shared memory, one
// stage each; the copies of the first S - 1 iterations are issued before the loop, and each
// iteration issues those of iteration + S - 1 (into the stage the previous one has finished
// reading: the barrier after its dot), then waits for its own (cp.async.wait_group S - 1) and
// computes on its stage. Any other shape is left as it is (each iteration waits for its loads).
std::string CudaEmitter::pipeline_loads(const std::string& body) {
  std::vector<std::string> lines;
  for (size_t at = 0; at < body.size();) {
    size_t nl = body.find('\n', at);
    if (nl == std::string::npos) nl = body.size();
    lines.push_back(body.substr(at, nl - at));
    at = nl + 1;
  }
  auto trimmed = [](const std::string& l) { return l.substr(std::min(l.size(), l.find_first_not_of(' '))); };
  auto indent = [](const std::string& l) { return l.find_first_not_of(' '); };
  auto join = [&](const std::vector<std::string>& ls) {
    std::string t;
    for (const std::string& l : ls)
      if (trimmed(l) != kCopyBegin && trimmed(l) != kCopyEnd) t += l + "\n";
    return t;
  };
  const int S = program().meta.num_stages;
  size_t b = 0;
  while (b < lines.size() && trimmed(lines[b]) != kCopyBegin) ++b;
  const int64_t stage = wgmma() ? (shared_bytes_ + 1023) / 1024 * 1024 : shared_bytes_;  // wgmma: stages 1024-byte aligned
  if (S < 2 || b == lines.size() || stage * S + kWgmmaAlignPad * wgmma() > kMaxSharedBytes) return join(lines);
  const size_t in = indent(lines[b]);
  size_t h = b;  // the body's first line: after the for's header, its comment and scalars
  while (h > 0 && indent(lines[h - 1]) == in && (trimmed(lines[h - 1]).rfind("const ", 0) == 0 || trimmed(lines[h - 1]).rfind("// for", 0) == 0))
    --h;
  if (h == 0 || in < 2 || indent(lines[h - 1]) != in - 2) return join(lines);
  // for (T X = LO; X < HI; X += STEP) {
  const std::string header = trimmed(lines[h - 1]);
  const size_t eq = header.find(" = "), semi = header.find("; "), lt = header.find(" < "), semi2 = header.find("; ", semi + 2),
               inc = header.find(" += ");
  if (header.rfind("for (", 0) != 0 || eq == std::string::npos || semi == std::string::npos || lt == std::string::npos ||
      semi2 == std::string::npos || inc == std::string::npos || header.size() < 3 || header.compare(header.size() - 3, 3, ") {") != 0)
    return join(lines);
  const std::string decl = header.substr(5, eq - 5);  // "T X"
  const std::string X = decl.substr(decl.rfind(' ') + 1), lo = header.substr(eq + 3, semi - eq - 3);
  const std::string hi = header.substr(lt + 3, semi2 - lt - 3), step = header.substr(inc + 4, header.size() - 3 - inc - 4);
  if (header.substr(semi + 2, lt - semi - 2) != X) return join(lines);
  std::vector<std::string> scalars, copies, decls;
  for (size_t i = h; i < b; ++i)
    if (trimmed(lines[i]).rfind("// for", 0) != 0) scalars.push_back(lines[i]);
  size_t i = b;
  const std::string stage_bytes = std::to_string(stage);
  while (i < lines.size() && trimmed(lines[i]) == kCopyBegin) {
    // the declaration, at its stage: kiln_tile_smem + OFF) -> kiln_tile_smem + OFF + _stage * bytes)
    if (i + 1 >= lines.size() || lines[i + 1].find("kiln_tile_smem16<") == std::string::npos) return join(lines);
    std::string d = lines[i + 1];
    const size_t off = d.find("kiln_tile_smem + "), close = d.find(')', off);
    if (off == std::string::npos || close == std::string::npos) return join(lines);
    d = d.substr(0, close) + " + _stage * " + stage_bytes + d.substr(close);
    decls.push_back(d);
    copies.push_back(d);
    size_t e = i + 2;
    while (e < lines.size() && trimmed(lines[e]) != kCopyEnd && trimmed(lines[e]) != kCopyBegin) ++e;
    const size_t tail = e < lines.size() && e >= 3 && trimmed(lines[e - 2]) == "kiln_tile_fence_async();" ? 3 : 2;  // wait[, fence], barrier
    if (e >= lines.size() || trimmed(lines[e]) != kCopyEnd || trimmed(lines[e - 1]) != "__syncthreads();" ||
        trimmed(lines[e - tail]) != "kiln_tile_cp_async_wait_all();")
      return join(lines);
    copies.insert(copies.end(), lines.begin() + long(i) + 2, lines.begin() + long(e - tail));  // the loop
    i = e + 1;
  }
  size_t end = i;  // the for's closing brace
  while (end < lines.size() && !(indent(lines[end]) == in - 2 && trimmed(lines[end]) == "}")) ++end;
  if (end == lines.size()) return join(lines);
  for (size_t k = i; k < end; ++k)
    if (trimmed(lines[k]) == kCopyBegin) return join(lines);  // other copies in the loop
  shared_bytes_ = stage * S;
  const std::string pad(in - 2, ' '), ss = std::to_string(S);
  std::vector<std::string> o(lines.begin(), lines.begin() + long(h) - 1);
  auto issue = [&](const std::string& at, const std::string& stage) {  // the copies of iteration `at`
    o.push_back(pad + "  {");
    o.push_back(pad + "    const " + decl + " = " + at + ";");
    o.push_back(pad + "    const int _stage = " + stage + ";");
    o.push_back(pad + "    if (" + X + " < " + hi + ") {");
    o.insert(o.end(), scalars.begin(), scalars.end());
    o.insert(o.end(), copies.begin(), copies.end());
    o.push_back(pad + "    }");
    o.push_back(pad + "  }");
    o.push_back(pad + "  kiln_tile_cp_async_commit();");
  };
  // With one wgmma dot in the loop, the next iteration's copies are issued while its wgmmas run
  // (after they are issued, before they are waited for). With 3 or more stages the wgmmas also
  // stay in flight into the next iteration (wgmma.wait_group 1: the previous iteration's are
  // done), so the copies go into the stage read two iterations back, free after the top barrier
  // (every warpgroup has waited for those wgmmas), S - 2 iterations ahead; after the loop all
  // are waited for (wait_group 0, and the accumulators fenced for the compiler).
  size_t mma_wait = end;
  for (size_t k = i; k < end; ++k)
    if (wgmma() && trimmed(lines[k]) == "kiln_tile_wgmma_wait<0>();") mma_wait = mma_wait == end ? k : lines.size();
  if (mma_wait == lines.size()) mma_wait = end;
  const bool overlap = mma_wait < end, deep = overlap && in_flight_ && S >= 3 && !wgmma_acc_.empty();
  const int ahead = deep ? S - 2 : S - 1;  // iterations whose copies are in flight
  const std::string as = std::to_string(ahead);
  o.push_back(pad + "// the operands' loads pipelined over " + ss + " stages (num_stages): the first " + as +
              " iterations' issued here");
  o.push_back(pad + "int _pipe_it = 0;");
  o.push_back(pad + "#pragma unroll");
  o.push_back(pad + "for (int _pipe_s = 0; _pipe_s < " + as + "; ++_pipe_s) {");
  issue("(" + lo + ") + _pipe_s * (" + step + ")", "_pipe_s");
  o.push_back(pad + "}");
  o.push_back(lines[h - 1]);
  o.push_back(pad + "  // iteration + " + as + "'s loads, into the stage iteration - " + std::to_string(S - ahead) + " read" +
              (overlap ? " (issued while this iteration's wgmmas run)" : ""));
  o.push_back(pad + "  const " + decl.substr(0, decl.rfind(' ')) + " _pipe_next = " + X + " + " + as + " * (" + step + ");");
  const std::string next_stage = "(_pipe_it + " + as + ") % " + ss;
  if (!overlap) issue("_pipe_next", next_stage);
  o.push_back(pad + "  kiln_tile_cp_async_wait<" + std::to_string(ahead - overlap) + ">();  // this iteration's");
  if (wgmma()) o.push_back(pad + "  kiln_tile_fence_async();");
  o.push_back(pad + "  __syncthreads();");
  o.push_back(pad + "  const int _stage = _pipe_it % " + ss + ";");
  for (size_t k = h; k < b; ++k) o.push_back(lines[k]);
  o.insert(o.end(), decls.begin(), decls.end());
  o.insert(o.end(), lines.begin() + long(i), lines.begin() + long(mma_wait));
  if (overlap) issue("_pipe_next", next_stage);
  if (deep) o.push_back(lines[mma_wait].substr(0, indent(lines[mma_wait])) + "kiln_tile_wgmma_wait<1>();  // the previous iteration's");
  o.insert(o.end(), lines.begin() + long(mma_wait + deep), lines.begin() + long(end));
  o.push_back(pad + "  ++_pipe_it;");
  o.push_back(lines[end]);
  if (deep) {
    o.push_back(pad + "kiln_tile_wgmma_wait<0>();  // the last iteration's wgmmas");
    o.push_back(pad + "#pragma unroll");
    o.push_back(pad + "for (int _j = 0; _j < " + std::to_string(mma_->per_thread()) + "; ++_j) kiln_tile_wgmma_reg(" + wgmma_acc_ + ".r[_j]);");
  }
  o.insert(o.end(), lines.begin() + long(end) + 1, lines.end());
  return join(o);
}

void CudaEmitter::emit_program(const std::string& unpipelined) {
  const std::string body = pipeline_loads(unpipelined);
  const Program& p = program();
  for (const int64_t n : wgmma_widths_) out().raw(wgmma_instruction(n));
  if (wgmma()) shared_bytes_ += kWgmmaAlignPad;
  check_shared_bytes();  // (here only the alignment's 1024 bytes can take it over)
  std::string meta;
  for (const auto& [n, v] : p.meta.constexprs) meta += (meta.empty() ? "" : ", ") + n + "=" + v.str();
  out().line("// ---------------------------------------------------------------- kernel " + p.name);
  out().line("// One thread block per program instance" + (meta.empty() ? std::string() : " (" + meta + ")") + ": " +
             std::to_string(threads_) + " threads, " + std::to_string(shared_bytes_) + " bytes of shared memory.");
  std::string sig;
  for (const Param& prm : p.params) {
    const Value* v = prm.value;
    sig += sig.empty() ? "" : ", ";
    if (prm.kind == ParamKind::Pointer) sig += pointer_type(v->type.dtype) + " __restrict__ " + cname(v);
    else sig += "const " + compute_type(v->type.dtype) + " " + cname(v);
  }
  out().open("extern \"C\" __global__ void __launch_bounds__(" + std::to_string(threads_) + ") " + cpu::entry_name(p) +
             "(" + sig + ")");
  if (wgmma()) {
    out().line("extern __shared__ __align__(1024) unsigned char kiln_tile_smem_base[];");
    out().line("unsigned char* const kiln_tile_smem = kiln_tile_smem_base + (1024 - unsigned(__cvta_generic_to_shared(kiln_tile_smem_base)) % 1024) % 1024;");
  } else if (shared_bytes_ > 0) {
    out().line("extern __shared__ __align__(16) unsigned char kiln_tile_smem[];");
  }
  // The launch checked it: the compiler may then prove a run's 16-byte access aligned (an offset
  // of whole 16-byte chunks from an aligned pointer) and drop its test and element-wise path.
  if (aligned_)
    for (const Param& prm : p.params)
      if (prm.kind == ParamKind::Pointer) {
        const std::string t = pointer_type(prm.value->type.dtype), n = cname(prm.value);
        out().line(n + " = static_cast<" + t + ">(__builtin_assume_aligned(" + n + ", 16));");
      }
  // No barrier at the end: nothing comes after it.
  const std::string last = "  __syncthreads();\n";
  const bool trailing = body.size() >= last.size() && body.compare(body.size() - last.size(), last.size(), last) == 0;
  out().raw(trailing ? body.substr(0, body.size() - last.size()) : body);
  out().close();
}

void CudaEmitter::emit_reduce(const Op& op) {
  const Value* x = op.operands[0];
  const Value* r = op.result();
  const DType d = x->type.dtype;
  const std::string t = compute_type(d);
  const std::vector<int64_t>& in = x->type.shape;
  const size_t axis = size_t(op.axis);
  const ReduceKind k = op.reduce;
  const bool arg = k == ReduceKind::Argmax || k == ReduceKind::Argmin;
  const std::string res = r->type.is_block() ? array_name(r) : cname(r);
  out().line("// " + op.name() + " along axis " + std::to_string(axis) + origin_suffix(op));
  const std::string fn = std::string(combiner(k)) + "{}";

  if (!r->type.is_block() && !arg) {
    // A block to a scalar: each thread's elements, then the threads' partial results combined.
    out().line(compute_type(r->type.dtype) + " " + res + ";");
    out().open("");  // the accumulator's own scope
    out().line(t + " _acc = " + reduce_identity(k, d) + ";");
    sync_after_ = false;  // it only reads; kiln_tile_block_reduce has its barriers
    const ElementIndex e = begin_elements(in);
    out().line("_acc = " + fn + "(_acc, " + element(x, e.dims, e.linear) + ");");
    end_elements(in);
    sync_after_ = true;
    out().line(res + " = " + round_16("kiln_tile_block_reduce<" + std::to_string(threads_) + ">(_acc, " + fn + ")", d) + ";");
    out().close();
    set_access(r, Access::uniform(res));
    return;
  }

  // Each output element by one thread, along the axis in order; an argmax/argmin to a scalar
  // by every thread alike.
  std::vector<int64_t> out_shape;
  for (size_t dd = 0; dd < in.size(); ++dd)
    if (dd != axis) out_shape.push_back(in[dd]);
  std::vector<std::string> idx;
  std::string target = res;
  if (r->type.is_block()) {
    declare(r, res);
    const ElementIndex e = begin_elements(out_shape);
    for (size_t dd = 0, o = 0; dd < in.size(); ++dd) idx.push_back(dd == axis ? "_k" : e.dims[o++]);
    target = res + "[" + e.linear + "]";
  } else {
    out().line(compute_type(r->type.dtype) + " " + res + ";");
    out().open("");
    idx = {"_k"};
  }
  const std::string n = std::to_string(in[axis]);
  if (arg) {
    std::vector<std::string> first = idx;
    first[axis] = "0";
    out().line(t + " _best = " + element(x, first) + ";");
    out().line("int32_t _at = 0;");
    out().open("for (int _k = 1; _k < " + n + "; ++_k)");
    out().line("const " + t + " _x = " + element(x, idx) + ";");
    const std::string better = k == ReduceKind::Argmax ? "_x > _best" : "_x < _best";
    const std::string nan_first = is_floating(d) ? " || (_x != _x && _best == _best)" : "";
    out().line("if (" + better + nan_first + ") _best = _x, _at = _k;");
    out().close();
    out().line(target + " = _at;");
  } else {
    out().line(t + " _acc = " + reduce_identity(k, d) + ";");
    out().line("for (int _k = 0; _k < " + n + "; ++_k) _acc = " + fn + "(_acc, " + element(x, idx) + ");");
    out().line(target + " = " + round_16("_acc", d) + ";");
  }
  if (r->type.is_block()) {
    end_elements(out_shape);
    set_access(r, Access::array(res, row_major(out_shape)));
  } else {
    out().close();
    set_access(r, Access::uniform(res));
  }
}

void CudaEmitter::emit_scan(const Op& op) {
  // The base's loops, on thread 0; the result block declared before them, so all threads see it.
  const CodeWriter saved = out();
  out().clear(saved.depth() + 1);
  serial_ = true;
  hoisted_.clear();
  CLikeEmitter::emit_scan(op);
  serial_ = false;
  const std::string loops = out().text();
  out() = saved;
  for (const std::string& h : hoisted_) out().line(h);
  out().open("if (threadIdx.x == 0)");
  out().raw(loops);
  out().close();
  out().line("__syncthreads();");
}

void CudaEmitter::choose_mma(const Program& p) {
  walk(p.body, [&](const Op& op) {  // (what in_registers reads too)
    for (const Value* v : op.operands) users_of_[v].push_back(&op);
    if (op.code == OpCode::For)
      for (size_t k = 0; k < op.results.size(); ++k) for_result_[op.regions[0].args[k + 1]] = op.results[k];
  });
  // An operand qualifies when a loop writes it (its own elements) and only tensor-core dots read it.
  auto operand = [&](const Value* v) {
    if (!v->def || !own_elements(v->def->code)) return false;
    for (const Op* u : users_of_[v])
      if (u->code != OpCode::Dot || u->operands[2] == v) return false;
    return true;
  };
  walk(p.body, [&](const Op& op) {
    if (op.code != OpCode::Dot) return;
    const Value *a = op.operands[0], *b = op.operands[1];
    const DType d = a->type.dtype;
    const std::vector<int64_t>& rs = op.result()->type.shape;
    const int64_t M = rs[0], N = rs[1], K = a->type.shape[1];
    if ((d != kBFloat16 && d != kFloat16) || b->type.dtype != d || op.result()->type.dtype != kFloat32) return;
    if (M % 16 || N % 8 || K % 16 || !operand(a) || !operand(b)) return;
    if (mma_ && (mma_->shape != rs || (mma_->wgmma && !choose_wgmma(rs, K)))) return;  // one accumulator layout per kernel
    if (!mma_ && wgmma_target_) mma_ = choose_wgmma(rs, K);
    if (!mma_) {
      // The warps' split whose warp tiles are squarest (fewest operand reads per mma).
      const int64_t warps = threads_ / 32;
      std::optional<Mma> best;
      for (int64_t wm = 1; wm <= warps; ++wm) {
        const int64_t wn = warps / wm;
        if (warps % wm || M % (16 * wm) || N % (8 * wn)) continue;
        const Mma m{rs, wm, wn, M / wm / 16, N / wn / 8};
        if (m.per_thread() > kMaxAccumulators) continue;
        if (!best || std::abs(M / wm - N / wn) < std::abs(M / best->wm - N / best->wn)) best = m;
      }
      if (!best) return;
      mma_ = best;
    }
    mma_dots_.insert(&op);
  });
  // A dot reading an operand another (scalar) dot also reads stays scalar too: they share its storage.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Op* dot : std::set<const Op*>(mma_dots_))
      for (int i = 0; i < 2; ++i)
        for (const Op* u : users_of_[dot->operands[i]])
          if (!mma_dots_.count(u)) changed = mma_dots_.erase(dot) > 0;
  }
  if (mma_dots_.empty()) mma_.reset();
}

// The wgmma split of an [M, N] += [M, K] @ [K, N] dot, if its shape allows one: whole
// warpgroups, M a multiple of 64 per warpgroup, K a multiple of 16 that is 16, 32 or a multiple
// of 64 (a's panels), N per warpgroup at most 256 and a whole number of b's panels (min(N, 64)
// columns: N 16, 32 or a multiple of 64). The split with the widest instructions (fewest reads of a).
std::optional<CudaEmitter::Mma> CudaEmitter::choose_wgmma(const std::vector<int64_t>& rs, int64_t K) const {
  const int64_t M = rs[0], N = rs[1], groups = threads_ / 128, panel = std::min<int64_t>(N, 64);
  const bool k_ok = K == 16 || K == 32 || (K % 64 == 0 && K > 0);
  const bool n_ok = N == 16 || N == 32 || (N % 64 == 0 && N > 0);
  if (threads_ % 128 || !k_ok || !n_ok) return std::nullopt;
  for (int64_t wn = 1; wn <= groups; ++wn) {
    const int64_t wm = groups / wn;
    if (groups % wn || M % (64 * wm) || N % wn || (N / wn) % panel || N / wn > 256) continue;
    const Mma m{rs, wm, wn, M / wm / 64, N / wn / 8, true};
    if (m.per_thread() <= kMaxAccumulators) return m;
  }
  return std::nullopt;
}

// This thread's accumulators, in the order of kiln_tile_mma_m16n8k16's c: j = (m * NT + n) * 4 + q.
CLikeEmitter::ElementIndex CudaEmitter::begin_mma_elements() {
  const Mma& m = *mma_;
  const std::string N = std::to_string(m.shape[1]);
  const std::string unit = m.wgmma ? "int(threadIdx.x >> 7)" : "int(threadIdx.x >> 5)";  // warpgroup or warp
  out().line("#pragma unroll");
  out().open("for (int _j = 0; _j < " + std::to_string(m.per_thread()) + "; ++_j)");
  out().line("const int _row = " + unit + " / " + std::to_string(m.wn) + " * " + std::to_string(m.shape[0] / m.wm) + " + _j / " +
             std::to_string(m.nt * 4) + " * " + std::to_string(m.rows()) + (m.wgmma ? " + int(threadIdx.x >> 5 & 3) * 16" : "") +
             " + int(threadIdx.x & 31) / 4 + (_j & 2) * 4;");
  out().line("const int _col = " + unit + " % " + std::to_string(m.wn) + " * " + std::to_string(m.shape[1] / m.wn) +
             " + _j / 4 % " + std::to_string(m.nt) + " * 8 + int(threadIdx.x & 3) * 2 + (_j & 1);");
  out().line("const kiln_tile_at _i{_row * " + N + " + _col, _j};");
  in_elements_ = true;
  return {{"_row", "_col"}, "_i"};
}

// A block of the accumulators' shape in registers where it may be; a tensor-core operand as
// 16-bit values in shared memory. False: declared as any other block.
bool CudaEmitter::declare_mma_block(const std::string& name, const std::string& type, int64_t n) {
  const Value* v = block_named(name);
  if (!v) return false;
  if (v->type.shape == mma_->shape && in_mma_registers(v)) {
    out().line("kiln_tile_mma_regs<" + type + ", " + std::to_string(mma_->per_thread()) + "> " + name + ";");
    return true;
  }
  for (const Op* dot : mma_dots_) {
    if (dot->operands[0] != v && dot->operands[1] != v) continue;
    const int64_t align = mma_->wgmma ? 1024 : 16;  // wgmma: its panels' swizzle from 1024-byte boundaries
    const int64_t at = (shared_bytes_ + align - 1) / align * align;
    shared_names_.push_back(name);
    shared_bytes_ = at + (n * 2 + align - 1) / align * align;
    if (shared_bytes_ > kMaxSharedBytes) return false;  // (declared as a block: its error)
    operand16_.insert(name);
    out().line(kCopyBegin);
    out().line("const kiln_tile_smem16<" + std::string(v->type.dtype == kBFloat16 ? "true" : "false") + ", " +
               std::to_string(v->type.shape.back()) + (mma_->wgmma ? ", " + std::to_string(v->type.shape[0]) : "") + "> " + name +
               "{reinterpret_cast<uint16_t*>(kiln_tile_smem + " + std::to_string(at) + ")};");
    return true;
  }
  return false;
}

// Whether a block of the accumulators' shape (and, for a loop's carried block, the loop's
// result) is only ever read and written at each thread's own elements: by elementwise ops,
// yields, as a loop's initial value and as a tensor-core dot's accumulator.
bool CudaEmitter::in_mma_registers(const Value* v) {
  if (v->def && v->def->code == OpCode::Scan) return false;
  std::vector<const Value*> same = {v};
  if (auto it = for_result_.find(v); it != for_result_.end()) same.push_back(it->second);
  for (const Value* x : same)
    for (const Op* u : users_of_[x]) {
      const bool acc = mma_dots_.count(u) && u->operands[2] == x && u->operands[0] != x && u->operands[1] != x;
      if (!own_elements(u->code) && u->code != OpCode::Yield && u->code != OpCode::For && !acc) return false;
    }
  return true;
}

// r = acc + a @ b on tensor cores: the accumulators from acc, then per k16 step each warp's
// fragments of a (ldmatrix) and b (ldmatrix.trans: b is k-major in shared memory) and an mma
// per m16 x n8 tile, then the accumulators into r.
// A tensor-core dot's last part, both forms': once every warp has read the shared operands, this
// thread's accumulators _c become the result block's elements, and the block is the result.
void CudaEmitter::finish_dot(const Value* r, const std::string& res) {
  const std::vector<int64_t>& shape = r->type.shape;
  out().line("__syncthreads();  // the operands are read (a later loop may write them)");
  begin_elements(shape);
  out().line(res + "[_i] = _c[_j];");
  end_elements(shape);
  out().close();
  set_access(r, Access::array(res, row_major(shape)));
}

void CudaEmitter::emit_mma_dot(const Op& op) {
  const Value *a = op.operands[0], *b = op.operands[1], *acc = op.operands[2];
  const Value* r = op.result();
  const Mma& m = *mma_;
  const std::vector<int64_t>& shape = r->type.shape;
  const int64_t K = a->type.shape[1], N = shape[1];
  const std::string mt = std::to_string(m.mt), nt = std::to_string(m.nt);
  out().line("// dot [" + std::to_string(shape[0]) + ", " + std::to_string(K) + "] @ [" + std::to_string(K) + ", " +
             std::to_string(N) + "] on tensor cores (mma.sync m16n8k16, " + short_name(a->type.dtype) + " -> f32): " +
             std::to_string(m.wm) + " x " + std::to_string(m.wn) + " warps, each " + mt + " x " + nt + " tiles" +
             origin_suffix(op));
  const std::string res = array_name(r);
  declare(r, res);
  out().open("");
  out().line("float _c[" + std::to_string(m.per_thread()) + "];");
  ElementIndex e = begin_elements(shape);
  out().line("_c[_j] = " + element(acc, e.dims, e.linear) + ";");
  end_elements(shape);
  out().line("const int _lane = int(threadIdx.x & 31);");
  out().line("const int _wrow = int(threadIdx.x >> 5) / " + std::to_string(m.wn) + " * " + std::to_string(shape[0] / m.wm) +
             ", _wcol = int(threadIdx.x >> 5) % " + std::to_string(m.wn) + " * " + std::to_string(N / m.wn) + ";");
  const std::string bf = a->type.dtype == kBFloat16 ? "true" : "false";
  out().line("#pragma unroll");
  out().open("for (int _k = 0; _k < " + std::to_string(K) + "; _k += 16)");
  out().line("unsigned _fa[" + mt + "][4], _fb[" + std::to_string(m.nt * 2) + "];");
  out().line("#pragma unroll");
  out().line("for (int _m = 0; _m < " + mt + "; ++_m) kiln_tile_ldmatrix<4, false>(_fa[_m], &" + array_name(a) +
             ".p[kiln_tile_swizzle<" + std::to_string(K) + ">((_wrow + _m * 16 + (_lane & 15)) * " + std::to_string(K) +
             " + _k + (_lane >> 4) * 8)]);");
  auto b_rows = [&](const std::string& n) {  // lane l gives row _k + l % 16, columns n.. (+ 8 for l >= 16 in an x4)
    return "&" + array_name(b) + ".p[kiln_tile_swizzle<" + std::to_string(N) + ">((_k + (_lane & 15)) * " +
           std::to_string(N) + " + _wcol + " + n + ")]";
  };
  if (m.nt >= 2) {
    out().line("#pragma unroll");
    out().line("for (int _n = 0; _n + 1 < " + nt + "; _n += 2) kiln_tile_ldmatrix<4, true>(&_fb[_n * 2], " +
               b_rows("_n * 8 + (_lane >> 4) * 8") + ");");
  }
  if (m.nt % 2) out().line("kiln_tile_ldmatrix<2, true>(&_fb[" + std::to_string(m.nt * 2 - 2) + "], " + b_rows(std::to_string((m.nt - 1) * 8)) + ");");
  out().line("#pragma unroll");
  out().open("for (int _m = 0; _m < " + mt + "; ++_m)");
  out().line("#pragma unroll");
  out().line("for (int _n = 0; _n < " + nt + "; ++_n) kiln_tile_mma_m16n8k16<" + bf + ">(&_c[(_m * " + nt +
             " + _n) * 4], _fa[_m], &_fb[_n * 2]);");
  out().close();
  out().close();
  finish_dot(r, res);
}

// r = acc + a @ b on wgmma: the accumulators from acc, then per k16 step each warpgroup's MT
// wgmma m64nNk16 reading a (K-major) and b (N-major) from shared memory through their
// descriptors, committed as one group and waited for, then the accumulators into r.
void CudaEmitter::emit_wgmma_dot(const Op& op) {
  const Value *a = op.operands[0], *b = op.operands[1], *acc = op.operands[2];
  const Value* r = op.result();
  const Mma& m = *mma_;
  const std::vector<int64_t>& shape = r->type.shape;
  const int64_t M = shape[0], K = a->type.shape[1], N = shape[1], width = m.nt * 8;
  wgmma_widths_.insert(width);
  wgmma_acc_ = in_mma_registers(acc) ? array_name(acc) : std::string();  // (pipeline_loads: waited for after the loop)
  if (!in_mma_registers(r)) wgmma_acc_.clear();
  const std::string regs = std::to_string(m.per_thread()), w = std::to_string(width);
  out().line("// dot [" + std::to_string(M) + ", " + std::to_string(K) + "] @ [" + std::to_string(K) + ", " + std::to_string(N) +
             "] on tensor cores (wgmma m64n" + w + "k16, " + short_name(a->type.dtype) + " -> f32): " + std::to_string(m.wm) + " x " +
             std::to_string(m.wn) + " warpgroups, each " + std::to_string(m.mt) + " m64 tiles" + origin_suffix(op));
  const std::string res = array_name(r);
  declare(r, res);
  out().open("");
  // An accumulator in registers that only this dot reads is accumulated in place: no other
  // instruction writes the wgmmas' registers, so they can stay in flight across iterations.
  const bool inplace = in_mma_registers(acc) && users_of_[acc].size() == 1 && block_named(array_name(acc)) == acc;
  ElementIndex e;
  if (inplace) {
    out().line("float (&_c)[" + regs + "] = " + array_name(acc) + ".r;");
  } else {
    out().line("float _c[" + regs + "];");
    e = begin_elements(shape);
    out().line("_c[_j] = " + element(acc, e.dims, e.linear) + ";");
    end_elements(shape);
  }
  out().line("const int _grow = int(threadIdx.x >> 7) / " + std::to_string(m.wn) + " * " + std::to_string(M / m.wm) +
             ", _gcol = int(threadIdx.x >> 7) % " + std::to_string(m.wn) + " * " + std::to_string(N / m.wn) + ";");
  out().line("#pragma unroll");
  out().line("for (int _j = 0; _j < " + regs + "; ++_j) kiln_tile_wgmma_reg(_c[_j]);");
  out().line("kiln_tile_wgmma_fence();");
  out().line("#pragma unroll");
  out().open("for (int _k = 0; _k < " + std::to_string(K) + "; _k += 16)");
  out().line("#pragma unroll");
  out().line("for (int _m = 0; _m < " + std::to_string(m.mt) + "; ++_m) kiln_tile_wgmma<" + w + ", " +
             (a->type.dtype == kBFloat16 ? "true" : "false") + ">(&_c[_m * " + std::to_string(m.nt * 4) + "], " +
             "kiln_tile_wgmma_desc<" + std::to_string(M) + ", " + std::to_string(K) + ", true>(" + array_name(a) +
             ".p, _grow + _m * 64, _k), kiln_tile_wgmma_desc<" + std::to_string(K) + ", " + std::to_string(N) + ", false>(" +
             array_name(b) + ".p, _k, _gcol));");
  out().close();
  out().line("kiln_tile_wgmma_commit();");
  out().line("kiln_tile_wgmma_wait<0>();");
  out().line("#pragma unroll");
  out().line("for (int _j = 0; _j < " + regs + "; ++_j) kiln_tile_wgmma_reg(_c[_j]);");
  finish_dot(r, res);
}

// The wgmma of N columns (kiln_tile_wgmma's specialization): N / 2 accumulator registers.
std::string wgmma_instruction(int64_t n) {
  const std::string w = std::to_string(n);
  std::string s = "#if !defined(KILN_TILE_EMULATED) && !defined(KILN_TILE_WGMMA_N" + w + ")\n#define KILN_TILE_WGMMA_N" + w + "\n";
  for (const bool bf16 : {true, false}) {
    const std::string t = bf16 ? "bf16" : "f16";
    s += "template <>\n__device__ inline void kiln_tile_wgmma<" + w + ", " + (bf16 ? "true" : "false") +
         ">(float* d, unsigned long long a, unsigned long long b) {\n  asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %" + std::to_string(n / 2 + 2) + ", 0; "
         "wgmma.mma_async.sync.aligned.m64n" + w + "k16.f32." + t + "." + t + " {";
    std::string outs;
    for (int64_t i = 0; i < n / 2; ++i) {
      s += (i ? ", %" : "%") + std::to_string(i);
      outs += std::string(i ? ", " : "") + (i % 8 == 0 ? "\n      " : "") + "\"+f\"(d[" + std::to_string(i) + "])";
    }
    // a K-major (transpose 0), b N-major (transpose 1); scales 1
    s += "}, %" + std::to_string(n / 2) + ", %" + std::to_string(n / 2 + 1) + ", p, 1, 1, 0, 1; }\"\n    :" + outs +
         "\n    : \"l\"(a), \"l\"(b), \"r\"(1));\n}\n";
  }
  return s + "#endif\n";
}

void CudaEmitter::emit_dot(const Op& op) {
  if (mma_dots_.count(&op)) return wgmma() ? emit_wgmma_dot(op) : emit_mma_dot(op);
  // Each output element by one thread, summed along K in order (as the CPU backend: the same
  // fused multiply-adds in the same order give the same result).
  const Value *a = op.operands[0], *b = op.operands[1], *acc = op.operands[2];
  const Value* r = op.result();
  const std::vector<int64_t>& shape = r->type.shape;
  const DType d = r->type.dtype;
  out().line("// dot [" + std::to_string(shape[0]) + ", " + std::to_string(a->type.shape[1]) + "] @ [" +
             std::to_string(a->type.shape[1]) + ", " + std::to_string(shape[1]) + "]" + origin_suffix(op));
  const std::string res = array_name(r);
  declare(r, res);
  const ElementIndex e = begin_elements(shape);
  out().line(compute_type(d) + " _c = " + element(acc, e.dims, e.linear) + ";");
  out().line("for (int _k = 0; _k < " + std::to_string(a->type.shape[1]) + "; ++_k) _c = " +
             fma(element(a, {e.dims[0], "_k"}), element(b, {"_k", e.dims[1]}), "_c", d) + ";");
  out().line(res + "[" + e.linear + "] = _c;");
  end_elements(shape);
  set_access(r, Access::array(res, row_major(shape)));
}

}  // namespace

EmittedKernel emit_kernel(const Program& p, const std::string& arch, bool in_flight, bool aligned) {
  CudaEmitter e(arch.ends_with("_90a"), in_flight, aligned);
  return e.run(p);
}

std::string translation_unit(const std::vector<EmittedKernel>& kernels) {
  std::string s = "// Generated by kiln's tile compiler (src/tile/cuda/emit_cuda.cc): the scalar prelude, then the kernels.\n";
  s += std::string(scalar::prelude());
  s += kSupport;
  for (const EmittedKernel& k : kernels) {
    s += "\n";
    s += k.source;
  }
  return s;
}

}  // namespace kiln::tile::cuda
