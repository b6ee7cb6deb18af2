// The system compiler as the tile CPU backend's assembler (cc.h).
#include "tile/cpu/cc.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <kiln/error.h>
#include <kiln/log.h>

#include "runtime/cache.h"

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

// At most compile_jobs() compilers run at once in the process; ~WorkDir waits for those still
// running (a compile started in the background may outlive main()).
struct Jobs {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  void acquire() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return running < compile_jobs(); });
    ++running;
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --running;
    }
    cv.notify_all();
  }
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return running == 0; });
  }
};
Jobs g_jobs;  // namespace scope: outlives the function-local WorkDir

Command run_compiler(const std::string& cmd) {
  g_jobs.acquire();
  struct Release {
    ~Release() { g_jobs.release(); }
  } release;
  return run(cmd);
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
    g_jobs.wait_idle();
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

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// What the compiler is, without running it: the executable's resolved path, size and time
// (an upgrade or a rebuild of the compiler changes one of them).
std::string compiler_identity(const std::string& command) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = command;
  if (command.find('/') == std::string::npos) {
    exe.clear();
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (size_t at = 0; at <= dirs.size();) {
      const size_t end = std::min(dirs.find(':', at), dirs.size());
      const fs::path candidate = fs::path(dirs.substr(at, end - at)) / command;
      if (access(candidate.c_str(), X_OK) == 0) {
        exe = candidate;
        break;
      }
      at = end + 1;
    }
  }
  const fs::path real = exe.empty() ? fs::path() : fs::canonical(exe, ec);
  if (real.empty() || ec) return "unresolved " + command;
  const auto size = fs::file_size(real, ec);
  const auto time = fs::last_write_time(real, ec).time_since_epoch().count();
  return real.string() + " " + std::to_string(size) + " " + std::to_string(time);
}

// The target the objects are built for (-march=native): the CPU's model and feature flags.
std::string host_arch() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, model, flags;
  while (std::getline(f, line) && (model.empty() || flags.empty())) {
    if (model.empty() && line.rfind("model name", 0) == 0) model = line;
    if (flags.empty() && line.rfind("flags", 0) == 0) flags = line;
  }
#if defined(__x86_64__)
  const char* machine = "x86_64";
#elif defined(__aarch64__)
  const char* machine = "aarch64";
#else
  const char* machine = "other";
#endif
  return std::string(machine) + "\n" + model + "\n" + flags;
}

}  // namespace

int compile_jobs() {
  static const int jobs = [] {
    const char* env = std::getenv("KILN_COMPILE_JOBS");
    const int n = env && *env ? std::atoi(env) : int(std::thread::hardware_concurrency());
    return std::max(1, n);
  }();
  return jobs;
}

const Compiler& compiler() {
  static const Compiler c = [] {
    Compiler k;
    const char* env = std::getenv("KILN_CXX");
    k.command = env && *env ? env : "c++";
    k.identity = compiler_identity(k.command);
    k.arch = host_arch();
    // -ffp-contract=off: no multiply-add contraction, so elementwise math rounds as eager's
    // (dot calls fma itself). -fno-math-errno lets sqrt vectorize; results are the same.
    k.flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", "-ffp-contract=off", "-fno-math-errno"};
    return k;
  }();
  return c;
}

std::string cache_key(const std::string& source) {
  const Compiler& c = compiler();
  std::string flags;
  for (const std::string& f : c.flags) flags += f + " ";
  return runtime::cache::hash({source, c.command, c.identity, flags, c.arch, runtime::cache::kiln_version()});
}

const std::string& work_dir() { return dir().path; }

namespace {
std::mutex g_flight_mu;
std::condition_variable g_flight_cv;
int g_in_flight = 0;
pid_t g_flight_owner = 0;  // (a forked child has the count but not the threads: it does not wait)

void wait_for_compiles() {
  if (getpid() != g_flight_owner) return;
  std::unique_lock<std::mutex> lock(g_flight_mu);
  g_flight_cv.wait(lock, [] { return g_in_flight == 0; });
}
}  // namespace

CompileInFlight::CompileInFlight() {
  // Once, before the first compile thread starts: everything a compile uses is made first, then
  // the exit handler registered, so it runs before any of them is destroyed (exit runs handlers
  // and static destructors in the reverse order of their registration).
  static std::once_flag once;
  std::call_once(once, [] {
    (void)work_dir();
    (void)compiler();
    (void)compile_jobs();
    (void)runtime::cache::dir();
    (void)runtime::cache::enabled();
    g_flight_owner = getpid();
    std::atexit(wait_for_compiles);
  });
  std::lock_guard<std::mutex> lock(g_flight_mu);
  ++g_in_flight;
}

CompileInFlight::~CompileInFlight() {
  std::lock_guard<std::mutex> lock(g_flight_mu);
  if (--g_in_flight == 0) g_flight_cv.notify_all();
}

Library::~Library() {
  if (handle_) dlclose(handle_);
}

void* Library::symbol(const std::string& name) const {
  void* s = dlsym(handle_, (name + suffix_).c_str());
  if (!s) fail("the compiled object " + library_path_ + " has no symbol " + name + suffix_);
  return s;
}

namespace {
std::mutex g_hook_mu;
std::shared_ptr<const PrebuiltHook> g_hook;
}  // namespace

void set_prebuilt_hook(PrebuiltHook hook) {
  std::lock_guard<std::mutex> lock(g_hook_mu);
  g_hook = hook ? std::make_shared<const PrebuiltHook>(std::move(hook)) : nullptr;
}

namespace {

// Loads a shared object; null (and the loader's message in `error`) when dlopen refuses it.
void* open_library(const std::string& path, std::string& error) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    error = e ? e : "unknown error";
  }
  return h;
}

constexpr const char* kCacheNamespace = "tile-cpu";

}  // namespace

std::shared_ptr<Library> compile_source(const std::string& source, const std::string& stem) {
  const std::string key = cache_key(source);
  {
    std::lock_guard<std::mutex> lock(g_loaded_mu);
    if (auto it = g_loaded.find(key); it != g_loaded.end())
      if (auto lib = it->second.lock()) return lib;
  }
  const Compiler& c = compiler();
  const std::string base = dir().path + "/" + stem + "-" + key;
  const std::string src = base + ".cc", entry = stem + "-" + key + ".so";
  write_file(src, source);  // also on a hit: source_path() shows what runs
  auto lib = std::shared_ptr<Library>(new Library());
  lib->source_path_ = src;
  lib->key_ = key;
  // A warm process loads the object the disk cache holds (checked by get_path) and compiles
  // nothing; one dlopen refuses is removed and rebuilt.
  std::string error;
  std::shared_ptr<const PrebuiltHook> hook;
  {
    std::lock_guard<std::mutex> lock(g_hook_mu);
    hook = g_hook;
  }
  if (auto pre = hook ? (*hook)(source) : std::nullopt) {
    if (!(lib->handle_ = open_library(pre->path, error))) fail("cannot load the prebuilt object " + pre->path + ": " + error);
    lib->library_path_ = pre->path;
    lib->suffix_ = pre->suffix;
  } else if (auto cached = runtime::cache::get_path(kCacheNamespace, entry)) {
    if ((lib->handle_ = open_library(*cached, error))) {
      lib->library_path_ = *cached;
      lib->from_cache_ = true;
    } else {
      KILN_LOG(cache) << "the cached object " << *cached << " does not load (" << error << "); removed, it is rebuilt";
      runtime::cache::remove(kCacheNamespace, entry);
    }
  }
  if (!lib->handle_) {
    // Compiled under a name of its own, then stored or renamed: a concurrent compile of the same
    // kernel, or an earlier copy still mapped, never sees a half-written object.
    const std::string tmp_so = base + ".tmp" + std::to_string(g_counter++) + ".so";
    std::string cmd = quote(c.command);
    for (const std::string& f : c.flags) cmd += " " + f;
    cmd += " -o " + quote(tmp_so) + " " + quote(src);
    const auto t0 = std::chrono::steady_clock::now();
    const Command r = run_compiler(cmd);
    lib->seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.status != 0) {
      dir().keep(src);
      std::string msg = r.output.size() > 8000 ? r.output.substr(0, 8000) + "\n[... cut]" : r.output;
      if (r.status == -1 || msg.empty()) msg = "(no output; is " + c.command + " installed? set KILN_CXX to a C++ compiler)";
      fail("the generated source " + src + " did not compile (" + c.command + "):\n" + msg,
           "the file is kept for a look; set KILN_CXX to use another compiler");
    }
    std::string so = base + ".so";
    std::error_code ec;
    if (auto stored = runtime::cache::put(kCacheNamespace, entry, read_file(tmp_so))) {
      so = *stored;
      std::filesystem::remove(tmp_so, ec);
    } else {
      std::filesystem::rename(tmp_so, so);
    }
    if (!(lib->handle_ = open_library(so, error))) fail("cannot load the compiled kernel " + so + ": " + error);
    lib->library_path_ = so;
    KILN_LOG(cache) << "compiled " << stem << " in " << lib->seconds_ << " s";
  }
  std::lock_guard<std::mutex> lock(g_loaded_mu);
  g_loaded[key] = lib;
  return lib;
}

}  // namespace kiln::tile::cpu
