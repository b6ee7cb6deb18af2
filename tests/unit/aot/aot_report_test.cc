// Saved-for-backward bytes of GPT-2 small (workloads.md: d 768, 12 layers, 12 heads, vocab
// 50304) at batch 1 x 128 tokens, by activation_memory_budget, next to the bytes a
// save-everything policy (budget 1) keeps. Capture and partitioning run on fake tensors; a
// recording backend keeps the captured graph and answers with zeros instead of running it.
#include <gtest/gtest.h>
#include <kiln/compile.h>

#include <cstdio>

#include "examples/gpt/model.h"
#include "aot/aot.h"
#include "runtime/device.h"
#include <kiln/aot.h>
#include "graph/graph.h"

namespace kiln::aot {
namespace {

TEST(AotReport, GPT2SmallSavedBytes) {
  static std::shared_ptr<const graph::Graph> captured;
  register_backend("aot_test_record", [](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
    captured = g;
    return [g](const std::vector<Tensor>&) {
      std::vector<Tensor> outs;
      for (const graph::Value* v : g->outputs()) outs.push_back(zeros(v->spec.sizes, v->spec.dtype));
      return outs;
    };
  });
  gpt::Config config;
#ifdef KILN_SANITIZE
  config.layers = 2;  // the same graph per layer; 12 layers' 124M weights take a minute to fill under ASan
#endif
  gpt::GPT model(config);
  Tensor idx = zeros({1, 128}, kInt64);
  CompileOptions o;
  o.backend = "aot_test_record";
  auto f = compile([](gpt::GPT& m, const Tensor& in) {
    return cross_entropy(m->forward(in).flatten(0, 1), in.flatten());
  }, o);
  f(model, idx);
  ASSERT_TRUE(captured);
  graph::Graph functional = functionalize(decompose(*captured));
  std::vector<bool> needs;
  for (const graph::Value* v : functional.inputs()) needs.push_back(is_floating(v->spec.dtype));
  Joint j = build_joint(functional, needs);
  int64_t prev = 0;
  std::vector<int64_t> bytes;
  for (double b : {0.0, 0.5, 1.0}) {
    Partition p = partition(j, {.activation_memory_budget = b});
    std::printf("GPT-2 small (%lld layers), 1x128 tokens, budget %.1f: %zu saved tensors, %.2f MiB of activations saved for "
                "backward (%.2f MiB with parameters), %zu nodes recomputed\n", static_cast<long long>(config.layers), b, p.num_saved,
                double(p.saved_activation_bytes) / (1 << 20), double(p.saved_bytes) / (1 << 20), p.recomputed.size());
    EXPECT_GE(p.saved_activation_bytes, prev);  // more budget, more saved
    prev = p.saved_activation_bytes;
    bytes.push_back(p.saved_activation_bytes);
  }
  EXPECT_LT(bytes[0], bytes[2]);  // the min cut saves less than save-everything
  captured.reset();
}

}  // namespace
}  // namespace kiln::aot

namespace kiln::aot {
namespace {

// Measured, not estimated: the tensor memory alive at the peak of a compiled forward + backward
// (aot_eager) of a small GPT, at activation memory budgets 1.0 and 0.5.
TEST(AotReport, LowerBudgetLowersMeasuredPeakMemory) {
  gpt::Config cfg;
  cfg.vocab = 64, cfg.ctx = 64, cfg.d = 64, cfg.heads = 4, cfg.layers = 2;
  manual_seed(0);
  gpt::GPT model(cfg);
  Tensor idx = randint(0, cfg.vocab, {8, 64});
  std::vector<size_t> peaks, held;
  for (double budget : {1.0, 0.5}) {
    set_activation_memory_budget(budget);
    CompileOptions o;
    o.backend = "aot_eager";
    auto f = compile([](gpt::GPT& m, const Tensor& in) {
      return cross_entropy(m->forward(in).flatten(0, 1), in.flatten());
    }, o);
    f(model, idx).backward();  // compiles; the measured call below reuses the plan
    model->zero_grad();
    size_t base = runtime::memory_stats(kCPU).live_bytes;
    runtime::reset_peak(kCPU);
    Tensor loss = f(model, idx);
    held.push_back(runtime::memory_stats(kCPU).live_bytes - base);  // what the forward keeps for the backward
    loss.backward();
    peaks.push_back(runtime::memory_stats(kCPU).peak_bytes - base);
    model->zero_grad();
    std::printf("budget %.1f: %.2f MiB held after the forward, peak %.2f MiB over forward + backward\n", budget,
                double(held.back()) / (1 << 20), double(peaks.back()) / (1 << 20));
  }
  set_activation_memory_budget(1.0);
  EXPECT_LT(held[1], held[0]);
  EXPECT_LT(peaks[1], peaks[0]);
}

}  // namespace
}  // namespace kiln::aot
