// Pointwise composites (clamp, lerp, addcmul/addcdiv, square, logit, xlogy, nan_to_num,
// masked_fill, dropout, rsub, true_divide, float_power) vs float64 references, and gradients.
#include <kiln/autograd.h>

#include <functional>
#include <limits>

#include "ops/dispatch.h"
#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {
const std::vector<DType> kFloats = {kFloat32, kFloat64, kBFloat16, kFloat16};
const double kInf = std::numeric_limits<double>::infinity(), kNaN = std::numeric_limits<double>::quiet_NaN();

double tol_for(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 2 * tolerance(dt); }

std::vector<double> map1(const std::vector<double>& v, const std::function<double(double)>& f) {
  std::vector<double> r;
  for (double x : v) r.push_back(f(x));
  return r;
}

// Gradchecks f on contiguous inputs, then with the first input transposed.
void gradcheck_nary(const std::string& nm, const std::function<Tensor(const TensorList&)>& f,
                    const std::vector<Shape>& shapes, double lo, double hi) {
  TensorList in;
  for (const Shape& s : shapes) in.push_back(grad_input(s, lo, hi));
  expect_gradcheck([&](const TensorList& t) { return TensorList{f(t)}; }, in, nm);
  if (shapes[0].size() == 2) {
    TensorList tin = in;
    tin[0] = grad_input({shapes[0][1], shapes[0][0]}, lo, hi);
    expect_gradcheck([&](const TensorList& t) {
          TensorList u = t;
          u[0] = t[0].transpose(0, 1);
          return TensorList{f(u)};
        },
        tin, nm + " transposed");
  }
}
}  // namespace

TEST(Pointwise, Clamp) {
  for (DType dt : kFloats) {
    std::vector<double> xv;
    Tensor x = random_tensor({3, 4}, dt, &xv, "transposed", -3, 3);
    const double tol = tol_for(dt);
    auto cl = [](double v, double lo, double hi) { return std::min(std::max(v, lo), hi); };
    expect_close(clamp(x, -1.0, 1.5), map1(xv, [&](double v) { return cl(v, -1, 1.5); }), tol, tol, "clamp");
    expect_close(clamp(x, std::nullopt, 0.5), map1(xv, [&](double v) { return std::min(v, 0.5); }), tol, tol);
    expect_close(clamp(x, 0.5), map1(xv, [&](double v) { return std::max(v, 0.5); }), tol, tol);
    expect_close(clamp_min(x, -0.5), map1(xv, [&](double v) { return std::max(v, -0.5); }), tol, tol);
    expect_close(clamp_max(x, -0.5), map1(xv, [&](double v) { return std::min(v, -0.5); }), tol, tol);
    expect_close(clamp(x, 2.0, 1.0), map1(xv, [](double) { return 1.0; }), 0, 0, "min > max gives max");
    EXPECT_EQ(clamp(x, -1.0, 1.0).dtype(), dt);
  }
  expect_close(clamp(tensor<double>({kNaN, kInf, -kInf}), -1.0, 1.0), {kNaN, 1, -1}, 0, 0);
  Tensor i = tensor<int64_t>({-5, 0, 5});
  EXPECT_EQ(clamp(i, -2, 3).dtype(), kInt64);
  EXPECT_EQ(clamp(i, -2, 3).to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 3}));
  EXPECT_EQ(clamp(i, 0.5).dtype(), kFloat32);  // type promotion with a float bound
  expect_close(clamp(i, 0.5), {0.5, 0.5, 5}, 0, 0);
  EXPECT_THROW(clamp(i), Error);
  Tensor y = tensor<float>({-2, 0.5, 2});
  y.clamp_(-1, 1);
  expect_close(y, {-1, 0.5, 1}, 0, 0);
  y.clamp_min_(0.0);
  expect_close(y, {0, 0.5, 1}, 0, 0);
  EXPECT_EQ(clamp(zeros({0, 2}), 0, 1).sizes(), (Shape{0, 2}));
  gradcheck_nary("clamp", [](const TensorList& t) { return clamp(t[0], -1.0, 1.0); }, {{3, 4}}, -2, 2);
  gradcheck_nary("clamp_min", [](const TensorList& t) { return clamp_min(t[0], 0.3); }, {{3, 4}}, -2, 2);
  gradcheck_nary("clamp_max", [](const TensorList& t) { return clamp_max(t[0], 0.3); }, {{3, 4}}, -2, 2);
  // gradient 1 on the bounds (PyTorch's clamp_backward)
  Tensor b = tensor<double>({-1.0, 1.0, 2.0});
  b.requires_grad_();
  expect_close(grad({sum(clamp(b, -1.0, 1.0))}, {b})[0], {1, 1, 0}, 0, 0);
}

TEST(Pointwise, LerpAddcmulAddcdiv) {
  for (DType dt : kFloats) {
    std::vector<double> sv, ev, wv, t1, t2;
    Tensor s = random_tensor({3, 4}, dt, &sv, "strided"), e = random_tensor({4}, dt, &ev);
    Tensor w = random_tensor({3, 1}, dt, &wv, "contiguous", -0.5, 1.5);
    Tensor l = lerp(s, e, w);
    std::vector<double> ref;
    for (size_t i = 0; i < 12; ++i) ref.push_back(sv[i] + wv[i / 4] * (ev[i % 4] - sv[i]));
    expect_close(l, ref, tol_for(dt), 4 * tol_for(dt), std::string("lerp ") + name(dt));
    Tensor a = random_tensor({3, 4}, dt, &t1, "transposed"), c = random_tensor({4}, dt, &t2, "contiguous", 0.5, 2);
    std::vector<double> rm, rd;
    for (size_t i = 0; i < 12; ++i) {
      rm.push_back(sv[i] + 0.5 * t1[i] * t2[i % 4]);
      rd.push_back(sv[i] + 0.5 * t1[i] / t2[i % 4]);
    }
    expect_close(addcmul(s, a, c, 0.5), rm, tol_for(dt), 4 * tol_for(dt), std::string("addcmul ") + name(dt));
    expect_close(addcdiv(s, a, c, 0.5), rd, tol_for(dt), 4 * tol_for(dt), std::string("addcdiv ") + name(dt));
  }
  // lerp is exact at the end points
  Tensor s = tensor<double>({0.1, 1e10}), e = tensor<double>({0.3, -7.7});
  expect_close(lerp(s, e, ones({2}, kFloat64)), {0.3, -7.7}, 0, 0);
  expect_close(lerp(s, e, zeros({2}, kFloat64)), {0.1, 1e10}, 0, 0);
  // A Python-number weight: 1 - w in double (not a float32 wrapped result), and 0-d bfloat16 inputs
  // stay bfloat16 (no promotion by a 0-d intermediate).
  Tensor big_s = tensor<double>({-7831.808774, 1e4}), big_e = tensor<double>({4904.562111, -3e3});
  expect_close(lerp(big_s, big_e, ops::scalar_to_tensor(Scalar(0.9))),
               {-7831.808774 + 0.9 * (4904.562111 + 7831.808774), 1e4 + 0.9 * (-3e3 - 1e4)}, 1e-9, 1e-13,
               "lerp python weight");
  expect_close(lerp(big_s, big_e, ops::scalar_to_tensor(Scalar(0.2))),
               {-7831.808774 + 0.2 * (4904.562111 + 7831.808774), 1e4 + 0.2 * (-3e3 - 1e4)}, 1e-9, 1e-13);
  Tensor b0 = full({}, 1.0, kBFloat16);
  EXPECT_EQ(lerp(b0, b0, ops::scalar_to_tensor(Scalar(0.75))).dtype(), kBFloat16);
  EXPECT_THROW(addcdiv(zeros({2}), tensor<int64_t>({1, 2}), tensor<int64_t>({1, 2})), Error);
  EXPECT_THROW(lerp(tensor<int64_t>({1}), tensor<int64_t>({2}), tensor<double>({0.5})), Error);
  Tensor p = ones({2});
  p.addcmul_(tensor<float>({2, 3}), tensor<float>({4, 5}), 2);
  expect_close(p, {17, 31}, 0, 0);
  gradcheck_nary("lerp", [](const TensorList& t) { return lerp(t[0], t[1], t[2]); }, {{3, 4}, {4}, {3, 1}}, -1, 1.5);
  gradcheck_nary("addcmul", [](const TensorList& t) { return addcmul(t[0], t[1], t[2], 0.7); }, {{3, 4}, {3, 4}, {4}}, -2, 2);
  gradcheck_nary("addcdiv", [](const TensorList& t) { return addcdiv(t[0], t[1], t[2], -1.3); }, {{3, 4}, {1, 4}, {3, 1}}, 0.5, 2);
}

TEST(Pointwise, SquareLogitXlogy) {
  for (DType dt : kFloats) {
    std::vector<double> xv, pv, yv;
    Tensor x = random_tensor({3, 4}, dt, &xv, "transposed");
    expect_close(square(x), map1(xv, [](double v) { return v * v; }), tol_for(dt), tol_for(dt));
    Tensor p = random_tensor({3, 4}, dt, &pv, "strided", 0.01, 0.99);
    const double tol = dt == kFloat64 ? 1e-12 : 4 * tol_for(dt);
    expect_close(logit(p), map1(pv, [](double v) { return std::log(v / (1 - v)); }), tol, tol, "logit");
    expect_close(logit(p, 0.2), map1(pv, [](double v) {
                   v = std::min(std::max(v, 0.2), 0.8);
                   return std::log(v / (1 - v));
                 }), tol, tol, "logit eps");
    Tensor y = random_tensor({4}, dt, &yv, "contiguous", 0.1, 3);
    std::vector<double> ref;
    for (size_t i = 0; i < 12; ++i) ref.push_back(xv[i] * std::log(yv[i % 4]));
    expect_close(xlogy(x, y), ref, tol, tol, std::string("xlogy ") + name(dt));
    EXPECT_EQ(xlogy(x, y).dtype(), dt);
  }
  EXPECT_EQ(square(tensor<int32_t>({-3, 4})).to_vector<int64_t>(), (std::vector<int64_t>{9, 16}));
  EXPECT_EQ(square(tensor<int32_t>({-3})).dtype(), kInt32);
  EXPECT_EQ(square(tensor<bool>({true})).dtype(), kInt64);
  EXPECT_EQ(logit(tensor<int64_t>({0, 1})).dtype(), kFloat32);
  expect_close(logit(tensor<double>({0.0, 1.0, 0.5})), {-kInf, kInf, 0}, 0, 0);
  // xlogy: 0 where x == 0 whatever y is (0, inf), NaN where y is NaN; integer inputs give floats
  expect_close(xlogy(tensor<double>({0.0, 0.0, 0.0, 2.0, 1.0}), tensor<double>({0.0, kInf, kNaN, 0.0, -1.0})),
               {0, 0, kNaN, -kInf, kNaN}, 0, 0);
  EXPECT_EQ(xlogy(tensor<int64_t>({1, 2}), tensor<int64_t>({3, 4})).dtype(), kFloat32);
  expect_close(xlogy(tensor<int64_t>({1, 2}), Scalar(3)), {std::log(3.0), 2 * std::log(3.0)}, 1e-6, 0);
  gradcheck_nary("square", [](const TensorList& t) { return square(t[0]); }, {{3, 4}}, -2, 2);
  gradcheck_nary("logit", [](const TensorList& t) { return logit(t[0]); }, {{3, 4}}, 0.05, 0.95);
  gradcheck_nary("logit eps", [](const TensorList& t) { return logit(t[0], 0.1); }, {{3, 4}}, 0.15, 0.85);
  gradcheck_nary("xlogy", [](const TensorList& t) { return xlogy(t[0], t[1]); }, {{3, 4}, {4}}, 0.2, 2);
  // At x == 0 the x-gradient is log(y) (PyTorch), 0 where log(y) is not finite; no NaN/inf.
  Tensor x0 = tensor<double>({0.0, 0.0, 0.0, 0.0});
  x0.requires_grad_();
  Tensor g = grad({sum(xlogy(x0, tensor<double>({0.0, 2.0, -1.0, kInf})))}, {x0})[0];
  expect_close(g, {0, std::log(2.0), 0, 0}, 1e-15, 0, "xlogy grad at 0");
}

TEST(Pointwise, NanToNum) {
  const std::vector<std::pair<DType, double>> big = {{kFloat32, double(std::numeric_limits<float>::max())},
                                                     {kFloat64, std::numeric_limits<double>::max()},
                                                     {kFloat16, 65504.0},
                                                     {kBFloat16, 3.3895313892515355e38}};
  for (auto [dt, m] : big) {
    Tensor x = tensor<double>({kNaN, kInf, -kInf, 1.5}).to(dt);
    expect_close(nan_to_num(x), {0, m, -m, 1.5}, 0, 0, std::string("defaults ") + name(dt));
    expect_close(nan_to_num(x, 7.0, 100.0, -200.0), {7, 100, -200, 1.5}, 0, 0, name(dt));
    EXPECT_EQ(nan_to_num(x).dtype(), dt);
  }
  EXPECT_EQ(nan_to_num(tensor<int64_t>({1, -2})).to_vector<int64_t>(), (std::vector<int64_t>{1, -2}));
  // gradient flows where the input is finite only
  Tensor x = tensor<double>({kNaN, kInf, 2.0});
  x.requires_grad_();
  expect_close(grad({sum(nan_to_num(x))}, {x})[0], {0, 0, 1}, 0, 0);
  gradcheck_nary("nan_to_num", [](const TensorList& t) { return nan_to_num(t[0], 1.0); }, {{3, 4}}, -2, 2);
}

TEST(Pointwise, MaskedFill) {
  for (DType dt : kFloats) {
    std::vector<double> xv;
    Tensor x = random_tensor({3, 4}, dt, &xv, "transposed");
    Tensor m = tensor<bool>({true, false, false, true});  // broadcast over rows
    Tensor y = masked_fill(x, m, -0.5);
    EXPECT_EQ(y.dtype(), dt);
    std::vector<double> ref;
    for (size_t i = 0; i < 12; ++i) ref.push_back(i % 4 == 0 || i % 4 == 3 ? -0.5 : xv[i]);
    expect_close(y, ref, 0, 0, name(dt));
  }
  Tensor i = tensor<int32_t>({1, 2, 3});
  Tensor mi = tensor<bool>({false, true, false});
  EXPECT_EQ(masked_fill(i, mi, 9).dtype(), kInt32);
  EXPECT_EQ(masked_fill(i, mi, 9).to_vector<int64_t>(), (std::vector<int64_t>{1, 9, 3}));
  EXPECT_THROW(masked_fill(i, mi, 1.5), Error);
  EXPECT_THROW(masked_fill(i, tensor<int64_t>({0, 1, 0}), 1), Error);
  // Out of place, self broadcasts to the mask's shape (PyTorch's rule); in place it cannot grow.
  Tensor grown = masked_fill(zeros({3}), tensor<bool>({true, false}, {2, 1}), 1);
  EXPECT_EQ(grown.sizes(), (Shape{2, 3}));
  EXPECT_EQ(grown.to_vector<double>(), (std::vector<double>{1, 1, 1, 0, 0, 0}));
  Tensor small = zeros({3});
  EXPECT_THROW(small.masked_fill_(zeros({2, 3}, kBool), 1), Error);
  Tensor f = zeros({2, 2});
  f.masked_fill_(tensor<bool>({true, false}, {2, 1}), 3.0);
  expect_close(f, {3, 3, 0, 0}, 0, 0);
  Tensor mk = tensor<bool>({true, false, true, false, false, true, true, false, false, false, true, true}, {3, 4});
  gradcheck_nary("masked_fill", [&](const TensorList& t) { return masked_fill(t[0], mk, 2.0); }, {{3, 4}}, -2, 2);
  Tensor xg = ones({4}, kFloat64);
  xg.requires_grad_();
  expect_close(grad({sum(masked_fill(xg, tensor<bool>({true, false, true, false}), 5.0))}, {xg})[0], {0, 1, 0, 1}, 0, 0);
}

TEST(Pointwise, Dropout) {
  const int64_t n = 100000;
  Tensor x = add(rand({n}, kFloat64), Scalar(1.0));  // values in [1, 2): never zero
  std::vector<double> xv = x.to_vector<double>();
  for (double p : {0.1, 0.5, 0.8}) {
    manual_seed(42);
    Tensor y = dropout(x, p);
    manual_seed(42);
    Tensor y2 = dropout(x, p);
    std::vector<double> yv = y.to_vector<double>();
    EXPECT_EQ(yv, y2.to_vector<double>()) << "deterministic after manual_seed";
    int64_t zeros_n = 0;
    for (size_t i = 0; i < yv.size(); ++i) {
      if (yv[i] == 0) {
        ++zeros_n;
      } else {
        EXPECT_NEAR(yv[i], xv[i] / (1 - p), 1e-12) << "kept values are scaled by 1/(1-p)";
        if (std::abs(yv[i] - xv[i] / (1 - p)) > 1e-12) break;
      }
    }
    const double frac = double(zeros_n) / double(n);
    EXPECT_NEAR(frac, p, 0.01) << "fraction dropped for p=" << p;
    Tensor y3 = dropout(x, p);  // the generator advanced: a different mask
    EXPECT_NE(y3.to_vector<double>(), yv);
  }
  EXPECT_EQ(dropout(x, 0.5, false).to_vector<double>(), xv);
  EXPECT_EQ(dropout(x, 0.0).to_vector<double>(), xv);
  std::vector<double> z = dropout(x, 1.0).to_vector<double>();
  EXPECT_EQ(z, std::vector<double>(size_t(n), 0.0));
  EXPECT_THROW(dropout(x, 1.5), Error);
  EXPECT_THROW(dropout(x, -0.1), Error);
  for (DType dt : {kFloat32, kFloat16, kBFloat16}) EXPECT_EQ(dropout(ones({8}, dt), 0.5).dtype(), dt);
  // gradient = mask / (1 - p), i.e. y / x
  Tensor xs = add(rand({1000}, kFloat64), Scalar(1.0));
  xs.requires_grad_();
  Tensor y = dropout(xs, 0.3);
  Tensor g = grad({sum(y)}, {xs})[0];
  std::vector<double> gv = g.to_vector<double>(), ref = div(y, xs).detach().to_vector<double>();
  expect_close(g, ref, 1e-12, 0, "dropout grad");
  Tensor p1 = grad({sum(dropout(xs, 1.0))}, {xs})[0];
  expect_close(p1, std::vector<double>(1000, 0.0), 0, 0, "p=1 grad");
}

TEST(Pointwise, RsubTrueDivideFloatPower) {
  for (DType dt : kFloats) {
    std::vector<double> xv, yv;
    Tensor x = random_tensor({3, 4}, dt, &xv, "transposed"), y = random_tensor({4}, dt, &yv, "contiguous", 0.5, 2);
    std::vector<double> rs, td, fp;
    for (size_t i = 0; i < 12; ++i) {
      rs.push_back(yv[i % 4] - xv[i]);
      td.push_back(xv[i] / yv[i % 4]);
      fp.push_back(std::pow(yv[i % 4], xv[i]));
    }
    expect_close(rsub(x, y), rs, tol_for(dt), tol_for(dt), "rsub");
    expect_close(true_divide(x, y), td, tol_for(dt), tol_for(dt), "true_divide");
    Tensor f = float_power(y, x);
    EXPECT_EQ(f.dtype(), kFloat64);
    expect_close(f, fp, 1e-12, 1e-12, std::string("float_power ") + name(dt));
  }
  expect_close(rsub(tensor<double>({1, 2}), Scalar(5)), {4, 3}, 0, 0);
  EXPECT_EQ(true_divide(tensor<int64_t>({1, 3}), tensor<int64_t>({2, 2})).dtype(), kFloat32);
  expect_close(true_divide(tensor<int64_t>({1, 3}), Scalar(2)), {0.5, 1.5}, 0, 0);
  // float_power computes in float64, also for integers (negative exponents allowed)
  Tensor fp = float_power(tensor<int64_t>({2, 3}), Scalar(-1));
  EXPECT_EQ(fp.dtype(), kFloat64);
  expect_close(fp, {0.5, 1.0 / 3}, 1e-15, 0);
  expect_close(float_power(tensor<float>({3.0f}), Scalar(0.1)), {std::pow(3.0, 0.1)}, 1e-15, 0);
  gradcheck_nary("rsub", [](const TensorList& t) { return rsub(t[0], t[1]); }, {{3, 4}, {4}}, -2, 2);
  gradcheck_nary("true_divide", [](const TensorList& t) { return true_divide(t[0], t[1]); }, {{3, 4}, {4}}, 0.5, 2);
  gradcheck_nary("float_power", [](const TensorList& t) { return float_power(t[0], t[1]); }, {{3, 4}, {4}}, 0.5, 2);
  // float32 input: the float64 result's gradient comes back as float32
  Tensor a = tensor<float>({2.0f});
  a.requires_grad_();
  Tensor ga = grad({sum(float_power(a, Scalar(3)))}, {a})[0];
  EXPECT_EQ(ga.dtype(), kFloat32);
  expect_close(ga, {12}, 1e-6, 0);
}

TEST(Pointwise, SecondOrder) {
  auto check = [](const std::string& nm, const std::function<Tensor(const TensorList&)>& f, const std::vector<Shape>& shapes,
                  double lo, double hi) {
    TensorList in;
    for (const Shape& s : shapes) in.push_back(grad_input(s, lo, hi));
    Tensor v = random_tensor(f(in).sizes(), kFloat64);
    expect_gradcheck([&](const TensorList& t) {
          EnableGradGuard enable;
          return grad({sum(mul(f(t), v))}, t, {}, true, true);
        },
        in, nm + " second order");
  };
  check("lerp", [](const TensorList& t) { return lerp(t[0], t[1], t[2]); }, {{2, 3}, {3}, {2, 1}}, 0.1, 0.9);
  check("addcdiv", [](const TensorList& t) { return addcdiv(t[0], t[1], t[2], 0.5); }, {{2, 3}, {2, 3}, {3}}, 0.5, 2);
  check("logit", [](const TensorList& t) { return logit(t[0]); }, {{2, 3}}, 0.1, 0.9);
  check("xlogy", [](const TensorList& t) { return xlogy(t[0], t[1]); }, {{2, 3}, {3}}, 0.5, 2);
  check("square", [](const TensorList& t) { return square(t[0]); }, {{2, 3}}, -2, 2);
  check("float_power", [](const TensorList& t) { return float_power(t[0], t[1]); }, {{2, 3}, {3}}, 0.5, 2);
}
