// A sweep of functions through "aot_eager" and "inductor": for each, the loss and the gradients of both inputs
// equal eager autograd's (float64).
#include <gtest/gtest.h>
#include <kiln/compile.h>
#include <kiln/nn.h>

#include "autograd/engine.h"
#include "core/tensor_impl.h"
#include "support/test_util.h"

namespace kiln {
namespace {

using Fn = std::function<Tensor(const Tensor&, const Tensor&)>;

struct Case {
  const char* name;
  Fn fn;
};

std::vector<Case> cases() {
  return {
      {"softmax", [](const Tensor& a, const Tensor& b) { return (softmax(a, 1) * b).sum(); }},
      {"log_softmax", [](const Tensor& a, const Tensor& b) { return (log_softmax(a * b, 0)).sum(); }},
      {"layer_norm", [](const Tensor& a, const Tensor& b) { return layer_norm(a, {6}, b.select(0, 0), {}).square().sum(); }},
      {"cat_split", [](const Tensor& a, const Tensor& b) {
         TensorList p = cat({a, b}, 1).split(4, 1);
         return (p[0] * p[2].exp()).sum() + p[1].sum();
       }},
      {"stack_unbind", [](const Tensor& a, const Tensor& b) {
         TensorList r = stack({a, b}, 0).unbind(1);
         return (r[0] * r[3]).sum();
       }},
      {"where_maximum", [](const Tensor& a, const Tensor& b) { return where(gt(a, b), a * 2, maximum(a, b).sin()).sum(); }},
      {"reshape_transpose_matmul", [](const Tensor& a, const Tensor& b) {
         return a.reshape({6, 4}).transpose(0, 1).matmul(b.reshape({6, 4})).tanh().sum();
       }},
      {"index_gather", [](const Tensor& a, const Tensor& b) {
         Tensor idx = tensor(std::vector<double>{2, 0, 1, 1}, {4, 1}, kInt64);
         return a.gather(1, idx).sum() + b.index_select(0, idx.flatten()).square().sum();
       }},
      {"cumsum_amax", [](const Tensor& a, const Tensor& b) { return cumsum(a * b, 1).amax({1}).sum(); }},
      {"sort_topk", [](const Tensor& a, const Tensor& b) {
         auto [v, i] = topk(a + b, 2, 1);
         return v.square().sum();
       }},
      {"max_dim_mean", [](const Tensor& a, const Tensor& b) {
         auto [v, i] = max(a * b, 0);
         return v.sum() + a.mean();
       }},
      {"var_std", [](const Tensor& a, const Tensor& b) { return var(a, std::vector<int64_t>{1}).sum() + std(b).square(); }},
      {"pow_sqrt_abs", [](const Tensor& a, const Tensor& b) { return (abs(a) + 1).sqrt().pow(b.sigmoid()).sum(); }},
      {"in_place_chain", [](const Tensor& a, const Tensor& b) {
         Tensor h = a * 1.0;
         h.sin_();
         h.slice(1, 0, 6, 2).mul_(b.slice(1, 1, 6, 2));
         h.unsqueeze(0).squeeze(0).diagonal().add_(3.0);
         return (h * h).sum();
       }},
      {"expand_broadcast", [](const Tensor& a, const Tensor& b) {
         return (a.unsqueeze(1).expand({4, 3, 6}) * b.sum(0).view({1, 1, 6})).sum();
       }},
      {"mse_cross_entropy", [](const Tensor& a, const Tensor& b) {
         Tensor t = tensor(std::vector<double>{0, 5, 3, 1}, {4}, kInt64);
         return mse_loss(a, b) + cross_entropy(a * b, t);
       }},
  };
}

TEST(AotCorpus, GradientsMatchEager) {
  for (const char* backend : {"aot_eager", "inductor"})
  for (const Case& c : cases()) {
    SCOPED_TRACE(std::string(c.name) + " (backend " + backend + ")");
    Tensor a = test::grad_input({4, 6}), b = test::grad_input({4, 6});
    try {
      Tensor le = c.fn(a, b);
      le.backward();
      Tensor ga = a.grad().clone(), gb = b.grad().clone();
      a.set_grad(Tensor()), b.set_grad(Tensor());
      CompileOptions o;
      o.backend = backend;
      auto f = compile(c.fn, o);
      Tensor lc = f(a, b);
      ASSERT_TRUE(lc.impl()->autograd && lc.impl()->autograd->grad_fn);
      EXPECT_EQ(lc.impl()->autograd->grad_fn->name(), "CompiledFunctionBackward");
      lc.backward();
      test::expect_close(lc, le.to_vector<double>(), 1e-10, 1e-10, "loss");
      test::expect_close(a.grad(), ga.to_vector<double>(), 1e-9, 1e-9, "grad a");
      test::expect_close(b.grad(), gb.to_vector<double>(), 1e-9, 1e-9, "grad b");
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

}  // namespace
}  // namespace kiln
