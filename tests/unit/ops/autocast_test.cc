// Autocast: matmul-like ops run in bfloat16/float16, precision-sensitive ops in float32, and
// gradients flow back to float32 leaves.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/test_util.h"

using namespace kiln;

TEST(Autocast, LowersMatmulAndKeepsReductionsInFloat32) {
  Tensor a = randn({4, 8}), b = randn({8, 3});
  AutocastGuard guard(kBFloat16);
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), kBFloat16);
  EXPECT_EQ(linear(a, b.t()).dtype(), kBFloat16);
  EXPECT_EQ(softmax(c, -1).dtype(), kFloat32);
  EXPECT_EQ(c.sum().dtype(), kFloat32);
  EXPECT_EQ(cross_entropy(c, tensor<int64_t>({0, 1, 2, 0})).dtype(), kFloat32);
  EXPECT_EQ((c + c).dtype(), kBFloat16);  // ops outside the lists keep their inputs' dtype
}

TEST(Autocast, ResultsMatchTheFloat32ComputationWithinBFloat16Precision) {
  std::vector<double> av, bv;
  Tensor a = test::random_tensor({16, 32}, kFloat32, &av), b = test::random_tensor({32, 8}, kFloat32, &bv);
  Tensor c;
  {
    AutocastGuard guard(kBFloat16);
    c = matmul(a, b);
  }
  std::vector<double> ref(16 * 8, 0.0);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 8; ++j)
      for (int k = 0; k < 32; ++k) ref[size_t(i * 8 + j)] += av[size_t(i * 32 + k)] * bv[size_t(k * 8 + j)];
  test::expect_close(c, ref, 3e-2, 0.15, "autocast matmul");  // inputs rounded to bf16: ~3 digits
}

TEST(Autocast, GradientsReachFloat32Leaves) {
  Tensor w = randn({8, 3}).requires_grad_();
  Tensor x = randn({4, 8});
  {
    AutocastGuard guard(kBFloat16);
    Tensor loss = matmul(x, w).sum();
    loss.backward();
  }
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  // d(sum(x @ w))/dw[k][j] = sum_i x[i][k], up to bf16 rounding
  std::vector<double> xs = x.to_vector<double>(), g = w.grad().to_vector<double>();
  for (int k = 0; k < 8; ++k) {
    double s = 0;
    for (int i = 0; i < 4; ++i) s += xs[size_t(i * 8 + k)];
    for (int j = 0; j < 3; ++j) EXPECT_NEAR(g[size_t(k * 3 + j)], s, 0.05 + 0.02 * std::abs(s));
  }
}

TEST(Autocast, GuardRestoresAndNests) {
  EXPECT_FALSE(autocast_dtype());
  {
    AutocastGuard outer(kBFloat16);
    {
      AutocastGuard off(kBFloat16, false);
      EXPECT_EQ(matmul(randn({2, 2}), randn({2, 2})).dtype(), kFloat32);
    }
    EXPECT_EQ(*autocast_dtype(), kBFloat16);
  }
  EXPECT_FALSE(autocast_dtype());
  EXPECT_THROW(AutocastGuard bad(kInt8), Error);
}

TEST(Autocast, Float64IsLeftAlone) {
  AutocastGuard guard(kFloat16);
  EXPECT_EQ(matmul(randn({2, 2}, kFloat64), randn({2, 2}, kFloat64)).dtype(), kFloat64);
}
