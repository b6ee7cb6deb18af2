// The GPT example's training step with its forward and loss compiled by "inductor" (forward and
// backward graphs generated): 20 steps of AdamW track the same steps run eagerly.
#include <gtest/gtest.h>
#include <kiln/compile.h>
#include <kiln/optim.h>

#include "examples/gpt/model.h"

namespace kiln {
namespace {

std::vector<double> train(const std::string& backend, int steps) {
  manual_seed(11);
  gpt::Config c{.vocab = 48, .ctx = 16, .d = 32, .heads = 4, .layers = 2};
  gpt::GPT model(c);
  optim::AdamW opt(model->parameters(), optim::AdamWOptions{.lr = 3e-3});
  CompileOptions o;
  o.backend = backend.empty() ? "eager" : backend;
  auto compiled = compile([](gpt::GPT& m, const Tensor& x, const Tensor& y) { return m->loss(x, y); }, o);
  manual_seed(12);
  Tensor x = randint(0, c.vocab, {4, 16}), y = randint(0, c.vocab, {4, 16});
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = backend.empty() ? model->loss(x, y) : compiled(model, x, y);
    loss.backward();
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

TEST(InductorGpt, TwentyTrainingStepsMatchEagerLosses) {
  std::vector<double> eager = train("", 20), compiled = train("inductor", 20);
  ASSERT_EQ(eager.size(), compiled.size());
  for (size_t i = 0; i < eager.size(); ++i) EXPECT_NEAR(compiled[i], eager[i], 1e-4 * std::abs(eager[i])) << "step " << i;
  EXPECT_LT(eager.back(), eager.front());  // it trains
}

}  // namespace
}  // namespace kiln
