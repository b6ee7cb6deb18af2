// Compiling generated C++ with the system compiler into a shared object, loaded with dlopen.
// For now each process compiles into its own temporary folder; the disk cache comes next, keyed
// by cache_key() (a content hash of the source, the compiler and its flags).
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace kiln::tile::cpu {

struct Compiler {
  std::string command;             // $KILN_CXX, else "c++"
  std::string version;             // the first line of `<command> --version`
  std::vector<std::string> flags;  // -O3 -march=native -fopenmp -shared -fPIC ...
};
const Compiler& compiler();

// The key a disk cache will file the compiled object under: a hash of source, compiler, flags.
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
  double compile_seconds() const { return seconds_; }

 private:
  friend std::shared_ptr<Library> compile_source(const std::string& source, const std::string& stem);
  Library() = default;
  void* handle_ = nullptr;
  std::string source_path_, library_path_, key_;
  double seconds_ = 0;
};

// Writes `source` to <temp dir>/<stem>-<key>.cc, compiles and loads it. A compiler error throws
// kiln::Error with the source file's path and the compiler's message (the file is kept).
std::shared_ptr<Library> compile_source(const std::string& source, const std::string& stem);
// The process's folder for generated sources and objects (emptied and removed at exit, but for
// sources that failed to compile; KILN_TILE_KEEP=1 keeps everything).
const std::string& work_dir();

}  // namespace kiln::tile::cpu
