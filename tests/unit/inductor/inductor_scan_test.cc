// Scans (cumsum, cumprod, cummax, cummin) and argmax / argmin lowered into the loop IR and generated as kernels
// (lower/scan.cc, lower/arg_reduction.cc, emit_tile.cc): no extern runs them, and the compiled
// results equal eager's bitwise, on values chosen to catch the corner cases (ties, NaNs, -inf,
// integer wrapping, 16-bit floats, a dynamic size, sizes that are not a multiple of a block).
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "graph/graph.h"
#include "inductor/inductor.h"
#include "support/compile_corpus.h"

namespace kiln::inductor {
namespace {

// Compiles the graph, checks it has no extern, and compares it with eager on `inputs`.
void expect_like_eager(const std::string& text, const std::vector<Tensor>& inputs) {
  auto g = std::make_shared<const graph::Graph>(graph::parse(text));
  const std::string ir = print(lower_and_schedule(g));
  EXPECT_EQ(ir.find("extern"), std::string::npos) << ir;
  Compiled c = compile_graph_verbose(g);
  const std::vector<Tensor> got = c.run(inputs), want = graph::interpret(*g, inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) corpus::expect_bitwise(got[i], want[i], "output " + std::to_string(i) + " of\n" + ir);
}

const float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();

TEST(InductorScan, CumsumAndCumprodAlongEachDim) {
  const std::string g =
      "graph(%x: f32[3, 70], %y: i32[5, 3, 2]):\n"
      "  %0: f32[3, 70] = abs(%x)\n"  // (not exp: compiled float exp is within ulps of eager's, this compares bits)
      "  %1: f32[3, 70] = cumsum(%0, 1)\n"
      "  %2: f32[3, 70] = cumprod(%x, -1)\n"
      "  %3: f32[3, 70] = cumsum(%x, 0)\n"
      "  %4: i64[5, 3, 2] = cumprod(%y, 0)\n"
      "  %5: i64[5, 3, 2] = cumsum(%y, 1)\n"
      "  return (%1, %2, %3, %4, %5)\n";
  manual_seed(3);
  // Large integers: the products wrap around in i64, as eager's.
  expect_like_eager(g, {randn({3, 70}) * 0.5, randint(-100000, 100000, {5, 3, 2}, kInt32)});
}

TEST(InductorScan, NaNsInfinitiesAndHalfPrecision) {
  const std::string g =
      "graph(%x: f32[2, 4], %h: f16[2, 300]):\n"
      "  %0: f32[2, 4] = cumsum(%x, 1)\n"
      "  %1: f16[2, 300] = cumsum(%h, 1)\n"
      "  %2: f16[2, 300] = cumprod(%h, 0)\n"
      "  return (%0, %1, %2)\n";
  manual_seed(4);
  expect_like_eager(g, {tensor<float>({1, kNaN, 2, 3, kInf, -kInf, 1, 2}, {2, 4}), randn({2, 300}).to(kFloat16)});
}

TEST(InductorScan, ADynamicScannedDim) {
  const std::string g =
      "graph(%x: f32[s0, 5]):\n"
      "  %0: f32[s0, 5] = cumsum(%x, 0)\n"
      "  %1: f32[s0, 5] = cumsum(%x, 1)\n"
      "  return (%0, %1)\n";
  auto graph = std::make_shared<const graph::Graph>(graph::parse(g));
  Compiled c = compile_graph_verbose(graph);
  for (int64_t n : {1, 7, 130}) {
    const Tensor x = randn({n, 5});
    const std::vector<Tensor> got = c.run({x}), want = graph::interpret(*graph, {x});
    for (size_t i = 0; i < got.size(); ++i) corpus::expect_bitwise(got[i], want[i], "s0=" + std::to_string(n));
  }
}

TEST(InductorScan, CummaxAndCumminTiesAndNaNs) {
  const std::string g =
      "graph(%x: f32[3, 6], %i: i64[40, 3], %h: bf16[2, 5]):\n"
      "  %0: f32[3, 6], %1: i64[3, 6] = cummax(%x, 1)\n"
      "  %2: f32[3, 6], %3: i64[3, 6] = cummin(%x, -1)\n"
      "  %4: i64[40, 3], %5: i64[40, 3] = cummax(%i, 0)\n"
      "  %6: bf16[2, 5], %7: i64[2, 5] = cummin(%h, 1)\n"
      "  %8: f32[3, 6] = neg(%x)\n"
      "  %9: f32[3, 6], %10: i64[3, 6] = cummax(%8, 0)\n"
      "  return (%0, %1, %2, %3, %4, %5, %6, %7, %9, %10)\n";
  // Ties (a later equal value takes over), a NaN (it takes over and stays), infinities.
  const Tensor x = tensor<float>({1, 3, 3, 2, 3, 0,  //
                                  2, kNaN, 5, kNaN, 1, 7,  //
                                  -kInf, -kInf, 0, kInf, kInf, -1},
                                 {3, 6});
  manual_seed(6);
  expect_like_eager(g, {x, randint(-2, 2, {40, 3}, kInt64), randint(-1, 1, {2, 5}, kInt32).to(kBFloat16)});
}

TEST(InductorArgReduction, TiesNaNsAndInfinities) {
  const std::string g =
      "graph(%x: f32[4, 6]):\n"
      "  %0: i64[4] = argmax(%x, 1)\n"
      "  %1: i64[4] = argmin(%x, -1)\n"
      "  %2: i64[1, 6] = argmax(%x, 0, True)\n"
      "  %3: i64[6] = argmin(%x, 0)\n"
      "  %4: i64[] = argmax(%x)\n"
      "  %5: i64[] = argmin(%x)\n"
      "  %6: i64[1, 1] = argmax(%x, None, True)\n"
      "  return (%0, %1, %2, %3, %4, %5, %6)\n";
  // Row 0: a tie for the max (first wins) and for the min; row 1: NaNs (the first NaN wins both);
  // row 2: all -inf; row 3: +inf twice.
  const Tensor x = tensor<float>({1, 5, 5, -2, 0, -2,          //
                                  3, kNaN, 9, kNaN, -1, 2,     //
                                  -kInf, -kInf, -kInf, -kInf, -kInf, -kInf,  //
                                  0, kInf, 1, kInf, -3, 0},
                                 {4, 6});
  expect_like_eager(g, {x});
}

TEST(InductorArgReduction, LongRowsIntegersAndHalf) {
  // 3000 elements: several RBLOCKs and a masked tail; the maximum sits in the middle of a block.
  const std::string g =
      "graph(%x: f32[3, 3000], %i: i32[5, 77], %h: bf16[9, 40], %j: i32[8, 5000]):\n"
      "  %0: f32[3, 3000] = sin(%x)\n"
      "  %1: i64[3] = argmax(%0, 1)\n"
      "  %2: i64[3] = argmin(%x, 1)\n"
      "  %3: i64[77] = argmax(%i, 0)\n"
      "  %4: i64[5] = argmin(%i, 1)\n"
      "  %5: i64[9] = argmax(%h, 1)\n"
      "  %6: i64[] = argmin(%h)\n"
      "  %7: i64[8] = argmax(%j, 1)\n"
      "  %8: i64[5000] = argmin(%j, 0)\n"
      "  return (%1, %2, %3, %4, %5, %6, %7, %8)\n";
  manual_seed(5);
  // Small integers and bf16 values tie often: the first occurrence must win, also where one lane
  // of the block sees several of the rows' elements (5000 of them in lanes of RBLOCK).
  expect_like_eager(g, {randn({3, 3000}) * 10, randint(-3, 3, {5, 77}, kInt32), randint(-2, 2, {9, 40}, kInt32).to(kBFloat16),
                        randint(-3, 3, {8, 5000}, kInt32)});
}

}  // namespace
}  // namespace kiln::inductor
