// Test helpers: independent random data (std::mt19937, not kiln's generator), float64
// references, non-contiguous layouts, closeness checks.
#pragma once
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace kiln::test {

// f() throws a kiln::Error whose text contains `text` (a failure if it throws none).
template <class F>
void expect_error(F&& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one saying: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// How often `what` occurs in `text` (counting overlapping occurrences): for checks on logs and
// generated code.
// CompileOptions that compile with the "inductor" backend.
inline CompileOptions inductor_options() {
  CompileOptions o;
  o.backend = "inductor";
  return o;
}

inline int count_occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

inline std::mt19937_64& rng() {
  static std::mt19937_64 r(1234);
  return r;
}

// Random doubles in [lo, hi).
inline std::vector<double> random_values(int64_t n, double lo = -2, double hi = 2) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(size_t(std::max<int64_t>(n, 0)));
  for (double& x : v) x = u(rng());
  return v;
}

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

// A tensor of the given shape and dtype holding `values` (converted), contiguous.
inline Tensor make(const std::vector<double>& values, const Shape& shape, DType dtype = kFloat64) {
  return tensor(values, shape, dtype);
}

// A random tensor; `layout` = "contiguous", "transposed" (last two dims swapped in memory) or
// "strided" (every other element of a larger buffer). The logical values are the same as the
// returned vector in every layout.
inline Tensor random_tensor(const Shape& shape, DType dtype, std::vector<double>* values_out = nullptr,
                            const std::string& layout = "contiguous", double lo = -2, double hi = 2) {
  std::vector<double> vals = random_values(numel(shape), lo, hi);
  if (dtype == kBool) for (double& x : vals) x = x > (lo + hi) / 2 ? 1 : 0;
  else if (!is_floating(dtype)) for (double& x : vals) x = std::round(x);
  Tensor base;
  if (layout == "transposed" && shape.size() >= 2) {
    Shape ts = shape;
    std::swap(ts[ts.size() - 1], ts[ts.size() - 2]);
    // Build the transposed storage so that t.transpose(-1,-2) has the logical values.
    Tensor logical = make(vals, shape, kFloat64);
    base = logical.transpose(-1, -2).contiguous().to(dtype).transpose(-1, -2);
  } else if (layout == "strided" && !shape.empty()) {
    Shape big = shape;
    big.back() *= 2;
    Tensor storage = zeros(big, dtype);
    base = storage.slice(-1, 0, std::nullopt, 2);
    base.copy_from(make(vals, shape, kFloat64).to(dtype));
  } else {
    base = make(vals, shape, kFloat64).to(dtype);
  }
  // Values as the dtype actually stores them (rounding of 16-bit floats included).
  if (values_out) *values_out = base.to_vector<double>();
  return base;
}

// Relative+absolute tolerance for a dtype (compared against a float64 reference).
inline double tolerance(DType dt) {
  switch (dt) {
    case kFloat16: return 2e-3;
    case kBFloat16: return 1.6e-2;
    case kFloat32: return 2e-6;
    default: return 1e-12;
  }
}

inline void expect_close(const Tensor& actual, const std::vector<double>& expected, double rtol, double atol,
                         const std::string& what = "") {
  std::vector<double> got = actual.to_vector<double>();
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = expected[i], g = got[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(g)) << what << " element " << i << ": expected nan, got " << g;
    } else if (std::isinf(e)) {
      EXPECT_EQ(g, e) << what << " element " << i;
    } else {
      EXPECT_LE(std::abs(g - e), atol + rtol * std::abs(e)) << what << " element " << i << ": got " << g
                                                              << ", expected " << e;
    }
  }
}

// Checks gradients of fn (float64 inputs) against finite differences; reports failures.
inline void expect_gradcheck(const std::function<TensorList(const TensorList&)>& fn, const TensorList& inputs,
                             const std::string& what = "", GradcheckOptions opts = {}) {
  try {
    gradcheck(fn, inputs, opts);
  } catch (const Error& e) {
    ADD_FAILURE() << what << ": " << e.what();
  }
}

// A float64 leaf requiring grad with random values.
inline Tensor grad_input(const Shape& shape, double lo = -2, double hi = 2) {
  Tensor t = random_tensor(shape, kFloat64, nullptr, "contiguous", lo, hi);
  t.requires_grad_();
  return t;
}

}  // namespace kiln::test
