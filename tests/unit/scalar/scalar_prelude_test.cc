// scalar::prelude(), the scalar header as the prelude of generated code, compiles on its
// own: as C++17 host code by the system compiler, and with NVRTC for sm_90 (libnvrtc loaded with
// dlopen; nothing runs on a GPU). The check program after the prelude calls the function of
// every pointwise prim in ops.def with every compute type it takes, so a prim without its
// kiln::scalar function, or one that does not compile for a GPU, fails here.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ops/dispatch.h"
#include "scalar/prelude.h"
#include "ops/schema.h"

namespace {

using namespace kiln::ops;

// The check program: per pointwise prim of ops.def a function object calling its scalar
// function, and a call by the op's arity (1 or 2 tensors: the function on (T) or (T, T); 3:
// where's (bool, T, T)); an op with a ScalarType argument is a conversion, its function
// templated on the target type. Then the functions not named after a prim: div's "trunc" mode,
// relu's fast kernel, the 16-bit storage conversions and steps, the float -> int rule.
std::string check_source() {
  std::string fns, calls;
  auto add = [&](const std::string& fn, const std::string& how) {
    fns += (how == "convert" ? "KILN_CONVERT_FN(" : "KILN_FN(") + fn + ")\n";
    calls += "  n += " + how + "(fn_" + fn + "{});\n";
  };
  for (int i = 0; i < kNumOps; ++i) {
    const OpInfo& op = op_info(OpId(i));
    if (op.family != OpFamily::POINTWISE || op.kind != OpKind::PRIM) continue;
    int tensors = 0;
    bool to_dtype = false;
    for (const SchemaArg& a : op_schema(op.id).args) {
      tensors += a.type == ArgType::Tensor;
      to_dtype |= a.type == ArgType::ScalarType;
    }
    if (to_dtype) add(op.name, "convert");
    else if (tensors == 1) add(op.name, "unary");
    else if (tensors == 2) add(op.name, "binary");
    else if (tensors == 3) add(op.name, "select");
    else ADD_FAILURE() << op.name << ": a pointwise prim with " << tensors << " tensor arguments; teach this test its call";
  }
  for (const char* fn : {"relu", "float_to_float16", "float16_to_float", "float_to_bfloat16", "bfloat16_to_float"})
    add(fn, "unary");
  for (const char* fn : {"div_trunc", "nextafter_float16", "nextafter_bfloat16"}) add(fn, "binary");
  add("float_to_int", "convert");
  return std::string(kiln::scalar::prelude()) + R"(
// ---------------------------------------------------------------- the check (not the prelude)
namespace kiln_check {
using namespace kiln::scalar;
// f(a...) when f takes these argument types (1), else nothing (0).
template <class F, class... A>
KILN_HD auto call(int, F f, A... a) -> decltype((void)f(a...), 1) { (void)f(a...); return 1; }
template <class F, class... A>
KILN_HD int call(long, F, A...) { return 0; }
// E(v) summed over one value of each compute type.
#define KILN_EACH(E) E(true) + E(u8(1)) + E(i8(1)) + E(i16(1)) + E(i32(1)) + E(i64(1)) + E(1.0f) + E(1.0)
#define KILN_UNARY(v) call(0, f, v)
#define KILN_BINARY(v) call(0, f, v, v)
#define KILN_SELECT(v) call(0, f, true, v, v)
#define KILN_FROM(v) call(0, f, to, v)
#define KILN_TO(v) convert_to(f, v)
template <class F> KILN_HD int unary(F f) { return KILN_EACH(KILN_UNARY); }
template <class F> KILN_HD int binary(F f) { return KILN_EACH(KILN_BINARY); }
template <class F> KILN_HD int select(F f) { return KILN_EACH(KILN_SELECT); }
template <class F, class To> KILN_HD int convert_to(F f, To to) { return KILN_EACH(KILN_FROM); }
template <class F> KILN_HD int convert(F f) { return KILN_EACH(KILN_TO); }
}  // namespace kiln_check
// fn_<name>: kiln::scalar::<name> as a function object that exists only for the types it takes.
#define KILN_FN(fn)                                                                          \
  struct fn_##fn {                                                                           \
    template <class... V>                                                                    \
    KILN_HD auto operator()(V... v) const -> decltype(kiln::scalar::fn(v...)) { return kiln::scalar::fn(v...); } \
  };
#define KILN_CONVERT_FN(fn)                                                                  \
  struct fn_##fn {                                                                           \
    template <class To, class V>                                                             \
    KILN_HD auto operator()(To, V v) const -> decltype(kiln::scalar::fn<To>(v)) { return kiln::scalar::fn<To>(v); } \
  };
)" + fns + R"(
#if defined(__CUDACC_RTC__)
extern "C" __global__
#endif
void kiln_prelude_check(int* out) {
  using namespace kiln_check;
  int n = 0;
)" + calls + R"(  *out = n;
}
)";
}

TEST(ScalarPrelude, IsTheHeaderWithItsPartsInlined) {
  const std::string_view p = kiln::scalar::prelude();
  EXPECT_NE(p.find("namespace kiln::scalar"), std::string_view::npos);
  EXPECT_NE(p.find("KILN_SCALAR T floor_divide(T a, T b)"), std::string_view::npos);
  EXPECT_NE(p.find("KILN_SCALAR double digamma_f64(double x)"), std::string_view::npos);
  EXPECT_EQ(p.find("#include \"scalar/"), std::string_view::npos) << "an include of a part was left";
  EXPECT_EQ(p.find("#pragma once"), std::string_view::npos);
  // Each part once: base.h's type table appears a single time.
  const size_t first = p.find("struct type_traits {");
  ASSERT_NE(first, std::string_view::npos);
  EXPECT_EQ(p.find("struct type_traits {", first + 1), std::string_view::npos);
}

struct Command {
  int status;
  std::string output;
};
Command run(const std::string& cmd) {
  Command r{-1, ""};
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  r.status = pclose(f);
  return r;
}

TEST(ScalarPrelude, CompilesAsHostCpp17) {
  if (run("command -v c++").status != 0) GTEST_SKIP() << "no system C++ compiler (c++) on PATH";
  const auto dir = std::filesystem::temp_directory_path() / ("kiln_scalar_prelude_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto file = dir / "check.cc";
  std::ofstream(file) << check_source();
  bool ok = true;
  // As eager includes it, and as generated CPU code does (its inline float math on, for the CPU).
  for (const char* flags : {"", "-DKILN_SCALAR_INLINE_MATH=1 -march=native"}) {
    const Command c = run(std::string("c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror ") + flags + " " + file.string());
    EXPECT_EQ(c.status, 0) << flags << "\n" << c.output;
    ok = ok && c.status == 0;
  }
  if (ok) std::filesystem::remove_all(dir);  // kept for a look when it fails
  else ADD_FAILURE() << "the source is in " << file.string();
}

// The few NVRTC entry points the test needs (nvrtc.h is not included: no build dependency).
// The library stays loaded: unloading it leaks the memory pool of the C++ runtime linked into
// it (72 KB, which LeakSanitizer reports).
struct Nvrtc {
  void* lib = nullptr;
  int (*create)(void**, const char*, const char*, int, const char* const*, const char* const*) = nullptr;
  int (*compile)(void*, int, const char* const*) = nullptr;
  int (*log_size)(void*, size_t*) = nullptr;
  int (*log)(void*, char*) = nullptr;
  int (*destroy)(void**) = nullptr;
  const char* (*error_string)(int) = nullptr;

  // libnvrtc from the loader's path, else from the CUDA toolkits under /usr/local.
  bool load() {
    std::vector<std::string> names = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
    std::error_code ec;
    for (const auto& d : std::filesystem::directory_iterator("/usr/local", ec))
      if (d.path().filename().string().rfind("cuda", 0) == 0) names.push_back((d.path() / "lib64/libnvrtc.so").string());
    for (const std::string& n : names)
      if ((lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) return false;
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "nvrtcCreateProgram"));
    compile = reinterpret_cast<decltype(compile)>(dlsym(lib, "nvrtcCompileProgram"));
    log_size = reinterpret_cast<decltype(log_size)>(dlsym(lib, "nvrtcGetProgramLogSize"));
    log = reinterpret_cast<decltype(log)>(dlsym(lib, "nvrtcGetProgramLog"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "nvrtcDestroyProgram"));
    error_string = reinterpret_cast<decltype(error_string)>(dlsym(lib, "nvrtcGetErrorString"));
    return create && compile && log_size && log && destroy && error_string;
  }
};

TEST(ScalarPrelude, CompilesWithNvrtcForSm90) {
  Nvrtc nv;
  if (!nv.load()) GTEST_SKIP() << "NVRTC (libnvrtc.so) not found: the CUDA toolkit is not installed";
  const std::string src = check_source();
  void* prog = nullptr;
  ASSERT_EQ(nv.create(&prog, src.c_str(), "kiln_prelude_check.cu", 0, nullptr, nullptr), 0);
  const char* opts[] = {"--gpu-architecture=sm_90", "-std=c++17"};
  const int rc = nv.compile(prog, 2, opts);
  size_t n = 0;
  nv.log_size(prog, &n);
  std::string log(n, '\0');
  if (n) nv.log(prog, log.data());
  nv.destroy(&prog);
  EXPECT_EQ(rc, 0) << nv.error_string(rc) << "\n" << log;
  // A clean prelude: no warnings either (the log is empty or just its terminating NUL).
  EXPECT_EQ(log.find("warning"), std::string::npos) << log;
}

}  // namespace
