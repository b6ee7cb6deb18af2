// Loading NVIDIA's libraries at run time (dlopen), so one kiln build runs with or without them:
// nothing in kiln links against libcuda or libnvrtc, and no CUDA header is needed to build it.
// The NVRTC wrapper (nvrtc.h) and the driver API (driver.h) each fill a table of function
// pointers through one Library.
#pragma once
#include <string>
#include <vector>

namespace kiln::runtime::cuda {

class Library {
 public:
  // Opens the first of `candidates` (sonames or paths) that dlopen accepts. `what` names the
  // library in messages ("NVRTC"). When none loads, ok() is false and error() says what was tried
  // and why each one failed.
  Library(std::string what, const std::vector<std::string>& candidates);
  ~Library();  // never dlcloses: the tables may be used until the process exits
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  bool ok() const { return handle_ != nullptr; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }  // the candidate that loaded

  // The address of a symbol, or null (and the name added to error()) when the library lacks it.
  void* symbol(const char* name);
  // Fills a function pointer of any type; false when the symbol is missing.
  template <class F>
  bool get(F& fn, const char* name) {
    fn = reinterpret_cast<F>(symbol(name));
    return fn != nullptr;
  }

 private:
  std::string what_, error_, path_;
  void* handle_ = nullptr;
};

// The candidates for a library: $<env_var> first when set (a path), then each soname as the
// loader finds it, then in the CUDA toolkit's lib folders ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda).
std::vector<std::string> library_candidates(const char* env_var, const std::vector<std::string>& sonames);

}  // namespace kiln::runtime::cuda
