#include "runtime/cuda/nvrtc.h"

#include <dlfcn.h>
#include <kiln/error.h>

#include <cctype>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/cache.h"
#include "runtime/cuda/library.h"

namespace kiln::runtime::cuda::nvrtc {
namespace {

// NVRTC's C API as kiln declares it (the ABI of nvrtc.h: an int result, an opaque program).
using Result = int;
using Program = struct ProgramOpaque*;
constexpr Result kSuccess = 0;

struct Api {
  const char* (*get_error_string)(Result);
  Result (*version)(int*, int*);
  Result (*create_program)(Program*, const char*, const char*, int, const char* const*, const char* const*);
  Result (*destroy_program)(Program*);
  Result (*compile_program)(Program, int, const char* const*);
  Result (*get_program_log_size)(Program, size_t*);
  Result (*get_program_log)(Program, char*);
  Result (*get_cubin_size)(Program, size_t*);
  Result (*get_cubin)(Program, char*);
  Result (*get_ptx_size)(Program, size_t*);
  Result (*get_ptx)(Program, char*);
};

struct Loaded {
  Library lib{"NVRTC", library_candidates("KILN_NVRTC_LIBRARY", {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})};
  Api api{};
  bool ok = false;
  Loaded() {
    ok = lib.ok() && lib.get(api.get_error_string, "nvrtcGetErrorString") && lib.get(api.version, "nvrtcVersion") &&
         lib.get(api.create_program, "nvrtcCreateProgram") && lib.get(api.destroy_program, "nvrtcDestroyProgram") &&
         lib.get(api.compile_program, "nvrtcCompileProgram") &&
         lib.get(api.get_program_log_size, "nvrtcGetProgramLogSize") &&
         lib.get(api.get_program_log, "nvrtcGetProgramLog") && lib.get(api.get_cubin_size, "nvrtcGetCUBINSize") &&
         lib.get(api.get_cubin, "nvrtcGetCUBIN") && lib.get(api.get_ptx_size, "nvrtcGetPTXSize") &&
         lib.get(api.get_ptx, "nvrtcGetPTX");
  }
};

Loaded& loaded() {
  static Loaded* l = new Loaded;  // never destroyed: compiles may run during static destruction
  return *l;
}

const Api& api() {
  Loaded& l = loaded();
  KILN_CHECK_HINT(l.ok, "install the CUDA toolkit's NVRTC (libnvrtc.so.13) or set KILN_NVRTC_LIBRARY to its path",
                  l.lib.error());
  return l.api;
}

void check(Result r, const char* call) {
  if (r != kSuccess) kiln::detail::fail(kiln::detail::cat("NVRTC ", call, " failed: ", api().get_error_string(r)));
}

// Keeps a rejected source where the user can read it: the cache folder, else the temporary one.
std::string save_source(std::string_view source, std::string_view name) {
  namespace fs = std::filesystem;
  std::string file(name);
  for (char& c : file)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  std::error_code ec;
  const fs::path dir = (cache::enabled() ? fs::path(cache::dir()) : fs::temp_directory_path(ec) / "kiln") / "cuda-failed";
  fs::create_directories(dir, ec);
  const fs::path path = dir / (cache::hash({source}).substr(0, 12) + "-" + file);
  std::ofstream(path, std::ios::binary) << source;
  return path.string();
}

}  // namespace

const std::string& include_dir() {
  static const std::string dir = [] {
    namespace fs = std::filesystem;
    std::vector<fs::path> candidates;
    Dl_info info{};
    if (available() && dladdr(reinterpret_cast<void*>(loaded().api.version), &info) && info.dli_fname) {
      std::error_code ec;
      const fs::path lib = fs::canonical(info.dli_fname, ec).parent_path();  // .../lib64 or .../lib
      candidates.push_back(lib.parent_path() / "include");
      candidates.push_back(lib.parent_path().parent_path() / "cuda_runtime" / "include");  // the pip wheels
    }
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
      if (const char* r = std::getenv(var); r && *r) candidates.push_back(fs::path(r) / "include");
    candidates.push_back("/usr/local/cuda/include");
    for (const fs::path& c : candidates) {
      std::error_code ec;
      if (fs::exists(c / "cuda_bf16.h", ec)) return c.string();
    }
    return std::string();
  }();
  return dir;
}

bool available() { return loaded().ok; }
const std::string& unavailable_reason() { return loaded().lib.error(); }

int version() {
  if (!available()) return 0;
  int major = 0, minor = 0;
  check(api().version(&major, &minor), "nvrtcVersion");
  return major * 1000 + minor * 10;
}

Output compile(std::string_view source, std::string_view name, std::string_view arch,
               const std::vector<std::string>& options) {
  const Api& a = api();
  KILN_CHECK(arch.starts_with("sm_") || arch.starts_with("compute_"), "nvrtc::compile: arch '", arch,
             "' is neither a real GPU (sm_90a) nor a virtual one (compute_90a)");
  const std::string src(source), file(name), arch_flag = "--gpu-architecture=" + std::string(arch);
  const std::string include = include_dir().empty() ? std::string() : "-I" + include_dir();
  std::vector<const char*> argv{arch_flag.c_str()};
  if (!include.empty()) argv.push_back(include.c_str());
  for (const std::string& o : options) argv.push_back(o.c_str());

  Program prog = nullptr;
  check(a.create_program(&prog, src.c_str(), file.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  struct Destroy {
    const Api& a;
    Program& p;
    ~Destroy() { a.destroy_program(&p); }
  } destroy{a, prog};

  const Result compiled = a.compile_program(prog, int(argv.size()), argv.data());
  Output out;
  size_t n = 0;
  check(a.get_program_log_size(prog, &n), "nvrtcGetProgramLogSize");
  out.log.resize(n);
  if (n) check(a.get_program_log(prog, out.log.data()), "nvrtcGetProgramLog");
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (compiled != kSuccess)
    kiln::detail::fail(kiln::detail::cat("NVRTC could not compile ", file, " for ", arch, " (",
                                         a.get_error_string(compiled), "):\n", out.log,
                                         "\nthe source is in ", save_source(source, name)),
                       "the log above names the line; the saved file has the source as NVRTC saw it");
  out.is_cubin = arch.starts_with("sm_");
  n = 0;
  if (out.is_cubin) {
    check(a.get_cubin_size(prog, &n), "nvrtcGetCUBINSize");
    out.binary.resize(n);
    check(a.get_cubin(prog, out.binary.data()), "nvrtcGetCUBIN");
  } else {
    check(a.get_ptx_size(prog, &n), "nvrtcGetPTXSize");
    out.binary.resize(n);
    check(a.get_ptx(prog, out.binary.data()), "nvrtcGetPTX");
  }
  return out;
}

}  // namespace kiln::runtime::cuda::nvrtc
