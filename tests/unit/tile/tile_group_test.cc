// compile_group splits a big group into translation units of about equal size (at most
// compile_jobs()), compiled in parallel; every kernel resolves to its own unit's entry point.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include "tile/builder.h"
#include "tile/cpu/kernel.h"

namespace kiln {
namespace {

// A kernel that adds `k` to each element: programs of distinct names, and of some size (doubling
// and halving are exact, and no pass folds them away).
tile::Program add_k(int k) {
  tile::Builder b("add_" + std::to_string(k));
  auto x = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", kFloat32);
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

}  // namespace
}  // namespace kiln
