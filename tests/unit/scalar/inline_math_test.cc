// The float functions generated CPU code computes exp, log, erf, tanh and sigmoid with
// (scalar/inline_math.h), against double libm: on floats sampled across every bit pattern, the
// error in float ulps within the bound the header states; and the special values (+-0, +-inf,
// NaN, the ends of the range) as libm gives them. Also div_by_invariant, the emitter's division
// by a loop-invariant divisor.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "scalar/scalar.h"

namespace {

namespace im = kiln::scalar::inline_math;
using kiln::scalar::float_of;

constexpr double kFltMin = 1.17549435082228750797e-38;

// |got - want| in ulps of the float nearest want (want a normal float's value).
double ulp_error(float got, double want) {
  const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
  return std::fabs(double(got) - want) / ulp;
}

struct Sweep {
  double max_ulp = 0;   // over references of normal magnitude
  double max_abs = 0;   // over references below FLT_MIN (results flush to 0 there)
  float worst = 0;      // the input of max_ulp
  int mismatched_special = 0;  // inf / NaN where the reference has another
  float first_special = 0;
};

// Every 4099th float bit pattern (about a million inputs, all exponents and signs).
template <class F, class R>
Sweep sweep(F f, R ref) {
  Sweep s;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4099) {
    const float x = float_of(uint32_t(b));
    const float got = f(x);
    const double want = ref(double(x));
    const bool special = std::isnan(want) || std::isinf(want) || std::fabs(want) > std::numeric_limits<float>::max();
    if (special) {
      const bool same = std::isnan(want) ? std::isnan(got) : got == float(want);
      if (!same && s.mismatched_special++ == 0) s.first_special = x;
    } else if (std::fabs(want) < kFltMin) {
      s.max_abs = std::max(s.max_abs, std::fabs(double(got) - want));
    } else if (std::isnan(got) || std::isinf(got)) {
      if (s.mismatched_special++ == 0) s.first_special = x;
    } else if (const double e = ulp_error(got, want); e > s.max_ulp) {
      s.max_ulp = e, s.worst = x;
    }
  }
  return s;
}

void expect_within(const Sweep& s, double ulps, const std::string& name) {
  EXPECT_LE(s.max_ulp, ulps) << name << " at x = " << s.worst;
  EXPECT_LE(s.max_abs, kFltMin) << name << ": a result below FLT_MIN is off by more than FLT_MIN";
  EXPECT_EQ(s.mismatched_special, 0) << name << ": inf/NaN not as libm's, first at x = " << s.first_special;
}

TEST(InlineMath, ExpWithinItsBound) {
  // 1 ulp, but for the results just above FLT_MIN (x in [-87.34, -86.6]: the reduced argument
  // reaches -0.7 there), measured apart.
  const Sweep main = sweep([](float x) { return x < -86.6f ? 1.0f : im::exp(x); },
                           [](double x) { return x < -86.6 ? 1.0 : std::exp(x); });
  expect_within(main, 1.5, "exp");
  const Sweep edge = sweep([](float x) { return x >= -86.6f ? 1.0f : im::exp(x); },
                           [](double x) { return x >= -86.6 ? 1.0 : std::exp(x); });
  expect_within(edge, 200, "exp near FLT_MIN");
}

TEST(InlineMath, LogErfTanhSigmoidWithinTheirBounds) {
  expect_within(sweep([](float x) { return im::log(x); }, [](double x) { return std::log(x); }), 2, "log");
  expect_within(sweep([](float x) { return im::erf(x); }, [](double x) { return std::erf(x); }), 3, "erf");
  expect_within(sweep([](float x) { return im::tanh(x); }, [](double x) { return std::tanh(x); }), 2, "tanh");
  // sigmoid's exp(-|x|) carries exp's error near FLT_MIN (x < -86.6) as well.
  expect_within(sweep([](float x) { return x < -86.6f ? 0.5f : im::sigmoid(x); },
                      [](double x) { return x < -86.6 ? 0.5 : 1 / (1 + std::exp(-x)); }),
                3, "sigmoid");
}

TEST(InlineMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(im::exp(0.0f), 1.0f);
  EXPECT_EQ(im::exp(-0.0f), 1.0f);
  EXPECT_EQ(im::exp(inf), inf);
  EXPECT_EQ(im::exp(-inf), 0.0f);
  EXPECT_EQ(im::exp(89.0f), inf);
  EXPECT_TRUE(std::isfinite(im::exp(88.72f)));
  EXPECT_EQ(im::exp(-88.0f), 0.0f);  // subnormal: flushed
  EXPECT_TRUE(std::isnan(im::exp(nan)));
  EXPECT_EQ(im::log(1.0f), 0.0f);
  EXPECT_EQ(im::log(0.0f), -inf);
  EXPECT_EQ(im::log(-0.0f), -inf);
  EXPECT_EQ(im::log(inf), inf);
  EXPECT_TRUE(std::isnan(im::log(-1.0f)));
  EXPECT_TRUE(std::isnan(im::log(-inf)));
  EXPECT_TRUE(std::isnan(im::log(nan)));
  EXPECT_NEAR(im::log(1e-45f), std::log(double(1e-45f)), 1e-5);  // a subnormal input
  EXPECT_EQ(im::erf(inf), 1.0f);
  EXPECT_EQ(im::erf(-inf), -1.0f);
  EXPECT_TRUE(std::signbit(im::erf(-0.0f)));
  EXPECT_TRUE(std::isnan(im::erf(nan)));
  EXPECT_EQ(im::tanh(inf), 1.0f);
  EXPECT_EQ(im::tanh(-inf), -1.0f);
  EXPECT_TRUE(std::signbit(im::tanh(-0.0f)));
  EXPECT_TRUE(std::isnan(im::tanh(nan)));
  EXPECT_EQ(im::sigmoid(inf), 1.0f);
  EXPECT_EQ(im::sigmoid(-inf), 0.0f);
  EXPECT_EQ(im::sigmoid(0.0f), 0.5f);
  EXPECT_TRUE(std::isnan(im::sigmoid(nan)));
}

TEST(InlineMath, DivByInvariantIsDivisionWithinAnUlp) {
  namespace ks = kiln::scalar;
  const float inf = std::numeric_limits<float>::infinity();
  for (float b : {3.0f, 7.0f, 1e-30f, 1e30f, -0.1f})
    for (float a : {1.0f, -2.5f, 1e-20f, 3e38f}) {
      const float got = ks::div_by_invariant<float>(a, b), want = a / b;
      EXPECT_TRUE(got == want || std::fabs(got - want) <= std::fabs(want) * 1.2e-7f) << a << " / " << b << ": " << got;
    }
  // A subnormal divisor, whose reciprocal overflows: the division itself.
  const float tiny = 1e-40f;
  EXPECT_EQ(ks::div_by_invariant<float>(1e-40f, tiny), 1e-40f / tiny);
  EXPECT_EQ(ks::div_by_invariant<float>(1.0f, 0.0f), inf);
  EXPECT_EQ(ks::div_by_invariant<float>(-1.0f, 0.0f), -inf);
  EXPECT_TRUE(std::isnan(ks::div_by_invariant<float>(0.0f, 0.0f)));
  EXPECT_EQ(ks::div_by_invariant<float>(5.0f, inf), 0.0f);
  EXPECT_TRUE(std::isnan(ks::div_by_invariant<float>(inf, inf)));
  EXPECT_EQ(ks::div_by_invariant<double>(1.0, 4.0), 0.25);
}

}  // namespace
