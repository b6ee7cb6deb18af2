// The system compiler as the tile CPU backend's assembler (cc.h).
#include "tile/cpu/cc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <kiln/error.h>

namespace kiln::tile::cpu {
namespace {

struct Command {
  int status = -1;
  std::string output;  // stdout and stderr
};

Command run(const std::string& cmd) {
  Command r;
  FILE* f = popen((cmd + " 2>&1").c_str(), "r");
  if (!f) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) r.output.append(buf, n);
  r.status = pclose(f);
  return r;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

[[noreturn]] void fail(const std::string& message, const std::string& hint = {}) {
  Error::Info info;
  info.op = "tile.compile";
  info.message = message;
  info.hint = hint;
  throw Error(std::move(info));
}

// The process's folder, made on first use and emptied at exit by the process that made it, but
// for the sources that failed to compile (kept for a look; the folder then stays).
struct WorkDir {
  std::string path;
  std::mutex mu;
  std::vector<std::string> failed;
  pid_t owner = getpid();
  WorkDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-tile-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) fail("cannot create a temporary folder for generated kernels under " + tmpl);
    path = tmpl;
  }
  void keep(const std::string& file) {
    std::lock_guard<std::mutex> lock(mu);
    failed.push_back(file);
  }
  ~WorkDir() {
    const char* env = std::getenv("KILN_TILE_KEEP");
    if (getpid() != owner || (env && *env && std::string(env) != "0")) return;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(path, ec))
      if (std::find(failed.begin(), failed.end(), e.path().string()) == failed.end()) std::filesystem::remove(e.path(), ec);
    std::filesystem::remove(path, ec);  // only if empty
  }
};
WorkDir& dir() {
  static WorkDir d;
  return d;
}

uint64_t fnv1a(uint64_t h, const std::string& s) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return (h ^ 0xff) * 1099511628211ull;  // a separator, so ("ab", "c") and ("a", "bc") differ
}

// Libraries loaded in this process, by key: a kernel compiled twice is loaded once (and an
// object is never rewritten while it is mapped).
std::mutex g_loaded_mu;
std::map<std::string, std::weak_ptr<Library>> g_loaded;
std::atomic<uint64_t> g_counter{0};

void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp" + std::to_string(g_counter++);
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f) fail("cannot write the generated source " + path);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

const Compiler& compiler() {
  static const Compiler c = [] {
    Compiler k;
    const char* env = std::getenv("KILN_CXX");
    k.command = env && *env ? env : "c++";
    const Command v = run(quote(k.command) + " --version");
    k.version = v.status == 0 ? v.output.substr(0, v.output.find('\n')) : "unknown";
    // -ffp-contract=off: no multiply-add contraction, so elementwise math rounds as eager's
    // (dot calls fma itself). -fno-math-errno lets sqrt vectorize; results are the same.
    k.flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno"};
    return k;
  }();
  return c;
}

std::string cache_key(const std::string& source) {
  const Compiler& c = compiler();
  uint64_t h = 14695981039346656037ull;
  h = fnv1a(h, source);
  h = fnv1a(h, c.command);
  h = fnv1a(h, c.version);
  for (const std::string& f : c.flags) h = fnv1a(h, f);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

const std::string& work_dir() { return dir().path; }

Library::~Library() {
  if (handle_) dlclose(handle_);
}

void* Library::symbol(const std::string& name) const {
  void* s = dlsym(handle_, name.c_str());
  if (!s) fail("the compiled object " + library_path_ + " has no symbol " + name);
  return s;
}

std::shared_ptr<Library> compile_source(const std::string& source, const std::string& stem) {
  const std::string key = cache_key(source);
  {
    std::lock_guard<std::mutex> lock(g_loaded_mu);
    if (auto it = g_loaded.find(key); it != g_loaded.end())
      if (auto lib = it->second.lock()) return lib;
  }
  const Compiler& c = compiler();
  const std::string base = dir().path + "/" + stem + "-" + key;
  const std::string src = base + ".cc", so = base + ".so";
  write_file(src, source);
  // Compiled under a name of its own, then renamed: a concurrent compile of the same kernel, or
  // an earlier copy still mapped, never sees a half-written object.
  const std::string tmp_so = base + ".tmp" + std::to_string(g_counter++) + ".so";
  std::string cmd = quote(c.command);
  for (const std::string& f : c.flags) cmd += " " + f;
  cmd += " -o " + quote(tmp_so) + " " + quote(src);
  const auto t0 = std::chrono::steady_clock::now();
  const Command r = run(cmd);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.status != 0) {
    dir().keep(src);
    std::string msg = r.output.size() > 8000 ? r.output.substr(0, 8000) + "\n[... cut]" : r.output;
    if (r.status == -1 || msg.empty()) msg = "(no output; is " + c.command + " installed? set KILN_CXX to a C++ compiler)";
    fail("the generated source " + src + " did not compile (" + c.command + "):\n" + msg,
         "the file is kept for a look; set KILN_CXX to use another compiler");
  }
  std::filesystem::rename(tmp_so, so);
  auto lib = std::shared_ptr<Library>(new Library());
  lib->handle_ = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib->handle_) {
    const char* e = dlerror();
    fail("cannot load the compiled kernel " + so + ": " + (e ? e : "unknown error"));
  }
  lib->source_path_ = src;
  lib->library_path_ = so;
  lib->key_ = key;
  lib->seconds_ = seconds;
  std::lock_guard<std::mutex> lock(g_loaded_mu);
  g_loaded[key] = lib;
  return lib;
}

}  // namespace kiln::tile::cpu
