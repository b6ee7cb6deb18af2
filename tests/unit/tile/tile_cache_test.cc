// The tile CPU backend and the disk cache: a second process finds the compiled object and runs
// no compiler; a corrupt object is rebuilt. The processes are this test binary run again (one
// test, TileDiskCache.Child, does the work when KILN_TEST_TILE_CACHE_CHILD is set), with
// KILN_CXX a script that counts the compiles it is asked for and hands them to c++.
#include <gtest/gtest.h>
#include <unistd.h>

#include <kiln/kiln.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/cache.h"
#include "tile/cpu/kernel.h"
#include "support/cache_child.h"
#include "tests/unit/tile/tile_kernels.h"

namespace kiln::tile {
namespace {

namespace fs = std::filesystem;

using ::kiln::test::lines;
using ::kiln::test::slurp;

// The child: compiles vector_add, checks it against eager, says whether the object came from
// the cache.
TEST(TileDiskCache, Child) {
  if (!std::getenv("KILN_TEST_TILE_CACHE_CHILD")) GTEST_SKIP() << "run as a child by TileDiskCache.*";
  cpu::Kernel k = cpu::compile(test::vector_add(256));
  Tensor x = randn({1000}), y = randn({1000}), out = zeros({1000});
  k(cpu::Grid(4), x, y, out, 1000);
  ASSERT_TRUE(out.eq(x + y).all().item<bool>());
  std::printf("from_cache=%d library=%s\n", int(k.library().from_cache()), k.library().library_path().c_str());
}

// A child that starts compiling a group and exits without waiting for it, the group held by a
// static made before the compile started (as inductor's in-process group cache holds one): the
// exit must wait for the compile thread before the work folder and the compiler's settings are
// destroyed (under ASan the thread used them after they were freed).
TEST(TileDiskCache, ExitChild) {
  if (!std::getenv("KILN_TEST_TILE_EXIT_CHILD")) GTEST_SKIP() << "run as a child by TileDiskCacheTest.AnExitWaitsForACompileInFlight";
  static cpu::PendingGroup held;
  std::vector<Program> programs;
  programs.push_back(test::vector_add(128));
  held = cpu::compile_group_async(std::move(programs));
  std::printf("started\n");
}

class TileDiskCacheTest : public ::kiln::test::CacheChildTest {
 protected:
  TileDiskCacheTest() : CacheChildTest("KILN_TEST_TILE_CACHE_CHILD", "TileDiskCache.Child") {}
  std::string child(const std::string& log) { return run_child(log); }
};

TEST_F(TileDiskCacheTest, AWarmProcessCompilesNothing) {
  const std::string cold = child("cold.log");
  EXPECT_NE(cold.find("from_cache=0"), std::string::npos) << cold;
  EXPECT_NE(cold.find("[kiln:cache] wrote " + root_ + "/cache/tile-cpu/vector_add-"), std::string::npos) << cold;
  EXPECT_EQ(lines(root_ + "/compiles"), 1);
  const std::string warm = child("warm.log");
  EXPECT_NE(warm.find("from_cache=1 library=" + root_ + "/cache/tile-cpu/vector_add-"), std::string::npos) << warm;
  EXPECT_NE(warm.find("[kiln:cache] hit "), std::string::npos) << warm;
  EXPECT_EQ(lines(root_ + "/compiles"), 1) << "the warm process ran the compiler";
}

TEST_F(TileDiskCacheTest, AnExitWaitsForACompileInFlight) {
  // A compiler that takes a second, so the child exits while it runs.
  std::ofstream(root_ + "/cxx") << "#!/bin/sh\nsleep 1\ncase \" $* \" in *\" -o \"*) echo compile >> '" << root_
                                << "/compiles' ;; esac\nexec c++ \"$@\"\n";
  const std::string cmd = "KILN_TEST_TILE_EXIT_CHILD=1 KILN_LOGS=cache KILN_CACHE_DIR='" + root_ + "/cache' KILN_CXX='" + root_ +
                          "/cxx' '" + fs::read_symlink("/proc/self/exe").string() +
                          "' --gtest_filter=TileDiskCache.ExitChild > '" + root_ + "/exit.log' 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(root_ + "/exit.log");
  const std::string log = slurp(root_ + "/exit.log");
  EXPECT_NE(log.find("started"), std::string::npos) << log;
  EXPECT_EQ(lines(root_ + "/compiles"), 1) << log;
  // The compile finished before the process ended: its object is in the cache.
  EXPECT_NE(log.find("[kiln:cache] wrote " + root_ + "/cache/tile-cpu/vector_add-"), std::string::npos) << log;
}

TEST_F(TileDiskCacheTest, ACorruptObjectIsRebuilt) {
  child("cold.log");
  ASSERT_EQ(lines(root_ + "/compiles"), 1);
  std::vector<fs::path> objects;
  for (const auto& e : fs::directory_iterator(root_ + "/cache/tile-cpu")) objects.push_back(e.path());
  ASSERT_EQ(objects.size(), 1u);
  fs::resize_file(objects[0], fs::file_size(objects[0]) / 2);  // a crash mid-copy, a full disk
  const std::string again = child("again.log");
  EXPECT_NE(again.find("[kiln:cache] corrupt entry " + objects[0].string()), std::string::npos) << again;
  EXPECT_NE(again.find("from_cache=0"), std::string::npos) << again;
  EXPECT_EQ(lines(root_ + "/compiles"), 2);
  const std::string warm = child("warm.log");  // and the rebuilt one is found
  EXPECT_NE(warm.find("from_cache=1"), std::string::npos) << warm;
  EXPECT_EQ(lines(root_ + "/compiles"), 2);
}

TEST_F(TileDiskCacheTest, AnObjectThatDoesNotLoadIsRebuilt) {
  child("cold.log");
  std::vector<fs::path> objects;
  for (const auto& e : fs::directory_iterator(root_ + "/cache/tile-cpu")) objects.push_back(e.path());
  ASSERT_EQ(objects.size(), 1u);
  // A well-formed entry (valid trailer and checksum) whose payload is no shared object.
  const std::string stem = objects[0].filename().string();
  fs::remove(objects[0]);
  const char* saved = std::getenv("KILN_CACHE_DIR");
  const std::string restore = saved ? saved : "";
  setenv("KILN_CACHE_DIR", (root_ + "/cache").c_str(), 1);
  const bool stored = bool(runtime::cache::put("tile-cpu", stem, "not a shared object"));
  if (saved) setenv("KILN_CACHE_DIR", restore.c_str(), 1);
  else unsetenv("KILN_CACHE_DIR");
  ASSERT_TRUE(stored);
  const std::string again = child("again.log");
  EXPECT_NE(again.find("does not load"), std::string::npos) << again;
  EXPECT_NE(again.find("from_cache=0"), std::string::npos) << again;
  EXPECT_EQ(lines(root_ + "/compiles"), 2);
}

}  // namespace
}  // namespace kiln::tile
