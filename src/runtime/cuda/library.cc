#include "runtime/cuda/library.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>

namespace kiln::runtime::cuda {

Library::Library(std::string what, const std::vector<std::string>& candidates) : what_(std::move(what)) {
  std::string tried;
  for (const std::string& c : candidates) {
    dlerror();
    if ((handle_ = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL))) {
      path_ = c;
      return;
    }
    const char* why = dlerror();
    tried += "\n  " + c + ": " + (why ? why : "not loadable");
  }
  error_ = what_ + " could not be loaded; tried:" + (tried.empty() ? std::string(" nothing") : tried);
}

Library::~Library() = default;

void* Library::symbol(const char* name) {
  if (!handle_) return nullptr;
  void* p = dlsym(handle_, name);
  if (!p) error_ += (error_.empty() ? what_ + " (" + path_ + ") lacks " : std::string(", ")) + name;
  return p;
}

std::vector<std::string> library_candidates(const char* env_var, const std::vector<std::string>& sonames) {
  std::vector<std::string> out;
  // CUDA_HOME and CUDA_PATH often name /usr/local/cuda too: each path is tried (and reported) once.
  auto add = [&out](std::string c) {
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
  };
  if (const char* p = std::getenv(env_var); p && *p) add(p);
  for (const std::string& s : sonames) add(s);
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* r = std::getenv(var); r && *r) roots.push_back(r);
  roots.push_back("/usr/local/cuda");
  for (const std::string& r : roots)
    for (const char* lib : {"/lib64/", "/lib/"})
      for (const std::string& s : sonames) add(r + lib + s);
  return out;
}

}  // namespace kiln::runtime::cuda
