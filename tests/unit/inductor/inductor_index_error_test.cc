// Indices out of range under the inductor backend raise the kiln::Error eager raises (the op the
// user called, its message and hint), whatever kernel the index ended up fused into; ignored
// targets stay ignored; a failed call leaves the compiled function and the process usable.
#include <gtest/gtest.h>
#include <kiln/compile.h>
#include <kiln/kiln.h>

#include <functional>

#include "support/test_util.h"

namespace kiln {
namespace {

CompileOptions inductor() { return test::inductor_options(); }

Error::Info error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.info();
  }
  ADD_FAILURE() << "no kiln::Error";
  return {};
}

// The compiled call raises what the eager call raises (op, message, hint).
void expect_same_error(const std::function<void()>& eager, const std::function<void()>& compiled) {
  const Error::Info want = error_of(eager), got = error_of(compiled);
  EXPECT_FALSE(want.message.empty());
  EXPECT_EQ(got.op, want.op);
  EXPECT_EQ(got.message, want.message);
  EXPECT_EQ(got.hint, want.hint);
}

double max_diff(const Tensor& a, const Tensor& b) { return (a.to(kFloat64) - b.to(kFloat64)).abs().max().item<double>(); }

TEST(InductorIndexError, CrossEntropyAndNllLossTargets) {
  const Tensor x = randn({6, 10});
  auto ce = [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); };
  auto nll = [](const Tensor& x, const Tensor& t) { return nll_loss(log_softmax(x, 1), t); };
  auto fce = compile(ce, inductor());
  auto fnll = compile(nll, inductor());
  const Tensor good = tensor<int64_t>({0, 9, 3, 3, 5, 1});
  EXPECT_LT(max_diff(fce(x, good), ce(x, good)), 1e-5);  // (compiled with these shapes first)
  EXPECT_LT(max_diff(fnll(x, good), nll(x, good)), 1e-5);
  for (const std::vector<int64_t>& bad : {std::vector<int64_t>{0, 9, 10, 3, 5, 1}, std::vector<int64_t>{0, -2, 3, 3, 5, 1}}) {
    const Tensor t = tensor<int64_t>(bad);
    expect_same_error([&] { ce(x, t); }, [&] { fce(x, t); });
    expect_same_error([&] { nll(x, t); }, [&] { fnll(x, t); });
  }
  // ignore_index is no error and adds nothing (as eager); then the good targets still work.
  const Tensor ignored = tensor<int64_t>({0, -100, 3, -100, 5, 1});
  EXPECT_LT(max_diff(fce(x, ignored), ce(x, ignored)), 1e-5);
  EXPECT_LT(max_diff(fnll(x, ignored), nll(x, ignored)), 1e-5);
  EXPECT_LT(max_diff(fce(x, good), ce(x, good)), 1e-5);
}

TEST(InductorIndexError, CrossEntropyBackwardCompiledToo) {  // AOT: the forward kernel raises first
  const Tensor x = randn({4, 7}).requires_grad_(true);
  auto ce = [](const Tensor& x, const Tensor& t) { return cross_entropy(x, t); };
  auto f = compile(ce, inductor());
  const Tensor good = tensor<int64_t>({6, 0, 2, 2});
  f(x, good).backward();
  const Tensor grad = x.grad().clone();
  const Tensor t = tensor<int64_t>({6, 0, 7, 2});
  expect_same_error([&] { ce(x, t); }, [&] { f(x, t).backward(); });
  x.grad().zero_();
  f(x, good).backward();
  EXPECT_LT(max_diff(x.grad(), grad), 1e-6);
}

TEST(InductorIndexError, GatherIndexSelectEmbedding) {
  const Tensor x = randn({3, 5}), w = randn({8, 4});
  auto ga = [](const Tensor& x, const Tensor& i) { return gather(x, 1, i).exp(); };
  auto is = [](const Tensor& x, const Tensor& i) { return index_select(x, 0, i) * 2.0; };
  auto em = [](const Tensor& i, const Tensor& w) { return embedding(i, w).sum({1}); };
  auto fga = compile(ga, inductor());
  auto fis = compile(is, inductor());
  auto fem = compile(em, inductor());
  const Tensor gi = tensor<int64_t>({0, 4, 1, 2, 2, 3}, {3, 2}), ii = tensor<int64_t>({7, 0, 3}), ei = tensor<int64_t>({1, 7, 0, 2}, {2, 2});
  EXPECT_EQ(max_diff(fga(x, gi), ga(x, gi)), 0.0);
  EXPECT_EQ(max_diff(fis(w, ii), is(w, ii)), 0.0);
  EXPECT_LT(max_diff(fem(ei, w), em(ei, w)), 1e-6);
  const Tensor gbad = tensor<int64_t>({0, 4, 1, 5, 2, 3}, {3, 2}), ibad = tensor<int64_t>({7, 8, 3}), ebad = tensor<int64_t>({1, 7, -1, 2}, {2, 2});
  expect_same_error([&] { ga(x, gbad); }, [&] { fga(x, gbad); });
  expect_same_error([&] { is(w, ibad); }, [&] { fis(w, ibad); });
  expect_same_error([&] { em(ebad, w); }, [&] { fem(ebad, w); });
  EXPECT_EQ(max_diff(fga(x, gi), ga(x, gi)), 0.0);  // (usable after the errors)
  EXPECT_LT(max_diff(fem(ei, w), em(ei, w)), 1e-6);
}

}  // namespace
}  // namespace kiln
