// The float exp, erf and sigmoid generated CPU code computes, through the compiled path: a tile
// kernel applying each to every 4099th float bit pattern (about a million inputs, all exponents
// and signs), against double libm, within the bounds scalar/inline_math.h states. On a host with
// AVX-512 these are the vector forms (scalar/inline_math_avx512.h) in the vectorized loop, and the
// scalar forms for the tail of a length not a multiple of 16; inline_math_test.cc sweeps the
// scalar forms alone.
#include <gtest/gtest.h>

#include <kiln/kiln.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "tile/builder.h"
#include "tile/cpu/kernel.h"

namespace kiln::tile {
namespace {

using cpu::Grid;

// out[i] = fn(x[i]) for i < n, one program per BLOCK elements.
Program unary_kernel(const std::string& name, const std::function<Val(Builder&, Val)>& fn) {
  Builder b(name);
  auto x = b.arg_ptr("x", kFloat32), out = b.arg_ptr("out", kFloat32);
  auto n = b.arg_int("n");
  const int64_t BLOCK = b.constexpr_int("BLOCK", 4096);
  auto offs = b.program_id(0) * BLOCK + b.arange(0, BLOCK);
  auto m = offs < n;
  b.store(out + offs, fn(b, b.load(x + offs, m)), m);
  return b.finish();
}

float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The worst error in float ulps over references of normal magnitude; results below FLT_MIN must
// be within FLT_MIN; inf and NaN where libm has them.
void expect_within(const std::string& name, const std::function<Val(Builder&, Val)>& fn, double (*ref)(double),
                   double ulps, float skip_below) {
  std::vector<float> xs;
  for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4099) xs.push_back(float_of(uint32_t(b)));
  for (float v : {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.8f, -87.4f, -200.0f, 3.92f, 4.0f, 1e-45f}) xs.push_back(v);
  const int64_t n = int64_t(xs.size());  // not a multiple of 16: a scalar tail
  Tensor x = tensor(std::vector<float>(xs), {n}), out = zeros({n});
  cpu::Kernel k = cpu::compile(unary_kernel(name, fn));
  k(Grid((n + 4095) / 4096), x, out, n);
  const float* got = out.data<float>();
  double max_ulp = 0, max_abs = 0;
  float worst = 0;
  int mismatched = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float xi = xs[size_t(i)], g = got[i];
    if (xi < skip_below) continue;
    const double want = ref(double(xi));
    if (std::isnan(want) || std::fabs(want) > std::numeric_limits<float>::max()) {
      mismatched += std::isnan(want) ? !std::isnan(g) : g != float(want);
    } else if (std::fabs(want) < double(std::numeric_limits<float>::min())) {
      max_abs = std::max(max_abs, std::fabs(double(g) - want));
    } else if (!std::isfinite(g)) {
      ++mismatched;
    } else if (const double e = std::fabs(double(g) - want) / std::ldexp(1.0, std::ilogb(want) - 23); e > max_ulp) {
      max_ulp = e, worst = xi;
    }
  }
  EXPECT_LE(max_ulp, ulps) << name << " at x = " << worst;
  EXPECT_LE(max_abs, double(std::numeric_limits<float>::min())) << name;
  EXPECT_EQ(mismatched, 0) << name << ": inf/NaN not as libm's";
}

double sigmoid_ref(double x) { return 1 / (1 + std::exp(-x)); }
double exp_ref(double x) { return std::exp(x); }
double erf_ref(double x) { return std::erf(x); }

TEST(TileMath, CompiledExpErfSigmoidWithinTheirBounds) {
  // exp and sigmoid below -86.6 (results near FLT_MIN) have their own bound (inline_math_test.cc).
  expect_within("exp", [](Builder& b, Val v) { return b.exp(v); }, exp_ref, 1.5, -86.6f);
  expect_within("erf", [](Builder& b, Val v) { return b.erf(v); }, erf_ref, 2.5, -INFINITY);
  expect_within("sigmoid", [](Builder& b, Val v) { return b.sigmoid(v); }, sigmoid_ref, 3, -86.6f);
}

}  // namespace
}  // namespace kiln::tile
