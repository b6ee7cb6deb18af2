// The "inductor" backend end to end on the CPU: compiled results against eager's.
#include <gtest/gtest.h>
#include <kiln/compile.h>
#include <kiln/kiln.h>

namespace kiln {
namespace {

CompileOptions inductor(bool dynamic = false) {
  CompileOptions o;
  o.backend = "inductor";
  if (dynamic) o.dynamic = true;
  return o;
}

// Same dtype and shape; values within the dtype's tolerance (NaNs in the same places).
void expect_near(const Tensor& got, const Tensor& want, double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.sizes(), want.sizes());
  if (got.numel() == 0) return;
  Tensor g = got.to(kFloat64).contiguous(), w = want.to(kFloat64).contiguous();
  const double* a = static_cast<const double*>(g.data_ptr());
  const double* b = static_cast<const double*>(w.data_ptr());
  for (int64_t i = 0; i < g.numel(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << "element " << i;
      continue;
    }
    ASSERT_NEAR(a[i], b[i], atol + rtol * std::abs(b[i])) << "element " << i << "\ncompiled:\n" << got << "\neager:\n" << want;
  }
}

TEST(InductorBackend, PointwiseChainMatchesEager) {
  auto fn = [](const Tensor& x, const Tensor& y) { return ((x * 2.0 + y).exp() - x.sigmoid()) / (y.abs() + 1.0); };
  auto f = compile(fn, inductor());
  Tensor x = randn({37, 13}), y = randn({13});
  expect_near(f(x, y), fn(x, y));
}

TEST(InductorBackend, ReductionsMatchEager) {
  auto fn = [](const Tensor& x) {
    return std::vector<Tensor>{x.sum({1}), x.amax({0}, true), (x * x).sum(), x.exp().sum({0, 2}), x.amin({-1})};
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({5, 300, 7});
  std::vector<Tensor> got = f(x), want = fn(x);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i], 1e-5, 1e-4);
}

TEST(InductorBackend, SoftmaxAndLayerNormMatchEager) {
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return std::vector<Tensor>{softmax(x, -1), layer_norm(x, {x.size(-1)}, w, b)};
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({8, 64}), w = randn({64}), b = randn({64});
  std::vector<Tensor> got = f(x, w, b), want = fn(x, w, b);
  for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i], 1e-5, 1e-5);
}

TEST(InductorBackend, ViewsAndExternsMatchEager) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor t = x.transpose(0, 1).reshape({6, 4}).relu();
    return (t.matmul(w) + t.slice(1, 1, 3).sum({1}, true)).t();
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({4, 6}), w = randn({4, 5});
  expect_near(f(x, w), fn(x, w), 1e-5, 1e-5);
}

TEST(InductorBackend, HorizontallyFusedSiblingsMatchEager) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    return std::vector<Tensor>{x.exp() + y, x.sum({1}), (x * y).sin(), x.cos().to(kFloat64)};
  };
  auto f = compile(fn, inductor());
  Tensor x = randn({33, 65}), y = randn({65});
  std::vector<Tensor> got = f(x, y), want = fn(x, y);
  for (size_t i = 0; i < got.size(); ++i) expect_near(got[i], want[i], 1e-5, 1e-5);
}

TEST(InductorBackend, DynamicSizeRunsTheSameKernels) {
  auto fn = [](const Tensor& x) { return (x.exp() * 3.0).sum({1}); };
  auto f = compile(fn, inductor(true));
  for (int64_t n : {5, 17, 64}) {
    Tensor x = randn({n, 9});
    expect_near(f(x), fn(x), 1e-5, 1e-5);
  }
  EXPECT_EQ(f.report().graphs.size(), 1u);
}

TEST(InductorBackend, TrainingGradientsMatchEager) {
  Tensor w = randn({8, 3}).requires_grad_(), x = randn({16, 8});
  auto loss_fn = [&](const Tensor& x) { return softmax(x.matmul(w).tanh(), -1).mul(x.sum({1}, true)).sum(); };
  auto f = compile(loss_fn, inductor());
  Tensor l1 = f(x);
  l1.backward();
  Tensor g1 = w.grad().clone();
  w.set_grad(Tensor());
  Tensor l2 = loss_fn(x);
  l2.backward();
  expect_near(l1.detach(), l2.detach(), 1e-5, 1e-5);
  expect_near(g1, w.grad(), 1e-4, 1e-5);
}

// layer_norm's backward: its weight and bias gradients are a group of column sums over the rows
// (the [RBLOCK, XBLOCK] column path, the rows' mean and rstd broadcast along the columns), with
// columns that fill the blocks (128) and that leave a masked tail (100).
TEST(InductorBackend, LayerNormGradientsMatchEager) {
  for (int64_t c : {int64_t(128), int64_t(100)}) {
    SCOPED_TRACE(c);
    Tensor w = randn({c}).requires_grad_(), b = randn({c}).requires_grad_();
    Tensor x = randn({96, c}).requires_grad_(), t = randn({96, c});
    auto loss_fn = [&](const Tensor& x) { return layer_norm(x, {c}, w, b).mul(t).sum(); };
    loss_fn(x).backward();
    const Tensor gx = x.grad().clone(), gw = w.grad().clone(), gb = b.grad().clone();
    x.set_grad(Tensor());
    w.set_grad(Tensor());
    b.set_grad(Tensor());
    auto f = compile(loss_fn, inductor());
    f(x).backward();
    expect_near(x.grad(), gx, 1e-4, 1e-5);
    expect_near(w.grad(), gw, 1e-4, 1e-5);
    expect_near(b.grad(), gb, 1e-4, 1e-5);
  }
}

}  // namespace
}  // namespace kiln
