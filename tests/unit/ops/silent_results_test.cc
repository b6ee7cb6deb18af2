// Results that were wrong without a word (issue 15, part C): half-precision reductions that
// overflowed in their own dtype, clamp ignoring a NaN bound, arange losing integer precision.
// Each expectation is PyTorch's answer for the same call.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace kiln;

TEST(HalfReductions, MeanAccumulatesInFloat32) {
  // 2**24 ones: their sum (and the count) overflow float16's 65504; PyTorch's mean is 1.
  const int64_t n = int64_t(1) << 24;
  for (DType dt : {kFloat16, kBFloat16}) {
    EXPECT_EQ(ones({n}, dt).mean().to(kFloat32).item<float>(), 1.0f) << name(dt);
    EXPECT_EQ(ones({n}, dt).mean().dtype(), dt);
    Tensor m = mean(ones({2, n / 2}, dt), {1});
    EXPECT_EQ(m.to(kFloat32).to_vector<float>(), (std::vector<float>{1, 1})) << name(dt);
  }
  // The sum itself is float16 and overflows, as PyTorch's: inf.
  EXPECT_TRUE(std::isinf(ones({n}, kFloat16).sum().to(kFloat32).item<float>()));
}

TEST(Clamp, NanBoundGivesNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = tensor<float>({-1, 0.5, 2});
  for (Tensor r : {clamp(x, Scalar(double(nan)), std::nullopt), clamp(x, std::nullopt, Scalar(double(nan))),
                   clamp(x, Scalar(0.0), Scalar(double(nan)))})
    for (float v : r.to_vector<float>()) EXPECT_TRUE(std::isnan(v));
  // Ordinary bounds still clamp, and a NaN element stays NaN.
  Tensor y = clamp(tensor<float>({-1, nan, 2}), Scalar(0.0), Scalar(1.0));
  std::vector<float> v = y.to_vector<float>();
  EXPECT_EQ(v[0], 0);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], 1);
}

TEST(Arange, IntegerRangesAreExact) {
  const int64_t big = int64_t(1) << 62;
  Tensor r = arange(big, big + 5);  // in double both ends round to 2**62: it was empty
  ASSERT_EQ(r.numel(), 5);
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{big, big + 1, big + 2, big + 3, big + 4}));
  EXPECT_EQ(arange(big, big + 5, 2).numel(), 3);
  EXPECT_EQ(arange(5, -big, -big).to_vector<int64_t>(), (std::vector<int64_t>{5, 5 - big}));
  // Float ranges keep PyTorch's double arithmetic: ceil((end - start) / step).
  const double p53 = 9007199254740992.0;  // 2**53
  EXPECT_EQ(arange(p53, p53 + 10, 1.0, kFloat64).numel(), 10);
  EXPECT_EQ(arange(p53 - 5, p53 + 5, 1.0, kFloat64).numel(), 9);  // p53 + 5 rounds to p53 + 4
  EXPECT_THROW(arange(0.0, std::numeric_limits<double>::infinity()), Error);
}
