// The GPT example's model (examples/gpt/model.h) trained eagerly on the GPU and on the CPU from
// the same seed: 20 steps of forward, cross entropy, backward, gradient clipping and AdamW, the
// losses compared step by step (issue 12's acceptance; the GPU's matmul is cuBLASLt's, whose
// sums round in another order, so within a tolerance, not exactly). Skips without a GPU.
#include <gtest/gtest.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include "examples/gpt/model.h"
#include "runtime/cuda/driver.h"

namespace kiln {
namespace {

std::vector<double> train(Device dev, int steps) {
  manual_seed(7);
  gpt::Config cfg{.vocab = 40, .ctx = 32, .d = 64, .heads = 4, .layers = 2};
  gpt::GPT model(cfg);
  model->init_gpt2_weights();
  model->to(dev);
  optim::AdamW opt(model->parameters(), {.lr = 3e-3, .betas = {0.9, 0.99}, .weight_decay = 0.1, .capturable = true});
  const Tensor data = randint(0, cfg.vocab, {8, cfg.ctx + 1}, kInt64);  // (drawn on the CPU: the same tokens on both)
  const Tensor x = data.slice(1, 0, cfg.ctx).contiguous().to(dev), y = data.slice(1, 1, cfg.ctx + 1).contiguous().to(dev);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor loss = model->loss(x, y);
    loss.backward();
    nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    losses.push_back(loss.item<double>());
  }
  return losses;
}

TEST(CudaGpuEager, GptTrainsOnTheGpuAsOnTheCpu) {
  if (!runtime::cuda::available()) GTEST_SKIP() << "no CUDA GPU: " << runtime::cuda::unavailable_reason();
  const std::vector<double> gpu = train(Device("cuda"), 20), cpu = train(kCPU, 20);
  ASSERT_EQ(gpu.size(), cpu.size());
  for (size_t i = 0; i < gpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 1e-3 * (1 + std::abs(cpu[i]))) << "step " << i + 1;
  EXPECT_LT(gpu.back(), gpu.front() - 0.5);  // (and it learns: memorizing one batch)
  std::printf("[ gpt on cuda ] loss %.4f -> %.4f (cpu %.4f -> %.4f)\n", gpu.front(), gpu.back(), cpu.front(), cpu.back());
}

}  // namespace
}  // namespace kiln
