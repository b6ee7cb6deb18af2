// Rows too long for one block (looped row groups): the row's max and its sum of exp(x - max) in
// one loop (emit_tile.cc, online_max_sum), against eager: softmax, log_softmax and cross_entropy,
// rows holding -inf, inf, NaN and a row of only -inf (NaN, as eager).
#include <gtest/gtest.h>
#include <kiln/compile.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>

#include "inductor/inductor.h"
#include "support/test_util.h"

namespace kiln {
namespace {

CompileOptions inductor() { return test::inductor_options(); }

// Equal within float32 rounding, NaN and infinities in the same places.
void expect_near(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.sizes(), want.sizes());
  const std::vector<double> g = got.to(kFloat64).contiguous().to_vector<double>(), w = want.to(kFloat64).contiguous().to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isinf(w[i])) {
      EXPECT_TRUE(std::isnan(w[i]) ? std::isnan(g[i]) : g[i] == w[i]) << i << ": " << g[i] << " vs " << w[i];
      continue;
    }
    ASSERT_NEAR(g[i], w[i], 1e-5 + 1e-5 * std::abs(w[i])) << i;
  }
}

TEST(InductorOnlineSoftmax, LongRowsMatchEager) {
  const int64_t rows = 6, cols = 9000;  // (> the 4096 a block keeps: looped)
  Tensor x = randn({rows, cols}) * 4.0;
  std::vector<float> v = x.to_vector<float>();
  const float inf = std::numeric_limits<float>::infinity();
  v[1 * cols + 17] = -inf;                                           // one -inf in a row
  for (int64_t c = 0; c < cols; ++c) v[2 * cols + c] = -inf;        // a row of -inf: NaN
  v[3 * cols + 8999] = 50.0f;                                        // the max in the last block
  v[4 * cols + 5] = inf;                                             // an inf: NaN
  v[5 * cols + 4000] = std::numeric_limits<float>::quiet_NaN();      // a NaN: NaN
  x = tensor<float>(v, {rows, cols});
  auto fn = [](const Tensor& x) { return std::vector<Tensor>{softmax(x, 1), log_softmax(x, 1)}; };
  auto f = compile(fn, inductor());
  const std::vector<Tensor> got = f(x), want = fn(x);
  for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i]);
}

TEST(InductorOnlineSoftmax, CrossEntropyOfLongRowsIsOneReadOfTheLogits) {
  const Tensor x = randn({16, 5000}) * 3.0, t = randint(0, 5000, {16});
  auto fn = [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); };
  auto f = compile(fn, inductor());
  expect_near(f(x, t), fn(x, t));
  // log_softmax's row group reads each row twice: once for its max and sum, once to store.
  auto g = std::make_shared<graph::Graph>(graph::parse(
      "graph(%x: f32[16, 5000]):\n"
      "  %m: f32[16, 1] = amax(%x, dim=[1], keepdim=True)\n"
      "  %s: f32[16, 5000] = sub(%x, %m)\n"
      "  %e: f32[16, 5000] = exp(%s)\n"
      "  %z: f32[16, 1] = sum(%e, dim=[1], keepdim=True)\n"
      "  %l: f32[16, 1] = log(%z)\n"
      "  %lp: f32[16, 5000] = sub(%s, %l)\n"
      "  return (%lp)\n"));
  const std::vector<std::string> kernels = inductor::compile_graph_verbose(g).kernels;
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(test::count_occurrences(kernels[0], " = for "), 1) << kernels[0];  // max and sum, one loop
  EXPECT_EQ(test::count_occurrences(kernels[0], "  for "), 1) << kernels[0];    // the epilogue's
}

}  // namespace
}  // namespace kiln
