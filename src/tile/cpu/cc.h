// Compiling generated C++ with the system compiler into a shared object, loaded with dlopen.
// Objects are kept in the disk cache (runtime/cache.h, namespace "tile-cpu") under cache_key():
// a process that finds its kernels there loads them and runs no compiler. Sources go to a
// per-process temporary folder.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::tile::cpu {

struct Compiler {
  std::string command;             // $KILN_CXX, else "c++"
  std::string identity;            // the executable's resolved path, size and time (no process run)
  std::vector<std::string> flags;  // -O3 -march=native -fopenmp -shared -fPIC ...
  std::string arch;                // what -march=native targets: the CPU's model and feature flags
};
const Compiler& compiler();
// How many compilers the process runs at once: $KILN_COMPILE_JOBS, else the number of cores.
// compile_source calls beyond it (from other threads) wait for a slot.
int compile_jobs();

// The key the disk cache files the compiled object under: a hash of the source, the compiler,
// its flags, the target CPU and kiln's version.
std::string cache_key(const std::string& source);

// A loaded shared object. Unloaded when the last kernel using it goes.
class Library {
 public:
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  void* symbol(const std::string& name) const;  // throws kiln::Error if missing
  const std::string& source_path() const { return source_path_; }
  const std::string& library_path() const { return library_path_; }
  const std::string& key() const { return key_; }
  double compile_seconds() const { return seconds_; }  // 0 when loaded from the disk cache
  bool from_cache() const { return from_cache_; }

 private:
  friend std::shared_ptr<Library> compile_source(const std::string& source, const std::string& stem);
  Library() = default;
  void* handle_ = nullptr;
  std::string source_path_, library_path_, key_;
  std::string suffix_;  // appended to every symbol() name (a prebuilt object's, below)
  double seconds_ = 0;
  bool from_cache_ = false;
};

// Thread-safe (a group's translation units compile on threads of their own, kernel.h). Writes `source` to <temp dir>/<stem>-<key>.cc and loads the disk cache's object for it, or
// compiles it (and stores the object there). A compiler error throws kiln::Error with the
// source file's path and the compiler's message (the file is kept).
std::shared_ptr<Library> compile_source(const std::string& source, const std::string& stem);
// The process's folder for generated sources and objects (emptied and removed at exit, but for
// sources that failed to compile; KILN_TILE_KEEP=1 keeps everything).
const std::string& work_dir();

// A compile running on a thread of its own (load_group's): held for the thread's whole run. At
// exit the process waits for every one before its static objects are destroyed (a group still
// compiling at exit, as one a cache holds but nobody awaited, otherwise used the work folder and
// the compiler's settings after they were freed).
class CompileInFlight {
 public:
  CompileInFlight();
  ~CompileInFlight();
  CompileInFlight(const CompileInFlight&) = delete;
  CompileInFlight& operator=(const CompileInFlight&) = delete;
};

// A hook for a caller that compiles many sources in one compiler call (the graph fuzzer batches
// many graphs' kernels into one object: tests/fuzz/batch.h). While one is set, compile_source
// asks it before the disk cache and the compiler: the path of a shared object that defines the
// source's symbols, each named with `suffix` appended, or nullopt to compile as usual. Such an
// object is not stored in the disk cache. Thread-safe; an empty function removes the hook.
struct Prebuilt {
  std::string path, suffix;
};
using PrebuiltHook = std::function<std::optional<Prebuilt>(const std::string& source)>;
void set_prebuilt_hook(PrebuiltHook hook);

}  // namespace kiln::tile::cpu
