// Creation prims (full, empty, iota, rand_uniform, rand_normal) and composites (zeros ... multinomial):
// values, dtype inference, determinism under manual_seed, loose statistics for random ones.
#include <kiln/autograd.h>

#include <algorithm>
#include <numeric>
#include <set>

#include "ops/dispatch.h"
#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / double(v.size()); }
double var_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / double(v.size());
}
}  // namespace

TEST(Creation, FullEmptyDtypeInference) {
  Tensor a = full({2, 3}, 1);
  EXPECT_EQ(a.dtype(), kInt64);
  EXPECT_EQ(a.sizes(), (Shape{2, 3}));
  EXPECT_EQ(a.to_vector<int64_t>(), std::vector<int64_t>(6, 1));
  EXPECT_EQ(full({2}, 1.5).dtype(), kFloat32);
  expect_close(full({2}, 1.5), {1.5, 1.5}, 0, 0);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  EXPECT_EQ(full({2}, 7, kFloat16).dtype(), kFloat16);
  expect_close(full({3}, -2.25, kBFloat16), {-2.25, -2.25, -2.25}, 0, 0);
  EXPECT_EQ(full({2}, 2.9, kInt32).to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(full({}, 3.0).dim(), 0);
  EXPECT_EQ(full({0, 4}, 1.0).sizes(), (Shape{0, 4}));
  set_default_float_dtype(kFloat64);
  EXPECT_EQ(full({1}, 0.5).dtype(), kFloat64);
  EXPECT_EQ(empty({1}).dtype(), kFloat64);
  set_default_float_dtype(kFloat32);
  EXPECT_THROW(full({-1, 2}, 0), Error);
  Tensor e = empty({3, 0, 2}, kInt16);
  EXPECT_EQ(e.sizes(), (Shape{3, 0, 2}));
  EXPECT_EQ(e.dtype(), kInt16);
  EXPECT_EQ(empty({4}).dtype(), kFloat32);
  EXPECT_THROW(empty({-3}), Error);
  // zeros/ones and the *_like family
  EXPECT_EQ(zeros({2}).dtype(), kFloat32);
  EXPECT_EQ(ones({2}, kInt8).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  Tensor t = tensor<int32_t>({1, 2, 3, 4}, {2, 2}).transpose(0, 1);
  EXPECT_EQ(zeros_like(t).dtype(), kInt32);
  EXPECT_EQ(zeros_like(t).sizes(), (Shape{2, 2}));
  expect_close(ones_like(t, kFloat64), {1, 1, 1, 1}, 0, 0);
  expect_close(full_like(t, 7), {7, 7, 7, 7}, 0, 0);
  EXPECT_EQ(full_like(t, 7.9).dtype(), kInt32);  // *_like keeps the tensor's dtype
  EXPECT_EQ(empty_like(t).sizes(), (Shape{2, 2}));
}

TEST(Creation, IotaAndArange) {
  EXPECT_EQ(iota(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(iota(4, 10, -3).to_vector<int64_t>(), (std::vector<int64_t>{10, 7, 4, 1}));
  expect_close(iota(4, 0.5, 0.25, kFloat64), {0.5, 0.75, 1.0, 1.25}, 0, 0);
  expect_close(iota(3, 1, 2, kFloat16), {1, 3, 5}, 0, 0);
  EXPECT_EQ(iota(0).sizes(), (Shape{0}));
  EXPECT_EQ(iota(3, 0, 1, kInt8).dtype(), kInt8);
  EXPECT_EQ(arange(0, 5).dtype(), kInt64);
  EXPECT_EQ(arange(0, 5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(0, 1, 0.25).dtype(), kFloat32);
  expect_close(arange(0, 1, 0.25), {0, 0.25, 0.5, 0.75}, 0, 0);
  expect_close(arange(5, -1, -2), {5, 3, 1}, 0, 0);
  expect_close(arange(0.0, 1.0, 0.3, kFloat64), {0, 0.3, 0.6, 0.9}, 1e-15, 0);
  EXPECT_EQ(arange(3, 3).numel(), 0);
  EXPECT_THROW(arange(0, 5, 0), Error);
  EXPECT_THROW(arange(5, 0, 1), Error);
  EXPECT_THROW(arange(0, -0.5, 1), Error);  // ceil(-0.5) is 0, but the sign is still wrong (PyTorch)
}

TEST(Creation, Linspace) {
  for (auto [start, end, steps] : std::vector<std::tuple<double, double, int64_t>>{
           {0, 1, 5}, {-3, 7, 11}, {2, -2, 4}, {0.1, 0.9, 100}, {1e3, 1e3 + 1, 7}}) {
    for (DType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
      Tensor t = linspace(start, end, steps, dt);
      EXPECT_EQ(t.dtype(), dt);
      ASSERT_EQ(t.numel(), steps);
      std::vector<double> ref;
      for (int64_t i = 0; i < steps; ++i) ref.push_back(start + (end - start) * double(i) / double(steps - 1));
      const double tol = dt == kFloat64 ? 1e-13 : tolerance(dt);
      expect_close(t, ref, tol, tol, std::string("linspace ") + name(dt));
      std::vector<double> v = t.to_vector<double>();
      // the end points are the requested values, rounded to dt
      EXPECT_EQ(v.front(), scalar_tensor(start, dt).item<double>());
      EXPECT_EQ(v.back(), scalar_tensor(end, dt).item<double>());
    }
  }
  EXPECT_EQ(linspace(0, 10, 5).dtype(), kFloat32);  // integer end points still give floats
  expect_close(linspace(3, 9, 1), {3}, 0, 0);
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  EXPECT_EQ(linspace(0, 10, 4, kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 6, 10}));
  EXPECT_THROW(linspace(0, 1, -1), Error);
}

TEST(Creation, Eye) {
  for (auto [n, m] : std::vector<std::pair<int64_t, int64_t>>{{3, 3}, {2, 4}, {4, 2}, {0, 3}, {1, 1}}) {
    Tensor e = eye(n, m);
    EXPECT_EQ(e.dtype(), kFloat32);
    EXPECT_EQ(e.sizes(), (Shape{n, m}));
    std::vector<double> ref;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) ref.push_back(i == j ? 1 : 0);
    expect_close(e, ref, 0, 0);
  }
  EXPECT_EQ(eye(3).sizes(), (Shape{3, 3}));
  EXPECT_EQ(eye(2, std::nullopt, kInt32).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1}));
  EXPECT_EQ(eye(2, 2, kBool).to_vector<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_THROW(eye(-1), Error);
}

TEST(Creation, RandomPrimsDeterministicAndStatistics) {
  const int64_t n = 100000;
  Tensor u = rand_uniform({n}, 7, 0, kFloat64);
  std::vector<double> uv = u.to_vector<double>();
  EXPECT_EQ(uv, rand_uniform({n}, 7, 0, kFloat64).to_vector<double>());
  EXPECT_NE(uv, rand_uniform({n}, 8, 0, kFloat64).to_vector<double>());
  EXPECT_TRUE(*std::min_element(uv.begin(), uv.end()) >= 0.0);
  EXPECT_TRUE(*std::max_element(uv.begin(), uv.end()) < 1.0);
  EXPECT_NEAR(mean_of(uv), 0.5, 0.01);
  EXPECT_NEAR(var_of(uv), 1.0 / 12, 0.003);
  // the offset counts elements: a later offset continues the same stream
  std::vector<double> tail = rand_uniform({10}, 7, 5, kFloat64).to_vector<double>();
  EXPECT_EQ(tail, std::vector<double>(uv.begin() + 5, uv.begin() + 15));
  Tensor f = rand_uniform({2, 3}, 1, 0);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_EQ(f.sizes(), (Shape{2, 3}));
  for (DType dt : {kFloat16, kBFloat16}) {
    std::vector<double> h = rand_uniform({1000}, 3, 0, dt).to_vector<double>();
    EXPECT_TRUE(*std::max_element(h.begin(), h.end()) <= 1.0);
    EXPECT_TRUE(*std::min_element(h.begin(), h.end()) >= 0.0);
  }
  std::vector<double> nv = rand_normal({n}, 11, 0, kFloat64).to_vector<double>();
  EXPECT_EQ(nv, rand_normal({n}, 11, 0, kFloat64).to_vector<double>());
  EXPECT_NEAR(mean_of(nv), 0.0, 0.02);
  EXPECT_NEAR(var_of(nv), 1.0, 0.03);
  int64_t within1 = 0;
  for (double x : nv) within1 += std::abs(x) < 1;
  EXPECT_NEAR(double(within1) / double(n), 0.6827, 0.01);
  EXPECT_THROW(rand_uniform({2}, 0, 0, kInt64), Error);
  EXPECT_THROW(rand_normal({2}, 0, 0, kBool), Error);
  EXPECT_EQ(rand_normal({0}, 1, 0).numel(), 0);
}

TEST(Creation, RandRandnUnderManualSeed) {
  manual_seed(123);
  std::vector<double> a = rand({1000}, kFloat64).to_vector<double>();
  std::vector<double> b = randn({1000}, kFloat64).to_vector<double>();
  manual_seed(123);
  EXPECT_EQ(a, rand({1000}, kFloat64).to_vector<double>());
  EXPECT_EQ(b, randn({1000}, kFloat64).to_vector<double>());
  EXPECT_NE(a, rand({1000}, kFloat64).to_vector<double>());  // the generator advanced
  Tensor t = zeros({3, 2}, kFloat16);
  EXPECT_EQ(rand_like(t).dtype(), kFloat16);
  EXPECT_EQ(randn_like(t).sizes(), (Shape{3, 2}));
  EXPECT_EQ(rand({4}).dtype(), kFloat32);
}

TEST(Creation, Randint) {
  const int64_t n = 100000;
  manual_seed(5);
  Tensor r = randint(-3, 7, {n});
  EXPECT_EQ(r.dtype(), kInt64);
  std::vector<int64_t> v = r.to_vector<int64_t>();
  manual_seed(5);
  EXPECT_EQ(v, randint(-3, 7, {n}).to_vector<int64_t>());
  std::vector<int64_t> counts(10, 0);
  for (int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 7);
    ++counts[size_t(x + 3)];
  }
  for (int64_t c : counts) EXPECT_NEAR(double(c) / double(n), 0.1, 0.01);
  std::vector<double> d(v.begin(), v.end());
  EXPECT_NEAR(mean_of(d), 1.5, 0.05);
  EXPECT_NEAR(var_of(d), (100.0 - 1) / 12, 0.3);  // discrete uniform on 10 values
  EXPECT_EQ(randint(0, 2, {3, 4}).sizes(), (Shape{3, 4}));
  EXPECT_EQ(randint(0, 5, {4}, kInt16).dtype(), kInt16);
  EXPECT_EQ(randint(0, 1, {5}).to_vector<int64_t>(), std::vector<int64_t>(5, 0));
  std::vector<double> big = randint(0, int64_t(1) << 40, {1000}, kFloat64).to_vector<double>();
  EXPECT_GT(*std::max_element(big.begin(), big.end()), double(int64_t(1) << 39));
  EXPECT_THROW(randint(3, 3, {2}), Error);
  EXPECT_THROW(randint(0, 3, {-2}), Error);
}

TEST(Creation, Randperm) {
  for (int64_t n : {0, 1, 10, 1000}) {
    manual_seed(9);
    Tensor p = randperm(n);
    EXPECT_EQ(p.dtype(), kInt64);
    std::vector<int64_t> v = p.to_vector<int64_t>();
    manual_seed(9);
    EXPECT_EQ(v, randperm(n).to_vector<int64_t>());
    std::vector<int64_t> s = v;
    std::sort(s.begin(), s.end());
    std::vector<int64_t> want(static_cast<size_t>(n));
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(s, want) << "not a permutation of 0.." << n - 1;
  }
  // every position is uniform over values: mean of p[0] over many draws ~ (n-1)/2
  double acc = 0;
  for (int i = 0; i < 2000; ++i) acc += double(randperm(10).to_vector<int64_t>()[0]);
  EXPECT_NEAR(acc / 2000, 4.5, 0.3);
  EXPECT_EQ(randperm(5, kInt32).dtype(), kInt32);
  EXPECT_THROW(randperm(-1), Error);
}

TEST(Creation, TrilTriu) {
  for (DType dt : {kFloat32, kFloat64, kFloat16, kInt64, kBool}) {
    for (int64_t diag : {-1, 0, 2, -5, 5}) {
      std::vector<double> xv;
      Tensor x = random_tensor({2, 3, 4}, dt, &xv, "transposed");
      std::vector<double> rl, ru;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 4; ++j) {
            const double v = xv[size_t(b * 12 + i * 4 + j)];
            rl.push_back(j - i <= diag ? v : 0);
            ru.push_back(j - i >= diag ? v : 0);
          }
      Tensor l = tril(x, diag), u = triu(x, diag);
      EXPECT_EQ(l.dtype(), dt);
      EXPECT_EQ(u.sizes(), (Shape{2, 3, 4}));
      expect_close(l, rl, 0, 0, std::string("tril ") + name(dt) + " " + std::to_string(diag));
      expect_close(u, ru, 0, 0, std::string("triu ") + name(dt) + " " + std::to_string(diag));
    }
  }
  Tensor m = tensor<double>({1, 2, 3, 4}, {2, 2});
  expect_close(m.tril(), {1, 0, 3, 4}, 0, 0);
  expect_close(m.triu(1), {0, 2, 0, 0}, 0, 0);
  EXPECT_EQ(tril(zeros({0, 3})).sizes(), (Shape{0, 3}));
  EXPECT_THROW(tril(zeros({3})), Error);
  EXPECT_THROW(triu(scalar_tensor(1.0)), Error);
  Tensor x = grad_input({3, 4}), xt = grad_input({4, 3});
  expect_gradcheck([](const TensorList& t) { return TensorList{tril(t[0], -1)}; }, {x}, "tril");
  expect_gradcheck([](const TensorList& t) { return TensorList{triu(t[0].transpose(0, 1), 1)}; }, {xt}, "triu transposed");
  Tensor v = grad_input({4});
  expect_gradcheck([](const TensorList& t) { return TensorList{tril(t[0].expand({3, 4}))}; }, {v}, "tril expanded");
}

TEST(Creation, OneHot) {
  Tensor idx = tensor<int64_t>({0, 2, 1, 2, 0, 3}, {2, 3});
  Tensor oh = one_hot(idx);
  EXPECT_EQ(oh.dtype(), kInt64);
  EXPECT_EQ(oh.sizes(), (Shape{2, 3, 4}));
  std::vector<int64_t> ref;
  for (int64_t c : idx.to_vector<int64_t>())
    for (int64_t k = 0; k < 4; ++k) ref.push_back(c == k);
  EXPECT_EQ(oh.to_vector<int64_t>(), ref);
  EXPECT_EQ(one_hot(tensor<int64_t>({1}), 5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0, 0, 0}));
  EXPECT_EQ(one_hot(idx.transpose(0, 1), 6).sizes(), (Shape{3, 2, 6}));
  EXPECT_EQ(one_hot(zeros({0}, kInt64), 3).sizes(), (Shape{0, 3}));
  EXPECT_EQ(one_hot(scalar_tensor(Scalar(int64_t(2)), kInt64)).sizes(), (Shape{3}));
  EXPECT_THROW(one_hot(zeros({0}, kInt64)), Error);
  EXPECT_THROW(one_hot(tensor<int64_t>({3}), 3), Error);
  EXPECT_THROW(one_hot(tensor<int64_t>({-1})), Error);
  EXPECT_THROW(one_hot(tensor<int32_t>({1})), Error);
  EXPECT_THROW(one_hot(tensor<int64_t>({1}), -2), Error);
}

TEST(Creation, MultinomialWithReplacement) {
  const std::vector<double> p = {0.1, 0.0, 0.6, 0.3};
  const int64_t n = 100000;
  manual_seed(17);
  Tensor s = multinomial(tensor<double>({1.0, 0.0, 6.0, 3.0}), n, true);  // unnormalised weights
  EXPECT_EQ(s.dtype(), kInt64);
  EXPECT_EQ(s.sizes(), (Shape{n}));
  std::vector<int64_t> v = s.to_vector<int64_t>();
  manual_seed(17);
  EXPECT_EQ(v, multinomial(tensor<double>({1.0, 0.0, 6.0, 3.0}), n, true).to_vector<int64_t>());
  std::vector<double> freq(4, 0);
  for (int64_t i : v) freq[size_t(i)] += 1.0 / double(n);
  for (size_t k = 0; k < 4; ++k) EXPECT_NEAR(freq[k], p[k], 0.01) << "category " << k;
  EXPECT_EQ(freq[1], 0.0) << "a zero-weight category is never drawn";
  // a batch of distributions, float32 and float16 weights
  for (DType dt : {kFloat32, kFloat16}) {
    Tensor w = tensor<double>({0.0, 1.0, 0.0, 1.0, 0.0, 0.0}, {2, 3}).to(dt);
    Tensor b = multinomial(w, 50, true);
    EXPECT_EQ(b.sizes(), (Shape{2, 50}));
    std::vector<int64_t> bv = b.to_vector<int64_t>();
    for (size_t i = 0; i < 50; ++i) EXPECT_EQ(bv[i], 1);
    for (size_t i = 50; i < 100; ++i) EXPECT_EQ(bv[i], 0);
  }
}

TEST(Creation, MultinomialWithoutReplacement) {
  manual_seed(3);
  for (int trial = 0; trial < 20; ++trial) {
    Tensor s = multinomial(tensor<float>({0.2f, 0.0f, 0.5f, 0.1f, 0.2f}), 4, false);
    std::vector<int64_t> v = s.to_vector<int64_t>();
    std::set<int64_t> uniq(v.begin(), v.end());
    EXPECT_EQ(uniq.size(), 4u) << "no repeats";
    EXPECT_EQ(uniq.count(1), 0u) << "zero weight never drawn";
  }
  // the first draw follows p; later draws are from the renormalised remainder
  const int trials = 20000;
  Tensor w = tensor<double>({0.5, 0.3, 0.2}).unsqueeze(0).expand({trials, 3}).contiguous();
  std::vector<int64_t> v = multinomial(w, 2, false).to_vector<int64_t>();
  std::vector<double> first(3, 0);
  double second_is_1_given_first_0 = 0, first0 = 0;
  for (int t = 0; t < trials; ++t) {
    first[size_t(v[size_t(2 * t)])] += 1.0 / trials;
    if (v[size_t(2 * t)] == 0) {
      first0 += 1;
      second_is_1_given_first_0 += v[size_t(2 * t + 1)] == 1;
      EXPECT_NE(v[size_t(2 * t + 1)], 0);
    }
  }
  EXPECT_NEAR(first[0], 0.5, 0.015);
  EXPECT_NEAR(first[1], 0.3, 0.015);
  EXPECT_NEAR(first[2], 0.2, 0.015);
  EXPECT_NEAR(second_is_1_given_first_0 / first0, 0.6, 0.02);  // 0.3 / (0.3 + 0.2)
  // all categories: a permutation
  std::vector<int64_t> all = multinomial(ones({6}), 6).to_vector<int64_t>();
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_THROW(multinomial(ones({3}), 4), Error);
  EXPECT_THROW(multinomial(tensor<float>({1.0f, 0.0f, 0.0f}), 2), Error);
  EXPECT_THROW(multinomial(tensor<float>({1.0f, -1.0f}), 1, true), Error);
  EXPECT_THROW(multinomial(zeros({2}), 1, true), Error);
  EXPECT_THROW(multinomial(ones({2, 2, 2}), 1, true), Error);
  EXPECT_THROW(multinomial(tensor<int64_t>({1, 1}), 1, true), Error);
  EXPECT_THROW(multinomial(ones({3}), 0), Error);
}
