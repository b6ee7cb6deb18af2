// Inductor's kernels, plans and whole compiled graphs and the disk cache: a second process runs
// no compiler and loads the compiled graphs (no AOT pass, lowering, fusion or emission);
// processes compiling the same graph at once all get correct kernels and leave valid entries; a
// corrupt group, plan or graph entry is rebuilt. The processes are this test binary run again (InductorDiskCache.Child does the work when
// KILN_TEST_INDUCTOR_CACHE_CHILD is set), with KILN_CXX a script that counts the compiles.
#include <gtest/gtest.h>
#include <unistd.h>

#include <kiln/compile.h>
#include <kiln/kiln.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "runtime/cache.h"
#include "support/cache_child.h"
#include "support/test_util.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using test::lines;
using test::slurp;

bool near(const Tensor& a, const Tensor& b) { return ((a - b).abs() <= b.abs() * 1e-5 + 1e-5).all().item<bool>(); }

// The child: a forward and backward graph through inductor, checked against eager. Eight blocks of
// reductions: kernels enough for groups the disk cache keeps (kernel.cc: kPartIrBytes).
TEST(InductorDiskCache, Child) {
  if (!std::getenv("KILN_TEST_INDUCTOR_CACHE_CHILD")) GTEST_SKIP() << "run as a child by InductorDiskCacheTest.*";
  auto fn = [](const Tensor& x0, const Tensor& w) {
    Tensor x = x0;
    for (int i = 0; i < 8; ++i) x = softmax(x * w + double(i), -1).tanh() * x0 + x.sigmoid();
    return x.sum();
  };
  CompileOptions o;
  o.backend = "inductor";
  auto f = compile(fn, o);
  manual_seed(0);
  Tensor x = randn({16, 32}), w = randn({16, 32}).requires_grad_();
  Tensor got = f(x, w);
  got.backward();
  Tensor w2 = w.detach().requires_grad_();
  Tensor want = fn(x, w2);
  want.backward();
  ASSERT_TRUE(near(got.detach(), want.detach())) << got << want;
  ASSERT_TRUE(near(w.grad(), w2.grad())) << w.grad() << w2.grad();
  std::printf("child ok\n");
}

class InductorDiskCacheTest : public test::CacheChildTest {
 protected:
  InductorDiskCacheTest() : CacheChildTest("KILN_TEST_INDUCTOR_CACHE_CHILD", "InductorDiskCache.Child") {}
  std::string child(const std::string& log) {
    const std::string out = run_child(log);
    EXPECT_NE(out.find("child ok"), std::string::npos) << out;
    return out;
  }
  std::vector<fs::path> entries(const std::string& ns) {
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root_ + "/cache/" + ns, ec))
      if (e.path().filename().string()[0] != '.') out.push_back(e.path());
    return out;
  }
};

TEST_F(InductorDiskCacheTest, AWarmProcessCompilesNothing) {
  const std::string cold_log = child("cold.log");
  const int cold = lines(root_ + "/compiles");
  EXPECT_GE(cold, 2) << "a forward and a backward graph";
  EXPECT_GE(entries("tile-group").size(), 2u);
  EXPECT_EQ(entries("inductor-plan").size(), 2u) << cold_log;
  EXPECT_EQ(entries("inductor-graph").size(), 1u) << cold_log;
  EXPECT_EQ(test::count_occurrences(cold_log, "[kiln:perf] aot: decomposed and functionalized"), 1) << cold_log;
  EXPECT_EQ(test::count_occurrences(cold_log, "[kiln:perf] inductor: lowered and scheduled"), 2) << cold_log;
  const std::string warm = child("warm.log");
  // The graph and both its plans loaded: nothing of AOT, no lowering, fusion, tile passes or
  // emission, and no compiler.
  EXPECT_EQ(test::count_occurrences(warm, "[kiln:perf] aot: compiled graphs loaded from the cache"), 1) << warm;
  EXPECT_EQ(warm.find("decomposed and functionalized"), std::string::npos) << warm;
  EXPECT_EQ(test::count_occurrences(warm, "[kiln:cache] hit " + root_ + "/cache/inductor-plan/"), 2) << warm;
  EXPECT_EQ(test::count_occurrences(warm, "[kiln:perf] inductor: plan loaded from the cache"), 2) << warm;
  EXPECT_EQ(warm.find("lowered and scheduled"), std::string::npos) << warm;
  EXPECT_EQ(warm.find("kernel(s) emitted"), std::string::npos) << warm;
  EXPECT_EQ(warm.find("[kiln:cache] compiled"), std::string::npos) << warm;
  EXPECT_EQ(lines(root_ + "/compiles"), cold) << "the warm process ran the compiler";
}

TEST_F(InductorDiskCacheTest, ACorruptPlanEntryIsRebuilt) {
  child("cold.log");
  const int cold = lines(root_ + "/compiles");
  std::vector<fs::path> plans = entries("inductor-plan");
  ASSERT_EQ(plans.size(), 2u);
  fs::resize_file(plans[0], fs::file_size(plans[0]) - 40);  // the trailer and the plan's end
  const std::string again = child("again.log");
  EXPECT_NE(again.find("[kiln:cache] corrupt entry " + plans[0].string()), std::string::npos) << again;
  EXPECT_EQ(test::count_occurrences(again, "[kiln:perf] inductor: lowered and scheduled"), 1) << again;
  EXPECT_NE(again.find("[kiln:cache] wrote " + plans[0].string()), std::string::npos) << again;
  EXPECT_EQ(lines(root_ + "/compiles"), cold) << again;
}

TEST_F(InductorDiskCacheTest, ACorruptGraphEntryIsRebuiltFromThePlans) {
  child("cold.log");
  std::vector<fs::path> graphs = entries("inductor-graph");
  ASSERT_EQ(graphs.size(), 1u);
  fs::resize_file(graphs[0], fs::file_size(graphs[0]) - 1);
  const std::string again = child("again.log");
  EXPECT_NE(again.find("[kiln:cache] corrupt entry " + graphs[0].string()), std::string::npos) << again;
  EXPECT_EQ(test::count_occurrences(again, "[kiln:perf] aot: decomposed and functionalized"), 1) << again;
  EXPECT_EQ(test::count_occurrences(again, "[kiln:perf] inductor: plan loaded from the cache"), 2) << again;
  EXPECT_EQ(again.find("lowered and scheduled"), std::string::npos) << again;
  EXPECT_NE(again.find("[kiln:cache] wrote " + graphs[0].string()), std::string::npos) << again;
}

TEST_F(InductorDiskCacheTest, APlanEntryThatChecksOutButDoesNotParseIsRebuilt) {
  child("cold.log");
  std::vector<fs::path> plans = entries("inductor-plan");
  ASSERT_EQ(plans.size(), 2u);
  // A valid entry (trailer and checksum right) whose payload is not a plan of this format.
  setenv("KILN_CACHE_DIR", (root_ + "/cache").c_str(), 1);
  ASSERT_TRUE(runtime::cache::put("inductor-plan", plans[1].filename().string(), "kiln-inductor-plan 1\n7 garbage"));
  unsetenv("KILN_CACHE_DIR");
  const std::string again = child("again.log");
  EXPECT_NE(again.find("[kiln:cache] the cached plan " + plans[1].filename().string() + " does not parse"), std::string::npos)
      << again;
  EXPECT_EQ(test::count_occurrences(again, "[kiln:perf] inductor: lowered and scheduled"), 1) << again;
}

TEST_F(InductorDiskCacheTest, ProcessesCompilingTheSameGraphAtOnceLeaveValidEntries) {
  std::string all;
  for (int i = 0; i < 4; ++i) all += "(" + command("p" + std::to_string(i) + ".log") + ") & ";
  all += "wait";
  ASSERT_EQ(std::system(all.c_str()), 0);
  for (int i = 0; i < 4; ++i) {
    const std::string out = slurp(root_ + "/p" + std::to_string(i) + ".log");
    EXPECT_NE(out.find("child ok"), std::string::npos) << out;
  }
  // Every entry checks out (trailer, length, checksum), and a fifth process compiles nothing.
  setenv("KILN_CACHE_DIR", (root_ + "/cache").c_str(), 1);
  for (const char* ns : {"tile-group", "tile-cpu", "inductor-plan", "inductor-graph"})
    for (const fs::path& p : entries(ns)) EXPECT_TRUE(runtime::cache::get(ns, p.filename().string())) << p;
  unsetenv("KILN_CACHE_DIR");
  const int before = lines(root_ + "/compiles");
  const std::string warm = child("warm.log");
  EXPECT_EQ(lines(root_ + "/compiles"), before) << warm;
}

TEST_F(InductorDiskCacheTest, ACorruptGroupEntryIsRebuilt) {
  child("cold.log");
  const int cold = lines(root_ + "/compiles");
  std::vector<fs::path> groups = entries("tile-group");
  ASSERT_FALSE(groups.empty());
  fs::resize_file(groups[0], fs::file_size(groups[0]) / 2);
  for (const fs::path& p : entries("inductor-plan")) fs::remove(p);  // (else the plans skip the groups)
  const std::string again = child("again.log");
  EXPECT_NE(again.find("[kiln:cache] corrupt entry " + groups[0].string()), std::string::npos) << again;
  // Rebuilt from the programs: the same translation units, whose objects the cache still has.
  EXPECT_EQ(lines(root_ + "/compiles"), cold) << again;
  EXPECT_NE(again.find("[kiln:cache] wrote " + groups[0].string()), std::string::npos) << again;
}

}  // namespace
}  // namespace kiln
