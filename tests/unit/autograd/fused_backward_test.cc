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

TEST(FusedBackward, LayerNormMatchesReferenceAndFormula) {
  // Rows of 2 x 48 normalized elements; with weight and bias, weight only, and neither.
  const int64_t rows = 40, m = 96;
  for (DType dt : {kFloat32, kFloat64})
    for (int params = 0; params < 3; ++params)
      for (const char* layout : {"contiguous", "strided"}) {
        std::vector<double> xv, gv, wv;
        Tensor x = random_tensor({rows / 4, 4, 2, m / 2}, dt, &xv, layout, -3, 3);
        Tensor gy = random_tensor(x.sizes(), dt, &gv);
        Tensor w = params < 2 ? random_tensor({2, m / 2}, dt, &wv).requires_grad_() : Tensor();
        Tensor b = params == 0 ? random_tensor({2, m / 2}, dt).requires_grad_() : Tensor();
        if (!w.defined()) wv.assign(size_t(m), 1.0);
        // Reference in double: xhat = (x - mu) rstd, gw = g w; dx = rstd (gw - mean gw - xhat mean(gw xhat)).
        std::vector<double> dx(xv.size()), dw(size_t(m), 0.0), db(size_t(m), 0.0);
        for (size_t r = 0; r < size_t(rows); ++r) {
          const double* xr = &xv[r * m];
          const double* gr = &gv[r * m];
          double mu = 0, var = 0, mg = 0, mgx = 0;
          for (size_t i = 0; i < size_t(m); ++i) mu += xr[i] / m;
          for (size_t i = 0; i < size_t(m); ++i) var += (xr[i] - mu) * (xr[i] - mu) / m;
          const double rstd = 1 / std::sqrt(var + 1e-5);
          for (size_t i = 0; i < size_t(m); ++i) {
            mg += gr[i] * wv[i] / m;
            mgx += gr[i] * wv[i] * (xr[i] - mu) * rstd / m;
          }
          for (size_t i = 0; i < size_t(m); ++i) {
            const double xh = (xr[i] - mu) * rstd;
            dx[r * m + i] = rstd * (gr[i] * wv[i] - mg - xh * mgx);
            dw[i] += gr[i] * xh;
            db[i] += gr[i];
          }
        }
        TensorList in{x.detach().requires_grad_()};
        if (w.defined()) in.push_back(w);
        if (b.defined()) in.push_back(b);
        auto f = [&] { return layer_norm(in[0], {2, m / 2}, w, b); };
        TensorList fused = grad({f()}, in, {gy});
        TensorList formula = grad({f()}, in, {gy}, false, true);
        const std::string what = std::string("layer_norm ") + name(dt) + " params " + std::to_string(params) + " " + layout;
        const double t = dt == kFloat64 ? 1e-10 : 2e-4;
        for (const TensorList* gs : {&fused, &formula}) {
          const std::string which = what + (gs == &fused ? " fused" : " formula");
          EXPECT_EQ((*gs)[0].dtype(), dt) << which;
          expect_close((*gs)[0], dx, t, t, which + " dx");
          if (w.defined()) expect_close((*gs)[1], dw, t, t * rows, which + " dw");
          if (b.defined()) expect_close((*gs)[2], db, t, t * rows, which + " db");
        }
        for (size_t i = 0; i < fused.size(); ++i)
          expect_close(fused[i], formula[i].detach().to_vector<double>(), t, t * rows, what + " fused vs formula");
      }
}

TEST(FusedBackward, AttentionAndSoftmaxMatchFormulaAndFiniteDifferences) {
  // scaled_dot_product_attention without a mask (causal or not, L != S, grouped heads) and softmax
  // along the last dim: the fused gradients against the formula's in float32, and in float64
  // against finite differences (gradcheck's backward is unrecorded, so it runs the fused kernels).
  for (bool causal : {false, true})
    for (bool gqa : {false, true}) {
      const std::string what = std::string("sdpa") + (causal ? " causal" : "") + (gqa ? " gqa" : "");
      Tensor q = random_tensor({2, 4, 5, 8}, kFloat32), k = random_tensor({2, gqa ? 2 : 4, 7, 8}, kFloat32);
      Tensor v = random_tensor({2, gqa ? 2 : 4, 7, 6}, kFloat32, nullptr, "strided");
      Tensor gy = random_tensor({2, 4, 5, 6}, kFloat32);
      TensorList in{q.requires_grad_(), k.requires_grad_(), v.requires_grad_()};
      auto f = [&] { return scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, causal, 0.3, gqa); };
      TensorList fused = grad({f()}, in, {gy}), formula = grad({f()}, in, {gy}, false, true);
      for (size_t i = 0; i < 3; ++i)
        expect_close(fused[i], formula[i].detach().to_vector<double>(), 1e-5, 1e-6, what + " input " + std::to_string(i));
      expect_gradcheck(
          [&](const TensorList& t) {
            return TensorList{scaled_dot_product_attention(t[0], t[1], t[2], {}, 0.0, causal, std::nullopt, gqa)};
          },
          {grad_input({2, 4, 3, 4}), grad_input({2, gqa ? 2 : 4, 6, 4}), grad_input({2, gqa ? 2 : 4, 6, 5})}, what);
    }
  Tensor x = random_tensor({6, 33}, kFloat32, nullptr, "transposed", -5, 5), gy = random_tensor({6, 33}, kFloat32);
  auto [fused, formula] = both_grads([](const Tensor& t) { return softmax(t, 1); }, x, gy);
  expect_close(fused, formula.to_vector<double>(), 1e-5, 1e-7, "softmax");
  expect_gradcheck([](const TensorList& t) { return TensorList{softmax(t[0], -1)}; }, {grad_input({3, 9})}, "softmax");
}
