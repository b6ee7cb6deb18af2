// Whole training steps in one compiled graph: forward, loss, backward() and an AdamW step inside
// kiln::compile, run for 20 steps against the same step run eagerly from identical weights.
#include <gtest/gtest.h>
#include <kiln/compile.h>
#include <kiln/kiln.h>
#include <kiln/nn.h>
#include <kiln/optim.h>

#include <cmath>
#include <functional>

#include "examples/gpt/model.h"
#include "support/test_util.h"

using namespace kiln;

namespace {

struct Mlp : nn::Module {
  nn::Linear l1{nullptr}, l2{nullptr};
  Mlp() {
    l1 = register_module("l1", nn::Linear(8, 16));
    l2 = register_module("l2", nn::Linear(16, 4));
  }
  Tensor forward(const Tensor& x) { return l2(relu(l1(x))); }
};

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  std::vector<double> va = a.to(kFloat64).contiguous().to_vector<double>();
  std::vector<double> vb = b.to(kFloat64).contiguous().to_vector<double>();
  if (va.size() != vb.size()) return false;
  for (size_t i = 0; i < va.size(); ++i)
    if (!(std::abs(va[i] - vb[i]) <= atol + rtol * std::abs(vb[i]))) return false;
  return true;
}

struct Result {
  std::vector<double> losses;
  std::vector<std::string> names;
  std::vector<Tensor> params, exp_avg_sq;
  int graphs = 0;
  std::string graph;
  size_t breaks = 0;
};


// 20 AdamW steps. zero_grad(set_to_none) runs outside the step (as it must; see docs/compile.md).
Result train(const std::function<std::shared_ptr<nn::Module>()>& make, const std::function<Tensor(nn::Module&, const Tensor&, const Tensor&)>& loss_fn,
             const Tensor& x, const Tensor& y, bool compiled, bool clip, bool set_to_none = true,
             const std::string& backend = "eager", bool capturable = true, bool fullgraph = true,
             bool scheduled = false) {
  std::shared_ptr<nn::Module> model = make();
  std::vector<Tensor> params = model->parameters();
  optim::AdamWOptions o;
  o.lr = 1e-2, o.weight_decay = 0.1, o.capturable = capturable;
  optim::AdamW opt(params, o);
  // A warmup then cosine decay: the lr changes every step, outside the compiled step.
  std::unique_ptr<optim::LRScheduler> sched;
  if (scheduled) sched = optim::warmup_cosine(opt, 5, 20, 1e-3);
  auto step = [&](const Tensor& in, const Tensor& tg) {
    Tensor loss = loss_fn(*model, in, tg);
    loss.backward();
    if (clip) nn::utils::clip_grad_norm_(params, 0.5);
    opt.step();
    return loss;
  };
  CompileOptions options;
  options.fullgraph = fullgraph;
  options.backend = backend;
  auto compiled_step = compile(step, options);
  Result r;
  for (int i = 0; i < 20; ++i) {
    opt.zero_grad(set_to_none);
    Tensor loss = compiled ? compiled_step(x, y) : step(x, y);
    r.losses.push_back(loss.item<double>());
    if (sched) sched->step();
  }
  size_t i = 0;
  for (auto& [name, p] : model->named_parameters()) {
    EXPECT_TRUE(p.is_same(params[i]));
    // The key bias of attention has a zero gradient in exact arithmetic (it shifts every score
    // of a query equally); Adam scales its rounding noise up to full-size steps, so neither run
    // predicts the other there. Its query and value parts are compared.
    Tensor keep = p.detach(), v = opt.state(i).at("exp_avg_sq");
    if (name.ends_with("qkv.bias")) {
      const int64_t d = p.size(0) / 3;
      keep = cat({keep.narrow(0, 0, d), keep.narrow(0, 2 * d, d)});
      v = cat({v.narrow(0, 0, d), v.narrow(0, 2 * d, d)});
    }
    r.names.push_back(name);
    r.params.push_back(keep.clone());
    r.exp_avg_sq.push_back(v.clone());
    ++i;
  }
  if (compiled) {
    ExplainReport rep = compiled_step.report();
    r.graphs = rep.graph_count;
    if (!rep.graphs.empty()) r.graph = rep.graphs[0];
    r.breaks = rep.breaks.size();
  }
  return r;
}

void expect_tracks(const Result& eager, const Result& comp) {
  ASSERT_EQ(eager.losses.size(), comp.losses.size());
  for (size_t i = 0; i < eager.losses.size(); ++i)
    EXPECT_NEAR(comp.losses[i], eager.losses[i], 1e-5 * std::abs(eager.losses[i]) + 1e-6) << "step " << i;
  EXPECT_LT(eager.losses.back(), eager.losses.front());  // it trains
  for (size_t i = 0; i < eager.params.size(); ++i) {
    EXPECT_TRUE(allclose(comp.params[i], eager.params[i], 1e-4, 1e-5)) << "parameter " << eager.names[i];
    EXPECT_TRUE(allclose(comp.exp_avg_sq[i], eager.exp_avg_sq[i], 1e-4, 1e-9)) << "exp_avg_sq " << i;
  }
  EXPECT_EQ(comp.breaks, 0u);
}

std::shared_ptr<nn::Module> make_mlp() {
  manual_seed(11);
  return std::make_shared<Mlp>();
}

Tensor mlp_loss(nn::Module& m, const Tensor& x, const Tensor& y) {
  return cross_entropy(static_cast<Mlp&>(m).forward(x), y);
}

}  // namespace

TEST(CompileTrainStep, MlpAdamW) {
  manual_seed(1);
  Tensor x = randn({6, 8}), y = randint(0, 4, {6});
  Result eager = train(make_mlp, mlp_loss, x, y, false, false);
  Result comp = train(make_mlp, mlp_loss, x, y, true, false);
  expect_tracks(eager, comp);
  EXPECT_EQ(comp.graphs, 1);
  // The forward runs once: the recorded one (linear, cross_entropy nodes) is replaced by the
  // joint graph's prims, and its backward (scatter_add of cross_entropy) is there.
  EXPECT_EQ(comp.graph.find("linear("), std::string::npos) << comp.graph;
  EXPECT_EQ(comp.graph.find("cross_entropy("), std::string::npos);
  EXPECT_NE(comp.graph.find("scatter_add("), std::string::npos);
}

// The lr a scheduler sets reaches the compiled step (a tensor input of the graph, not the traced
// value baked in as a constant), with one graph for all 20 steps.
TEST(CompileTrainStep, MlpAdamWWithLrSchedule) {
  manual_seed(1);
  Tensor x = randn({6, 8}), y = randint(0, 4, {6});
  Result eager = train(make_mlp, mlp_loss, x, y, false, false, true, "eager", true, true, true);
  for (const char* backend : {"eager", "inductor"}) {
    Result comp = train(make_mlp, mlp_loss, x, y, true, false, true, backend, true, true, true);
    SCOPED_TRACE(backend);
    expect_tracks(eager, comp);
    EXPECT_EQ(comp.graphs, 1);
  }
}

TEST(CompileTrainStep, MlpAdamWClipGradNorm) {
  manual_seed(2);
  Tensor x = randn({6, 8}), y = randint(0, 4, {6});
  Result eager = train(make_mlp, mlp_loss, x, y, false, true);
  Result comp = train(make_mlp, mlp_loss, x, y, true, true);
  expect_tracks(eager, comp);
  EXPECT_EQ(comp.graphs, 1);
}

TEST(CompileTrainStep, MlpAdamWAotEager) {
  // Under "aot_eager" the step graph (grad mode off) runs as one functionalized prim graph.
  manual_seed(6);
  Tensor x = randn({6, 8}), y = randint(0, 4, {6});
  Result eager = train(make_mlp, mlp_loss, x, y, false, true);
  Result comp = train(make_mlp, mlp_loss, x, y, true, true, true, "aot_eager");
  expect_tracks(eager, comp);
  EXPECT_EQ(comp.graphs, 1);
}

TEST(CompileTrainStep, GradsKeptBetweenSteps) {
  // zero_grad(set_to_none=false): the .grad tensors persist and backward accumulates into them
  // in place. The first call traces with no .grad (it sets them), the second with .grad set
  // (it accumulates): two graphs, then no more recompiles.
  manual_seed(3);
  Tensor x = randn({6, 8}), y = randint(0, 4, {6});
  Result eager = train(make_mlp, mlp_loss, x, y, false, false, false);
  Result comp = train(make_mlp, mlp_loss, x, y, true, false, false);
  expect_tracks(eager, comp);
  EXPECT_EQ(comp.graphs, 2);
}

TEST(CompileTrainStep, TinyGPTAdamW) {
  manual_seed(4);
  Tensor idx = randint(0, 32, {2, 8}), target = randint(0, 32, {2, 8});
  auto make = []() -> std::shared_ptr<nn::Module> {
    manual_seed(12);
    gpt::Config c{.vocab = 32, .ctx = 8, .d = 16, .heads = 2, .layers = 2, .dropout = 0.0};
    return gpt::GPT(c).ptr();
  };
  auto loss = [](nn::Module& m, const Tensor& in, const Tensor& tg) {
    return static_cast<gpt::GPTImpl&>(m).loss(in, tg);
  };
  Result eager = train(make, loss, idx, target, false, true);
  Result comp = train(make, loss, idx, target, true, true);
  expect_tracks(eager, comp);
  EXPECT_EQ(comp.graphs, 1);
  Result aot = train(make, loss, idx, target, true, true, true, "aot_eager");
  expect_tracks(eager, aot);
  EXPECT_EQ(aot.graphs, 1);
}

TEST(CompileTrainStep, GradInsideCompiledFunction) {
  // kiln::grad inside a compiled function returns the gradients as graph values; no .grad changes.
  manual_seed(5);
  Tensor w = randn({4, 3}).requires_grad_();
  Tensor x = randn({5, 4});
  auto fn = [&](const Tensor& in) { return grad({in.matmul(w).tanh().sum()}, {w})[0]; };
  auto f = compile(fn);
  Tensor got = f(x);
  Tensor want = fn(x);
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-6));
  EXPECT_FALSE(w.grad().defined());
  EXPECT_EQ(f.report().graph_count, 1);
}

TEST(CompileTrainStep, CapturableAdamWMatchesDefault) {
  // The tensor-op bias corrections give the host-computed update (eager, both).
  manual_seed(7);
  Tensor x = randn({6, 8}), y = randint(0, 4, {6});
  Result host = train(make_mlp, mlp_loss, x, y, false, false, true, "eager", false);
  Result tensor_ops = train(make_mlp, mlp_loss, x, y, false, false, true, "eager", true);
  expect_tracks(host, tensor_ops);
}

TEST(CompileTrainStep, DefaultAdamWBreaksAndStillTracks) {
  // Without capturable, AdamW reads step.item(): a graph break after the traced backward, so
  // the step runs eagerly (lazy segments cannot hold a backward).
  manual_seed(8);
  Tensor x = randn({6, 8}), y = randint(0, 4, {6});
  Result eager = train(make_mlp, mlp_loss, x, y, false, false, true, "eager", false);
  Result comp = train(make_mlp, mlp_loss, x, y, true, false, true, "eager", false, false);
  ASSERT_EQ(comp.losses.size(), eager.losses.size());
  for (size_t i = 0; i < eager.losses.size(); ++i)
    EXPECT_NEAR(comp.losses[i], eager.losses[i], 1e-5 * std::abs(eager.losses[i]) + 1e-6) << "step " << i;
  EXPECT_GE(comp.breaks, 1u);
}
