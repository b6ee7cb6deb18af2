// Composite reductions (mean, any, all, max/min, var/std/var_mean, norm, logsumexp,
// count_nonzero) against float64 loops, with gradchecks.
#include "support/reduce_ref.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};
const std::vector<std::vector<int64_t>> kDimSets = {{}, {0}, {-1}, {0, 2}};
IntList dl(const std::vector<int64_t>& d) { return d.empty() ? IntList(std::nullopt) : IntList(d); }

double ref_mean(const std::vector<double>& v) { return ref_sum(v) / double(v.size()); }
double ref_var(const std::vector<double>& v, double corr) {
  const double m = ref_mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / std::max(0.0, double(v.size()) - corr);
}
double ref_norm(const std::vector<double>& v, double p) {
  if (p == 0) return double(std::count_if(v.begin(), v.end(), [](double x) { return x != 0; }));
  if (std::isinf(p)) {
    double m = p > 0 ? 0 : INFINITY;
    for (double x : v) m = p > 0 ? std::max(m, std::abs(x)) : std::min(m, std::abs(x));
    return m;
  }
  double s = 0;
  for (double x : v) s += std::pow(std::abs(x), p);
  return std::pow(s, 1 / p);
}
double ref_lse(const std::vector<double>& v) {
  double m = -INFINITY;
  for (double x : v) m = std::max(m, x);
  if (std::isinf(m)) return m;
  double s = 0;
  for (double x : v) s += std::exp(x - m);
  return m + std::log(s);
}

TEST(ReductionOps, MeanAnyAll) {
  const Shape shape{3, 4, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const auto& layout : kLayouts)
      for (const auto& dims : kDimSets)
        for (bool keepdim : {false, true}) {
          std::vector<double> v;
          Tensor x = random_tensor(shape, dt, &v, layout);
          Tensor m = mean(x, dl(dims), keepdim);
          EXPECT_EQ(m.dtype(), dt);
          EXPECT_EQ(m.sizes(), reduced(shape, dims, keepdim));
          const double t = dt == kFloat32 ? 1e-6 : tolerance(dt);
          expect_close(m, reduce_ref(v, shape, dims, ref_mean), t, t, std::string("mean ") + name(dt) + layout);
        }
  std::vector<double> v;
  Tensor xi = random_tensor({4, 6}, kInt32, &v);
  EXPECT_THROW(mean(xi), kiln::Error);
  expect_close(mean(xi, {1}, false, kFloat64), reduce_ref(v, {4, 6}, {1}, ref_mean), 1e-12, 1e-12, "mean dtype");
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<float>()));
  // any / all over ints, floats (NaN counts as true) and bools.
  std::vector<double> b = {0, 0, 1, 0, 0, 0, 2, -1, std::nan(""), 0, 0, 0};
  for (DType dt : {kFloat64, kInt32, kBool}) {
    std::vector<double> bv = b;
    if (dt != kFloat64) bv[8] = 1;
    Tensor x = make(bv, {3, 4}).to(dt);
    for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {0}, {1}, {-1}}) {
      Tensor an = any(x, dl(dims)), al = all(x, dl(dims));
      EXPECT_EQ(an.dtype(), kBool);
      auto any_ref = [](const std::vector<double>& l) { return double(std::any_of(l.begin(), l.end(), [](double e) { return e != 0; })); };
      auto all_ref = [](const std::vector<double>& l) { return double(std::all_of(l.begin(), l.end(), [](double e) { return e != 0; })); };
      expect_close(an, reduce_ref(bv, {3, 4}, dims, any_ref), 0, 0, std::string("any ") + name(dt));
      expect_close(al, reduce_ref(bv, {3, 4}, dims, all_ref), 0, 0, std::string("all ") + name(dt));
    }
  }
  EXPECT_FALSE(any(zeros({0})).item<bool>());
  EXPECT_TRUE(all(zeros({0})).item<bool>());
  EXPECT_EQ(all(zeros({2, 3}), {1}, true).sizes(), (Shape{2, 1}));
}

TEST(ReductionOps, MaxMin) {
  const Shape shape{4, 3, 5};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kInt64})
    for (const auto& layout : kLayouts) {
      std::vector<double> v;
      Tensor x = random_tensor(shape, dt, &v, layout, -3, 3);
      expect_close(max(x), {ref_max(v)}, 0, 0, "max");
      expect_close(x.min(), {ref_min(v)}, 0, 0, "min");
      for (int64_t dim : {0, 1, -1})
        for (bool keepdim : {false, true}) {
          auto [mv, mi] = max(x, dim, keepdim);
          auto [nv, ni] = min(x, dim, keepdim);
          std::vector<double> rmv, rmi, rnv, rni;
          for (const auto& l : lines(v, shape, dim)) {
            rmv.push_back(ref_max(l));
            rmi.push_back(ref_argmax(l));
            rnv.push_back(ref_min(l));
            rni.push_back(ref_argmin(l));
          }
          EXPECT_EQ(mv.sizes(), reduced(shape, {dim}, keepdim));
          EXPECT_EQ(mi.dtype(), kInt64);
          expect_close(mv, rmv, 0, 0, "max.dim values");
          expect_close(mi, rmi, 0, 0, "max.dim indices");
          expect_close(nv, rnv, 0, 0, "min.dim values");
          expect_close(ni, rni, 0, 0, "min.dim indices");
        }
    }
  EXPECT_TRUE(std::isnan(max(make({1, std::nan(""), 3}, {3})).item<double>()));
  EXPECT_THROW(max(zeros({0})), kiln::Error);
  EXPECT_THROW(min(zeros({2, 0}), 1), kiln::Error);
  EXPECT_THROW(max(zeros({2, 3}), 2), kiln::Error);
}

TEST(ReductionOps, VarStdVarMean) {
  const Shape shape{3, 4, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const auto& layout : kLayouts)
      for (const auto& dims : kDimSets)
        for (std::optional<double> corr : {std::optional<double>(), std::optional<double>(0.0), std::optional<double>(2.0)})
          for (bool keepdim : {false, true}) {
            std::vector<double> v;
            Tensor x = random_tensor(shape, dt, &v, layout);
            const double c = corr.value_or(1.0);
            auto rv = reduce_ref(v, shape, dims, [&](const std::vector<double>& l) { return ref_var(l, c); });
            std::vector<double> rs;
            for (double e : rv) rs.push_back(std::sqrt(e));
            const double t = dt == kFloat32 ? 1e-5 : dt == kBFloat16 ? 3e-2 : 1e-12;
            Tensor va = var(x, dl(dims), corr, keepdim);
            EXPECT_EQ(va.sizes(), reduced(shape, dims, keepdim));
            EXPECT_EQ(va.dtype(), dt);
            expect_close(va, rv, t, t, "var");
            expect_close(x.std(dl(dims), corr, keepdim), rs, t, t, "std");
            auto [vv, vm] = var_mean(x, dl(dims), corr, keepdim);
            expect_close(vv, rv, t, t, "var_mean var");
            expect_close(vm, reduce_ref(v, shape, dims, ref_mean), t, t, "var_mean mean");
            EXPECT_EQ(vm.sizes(), reduced(shape, dims, keepdim));
          }
  // One element with the default correction: 0/0 = NaN (PyTorch); correction above N: inf.
  EXPECT_TRUE(std::isnan(var(make({2.0}, {1})).item<double>()));
  EXPECT_TRUE(std::isinf(var(make({2.0, 3.0}, {2}), std::nullopt, 3.0).item<double>()));
  EXPECT_THROW(var(zeros({3}, kInt32)), kiln::Error);
  EXPECT_THROW(kiln::std(zeros({3}), {1}), kiln::Error);
}

TEST(ReductionOps, Norm) {
  const Shape shape{3, 4, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const auto& layout : kLayouts)
      for (double p : {2.0, 1.0, double(INFINITY), -double(INFINITY), 0.0, 3.0, 0.5})
        for (const auto& dims : kDimSets)
          for (bool keepdim : {false, true}) {
            std::vector<double> v;
            Tensor x = random_tensor(shape, dt, &v, layout);
            if (p == 0) {  // some exact zeros
              x = round(x);
              v = x.to_vector<double>();
            }
            Tensor n = norm(x, Scalar(p), dl(dims), keepdim);
            EXPECT_EQ(n.sizes(), reduced(shape, dims, keepdim));
            EXPECT_EQ(n.dtype(), dt);
            const double t = dt == kFloat32 ? 1e-5 : tolerance(dt) * 2;
            expect_close(n, reduce_ref(v, shape, dims, [&](const std::vector<double>& l) { return ref_norm(l, p); }), t,
                         t, "norm p=" + std::to_string(p) + " " + name(dt));
          }
  std::vector<double> v;
  Tensor x = random_tensor({6}, kFloat64, &v);
  expect_close(norm(x), {ref_norm(v, 2)}, 1e-12, 0, "default p");
  EXPECT_EQ(norm(zeros({0})).item<float>(), 0.0f);
  EXPECT_THROW(norm(zeros({3}, kInt64)), kiln::Error);
}

TEST(ReductionOps, Logsumexp) {
  const Shape shape{3, 4, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16})
    for (const auto& layout : kLayouts)
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {-1}, {0, 2}, {}})
        for (bool keepdim : {false, true}) {
          std::vector<double> v;
          // Large values: a naive log(sum(exp)) overflows.
          Tensor x = random_tensor(shape, dt, &v, layout, 500, 800);
          Tensor r = logsumexp(x, dims, keepdim);
          EXPECT_EQ(r.sizes(), reduced(shape, dims, keepdim));
          const double t = dt == kFloat32 ? 1e-6 : tolerance(dt);
          expect_close(r, reduce_ref(v, shape, dims, ref_lse), t, t, std::string("logsumexp ") + name(dt));
        }
  // All -inf rows give -inf; a +inf gives +inf; NaN propagates.
  const double inf = INFINITY;
  std::vector<double> v = {-inf, -inf, -inf, 1, inf, 2, std::nan(""), 0, 1};
  Tensor r = logsumexp(make(v, {3, 3}), {1});
  std::vector<double> got = r.to_vector<double>();
  EXPECT_EQ(got[0], -inf);
  EXPECT_EQ(got[1], inf);
  EXPECT_TRUE(std::isnan(got[2]));
  // Integers are computed in the default float dtype.
  Tensor ri = logsumexp(tensor<int64_t>({1, 2, 3}), {0});
  EXPECT_EQ(ri.dtype(), kFloat32);
  expect_close(ri, {ref_lse({1, 2, 3})}, 1e-6, 0);
  EXPECT_EQ(logsumexp(zeros({0}), {0}).item<float>(), -INFINITY);
  EXPECT_THROW(logsumexp(zeros({2}), {1}), kiln::Error);
}

TEST(ReductionOps, CountNonzero) {
  for (DType dt : {kFloat32, kInt32, kBool}) {
    std::vector<double> v;
    Tensor x = random_tensor({4, 5, 3}, dt == kBool ? kBool : kInt32, &v, "transposed", -1, 1);
    x = x.to(dt);
    for (const auto& dims : kDimSets) {
      Tensor c = count_nonzero(x, dl(dims));
      EXPECT_EQ(c.dtype(), kInt64);
      expect_close(c, reduce_ref(v, {4, 5, 3}, dims, [](const std::vector<double>& l) { return ref_norm(l, 0); }), 0, 0,
                   "count_nonzero");
    }
  }
  EXPECT_EQ(count_nonzero(zeros({0})).item<int64_t>(), 0);
}

// ---------------------------------------------------------------- gradients

TEST(ReductionOpsGrad, All) {
  Tensor x = grad_input({3, 4});
  Tensor xt = grad_input({4, 3});
  Tensor b = grad_input({1, 3});
  auto nc = [](const Tensor& t) { return t.t(); };  // non-contiguous view inside the function
  for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {0}, {-1}}) {
    expect_gradcheck([&](const TensorList& in) { return TensorList{mean(in[0], dl(dims))}; }, {x}, "mean");
    expect_gradcheck([&](const TensorList& in) { return TensorList{var(in[0], dl(dims))}; }, {x}, "var");
    expect_gradcheck([&](const TensorList& in) { return TensorList{kiln::std(nc(in[0]), dl(dims), 0.0, true)}; }, {xt}, "std");
    expect_gradcheck([&](const TensorList& in) { auto [v, m] = var_mean(in[0], dl(dims)); return TensorList{v, m}; },
                     {x}, "var_mean");
    for (double p : {2.0, 1.0, double(INFINITY), -double(INFINITY), 3.0, 0.5})
      expect_gradcheck([&](const TensorList& in) { return TensorList{norm(nc(in[0]), Scalar(p), dl(dims))}; }, {xt},
                       "norm p=" + std::to_string(p));
  }
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {1}, {0, 1}})
    expect_gradcheck([&](const TensorList& in) { return TensorList{logsumexp(nc(in[0]), dims, true)}; }, {xt},
                     "logsumexp");
  expect_gradcheck([](const TensorList& in) { return TensorList{max(in[0]), min(in[0])}; }, {x}, "max/min");
  for (int64_t dim : {0, 1, -1})
    for (bool keepdim : {false, true})
      expect_gradcheck(
          [&](const TensorList& in) {
            return TensorList{std::get<0>(max(nc(in[0]), dim, keepdim)), std::get<0>(min(in[0] * 2.0, dim, keepdim))};
          },
          {xt}, "max.dim/min.dim");
  // Broadcast inputs.
  expect_gradcheck([](const TensorList& in) { return TensorList{var(in[0].expand({4, 3}) * in[0], {0})}; }, {b},
                   "var broadcast");
  expect_gradcheck([](const TensorList& in) { return TensorList{logsumexp(in[0].expand({4, 3}) + in[0], {1})}; }, {b},
                   "logsumexp broadcast");
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(max(in[0].expand({4, 3}) * in[0], 1))}; },
                   {b}, "max.dim broadcast");
  // max.dim with ties: the gradient goes only to the returned index (PyTorch), not split.
  Tensor t = make({1, 5, 5, 2}, {4});
  t.requires_grad_();
  std::get<0>(max(t, 0)).backward();
  expect_close(t.grad(), {0, 1, 0, 0}, 0, 0, "max.dim tie grad");
  // logsumexp's gradient on a row with -inf entries: softmax, zero where -inf.
  Tensor l = make({-INFINITY, 0, 0}, {3});
  l.requires_grad_();
  logsumexp(l, {0}).backward();
  expect_close(l.grad(), {0, 0.5, 0.5}, 1e-15, 0, "logsumexp -inf grad");
}

}  // namespace
