// The fast NN kernels (softmax, log_softmax, layer_norm, rms_norm) and their decompositions:
// both against a float64 reference, and against each other, on shapes large enough to thread.
#include <kiln/kiln.h>

#include <cmath>

#include "ops/dispatch.h"
#include "support/test_util.h"

using namespace kiln;
using namespace kiln::test;
using ops::Arg;
using ops::OpId;

namespace {

Tensor run_decomp(OpId op, std::vector<Arg> args) {
  ops::Args a{op, std::move(args)};
  return ops::op_info(op).decomp(a).at(0);
}

// Reference softmax / log_softmax of rows of length n (last dim), values row-major.
std::vector<double> ref_rows_softmax(const std::vector<double>& x, int64_t n, bool log_) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size(); r += size_t(n)) {
    double m = -INFINITY, s = 0;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, x[r + size_t(i)]);
    for (int64_t i = 0; i < n; ++i) s += std::exp(x[r + size_t(i)] - m);
    for (int64_t i = 0; i < n; ++i) {
      const double d = x[r + size_t(i)] - m;
      out[r + size_t(i)] = log_ ? d - std::log(s) : std::exp(d) / s;
    }
  }
  return out;
}

double tol(DType dt) { return dt == kFloat64 ? 1e-12 : dt == kFloat32 ? 1e-5 : 3e-2; }

}  // namespace

TEST(NNKernel, SoftmaxKernelAndDecompMatchReference) {
  for (bool log_ : {false, true})
    for (DType dt : {kFloat32, kFloat64, kBFloat16})
      for (int64_t dim : {1, 0}) {  // last dim (row kernel) and a middle dim (column kernel)
        std::vector<double> xv;
        Tensor x = random_tensor({96, 300}, dt, &xv, "transposed", -6, 6);
        std::vector<double> ref;
        if (dim == 1) {
          ref = ref_rows_softmax(xv, 300, log_);
        } else {  // transpose the reference problem
          std::vector<double> xt(xv.size()), rt;
          for (size_t i = 0; i < 96; ++i)
            for (size_t j = 0; j < 300; ++j) xt[j * 96 + i] = xv[i * 300 + j];
          rt = ref_rows_softmax(xt, 96, log_);
          ref.resize(rt.size());
          for (size_t i = 0; i < 96; ++i)
            for (size_t j = 0; j < 300; ++j) ref[i * 300 + j] = rt[j * 96 + i];
        }
        const OpId op = log_ ? OpId::log_softmax : OpId::softmax;
        Tensor fast = log_ ? log_softmax(x, dim) : softmax(x, dim);
        Tensor dec = run_decomp(op, {x, dim, Arg()});
        const std::string what = std::string(log_ ? "log_softmax " : "softmax ") + name(dt) + " dim " + std::to_string(dim);
        expect_close(fast, ref, tol(dt), tol(dt), what + " kernel");
        expect_close(dec, ref, tol(dt), tol(dt), what + " decomposition");
        // bfloat16: both round one float32 result, so they agree to one bfloat16 ulp.
        expect_close(fast, dec.to_vector<double>(), dt == kBFloat16 ? 8e-3 : tol(dt), tol(dt), what + " kernel vs decomp");
      }
}

TEST(NNKernel, SoftmaxDtypeArgAndNonFinite) {
  std::vector<double> xv;
  Tensor x = random_tensor({5, 7}, kFloat16, &xv);
  Tensor y = softmax(x, -1, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  expect_close(y, ref_rows_softmax(xv, 7, false), 1e-12, 1e-12, "float16 -> float64");
  // -inf entries get probability 0; a row of all -inf is NaN, as in PyTorch.
  Tensor z = tensor<float>({0, -INFINITY, 1, -INFINITY, -INFINITY, -INFINITY}, {2, 3});
  for (const Tensor& r : {softmax(z, 1), run_decomp(OpId::softmax, {z, int64_t(1), Arg()})}) {
    std::vector<float> v = r.to_vector<float>();
    EXPECT_NEAR(v[0], 1 / (1 + std::exp(1.0)), 1e-6);
    EXPECT_EQ(v[1], 0.0f);
    for (size_t i = 3; i < 6; ++i) EXPECT_TRUE(std::isnan(v[i]));
  }
}

TEST(NNKernel, LayerNormAndRmsNormKernelAndDecomp) {
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    const int64_t rows = 64, m = 384;
    std::vector<double> xv, wv, bv;
    Tensor x = random_tensor({rows / 8, 8, m}, dt, &xv, "strided", -3, 3);
    Tensor w = random_tensor({m}, dt, &wv), b = random_tensor({m}, dt, &bv);
    std::vector<double> ln(xv.size()), rn(xv.size());
    for (size_t r = 0; r < size_t(rows); ++r) {
      double mu = 0, var = 0, ms = 0;
      for (size_t i = 0; i < size_t(m); ++i) mu += xv[r * m + i] / double(m);
      for (size_t i = 0; i < size_t(m); ++i) {
        var += std::pow(xv[r * m + i] - mu, 2) / double(m);
        ms += xv[r * m + i] * xv[r * m + i] / double(m);
      }
      for (size_t i = 0; i < size_t(m); ++i) {
        ln[r * m + i] = (xv[r * m + i] - mu) / std::sqrt(var + 1e-5) * wv[i] + bv[i];
        rn[r * m + i] = xv[r * m + i] / std::sqrt(ms + 1e-6) * wv[i];
      }
    }
    const std::string what = name(dt);
    Tensor fast_ln = layer_norm(x, {m}, w, b);
    Tensor dec_ln = run_decomp(OpId::layer_norm, {x, SymShape{m}, w, b, 1e-5});
    expect_close(fast_ln, ln, tol(dt), tol(dt) * 4, "layer_norm kernel " + what);
    expect_close(dec_ln, ln, tol(dt), tol(dt) * 4, "layer_norm decomposition " + what);
    Tensor fast_rn = rms_norm(x, {m}, w, 1e-6);
    Tensor dec_rn = run_decomp(OpId::rms_norm, {x, SymShape{m}, w, 1e-6});
    EXPECT_EQ(fast_rn.dtype(), dec_rn.dtype());
    expect_close(fast_rn, rn, tol(dt) * 2, tol(dt) * 4, "rms_norm kernel " + what);
    expect_close(dec_rn, rn, tol(dt) * 2, tol(dt) * 4, "rms_norm decomposition " + what);
  }
  // Mixed dtypes: float32 weight on a bfloat16 input.
  std::vector<double> xv;
  Tensor x = random_tensor({4, 16}, kBFloat16, &xv);
  Tensor w = ones({16}) * 2.0;
  Tensor fast = rms_norm(x, {16}, w), dec = run_decomp(OpId::rms_norm, {x, SymShape{16}, w, Arg()});
  EXPECT_EQ(fast.dtype(), kFloat32);
  EXPECT_EQ(dec.dtype(), kFloat32);
  expect_close(fast, dec.to_vector<double>(), 1e-6, 1e-6, "rms_norm mixed kernel vs decomp");
  Tensor fl = layer_norm(x, {16}, w, zeros({16})), dl = run_decomp(OpId::layer_norm, {x, SymShape{16}, w, zeros({16}), 1e-5});
  EXPECT_EQ(fl.dtype(), kBFloat16);
  expect_close(fl, dl.to_vector<double>(), 8e-3, 8e-3, "layer_norm mixed kernel vs decomp");
}

TEST(NNKernel, DerivativesUsedWithGrad) {
  // With grad required, the registered derivatives run (the result is recorded as the op's node).
  Tensor x = grad_input({3, 5});
  EXPECT_EQ(softmax(x, 1).grad_fn_name(), "softmaxBackward");
  EXPECT_EQ(log_softmax(x, 1).grad_fn_name(), "log_softmaxBackward");
  EXPECT_EQ(layer_norm(x, {5}).grad_fn_name(), "layer_normBackward");
  EXPECT_EQ(rms_norm(x, {5}).grad_fn_name(), "rms_normBackward");
  // dtype argument: the gradient comes back in the input's dtype.
  Tensor xf = random_tensor({2, 3}, kFloat32).requires_grad_();
  softmax(xf, 1, kFloat64).sum().backward();
  EXPECT_EQ(xf.grad().dtype(), kFloat32);
  expect_close(xf.grad(), std::vector<double>(6, 0.0), 0, 1e-6, "softmax rows sum to 1");
  expect_gradcheck([](const TensorList& in) { return TensorList{softmax(in[0], 0, kFloat64)}; }, {grad_input({4, 3})},
                   "softmax dtype arg");
  expect_gradcheck([](const TensorList& in) { return TensorList{layer_norm(in[0], {3}, {}, in[1], 1e-3)}; },
                   {grad_input({4, 3}), grad_input({3})}, "layer_norm bias only");
}

TEST(NNKernel, SecondOrderGradients) {
  GradcheckOptions o;
  // The gradient of sum(grad * v) w.r.t. the input checks the derivative formula's own derivative.
  Tensor v = random_tensor({3, 4}, kFloat64);
  auto second = [&](const std::function<Tensor(const Tensor&)>& f) {
    return [&, f](const TensorList& in) {
      // gradcheck's finite differences call this without grad: differentiate a fresh leaf then.
      EnableGradGuard enable;
      const bool outer = in[0].requires_grad();
      Tensor x = outer ? in[0] : in[0].detach().requires_grad_();
      TensorList g = grad({mul(f(x), v).sum()}, {x}, {}, outer, outer);
      return TensorList{g[0]};
    };
  };
  expect_gradcheck(second([](const Tensor& x) { return softmax(x, 1); }), {grad_input({3, 4})}, "softmax 2nd", o);
  expect_gradcheck(second([](const Tensor& x) { return log_softmax(x, 0); }), {grad_input({3, 4})}, "log_softmax 2nd", o);
  expect_gradcheck(second([](const Tensor& x) { return layer_norm(x, {4}); }), {grad_input({3, 4})}, "layer_norm 2nd", o);
  expect_gradcheck(second([](const Tensor& x) { return rms_norm(x, {4}); }), {grad_input({3, 4})}, "rms_norm 2nd", o);
}
