// Integer overflow wraps (two's complement, as PyTorch) and float -> int conversions of NaN and
// out-of-range values give a defined result, instead of undefined behaviour. The expected values
// are computed here in uint64 arithmetic, truncated to the dtype's width.
#include <limits>

#include "support/test_util.h"

namespace kiln::test {
namespace {

// Random integers of T's whole range (raw bits), so sums and products overflow.
template <class T>
std::vector<T> random_ints(int64_t n) {
  std::vector<T> v(static_cast<size_t>(n));
  for (T& x : v) x = T(rng()());  // C++20: modular conversion
  return v;
}

// The wrapped result of an op done in uint64: low bits reinterpreted as T.
template <class T>
T trunc_to(uint64_t v) {
  return T(v);
}

template <class T>
void check_sum_prod_wrap(DType dt) {
  const int64_t rows = 7, cols = 300;
  std::vector<T> v = random_ints<T>(rows * cols);
  Tensor x = tensor(v, {rows, cols});
  ASSERT_EQ(x.dtype(), dt);
  // Over the last dim, the first dim, and all dims; output dtype = input dtype.
  std::vector<T> s_last(rows), p_last(rows), s_first(cols);
  for (int64_t r = 0; r < rows; ++r) {
    uint64_t s = 0, p = 1;
    for (int64_t c = 0; c < cols; ++c) {
      s += uint64_t(int64_t(v[size_t(r * cols + c)]));
      p *= uint64_t(int64_t(v[size_t(r * cols + c)]));
    }
    s_last[size_t(r)] = trunc_to<T>(s);
    p_last[size_t(r)] = trunc_to<T>(p);
  }
  uint64_t all = 0;
  for (int64_t c = 0; c < cols; ++c) {
    uint64_t s = 0;
    for (int64_t r = 0; r < rows; ++r) s += uint64_t(int64_t(v[size_t(r * cols + c)]));
    s_first[size_t(c)] = trunc_to<T>(s);
    all += s;
  }
  EXPECT_EQ(sum(x, {-1}, false, dt).to_vector<T>(), s_last);
  EXPECT_EQ(prod(x, {1}, false, dt).to_vector<T>(), p_last);
  EXPECT_EQ(sum(x, {0}, false, dt).to_vector<T>(), s_first);
  EXPECT_EQ(sum(x.transpose(0, 1), {1}, false, dt).to_vector<T>(), s_first);  // non-contiguous
  EXPECT_EQ(sum(x, std::nullopt, false, dt).item<T>(), trunc_to<T>(all));
}

TEST(UBTest, SumProdWrap) {
  check_sum_prod_wrap<int64_t>(kInt64);
  check_sum_prod_wrap<int32_t>(kInt32);
  check_sum_prod_wrap<int16_t>(kInt16);
  check_sum_prod_wrap<int8_t>(kInt8);
  check_sum_prod_wrap<uint8_t>(kUInt8);
}

TEST(UBTest, SumOfLargeInt64Wraps) {
  const int64_t mx = std::numeric_limits<int64_t>::max();
  Tensor x = tensor(std::vector<int64_t>{mx, mx, 5});
  EXPECT_EQ(sum(x).item<int64_t>(), int64_t(uint64_t(mx) * 2 + 5));
  // A long reduction (split across threads) wraps the same way.
  std::vector<int64_t> v = random_ints<int64_t>(100000);
  uint64_t s = 0;
  for (int64_t e : v) s += uint64_t(e);
  EXPECT_EQ(sum(tensor(v)).item<int64_t>(), int64_t(s));
}

TEST(UBTest, CumsumWraps) {
  std::vector<int64_t> v = random_ints<int64_t>(50);
  std::vector<int64_t> want(v.size());
  uint64_t s = 0;
  for (size_t i = 0; i < v.size(); ++i) want[i] = int64_t(s += uint64_t(v[i]));
  EXPECT_EQ(cumsum(tensor(v), 0).to_vector<int64_t>(), want);
}

template <class T>
void check_binary_wrap() {
  const int64_t n = 257;
  std::vector<T> a = random_ints<T>(n), b = random_ints<T>(n);
  Tensor ta = tensor(a), tb = tensor(b);
  std::vector<T> add_w(static_cast<size_t>(n)), sub_w(add_w), mul_w(add_w), neg_w(add_w), cube_w(add_w);
  for (size_t i = 0; i < size_t(n); ++i) {
    const uint64_t x = uint64_t(int64_t(a[i])), y = uint64_t(int64_t(b[i]));
    add_w[i] = trunc_to<T>(x + y);
    sub_w[i] = trunc_to<T>(x - y);
    mul_w[i] = trunc_to<T>(x * y);
    neg_w[i] = trunc_to<T>(uint64_t(0) - x);
    cube_w[i] = trunc_to<T>(x * x * x);
  }
  EXPECT_EQ(add(ta, tb).to_vector<T>(), add_w);
  EXPECT_EQ(sub(ta, tb).to_vector<T>(), sub_w);
  EXPECT_EQ(mul(ta, tb).to_vector<T>(), mul_w);
  const Tensor three = tensor(std::vector<T>(static_cast<size_t>(n), T(3)));
  EXPECT_EQ(pow(ta, three).to_vector<T>(), cube_w);
  if constexpr (std::is_signed_v<T>) {
    EXPECT_EQ(neg(ta).to_vector<T>(), neg_w);
  }
  // Broadcast scalar operand path.
  const T c = a[0];
  std::vector<T> addc(static_cast<size_t>(n));
  for (size_t i = 0; i < size_t(n); ++i) addc[i] = trunc_to<T>(uint64_t(int64_t(b[i])) + uint64_t(int64_t(c)));
  const Tensor tc = tensor(std::vector<T>{c}, Shape{});
  EXPECT_EQ(add(tb, tc).to_vector<T>(), addc);
}

TEST(UBTest, BinaryWrap) {
  check_binary_wrap<int64_t>();
  check_binary_wrap<int32_t>();
  check_binary_wrap<int16_t>();
  check_binary_wrap<int8_t>();
  check_binary_wrap<uint8_t>();
}

template <class T>
void check_min_value_neg_abs() {
  const T lo = std::numeric_limits<T>::min();
  Tensor x = tensor(std::vector<T>{lo, T(-5), T(7)});
  // -MIN wraps to MIN, as in two's complement (PyTorch gives the same).
  EXPECT_EQ(neg(x).to_vector<T>(), (std::vector<T>{lo, T(5), T(-7)}));
  EXPECT_EQ(abs(x).to_vector<T>(), (std::vector<T>{lo, T(5), T(7)}));
}

TEST(UBTest, NegAbsOfMinValue) {
  check_min_value_neg_abs<int64_t>();
  check_min_value_neg_abs<int32_t>();
  check_min_value_neg_abs<int16_t>();
  check_min_value_neg_abs<int8_t>();
}

TEST(UBTest, ShiftLeftOverflowWraps) {
  std::vector<int32_t> a = random_ints<int32_t>(64), sh(64);
  std::vector<int32_t> want(64);
  for (size_t i = 0; i < 64; ++i) {
    sh[i] = int32_t(i % 32);
    want[i] = int32_t(uint32_t(a[i]) << sh[i]);
  }
  EXPECT_EQ(shift_left(tensor(a), tensor(sh)).to_vector<int32_t>(), want);
}

// The defined float -> int rule: NaN -> 0; truncate; saturate to int64; wrap to the width.
template <class T>
T expected_cast(double v) {
  if (std::isnan(v)) return T(0);
  if (v >= 9223372036854775808.0) return T(std::numeric_limits<int64_t>::max());
  if (v < -9223372036854775808.0) return T(std::numeric_limits<int64_t>::min());
  return T(int64_t(std::trunc(v)));
}

template <class T>
void check_float_to_int(DType dt) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  const std::vector<double> v = {nan, inf, -inf, 1e30, -1e30, 3e9, -3e9, 300.7, -1.5, -129.9, 70000.2, 9.2e18};
  for (DType src : {kFloat64, kFloat32}) {
    Tensor x = tensor(v, {int64_t(v.size())}, src);
    const std::vector<double> stored = x.to_vector<double>();  // float32 rounds some values
    std::vector<T> want;
    for (double s : stored) want.push_back(expected_cast<T>(s));
    EXPECT_EQ(x.to(dt).to_vector<T>(), want) << name(src) << " -> " << name(dt);
  }
  // 16-bit floats: inf and NaN exist there too.
  Tensor h = tensor(std::vector<double>{nan, inf, -inf, 65504, -2.5}, {5}, kFloat16);
  std::vector<T> want;
  for (double s : h.to_vector<double>()) want.push_back(expected_cast<T>(s));
  EXPECT_EQ(h.to(dt).to_vector<T>(), want) << "float16 -> " << name(dt);
}

TEST(UBTest, FloatToIntConversionIsDefined) {
  check_float_to_int<int64_t>(kInt64);
  check_float_to_int<int32_t>(kInt32);
  check_float_to_int<int16_t>(kInt16);
  check_float_to_int<int8_t>(kInt8);
  check_float_to_int<uint8_t>(kUInt8);
}

TEST(UBTest, FloatToIntIsTruncation) {
  // In-range values still truncate toward zero, as PyTorch's casts.
  Tensor x = tensor(std::vector<double>{2.9, -2.9, 0.5, -0.5, 127.99}, {5});
  EXPECT_EQ(x.to(kInt8).to_vector<int8_t>(), (std::vector<int8_t>{2, -2, 0, 0, 127}));
  EXPECT_EQ(x.to(kInt64).to_vector<int64_t>(), (std::vector<int64_t>{2, -2, 0, 0, 127}));
}

}  // namespace
}  // namespace kiln::test
