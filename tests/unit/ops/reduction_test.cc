// The reduction prims sum, prod, amax, amin, argmax, argmin against float64 loops.
#include "support/reduce_ref.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};
const std::vector<std::vector<int64_t>> kDimSets = {{}, {0}, {-1}, {1}, {0, 2}, {-1, 0}, {2, 1, 0}};

double tol_for(DType dt, int64_t n) {
  // 16-bit outputs are rounded once; float32 sums accumulate in double then round.
  return tolerance(dt) * (dt == kFloat32 ? 4 : 1) + (n > 1000 ? 1e-6 : 0);
}

TEST(Reduction, SumProdAminAmaxOverDims) {
  const Shape shape{3, 4, 5};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16})
    for (const auto& layout : kLayouts)
      for (const auto& dims : kDimSets)
        for (bool keepdim : {false, true}) {
          std::vector<double> v;
          // prod: values near 1 keep the product well scaled.
          Tensor x = random_tensor(shape, dt, &v, layout);
          std::vector<double> pv;
          Tensor xp = random_tensor(shape, dt, &pv, layout, 0.5, 1.5);
          const std::string what = std::string(name(dt)) + " " + layout + " dims " + std::to_string(dims.size()) +
                                   (keepdim ? " keepdim" : "");
          IntList d = dims.empty() ? IntList(std::nullopt) : IntList(dims);
          Tensor s = sum(x, d, keepdim), p = prod(xp, d, keepdim), mx = amax(x, d, keepdim), mn = amin(x, d, keepdim);
          EXPECT_EQ(s.sizes(), reduced(shape, dims, keepdim)) << what;
          EXPECT_EQ(s.dtype(), dt) << what;
          EXPECT_EQ(mx.sizes(), reduced(shape, dims, keepdim)) << what;
          EXPECT_EQ(p.dtype(), dt);
          const double t = tol_for(dt, 1);
          expect_close(s, reduce_ref(v, shape, dims, ref_sum), t, t * 10, "sum " + what);
          expect_close(p, reduce_ref(pv, shape, dims, ref_prod), t, t, "prod " + what);
          expect_close(mx, reduce_ref(v, shape, dims, ref_max), 0, 0, "amax " + what);
          expect_close(mn, reduce_ref(v, shape, dims, ref_min), 0, 0, "amin " + what);
        }
}

TEST(Reduction, EmptyDimListMeansAll) {
  std::vector<double> v;
  Tensor x = random_tensor({2, 3}, kFloat64, &v);
  expect_close(sum(x, std::vector<int64_t>{}), {ref_sum(v)}, 1e-12, 1e-12);
  EXPECT_EQ(sum(x, std::vector<int64_t>{}).dim(), 0);
  expect_close(amax(x, std::vector<int64_t>{}, true), {ref_max(v)}, 0, 0);
  EXPECT_EQ(amax(x, std::vector<int64_t>{}, true).sizes(), (Shape{1, 1}));
}

TEST(Reduction, ZeroDimTensor) {
  Tensor x = scalar_tensor(2.5, kFloat64);
  expect_close(sum(x), {2.5}, 0, 0);
  expect_close(sum(x, {0}), {2.5}, 0, 0);
  expect_close(prod(x, {-1}, true), {2.5}, 0, 0);
  expect_close(amax(x, {0}), {2.5}, 0, 0);
  expect_close(amin(x), {2.5}, 0, 0);
  EXPECT_EQ(argmax(x).item<int64_t>(), 0);
  EXPECT_EQ(argmin(x, 0).item<int64_t>(), 0);
  EXPECT_EQ(argmax(x, -1, true).dim(), 0);
  EXPECT_THROW(sum(x, {1}), kiln::Error);
}

TEST(Reduction, IntegerAndBoolPromoteToInt64) {
  for (DType dt : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64}) {
    std::vector<double> v;
    Tensor x = random_tensor({4, 6}, dt, &v, "transposed", -3, 3);
    if (dt == kUInt8) {
      x = abs(random_tensor({4, 6}, kInt16, nullptr, "contiguous", -3, 3)).to(kUInt8);
      v = x.to_vector<double>();
    }
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {1}, {0}}) {
      IntList d = dims.empty() ? IntList(std::nullopt) : IntList(dims);
      Tensor s = sum(x, d), p = prod(x, d);
      EXPECT_EQ(s.dtype(), kInt64) << name(dt);
      EXPECT_EQ(p.dtype(), kInt64) << name(dt);
      expect_close(s, reduce_ref(v, {4, 6}, dims, ref_sum), 0, 0, std::string("sum ") + name(dt));
      expect_close(p, reduce_ref(v, {4, 6}, dims, ref_prod), 0, 0, std::string("prod ") + name(dt));
      if (dt != kBool) {
        Tensor mx = amax(x, d), mn = amin(x, d);
        EXPECT_EQ(mx.dtype(), dt);
        expect_close(mx, reduce_ref(v, {4, 6}, dims, ref_max), 0, 0, std::string("amax ") + name(dt));
        expect_close(mn, reduce_ref(v, {4, 6}, dims, ref_min), 0, 0, std::string("amin ") + name(dt));
      }
    }
  }
  // Large int64 sums stay exact (no detour through float).
  Tensor big = tensor<int64_t>({int64_t(1) << 60, 1, 2});
  EXPECT_EQ(sum(big).item<int64_t>(), (int64_t(1) << 60) + 3);
}

TEST(Reduction, BoolAmaxAmin) {
  Tensor x = tensor<bool>({false, true, false, false}, {2, 2});
  EXPECT_EQ(amax(x, {1}).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(amin(x, {0}).to_vector<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(amax(x).dtype(), kBool);
}

TEST(Reduction, DtypeArgument) {
  std::vector<double> v;
  Tensor x = random_tensor({5, 7}, kFloat32, &v);
  Tensor s = sum(x, {1}, false, kFloat64);
  EXPECT_EQ(s.dtype(), kFloat64);
  expect_close(s, reduce_ref(v, {5, 7}, {1}, ref_sum), 1e-12, 1e-12);
  Tensor xi = random_tensor({5, 7}, kInt32, &v, "contiguous", -5, 5);
  Tensor si = sum(xi, std::nullopt, false, kFloat32);
  EXPECT_EQ(si.dtype(), kFloat32);
  expect_close(si, {ref_sum(v)}, 0, 0);
  Tensor pi = prod(xi, {0}, true, kFloat64);
  EXPECT_EQ(pi.dtype(), kFloat64);
  EXPECT_EQ(pi.sizes(), (Shape{1, 7}));
  expect_close(pi, reduce_ref(v, {5, 7}, {0}, ref_prod), 1e-12, 0);
  // A narrower dtype: the input is converted first, as PyTorch does.
  Tensor h = sum(x, {0}, false, kFloat16);
  EXPECT_EQ(h.dtype(), kFloat16);
  std::vector<double> hv16 = x.to(kFloat16).to_vector<double>();
  expect_close(h, reduce_ref(hv16, {5, 7}, {0}, ref_sum), 1e-3, 1e-3, "sum to float16");
}

TEST(Reduction, NanPropagates) {
  const double nan = std::nan("");
  std::vector<double> v = {1, nan, 3, -2, 5, 4, nan, 0, nan, 7, 1, 1};
  for (DType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    for (const char* layout : {"contiguous", "transposed"}) {
      Tensor x = make(v, {3, 4}, kFloat64);
      if (std::string(layout) == "transposed") x = make(v, {3, 4}).t().contiguous().t();
      x = x.to(dt);
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {1}}) {
        IntList d = dims.empty() ? IntList(std::nullopt) : IntList(dims);
        const std::string what = std::string(name(dt)) + " " + layout;
        expect_close(amax(x, d), reduce_ref(v, {3, 4}, dims, ref_max), 0, 0, "amax " + what);
        expect_close(amin(x, d), reduce_ref(v, {3, 4}, dims, ref_min), 0, 0, "amin " + what);
        expect_close(sum(x, d), reduce_ref(v, {3, 4}, dims, ref_sum), 0, 0, "sum " + what);
      }
      for (int64_t dim : {0, 1, -1}) {
        std::vector<double> ref_mx, ref_mn;
        for (const auto& l : lines(v, {3, 4}, dim)) {
          ref_mx.push_back(ref_argmax(l));
          ref_mn.push_back(ref_argmin(l));
        }
        expect_close(argmax(x, dim), ref_mx, 0, 0, "argmax");
        expect_close(argmin(x, dim), ref_mn, 0, 0, "argmin");
      }
      EXPECT_EQ(argmax(x).item<int64_t>(), 1);  // the first NaN in row-major order
      EXPECT_EQ(argmin(x).item<int64_t>(), 1);
    }
  }
}

TEST(Reduction, ArgmaxArgminDimsAndTies) {
  const Shape shape{4, 3, 5};
  for (DType dt : {kFloat32, kFloat64, kBFloat16, kInt32, kInt64, kUInt8})
    for (const auto& layout : kLayouts)
      for (int64_t dim : {0, 1, 2, -1, -3})
        for (bool keepdim : {false, true}) {
          std::vector<double> v;
          // Few distinct values: many ties, which must resolve to the first index.
          Tensor x = random_tensor(shape, dt == kUInt8 ? kInt16 : dt, &v, layout, 0, 3);
          if (is_floating(dt)) x = round(x);
          if (dt == kUInt8) x = x.to(kUInt8);
          v = x.to_vector<double>();
          std::vector<double> rmx, rmn;
          for (const auto& l : lines(v, shape, dim)) {
            rmx.push_back(ref_argmax(l));
            rmn.push_back(ref_argmin(l));
          }
          Tensor am = argmax(x, dim, keepdim), an = argmin(x, dim, keepdim);
          EXPECT_EQ(am.dtype(), kInt64);
          EXPECT_EQ(am.sizes(), reduced(shape, {dim}, keepdim));
          // lines() orders outputs as row-major over the remaining dims, like the output.
          const std::string what = std::string(name(dt)) + " " + layout + " dim " + std::to_string(dim);
          expect_close(am, rmx, 0, 0, "argmax " + what);
          expect_close(an, rmn, 0, 0, "argmin " + what);
        }
  // dim=None: the index into the flattened tensor.
  std::vector<double> v;
  Tensor x = random_tensor({6, 7}, kFloat32, &v, "transposed");
  EXPECT_EQ(argmax(x).item<int64_t>(), int64_t(ref_argmax(v)));
  EXPECT_EQ(argmin(x).item<int64_t>(), int64_t(ref_argmin(v)));
  EXPECT_EQ(argmax(x, std::nullopt, true).sizes(), (Shape{1, 1}));
  Tensor ties = tensor<float>({2, 5, 5, 1, 5});
  EXPECT_EQ(argmax(ties).item<int64_t>(), 1);
  Tensor tmin = tensor<float>({2, 1, 5, 1, 5});
  EXPECT_EQ(argmin(tmin).item<int64_t>(), 1);
}

TEST(Reduction, ZeroSize) {
  Tensor e = zeros({0}, kFloat32);
  EXPECT_EQ(sum(e).item<float>(), 0.0f);
  EXPECT_EQ(prod(e).item<float>(), 1.0f);
  EXPECT_EQ(sum(zeros({0}, kInt32)).dtype(), kInt64);
  Tensor e2 = zeros({2, 0, 3}, kFloat64);
  Tensor s = sum(e2, {1});
  EXPECT_EQ(s.sizes(), (Shape{2, 3}));
  expect_close(s, std::vector<double>(6, 0.0), 0, 0);
  Tensor p = prod(e2, {1}, true);
  EXPECT_EQ(p.sizes(), (Shape{2, 1, 3}));
  expect_close(p, std::vector<double>(6, 1.0), 0, 0);
  // Reducing a non-empty dim of an empty tensor is fine and gives an empty result.
  EXPECT_EQ(amax(e2, {2}).sizes(), (Shape{2, 0}));
  EXPECT_EQ(argmax(e2, 0).sizes(), (Shape{0, 3}));
  EXPECT_EQ(sum(e2, {0}).sizes(), (Shape{0, 3}));
  // No identity for max/min: an error, never garbage.
  EXPECT_THROW(amax(e), kiln::Error);
  EXPECT_THROW(amin(e2), kiln::Error);
  EXPECT_THROW(amax(e2, {1}), kiln::Error);
  EXPECT_THROW(amin(e2, {0, 1}), kiln::Error);
  EXPECT_THROW(argmax(e), kiln::Error);
  EXPECT_THROW(argmin(e2, 1), kiln::Error);
  EXPECT_THROW(argmax(e2), kiln::Error);
}

TEST(Reduction, BadDims) {
  Tensor x = zeros({2, 3});
  EXPECT_THROW(sum(x, {2}), kiln::Error);
  EXPECT_THROW(sum(x, {-3}), kiln::Error);
  EXPECT_THROW(prod(x, {0, 0}), kiln::Error);
  EXPECT_THROW(amax(x, {1, -1}), kiln::Error);
  EXPECT_THROW(argmax(x, 2), kiln::Error);
  EXPECT_THROW(argmin(x, -3), kiln::Error);
}

TEST(Reduction, LargeFullAndPerRow) {
  const int64_t n = 1000000;
  std::vector<double> v;
  Tensor x = random_tensor({n}, kFloat32, &v, "contiguous", -1, 1);
  expect_close(sum(x), {ref_sum(v)}, 1e-6, 1e-4, "sum 1e6");
  expect_close(amax(x), {ref_max(v)}, 0, 0, "amax 1e6");
  expect_close(amin(x), {ref_min(v)}, 0, 0, "amin 1e6");
  EXPECT_EQ(argmax(x).item<int64_t>(), int64_t(ref_argmax(v)));
  EXPECT_EQ(argmin(x).item<int64_t>(), int64_t(ref_argmin(v)));
  std::vector<double> pv;
  Tensor xp = random_tensor({n}, kFloat64, &pv, "contiguous", 0.999, 1.001);
  expect_close(prod(xp), {ref_prod(pv)}, 1e-10, 0, "prod 1e6");

  // Float32 sum of many equal values: a naive float accumulator would drift far off.
  Tensor ones_ = ones({n}, kFloat32);
  EXPECT_EQ(sum(ones_).item<float>(), float(n));
  // A 1000 x 1000 matrix, reduced along rows, along columns, and transposed in memory.
  const Shape shape{1000, 1000};
  Tensor m = random_tensor(shape, kFloat32, &v, "transposed");
  for (int64_t dim : {0, 1}) {
    expect_close(sum(m, {dim}), reduce_ref(v, shape, {dim}, ref_sum), 1e-6, 1e-5, "sum rows");
    expect_close(amax(m, {dim}), reduce_ref(v, shape, {dim}, ref_max), 0, 0, "amax rows");
    std::vector<double> ra;
    for (const auto& l : lines(v, shape, dim)) ra.push_back(ref_argmin(l));
    expect_close(argmin(m, dim), ra, 0, 0, "argmin rows");
  }
  // Few outputs, long rows: the split-and-merge path, with ties and NaNs across thread chunks.
  Tensor two = zeros({2, n / 2}, kFloat64);
  EXPECT_EQ(argmax(two, 1).to_vector<int64_t>(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(argmax(two).item<int64_t>(), 0);
  std::vector<double> w(size_t(n), 1.0);
  w[size_t(n) - 10] = std::nan("");
  w[size_t(n) - 5] = std::nan("");
  w[size_t(n) / 2 + 3] = 2.0;
  Tensor tw = make(w, {n});
  EXPECT_EQ(argmax(tw).item<int64_t>(), n - 10);
  EXPECT_EQ(argmin(tw).item<int64_t>(), n - 10);
  EXPECT_TRUE(std::isnan(amax(tw).item<double>()));
  EXPECT_TRUE(std::isnan(amin(tw.to(kBFloat16)).item<float>()));
  w[size_t(n) - 10] = w[size_t(n) - 5] = 0.5;
  tw = make(w, {n});
  EXPECT_EQ(argmax(tw).item<int64_t>(), n / 2 + 3);
  EXPECT_EQ(argmin(tw).item<int64_t>(), n - 10);
}

// ---------------------------------------------------------------- gradients

TEST(ReductionGrad, Sum) {
  Tensor x = grad_input({3, 4, 2});
  for (const auto& dims : kDimSets)
    for (bool keepdim : {false, true})
      expect_gradcheck([&](const TensorList& in) { return TensorList{sum(in[0], dims.empty() ? IntList(std::nullopt) : IntList(dims), keepdim)}; },
                       {x}, "sum");
  // Non-contiguous input, and a broadcast one (expand inside the function).
  Tensor y = grad_input({4, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{sum(in[0].t(), {1})}; }, {y}, "sum transposed");
  Tensor b = grad_input({1, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{sum(in[0].expand({4, 3}) * in[0], {0})}; }, {b},
                   "sum broadcast");
  // A float32 result: finite differences need a larger step (the function is linear).
  GradcheckOptions o;
  o.eps = 1e-2;
  o.atol = 1e-4;
  expect_gradcheck([](const TensorList& in) { return TensorList{sum(in[0], {0}, false, kFloat32).to(kFloat64)}; },
                   {y}, "sum dtype", o);
}

TEST(ReductionGrad, Prod) {
  Tensor x = grad_input({3, 4, 2}, 0.5, 1.5);
  for (const auto& dims : kDimSets)
    for (bool keepdim : {false, true})
      expect_gradcheck([&](const TensorList& in) { return TensorList{prod(in[0], dims.empty() ? IntList(std::nullopt) : IntList(dims), keepdim)}; },
                       {x}, "prod");
  Tensor y = grad_input({4, 3}, 0.5, 1.5);
  expect_gradcheck([](const TensorList& in) { return TensorList{prod(in[0].t(), {1})}; }, {y}, "prod transposed");
  expect_gradcheck([](const TensorList& in) { return TensorList{prod(in[0].slice(1, 0, std::nullopt, 2), {0}, true)}; },
                   {y}, "prod strided");
  Tensor b = grad_input({1, 3}, 0.5, 1.5);
  expect_gradcheck([](const TensorList& in) { return TensorList{prod(in[0].expand({4, 3}), {0})}; }, {b},
                   "prod broadcast");
}

TEST(ReductionGrad, ProdWithZeros) {
  // One zero in a row, two zeros in a row, zeros in different rows; all dims and one dim.
  std::vector<double> v = {0, 2, 3, 1.5,   // one zero
                           4, 0, 0, 2,     // two zeros
                           1.2, 0.7, 2, 3};
  for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {1}, {0}, {-1}})
    for (bool keepdim : {false, true}) {
      Tensor x = make(v, {3, 4});
      x.requires_grad_();
      expect_gradcheck([&](const TensorList& in) { return TensorList{prod(in[0], dims.empty() ? IntList(std::nullopt) : IntList(dims), keepdim)}; },
                       {x}, "prod zeros");
    }
  // Exact values: d prod / d x_i = product of the others.
  Tensor x = make({2, 0, 3}, {3});
  x.requires_grad_();
  prod(x).backward();
  expect_close(x.grad(), {0, 6, 0}, 0, 0, "one zero");
  Tensor z = make({0, 5, 0}, {3});
  z.requires_grad_();
  prod(z).backward();
  expect_close(z.grad(), {0, 0, 0}, 0, 0, "two zeros");
  // Non-contiguous with a zero.
  Tensor t = make({1, 2, 0, 4, 5, 6}, {3, 2});
  t.requires_grad_();
  expect_gradcheck([](const TensorList& in) { return TensorList{prod(in[0].t(), {1})}; }, {t}, "prod zeros transposed");
}

TEST(ReductionGrad, AmaxAminWithTies) {
  // Every tie is two-way (central differences see half of each tied element's share then).
  std::vector<double> v = {1, 3, 3, 0.5,   //
                           2, -2, 5, -2,   //
                           2, 4, 0, -3};
  for (const auto& dims : std::vector<std::vector<int64_t>>{{}, {1}, {0}, {0, 1}})
    for (bool keepdim : {false, true}) {
      Tensor x = make(v, {3, 4});
      x.requires_grad_();
      IntList d = dims.empty() ? IntList(std::nullopt) : IntList(dims);
      expect_gradcheck([&](const TensorList& in) { return TensorList{amax(in[0] * 1.0, d, keepdim)}; }, {x}, "amax");
      expect_gradcheck([&](const TensorList& in) { return TensorList{amin(in[0], d, keepdim)}; }, {x}, "amin");
    }
  // Ties split the gradient evenly, as PyTorch does.
  Tensor x = make({1, 3, 3, 0.5, 2, 2, 2, 2, -1, 4, 0, -3}, {3, 4});
  x.requires_grad_();
  amax(x, {1}).sum().backward();
  expect_close(x.grad(), {0, 0.5, 0.5, 0, 0.25, 0.25, 0.25, 0.25, 0, 1, 0, 0}, 1e-15, 0, "amax ties");
  Tensor y = grad_input({4, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{amax(in[0].t(), {1})}; }, {y}, "amax transposed");
  Tensor b = grad_input({1, 3});
  expect_gradcheck([](const TensorList& in) { return TensorList{amin(in[0].expand({4, 3}) + in[0] * 0.5, {1})}; }, {b},
                   "amin broadcast");
}

}  // namespace
