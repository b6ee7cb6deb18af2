// The scalar functions of scalar/scalar.h at their edge cases: INT_MIN, -1 and 0 divisors,
// NaN / inf / -0.0, half-to-even rounding, nextafter at 0 and across signs, shifts by >= width,
// conversions out of range. The expected values are worked out by hand (IEEE and two's
// complement arithmetic), not by the functions under test; the 16-bit conversions are checked
// against core's Half / BFloat16 over every bit pattern and every rounding boundary.
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "ops/dispatch.h"
#include "scalar/scalar.h"

namespace sc = kiln::scalar;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr float kInfF = std::numeric_limits<float>::infinity();
const double kNaN = std::nan("");
const float kNaNF = std::nanf("");
constexpr int32_t kMin32 = std::numeric_limits<int32_t>::min(), kMax32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMin64 = std::numeric_limits<int64_t>::min(), kMax64 = std::numeric_limits<int64_t>::max();

// got and want are the same value: equal bits for floats (so -0.0 != +0.0), or both NaN.
template <class T, class U>
testing::AssertionResult Same(const char* got_expr, const char* want_expr, T got, U want) {
  static_assert(std::is_same_v<T, U>, "compare values of one type");
  bool ok = got == want;
  if constexpr (std::is_floating_point_v<T>)
    ok = std::isnan(got) || std::isnan(want) ? std::isnan(got) && std::isnan(want)
                                             : std::memcmp(&got, &want, sizeof(T)) == 0;
  if (ok) return testing::AssertionSuccess();
  return testing::AssertionFailure() << got_expr << " is " << +got << " (signbit " << std::signbit(double(got))
                                     << "), expected " << want_expr << " = " << +want;
}
#define EXPECT_SAME(got, want) EXPECT_PRED_FORMAT2(Same, got, want)

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(ScalarSemantics, EveryPointwisePrimHasAKernelFromItsScalarFunction) {
  // The eager kernels are registered by walking ops.def's POINTWISE family through the op groups' tables
  // (src/eager/cpu/pointwise_kernels.h); a prim missing there has no kernel.
  std::string missing;
  int prims = 0;
  for (int i = 0; i < kiln::ops::kNumOps; ++i) {
    const kiln::ops::OpInfo& op = kiln::ops::op_info(kiln::ops::OpId(i));
    if (op.family != kiln::ops::OpFamily::POINTWISE || op.kind != kiln::ops::OpKind::PRIM) continue;
    ++prims;
    if (!op.kernel(kiln::DeviceType::CPU)) missing += std::string(" ") + op.name;
  }
  EXPECT_GE(prims, 60);  // the walk finds them (69 today)
  EXPECT_TRUE(missing.empty()) << "pointwise prims without a kernel:" << missing
                               << "\nwrite kiln::scalar::<op> in src/scalar/ and add the op to its group's table"
                                  " (src/eager/cpu/elementwise_{unary,math,arith,compare}.cc)";
}

TEST(ScalarSemantics, IntegerArithmeticWraps) {
  EXPECT_EQ(sc::add(kMax32, int32_t(1)), kMin32);
  EXPECT_EQ(sc::add(uint8_t(200), uint8_t(100)), uint8_t(44));
  EXPECT_EQ(sc::sub(int8_t(-128), int8_t(1)), int8_t(127));
  EXPECT_EQ(sc::mul(int16_t(300), int16_t(300)), int16_t(24464));  // 90000 - 65536
  EXPECT_EQ(sc::mul(int64_t(1) << 62, int64_t(4)), int64_t(0));
  EXPECT_EQ(sc::mul(uint8_t(16), uint8_t(16)), uint8_t(0));
  EXPECT_EQ(sc::neg(kMin32), kMin32);
  EXPECT_EQ(sc::neg(kMin64), kMin64);
  EXPECT_EQ(sc::neg(uint8_t(5)), uint8_t(251));
  EXPECT_EQ(sc::abs(int8_t(-128)), int8_t(-128));
  EXPECT_EQ(sc::abs(kMin32), kMin32);
  EXPECT_EQ(sc::abs(int16_t(-5)), int16_t(5));
  EXPECT_EQ(sc::abs(uint8_t(200)), uint8_t(200));
  // bool: add is or, mul is and.
  EXPECT_EQ(sc::add(true, true), true);
  EXPECT_EQ(sc::add(false, false), false);
  EXPECT_EQ(sc::mul(true, false), false);
}

TEST(ScalarSemantics, IntegerDivisionAndModulo) {
  // C truncation, Python floor, -1 divisors without the x86 trap.
  EXPECT_EQ(sc::div_trunc(int32_t(-7), int32_t(2)), -3);
  EXPECT_EQ(sc::div_trunc(kMin32, int32_t(-1)), kMin32);
  EXPECT_EQ(sc::div_trunc(kMin64, int64_t(-1)), kMin64);
  EXPECT_EQ(sc::floor_divide(int32_t(-7), int32_t(2)), -4);
  EXPECT_EQ(sc::floor_divide(int32_t(7), int32_t(-2)), -4);
  EXPECT_EQ(sc::floor_divide(int32_t(-7), int32_t(-2)), 3);
  EXPECT_EQ(sc::floor_divide(int32_t(6), int32_t(-3)), -2);
  EXPECT_EQ(sc::floor_divide(kMin32, int32_t(-1)), kMin32);
  EXPECT_EQ(sc::floor_divide(int8_t(-128), int8_t(-1)), int8_t(-128));
  EXPECT_EQ(sc::floor_divide(uint8_t(250), uint8_t(7)), uint8_t(35));
  EXPECT_EQ(sc::remainder(int32_t(-7), int32_t(3)), 2);
  EXPECT_EQ(sc::remainder(int32_t(7), int32_t(-3)), -2);
  EXPECT_EQ(sc::remainder(int32_t(-6), int32_t(3)), 0);
  EXPECT_EQ(sc::remainder(kMin32, int32_t(-1)), 0);
  EXPECT_EQ(sc::fmod(int32_t(-7), int32_t(3)), -1);
  EXPECT_EQ(sc::fmod(int32_t(7), int32_t(-3)), 1);
  EXPECT_EQ(sc::fmod(kMin64, int64_t(-1)), 0);
  // By zero: eager raises before computing (below); the functions give 0 rather than trap.
  EXPECT_EQ(sc::div_trunc(int32_t(7), int32_t(0)), 0);
  EXPECT_EQ(sc::floor_divide(int32_t(-7), int32_t(0)), 0);
  EXPECT_EQ(sc::remainder(int64_t(5), int64_t(0)), 0);
  EXPECT_EQ(sc::fmod(uint8_t(5), uint8_t(0)), 0);
}

TEST(ScalarSemantics, EagerIntegerDivisionByZeroRaises) {
  using namespace kiln;
  Tensor a = tensor(std::vector<int32_t>{7, 8}), z = tensor(std::vector<int32_t>{1, 0});
  auto expect_error = [](auto f, const std::string& text) {
    try {
      f();
      ADD_FAILURE() << "no error, expected: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  expect_error([&] { (void)floor_divide(a, z); }, "integer division by zero");
  expect_error([&] { (void)div(a, z, std::string("trunc")); }, "integer division by zero");
  expect_error([&] { (void)remainder(a, z); }, "integer modulo by zero");
  expect_error([&] { (void)fmod(a, z); }, "integer modulo by zero");
  // Float division by zero is IEEE: no error.
  EXPECT_TRUE(std::isinf(div(tensor(std::vector<float>{1.f}), tensor(std::vector<float>{0.f})).item<float>()));
}

TEST(ScalarSemantics, FloatDivisionFamily) {
  EXPECT_SAME(sc::div(1.0, 0.0), kInf);
  EXPECT_SAME(sc::div(-1.0, 0.0), -kInf);
  EXPECT_SAME(sc::div(0.0, 0.0), kNaN);
  EXPECT_SAME(sc::div_trunc(-7.0, 2.0), -3.0);
  EXPECT_SAME(sc::div_trunc(-1.0, 3.0), -0.0);
  EXPECT_SAME(sc::floor_divide(-7.0, 2.0), -4.0);
  EXPECT_SAME(sc::floor_divide(7.5f, -2.f), -4.f);
  EXPECT_SAME(sc::floor_divide(7.0, 0.0), kInf);
  EXPECT_SAME(sc::floor_divide(-7.0, 0.0), -kInf);
  EXPECT_SAME(sc::floor_divide(0.0, 0.0), kNaN);
  EXPECT_SAME(sc::floor_divide(-0.0, 5.0), -0.0);  // a zero with the sign of a / b
  EXPECT_SAME(sc::floor_divide(0.0, -5.0), -0.0);
  EXPECT_SAME(sc::floor_divide(1.0, -kInf), -1.0);  // Python: 1 // -inf == -1.0
  EXPECT_SAME(sc::remainder(-7.5, 2.0), 0.5);
  EXPECT_SAME(sc::remainder(7.5, -2.0), -0.5);
  EXPECT_SAME(sc::remainder(5.0, kInf), 5.0);
  EXPECT_SAME(sc::remainder(-5.0, kInf), kInf);  // Python: -5 % inf == inf
  EXPECT_SAME(sc::remainder(1.0, 0.0), kNaN);
  EXPECT_SAME(sc::fmod(-7.5, 2.0), -1.5);
  EXPECT_SAME(sc::fmod(7.5f, -2.f), 1.5f);
}

TEST(ScalarSemantics, Pow) {
  EXPECT_EQ(sc::pow(int32_t(2), int32_t(10)), 1024);
  EXPECT_EQ(sc::pow(int32_t(2), int32_t(31)), kMin32);  // wraps
  EXPECT_EQ(sc::pow(int8_t(3), int8_t(5)), int8_t(-13));  // 243 - 256
  EXPECT_EQ(sc::pow(uint8_t(2), uint8_t(8)), uint8_t(0));
  EXPECT_EQ(sc::pow(int32_t(0), int32_t(0)), 1);
  EXPECT_EQ(sc::pow(int32_t(-1), int32_t(-3)), -1);
  EXPECT_EQ(sc::pow(int32_t(-1), int32_t(-2)), 1);
  EXPECT_EQ(sc::pow(int32_t(1), int32_t(-5)), 1);
  EXPECT_EQ(sc::pow(int32_t(2), int32_t(-1)), 0);
  EXPECT_EQ(sc::pow(int64_t(-3), int64_t(3)), -27);
  EXPECT_SAME(sc::pow(0.0, -1.0), kInf);
  EXPECT_SAME(sc::pow(-8.0, 1.0 / 3), kNaN);
  EXPECT_SAME(sc::pow(kNaN, 0.0), 1.0);
}

TEST(ScalarSemantics, SignAbsRelu) {
  EXPECT_SAME(sc::sign(kNaN), kNaN);
  EXPECT_SAME(sc::sign(-0.0), 0.0);
  EXPECT_SAME(sc::sign(-3.5f), -1.f);
  EXPECT_SAME(sc::sign(-kInf), -1.0);
  EXPECT_EQ(sc::sign(kMin32), -1);
  EXPECT_EQ(sc::sign(uint8_t(7)), uint8_t(1));
  EXPECT_EQ(sc::sign(uint8_t(0)), uint8_t(0));
  EXPECT_EQ(sc::sign(true), true);
  EXPECT_SAME(sc::abs(-0.0), 0.0);
  EXPECT_SAME(sc::abs(-kInf), kInf);
  EXPECT_TRUE(std::signbit(sc::abs(-kNaN)));  // NaN is returned as it is, sign kept
  EXPECT_SAME(sc::relu(kNaN), kNaN);
  EXPECT_SAME(sc::relu(-0.0), 0.0);
  EXPECT_SAME(sc::relu(-3.f), 0.f);
  EXPECT_SAME(sc::relu(2.5), 2.5);
  EXPECT_EQ(sc::relu(kMin32), 0);
  EXPECT_SAME(sc::neg(0.0), -0.0);
}

TEST(ScalarSemantics, RoundingIsHalfToEven) {
  EXPECT_SAME(sc::round(0.5), 0.0);
  EXPECT_SAME(sc::round(1.5), 2.0);
  EXPECT_SAME(sc::round(2.5), 2.0);
  EXPECT_SAME(sc::round(-0.5), -0.0);
  EXPECT_SAME(sc::round(-1.5), -2.0);
  EXPECT_SAME(sc::round(2.5f), 2.f);
  EXPECT_SAME(sc::round(3.5f), 4.f);
  EXPECT_SAME(sc::round(kNaN), kNaN);
  EXPECT_SAME(sc::floor(-0.5), -1.0);
  EXPECT_SAME(sc::ceil(-0.5), -0.0);
  EXPECT_SAME(sc::trunc(-1.7f), -1.f);
  EXPECT_SAME(sc::floor(-kInf), -kInf);
  // Integers are returned as they are.
  EXPECT_EQ(sc::round(kMin32), kMin32);
  EXPECT_EQ(sc::floor(int8_t(-3)), int8_t(-3));
}

TEST(ScalarSemantics, PredicatesComparisonsLogical) {
  EXPECT_TRUE(sc::isnan(kNaN));
  EXPECT_FALSE(sc::isnan(kInf));
  EXPECT_TRUE(sc::isinf(-kInfF));
  EXPECT_FALSE(sc::isfinite(kNaNF));
  EXPECT_FALSE(sc::isnan(int32_t(0)));
  EXPECT_FALSE(sc::isinf(kMax64));
  EXPECT_TRUE(sc::isfinite(uint8_t(255)));
  EXPECT_FALSE(sc::eq(kNaN, kNaN));
  EXPECT_TRUE(sc::ne(kNaN, kNaN));
  EXPECT_TRUE(sc::eq(-0.0, 0.0));
  EXPECT_FALSE(sc::lt(kNaN, 1.0));
  EXPECT_FALSE(sc::ge(kNaN, kNaN));
  EXPECT_TRUE(sc::lt(kMin32, int32_t(0)));
  EXPECT_TRUE(sc::logical_not(-0.0));
  EXPECT_FALSE(sc::logical_not(kNaN));  // NaN is nonzero
  EXPECT_TRUE(sc::logical_and(kNaN, 1.0));
  EXPECT_FALSE(sc::logical_xor(0.0, -0.0));
  EXPECT_TRUE(sc::logical_or(false, true));
  EXPECT_FALSE(sc::logical_and(int32_t(3), int32_t(0)));
}

TEST(ScalarSemantics, MaximumMinimumPropagateNaN) {
  EXPECT_SAME(sc::maximum(kNaN, 1.0), kNaN);
  EXPECT_SAME(sc::maximum(1.0, kNaN), kNaN);
  EXPECT_SAME(sc::minimum(-kInfF, kNaNF), kNaNF);
  EXPECT_SAME(sc::maximum(-kInf, 3.0), 3.0);
  // Equal operands (-0.0 == 0.0) give the second.
  EXPECT_SAME(sc::maximum(-0.0, 0.0), 0.0);
  EXPECT_SAME(sc::maximum(0.0, -0.0), -0.0);
  EXPECT_SAME(sc::minimum(0.0, -0.0), -0.0);
  EXPECT_EQ(sc::maximum(kMin32, kMax32), kMax32);
  EXPECT_EQ(sc::minimum(uint8_t(0), uint8_t(255)), uint8_t(0));
  EXPECT_EQ(sc::maximum(false, true), true);
}

TEST(ScalarSemantics, Bitwise) {
  EXPECT_EQ(sc::bitwise_not(int8_t(0)), int8_t(-1));
  EXPECT_EQ(sc::bitwise_not(uint8_t(0)), uint8_t(255));
  EXPECT_EQ(sc::bitwise_not(true), false);
  EXPECT_EQ(sc::bitwise_and(int8_t(-1), int8_t(0x0f)), int8_t(15));
  EXPECT_EQ(sc::bitwise_or(int16_t(0x0f00), int16_t(0x00f0)), int16_t(0x0ff0));
  EXPECT_EQ(sc::bitwise_xor(kMin64, int64_t(-1)), kMax64);
  EXPECT_EQ(sc::bitwise_xor(true, true), false);
}

TEST(ScalarSemantics, ShiftsByWidthOrMoreAndNegative) {
  EXPECT_EQ(sc::shift_left(int32_t(1), int32_t(31)), kMin32);
  EXPECT_EQ(sc::shift_left(int32_t(1), int32_t(32)), 0);
  EXPECT_EQ(sc::shift_left(int32_t(1), int32_t(100)), 0);
  EXPECT_EQ(sc::shift_left(int32_t(1), int32_t(-1)), 0);
  EXPECT_EQ(sc::shift_left(int8_t(1), int8_t(7)), int8_t(-128));
  EXPECT_EQ(sc::shift_left(int8_t(-1), int8_t(8)), int8_t(0));
  EXPECT_EQ(sc::shift_left(int16_t(-1), int16_t(15)), int16_t(-32768));
  EXPECT_EQ(sc::shift_left(uint8_t(255), uint8_t(1)), uint8_t(254));
  EXPECT_EQ(sc::shift_left(int64_t(1), int64_t(63)), kMin64);
  EXPECT_EQ(sc::shift_left(int64_t(1), int64_t(64)), 0);
  EXPECT_EQ(sc::shift_right_arithmetic(int32_t(-8), int32_t(1)), -4);
  EXPECT_EQ(sc::shift_right_arithmetic(int32_t(-7), int32_t(1)), -4);  // rounds toward -inf
  EXPECT_EQ(sc::shift_right_arithmetic(int32_t(-1), int32_t(40)), -1);
  EXPECT_EQ(sc::shift_right_arithmetic(int32_t(5), int32_t(32)), 0);
  EXPECT_EQ(sc::shift_right_arithmetic(int32_t(-8), int32_t(-1)), -1);
  EXPECT_EQ(sc::shift_right_arithmetic(int32_t(5), int32_t(-1)), 0);
  EXPECT_EQ(sc::shift_right_arithmetic(kMin64, int64_t(63)), -1);
  EXPECT_EQ(sc::shift_right_arithmetic(uint8_t(200), uint8_t(3)), uint8_t(25));
  EXPECT_EQ(sc::shift_right_arithmetic(uint8_t(200), uint8_t(8)), uint8_t(0));
  EXPECT_EQ(sc::shift_left(true, false), true);
  EXPECT_EQ(sc::shift_left(true, true), false);
  EXPECT_EQ(sc::shift_right_arithmetic(true, true), false);
}

TEST(ScalarSemantics, NextafterAtZeroAndAcrossSigns) {
  const float denorm = std::numeric_limits<float>::denorm_min(), fmax = std::numeric_limits<float>::max();
  EXPECT_SAME(sc::nextafter(0.f, 1.f), denorm);
  EXPECT_SAME(sc::nextafter(0.f, -1.f), -denorm);
  EXPECT_SAME(sc::nextafter(-0.f, 1.f), denorm);
  EXPECT_SAME(sc::nextafter(-denorm, 1.f), -0.f);
  EXPECT_SAME(sc::nextafter(0.f, -0.f), -0.f);  // equal: the second
  EXPECT_SAME(sc::nextafter(1.f, 2.f), from_bits(0x3f800001));
  EXPECT_SAME(sc::nextafter(1.f, 0.f), from_bits(0x3f7fffff));
  EXPECT_SAME(sc::nextafter(kInfF, 0.f), fmax);
  EXPECT_SAME(sc::nextafter(fmax, kInfF), kInfF);
  EXPECT_SAME(sc::nextafter(1.0, 2.0), 1.0 + std::ldexp(1.0, -52));
  EXPECT_SAME(sc::nextafter(kNaN, 0.0), kNaN);
  // float16: steps of the 16-bit value.
  EXPECT_SAME(sc::nextafter_float16(0.f, 1.f), std::ldexp(1.f, -24));
  EXPECT_SAME(sc::nextafter_float16(0.f, -1.f), -std::ldexp(1.f, -24));
  EXPECT_SAME(sc::nextafter_float16(-0.f, 1.f), std::ldexp(1.f, -24));
  EXPECT_SAME(sc::nextafter_float16(-std::ldexp(1.f, -24), 1.f), -0.f);
  EXPECT_SAME(sc::nextafter_float16(std::ldexp(1.f, -24), -1.f), 0.f);
  EXPECT_SAME(sc::nextafter_float16(0.f, -0.f), -0.f);
  EXPECT_SAME(sc::nextafter_float16(1.f, 2.f), 1.0009765625f);  // 1 + 2^-10
  EXPECT_SAME(sc::nextafter_float16(1.f, 0.f), 0.99951171875f);  // 1 - 2^-11
  EXPECT_SAME(sc::nextafter_float16(-1.f, -2.f), -1.0009765625f);
  EXPECT_SAME(sc::nextafter_float16(65504.f, kInfF), kInfF);
  EXPECT_SAME(sc::nextafter_float16(kInfF, 0.f), 65504.f);
  EXPECT_SAME(sc::nextafter_float16(kNaNF, 0.f), kNaNF);
  // bfloat16: 8 bits of precision.
  EXPECT_SAME(sc::nextafter_bfloat16(1.f, 2.f), 1.0078125f);  // 1 + 2^-7
  EXPECT_SAME(sc::nextafter_bfloat16(1.f, 0.f), 0.99609375f);  // 1 - 2^-8
  EXPECT_SAME(sc::nextafter_bfloat16(0.f, 1.f), std::ldexp(1.f, -133));
  EXPECT_SAME(sc::nextafter_bfloat16(0.f, -1.f), -std::ldexp(1.f, -133));
  EXPECT_SAME(sc::nextafter_bfloat16(-1.f, -2.f), -1.0078125f);
}

TEST(ScalarSemantics, FloatFunctionsAtSpecialValues) {
  EXPECT_SAME(sc::sigmoid(0.f), 0.5f);
  EXPECT_SAME(sc::sigmoid(-kInf), 0.0);
  EXPECT_SAME(sc::sigmoid(kInf), 1.0);
  EXPECT_SAME(sc::rsqrt(4.0), 0.5);
  EXPECT_SAME(sc::rsqrt(0.f), kInfF);
  EXPECT_SAME(sc::rsqrt(-1.0), kNaN);
  EXPECT_SAME(sc::reciprocal(-0.0), -kInf);
  EXPECT_SAME(sc::log(0.0), -kInf);
  EXPECT_SAME(sc::log(-1.f), kNaNF);
  EXPECT_SAME(sc::exp(-kInf), 0.0);
  EXPECT_SAME(sc::copysign(3.0, -0.0), -3.0);
  EXPECT_TRUE(std::signbit(sc::copysign(kNaN, -1.0)));
  EXPECT_SAME(sc::atan2(0.0, -0.0), std::acos(-1.0));  // pi
  EXPECT_SAME(sc::atan2(-0.0, -0.0), -std::acos(-1.0));
  EXPECT_SAME(sc::hypot(kInf, kNaN), kInf);
  // erfinv: erfinv(0.5) = 0.476936276204469873..., digamma(1) = -Euler's gamma,
  // digamma(1/2) = -gamma - 2 ln 2, digamma(-1/2) = digamma(1/2) + 2.
  EXPECT_SAME(sc::erfinv(0.0), 0.0);
  EXPECT_SAME(sc::erfinv(1.0), kInf);
  EXPECT_SAME(sc::erfinv(-1.f), -kInfF);
  EXPECT_SAME(sc::erfinv(1.5), kNaN);
  EXPECT_SAME(sc::erfinv(kNaN), kNaN);
  EXPECT_NEAR(sc::erfinv(0.5), 0.47693627620446987, 1e-15);
  EXPECT_NEAR(sc::erfinv(-0.999), -2.326753765513525, 1e-13);
  const double gamma = 0.57721566490153286, ln2 = 0.69314718055994531;
  EXPECT_NEAR(sc::digamma(1.0), -gamma, 1e-13);  // the series' accuracy: ~2e-14
  EXPECT_NEAR(sc::digamma(0.5), -gamma - 2 * ln2, 1e-13);
  EXPECT_NEAR(sc::digamma(-0.5), -gamma - 2 * ln2 + 2, 1e-13);
  EXPECT_NEAR(sc::digamma(20.f), 2.9705239922421490f, 1e-6);
  EXPECT_SAME(sc::digamma(0.0), -kInf);
  EXPECT_SAME(sc::digamma(-0.0), kInf);
  EXPECT_SAME(sc::digamma(-2.0), kNaN);
  EXPECT_SAME(sc::digamma(-kInf), kNaN);
}

TEST(ScalarSemantics, ConvertElementType) {
  using sc::convert_element_type;
  // float -> int: NaN -> 0; truncate; saturate to int64; then wrap to the width.
  EXPECT_EQ(convert_element_type<int32_t>(kNaN), 0);
  EXPECT_EQ(convert_element_type<int32_t>(kInf), -1);  // int64 max's low 32 bits
  EXPECT_EQ(convert_element_type<int32_t>(-kInf), 0);  // int64 min's low 32 bits
  EXPECT_EQ(convert_element_type<int64_t>(kInf), kMax64);
  EXPECT_EQ(convert_element_type<int64_t>(-1e30f), kMin64);
  EXPECT_EQ(convert_element_type<int64_t>(9.3e18), kMax64);
  EXPECT_EQ(convert_element_type<int64_t>(-9.3e18), kMin64);
  EXPECT_EQ(convert_element_type<int64_t>(-9223372036854775808.0), kMin64);
  EXPECT_EQ(convert_element_type<int32_t>(3e9), int32_t(-1294967296));  // 3e9 - 2^32
  EXPECT_EQ(convert_element_type<int32_t>(-1.5f), -1);
  EXPECT_EQ(convert_element_type<int8_t>(-129.9), int8_t(127));  // -129 wraps
  EXPECT_EQ(convert_element_type<uint8_t>(-1.0), uint8_t(255));
  EXPECT_EQ(convert_element_type<uint8_t>(300.7), uint8_t(44));
  // int -> int wraps; int / float -> bool is != 0.
  EXPECT_EQ(convert_element_type<int8_t>(int32_t(200)), int8_t(-56));
  EXPECT_EQ(convert_element_type<uint8_t>(kMin64 + 3), uint8_t(3));
  EXPECT_EQ(convert_element_type<bool>(int32_t(256)), true);
  EXPECT_EQ(convert_element_type<bool>(kNaN), true);
  EXPECT_EQ(convert_element_type<bool>(-0.0), false);
  EXPECT_EQ(convert_element_type<bool>(1e-40f), true);  // a subnormal is nonzero
  EXPECT_EQ(convert_element_type<uint8_t>(true), uint8_t(1));
  EXPECT_SAME(convert_element_type<double>(true), 1.0);
  // To float: round to nearest even.
  EXPECT_SAME(convert_element_type<float>(int64_t(9007199254740993)), 9007199254740992.f);
  EXPECT_SAME(convert_element_type<float>(int32_t(16777217)), 16777216.f);  // 2^24 + 1: tie to even
  EXPECT_SAME(convert_element_type<float>(int32_t(16777219)), 16777220.f);
  EXPECT_SAME(convert_element_type<float>(1e40), kInfF);
  EXPECT_SAME(convert_element_type<float>(-0.0), -0.f);
}

TEST(ScalarSemantics, Float16AndBFloat16Rounding) {
  // float16: round to nearest even, overflow to inf, subnormals down to 2^-24.
  EXPECT_EQ(sc::float_to_float16(1.f), 0x3c00);
  EXPECT_EQ(sc::float_to_float16(-0.f), 0x8000);
  EXPECT_EQ(sc::float_to_float16(65504.f), 0x7bff);
  EXPECT_EQ(sc::float_to_float16(65519.f), 0x7bff);
  EXPECT_EQ(sc::float_to_float16(65520.f), 0x7c00);  // halfway to 65536: even = inf
  EXPECT_EQ(sc::float_to_float16(-1e6f), 0xfc00);
  EXPECT_EQ(sc::float_to_float16(std::ldexp(1.f, -24)), 0x0001);
  EXPECT_EQ(sc::float_to_float16(std::ldexp(1.f, -25)), 0x0000);  // halfway to 2^-24: even = 0
  EXPECT_EQ(sc::float_to_float16(std::ldexp(3.f, -26)), 0x0001);
  EXPECT_EQ(sc::float_to_float16(std::ldexp(3.f, -25)), 0x0002);  // 1.5 * 2^-24: even = 2
  EXPECT_EQ(sc::float_to_float16(std::ldexp(1.f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(sc::float_to_float16(1.f + std::ldexp(1.f, -11)), 0x3c00);       // tie: even
  EXPECT_EQ(sc::float_to_float16(1.f + std::ldexp(3.f, -11)), 0x3c02);       // tie: even
  EXPECT_EQ(sc::float_to_float16(1.f + std::ldexp(1.f, -11) + std::ldexp(1.f, -20)), 0x3c01);
  EXPECT_EQ(sc::float_to_float16(kNaNF), 0x7e00);
  EXPECT_EQ(sc::float_to_float16(-kNaNF), 0xfe00);
  EXPECT_EQ(sc::float_to_float16(kInfF), 0x7c00);
  EXPECT_SAME(sc::float16_to_float(0x0001), std::ldexp(1.f, -24));
  EXPECT_SAME(sc::float16_to_float(0x83ff), -std::ldexp(1023.f, -24));
  EXPECT_SAME(sc::float16_to_float(0x3555), 0.333251953125f);
  EXPECT_SAME(sc::float16_to_float(0x7c00), kInfF);
  EXPECT_SAME(sc::float16_to_float(0x8000), -0.f);
  EXPECT_TRUE(std::isnan(sc::float16_to_float(0x7e00)));
  // bfloat16: the top 16 bits, round to nearest even; every NaN is 0x7fc0.
  EXPECT_EQ(sc::float_to_bfloat16(1.f), 0x3f80);
  EXPECT_EQ(sc::float_to_bfloat16(1.f + std::ldexp(1.f, -8)), 0x3f80);  // tie: even
  EXPECT_EQ(sc::float_to_bfloat16(1.f + std::ldexp(3.f, -8)), 0x3f82);  // tie: even
  EXPECT_EQ(sc::float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds to inf
  EXPECT_EQ(sc::float_to_bfloat16(kNaNF), 0x7fc0);
  EXPECT_EQ(sc::float_to_bfloat16(-kNaNF), 0x7fc0);
  EXPECT_SAME(sc::bfloat16_to_float(0xbf80), -1.f);
}

// The header's 16-bit conversions are core's Half / BFloat16 (the storage types eager uses) bit
// for bit: every 16-bit pattern to float, and from float every value, each midpoint between
// neighbours and the floats just beside it, plus a sweep over all exponents.
TEST(ScalarSemantics, Float16ConversionsAreCoresBitForBit) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float want = kiln::Half::to_float(uint16_t(h)), got = sc::float16_to_float(uint16_t(h));
    ASSERT_TRUE(bits(want) == bits(got)) << std::hex << h;
    const float wb = kiln::BFloat16::to_float(uint16_t(h)), gb = sc::bfloat16_to_float(uint16_t(h));
    ASSERT_TRUE(bits(wb) == bits(gb) || (std::isnan(wb) && std::isnan(gb))) << std::hex << h;
    for (float v : {want, wb}) {
      if (std::isnan(v)) continue;
      for (float f : {v, std::nextafter(v, kInfF), std::nextafter(v, -kInfF)}) {
        ASSERT_EQ(sc::float_to_float16(f), kiln::Half::from_float(f)) << f;
        ASSERT_EQ(sc::float_to_bfloat16(f), kiln::BFloat16::from_float(f)) << f;
      }
    }
    // The midpoint between h and its upper neighbour (as float16), and beside it.
    if ((h & 0x7fff) < 0x7c00) {
      const float lo = kiln::Half::to_float(uint16_t(h)), hi = kiln::Half::to_float(uint16_t(h + 1));
      const float mid = lo + (hi - lo) / 2;  // exact: float has 13 more bits
      for (float f : {mid, std::nextafter(mid, kInfF), std::nextafter(mid, -kInfF)})
        ASSERT_EQ(sc::float_to_float16(f), kiln::Half::from_float(f)) << f;
    }
  }
  for (uint64_t u = 0; u <= 0xffffffffull; u += 0x10001) {  // ~65k floats of every exponent
    const float f = from_bits(uint32_t(u));
    ASSERT_EQ(sc::float_to_float16(f), kiln::Half::from_float(f)) << std::hex << u;
    ASSERT_EQ(sc::float_to_bfloat16(f), kiln::BFloat16::from_float(f)) << std::hex << u;
  }
}

TEST(ScalarSemantics, WhereSelectsAnyType) {
  EXPECT_EQ(sc::where(true, int64_t(1), int64_t(2)), 1);
  EXPECT_EQ(sc::where(false, uint16_t(0x7e00), uint16_t(0x3c00)), 0x3c00);  // 16-bit storage bits
  EXPECT_SAME(sc::where(true, -0.0, 0.0), -0.0);
}

}  // namespace
