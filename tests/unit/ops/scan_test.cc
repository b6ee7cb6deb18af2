// The scan prims cumsum, cumprod, cummax, cummin against float64 loops, and their gradients.
#include "ops/dispatch.h"
#include "support/reduce_ref.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};

std::vector<double> scan_ref(const std::vector<double>& v, const Shape& shape, int64_t dim, bool is_sum) {
  std::vector<std::vector<double>> ls = lines(v, shape, dim);
  for (auto& l : ls) {
    double acc = is_sum ? 0 : 1;
    for (double& e : l) e = acc = is_sum ? acc + e : acc * e;
  }
  return unlines(ls, shape, dim, shape.empty() ? 1 : shape[size_t(wrap(dim, int64_t(shape.size())))]);
}

// cummax/cummin as PyTorch: a NaN takes over (each later NaN moves the index); ties take the later index.
void cum_extreme_ref(const std::vector<double>& v, const Shape& shape, int64_t dim, bool is_max,
                     std::vector<double>* values, std::vector<double>* indices) {
  std::vector<std::vector<double>> ls = lines(v, shape, dim), is = ls;
  for (size_t r = 0; r < ls.size(); ++r) {
    double best = 0;
    double at = 0;
    for (size_t k = 0; k < ls[r].size(); ++k) {
      const double e = ls[r][k];
      bool take = k == 0 || std::isnan(e);
      if (!take && !std::isnan(best)) take = is_max ? e >= best : e <= best;
      if (take) {
        best = e;
        at = double(k);
      }
      ls[r][k] = best;
      is[r][k] = at;
    }
  }
  const int64_t n = shape.empty() ? 1 : shape[size_t(wrap(dim, int64_t(shape.size())))];
  *values = unlines(ls, shape, dim, n);
  *indices = unlines(is, shape, dim, n);
}

TEST(Scan, CumsumCumprodFloat) {
  const Shape shape{3, 4, 5};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const auto& layout : kLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3}) {
        std::vector<double> v, pv;
        Tensor x = random_tensor(shape, dt, &v, layout);
        Tensor xp = random_tensor(shape, dt, &pv, layout, 0.5, 1.5);
        Tensor s = cumsum(x, dim), p = cumprod(xp, dim);
        EXPECT_EQ(s.dtype(), dt);
        EXPECT_EQ(s.sizes(), shape);
        const std::string what = std::string(name(dt)) + " " + layout + " dim " + std::to_string(dim);
        // Each output is rounded once from a double accumulator.
        const double t = dt == kFloat32 ? 1e-6 : tolerance(dt);
        expect_close(s, scan_ref(v, shape, dim, true), t, t * 4, "cumsum " + what);
        expect_close(p, scan_ref(pv, shape, dim, false), t, t, "cumprod " + what);
        // The method form.
        expect_close(x.cumsum(dim), scan_ref(v, shape, dim, true), t, t * 4, "cumsum method " + what);
      }
}

TEST(Scan, IntegersAndBool) {
  const Shape shape{4, 6};
  for (DType dt : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64})
    for (int64_t dim : {0, 1, -1}) {
      std::vector<double> v;
      Tensor x = random_tensor(shape, dt == kUInt8 ? kInt16 : dt, &v, "transposed", dt == kUInt8 ? 0 : -3, 3);
      if (dt == kUInt8) {
        x = x.to(kUInt8);
        v = x.to_vector<double>();
      }
      Tensor s = cumsum(x, dim), p = cumprod(x, dim);
      EXPECT_EQ(s.dtype(), kInt64) << name(dt);
      EXPECT_EQ(p.dtype(), kInt64) << name(dt);
      expect_close(s, scan_ref(v, shape, dim, true), 0, 0, std::string("cumsum ") + name(dt));
      expect_close(p, scan_ref(v, shape, dim, false), 0, 0, std::string("cumprod ") + name(dt));
      std::vector<double> rv, ri;
      cum_extreme_ref(v, shape, dim, true, &rv, &ri);
      auto [mv, mi] = cummax(x, dim);
      EXPECT_EQ(mv.dtype(), dt);
      EXPECT_EQ(mi.dtype(), kInt64);
      expect_close(mv, rv, 0, 0, std::string("cummax ") + name(dt));
      expect_close(mi, ri, 0, 0, std::string("cummax idx ") + name(dt));
      cum_extreme_ref(v, shape, dim, false, &rv, &ri);
      auto [nv, ni] = cummin(x, dim);
      expect_close(nv, rv, 0, 0, std::string("cummin ") + name(dt));
      expect_close(ni, ri, 0, 0, std::string("cummin idx ") + name(dt));
    }
  // int64 overflow wraps (two's complement) rather than being undefined.
  Tensor big = tensor<int64_t>({INT64_MAX, 1});
  EXPECT_EQ(cumsum(big, 0).to_vector<int64_t>()[1], INT64_MIN);
}

TEST(Scan, DtypeArgument) {
  std::vector<double> v;
  Tensor x = random_tensor({3, 5}, kInt32, &v, "contiguous", -4, 4);
  Tensor s = cumsum(x, 1, kFloat32);
  EXPECT_EQ(s.dtype(), kFloat32);
  expect_close(s, scan_ref(v, {3, 5}, 1, true), 0, 0, "cumsum int->float32");
  Tensor f = random_tensor({3, 5}, kFloat32, &v);
  Tensor p = cumprod(f, 0, kFloat64);
  EXPECT_EQ(p.dtype(), kFloat64);
  expect_close(p, scan_ref(v, {3, 5}, 0, false), 1e-12, 1e-12, "cumprod float32->float64");
  Tensor i = cumsum(f, 1, kInt32);  // converted (truncated) first, as PyTorch
  EXPECT_EQ(i.dtype(), kInt32);
  std::vector<double> tv = f.to(kInt32).to_vector<double>();
  expect_close(i, scan_ref(tv, {3, 5}, 1, true), 0, 0, "cumsum float->int32");
}

TEST(Scan, CummaxCumminTiesAndNan) {
  const double nan = std::nan("");
  const Shape shape{3, 6};
  std::vector<double> v = {1, 3, 3, 2, 3, 0,  //
                           2, nan, 5, nan, 1, 7,  //
                           -1, -1, -2, -2, -1, -3};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (int64_t dim : {0, 1}) {
      for (const char* layout : {"contiguous", "transposed"}) {
        Tensor x = make(v, shape);
        if (std::string(layout) == "transposed") x = make(v, shape).t().contiguous().t();
        x = x.to(dt);
        std::vector<double> rv, ri;
        const std::string what = std::string(name(dt)) + " " + layout + " dim " + std::to_string(dim);
        cum_extreme_ref(v, shape, dim, true, &rv, &ri);
        auto [mv, mi] = cummax(x, dim);
        expect_close(mv, rv, 0, 0, "cummax " + what);
        expect_close(mi, ri, 0, 0, "cummax idx " + what);
        cum_extreme_ref(v, shape, dim, false, &rv, &ri);
        auto [nv, ni] = x.cummin(dim);
        expect_close(nv, rv, 0, 0, "cummin " + what);
        expect_close(ni, ri, 0, 0, "cummin idx " + what);
      }
    }
  // Hand-checked against PyTorch's documented rule: ties take the later index.
  auto [tv, ti] = cummax(tensor<float>({1, 1, 0, 1}), 0);
  EXPECT_EQ(ti.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1, 3}));
}

TEST(Scan, CummaxRandomLayouts) {
  const Shape shape{4, 3, 5};
  for (DType dt : {kFloat32, kInt32})
    for (const auto& layout : kLayouts)
      for (int64_t dim : {0, 1, 2, -2}) {
        std::vector<double> v, rv, ri;
        Tensor x = random_tensor(shape, dt, &v, layout, -3, 3);
        const std::string what = std::string(name(dt)) + " " + layout + " dim " + std::to_string(dim);
        cum_extreme_ref(v, shape, dim, true, &rv, &ri);
        auto [mv, mi] = cummax(x, dim);
        expect_close(mv, rv, 0, 0, "cummax " + what);
        expect_close(mi, ri, 0, 0, "cummax idx " + what);
        cum_extreme_ref(v, shape, dim, false, &rv, &ri);
        auto [nv, ni] = cummin(x, dim);
        expect_close(nv, rv, 0, 0, "cummin " + what);
        expect_close(ni, ri, 0, 0, "cummin idx " + what);
      }
}

TEST(Scan, ZeroSizeAndZeroDim) {
  for (const Shape& shape : {Shape{0}, Shape{3, 0}, Shape{0, 4}}) {
    Tensor x = zeros(shape, kFloat32);
    for (int64_t dim = 0; dim < int64_t(shape.size()); ++dim) {
      EXPECT_EQ(cumsum(x, dim).sizes(), shape);
      EXPECT_EQ(cumprod(x, dim).sizes(), shape);
      auto [v, i] = cummax(x, dim);
      EXPECT_EQ(v.sizes(), shape);
      EXPECT_EQ(i.sizes(), shape);
      EXPECT_EQ(std::get<1>(cummin(x, dim)).dtype(), kInt64);
    }
  }
  Tensor s = scalar_tensor(3.5, kFloat64);
  expect_close(cumsum(s, 0), {3.5}, 0, 0);
  expect_close(cumprod(s, -1), {3.5}, 0, 0);
  EXPECT_EQ(cumsum(s, 0).dim(), 0);
  auto [v, i] = cummax(s, 0);
  expect_close(v, {3.5}, 0, 0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(cumsum(scalar_tensor(int64_t(2), kInt32), 0).dtype(), kInt64);
}

TEST(Scan, BadDim) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW(cumsum(x, 2), kiln::Error);
  EXPECT_THROW(cumprod(x, -3), kiln::Error);
  EXPECT_THROW(cummax(x, 5), kiln::Error);
  EXPECT_THROW(cummin(scalar_tensor(1.0), 1), kiln::Error);
}

TEST(Scan, Large) {
  const int64_t n = 1000000;
  std::vector<double> v;
  Tensor x = random_tensor({n}, kFloat32, &v, "contiguous", -1, 1);
  expect_close(cumsum(x, 0), scan_ref(v, {n}, 0, true), 1e-6, 1e-5, "cumsum 1e6");
  // Many short scans along an outer dim and many long ones along the inner dim.
  const Shape shape{1000, 1000};
  Tensor m = random_tensor(shape, kFloat64, &v, "transposed");
  for (int64_t dim : {0, 1}) {
    expect_close(cumsum(m, dim), scan_ref(v, shape, dim, true), 1e-12, 1e-11, "cumsum matrix");
    std::vector<double> rv, ri;
    cum_extreme_ref(v, shape, dim, true, &rv, &ri);
    auto [mv, mi] = cummax(m, dim);
    expect_close(mv, rv, 0, 0, "cummax matrix");
    expect_close(mi, ri, 0, 0, "cummax idx matrix");
  }
}

// ---------------------------------------------------------------- gradients

TEST(ScanGrad, Cumsum) {
  Tensor x = grad_input({3, 4, 2});
  for (int64_t dim : {0, 1, 2, -1})
    expect_gradcheck([&](const TensorList& in) { return TensorList{cumsum(in[0], dim)}; }, {x}, "cumsum");
  Tensor y = grad_input({4, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{cumsum(in[0].t(), 1)}; }, {y}, "cumsum transposed");
  Tensor b = grad_input({1, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{cumsum(in[0].expand({4, 3}), 0)}; }, {b},
                   "cumsum broadcast");
  Tensor s = scalar_tensor(1.5, kFloat64);
  s.requires_grad_();
  expect_gradcheck([](const TensorList& in) { return TensorList{cumsum(in[0], 0)}; }, {s}, "cumsum 0-d");
}

TEST(ScanGrad, Cumprod) {
  Tensor x = grad_input({3, 4, 2}, 0.5, 1.5);
  for (int64_t dim : {0, 1, 2, -1})
    expect_gradcheck([&](const TensorList& in) { return TensorList{cumprod(in[0], dim)}; }, {x}, "cumprod");
  Tensor y = grad_input({4, 3}, -1.5, 1.5);
  expect_gradcheck([](const TensorList& in) { return TensorList{cumprod(in[0].t(), 1)}; }, {y}, "cumprod transposed");
  Tensor b = grad_input({1, 3}, 0.5, 1.5);
  expect_gradcheck([](const TensorList& in) { return TensorList{cumprod(in[0].expand({4, 3}) * in[0], 0)}; }, {b},
                   "cumprod broadcast");
  expect_gradcheck([](const TensorList& in) { return TensorList{cumprod(in[0], 1, kFloat32).to(kFloat64)}; }, {y},
                   "cumprod dtype", GradcheckOptions{1e-3, 1e-3, 1e-2, 0});
}

TEST(ScanGrad, CumprodWithZeros) {
  // Lines with no zero, one zero (first, middle, last), two zeros (adjacent and apart), all zeros.
  std::vector<double> v = {1.5, -0.5, 2, 0.7, 1.2,  //
                           0, 1.5, 2, -1, 0.5,      //
                           1.5, 2, 0, 1.1, 0.9,     //
                           1.5, 2, -1.1, 0.8, 0,    //
                           1.3, 0, 0, 2, 1.1,       //
                           0, 1.2, 0.8, 0, 1.4,     //
                           0, 0, 0, 0, 0};
  for (int64_t dim : {1, 0}) {
    Tensor x = make(v, {7, 5});
    x.requires_grad_();
    expect_gradcheck([&](const TensorList& in) { return TensorList{cumprod(in[0], dim)}; }, {x},
                     "cumprod zeros dim " + std::to_string(dim));
  }
  // Exact values for one line: x = (2, 0, 3, 4), sum of outputs = 2 + 0 + 0 + 0.
  Tensor x = make({2, 0, 3, 4}, {4});
  x.requires_grad_();
  cumprod(x, 0).sum().backward();
  // d/dx0 = 1 + x1 + x1x2 + x1x2x3 = 1; d/dx1 = x0 + x0x2 + x0x2x3 = 2 + 6 + 24; others 0.
  expect_close(x.grad(), {1, 32, 0, 0}, 1e-15, 0, "cumprod zero grad");
  // Non-contiguous with zeros.
  Tensor t = make({1, 0, 2, 3, 0, 4, 0.5, 2, 1}, {3, 3});
  t.requires_grad_();
  expect_gradcheck([](const TensorList& in) { return TensorList{cumprod(in[0].t(), 1)}; }, {t},
                   "cumprod zeros transposed");
}

TEST(ScanGrad, CummaxCummin) {
  // Random values have no ties (finite differences at a tie see half of each side).
  Tensor x = grad_input({3, 4, 2});
  for (int64_t dim : {0, 1, -1}) {
    expect_gradcheck([&](const TensorList& in) { return TensorList{std::get<0>(cummax(in[0], dim))}; }, {x}, "cummax");
    expect_gradcheck([&](const TensorList& in) { return TensorList{std::get<0>(cummin(in[0], dim))}; }, {x}, "cummin");
  }
  Tensor y = grad_input({4, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(cummax(in[0].t(), 1))}; }, {y},
                   "cummax transposed");
  Tensor b = grad_input({1, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{std::get<0>(cummin(in[0].expand({4, 3}) * in[0], 1))}; },
                   {b}, "cummin broadcast");
}

}  // namespace

namespace {

// gradcheck evaluates fn under no-grad for finite differences; a first gradient needs grad mode.
TensorList grad_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  const bool prev = is_grad_enabled();
  set_grad_enabled(true);
  TensorList r = grad({f(x)}, {x}, {}, true, true);
  set_grad_enabled(prev);
  return r;
}

// The gradient of <w, cumprod(x)> as a function of x, differentiated again (second order).
TEST(ScanGrad, CumprodSecondOrder) {
  Tensor w = make({0.3, -1.2, 0.7, 2.0, 0.4}, {5});
  for (const std::vector<double>& v : {std::vector<double>{1.2, -0.7, 1.5, 0.9, 1.1},
                                       std::vector<double>{1.2, 0, 1.5, 0.9, 1.1},
                                       std::vector<double>{1.2, 0, 1.5, 0, 1.1},
                                       std::vector<double>{0, 0, 1.5, 0, 1.1},
                                       std::vector<double>{1.2, 0.5, 1.5, 0.9, 0}}) {
    Tensor x = make(v, {5});
    x.requires_grad_();
    expect_gradcheck(
        [&](const TensorList& in) {
          return grad_of([&](const Tensor& t) { return (cumprod(t, 0) * w).sum(); }, in[0]);
        },
        {x}, "cumprod second order");
    expect_gradcheck(
        [&](const TensorList& in) {
          return grad_of([&](const Tensor& t) { return (cumsum(t * t, 0) * w).sum(); }, in[0]);
        },
        {x}, "cumsum second order");
  }
}

}  // namespace
