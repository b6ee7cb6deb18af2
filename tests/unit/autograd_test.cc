// The autograd engine: graph traversal, accumulation, retain_graph, hooks, grad().
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "test_util.h"

using namespace kiln;

TEST(Autograd, ChainRuleOnADiamond) {
  // y = x*x + exp(x) reuses x on two paths: dy/dx = 2x + exp(x).
  Tensor x = tensor<double>({0.5, -1.0, 2.0}).requires_grad_();
  Tensor y = (x * x + exp(x)).sum();
  y.backward();
  std::vector<double> xv = {0.5, -1.0, 2.0}, g = x.grad().to_vector<double>();
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(g[i], 2 * xv[i] + std::exp(xv[i]), 1e-12);
}

TEST(Autograd, GradientsAccumulateAcrossBackwardCalls) {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  (x * 3.0).sum().backward();
  (x * 4.0).sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{7, 7}));
}

TEST(Autograd, SecondBackwardNeedsRetainGraph) {
  Tensor x = tensor<double>({1.0}).requires_grad_();
  Tensor y = exp(x).sum();
  y.backward({}, /*retain_graph=*/true);
  y.backward();
  EXPECT_NEAR(x.grad().item<double>(), 2 * std::exp(1.0), 1e-12);
  EXPECT_THROW(y.backward(), Error);
}

TEST(Autograd, NonScalarOutputNeedsAGradient) {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2.0;
  EXPECT_THROW(y.backward(), Error);
  y.backward(tensor<double>({1.0, 10.0}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{2, 20}));
}

TEST(Autograd, NoGradGuardRecordsNothing) {
  Tensor x = tensor<double>({1.0}).requires_grad_();
  Tensor y;
  {
    NoGradGuard g;
    y = x * 2.0;
  }
  EXPECT_FALSE(y.requires_grad());
  EXPECT_THROW(y.sum().backward(), Error);
}

TEST(Autograd, DetachCutsTheGraph) {
  Tensor x = tensor<double>({3.0}).requires_grad_();
  Tensor y = (x.detach() * x).sum();  // d/dx = detached value 3
  y.backward();
  EXPECT_EQ(x.grad().item<double>(), 3.0);
}

TEST(Autograd, HooksSeeAndReplaceGradients) {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  Tensor h = x * 2.0;
  std::vector<double> seen;
  h.register_hook([&](const Tensor& g) {
    seen = g.to_vector<double>();
    return g * 10.0;
  });
  (h * 3.0).sum().backward();
  EXPECT_EQ(seen, (std::vector<double>{3, 3}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{60, 60}));
}

TEST(Autograd, RetainGradKeepsANonLeafGradient) {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  Tensor h = x * x;
  h.retain_grad();
  (h * 5.0).sum().backward();
  EXPECT_EQ(h.grad().to_vector<double>(), (std::vector<double>{5, 5}));
}

TEST(Autograd, FunctionalGradDoesNotTouchDotGrad) {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  Tensor y = (x * x).sum();
  TensorList g = grad({y}, {x});
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{2, 4}));
  EXPECT_FALSE(x.grad().defined());
}

TEST(Autograd, CreateGraphGivesSecondDerivatives) {
  Tensor x = tensor<double>({2.0}).requires_grad_();
  Tensor y = (x * x * x).sum();                            // y = x^3
  TensorList g = grad({y}, {x}, {}, true, /*create_graph=*/true);  // 3x^2
  TensorList g2 = grad({g[0].sum()}, {x});                 // 6x
  EXPECT_NEAR(g2[0].item<double>(), 12.0, 1e-12);
}

TEST(Autograd, InPlaceOnALeafThatRequiresGradIsAnError) {
  Tensor x = tensor<double>({1.0}).requires_grad_();
  EXPECT_THROW(x.add_(1.0), Error);
  NoGradGuard g;
  EXPECT_NO_THROW(x.add_(1.0));
}

TEST(Autograd, InPlaceOnANonLeafRebasesHistory) {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  Tensor h = x * 2.0;
  h.mul_(x);  // h = 2x * x
  h.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{4, 8}));
}

TEST(Autograd, IntegerTensorsCannotRequireGrad) {
  EXPECT_THROW(zeros({2}, kInt64).requires_grad_(), Error);
}

TEST(Autograd, UnusedInputInGradIsAnErrorUnlessAllowed) {
  Tensor x = tensor<double>({1.0}).requires_grad_();
  Tensor z = tensor<double>({1.0}).requires_grad_();
  Tensor y = (x * 2.0).sum();
  EXPECT_THROW(grad({y}, {x, z}, {}, true), Error);
  TensorList g = grad({y}, {x, z}, {}, false, false, /*allow_unused=*/true);
  EXPECT_FALSE(g[1].defined());
}

TEST(Autograd, GradcheckCatchesAWrongFormula) {
  // A correct composite passes; perturbing the gradient through a hook makes it fail.
  Tensor x = test::grad_input({3});
  EXPECT_TRUE(gradcheck([](const TensorList& in) { return TensorList{sin(in[0]) * in[0]}; }, {x}));
  auto wrong = [](const TensorList& in) {
    Tensor y = in[0] * 2.0;
    if (y.requires_grad()) y.register_hook([](const Tensor& g) { return g * 1.1; });
    return TensorList{y};
  };
  EXPECT_THROW(gradcheck(wrong, {x}), Error);
}

TEST(Autograd, ModifyingASavedInputIsDetected) {
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_();
  Tensor y = (x * x).sum();
  {
    NoGradGuard g;
    x.add_(1.0);
  }
  EXPECT_THROW(y.backward(), Error);
}

TEST(Autograd, InPlaceOnASavedOutputKeepsTheGradientRight) {
  Tensor x = tensor<double>({0.5, 1.0}).requires_grad_();
  Tensor y = exp(x);  // exp saves its output
  y.add_(1.0);        // overwrites it in place
  y.sum().backward();
  std::vector<double> g = x.grad().to_vector<double>();
  EXPECT_NEAR(g[0], std::exp(0.5), 1e-12);
  EXPECT_NEAR(g[1], std::exp(1.0), 1e-12);
}
