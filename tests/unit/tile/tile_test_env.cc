// The tile tests verify the program after every pass (tile/passes/passes.h), release builds
// included; outside tests that is on in debug builds or with KILN_TILE_VERIFY=1.
//
// The disk cache (runtime/cache.h) of the whole kiln_tests binary is a temporary folder of its
// own, made at start-up and removed at exit: tests never read or fill the user's ~/.cache/kiln,
// and each test process starts cold. A KILN_CACHE_DIR set by the caller is kept (child
// processes of the cache tests are given theirs).
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tile/passes/passes.h"

namespace {
[[maybe_unused]] const bool verify_tile_passes = (kiln::tile::set_verify_each(true), true);

struct TestCacheDir {
  std::string path;
  pid_t owner = getpid();
  TestCacheDir() {
    if (std::getenv("KILN_CACHE_DIR")) return;
    std::string tmpl = (std::filesystem::temp_directory_path() / "kiln-test-cache-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return;
    path = tmpl;
    setenv("KILN_CACHE_DIR", path.c_str(), 1);
  }
  ~TestCacheDir() {
    if (path.empty() || getpid() != owner) return;
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
} test_cache_dir;
}  // namespace
