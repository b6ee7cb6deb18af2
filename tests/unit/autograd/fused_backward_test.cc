// The fused CPU backward kernels (eager/cpu/nn/backward.h), which an eager backward runs in place
// of a derivative formula's kiln ops: their gradients against a float64 reference written here,
// and against the formula itself (a backward with create_graph records, so it runs the formula),
// in float32, float64 and bfloat16, on contiguous, transposed and strided inputs.
#include <kiln/kiln.h>

#include <cmath>

#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;

namespace {

double tol(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 3e-2; }

// d/dx of f(x) with the upstream gradient gy, once unrecorded (fused kernel) and once recorded
// (create_graph: the formula's ops).
std::pair<Tensor, Tensor> both_grads(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, const Tensor& gy) {
  Tensor leaf = x.detach().requires_grad_();
  Tensor fused = grad({f(leaf)}, {leaf}, {gy}).at(0);
  Tensor formula = grad({f(leaf)}, {leaf}, {gy}, false, true).at(0).detach();
  return {fused, formula};
}

double gelu_slope(double u, bool tanh_mode) {
  if (!tanh_mode) return 0.5 * (1 + std::erf(u / std::sqrt(2.0))) + u * std::exp(-u * u / 2) / std::sqrt(2 * M_PI);
  const double k = std::sqrt(2 / M_PI), c = 0.044715, t = std::tanh(k * (u + c * u * u * u));
  return 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * k * (1 + 3 * c * u * u);
}

}  // namespace

TEST(FusedBackward, GeluMatchesReferenceAndFormula) {
  for (bool tanh_mode : {true, false})
    for (DType dt : {kFloat32, kFloat64, kBFloat16})
      for (const char* layout : {"contiguous", "transposed", "strided"}) {
        std::vector<double> xv, gv;
        Tensor x = random_tensor({24, 40}, dt, &xv, layout, -7, 7);
        Tensor gy = random_tensor({24, 40}, dt, &gv);
        const std::string what = std::string("gelu ") + (tanh_mode ? "tanh " : "erf ") + name(dt) + " " + layout;
        auto [fused, formula] = both_grads([&](const Tensor& t) { return gelu(t, tanh_mode ? "tanh" : "none"); }, x, gy);
        EXPECT_EQ(fused.dtype(), dt) << what;
        std::vector<double> ref(xv.size());
        for (size_t i = 0; i < xv.size(); ++i) ref[i] = gv[i] * gelu_slope(xv[i], tanh_mode);
        expect_close(fused, ref, tol(dt), tol(dt), what + " fused");
        expect_close(formula, ref, tol(dt), tol(dt), what + " formula");
        expect_close(fused, formula.to_vector<double>(), tol(dt), tol(dt), what + " fused vs formula");
      }
}

TEST(FusedBackward, GeluNonFiniteAsFormula) {
  // inf, -inf and NaN give NaN (inf * 0 in the slope), far tails 0 and gy, as the formula does.
  for (bool tanh_mode : {true, false}) {
    Tensor x = tensor(std::vector<double>{INFINITY, -INFINITY, NAN, 0.0, -0.0, -50, 50, -44.5, -43.5, 1e-3}, {10}, kFloat32);
    Tensor gy = full({10}, 2.0, kFloat32);
    auto [fused, formula] = both_grads([&](const Tensor& t) { return gelu(t, tanh_mode ? "tanh" : "none"); }, x, gy);
    std::vector<double> f = fused.to_vector<double>(), r = formula.to_vector<double>();
    for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(std::isnan(f[i]) && std::isnan(r[i])) << i;
    EXPECT_EQ(f[3], 1.0);  // slope 1/2 at 0
    EXPECT_EQ(f[4], 1.0);
    EXPECT_EQ(f[5], 0.0);
    EXPECT_EQ(f[6], 2.0);
    EXPECT_NEAR(f[7], 0.0, 1e-30);
    EXPECT_NEAR(f[8], 0.0, 1e-30);
    expect_close(fused.slice(0, 3), formula.slice(0, 3).to_vector<double>(), 1e-6, 1e-30, "gelu tails");
  }
}
