// Elementwise prims: unary/binary math vs float64 references, type promotion, broadcasting,
// layouts, errors, where / convert_element_type / copy_, in-place methods, operators, gradients.
#include <kiln/autograd.h>

#include <cstdint>
#include <functional>
#include <limits>

#include "ops/dispatch.h"
#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const std::vector<DType> kFloats = {kFloat32, kFloat64, kBFloat16, kFloat16};
const std::vector<DType> kInts = {kUInt8, kInt8, kInt16, kInt32, kInt64};
const std::vector<std::string> kLayouts = {"contiguous", "transposed", "strided"};

// A tensor holding `vals` (logical order) in the given dtype and memory layout.
Tensor with_layout(const std::vector<double>& vals, const Shape& shape, DType dt, const std::string& layout) {
  Tensor base = make(vals, shape, kFloat64).to(dt);
  if (layout == "transposed" && shape.size() >= 2) return base.transpose(-1, -2).contiguous().transpose(-1, -2);
  if (layout == "strided" && !shape.empty()) {
    Shape big = shape;
    big.back() *= 2;
    Tensor v = zeros(big, dt).slice(-1, 0, std::nullopt, 2);
    v.copy_from(base);
    return v;
  }
  return base;
}

// Random values with magnitude in [lo, hi] and a random sign (divisors away from zero).
std::vector<double> signed_values(int64_t n, double lo, double hi) {
  std::vector<double> v = random_values(n, lo, hi);
  std::vector<double> s = random_values(n, -1, 1);
  for (size_t i = 0; i < v.size(); ++i) v[i] = s[i] < 0 ? -v[i] : v[i];
  return v;
}

std::vector<double> random_ints(int64_t n, int64_t lo, int64_t hi) {
  std::uniform_int_distribution<int64_t> u(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = double(u(rng()));
  return v;
}

// Reference broadcasting: out[i] = f(x[ix], y[iy]) over the broadcast shape.
std::vector<double> bcast(const std::vector<double>& x, const Shape& xs, const std::vector<double>& y, const Shape& ys,
                          const std::function<double(double, double)>& f, Shape* out_shape = nullptr) {
  const size_t nd = std::max(xs.size(), ys.size());
  Shape xp(nd, 1), yp(nd, 1), os(nd);
  std::copy(xs.begin(), xs.end(), xp.begin() + long(nd - xs.size()));
  std::copy(ys.begin(), ys.end(), yp.begin() + long(nd - ys.size()));
  for (size_t d = 0; d < nd; ++d) os[d] = xp[d] == 1 ? yp[d] : xp[d];
  if (out_shape) *out_shape = os;
  std::vector<double> out(size_t(numel(os)));
  std::vector<int64_t> idx(nd, 0);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t xi = 0, yi = 0;
    for (size_t d = 0; d < nd; ++d) {
      xi = xi * xp[d] + (xp[d] == 1 ? 0 : idx[d]);
      yi = yi * yp[d] + (yp[d] == 1 ? 0 : idx[d]);
    }
    out[i] = f(x[size_t(xi)], y[size_t(yi)]);
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < os[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// An integer value wrapped into dtype dt's range (two's complement), as C++ casts do.
double wrap_int(double v, DType dt) {
  const int64_t i = int64_t(v);
  switch (dt) {
    case kUInt8: return double(uint8_t(i));
    case kInt8: return double(int8_t(i));
    case kInt16: return double(int16_t(i));
    case kInt32: return double(int32_t(i));
    case kBool: return i != 0;
    default: return double(i);
  }
}

// Independent references for functions <cmath> lacks.
double ref_erfinv(double y) {
  if (y <= -1) return y == -1 ? -kInf : kNaN;
  if (y >= 1) return y == 1 ? kInf : kNaN;
  double lo = -7, hi = 7;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double ref_digamma(double x) {
  if (x == 0) return -kInf;
  if (x < 0 && x == std::floor(x)) return kNaN;
  if (x < 0.5) return ref_digamma(1 - x) - M_PI / std::tan(M_PI * x);
  double acc = 0;
  for (; x < 20; x += 1) acc -= 1 / x;
  const double z = 1 / (x * x);
  return acc + std::log(x) - 0.5 / x - z / 12 + z * z / 120 - z * z * z / 252 + z * z * z * z / 240;
}

double ref_round_half_even(double x) {
  double r = std::floor(x + 0.5);
  if (r - x == 0.5 && std::fmod(r, 2) != 0) r -= 1;
  return r;
}

double py_floordiv(double a, double b) { return std::floor(a / b); }
double py_mod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

struct UnaryCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double)> ref;
  double lo, hi;
  double tol64 = 1e-12;
};

#define UCASE(fn, ref, lo, hi) UnaryCase{#fn, [](const Tensor& t) { return fn(t); }, ref, lo, hi}

std::vector<UnaryCase> float_unary_cases() {
  auto c = [](double (*f)(double)) { return std::function<double(double)>(f); };
  std::vector<UnaryCase> v = {
      UCASE(exp, c(std::exp), -3, 3),        UCASE(exp2, c(std::exp2), -3, 3),
      UCASE(expm1, c(std::expm1), -2, 2),    UCASE(log, c(std::log), 0.1, 5),
      UCASE(log2, c(std::log2), 0.1, 5),     UCASE(log1p, c(std::log1p), -0.9, 3),
      UCASE(sqrt, c(std::sqrt), 0, 5),       UCASE(rsqrt, [](double x) { return 1 / std::sqrt(x); }, 0.1, 5),
      UCASE(reciprocal, [](double x) { return 1 / x; }, 0.2, 3),
      UCASE(sin, c(std::sin), -4, 4),        UCASE(cos, c(std::cos), -4, 4),
      UCASE(tan, c(std::tan), -1.2, 1.2),    UCASE(tanh, c(std::tanh), -3, 3),
      UCASE(asin, c(std::asin), -0.95, 0.95), UCASE(acos, c(std::acos), -0.95, 0.95),
      UCASE(atan, c(std::atan), -4, 4),      UCASE(sinh, c(std::sinh), -3, 3),
      UCASE(cosh, c(std::cosh), -3, 3),      UCASE(asinh, c(std::asinh), -4, 4),
      UCASE(acosh, c(std::acosh), 1.1, 5),   UCASE(atanh, c(std::atanh), -0.9, 0.9),
      UCASE(erf, c(std::erf), -3, 3),        UCASE(erfc, c(std::erfc), -3, 3),
      UCASE(erfinv, ref_erfinv, -0.95, 0.95),
      UCASE(sigmoid, [](double x) { return 1 / (1 + std::exp(-x)); }, -6, 6),
      UCASE(lgamma, c(std::lgamma), 0.1, 6), UCASE(digamma, ref_digamma, -3.7, 6),
  };
  for (auto& u : v)
    if (u.name == "erfinv" || u.name == "digamma") u.tol64 = 1e-10;
  return v;
}

}  // namespace

// ============================================================================ unary

TEST(ElementwiseUnary, FloatOpsAllDtypesAndLayouts) {
  for (const UnaryCase& u : float_unary_cases()) {
    for (DType dt : kFloats) {
      for (const std::string& layout : kLayouts) {
        std::vector<double> xv;
        Tensor x = random_tensor({3, 5}, dt, &xv, layout, u.lo, u.hi);
        Tensor y = u.op(x);
        EXPECT_EQ(y.dtype(), dt) << u.name;
        ASSERT_EQ(y.sizes(), (Shape{3, 5})) << u.name;
        std::vector<double> ref;
        for (double v : xv) ref.push_back(u.ref(v));
        // 16-bit results are rounded once more on storing; float32 allows a few ulps.
        double tol = dt == kFloat64 ? u.tol64 : dt == kFloat32 ? 1e-5 : tolerance(dt);
        if (u.name == "lgamma" || u.name == "digamma") tol *= 4;  // near their zeros
        expect_close(y, ref, tol, tol, u.name + " " + name(dt) + " " + layout);
      }
    }
  }
}

TEST(ElementwiseUnary, FloatOpsOnIntegersAndBoolGiveDefaultFloat) {
  for (const UnaryCase& u : float_unary_cases()) {
    for (DType dt : {kInt64, kInt32, kInt8, kBool}) {
      std::vector<double> xv = dt == kBool ? random_ints(6, 0, 1) : random_ints(6, int64_t(std::ceil(u.lo)), int64_t(std::floor(u.hi)));
      Tensor x = make(xv, {6}, kFloat64).to(dt);
      Tensor y = u.op(x);
      EXPECT_EQ(y.dtype(), kFloat32) << u.name << " " << name(dt);
      std::vector<double> ref;
      for (double v : xv) ref.push_back(double(float(u.ref(v))));
      expect_close(y, ref, 1e-5, 1e-5, u.name + " on " + name(dt));
    }
  }
}

TEST(ElementwiseUnary, SpecialValues) {
  Tensor x = tensor<double>({0.0, -0.0, kInf, -kInf, kNaN, 1.0, -1.0});
  expect_close(exp(x), {1, 1, kInf, 0, kNaN, std::exp(1.0), std::exp(-1.0)}, 1e-15, 0);
  expect_close(log(x), {-kInf, -kInf, kInf, kNaN, kNaN, 0, kNaN}, 1e-15, 0);
  expect_close(sqrt(x), {0, 0, kInf, kNaN, kNaN, 1, kNaN}, 1e-15, 0);
  expect_close(sigmoid(x), {0.5, 0.5, 1, 0, kNaN, 1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(1.0))}, 1e-15, 0);
  expect_close(erfinv(x), {0, 0, kNaN, kNaN, kNaN, kInf, -kInf}, 1e-15, 0);
  expect_close(reciprocal(tensor<float>({0.0f, -0.0f})), {kInf, -kInf}, 0, 0);
  // sigmoid saturates instead of overflowing in float32
  expect_close(sigmoid(tensor<float>({-100.0f, 100.0f})), {0, 1}, 0, 1e-30);
  expect_close(digamma(tensor<double>({0.0, -2.0, 1.0})), {-kInf, kNaN, -0.57721566490153286}, 1e-12, 1e-12);
}

TEST(ElementwiseUnary, SameDtypeOpsFloat) {
  std::vector<double> edge = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, -0.51, 3.7, -3.7, 0.0, 2.0};
  struct C {
    std::string name;
    std::function<Tensor(const Tensor&)> op;
    std::function<double(double)> ref;
  };
  std::vector<C> cases = {
      {"neg", [](const Tensor& t) { return neg(t); }, [](double v) { return -v; }},
      {"abs", [](const Tensor& t) { return abs(t); }, [](double v) { return std::fabs(v); }},
      {"sign", [](const Tensor& t) { return sign(t); }, [](double v) { return double((v > 0) - (v < 0)); }},
      {"floor", [](const Tensor& t) { return floor(t); }, [](double v) { return std::floor(v); }},
      {"ceil", [](const Tensor& t) { return ceil(t); }, [](double v) { return std::ceil(v); }},
      {"round", [](const Tensor& t) { return round(t); }, ref_round_half_even},
      {"trunc", [](const Tensor& t) { return trunc(t); }, [](double v) { return double(int64_t(v)); }},
  };
  for (auto& c : cases) {
    for (DType dt : kFloats) {
      for (const std::string& layout : kLayouts) {
        std::vector<double> xv;
        Tensor x = random_tensor({4, 3}, dt, &xv, layout, -4, 4);
        std::vector<double> ref;
        for (double v : xv) ref.push_back(c.ref(v));
        Tensor y = c.op(x);
        EXPECT_EQ(y.dtype(), dt);
        expect_close(y, ref, 0, 0, c.name + " " + name(dt) + " " + layout);
      }
      Tensor e = make(edge, {12}, kFloat64).to(dt);
      std::vector<double> ev = e.to_vector<double>(), ref;
      for (double v : ev) ref.push_back(c.ref(v));
      expect_close(c.op(e), ref, 0, 0, c.name + " edge " + name(dt));
    }
  }
  expect_close(sign(tensor<double>({kNaN, -kInf, kInf})), {kNaN, -1, 1}, 0, 0);
  expect_close(abs(tensor<double>({-kInf, kNaN})), {kInf, kNaN}, 0, 0);
}

TEST(ElementwiseUnary, SameDtypeOpsInteger) {
  for (DType dt : kInts) {
    const bool u8 = dt == kUInt8;
    std::vector<double> xv = random_ints(12, u8 ? 0 : -100, 100);
    Tensor x = with_layout(xv, {3, 4}, dt, "transposed");
    std::vector<double> r_neg, r_abs, r_sign;
    for (double v : xv) {
      r_neg.push_back(wrap_int(-v, dt));
      r_abs.push_back(std::fabs(v));
      r_sign.push_back(double((v > 0) - (v < 0)));
    }
    for (auto& [y, ref, nm] : std::vector<std::tuple<Tensor, std::vector<double>, std::string>>{
             {neg(x), r_neg, "neg"}, {abs(x), r_abs, "abs"}, {sign(x), r_sign, "sign"},
             {floor(x), xv, "floor"}, {ceil(x), xv, "ceil"}, {round(x), xv, "round"}, {trunc(x), xv, "trunc"}}) {
      EXPECT_EQ(y.dtype(), dt) << nm;
      expect_close(y, ref, 0, 0, nm + " " + name(dt));
    }
  }
}

TEST(ElementwiseUnary, PredicatesAndLogical) {
  std::vector<double> vals = {0.0, -1.5, kInf, -kInf, kNaN, 3.0};
  for (DType dt : kFloats) {
    Tensor x = make(vals, {6}, kFloat64).to(dt);
    EXPECT_EQ(isnan(x).dtype(), kBool);
    EXPECT_EQ(isnan(x).to_vector<bool>(), (std::vector<bool>{false, false, false, false, true, false}));
    EXPECT_EQ(isinf(x).to_vector<bool>(), (std::vector<bool>{false, false, true, true, false, false}));
    EXPECT_EQ(isfinite(x).to_vector<bool>(), (std::vector<bool>{true, true, false, false, false, true}));
    EXPECT_EQ(logical_not(x).to_vector<bool>(), (std::vector<bool>{true, false, false, false, false, false}));
  }
  for (DType dt : kInts) {
    Tensor x = tensor<int64_t>({0, 3, 7}).to(dt);
    EXPECT_EQ(isnan(x).to_vector<bool>(), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(isinf(x).to_vector<bool>(), (std::vector<bool>{false, false, false}));
    EXPECT_EQ(isfinite(x).to_vector<bool>(), (std::vector<bool>{true, true, true}));
    EXPECT_EQ(logical_not(x).to_vector<bool>(), (std::vector<bool>{true, false, false}));
    std::vector<double> ref;
    for (double v : {0.0, 3.0, 7.0}) ref.push_back(wrap_int(double(~int64_t(v)), dt));
    EXPECT_EQ(bitwise_not(x).dtype(), dt);
    expect_close(bitwise_not(x), ref, 0, 0, std::string("bitwise_not ") + name(dt));
  }
  Tensor b = tensor<bool>({true, false});
  EXPECT_EQ(bitwise_not(b).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ((~b).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(logical_not(b).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_THROW(bitwise_not(tensor<float>({1.0f})), Error);
  EXPECT_THROW(neg(b), Error);
}

TEST(ElementwiseUnary, ZeroSizeAndZeroDim) {
  for (DType dt : kFloats) {
    Tensor e = zeros({2, 0, 3}, dt);
    Tensor y = exp(e);
    EXPECT_EQ(y.sizes(), (Shape{2, 0, 3}));
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(isnan(e).sizes(), (Shape{2, 0, 3}));
    Tensor s = scalar_tensor(0.5, dt);
    EXPECT_EQ(sin(s).dim(), 0);
    expect_close(sin(s), {std::sin(0.5)}, tolerance(dt), tolerance(dt));
  }
}

// ============================================================================ binary

namespace {
struct BinaryCase {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<double(double, double)> ref;
  double xlo, xhi, ylo, yhi;
  bool signed_y = false;  // y magnitude in [ylo, yhi] with random sign
};

std::vector<BinaryCase> float_binary_cases() {
  return {
      {"add", [](auto& x, auto& y) { return add(x, y); }, [](double a, double b) { return a + b; }, -2, 2, -2, 2},
      {"sub", [](auto& x, auto& y) { return sub(x, y); }, [](double a, double b) { return a - b; }, -2, 2, -2, 2},
      {"mul", [](auto& x, auto& y) { return mul(x, y); }, [](double a, double b) { return a * b; }, -2, 2, -2, 2},
      {"div", [](auto& x, auto& y) { return div(x, y); }, [](double a, double b) { return a / b; }, -2, 2, 0.25, 2, true},
      {"div_trunc", [](auto& x, auto& y) { return div(x, y, "trunc"); }, [](double a, double b) { return std::trunc(a / b); }, -4, 4, 0.25, 2, true},
      {"div_floor", [](auto& x, auto& y) { return div(x, y, "floor"); }, py_floordiv, -4, 4, 0.25, 2, true},
      {"floor_divide", [](auto& x, auto& y) { return floor_divide(x, y); }, py_floordiv, -4, 4, 0.25, 2, true},
      {"remainder", [](auto& x, auto& y) { return remainder(x, y); }, py_mod, -4, 4, 0.25, 2, true},
      {"fmod", [](auto& x, auto& y) { return fmod(x, y); }, [](double a, double b) { return std::fmod(a, b); }, -4, 4, 0.25, 2, true},
      {"pow", [](auto& x, auto& y) { return pow(x, y); }, [](double a, double b) { return std::pow(a, b); }, 0.1, 3, -2, 2},
      {"maximum", [](auto& x, auto& y) { return maximum(x, y); }, [](double a, double b) { return std::max(a, b); }, -2, 2, -2, 2},
      {"minimum", [](auto& x, auto& y) { return minimum(x, y); }, [](double a, double b) { return std::min(a, b); }, -2, 2, -2, 2},
      {"atan2", [](auto& x, auto& y) { return atan2(x, y); }, [](double a, double b) { return std::atan2(a, b); }, -2, 2, -2, 2},
      {"hypot", [](auto& x, auto& y) { return hypot(x, y); }, [](double a, double b) { return std::sqrt(a * a + b * b); }, -2, 2, -2, 2},
      {"copysign", [](auto& x, auto& y) { return copysign(x, y); }, [](double a, double b) { return std::signbit(b) ? -std::fabs(a) : std::fabs(a); }, -2, 2, -2, 2},
  };
}

// x, y in dtype dt with the given shapes/layouts; checks op(x, y) against ref over broadcasting.
void check_binary(const BinaryCase& c, DType dt, const Shape& xs, const Shape& ys, const std::string& layout) {
  std::vector<double> xv0 = random_values(numel(xs), c.xlo, c.xhi);
  std::vector<double> yv0 = c.signed_y ? signed_values(numel(ys), c.ylo, c.yhi) : random_values(numel(ys), c.ylo, c.yhi);
  Tensor x = with_layout(xv0, xs, dt, layout), y = with_layout(yv0, ys, dt, layout);
  std::vector<double> xv = x.to_vector<double>(), yv = y.to_vector<double>();
  Shape os;
  std::vector<double> ref = bcast(xv, xs, yv, ys, c.ref, &os);
  Tensor out = c.op(x, y);
  const std::string what = c.name + " " + name(dt) + " " + shape_str(xs) + "x" + shape_str(ys) + " " + layout;
  EXPECT_EQ(out.dtype(), dt) << what;
  EXPECT_EQ(out.sizes(), os) << what;
  const double tol = dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : tolerance(dt);
  expect_close(out, ref, tol, tol, what);
}
}  // namespace

TEST(ElementwiseBinary, FloatOpsDtypesLayoutsBroadcasting) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5}, {3, 5}}, {{2, 3, 5}, {5}}, {{3, 1}, {1, 5}}, {{4, 1, 5}, {3, 1}}, {{0, 5}, {1, 5}}, {{}, {2, 3}}};
  for (const BinaryCase& c : float_binary_cases())
    for (DType dt : kFloats)
      for (const auto& [xs, ys] : shapes)
        for (const std::string& layout : kLayouts) check_binary(c, dt, xs, ys, layout);
}

TEST(ElementwiseBinary, NextafterAndSpecialValues) {
  Tensor a = tensor<double>({1.0, 1.0, 0.0, -2.0});
  Tensor b = tensor<double>({2.0, 0.0, -1.0, -2.0});
  expect_close(nextafter(a, b), {std::nextafter(1.0, 2.0), std::nextafter(1.0, 0.0), -std::numeric_limits<double>::denorm_min(), -2.0}, 0, 0);
  Tensor af = a.to(kFloat32), bf = b.to(kFloat32);
  Tensor nf = nextafter(af, bf);
  EXPECT_EQ(nf.dtype(), kFloat32);
  expect_close(nf, {double(std::nextafter(1.0f, 2.0f)), double(std::nextafter(1.0f, 0.0f)),
                    -double(std::numeric_limits<float>::denorm_min()), -2.0}, 0, 0);
  // 16-bit floats step to their own neighbours (10 and 7 mantissa bits)
  Tensor one = tensor<double>({1.0, 1.0, 0.0, 65504.0, kInf, 3.0});
  Tensor to = tensor<double>({2.0, 0.0, -1.0, kInf, 0.0, 3.0});
  expect_close(nextafter(one.to(kFloat16), to.to(kFloat16)),
               {1 + std::ldexp(1.0, -10), 1 - std::ldexp(1.0, -11), -std::ldexp(1.0, -24), kInf, 65504, 3}, 0, 0, "f16");
  Tensor nb = nextafter(one.to(kBFloat16).slice(0, 0, 3), to.to(kBFloat16).slice(0, 0, 3));
  EXPECT_EQ(nb.dtype(), kBFloat16);
  expect_close(nb, {1 + std::ldexp(1.0, -7), 1 - std::ldexp(1.0, -8), -std::ldexp(1.0, -133)}, 0, 0, "bf16");
  EXPECT_TRUE(std::isnan(nextafter(tensor<double>({kNaN}).to(kFloat16), tensor<double>({1.0}).to(kFloat16)).item<double>()));
  // NaN propagates through maximum/minimum (unlike fmax)
  Tensor n = tensor<double>({kNaN, 1.0, 2.0}), m = tensor<double>({0.0, kNaN, 1.0});
  expect_close(maximum(n, m), {kNaN, kNaN, 2}, 0, 0);
  expect_close(minimum(n, m), {kNaN, kNaN, 1}, 0, 0);
  // float division by zero follows IEEE, also with rounding modes
  Tensor pm = tensor<double>({1.0, -1.0, 0.0}), zero = tensor<double>({0.0, 0.0, 0.0});
  expect_close(div(pm, zero), {kInf, -kInf, kNaN}, 0, 0);
  expect_close(div(pm, zero, "floor"), {kInf, -kInf, kNaN}, 0, 0);
  expect_close(div(pm, zero, "trunc"), {kInf, -kInf, kNaN}, 0, 0);
  expect_close(floor_divide(pm, zero), {kInf, -kInf, kNaN}, 0, 0);
  expect_close(remainder(pm, zero), {kNaN, kNaN, kNaN}, 0, 0);
  // pow: 0^0 = 1, negative base with integral exponent
  expect_close(pow(tensor<double>({0.0, -2.0, -8.0}), tensor<double>({0.0, 3.0, 1.0 / 3})), {1, -8, kNaN}, 0, 0);
  EXPECT_THROW(div(pm, zero, "round"), Error);
}

TEST(ElementwiseBinary, PythonSemanticsForNegativeOperands) {
  std::vector<double> xs = {7, -7, 7, -7, 6, -6, 0, 5};
  std::vector<double> ys = {2, 2, -2, -2, 3, 3, 3, -5};
  for (DType dt : {kInt8, kInt16, kInt32, kInt64, kFloat32, kFloat64, kBFloat16, kFloat16}) {
    Tensor x = make(xs, {8}, kFloat64).to(dt), y = make(ys, {8}, kFloat64).to(dt);
    std::vector<double> fd, md, fm, tr;
    for (size_t i = 0; i < xs.size(); ++i) {
      fd.push_back(std::floor(xs[i] / ys[i]));
      md.push_back(xs[i] - std::floor(xs[i] / ys[i]) * ys[i]);
      fm.push_back(std::fmod(xs[i], ys[i]));
      tr.push_back(std::trunc(xs[i] / ys[i]));
    }
    const std::string nm = name(dt);
    expect_close(floor_divide(x, y), fd, 0, 0, "floor_divide " + nm);
    expect_close(div(x, y, "floor"), fd, 0, 0, "div floor " + nm);
    expect_close(div(x, y, "trunc"), tr, 0, 0, "div trunc " + nm);
    expect_close(remainder(x, y), md, 0, 0, "remainder " + nm);
    expect_close(fmod(x, y), fm, 0, 0, "fmod " + nm);
    EXPECT_EQ(floor_divide(x, y).dtype(), dt);
    EXPECT_EQ(remainder(x, y).dtype(), dt);
    // true division of integers gives the default float dtype
    EXPECT_EQ(div(x, y).dtype(), is_floating(dt) ? dt : kFloat32);
  }
  // float remainder keeps the divisor's sign for fractional values too
  expect_close(remainder(tensor<double>({-7.5, 7.5}), Scalar(2.0)), {0.5, 1.5}, 1e-15, 0);
  expect_close(remainder(tensor<double>({-7.5, 7.5}), Scalar(-2.0)), {-1.5, -0.5}, 1e-15, 0);
  expect_close(floor_divide(tensor<double>({-7.5, 7.5}), Scalar(2.0)), {-4, 3}, 0, 0);
}

TEST(ElementwiseBinary, IntegerDivisionByZeroThrows) {
  for (DType dt : kInts) {
    Tensor x = tensor<int64_t>({1, 2, 3}).to(dt), y = tensor<int64_t>({1, 0, 2}).to(dt);
    EXPECT_THROW(div(x, y, "trunc"), Error) << name(dt);
    EXPECT_THROW(div(x, y, "floor"), Error) << name(dt);
    EXPECT_THROW(floor_divide(x, y), Error) << name(dt);
    EXPECT_THROW(remainder(x, y), Error) << name(dt);
    EXPECT_THROW(fmod(x, y), Error) << name(dt);
    EXPECT_THROW(floor_divide(x, Scalar(0)), Error) << name(dt);
    // true division goes through floats: inf, no error
    expect_close(div(x, y), {1, kInf, 1.5}, 0, 0);
  }
  // the most negative integer divided by -1 must not crash
  Tensor m = tensor<int64_t>({std::numeric_limits<int64_t>::min()});
  EXPECT_EQ(floor_divide(m, Scalar(-1)).item<int64_t>(), std::numeric_limits<int64_t>::min());  // wraps
  EXPECT_EQ(div(m, Scalar(-1), "trunc").item<int64_t>(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(remainder(m, Scalar(-1)).item<int64_t>(), 0);
  EXPECT_EQ(fmod(m, Scalar(-1)).item<int64_t>(), 0);
}

TEST(ElementwiseBinary, IntegerOps) {
  struct C {
    std::string name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<double(int64_t, int64_t)> ref;
    bool nonzero_y = false, nonneg_y = false, small_y = false;
  };
  std::vector<C> cases = {
      {"add", [](auto& x, auto& y) { return add(x, y); }, [](int64_t a, int64_t b) { return double(a + b); }},
      {"sub", [](auto& x, auto& y) { return sub(x, y); }, [](int64_t a, int64_t b) { return double(a - b); }},
      {"mul", [](auto& x, auto& y) { return mul(x, y); }, [](int64_t a, int64_t b) { return double(a * b); }},
      {"div_trunc", [](auto& x, auto& y) { return div(x, y, "trunc"); }, [](int64_t a, int64_t b) { return double(a / b); }, true},
      {"floor_divide", [](auto& x, auto& y) { return floor_divide(x, y); }, [](int64_t a, int64_t b) { return std::floor(double(a) / double(b)); }, true},
      {"remainder", [](auto& x, auto& y) { return remainder(x, y); }, [](int64_t a, int64_t b) { return py_mod(double(a), double(b)); }, true},
      {"fmod", [](auto& x, auto& y) { return fmod(x, y); }, [](int64_t a, int64_t b) { return double(a % b); }, true},
      {"pow", [](auto& x, auto& y) { return pow(x, y); }, [](int64_t a, int64_t b) { return std::pow(double(a), double(b)); }, false, true, true},
      {"maximum", [](auto& x, auto& y) { return maximum(x, y); }, [](int64_t a, int64_t b) { return double(std::max(a, b)); }},
      {"minimum", [](auto& x, auto& y) { return minimum(x, y); }, [](int64_t a, int64_t b) { return double(std::min(a, b)); }},
      {"bitwise_and", [](auto& x, auto& y) { return bitwise_and(x, y); }, [](int64_t a, int64_t b) { return double(a & b); }},
      {"bitwise_or", [](auto& x, auto& y) { return bitwise_or(x, y); }, [](int64_t a, int64_t b) { return double(a | b); }},
      {"bitwise_xor", [](auto& x, auto& y) { return bitwise_xor(x, y); }, [](int64_t a, int64_t b) { return double(a ^ b); }},
      {"shift_left", [](auto& x, auto& y) { return shift_left(x, y); }, [](int64_t a, int64_t b) { return double(a * (int64_t(1) << b)); }, false, true, true},
      {"shift_right_arithmetic", [](auto& x, auto& y) { return shift_right_arithmetic(x, y); },
       [](int64_t a, int64_t b) { return std::floor(double(a) / double(int64_t(1) << b)); }, false, true, true},
  };
  for (auto& c : cases) {
    for (DType dt : kInts) {
      const bool u8 = dt == kUInt8;
      std::vector<double> xv = random_ints(20, u8 ? 0 : -10, 10);
      std::vector<double> yv = c.small_y ? random_ints(5, 0, 3) : random_ints(5, (u8 || c.nonneg_y) ? 0 : -10, 10);
      for (double& v : yv)
        if (c.nonzero_y && v == 0) v = 3;
      Tensor x = with_layout(xv, {4, 5}, dt, "transposed"), y = with_layout(yv, {5}, dt, "strided");
      std::vector<double> ref = bcast(xv, {4, 5}, yv, {5}, [&](double a, double b) {
        return wrap_int(c.ref(int64_t(a), int64_t(b)), dt);
      });
      Tensor out = c.op(x, y);
      EXPECT_EQ(out.dtype(), dt) << c.name;
      expect_close(out, ref, 0, 0, c.name + " " + name(dt));
    }
  }
  // shifts past the width: left gives 0, arithmetic right gives the sign
  Tensor v = tensor<int32_t>({5, -5, 1});
  EXPECT_EQ(shift_left(v, Scalar(40)).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(shift_right_arithmetic(v, Scalar(40)).to_vector<int64_t>(), (std::vector<int64_t>{0, -1, 0}));
  // integers to negative powers: an error for a scalar exponent, as in PyTorch
  EXPECT_THROW(pow(tensor<int64_t>({2, 3}), Scalar(-1)), Error);
  // ... but a tensor of exponents may hold negative ones (PyTorch: 1, -1 or 0)
  EXPECT_EQ(pow(tensor<int64_t>({2, 1, -1, -1}), tensor<int64_t>({-1, -2, -3, -2})).to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, -1, 1}));
  EXPECT_THROW(bitwise_and(tensor<float>({1.0f}), tensor<float>({1.0f})), Error);
  EXPECT_THROW(shift_left(tensor<double>({1.0}), Scalar(1)), Error);
}

TEST(ElementwiseBinary, ComparisonsAndLogical) {
  struct C {
    std::string name;
    std::function<Tensor(const Tensor&, const Tensor&)> op;
    std::function<bool(double, double)> ref;
  };
  std::vector<C> cases = {
      {"eq", [](auto& x, auto& y) { return eq(x, y); }, [](double a, double b) { return a == b; }},
      {"ne", [](auto& x, auto& y) { return ne(x, y); }, [](double a, double b) { return a != b; }},
      {"lt", [](auto& x, auto& y) { return lt(x, y); }, [](double a, double b) { return a < b; }},
      {"le", [](auto& x, auto& y) { return le(x, y); }, [](double a, double b) { return a <= b; }},
      {"gt", [](auto& x, auto& y) { return gt(x, y); }, [](double a, double b) { return a > b; }},
      {"ge", [](auto& x, auto& y) { return ge(x, y); }, [](double a, double b) { return a >= b; }},
      {"logical_and", [](auto& x, auto& y) { return logical_and(x, y); }, [](double a, double b) { return a != 0 && b != 0; }},
      {"logical_or", [](auto& x, auto& y) { return logical_or(x, y); }, [](double a, double b) { return a != 0 || b != 0; }},
      {"logical_xor", [](auto& x, auto& y) { return logical_xor(x, y); }, [](double a, double b) { return (a != 0) != (b != 0); }},
  };
  std::vector<DType> dts = kFloats;
  dts.insert(dts.end(), kInts.begin(), kInts.end());
  dts.push_back(kBool);
  for (auto& c : cases) {
    for (DType dt : dts) {
      // small integers so that equality happens often
      std::vector<double> xv = random_ints(12, dt == kBool ? 0 : dt == kUInt8 ? 0 : -2, dt == kBool ? 1 : 2);
      std::vector<double> yv = random_ints(4, dt == kBool ? 0 : dt == kUInt8 ? 0 : -2, dt == kBool ? 1 : 2);
      Tensor x = with_layout(xv, {3, 4}, dt, "transposed"), y = make(yv, {4}, kFloat64).to(dt);
      std::vector<double> ref = bcast(xv, {3, 4}, yv, {4}, [&](double a, double b) { return double(c.ref(a, b)); });
      Tensor out = c.op(x, y);
      EXPECT_EQ(out.dtype(), kBool);
      expect_close(out, ref, 0, 0, c.name + " " + name(dt));
    }
  }
  // mixed dtypes compare in the promoted type: int vs 1.5, NaN compares unequal
  Tensor i = tensor<int64_t>({1, 2});
  EXPECT_EQ(lt(i, Scalar(1.5)).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(eq(i, tensor<double>({1.0, 2.5})).to_vector<bool>(), (std::vector<bool>{true, false}));
  Tensor n = tensor<double>({kNaN});
  EXPECT_FALSE(eq(n, n).item<bool>());
  EXPECT_TRUE(ne(n, n).item<bool>());
  EXPECT_EQ(logical_and(tensor<double>({kNaN, 0.0}), tensor<bool>({true, true})).to_vector<bool>(),
            (std::vector<bool>{true, false}));
}

TEST(ElementwiseBinary, TypePromotion) {
  Tensor i64 = tensor<int64_t>({1, 2}), i32 = tensor<int32_t>({1, 2}), u8 = tensor<uint8_t>({1, 200});
  Tensor i8 = tensor<int8_t>({-1, 2}), b = tensor<bool>({true, false});
  Tensor f16 = tensor<float>({1, 2}, {2}, kFloat16), bf16 = tensor<float>({1, 2}, {2}, kBFloat16);
  Tensor f32 = tensor<float>({1, 2}), f64 = tensor<double>({1, 2});
  // wrapped numbers: a float scalar makes ints the default float; same category keeps the tensor's type
  EXPECT_EQ(add(i64, Scalar(1.5)).dtype(), kFloat32);
  expect_close(add(i64, Scalar(1.5)), {2.5, 3.5}, 0, 0);
  EXPECT_EQ(add(i32, Scalar(2)).dtype(), kInt32);
  EXPECT_EQ(add(u8, Scalar(2)).dtype(), kUInt8);
  EXPECT_EQ(add(f16, Scalar(2.5)).dtype(), kFloat16);
  EXPECT_EQ(add(bf16, Scalar(2.5)).dtype(), kBFloat16);
  EXPECT_EQ(add(b, Scalar(2)).dtype(), kInt64);
  EXPECT_EQ(add(b, Scalar(2.0)).dtype(), kFloat32);
  EXPECT_EQ(add(i32, Scalar(true)).dtype(), kInt32);
  EXPECT_EQ(mul(2.0 * i32, Scalar(1)).dtype(), kFloat32);
  // 0-d tensors: same category -> the dimensioned tensor wins; higher category -> promotes
  EXPECT_EQ(add(i32, scalar_tensor(Scalar(int64_t(5)), kInt64)).dtype(), kInt32);
  EXPECT_EQ(add(i32, scalar_tensor(1.0, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(add(f16, scalar_tensor(1.0, kFloat64)).dtype(), kFloat16);
  EXPECT_EQ(add(scalar_tensor(1, kInt32), scalar_tensor(1, kInt64)).dtype(), kInt64);
  EXPECT_EQ(add(scalar_tensor(1, kInt32), scalar_tensor(1, kInt64)).dim(), 0);
  // dimensioned tensors: promote_types
  EXPECT_EQ(add(i64, i32).dtype(), kInt64);
  EXPECT_EQ(add(u8, i8).dtype(), kInt16);
  expect_close(add(u8, i8), {0, 202}, 0, 0);  // no uint8 wrap-around: computed in int16
  EXPECT_EQ(add(f16, bf16).dtype(), kFloat32);
  EXPECT_EQ(add(f32, f64).dtype(), kFloat64);
  EXPECT_EQ(add(i64, f16).dtype(), kFloat16);
  EXPECT_EQ(add(b, i8).dtype(), kInt8);
  EXPECT_EQ(add(b, b).dtype(), kBool);
  EXPECT_EQ(add(b, tensor<bool>({true, true})).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(mul(b, tensor<bool>({true, true})).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(div(i64, i32).dtype(), kFloat32);
  EXPECT_EQ(div(i64, Scalar(2), "floor").dtype(), kInt64);
  EXPECT_EQ(atan2(i64, i32).dtype(), kFloat32);
  EXPECT_EQ(hypot(i64, f64).dtype(), kFloat64);
  EXPECT_EQ(pow(i64, Scalar(2)).dtype(), kInt64);
  EXPECT_EQ(pow(i64, Scalar(0.5)).dtype(), kFloat32);
  EXPECT_EQ(pow(2.0 * ones({2}, kFloat16), Scalar(2)).dtype(), kFloat16);
  EXPECT_EQ(eq(i64, f32).dtype(), kBool);
  EXPECT_THROW(sub(b, b), Error);
  // default float dtype follows set_default_float_dtype
  set_default_float_dtype(kFloat64);
  EXPECT_EQ(add(i64, Scalar(0.5)).dtype(), kFloat64);
  EXPECT_EQ(exp(i64).dtype(), kFloat64);
  set_default_float_dtype(kFloat32);
}

TEST(ElementwiseBinary, BroadcastErrorsAndZeroSize) {
  EXPECT_THROW(add(zeros({3}), zeros({4})), Error);
  EXPECT_THROW(mul(zeros({2, 3}), zeros({3, 2})), Error);
  Tensor z = add(zeros({0, 3}), ones({2, 1, 3}));
  EXPECT_EQ(z.sizes(), (Shape{2, 0, 3}));
  EXPECT_EQ(eq(zeros({0}), Scalar(1)).sizes(), (Shape{0}));
  EXPECT_THROW(add(zeros({0}), zeros({2})), Error);
}

// ============================================================================ where / convert / copy_

TEST(ElementwiseWhere, ValuesBroadcastPromotion) {
  for (DType dt : kFloats) {
    std::vector<double> cv = random_ints(12, 0, 1), xv, yv;
    Tensor c = make(cv, {3, 4}, kFloat64).to(kBool).transpose(0, 1);  // (4, 3), non-contiguous
    Tensor x = random_tensor({4, 3}, dt, &xv, "strided");
    Tensor y = random_tensor({3}, dt, &yv);
    Tensor out = where(c, x, y);
    EXPECT_EQ(out.dtype(), dt);
    EXPECT_EQ(out.sizes(), (Shape{4, 3}));
    std::vector<double> ct = c.to_vector<double>(), ref;
    for (size_t i = 0; i < 12; ++i) ref.push_back(ct[i] != 0 ? xv[i] : yv[i % 3]);
    expect_close(out, ref, 0, 0, std::string("where ") + name(dt));
  }
  Tensor c = tensor<bool>({true, false, true});
  Tensor w = where(c, tensor<int64_t>({1, 2, 3}), tensor<float>({0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(w.dtype(), kFloat32);
  expect_close(w, {1, 0.5, 3}, 0, 0);
  // a wrapped number does not widen the tensor's dtype
  Tensor h = tensor<float>({1, 2, 3}, {3}, kFloat16);
  Tensor w2 = where(c, h, ops::scalar_to_tensor(Scalar(0.25)));
  EXPECT_EQ(w2.dtype(), kFloat16);
  expect_close(w2, {1, 0.25, 3}, 0, 0);
  // condition broadcast against both values; zero-size
  Tensor w3 = where(tensor<bool>({true, false}, {2, 1}), ones({1, 3}), zeros({2, 3}));
  expect_close(w3, {1, 1, 1, 0, 0, 0}, 0, 0);
  EXPECT_EQ(where(zeros({0}, kBool), zeros({0}), ones({1})).sizes(), (Shape{0}));
  EXPECT_THROW(where(tensor<float>({1.0f}), ones({1}), zeros({1})), Error);
  EXPECT_THROW(where(c, ones({2}), zeros({3})), Error);
}

TEST(ElementwiseConvert, Conversions) {
  std::vector<double> v = {-2.7, -0.5, 0.0, 0.3, 2.7, 100.9};
  Tensor x = make(v, {2, 3}, kFloat64).transpose(0, 1);  // non-contiguous source
  std::vector<double> xt = x.to_vector<double>();
  for (DType dt : {kInt8, kInt16, kInt32, kInt64}) {
    Tensor y = convert_element_type(x, dt);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(y.sizes(), (Shape{3, 2}));
    std::vector<double> ref;
    for (double d : xt) ref.push_back(std::trunc(d));  // truncation toward zero
    expect_close(y, ref, 0, 0, name(dt));
  }
  Tensor u = convert_element_type(tensor<double>({0.9, 3.99, 255.0}), kUInt8);
  EXPECT_EQ(u.to_vector<int64_t>(), (std::vector<int64_t>{0, 3, 255}));
  Tensor b = convert_element_type(tensor<double>({0.0, -0.0, 0.1, -3.0, kNaN, kInf}), kBool);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{false, false, true, true, true, true}));
  EXPECT_EQ(convert_element_type(tensor<int64_t>({0, 5, -1}), kBool).to_vector<bool>(), (std::vector<bool>{false, true, true}));
  expect_close(convert_element_type(tensor<bool>({true, false}), kInt32), {1, 0}, 0, 0);
  expect_close(convert_element_type(tensor<bool>({true, false}), kFloat16), {1, 0}, 0, 0);
  // rounding to 16-bit floats: round to nearest even, overflow to inf
  Tensor h = convert_element_type(tensor<double>({1.0 + 1.0 / 2048, 1.0 + 3.0 / 2048, 70000.0, 1e-8}), kFloat16);
  expect_close(h, {1.0, 1.0 + 4.0 / 2048, kInf, 0.0}, 0, 0);
  Tensor bf = convert_element_type(tensor<double>({1.0 + 1.0 / 256, 1.0 + 3.0 / 256}), kBFloat16);
  expect_close(bf, {1.0, 1.0 + 4.0 / 256}, 0, 0);
  for (DType dt : kFloats) {
    std::vector<double> vals;
    Tensor r = random_tensor({2, 3}, dt, &vals, "strided");
    Tensor back = convert_element_type(convert_element_type(r, kFloat64), dt);
    expect_close(back, vals, 0, 0, std::string("roundtrip ") + name(dt));
  }
  EXPECT_EQ(convert_element_type(zeros({0, 2}), kInt32).sizes(), (Shape{0, 2}));
  EXPECT_EQ(convert_element_type(scalar_tensor(2.5), kInt64).item<int64_t>(), 2);
}

TEST(ElementwiseCopy, BroadcastDtypeAndOverlap) {
  Tensor dst = zeros({3, 4}, kInt32);
  std::vector<double> sv = {1.9, -2.9, 3.5, 0.1};
  copy_(dst, make(sv, {4}, kFloat64));
  std::vector<double> ref;
  for (int r = 0; r < 3; ++r)
    for (double s : sv) ref.push_back(std::trunc(s));
  expect_close(dst, ref, 0, 0, "broadcast + convert");
  // into a non-contiguous destination: only the view's elements change
  Tensor base = zeros({2, 4});
  Tensor view = base.slice(1, 0, std::nullopt, 2);
  copy_(view, tensor<float>({1, 2, 3, 4}, {2, 2}));
  expect_close(base, {1, 0, 2, 0, 3, 0, 4, 0}, 0, 0);
  // overlapping source and destination behave as if the source were copied first
  Tensor a = tensor<double>({0, 1, 2, 3, 4, 5});
  copy_(a.slice(0, 1, 6), a.slice(0, 0, 5));
  expect_close(a, {0, 0, 1, 2, 3, 4}, 0, 0, "shift right");
  Tensor b = tensor<double>({0, 1, 2, 3, 4, 5});
  copy_(b.slice(0, 0, 5), b.slice(0, 1, 6));
  expect_close(b, {1, 2, 3, 4, 5, 5}, 0, 0, "shift left");
  Tensor m = tensor<double>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  copy_(m, m.transpose(0, 1));
  expect_close(m, {1, 4, 7, 2, 5, 8, 3, 6, 9}, 0, 0, "in-place transpose");
  Tensor s = tensor<double>({1, 2});
  copy_(s, s);
  expect_close(s, {1, 2}, 0, 0, "self copy");
  // zero-size, 0-d, errors
  copy_(zeros({0, 3}), ones({3}));
  Tensor z = scalar_tensor(0.0, kFloat64);
  copy_(z, scalar_tensor(Scalar(int64_t(7))));
  EXPECT_EQ(z.item<double>(), 7.0);
  EXPECT_THROW(copy_(zeros({3}), ones({4})), Error);
  EXPECT_THROW(copy_(zeros({4}), ones({3, 4})), Error);
}

// ============================================================================ in-place and operators

TEST(ElementwiseInplace, MethodsAndRules) {
  Tensor x = tensor<float>({1, 2, 3, 4}, {2, 2});
  Tensor alias = x.view({4});
  x.add_(tensor<float>({10, 20}));
  expect_close(alias, {11, 22, 13, 24}, 0, 0, "add_ broadcasts other and writes in place");
  x.mul_(Scalar(2.0));
  expect_close(x, {22, 44, 26, 48}, 0, 0);
  EXPECT_EQ(x.dtype(), kFloat32);
  x.sub_(tensor<double>({1.0}));  // float64 result cast back to float32
  EXPECT_EQ(x.dtype(), kFloat32);
  expect_close(x, {21, 43, 25, 47}, 0, 0);
  x.div_(Scalar(2));
  expect_close(x, {10.5, 21.5, 12.5, 23.5}, 0, 0);
  Tensor i = tensor<int64_t>({1, 2});
  EXPECT_THROW(i.add_(Scalar(1.5)), Error);
  EXPECT_THROW(i.div_(Scalar(2)), Error);  // true division gives a float
  i.add_(Scalar(3));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 5}));
  i.floor_divide_(Scalar(2));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
  // the result must keep self's shape
  Tensor small = zeros({2});
  EXPECT_THROW(small.add_(ones({3, 2})), Error);
  Tensor f = tensor<float>({0.25f, 4.0f});
  f.sqrt_();
  expect_close(f, {0.5, 2}, 0, 0);
  Tensor t = tensor<double>({1, 2, 3, 4}, {2, 2}).transpose(0, 1);  // in place on a non-contiguous view
  t.neg_();
  expect_close(t, {-1, -3, -2, -4}, 0, 0);
  Tensor bo = tensor<bool>({true, false});
  EXPECT_THROW(bo.exp_(), Error);  // float result into a bool tensor
  // a leaf that requires grad cannot be modified in place
  Tensor leaf = ones({2}, kFloat64);
  leaf.requires_grad_();
  EXPECT_THROW(leaf.add_(Scalar(1)), Error);
}

TEST(ElementwiseOperators, ArithmeticComparisonBitwise) {
  std::vector<double> av, bv;
  Tensor a = random_tensor({2, 3}, kFloat64, &av, "transposed"), b = random_tensor({3}, kFloat64, &bv);
  auto check = [&](const Tensor& got, const std::function<double(double, double)>& f, const std::string& what) {
    expect_close(got, bcast(av, {2, 3}, bv, {3}, f), 1e-15, 0, what);
  };
  check(a + b, [](double x, double y) { return x + y; }, "+");
  check(a - b, [](double x, double y) { return x - y; }, "-");
  check(a * b, [](double x, double y) { return x * y; }, "*");
  check(a / b, [](double x, double y) { return x / y; }, "/");
  check(a < b, [](double x, double y) { return double(x < y); }, "<");
  check(a <= b, [](double x, double y) { return double(x <= y); }, "<=");
  check(a > b, [](double x, double y) { return double(x > y); }, ">");
  check(a >= b, [](double x, double y) { return double(x >= y); }, ">=");
  check(a == b, [](double x, double y) { return double(x == y); }, "==");
  check(a != b, [](double x, double y) { return double(x != y); }, "!=");
  std::vector<double> neg_ref;
  for (double v : av) neg_ref.push_back(-v);
  expect_close(-a, neg_ref, 0, 0, "unary -");
  std::vector<double> r1, r2, r3, r4;
  for (double v : av) {
    r1.push_back(v + 2);
    r2.push_back(2 - v);
    r3.push_back(v * 3);
    r4.push_back(1 / v);
  }
  expect_close(a + 2, r1, 1e-15, 0);
  expect_close(2 - a, r2, 1e-15, 0);
  expect_close(3.0 * a, r3, 1e-15, 0);
  expect_close(1 / a, r4, 1e-15, 0);
  Tensor i = tensor<int32_t>({12, 10, -3}), j = tensor<int32_t>({10, 6, 5});
  EXPECT_EQ((i & j).to_vector<int64_t>(), (std::vector<int64_t>{12 & 10, 10 & 6, -3 & 5}));
  EXPECT_EQ((i | j).to_vector<int64_t>(), (std::vector<int64_t>{12 | 10, 10 | 6, -3 | 5}));
  EXPECT_EQ((i ^ j).to_vector<int64_t>(), (std::vector<int64_t>{12 ^ 10, 10 ^ 6, -3 ^ 5}));
  EXPECT_EQ((~i).to_vector<int64_t>(), (std::vector<int64_t>{~12, ~10, ~(-3)}));
  EXPECT_EQ((i / j).dtype(), kFloat32);
  Tensor p = tensor<bool>({true, true, false, false}), q = tensor<bool>({true, false, true, false});
  EXPECT_EQ((p & q).to_vector<bool>(), (std::vector<bool>{true, false, false, false}));
  EXPECT_EQ((p | q).to_vector<bool>(), (std::vector<bool>{true, true, true, false}));
  EXPECT_EQ((p ^ q).to_vector<bool>(), (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ((~p).to_vector<bool>(), (std::vector<bool>{false, false, true, true}));
  Tensor c = tensor<float>({1, 2});
  c += 1;
  c *= tensor<float>({2, 3});
  c -= 0.5;
  c /= 2;
  expect_close(c, {1.75, 4.25}, 0, 0);
  EXPECT_THROW(tensor<float>({1}) & tensor<float>({1}), Error);
}

// ============================================================================ gradients

namespace {
using Fn1 = std::function<Tensor(const Tensor&)>;
using Fn2 = std::function<Tensor(const Tensor&, const Tensor&)>;

// f on a contiguous input, a transposed view, and a broadcast (expanded) view.
void gradcheck_unary(const std::string& nm, const Fn1& f, double lo, double hi) {
  Tensor x = grad_input({3, 4}, lo, hi);
  expect_gradcheck([&](const TensorList& t) { return TensorList{f(t[0])}; }, {x}, nm + " contiguous");
  expect_gradcheck([&](const TensorList& t) { return TensorList{f(t[0].transpose(0, 1))}; }, {x}, nm + " transposed");
  Tensor v = grad_input({4}, lo, hi);
  expect_gradcheck([&](const TensorList& t) { return TensorList{f(t[0].expand({2, 4}))}; }, {v}, nm + " expanded");
}

struct Dom {
  double lo, hi;
  bool away_from_zero = false;
};
Tensor grad_input_dom(const Shape& s, Dom d) {
  if (!d.away_from_zero) return grad_input(s, d.lo, d.hi);
  Tensor t = make(signed_values(numel(s), d.lo, d.hi), s, kFloat64);
  t.requires_grad_();
  return t;
}

void gradcheck_binary(const std::string& nm, const Fn2& f, Dom dx, Dom dy) {
  const std::vector<std::pair<Shape, Shape>> shapes = {{{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{}, {2, 3}}};
  for (const auto& [xs, ys] : shapes) {
    Tensor x = grad_input_dom(xs, dx), y = grad_input_dom(ys, dy);
    expect_gradcheck([&](const TensorList& t) { return TensorList{f(t[0], t[1])}; }, {x, y},
                     nm + " " + shape_str(xs) + "x" + shape_str(ys));
  }
  // non-contiguous operands; and each input alone requiring grad
  Tensor x = grad_input_dom({4, 3}, dx), y = grad_input_dom({3, 4}, dy);
  expect_gradcheck([&](const TensorList& t) { return TensorList{f(t[0].transpose(0, 1), t[1])}; }, {x, y},
                   nm + " transposed");
  Tensor yc = grad_input_dom({3, 4}, dy).detach();
  expect_gradcheck([&](const TensorList& t) { return TensorList{f(t[0].transpose(0, 1), yc)}; }, {x}, nm + " x only");
  Tensor xc = grad_input_dom({3, 4}, dx).detach();
  expect_gradcheck([&](const TensorList& t) { return TensorList{f(xc, t[0])}; }, {y}, nm + " y only");
}
}  // namespace

TEST(ElementwiseGrad, Unary) {
  gradcheck_unary("neg", [](const Tensor& x) { return neg(x); }, -2, 2);
  gradcheck_unary("abs", [](const Tensor& x) { return abs(x); }, 0.1, 2);
  gradcheck_unary("abs-", [](const Tensor& x) { return abs(x); }, -2, -0.1);
  gradcheck_unary("sign", [](const Tensor& x) { return sign(x); }, -2, 2);
  gradcheck_unary("exp", [](const Tensor& x) { return exp(x); }, -2, 2);
  gradcheck_unary("exp2", [](const Tensor& x) { return exp2(x); }, -2, 2);
  gradcheck_unary("expm1", [](const Tensor& x) { return expm1(x); }, -2, 2);
  gradcheck_unary("log", [](const Tensor& x) { return log(x); }, 0.2, 3);
  gradcheck_unary("log2", [](const Tensor& x) { return log2(x); }, 0.2, 3);
  gradcheck_unary("log1p", [](const Tensor& x) { return log1p(x); }, -0.8, 3);
  gradcheck_unary("sqrt", [](const Tensor& x) { return sqrt(x); }, 0.2, 3);
  gradcheck_unary("rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.2, 3);
  gradcheck_unary("reciprocal", [](const Tensor& x) { return reciprocal(x); }, 0.3, 3);
  gradcheck_unary("sin", [](const Tensor& x) { return sin(x); }, -3, 3);
  gradcheck_unary("cos", [](const Tensor& x) { return cos(x); }, -3, 3);
  gradcheck_unary("tan", [](const Tensor& x) { return tan(x); }, -1.2, 1.2);
  gradcheck_unary("tanh", [](const Tensor& x) { return tanh(x); }, -2, 2);
  gradcheck_unary("asin", [](const Tensor& x) { return asin(x); }, -0.9, 0.9);
  gradcheck_unary("acos", [](const Tensor& x) { return acos(x); }, -0.9, 0.9);
  gradcheck_unary("atan", [](const Tensor& x) { return atan(x); }, -3, 3);
  gradcheck_unary("sinh", [](const Tensor& x) { return sinh(x); }, -2, 2);
  gradcheck_unary("cosh", [](const Tensor& x) { return cosh(x); }, -2, 2);
  gradcheck_unary("asinh", [](const Tensor& x) { return asinh(x); }, -3, 3);
  gradcheck_unary("acosh", [](const Tensor& x) { return acosh(x); }, 1.2, 4);
  gradcheck_unary("atanh", [](const Tensor& x) { return atanh(x); }, -0.9, 0.9);
  gradcheck_unary("erf", [](const Tensor& x) { return erf(x); }, -2, 2);
  gradcheck_unary("erfc", [](const Tensor& x) { return erfc(x); }, -2, 2);
  gradcheck_unary("erfinv", [](const Tensor& x) { return erfinv(x); }, -0.9, 0.9);
  gradcheck_unary("sigmoid", [](const Tensor& x) { return sigmoid(x); }, -4, 4);
  gradcheck_unary("lgamma", [](const Tensor& x) { return lgamma(x); }, 0.2, 5);
  gradcheck_unary("floor", [](const Tensor& x) { return floor(x); }, -3, 3);
  gradcheck_unary("ceil", [](const Tensor& x) { return ceil(x); }, -3, 3);
  gradcheck_unary("round", [](const Tensor& x) { return round(x); }, -3, 3);
  gradcheck_unary("trunc", [](const Tensor& x) { return trunc(x); }, -3, 3);
}

TEST(ElementwiseGrad, Binary) {
  const Dom any{-2, 2}, pos{0.3, 2}, nz{0.3, 2, true};
  gradcheck_binary("add", [](auto& x, auto& y) { return add(x, y); }, any, any);
  gradcheck_binary("sub", [](auto& x, auto& y) { return sub(x, y); }, any, any);
  gradcheck_binary("mul", [](auto& x, auto& y) { return mul(x, y); }, any, any);
  gradcheck_binary("div", [](auto& x, auto& y) { return div(x, y); }, any, nz);
  gradcheck_binary("div_floor", [](auto& x, auto& y) { return div(x, y, "floor"); }, any, nz);
  gradcheck_binary("div_trunc", [](auto& x, auto& y) { return div(x, y, "trunc"); }, any, nz);
  gradcheck_binary("remainder", [](auto& x, auto& y) { return remainder(x, y); }, any, nz);
  gradcheck_binary("fmod", [](auto& x, auto& y) { return fmod(x, y); }, any, nz);
  gradcheck_binary("pow", [](auto& x, auto& y) { return pow(x, y); }, pos, any);
  gradcheck_binary("maximum", [](auto& x, auto& y) { return maximum(x, y); }, any, any);
  gradcheck_binary("minimum", [](auto& x, auto& y) { return minimum(x, y); }, any, any);
  gradcheck_binary("atan2", [](auto& x, auto& y) { return atan2(x, y); }, nz, nz);
  gradcheck_binary("hypot", [](auto& x, auto& y) { return hypot(x, y); }, nz, nz);
  gradcheck_binary("copysign", [](auto& x, auto& y) { return copysign(x, y); }, nz, nz);
  // scalar operands (wrapped numbers) on either side
  gradcheck_unary("pow scalar exp", [](const Tensor& x) { return pow(x, Scalar(2.5)); }, 0.3, 2);
  gradcheck_unary("pow int exp", [](const Tensor& x) { return pow(x, Scalar(3)); }, -2, 2);
  gradcheck_unary("scalar pow", [](const Tensor& x) { return pow(ops::scalar_to_tensor(Scalar(1.7)), x); }, -2, 2);
  gradcheck_unary("scalar div", [](const Tensor& x) { return 2.0 / x; }, 0.3, 2);
  gradcheck_unary("scalar sub", [](const Tensor& x) { return 2.0 - x; }, -2, 2);
  gradcheck_unary("float32 mixed", [](const Tensor& x) { return mul(x, scalar_tensor(2.5, kFloat32)); }, -2, 2);
}

TEST(ElementwiseGrad, PowAtZero) {
  // d/dx x^0 is 0 (no NaN) and d/de 0^e is 0 for e >= 0
  Tensor x = tensor<double>({0.0, 0.0, 2.0});
  x.requires_grad_();
  Tensor e = tensor<double>({0.0, 2.0, 0.0});
  e.requires_grad_();
  TensorList g = grad({sum(pow(x, e))}, {x, e});
  expect_close(g[0], {0, 0, 0}, 0, 0);
  expect_close(g[1], {0, 0, std::log(2.0)}, 1e-15, 0);
}

TEST(ElementwiseGrad, WhereConvertCopy) {
  Tensor c = tensor<bool>({true, false, false, true, true, false, true, false, false, true, false, true}, {3, 4});
  Tensor x = grad_input({3, 4}), y = grad_input({4});
  expect_gradcheck([&](const TensorList& t) { return TensorList{where(c, t[0], t[1])}; }, {x, y}, "where broadcast");
  Tensor xt = grad_input({4, 3});
  expect_gradcheck([&](const TensorList& t) { return TensorList{where(c, t[0].transpose(0, 1), t[1])}; }, {xt, y},
                   "where transposed");
  expect_gradcheck([&](const TensorList& t) { return TensorList{where(c, t[0], ops::scalar_to_tensor(Scalar(0.5)))}; },
                   {x}, "where scalar");
  // convert: float64 -> float32 -> float64 is linear up to float32 rounding (larger eps)
  GradcheckOptions loose;
  loose.eps = 1e-2;
  expect_gradcheck([&](const TensorList& t) {
        Tensor f = convert_element_type(t[0].transpose(0, 1), kFloat32);
        return TensorList{convert_element_type(mul(f, Scalar(3.0)), kFloat64)};
      },
      {x}, "convert_element_type", loose);
  expect_gradcheck([&](const TensorList& t) { return TensorList{convert_element_type(t[0], kFloat64)}; }, {x},
                   "convert identity");
  // copy_: the destination's old value gets no gradient, the source all of it (summed over broadcast)
  Tensor a = grad_input({3, 4}), s = grad_input({4}), st = grad_input({4, 3});
  expect_gradcheck([&](const TensorList& t) {
        Tensor d = clone(t[0]);
        copy_(d, t[1]);
        return TensorList{mul(d, t[0])};
      },
      {a, s}, "copy_ broadcast");
  expect_gradcheck([&](const TensorList& t) {
        Tensor d = mul(t[0], Scalar(2.0));
        copy_(d, t[1].transpose(0, 1));
        return TensorList{add(d, t[0])};
      },
      {a, st}, "copy_ transposed");
  // a float32 source copied into float64 gets a float32 gradient
  Tensor src32 = ones({4}, kFloat32);
  src32.requires_grad_();
  Tensor d = zeros({3, 4}, kFloat64);
  copy_(d, src32);
  sum(d).backward();
  ASSERT_TRUE(src32.grad().defined());
  EXPECT_EQ(src32.grad().dtype(), kFloat32);
  expect_close(src32.grad(), {3, 3, 3, 3}, 0, 0);
}

namespace {
// Second order: gradcheck of x -> d/dx sum(v * f(x)) computed with create_graph.
void gradgradcheck(const std::string& nm, const std::function<Tensor(const TensorList&)>& f, const std::vector<Shape>& shapes,
                   const std::vector<Dom>& doms) {
  TensorList in;
  for (size_t i = 0; i < shapes.size(); ++i) in.push_back(grad_input_dom(shapes[i], doms[i]));
  Tensor probe = f(in).detach();
  Tensor v = make(random_values(probe.numel()), probe.sizes(), kFloat64);
  expect_gradcheck([&](const TensorList& t) {
        EnableGradGuard enable;  // gradcheck evaluates the numerical side without grad
        TensorList ins;
        for (const Tensor& x : t) ins.push_back(x);
        return grad({sum(mul(f(ins), v))}, ins, {}, /*retain_graph=*/true, /*create_graph=*/true);
      },
      in, nm + " second order");
}
}  // namespace

TEST(ElementwiseGrad, SecondOrder) {
  const Dom any{-2, 2}, pos{0.3, 2}, unit{-0.9, 0.9}, nz{0.3, 2, true};
  const std::vector<std::tuple<std::string, Fn1, Dom>> unary = {
      {"neg", [](const Tensor& x) { return neg(x); }, any},
      {"abs", [](const Tensor& x) { return abs(x); }, nz},
      {"exp", [](const Tensor& x) { return exp(x); }, any},
      {"exp2", [](const Tensor& x) { return exp2(x); }, any},
      {"expm1", [](const Tensor& x) { return expm1(x); }, any},
      {"log", [](const Tensor& x) { return log(x); }, pos},
      {"log2", [](const Tensor& x) { return log2(x); }, pos},
      {"log1p", [](const Tensor& x) { return log1p(x); }, pos},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, pos},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, pos},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, pos},
      {"sin", [](const Tensor& x) { return sin(x); }, any},
      {"cos", [](const Tensor& x) { return cos(x); }, any},
      {"tan", [](const Tensor& x) { return tan(x); }, Dom{-1.2, 1.2}},
      {"tanh", [](const Tensor& x) { return tanh(x); }, any},
      {"asin", [](const Tensor& x) { return asin(x); }, unit},
      {"acos", [](const Tensor& x) { return acos(x); }, unit},
      {"atan", [](const Tensor& x) { return atan(x); }, any},
      {"sinh", [](const Tensor& x) { return sinh(x); }, any},
      {"cosh", [](const Tensor& x) { return cosh(x); }, any},
      {"asinh", [](const Tensor& x) { return asinh(x); }, any},
      {"acosh", [](const Tensor& x) { return acosh(x); }, Dom{1.2, 3}},
      {"atanh", [](const Tensor& x) { return atanh(x); }, unit},
      {"erf", [](const Tensor& x) { return erf(x); }, any},
      {"erfc", [](const Tensor& x) { return erfc(x); }, any},
      {"erfinv", [](const Tensor& x) { return erfinv(x); }, unit},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, any},
  };
  for (const auto& [nm, f, d] : unary)
    gradgradcheck(nm, [f = f](const TensorList& t) { return f(t[0]); }, {{2, 3}}, {d});
  const std::vector<std::tuple<std::string, Fn2, Dom, Dom>> binary = {
      {"mul", [](auto& x, auto& y) { return mul(x, y); }, any, any},
      {"div", [](auto& x, auto& y) { return div(x, y); }, any, nz},
      {"pow", [](auto& x, auto& y) { return pow(x, y); }, pos, any},
      {"atan2", [](auto& x, auto& y) { return atan2(x, y); }, nz, nz},
      {"hypot", [](auto& x, auto& y) { return hypot(x, y); }, nz, nz},
      {"maximum", [](auto& x, auto& y) { return maximum(x, y); }, any, any},
      {"remainder", [](auto& x, auto& y) { return remainder(x, y); }, any, nz},
  };
  for (const auto& [nm, f, dx, dy] : binary)
    gradgradcheck(nm, [f = f](const TensorList& t) { return f(t[0], t[1]); }, {{2, 3}, {3}}, {dx, dy});
  gradgradcheck("where", [](const TensorList& t) { return where(gt(t[0], Scalar(0.0)), mul(t[0], t[1]), t[1]); },
                {{2, 3}, {3}}, {any, any});
}
