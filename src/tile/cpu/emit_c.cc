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
#include <limits>

namespace ks = kiln::scalar;

// libm's functions in vector form (glibc's libmvec, which libm pulls in): declared SIMD, the
// per-element loops that call them (softmax's exp, gelu's tanh) vectorize instead of calling
// the scalar function per element. glibc declares them so itself only under -ffast-math, which
// kiln does not use. (Within 4 ulp of the exact result, glibc's manual says.)
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
    out().open(sig + ")");
    out().raw(body);
    out().close();
    out().line();
    out().line("// The grid: program (pid0, pid1, pid2) for pid0 < grid[0], ...; instances spread over OpenMP threads.");
    out().open("extern \"C\" void " + entry_name(p) + "(const kiln_tile_arg* _args, const int64_t* _grid)");
    for (const std::string& u : unpack) out().line(u);
    out().line("const int64_t _g0 = _grid[0], _g1 = _grid[1], _g2 = _grid[2];");
    out().line("const int64_t _total = _g0 * _g1 * _g2;");
    out().line("#pragma omp parallel for schedule(static) if (_total > 1)");
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
  s += std::string(scalar::prelude());
  s += kSupport;
  for (const Program* p : kernels) {
    s += "\n";
    s += emit_kernel(*p);
  }
  return s;
}

}  // namespace kiln::tile::cpu
