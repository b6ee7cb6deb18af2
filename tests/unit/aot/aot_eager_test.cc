// The "aot_eager" backend: losses and gradients from compile(fn, {backend="aot_eager"}) equal
// eager autograd's, for an MLP, a GPT block, a conv net and functions with in-place ops.
#include <gtest/gtest.h>
#include <kiln/aot.h>
#include <kiln/compile.h>
#include <kiln/log.h>
#include <kiln/nn.h>

#include "examples/gpt/model.h"
#include "autograd/engine.h"
#include "core/tensor_impl.h"
#include "support/test_util.h"

namespace kiln {
namespace {

CompileOptions aot() {
  CompileOptions o;
  o.backend = "aot_eager";
  return o;
}

std::vector<Tensor> take_grads(const std::vector<Tensor>& params) {
  std::vector<Tensor> g;
  for (Tensor p : params) {
    g.push_back(p.grad().defined() ? p.grad().clone() : Tensor());
    p.set_grad(Tensor());
  }
  return g;
}

// Runs loss() eagerly and then compiled (each followed by backward) and compares the losses
// and the gradients of params; the compiled path must build its own autograd node.
template <class Eager, class Comp>
void expect_same_grads(Eager eager, Comp compiled, const std::vector<Tensor>& params, double tol = 1e-4,
                       bool direct = true) {
  Tensor le = eager();
  le.backward();
  std::vector<Tensor> ge = take_grads(params);
  for (int call = 0; call < 2; ++call) {  // the second call reuses the cached plan
    Tensor lc = compiled();
    if (direct) {  // the loss is a compiled output: its history is the compiled node
      ASSERT_TRUE(lc.impl()->autograd && lc.impl()->autograd->grad_fn);
      EXPECT_EQ(lc.impl()->autograd->grad_fn->name(), "CompiledFunctionBackward");
    }
    test::expect_close(lc, le.to_vector<double>(), tol, tol, "loss");
    lc.backward();
    std::vector<Tensor> gc = take_grads(params);
    for (size_t i = 0; i < params.size(); ++i) {
      ASSERT_EQ(gc[i].defined(), ge[i].defined()) << "param " << i;
      if (ge[i].defined()) test::expect_close(gc[i], ge[i].to_vector<double>(), tol, tol, "grad " + std::to_string(i));
    }
  }
}

TEST(AotEager, MLP) {
  manual_seed(0);
  nn::Sequential mlp(nn::Linear(8, 16), nn::GELU(), nn::Linear(16, 4));
  Tensor x = test::random_tensor({5, 8}, kFloat32);
  auto fn = [](nn::Sequential& m, const Tensor& in) { return m->forward(in).square().mean(); };
  auto f = compile(fn, aot());
  expect_same_grads([&] { return fn(mlp, x); }, [&] { return f(mlp, x); }, mlp->parameters());
}

TEST(AotEager, InputGradientsAndTwoOutputs) {
  Tensor x = test::grad_input({3, 4}), w = test::grad_input({4, 2});
  auto fn = [](const Tensor& a, const Tensor& b) {
    Tensor h = a.matmul(b);
    return std::make_pair(h.tanh().sum(), (h * h).sin().sum());
  };
  auto f = compile(fn, aot());
  auto both = [](std::pair<Tensor, Tensor> p) { return p.first + 2 * p.second; };
  expect_same_grads([&] { return both(fn(x, w)); }, [&] {
    auto r = f(x, w);
    return both(r);
  }, {x, w}, 1e-10, false);
}

TEST(AotEager, InPlaceOps) {
  Tensor x = test::grad_input({4, 3}), y = test::grad_input({3});
  auto fn = [](const Tensor& a, const Tensor& b) {
    Tensor h = a.exp();
    h.mul_(2.0);
    h.narrow(0, 1, 2).add_(b);  // a write through a view
    Tensor t = h.t();
    t.relu_();
    return h.sum() + t.select(0, 1).square().sum();
  };
  auto f = compile(fn, aot());
  expect_same_grads([&] { return fn(x, y); }, [&] { return f(x, y); }, {x, y}, 1e-10);
}

TEST(AotEager, MutatedInputIsWritten) {
  // A running statistic updated in place from an input that needs no gradient. (Grad-mode
  // regions are not recorded by capture, so the update must not read a grad-requiring input.)
  Tensor x = test::grad_input({5}), b = test::random_tensor({5}, kFloat64);
  Tensor stat_e = ones({5}, kFloat64), stat_c = ones({5}, kFloat64);
  auto fn = [](const Tensor& a, const Tensor& in, Tensor s) {
    s.mul_(0.5).add_(in);
    return (a * s).sin().sum();
  };
  auto f = compile(fn, aot());
  Tensor le = fn(x, b, stat_e);
  le.backward();
  Tensor ge = take_grads({x})[0];
  Tensor lc = f(x, b, stat_c);
  lc.backward();
  test::expect_close(stat_c, stat_e.to_vector<double>(), 1e-12, 1e-12, "running stat");
  test::expect_close(lc, le.to_vector<double>(), 1e-12, 1e-12, "loss");
  test::expect_close(take_grads({x})[0], ge.to_vector<double>(), 1e-12, 1e-12, "grad");
}

TEST(AotEager, ConvNet) {
  manual_seed(1);
  nn::Conv2d c1(3, 4, 3), c2(4, 2, 3);
  nn::Linear head(2 * 2 * 2, 3);
  Tensor x = test::random_tensor({2, 3, 10, 10}, kFloat32);
  auto fn = [](nn::Conv2d& a, nn::Conv2d& b, nn::Linear& h, const Tensor& in) {
    Tensor y = max_pool2d(relu(a->forward(in)), {2, 2});
    y = relu(b->forward(y)).flatten(1);
    return cross_entropy(h->forward(y), arange(0, 2));
  };
  auto f = compile(fn, aot());
  std::vector<Tensor> params = c1->parameters();
  for (auto& p : c2->parameters()) params.push_back(p);
  for (auto& p : head->parameters()) params.push_back(p);
  expect_same_grads([&] { return fn(c1, c2, head, x); }, [&] { return f(c1, c2, head, x); }, params);
}

TEST(AotEager, GPTBlock) {
  manual_seed(2);
  gpt::Config c{.vocab = 32, .ctx = 8, .d = 16, .heads = 2, .layers = 1, .dropout = 0.0};
  gpt::Block block(c);
  Tensor x = test::random_tensor({2, 8, 16}, kFloat32);
  auto fn = [](gpt::Block& b, const Tensor& in) { return b->forward(in).square().mean(); };
  auto f = compile(fn, aot());
  expect_same_grads([&] { return fn(block, x); }, [&] { return f(block, x); }, block->parameters());
}

TEST(AotEager, TinyGPTModel) {
  manual_seed(3);
  gpt::Config c{.vocab = 32, .ctx = 8, .d = 16, .heads = 2, .layers = 2, .dropout = 0.0};
  gpt::GPT model(c);
  Tensor idx = randint(0, 32, {2, 8}), target = randint(0, 32, {2, 8});
  auto fn = [](gpt::GPT& m, const Tensor& in, const Tensor& tg) {
    return cross_entropy(m->forward(in).flatten(0, 1), tg.flatten());
  };
  auto f = compile(fn, aot());
  expect_same_grads([&] { return fn(model, idx, target); }, [&] { return f(model, idx, target); },
                    model->parameters());
}

TEST(AotEager, DynamicBatchSize) {
  // Symbolic sizes flow through the joint graph and the partition: one plan serves both batches.
  manual_seed(4);
  nn::Linear lin(6, 3);
  CompileOptions o = aot();
  o.dynamic = true;
  auto fn = [](nn::Linear& m, const Tensor& in) { return m->forward(in).tanh().square().sum(); };
  auto f = compile(fn, o);
  for (int64_t batch : {4, 7}) {
    SCOPED_TRACE(batch);
    Tensor x = test::random_tensor({batch, 6}, kFloat32);
    expect_same_grads([&] { return fn(lin, x); }, [&] { return f(lin, x); }, lin->parameters());
  }
  EXPECT_EQ(f.report().graph_count, 1);
}

TEST(AotEager, WritingASavedInputBeforeBackwardIsAnError) {
  // As in eager: x is saved for w's gradient, so changing it before backward() is refused.
  Tensor x = test::random_tensor({4}, kFloat64), w = test::grad_input({4});
  auto f = compile([](const Tensor& a, const Tensor& b) { return (a * b).sum(); }, aot());
  Tensor loss = f(x, w);
  {
    NoGradGuard ng;
    x.add_(1.0);
  }
  EXPECT_THROW(loss.backward(), Error);
}

TEST(AotEager, DropoutDrawsAfreshAndItsGradientUsesTheSameMask) {
  // x > 0, y = dropout(x, 0.5): y = x * keep * 2, so d sum(y * y) / dx = 2 * y * y / x.
  Tensor x = test::grad_input({200}, 0.5, 2.0);
  auto f = compile([](const Tensor& a) {
    Tensor y = dropout(a, 0.5, true);
    return std::make_pair((y * y).sum(), y);
  }, aot());
  std::vector<std::vector<double>> masks;
  for (int call = 0; call < 2; ++call) {
    auto [loss, y] = f(x);
    loss.backward();
    std::vector<double> yv = y.to_vector<double>(), xv = x.to_vector<double>(), expected;
    std::vector<double> mask;
    for (size_t i = 0; i < yv.size(); ++i) {
      expected.push_back(2 * yv[i] * yv[i] / xv[i]);
      mask.push_back(yv[i] != 0);
    }
    test::expect_close(take_grads({x})[0], expected, 1e-12, 1e-12, "grad");
    masks.push_back(mask);
  }
  EXPECT_NE(masks[0], masks[1]);  // a new mask per call, not one fixed at trace time
}

TEST(AotEager, BatchNormTrainingUpdatesRunningStats) {
  // Conv + BatchNorm2d in training mode: gradients as eager, and the running statistics (input
  // writes, applied after the compiled forward) move as eager's. (num_batches_tracked is not
  // compared: capture bakes its increment in at trace time, with the "eager" backend too.)
  manual_seed(5);
  nn::Conv2d ce(2, 3, 3), cc(2, 3, 3);
  nn::BatchNorm2d be(3), bc(3);
  {
    NoGradGuard ng;
    for (size_t i = 0; i < ce->parameters().size(); ++i) copy_(cc->parameters()[i], ce->parameters()[i]);
  }
  Tensor x = test::random_tensor({4, 2, 6, 6}, kFloat32);
  auto fn = [](nn::Conv2d& c, nn::BatchNorm2d& b, const Tensor& in) { return b->forward(c->forward(in)).tanh().sum(); };
  auto f = compile(fn, aot());
  for (int step = 0; step < 2; ++step) {
    Tensor le = fn(ce, be, x), lc = f(cc, bc, x);
    le.backward();
    lc.backward();
    test::expect_close(lc, le.to_vector<double>(), 1e-4, 1e-4, "loss");
    test::expect_close(bc->running_mean, be->running_mean.to_vector<double>(), 1e-5, 1e-5, "running_mean");
    test::expect_close(bc->running_var, be->running_var.to_vector<double>(), 1e-5, 1e-5, "running_var");
    std::vector<Tensor> pe = ce->parameters(), pc = cc->parameters();
    for (auto& p : be->parameters()) pe.push_back(p);
    for (auto& p : bc->parameters()) pc.push_back(p);
    std::vector<Tensor> ge = take_grads(pe), gc = take_grads(pc);
    for (size_t i = 0; i < ge.size(); ++i) test::expect_close(gc[i], ge[i].to_vector<double>(), 1e-4, 1e-4, "grad");
  }
}

TEST(AotEager, MemoryBudgetChangesWhatIsSavedNotTheGradients) {
  manual_seed(6);
  nn::Sequential mlp(nn::Linear(8, 16), nn::Tanh(), nn::Linear(16, 16), nn::GELU(), nn::Linear(16, 1));
  Tensor x = test::random_tensor({32, 8}, kFloat32);
  auto fn = [](nn::Sequential& m, const Tensor& in) { return m->forward(in).sin().sum(); };
  EXPECT_THROW(aot::set_activation_memory_budget(-0.5), Error);
  std::vector<std::string> logs;
  const std::string enabled = enabled_logs();
  for (double budget : {0.0, 1.0}) {
    aot::set_activation_memory_budget(budget);
    auto f = compile(fn, aot());  // a fresh compiled function builds its plan with this budget
    set_logs("aot");
    testing::internal::CaptureStderr();
    expect_same_grads([&] { return fn(mlp, x); }, [&] { return f(mlp, x); }, mlp->parameters());
    logs.push_back(testing::internal::GetCapturedStderr());
    set_logs(enabled);
  }
  aot::set_activation_memory_budget(0.0);
  EXPECT_EQ(logs[0].find("recomputed in backward: 0 nodes"), std::string::npos) << logs[0];
  EXPECT_NE(logs[1].find("recomputed in backward: 0 nodes"), std::string::npos) << logs[1];
}

TEST(AotEager, LogsJointGraphPartitionAndSavedTensors) {
  Tensor x = test::grad_input({3, 4}), w = test::grad_input({4, 4});
  auto f = compile([](const Tensor& a, const Tensor& b) { return a.matmul(b).tanh().sum(); }, aot());
  const std::string before = enabled_logs();
  set_logs("aot");
  testing::internal::CaptureStderr();
  f(x, w).backward();
  const std::string log = testing::internal::GetCapturedStderr();
  set_logs(before);
  EXPECT_NE(log.find("[kiln:aot] joint graph"), std::string::npos) << log;
  EXPECT_NE(log.find("partition:"), std::string::npos) << log;
  EXPECT_NE(log.find("saved 0: f64["), std::string::npos) << log;
}

}  // namespace
}  // namespace kiln
