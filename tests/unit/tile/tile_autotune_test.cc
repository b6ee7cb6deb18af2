// Autotuning (tile/autotune.h): the tuner picks the config whose runs are fastest, skips configs
// that fail, remembers its choice on disk (a second tuning of the same kernel and key runs
// nothing), logs timings under KILN_LOGS=autotune; Autotuner tunes a C++ kernel once per key and
// launches the chosen config's kernel.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <chrono>
#include <thread>

#include "tests/unit/tile/tile_kernels.h"
#include "tile/autotune.h"

namespace kiln::tile {
namespace {

std::vector<Config> blocks(std::initializer_list<int64_t> sizes) {
  std::vector<Config> cs;
  for (int64_t b : sizes) cs.push_back(Config({{"BLOCK", b}}));
  return cs;
}

// A unique kernel text per test, so disk cache entries of other tests (and runs) do not answer.
std::string unique(const std::string& what) {
  return what + " " + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

TEST(TileAutotune, PicksTheFastestAndRemembersItOnDisk) {
  const std::vector<Config> cs = blocks({64, 128, 256});
  const std::string kernel = unique("sleepy");
  std::vector<int> runs(3);
  // Config 1 is fast, the others sleep: the choice does not depend on the machine's load.
  auto run = [&](size_t i) {
    ++runs[i];
    if (i != 1) std::this_thread::sleep_for(std::chrono::milliseconds(15));
  };
  testing::internal::CaptureStderr();
  EXPECT_EQ(tune("sleepy", kernel, "n=10", cs, run, {.warmup = 1, .repeats = 3}), 1u);
  const std::string bar = testing::internal::GetCapturedStderr();
  EXPECT_EQ(runs, std::vector<int>({4, 4, 4}));  // warmup + repeats per config
  EXPECT_NE(bar.find("kiln autotune sleepy [n=10]: 3 configs in"), std::string::npos) << bar;
  EXPECT_NE(bar.find("best BLOCK=128, num_warps=4, num_stages=3"), std::string::npos) << bar;
  // Tuned again (a new process would do the same): the disk cache answers, nothing runs, even
  // though config 1 would now be the slowest.
  auto inverted = [&](size_t i) {
    ++runs[i];
    if (i == 1) std::this_thread::sleep_for(std::chrono::milliseconds(15));
  };
  const std::string saved = enabled_logs();
  set_logs("autotune");
  testing::internal::CaptureStderr();
  EXPECT_EQ(tune("sleepy", kernel, "n=10", cs, inverted, {.warmup = 1, .repeats = 3}), 1u);
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(runs, std::vector<int>({4, 4, 4}));
  EXPECT_NE(log.find("(from the disk cache)"), std::string::npos) << log;
  // Another key is tuned afresh, and the log has each config's timing.
  testing::internal::CaptureStderr();
  EXPECT_NE(tune("sleepy", kernel, "n=20", cs, inverted, {.warmup = 0, .repeats = 3}), 1u);  // 0 and 2 are fast
  const std::string timings = testing::internal::GetCapturedStderr();
  set_logs(saved);
  EXPECT_EQ(runs, std::vector<int>({7, 7, 7}));
  for (const char* c : {"BLOCK=64", "BLOCK=128", "BLOCK=256"})
    EXPECT_NE(timings.find(std::string("[kiln:autotune] sleepy [n=20] ") + c + ", num_warps=4, num_stages=3: median "),
              std::string::npos)
        << timings;
}

TEST(TileAutotune, AConfigThatFailsIsSkipped) {
  const std::vector<Config> cs = blocks({64, 128});
  auto fail_first = [&](size_t i) { KILN_CHECK(i != 0, "config 0 does not build"); };
  testing::internal::CaptureStderr();
  EXPECT_EQ(tune("flaky", unique("flaky"), "", cs, fail_first, {.warmup = 0, .repeats = 1}), 1u);
  testing::internal::GetCapturedStderr();
  auto fail_all = [&](size_t i) { KILN_CHECK(false, "config ", i, " does not build"); };
  testing::internal::CaptureStderr();
  try {
    tune("broken", unique("broken"), "", cs, fail_all, {.warmup = 0, .repeats = 1});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("config 0 does not build"), std::string::npos) << e.what();
  }
  testing::internal::GetCapturedStderr();
  EXPECT_THROW(tune("none", "k", "", {}, fail_all), Error);
}

TEST(TileAutotune, AnAutotunerTunesAKernelOncePerKey) {
  int built = 0;
  auto make = [&](const Config& c) {
    ++built;
    return test::vector_add(c.constexprs.at(0).second.to_int());
  };
  Autotuner add("vector_add", blocks({128, 512}), make, {"n"}, {.warmup = 1, .repeats = 2});
  auto grid = [](int64_t n) {
    return [n](const Meta& m) { return cpu::Grid(cdiv(n, m.find("BLOCK")->to_int())); };
  };
  for (int64_t n : {1000, 3000}) {
    Tensor x = randn({n}), y = randn({n}), out = zeros({n});
    testing::internal::CaptureStderr();
    add.launch(grid(n), {x, y, out, n});
    const std::string bar = testing::internal::GetCapturedStderr();
    EXPECT_TRUE(out.eq(x + y).all().item<bool>()) << n;
    EXPECT_NE(bar.find("kiln autotune vector_add [x:f32, y:f32, out:f32, n=" + std::to_string(n) + "]: 2 configs"),
              std::string::npos) << bar;
    // The same key again: no tuning, the chosen kernel runs.
    out.zero_();
    testing::internal::CaptureStderr();
    add.launch(grid(n), {x, y, out, n});
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
    EXPECT_TRUE(out.eq(x + y).all().item<bool>()) << n;
    const Config& best = add.best(grid(n), std::vector<cpu::Arg>{x, y, out, n});
    EXPECT_TRUE(&best == &add.configs()[0] || &best == &add.configs()[1]);
  }
  EXPECT_EQ(built, 3);  // the key check's program, then each config's once
  EXPECT_THROW(Autotuner("vector_add", blocks({128}), make, {"m"}), Error);
}

}  // namespace
}  // namespace kiln::tile
