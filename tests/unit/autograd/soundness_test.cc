// Autograd that is wrong without a word, or crashes, on unusual but legal use (issue 15): a saved
// output written through a detach()ed alias, hooks and .grad assignments of another shape or
// dtype, and graphs too long to free or walk by recursion. PyTorch's behaviour is noted per case.
#include <gtest/gtest.h>

#include "support/test_util.h"
#include <kiln/kiln.h>

#include <cmath>
#include <string>

using namespace kiln;
using kiln::test::expect_error;

TEST(SavedVersions, OutputWrittenThroughADetachedAliasIsCaught) {
  // exp's derivative reads its output. d shares y's memory (and version counter), so zeroing it
  // made backward use zeros silently; PyTorch raises "... output 0 of ExpBackward0, is at version 1".
  Tensor x = tensor<double>({0.5, 1.0}).requires_grad_();
  Tensor y = exp(x);
  Tensor d = y.detach();
  d.zero_();
  expect_error([&] { (y * y).sum().backward(); }, "modified by an in-place operation");
}

TEST(SavedVersions, OutputsAFormulaDoesNotReadMayChange) {
  // mul's derivative reads its inputs only: PyTorch accepts this and gives 2 * y (= 0) * 2.
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2.0;
  y.detach().zero_();
  (y * y).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0}));
}

TEST(SavedVersions, InPlaceWritesThroughAutogradKeepWorking) {
  // Writing y in place with autograd's knowledge makes exp's node keep its own copy of the output.
  Tensor x = tensor<double>({0.5, 1.0}).requires_grad_();
  Tensor y = exp(x);
  y.add_(1.0);
  y.sum().backward();
  EXPECT_NEAR(x.grad().to_vector<double>()[0], std::exp(0.5), 1e-12);
}

TEST(GradChecks, HooksMustKeepShapeAndDtype) {
  // PyTorch: "hook '<lambda>' has changed the size of value" / "... the type of value".
  Tensor x = tensor<float>({1, 2, 3}).requires_grad_();
  x.register_hook([](const Tensor& g) { return g.slice(0, 0, 1); });
  expect_error([&] { (x * 2.0).sum().backward(); }, "changed the shape of the gradient");
  Tensor w = tensor<float>({1, 2, 3}).requires_grad_();
  w.register_hook([](const Tensor& g) { return g.to(kFloat64); });
  expect_error([&] { (w * 2.0).sum().backward(); }, "changed the dtype of the gradient");
  Tensor a = tensor<float>({1, 2, 3}).requires_grad_();
  Tensor y = a * 2.0;
  y.register_hook([](const Tensor& g) { return g.sum(); });  // a non-leaf's hook too
  expect_error([&] { y.sum().backward(); }, "changed the shape of the gradient");
  // A hook returning a like gradient replaces it; returning nothing keeps it.
  Tensor b = tensor<float>({1, 2}).requires_grad_();
  b.register_hook([](const Tensor& g) { return g * 10.0; });
  b.register_hook([](const Tensor&) { return Tensor(); });
  (b * 2.0).sum().backward();
  EXPECT_EQ(b.grad().to_vector<float>(), (std::vector<float>{20, 20}));
}

TEST(GradChecks, AssignedGradMustMatchTheTensor) {
  // PyTorch: "attempting to assign a gradient with dtype 'long int' to a tensor with grad_dtype 'Float'".
  Tensor p = zeros({3}).requires_grad_();
  expect_error([&] { p.set_grad(ones({3}, kInt64)); }, "a gradient of dtype int64 for a tensor of dtype float32");
  expect_error([&] { p.set_grad(ones({4})); }, "gradient of shape [4]");
  p.set_grad(ones({3}));
  EXPECT_EQ(p.grad().to_vector<float>(), (std::vector<float>{1, 1, 1}));
  p.set_grad(Tensor());
  EXPECT_FALSE(p.grad().defined());
}

TEST(LongGraphs, BackwardAndTeardownOfAChainOf300kOps) {
  // Freeing a graph node by node recursed once per op and overflowed the C stack (SIGSEGV).
  // The sanitizers' frames are several times larger, so a recursive teardown overflows 8 MiB of
  // stack far sooner there: 100k ops still exceed it many times over, at a third of the time
  // (300k took 146 s of the sanitizer run here).
#ifdef KILN_SANITIZE
  constexpr int kOps = 100000;
#else
  constexpr int kOps = 300000;
#endif
  Tensor x = tensor<float>({1.0f}).requires_grad_();
  {
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = y + 1.0;
    y.backward();
    EXPECT_EQ(x.grad().item<float>(), 1.0f);  // d(x + n)/dx
  }  // y's graph goes here
  {
    Tensor y = x;
    for (int i = 0; i < kOps; ++i) y = y * 1.0;
  }  // never differentiated: freed whole with its saved tensors
  Tensor y = x;
  for (int i = 0; i < kOps; ++i) y = y * 1.0;
  y = Tensor();  // released by assignment too
  EXPECT_EQ(x.grad().item<float>(), 1.0f);
}
