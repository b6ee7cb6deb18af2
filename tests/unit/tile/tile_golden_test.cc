// Golden files of the tile IR: tests/golden/tile/*.kir (print and pass pipelines) and the tile
// kernels of tests/golden/kernels/ (their generated C++, so a change in codegen shows as a
// diff). tile::run_pipeline runs them (kiln-opt's pipeline syntax); KILN_UPDATE_GOLDENS=1
// rewrites the expected sections.
#include <gtest/gtest.h>

#include "tile/passes/passes.h"
#include "support/golden.h"

namespace kiln::tile {
namespace {

TEST(TileGolden, PrintAndPasses) {
  const auto goldens = kiln::test::check_goldens("tile", run_pipeline);
  EXPECT_GE(goldens.size(), 5u);
  for (const kiln::test::Golden& g : goldens) {
    SCOPED_TRACE(g.path.filename().string());
    try {  // the expected text is a program that verifies and prints as itself
      Program p = parse(g.expected);
      verify(p);
      EXPECT_EQ(print(p), g.expected);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(TileGolden, GeneratedKernelSources) {
  int n = 0;
  for (const auto& path : kiln::test::golden_files("kernels")) {
    const kiln::test::Golden g = kiln::test::read_golden(path);
    if (g.pipeline.rfind("tile:", 0) != 0) continue;  // another IR's golden
    kiln::test::check_golden(g, run_pipeline);
    ++n;
  }
  EXPECT_GE(n, 3);
}

TEST(TileGolden, PipelineErrors) {
  const std::string k = "kernel k() meta() {\n}\n";
  EXPECT_THROW(run_pipeline("nonsense", k), Error);
  EXPECT_THROW(run_pipeline("c | dce", k), Error);
  EXPECT_EQ(run_pipeline("print", k), "kernel k() meta(num_warps=4, num_stages=3) {\n}\n");
}

}  // namespace
}  // namespace kiln::tile
