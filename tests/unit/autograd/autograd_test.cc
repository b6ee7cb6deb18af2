// The autograd engine: graph traversal, accumulation, retain_graph, hooks, grad().
#include <gtest/gtest.h>
#include <kiln/kiln.h>

#include "support/test_util.h"

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

TEST(Autograd, InPlaceIntoAViewRebasesTheBase) {
  // d = 2x; d[1] *= s; d[:, 0] = 3s': the base's gradient reaches s, s' and x where not overwritten.
  Tensor x = tensor<double>({1, 2, 3, 4, 5, 6}).view({3, 2}).requires_grad_();
  Tensor s = tensor<double>({7, 8}).requires_grad_();
  Tensor s2 = tensor<double>({9, 10, 11}).requires_grad_();
  Tensor d = x * 2.0;
  d.select(0, 1).mul_(s);
  copy_(d.transpose(0, 1).select(0, 0), s2 * 3.0);
  Tensor w = tensor<double>({1, 2, 3, 4, 5, 6}).view({3, 2});
  TensorList g = grad({(d * w).sum()}, {x, s, s2});
  // d = [[3*s2_0, 2*x01], [3*s2_1, 2*x11*s1], [3*s2_2, 2*x21]]
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{0, 4, 0, 2 * 8 * 4, 0, 12}));
  EXPECT_EQ(g[1].to_vector<double>(), (std::vector<double>{0, 2 * 4 * 4}));  // s_0's product was overwritten
  EXPECT_EQ(g[2].to_vector<double>(), (std::vector<double>{3, 9, 15}));
}

TEST(Autograd, AViewTakenBeforeAWriteElsewhereReadsTheNewHistory) {
  // v = d[:, 0] is taken, then d[1] = s is written: v's second element is s_0 now, in value and gradient.
  Tensor x = tensor<double>({1, 2, 3, 4}).view({2, 2}).requires_grad_();
  Tensor s = tensor<double>({5, 6}).requires_grad_();
  Tensor d = x * 2.0;
  Tensor v = d.select(1, 0);
  copy_(d.select(0, 1), s);
  Tensor y = (v * tensor<double>({10, 100})).sum();  // 10 * 2 x00 + 100 * s0
  EXPECT_EQ(y.item<double>(), 10 * 2 + 100 * 5);
  TensorList g = grad({y}, {x, s});
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{20, 0, 0, 0}));
  EXPECT_EQ(g[1].to_vector<double>(), (std::vector<double>{100, 0}));
}

TEST(Autograd, SplitIsOneNodeWhosePiecesGetOneCat) {
  // qkv-style: only two of three pieces reach the loss; the unused one's gradient is zeros.
  Tensor x = tensor<double>({1, 2, 3, 4, 5, 6}).view({2, 3}).requires_grad_();
  Tensor h = x * 2.0;
  TensorList p = h.split(1, 1);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].grad_fn_name(), "splitBackward");
  Tensor y = (p[0] * 10.0 + p[2] * p[2]).sum();  // dy/dx = 20 | 0 | 2 * (2x)^2 ... d/dx (2x)^2 = 8x
  y.backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{20, 0, 8 * 3, 20, 0, 8 * 6}));
  Tensor z = tensor<double>({1, 2, 3, 4, 5}).requires_grad_();
  TensorList q = (z * 1.0).split_with_sizes({2, 3}, 0);
  (q[1] * 3.0).sum().backward();
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{0, 0, 3, 3, 3}));
}

TEST(Autograd, SplitPiecesAreViews) {
  // A write into a piece reaches the base's history, and a later piece reads it; a write into the
  // base after the split is no error (split's derivative reads only shapes).
  Tensor x = tensor<double>({1, 2, 3, 4}).requires_grad_();
  Tensor s = tensor<double>({5, 6}).requires_grad_();
  Tensor h = x * 2.0;
  TensorList p = h.split(2, 0);
  p[0].mul_(s);  // h = [2 x0 s0, 2 x1 s1, 2 x2, 2 x3]
  TensorList g = grad({(h * tensor<double>({1, 10, 100, 1000})).sum()}, {x, s});
  EXPECT_EQ(g[0].to_vector<double>(), (std::vector<double>{2 * 5, 10 * 2 * 6, 200, 2000}));
  EXPECT_EQ(g[1].to_vector<double>(), (std::vector<double>{2, 10 * 2 * 2}));
  Tensor w = tensor<double>({1, 2, 3, 4}).requires_grad_();
  Tensor hw = w * 3.0;
  TensorList pw = hw.split(2, 0);
  Tensor piece = pw[1];  // its backward starts at the split node, which saved hw
  hw.add_(1.0);
  TensorList gw = grad({piece}, {w}, {tensor<double>({10, 100})});
  EXPECT_EQ(gw[0].to_vector<double>(), (std::vector<double>{0, 0, 30, 300}));
}

TEST(Autograd, InPlaceIntoAViewOfALeafThatRequiresGradIsAnError) {
  Tensor x = zeros({2, 2}).requires_grad_();
  EXPECT_THROW(x.select(0, 0).add_(1.0), Error);
  Tensor b = zeros({2, 2});  // a base without grad gets a history from the written source
  Tensor s = ones({2}).requires_grad_();
  copy_(b.select(0, 1), s);
  EXPECT_TRUE(b.requires_grad());
  EXPECT_EQ(grad({(b * 3.0).sum()}, {s})[0].to_vector<float>(), (std::vector<float>{3, 3}));
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

TEST(Autograd, SecondDerivativeThroughASavedOutput) {
  // exp's formula uses its output: d2/dx2 exp(x) = exp(x) needs the output to stay connected.
  Tensor x = tensor<double>({0.3, -0.7}).requires_grad_();
  TensorList g = grad({exp(x).sum()}, {x}, {}, true, true);
  TensorList g2 = grad({g[0].sum()}, {x});
  std::vector<double> v = g2[0].to_vector<double>();
  EXPECT_NEAR(v[0], std::exp(0.3), 1e-12);
  EXPECT_NEAR(v[1], std::exp(-0.7), 1e-12);
}

TEST(Autograd, GradcheckHandlesZeroDimOutputs) {
  Tensor x = test::grad_input({3});
  EXPECT_TRUE(gradcheck([](const TensorList& in) { return TensorList{(in[0] * in[0]).sum()}; }, {x}));
  EXPECT_EQ(tensor<double>({2.0}, Shape{}).dim(), 0);
}

TEST(Autograd, LeafGradientsShareNoMemory) {
  // A gradient may become .grad without a copy only when nothing else holds it: writing one leaf's
  // .grad in place (as an optimizer does) must never reach another leaf's or the caller's tensor.
  Tensor a = tensor<double>({1.0, 2.0}).requires_grad_(), b = tensor<double>({3.0, 4.0}).requires_grad_();
  (a + b).sum().backward();  // add hands the same gradient to both
  a.grad().mul_(5.0);
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{5.0, 5.0}));
  EXPECT_EQ(b.grad().to_vector<double>(), (std::vector<double>{1.0, 1.0}));
  Tensor x = tensor<double>({1.0, 2.0}).requires_grad_(), g = tensor<double>({7.0, 8.0});
  x.backward(g);  // a leaf as the root: its gradient is the caller's tensor
  x.grad().mul_(2.0);
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{7.0, 8.0}));
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{14.0, 16.0}));
  Tensor w = tensor<double>({1.0, 2.0, 3.0}).requires_grad_();
  (w * 2.0).sum().backward();  // a fresh gradient nothing else holds
  w.grad().add_(1.0);
  EXPECT_EQ(w.grad().to_vector<double>(), (std::vector<double>{3.0, 3.0, 3.0}));
}
