// compile_group splits a big group into translation units of about equal size (at most
// compile_jobs()), compiled in parallel; every kernel resolves to its own unit's entry point.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include "runtime/cache.h"
#include "tile/builder.h"
#include "tile/cpu/kernel.h"

namespace kiln {
namespace {

// A kernel that adds `k` to each element: programs of distinct names, and of some size (doubling
// and halving are exact, and no pass folds them away).
tile::Program add_k(int k, const std::string& name = "", const std::string& in = "x") {
  tile::Builder b(name.empty() ? "add_" + std::to_string(k) : name);
  auto x = b.arg_ptr(in, kFloat32), out = b.arg_ptr("out", kFloat32);
  auto n = b.arg_int("n");
  auto offs = b.program_id(0) * 64 + b.arange(0, 64);
  auto m = offs < n;
  auto v = b.load(x + offs, m);
  for (int i = 0; i < 8; ++i) v = (v + v) * 0.5;
  b.store(out + offs, v + double(k), m);
  return b.finish();
}

TEST(TileCompileGroup, ABigGroupIsSplitAndEveryKernelRuns) {
  std::vector<tile::Program> programs;
  for (int k = 0; k < 60; ++k) programs.push_back(add_k(k));
  tile::cpu::PendingGroup g = tile::cpu::compile_group_async(std::move(programs));
  const size_t parts = g.sources().size();
  if (tile::cpu::compile_jobs() > 1) {
    EXPECT_GT(parts, 1u) << "60 kernels in one translation unit";
  }
  EXPECT_LE(parts, size_t(tile::cpu::compile_jobs()));
  const std::vector<tile::cpu::Kernel>& ks = g.kernels();
  ASSERT_EQ(ks.size(), 60u);
  Tensor x = randn({100});
  for (int k = 0; k < 60; ++k) {
    EXPECT_EQ(ks[size_t(k)].name(), "add_" + std::to_string(k));
    Tensor out = zeros({100});
    ks[size_t(k)](tile::cpu::Grid(2), x, out, 100);
    EXPECT_TRUE(out.eq(x + double(k)).all().item<bool>()) << "kernel " << k;
  }
  // Each kernel's source is its translation unit, and that unit defines it.
  for (const tile::cpu::Kernel& k : ks) EXPECT_NE(k.source().find("kiln_tile_" + k.name() + "("), std::string::npos);
}

// Kernels that differ only in their names (the kernel's, its parameters') compile once: the group
// emits one of them, and the others launch its entry (a model's layers, an optimizer's updates).
TEST(TileCompileGroup, KernelsOfTheSameCodeShareOneEntry) {
  std::vector<tile::Program> programs;
  programs.push_back(add_k(3, "layer0_add"));
  programs.push_back(add_k(5, "other"));
  programs.push_back(add_k(3, "layer1_add", "y"));  // the same code as layer0_add
  programs.push_back(add_k(3, "layer2_add"));
  tile::cpu::PendingGroup g = tile::cpu::compile_group_async(std::move(programs));
  std::string all;
  for (const std::string& tu : g.sources()) all += tu;
  EXPECT_NE(all.find("kiln_tile_layer0_add("), std::string::npos);
  EXPECT_NE(all.find("kiln_tile_other("), std::string::npos);
  EXPECT_EQ(all.find("kiln_tile_layer1_add("), std::string::npos) << "a copy of layer0_add's code was emitted";
  EXPECT_EQ(all.find("kiln_tile_layer2_add("), std::string::npos) << "a copy of layer0_add's code was emitted";
  EXPECT_NE(all.find("// layer1_add runs the code of layer0_add"), std::string::npos);
  const std::vector<tile::cpu::GroupImage::Entry>& entries = g.image().kernels;
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[2].symbol, "kiln_tile_layer0_add");
  EXPECT_EQ(entries[3].symbol, "kiln_tile_layer0_add");
  EXPECT_EQ(entries[1].symbol, "kiln_tile_other");
  EXPECT_EQ(entries[2].params[0].name, "y") << "a kernel keeps its own signature";
  const std::vector<tile::cpu::Kernel>& ks = g.kernels();
  ASSERT_EQ(ks.size(), 4u);
  Tensor x = randn({100});
  const double added[] = {3, 5, 3, 3};
  for (size_t k = 0; k < 4; ++k) {
    Tensor out = zeros({100});
    ks[k](tile::cpu::Grid(2), x, out, 100);
    EXPECT_TRUE(out.eq(x + added[k]).all().item<bool>()) << ks[k].name();
  }
  EXPECT_EQ(ks[2].name(), "layer1_add");
}

// A group big enough for the disk cache's entry keeps which kernel runs which code: compiled a
// second time (the entry read back), the copies still launch the first one's entry.
TEST(TileCompileGroup, SharedCodeSurvivesTheGroupsCacheEntry) {
  auto programs = [] {
    std::vector<tile::Program> p;
    for (int k = 0; k < 60; ++k) p.push_back(add_k(k));
    p.push_back(add_k(7, "copy_of_add_7"));
    return p;
  };
  const auto hits = runtime::cache::stats().hits;
  tile::cpu::PendingGroup first = tile::cpu::compile_group_async(programs());
  tile::cpu::PendingGroup again = tile::cpu::compile_group_async(programs());
  if (runtime::cache::enabled()) {
    EXPECT_GT(runtime::cache::stats().hits, hits) << "the second compile read no entry";
  }
  for (const tile::cpu::PendingGroup* g : {&first, &again}) {
    ASSERT_EQ(g->image().kernels.size(), 61u);
    EXPECT_EQ(g->image().kernels[60].symbol, "kiln_tile_add_7");
    EXPECT_EQ(g->image().kernels[60].part, g->image().kernels[7].part);
    Tensor x = randn({100}), out = zeros({100});
    g->kernels()[60](tile::cpu::Grid(2), x, out, 100);
    EXPECT_TRUE(out.eq(x + 7.0).all().item<bool>());
  }
}

}  // namespace
}  // namespace kiln
