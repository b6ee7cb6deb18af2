// The CPU emitter: the C-like emitter's hooks for C++ compiled by the host compiler. Blocks are
// stack arrays, the per-element loop is a loop nest the compiler vectorizes, pointer parameters
// are __restrict, and the entry point spreads the grid's program instances over OpenMP threads.
#include "tile/cpu/emit_c.h"

#include <cctype>

#include "scalar/prelude.h"
#include "tile/emit/c_like.h"

namespace kiln::tile::cpu {
namespace {

// What every CPU translation unit has after the prelude.
const char* kSupport = R"(
// ---------------------------------------------------------------- kiln tile: CPU support
#include <cstdint>
#include <cstring>
#include <limits>
#include <unistd.h>
// The streaming copy's non-temporal stores and fence from the compiler's builtins: <immintrin.h>
// costs ~0.35 s of compiler CPU per translation unit, more than a small unit's kernels (and
// <algorithm> ~0.04 s, for one std::min).
#if defined(__AVX512F__) || defined(__AVX2__)
#if defined(__AVX512F__)
typedef long long kiln_tile_vec __attribute__((vector_size(64)));
#else
typedef long long kiln_tile_vec __attribute__((vector_size(32)));
#endif
static inline void kiln_tile_stream_store(char* d, const char* s) {  // one vector; d aligned to it
  kiln_tile_vec v;
  std::memcpy(&v, s, sizeof v);
#if defined(__clang__)
  __builtin_nontemporal_store(v, reinterpret_cast<kiln_tile_vec*>(d));
#elif defined(__AVX512F__)
  __builtin_ia32_movntdq512(reinterpret_cast<kiln_tile_vec*>(d), v);
#else
  __builtin_ia32_movntdq256(reinterpret_cast<kiln_tile_vec*>(d), v);
#endif
}
#endif

namespace ks = kiln::scalar;

// libm's functions in vector form (glibc's libmvec, which libm pulls in): declared SIMD, the
// per-element loops that call them (a double exp, a sin) vectorize instead of calling the scalar
// function per element. (float exp, log, erf, tanh and sigmoid are the prelude's inline
// polynomials instead: KILN_SCALAR_INLINE_MATH.) glibc declares them so itself only under
// -ffast-math, which kiln does not use. (Within 4 ulp of the exact result, glibc's manual says.)
#if defined(__x86_64__) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 35))
#define KILN_TILE_SIMD1(fn)                                                                     \
  _Pragma("omp declare simd notinbranch") double fn(double) noexcept;                         \
  _Pragma("omp declare simd notinbranch") float fn##f(float) noexcept;
#define KILN_TILE_SIMD2(fn)                                                                     \
  _Pragma("omp declare simd notinbranch") double fn(double, double) noexcept;                 \
  _Pragma("omp declare simd notinbranch") float fn##f(float, float) noexcept;
extern "C" {
KILN_TILE_SIMD1(exp) KILN_TILE_SIMD1(exp2) KILN_TILE_SIMD1(expm1) KILN_TILE_SIMD1(log) KILN_TILE_SIMD1(log2)
KILN_TILE_SIMD1(log1p) KILN_TILE_SIMD1(sin) KILN_TILE_SIMD1(cos) KILN_TILE_SIMD1(tan) KILN_TILE_SIMD1(tanh)
KILN_TILE_SIMD1(asin) KILN_TILE_SIMD1(acos) KILN_TILE_SIMD1(atan) KILN_TILE_SIMD1(sinh) KILN_TILE_SIMD1(cosh)
KILN_TILE_SIMD1(asinh) KILN_TILE_SIMD1(acosh) KILN_TILE_SIMD1(atanh) KILN_TILE_SIMD1(erf) KILN_TILE_SIMD1(erfc)
KILN_TILE_SIMD2(pow) KILN_TILE_SIMD2(atan2) KILN_TILE_SIMD2(hypot)
}
#undef KILN_TILE_SIMD1
#undef KILN_TILE_SIMD2
#endif

// Streaming stores (src/tile/emit/c_like.h): a launch that writes far more than the caches hold
// writes its large contiguous rows with non-temporal stores, which do not read each destination
// line into the cache first (a third of such a kernel's traffic) nor evict what the next kernel
// reads. Otherwise the staged row is copied with ordinary stores.
static inline bool kiln_tile_streaming(int64_t bytes) {
  static const int64_t at_least = [] {
    long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE), cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return int64_t(l2 > 0 ? l2 : 1 << 20) * int64_t(cpus > 0 ? cpus : 1) * 4;
  }();
  return bytes >= at_least;
}
static inline void kiln_tile_store_row(void* __restrict dst, const void* __restrict src, int64_t bytes, bool stream) {
#if defined(__AVX512F__) || defined(__AVX2__)
  if (stream) {
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    const int64_t to_line = int64_t(-reinterpret_cast<uintptr_t>(d) & 63), head = bytes < to_line ? bytes : to_line;
    std::memcpy(d, s, size_t(head));
    d += head, s += head, bytes -= head;
    for (; bytes >= 64; d += 64, s += 64, bytes -= 64)
      for (size_t k = 0; k < 64; k += sizeof(kiln_tile_vec)) kiln_tile_stream_store(d + k, s + k);
    std::memcpy(d, s, size_t(bytes));
    return;
  }
#endif
  (void)stream;
  std::memcpy(dst, src, size_t(bytes));
}
// At the end of a program that streamed: non-temporal stores are weakly ordered, the fence makes
// them visible before the launch returns (once per program: it waits for them to drain).
static inline void kiln_tile_stream_fence(bool stream) {
#if defined(__AVX512F__) || defined(__AVX2__)
  if (stream) __builtin_ia32_sfence();
#endif
  (void)stream;
}

// Prefetching (src/tile/emit/c_like.h): before a loop that loads a row of `bytes` from src, the
// row a page further on: a later iteration's row, which the hardware prefetcher, stopping at each
// 4 KiB page, would ask for only once it is read.
static inline void kiln_tile_prefetch_row(const void* src, int64_t bytes) {
  const char* ahead = static_cast<const char*>(src) + 4096;
  for (int64_t i = 0; i < bytes; i += 64) __builtin_prefetch(ahead + i);
}

// One launch argument, as the launcher (src/tile/cpu/kernel.cc) passes it.
union kiln_tile_arg {
  void* p;
  int64_t i;
  double f;
};

// atomic_add: the old value. Integers add with wrap-around; floats by compare-and-swap on
// their bits; 16-bit floats add in float and round, as the eager add.
template <class T>
static inline T kiln_tile_atomic_add(T* p, T v) {
  if constexpr (std::numeric_limits<T>::is_integer) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED);
  } else {
    T old, next;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    do next = old + v;
    while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return old;
  }
}
template <bool BF16>
static inline float kiln_tile_atomic_add16(uint16_t* p, float v) {
  uint16_t old = __atomic_load_n(p, __ATOMIC_RELAXED), next;
  float was;
  do {
    was = BF16 ? ks::bfloat16_to_float(old) : ks::float16_to_float(old);
    next = BF16 ? ks::float_to_bfloat16(was + v) : ks::float_to_float16(was + v);
  } while (!__atomic_compare_exchange_n(p, &old, next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return was;
}
)";

std::string c_identifier(const std::string& s) {
  std::string c;
  for (char ch : s) c += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ? ch : '_';
  return c;
}

class CpuEmitter final : public CLikeEmitter {
 protected:
  std::string atomic_add(const std::string& ptr, const std::string& value, DType d) const override {
    if (d == kFloat16) return "kiln_tile_atomic_add16<false>(" + ptr + ", " + value + ")";
    if (d == kBFloat16) return "kiln_tile_atomic_add16<true>(" + ptr + ", " + value + ")";
    return "kiln_tile_atomic_add<" + memory_type(d) + ">(" + ptr + ", " + value + ")";
  }
  bool streams_stores() const override { return true; }
  bool divides_by_reciprocal() const override { return true; }
  // Outside a for loop only when the launch reads far more than the caches hold (_ahead): a
  // launch whose data is in the caches would spend the prefetches for nothing.
  std::string prefetch_row(const std::string& src, int64_t bytes, bool in_loop) const override {
    return std::string(in_loop ? "" : "if (_ahead) ") + "kiln_tile_prefetch_row(" + src + ", " + std::to_string(bytes) + ");";
  }
  std::string stream_row(const std::string& dst, const std::string& src, int64_t bytes) const override {
    return "kiln_tile_store_row(" + dst + ", " + src + ", " + std::to_string(bytes) + ", _stream);";
  }
  std::string program_id(int axis) const override { return "_pid" + std::to_string(axis); }
  std::string num_programs(int axis) const override { return "_npid" + std::to_string(axis); }

  void emit_program(const std::string& body) override {
    const Program& p = program();
    const std::string name = c_identifier(p.name);
    std::string meta;
    for (const auto& [n, v] : p.meta.constexprs) meta += (meta.empty() ? "" : ", ") + n + "=" + v.str();
    out().line("// ---------------------------------------------------------------- kernel " + p.name);
    out().line("// One call per program instance" + (meta.empty() ? std::string() : " (" + meta + ")") + ".");
    std::string sig = "static void " + name + "_program(const int32_t _pid0, const int32_t _pid1, const int32_t _pid2, "
                      "const int32_t _npid0, const int32_t _npid1, const int32_t _npid2";
    std::string call = name + "_program(int32_t(_t % _g0), int32_t(_t / _g0 % _g1), int32_t(_t / (_g0 * _g1)), "
                       "int32_t(_g0), int32_t(_g1), int32_t(_g2)";
    std::vector<std::string> unpack;
    for (size_t i = 0; i < p.params.size(); ++i) {
      const Param& prm = p.params[i];
      const Value* v = prm.value;
      const std::string n = cname(v), at = "_args[" + std::to_string(i) + "]";
      if (prm.kind == ParamKind::Pointer) {
        const std::string t = pointer_type(v->type.dtype);
        sig += ", " + t + " __restrict " + n;
        unpack.push_back(t + " const " + n + " = static_cast<" + t + ">(" + at + ".p);");
      } else {
        const std::string t = compute_type(v->type.dtype);
        sig += ", const " + t + " " + n;
        unpack.push_back("const " + t + " " + n + " = " + t + "(" + at + (prm.kind == ParamKind::Float ? ".f" : ".i") + ");");
      }
      call += ", " + n;
    }
    const bool streams = streamed_bytes() > 0, ahead = prefetched_bytes() > 0;
    if (streams) sig += ", const bool _stream", call += ", _stream";
    if (ahead) sig += ", const bool _ahead", call += ", _ahead";
    out().open(sig + ")");
    out().raw(body);
    if (streams) out().line("kiln_tile_stream_fence(_stream);");
    out().close();
    out().line();
    out().line("// The grid: program (pid0, pid1, pid2) for pid0 < grid[0], ...; instances spread over OpenMP threads.");
    out().open("extern \"C\" void " + entry_name(p) + "(const kiln_tile_arg* _args, const int64_t* _grid)");
    for (const std::string& u : unpack) out().line(u);
    out().line("const int64_t _g0 = _grid[0], _g1 = _grid[1], _g2 = _grid[2];");
    out().line("const int64_t _total = _g0 * _g1 * _g2;");
    if (streams) out().line("const bool _stream = kiln_tile_streaming(_total * " + std::to_string(streamed_bytes()) + ");");
    if (ahead) out().line("const bool _ahead = kiln_tile_streaming(_total * " + std::to_string(prefetched_bytes()) + ");");
    out().open("if (_total <= 1)");  // one program (or none): no OpenMP region
    out().line("for (int64_t _t = 0; _t < _total; ++_t) " + call + ");");
    out().line("return;");
    out().close();
    out().line("#pragma omp parallel for schedule(static)");
    out().line("for (int64_t _t = 0; _t < _total; ++_t) " + call + ");");
    out().close();
  }
};

}  // namespace

std::string entry_name(const Program& p) { return "kiln_tile_" + c_identifier(p.name); }

std::string emit_kernel(const Program& p) {
  CpuEmitter e;
  return e.emit(p);
}

std::string translation_unit(const std::vector<const Program*>& kernels) {
  std::string s = "// Generated by kiln's tile compiler (src/tile/cpu/emit_c.cc): the scalar prelude, then the kernels.\n";
  // float exp, log, erf, tanh and sigmoid as the prelude's inline polynomials (scalar/inline_math.h),
  // which vectorize in the kernels' loops, rather than libm calls.
  s += "#define KILN_SCALAR_INLINE_MATH 1\n";
  s += std::string(scalar::prelude());
  s += kSupport;
  for (const Program* p : kernels) {
    s += "\n";
    s += emit_kernel(*p);
  }
  return s;
}

}  // namespace kiln::tile::cpu
