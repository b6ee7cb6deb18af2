// Regressions found by the differential suite (tests/python, kiln vs PyTorch): gradients that
// PyTorch defines as 0 where kiln gave NaN, and inputs PyTorch accepts that kiln refused.
#include <cmath>

#include "ops/dispatch.h"
#include "support/ref_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

void expect_finite_zero(const Tensor& g, const std::string& what) {
  for (double v : g.to_vector<double>()) EXPECT_EQ(v, 0.0) << what;
}

TEST(OracleRegression, NormOfZeroVectorHasZeroGradient) {
  for (double p : {2.0, 3.0}) {
    Tensor x = zeros({2, 3}, kFloat64).requires_grad_();
    Tensor y = norm(x, Scalar(p), IntList{1});
    expect_close(y, {0, 0}, 0, 0, "norm of zeros");
    y.sum().backward();
    expect_finite_zero(x.grad(), "norm gradient at 0, p=" + std::to_string(p));
  }
  // p < 1: |x|^p has an infinite slope at 0; zero elements get a 0 gradient, the others p|x|^(p-1)...
  Tensor xs = tensor<double>({0, 4}).requires_grad_();
  norm(xs, Scalar(0.5)).backward();
  // (sqrt|0| + sqrt|x1|)^2 = x1 for x1 > 0: d/dx1 = 1.
  expect_close(xs.grad(), {0, 1}, 1e-12, 1e-12, "norm p=0.5 gradient");
  // std of a constant row: 0 with a 0 gradient.
  Tensor c = tensor<double>({1.5, 1.5, 1.5}).requires_grad_();
  Tensor sd = kiln::std(c);
  EXPECT_EQ(sd.item<double>(), 0.0);
  sd.backward();
  expect_finite_zero(c.grad(), "std gradient of a constant");
  // Away from zero the gradient is still x / ||x||.
  Tensor x = tensor<double>({3, 4}).requires_grad_();
  norm(x).backward();
  expect_close(x.grad(), {0.6, 0.8}, 1e-12, 1e-12, "norm gradient");
}

TEST(OracleRegression, CrossEntropyWithEveryTargetIgnored) {
  for (bool weighted : {false, true})
    for (double eps : {0.0, 0.2}) {
      Tensor x = tensor<double>({0.5, -1, 2, 0.1, 0.3, -0.2}, {2, 3}).requires_grad_();
      Tensor t = tensor<int64_t>({-100, -100});
      Tensor w = weighted ? tensor<double>({1, 2, 0.5}) : Tensor();
      Tensor y = cross_entropy(x, t, w, "mean", -100, eps);
      EXPECT_TRUE(std::isnan(y.item<double>()));  // 0/0, as in PyTorch
      y.backward();
      expect_finite_zero(x.grad(), "cross_entropy gradient");
    }
  Tensor lp = tensor<double>({-0.5, -1, -2, -0.1}, {2, 2}).requires_grad_();
  Tensor y = nll_loss(lp, tensor<int64_t>({1, 1}), {}, "mean", 1);
  EXPECT_TRUE(std::isnan(y.item<double>()));
  y.backward();
  expect_finite_zero(lp.grad(), "nll_loss gradient");
}

TEST(OracleRegression, AdaptiveAvgPoolAcceptsEmptyBatch) {
  EXPECT_EQ(adaptive_avg_pool2d(zeros({0, 3, 5, 5}), {2, 3}).sizes(), (Shape{0, 3, 2, 3}));
  EXPECT_EQ(adaptive_avg_pool2d(zeros({2, 0, 6, 6}), {3, 3}).sizes(), (Shape{2, 0, 3, 3}));
  EXPECT_THROW(adaptive_avg_pool2d(zeros({1, 2, 0, 4}), {2, 2}), Error);
}

// mode "linear" (3D input) and "trilinear" (5D): the half-pixel formula of PyTorch's docs.
TEST(OracleRegression, InterpolateLinearModes) {
  Tensor x = tensor<double>({0, 1, 4}, {1, 1, 3});
  // Upsampling 3 -> 6 (scale 0.5): source = (i + 0.5) * 0.5 - 0.5, clamped at 0.
  std::vector<double> ref;
  const std::vector<double> v = {0, 1, 4};
  for (int i = 0; i < 6; ++i) {
    const double s = std::max(0.0, (i + 0.5) * 0.5 - 0.5);
    const int lo = int(s), hi = std::min(lo + 1, 2);
    ref.push_back(v[size_t(lo)] + (s - lo) * (v[size_t(hi)] - v[size_t(lo)]));
  }
  expect_close(interpolate(x, SymIntList{6}, std::nullopt, "linear", false), ref, 1e-12, 1e-12, "linear");
  expect_close(interpolate(x, SymIntList{5}, std::nullopt, "linear", true), {0, 0.5, 1, 2.5, 4}, 1e-12, 1e-12,
               "linear, align_corners");
  // trilinear of a tensor constant along two dims is linear along the third.
  Tensor x3 = reshape(expand(reshape(x, {1, 1, 3, 1, 1}), {1, 1, 3, 2, 2}), {1, 1, 3, 2, 2});
  Tensor y3 = interpolate(x3, SymIntList{5, 3, 1}, std::nullopt, "trilinear", true);
  EXPECT_EQ(y3.sizes(), (Shape{1, 1, 5, 3, 1}));
  expect_close(y3.select(3, 1).reshape({5}), {0, 0.5, 1, 2.5, 4}, 1e-12, 1e-12, "trilinear");
  EXPECT_THROW(interpolate(x, SymIntList{6}, std::nullopt, "bilinear", false), Error);  // bilinear is 4D
  EXPECT_THROW(interpolate(x3, SymIntList{6, 2, 2}, std::nullopt, "linear", false), Error);
}

// embedding_bag mode "max" (PyTorch's third mode): per-bag elementwise max, 0 for an empty bag,
// the gradient reaching the row that gave each max.
TEST(OracleRegression, EmbeddingBagMax) {
  Tensor w = tensor<double>({1, -2, 3, 0.5, -1, 4, 2, 2.5}, {4, 2}).requires_grad_();
  Tensor idx = tensor<int64_t>({0, 2, 1, 3, 1});
  Tensor off = tensor<int64_t>({0, 2, 2});  // bags {0, 2}, {}, {1, 3, 1}
  Tensor y = embedding_bag(idx, w, off, "max");
  expect_close(y, {1, 4, 0, 0, 3, 2.5}, 0, 0, "embedding_bag max");
  (y * tensor<double>({1, 2, 3, 4, 5, 6}, {3, 2})).sum().backward();
  expect_close(w.grad(), {1, 0, 5, 0, 0, 2, 0, 6}, 1e-12, 1e-12, "embedding_bag max gradient");
}

// PyTorch documents all/any of uint8 as uint8 (every other dtype gives bool).
TEST(OracleRegression, AllAnyKeepUInt8) {
  Tensor x = tensor<double>({0, 2, 3, 1}, {2, 2}).to(kUInt8);
  Tensor al = all(x, IntList{1}), an = any(x);
  EXPECT_EQ(al.dtype(), kUInt8);
  EXPECT_EQ(an.dtype(), kUInt8);
  EXPECT_EQ(al.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(an.item<int64_t>(), 1);
  EXPECT_EQ(all(x.to(kInt8)).dtype(), kBool);
  // An empty dim list reduces nothing for all/any (PyTorch's), each element's truth.
  Tensor e = any(x.to(kFloat32), std::vector<int64_t>{});
  EXPECT_EQ(e.sizes(), (Shape{2, 2}));
  EXPECT_EQ(e.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 1}));
}

// A NaN value is inserted after every element (PyTorch's binary search tests !(s >= v)).
TEST(OracleRegression, SearchsortedNaNGoesLast) {
  Tensor seq = tensor<double>({0, 1, 2});
  Tensor v = tensor<double>({std::nan(""), 1, -INFINITY});
  EXPECT_EQ(searchsorted(seq, v).to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 0}));
  EXPECT_EQ(searchsorted(seq, v, true).to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 0}));
  EXPECT_EQ(bucketize(v, seq).to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 0}));
}

// topk of a 0-d tensor: the element itself (PyTorch returns it for k = 0 as well).
TEST(OracleRegression, TopkOfScalar) {
  for (int64_t k : {0, 1}) {
    auto [v, i] = topk(scalar_tensor(-1.25), k);
    EXPECT_EQ(v.item<double>(), -1.25) << k;
    EXPECT_EQ(i.item<int64_t>(), 0) << k;
  }
}

// A scale_factor that leaves a size unchanged copies it (PyTorch special-cases it, rather than
// sampling at o / scale_factor); nearest with a doubled size repeats each source twice.
TEST(OracleRegression, InterpolateScaleKeepingTheSize) {
  Tensor x = tensor<double>({0, 1, 2, 3, 4, 5}, {1, 1, 6});
  const std::vector<double> same = {0, 1, 2, 3, 4, 5};
  expect_close(interpolate(x, std::nullopt, std::vector<double>{1.1}, "linear", false), same, 0, 0, "linear, size kept");
  // Nearest: only PyTorch's 2-d kernel special-cases the sizes; the 1-d one samples floor(o / 1.1).
  expect_close(interpolate(x.reshape({1, 1, 1, 6}), std::nullopt, std::vector<double>{1.0, 1.1}), same, 0, 0,
               "nearest 2-d, size kept");
  expect_close(interpolate(x, std::nullopt, std::vector<double>{1.1}), {0, 0, 1, 2, 3, 4}, 0, 0, "nearest 1-d");
  Tensor y = interpolate(tensor<double>({0, 1, 2, 3, 4}, {1, 1, 1, 5}), std::nullopt, std::vector<double>{1.0, 2.1});
  expect_close(y, {0, 0, 1, 1, 2, 2, 3, 3, 4, 4}, 0, 0, "nearest 2-d, size doubled");
}

// pow with a number exponent (a wrapped scalar): the gradient's e - 1 was computed in float32
// (wrapped - wrapped promotes to the default dtype), 1e-8 off in float64; norm(p=3) used it.
TEST(OracleRegression, PowNumberExponentGradientInDouble) {
  Tensor x = tensor<double>({2.0, 0.7}).requires_grad_();
  pow(x, ops::num(1.0 / 3.0)).sum().backward();
  expect_close(x.grad(), {std::pow(2.0, -2.0 / 3.0) / 3.0, std::pow(0.7, -2.0 / 3.0) / 3.0}, 1e-15, 0, "pow grad");
  Tensor y = tensor<double>({0.5, -1.2, 2.0}).requires_grad_();
  norm(y, Scalar(3.0)).backward();
  const double n = std::cbrt(0.125 + 1.728 + 8.0);
  expect_close(y.grad(), {0.25 / (n * n), -1.44 / (n * n), 4.0 / (n * n)}, 1e-14, 0, "norm p=3 grad");
}

// cross_entropy with label smoothing and no weight: the gradient p - (1 - eps) onehot - eps / C
// to double precision (the kernel's derivative multiplied two wrapped numbers in float32).
TEST(OracleRegression, CrossEntropySmoothingGradientInDouble) {
  const std::vector<double> logits = {0.3, -1.1, 2.0};
  Tensor x = tensor<double>(logits, {1, 3}).requires_grad_();
  const double eps = 0.3;
  cross_entropy(x, tensor<int64_t>({2}), {}, "sum", -100, eps).backward();
  double z = 0;
  for (double v : logits) z += std::exp(v);
  std::vector<double> ref;
  for (size_t c = 0; c < 3; ++c) ref.push_back(std::exp(logits[c]) / z - (c == 2 ? 1 - eps : 0.0) - eps / 3);
  expect_close(x.grad(), ref, 1e-15, 1e-15, "cross_entropy smoothing gradient");
}

}  // namespace
