// Compile mode "max-autotune" (docs/compiler.md, "Modes"): results within dtype tolerance of the
// default mode's and eager's (a corpus subset, a matmul graph, a softmax); the generated matmul
// against eager's on strided operands; a warm process times nothing, even with its compiled
// graphs gone (the tuned choices come from the disk cache); kernels of the same code are tuned
// once; a bad mode is a clear error.
#include <gtest/gtest.h>

#include <kiln/compile.h>
#include <kiln/kiln.h>
#include <kiln/log.h>

#include <filesystem>
#include <set>
#include <sstream>

#include "inductor/autotune.h"
#include "support/cache_child.h"
#include "support/compile_corpus.h"
#include "tile/cpu/kernel.h"
#include "support/test_util.h"

namespace kiln {
namespace {

CompileOptions mode(const std::string& m) {
  CompileOptions o;
  o.backend = "inductor";
  o.mode = m;
  return o;
}

// The same function compiled in both modes: each within dtype tolerance of eager, and of each other.
template <class F, class... A>
void expect_modes_agree(const std::string& what, F fn, const A&... args) {
  auto tuned = compile(fn, mode("max-autotune"));
  auto plain = compile(fn, mode("default"));
  const Tensor want = fn(args...), got = tuned(args...), base = plain(args...);
  corpus::expect_within_dtype(got, want, what + ": max-autotune against eager");
  corpus::expect_within_dtype(got, base, what + ": max-autotune against default");
}

TEST(InductorAutotune, SoftmaxAgreesWithDefault) {
  manual_seed(0);
  auto fn = [](const Tensor& x) { return softmax(x * 1.5, -1); };
  expect_modes_agree("softmax", fn, randn({64, 300}));  // a looped row
  expect_modes_agree("softmax", fn, randn({33, 128}));   // a persistent row
}

TEST(InductorAutotune, PointwiseAndColumnSumAgreeWithDefault) {
  manual_seed(1);
  expect_modes_agree("pointwise", [](const Tensor& x, const Tensor& y) { return (x * y + 1.0).tanh() - y.sigmoid(); },
                     randn({37, 64}), randn({64}));
  expect_modes_agree("column sum", [](const Tensor& x) { return (x * x).sum(0); }, randn({200, 48}));
}

TEST(InductorAutotune, MatmulGraphAgreesWithDefault) {
  manual_seed(2);
  // A transposed weight (a linear layer's), a bias and an activation after it.
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) { return (x.matmul(w.t()) + b).relu(); };
  expect_modes_agree("linear", fn, randn({48, 96}), randn({80, 96}), randn({80}));
  expect_modes_agree("matmul", [](const Tensor& a, const Tensor& b) { return a.matmul(b); }, randn({5, 7}), randn({7, 3}));
}

TEST(InductorAutotune, CorpusSubsetMatchesEager) {
  using corpus::Fixed;
  Fixed x({4, 8}), w1({8, 16}), b1({16}), w2({16, 3}), b2({3});
  auto mlp = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
    return (x.matmul(w1) + b1).relu().matmul(w2) + b2;
  };
  corpus::check_inductor("mlp", mlp, [&](int) { return std::tuple{x(), w1(), b1(), w2(), b2()}; }, 2, 1,
                         mode("max-autotune"));
  // (A GPT block, forward and backward, passes too but tunes ~25 kernels: minutes on a loaded machine.)
  manual_seed(3);
  nn::Sequential net(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 4));
  Fixed in({5, 8});
  auto seq = [](nn::Sequential& m, const Tensor& x) { return m->forward(x); };
  corpus::check_inductor("sequential", seq, [&](int) { return std::tuple<nn::Sequential&, Tensor>{net, in()}; }, 2, 1,
                         mode("max-autotune-no-cudagraphs"));
}

TEST(InductorAutotune, GeneratedMatmulMatchesEager) {
  manual_seed(4);
  for (auto [bm, bn, bk] : {std::array<int64_t, 3>{16, 64, 64}, {32, 32, 32}}) {
    const tile::cpu::Kernel k = tile::cpu::compile(inductor::tile_matmul("mm", bm, bn, bk));
    const int64_t M = 45, N = 70, K = 33;
    Tensor a = randn({M, K}), bt = randn({N, K}), out = zeros({M, N});
    const Tensor b = bt.t();  // strides (1, K)
    k.launch(tile::cpu::Grid(((M + bm - 1) / bm) * ((N + bn - 1) / bn)), {out, a, b, M, N, K, K, int64_t(1), int64_t(1), K});
    corpus::expect_within_dtype(out, a.matmul(b), "tile matmul " + std::to_string(bm) + "x" + std::to_string(bn));
  }
}

TEST(InductorAutotune, ABadModeIsAnError) {
  auto fn = [](const Tensor& x) { return x * 2.0; };
  try {
    compile(fn, mode("fastest"));
    FAIL() << "an unknown mode compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unrecognized mode 'fastest'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("max-autotune"), std::string::npos) << e.what();  // the hint lists them
  }
  CompileOptions eager = mode("max-autotune");
  eager.backend = "eager";
  try {
    compile(fn, eager);
    FAIL() << "mode max-autotune compiled with backend eager";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is an option of backend 'inductor', not of 'eager'"), std::string::npos) << e.what();
  }
  // reduce-overhead is the default mode on the CPU.
  Tensor x = randn({3});
  corpus::expect_bitwise(compile(fn, mode("reduce-overhead"))(x), x * 2.0, "reduce-overhead");
}

// The child: a softmax and a linear layer compiled with max-autotune, checked against eager.
TEST(InductorAutotuneCache, Child) {
  if (!std::getenv("KILN_TEST_AUTOTUNE_CHILD")) GTEST_SKIP() << "run as a child by InductorAutotuneCacheTest.*";
  set_logs("autotune,cache,perf");
  auto fn = [](const Tensor& x, const Tensor& w) { return softmax(x.matmul(w), -1); };
  auto f = compile(fn, mode("max-autotune"));
  manual_seed(0);
  Tensor x = randn({64, 96}), w = randn({96, 200});
  corpus::expect_within_dtype(f(x, w), fn(x, w), "child");
  std::printf("child ok\n");
}

class InductorAutotuneCacheTest : public test::CacheChildTest {
 protected:
  InductorAutotuneCacheTest() : CacheChildTest("KILN_TEST_AUTOTUNE_CHILD", "InductorAutotuneCache.Child") {}
};

TEST_F(InductorAutotuneCacheTest, AWarmProcessTunesNothing) {
  const std::string cold = run_child("cold.log");
  ASSERT_NE(cold.find("child ok"), std::string::npos) << cold;
  // Tuned: the softmax kernel's block sizes, and BLAS against the tile matmul (timings logged,
  // the progress bar's summary line on stderr).
  EXPECT_GE(test::count_occurrences(cold, "[kiln:autotune] inductor "), 2) << cold;
  EXPECT_NE(cold.find("(BLAS or tile matmul)"), std::string::npos) << cold;
  EXPECT_NE(cold.find(": median "), std::string::npos) << cold;
  EXPECT_NE(cold.find("kiln autotune inductor "), std::string::npos) << cold;  // the bar
  const std::string warm = run_child("warm.log");
  ASSERT_NE(warm.find("child ok"), std::string::npos) << warm;
  EXPECT_EQ(warm.find(": median "), std::string::npos) << warm;
  EXPECT_EQ(warm.find("kiln autotune "), std::string::npos) << warm;
  // With the compiled graphs gone the graph is compiled again, its choices from the disk cache.
  std::filesystem::remove_all(root_ + "/cache/inductor-plan");
  std::filesystem::remove_all(root_ + "/cache/inductor-graph");
  const std::string again = run_child("again.log");
  ASSERT_NE(again.find("child ok"), std::string::npos) << again;
  EXPECT_NE(again.find("lowered and scheduled"), std::string::npos) << again;
  EXPECT_EQ(again.find(": median "), std::string::npos) << again;
  EXPECT_EQ(again.find("kiln autotune "), std::string::npos) << again;
  EXPECT_GE(test::count_occurrences(again, "(from the disk cache)"), 2) << again;
}


// The child: two softmaxes of the same sizes on two inputs (two kernels of one code, named apart).
TEST(InductorAutotuneCache, SameCodeChild) {
  if (!std::getenv("KILN_TEST_AUTOTUNE_SAME_CHILD")) GTEST_SKIP() << "run as a child by InductorAutotuneSameCodeTest.*";
  set_logs("autotune");
  auto fn = [](const Tensor& x, const Tensor& y) { return std::vector<Tensor>{softmax(x * 1.5, -1), softmax(y * 1.5, -1)}; };
  auto f = compile(fn, mode("max-autotune"));
  manual_seed(0);
  Tensor x = randn({64, 300}), y = randn({64, 300});
  const std::vector<Tensor> got = f(x, y), want = fn(x, y);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) corpus::expect_within_dtype(got[i], want[i], "softmax " + std::to_string(i));
  std::printf("child ok\n");
}

class InductorAutotuneSameCodeTest : public test::CacheChildTest {
 protected:
  InductorAutotuneSameCodeTest() : CacheChildTest("KILN_TEST_AUTOTUNE_SAME_CHILD", "InductorAutotuneCache.SameCodeChild") {}
};

// The tuning key is the kernel's code and sizes, not its name: the first softmax kernel is timed,
// the second (another name, the same code) takes its choice from the disk cache.
TEST_F(InductorAutotuneSameCodeTest, KernelsOfOneCodeAreTunedOnce) {
  const std::string log = run_child("cold.log");
  ASSERT_NE(log.find("child ok"), std::string::npos) << log;
  std::set<std::string> timed, cached;  // the kernels (tune()'s labels) timed and taken from the cache
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find("[kiln:autotune] inductor k"), end = line.find(" [", at + 1);
    if (at == std::string::npos || end == std::string::npos) continue;
    const std::string label = line.substr(at + 16, end - at - 16);
    if (line.find(": median ") != std::string::npos) timed.insert(label);
    if (line.find("(from the disk cache)") != std::string::npos) cached.insert(label);
  }
  EXPECT_EQ(timed.size(), 1u) << log;
  EXPECT_EQ(cached.size(), 1u) << log;
  for (const std::string& k : cached) EXPECT_EQ(timed.count(k), 0u) << k << " was timed and taken from the cache\n" << log;
}

}  // namespace
}  // namespace kiln
