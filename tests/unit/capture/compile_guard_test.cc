// issue 5 acceptance: what makes a compiled function recompile (and what must not), the
// recompile limit with its eager fallback, and KILN_LOGS=recompiles naming the failing guard.
#include <kiln/autocast.h>
#include <kiln/log.h>

#include "support/compile_corpus.h"

namespace kiln {
namespace {

using test::random_tensor;

// A compiled x -> x * 2 + 1 that counts its traces.
struct Counted {
  int traces = 0;
  Compiled<std::function<Tensor(const Tensor&)>> f;
  explicit Counted(const CompileOptions& o = {})
      : f(compile(std::function<Tensor(const Tensor&)>([this](const Tensor& x) {
                    traces++;
                    return x * 2 + 1;
                  }),
                  o)) {}
  void call(const Tensor& x) { corpus::expect_bitwise(f(x), x * 2 + 1, "result"); }
  std::string last_reason() {
    auto r = f.report().recompile_reasons;
    return r.empty() ? "" : r.back();
  }
};

#define EXPECT_HAS(text, part) EXPECT_NE(std::string(text).find(part), std::string::npos) << "'" << (text) << "' lacks '" << (part) << "'"

TEST(CompileGuards, EachInputPropertyRecompiles) {
  struct Case {
    const char* what;
    std::function<Tensor()> variant;
    const char* reason;
  };
  const Tensor base = random_tensor({4, 6}, kFloat32);
  std::vector<Case> cases = {
      {"dtype", [&] { return base.to(kFloat64); }, "dtype float64, expected float32"},
      {"rank", [&] { return base.reshape({4, 6, 1}); }, "rank 3, expected 2"},
      {"specialized size", [&] { return random_tensor({5, 6}, kFloat32); }, "size 0 is 5, expected 4"},
      {"requires_grad", [&] { return base.clone().requires_grad_(); }, "requires_grad is True"},
      {"strides (transposed layout)", [&] { return random_tensor({4, 6}, kFloat32, nullptr, "transposed"); }, "strides"},
      {"strides (every other element)", [&] { return random_tensor({4, 6}, kFloat32, nullptr, "strided"); }, "strides"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Counted k;
    k.call(base);
    k.call(base.clone());  // same properties, new tensor: cached
    EXPECT_EQ(k.traces, 1);
    k.call(c.variant());
    EXPECT_EQ(k.traces, 2);
    EXPECT_HAS(k.last_reason(), c.reason);
    k.call(base);  // the first graph still serves the first kind of input
    EXPECT_EQ(k.traces, 2);
  }
}

TEST(CompileGuards, GlobalStateRecompiles) {
  Tensor x = random_tensor({3}, kFloat32);
  {
    Counted k;
    k.call(x);
    {
      NoGradGuard ng;
      k.call(x);
    }
    EXPECT_EQ(k.traces, 2);
    EXPECT_HAS(k.last_reason(), "grad mode");
  }
  {
    Counted k;
    k.call(x);
    {
      AutocastGuard ac(kBFloat16);
      k.f(x);  // (x * 2 + 1 stays float32 under autocast: only the guard matters here)
    }
    EXPECT_EQ(k.traces, 2);
    EXPECT_HAS(k.last_reason(), "autocast");
    k.call(x);
    EXPECT_EQ(k.traces, 2);
  }
}

TEST(CompileGuards, ScalarValuesRecompile) {
  int traces = 0;
  auto f = compile([&](const Tensor& x, double s, int64_t n, bool b) {
    traces++;
    return b ? x * s + double(n) : x;
  });
  Tensor x = ones({2});
  f(x, 2.0, int64_t(3), true);
  f(x, 2.0, int64_t(3), true);
  EXPECT_EQ(traces, 1);
  corpus::expect_bitwise(f(x, 2.5, int64_t(3), true), x * 2.5 + 3.0, "new double");
  EXPECT_HAS(f.report().recompile_reasons.back(), "argument 1 is 2.5");
  corpus::expect_bitwise(f(x, 2.5, int64_t(4), true), x * 2.5 + 4.0, "new int");
  corpus::expect_bitwise(f(x, 2.5, int64_t(4), false), x, "new bool");
  EXPECT_EQ(traces, 4);
}

TEST(CompileGuards, ModuleStateRecompiles) {
  manual_seed(0);
  nn::Sequential net(nn::Linear(4, 4), nn::Dropout(0.5));
  int traces = 0;
  auto fn = [&](nn::Sequential& m, const Tensor& x) {
    traces++;
    return m->forward(x);
  };
  auto f = compile(fn);
  Tensor x = random_tensor({3, 4}, kFloat32);
  net->eval();
  corpus::expect_bitwise(f(net, x), net->forward(x), "eval");
  {
    NoGradGuard ng;
    net->parameters()[0].mul_(0.5);  // an in-place update (an optimizer step): no recompile
  }
  corpus::expect_bitwise(f(net, x), net->forward(x), "after an in-place update");
  EXPECT_EQ(traces, 1);
  // A parameter replaced by a new tensor: the graph's lifted input would be stale.
  auto* lin = dynamic_cast<nn::LinearImpl*>((*net)[0].get());
  ASSERT_NE(lin, nullptr);
  lin->weight = random_tensor({4, 4}, kFloat32).requires_grad_();
  corpus::expect_bitwise(f(net, x), net->forward(x), "after replacing the weight");
  EXPECT_EQ(traces, 2);
  EXPECT_HAS(f.report().recompile_reasons.back(), "replaced");
  // train() turns dropout on: a different function.
  net->train();
  manual_seed(1);
  Tensor want = net->forward(x);
  manual_seed(1);
  corpus::expect_bitwise(f(net, x), want, "train mode");
  EXPECT_EQ(traces, 3);
  EXPECT_HAS(f.report().recompile_reasons.back(), "train() and eval()");
  // Another module of the same structure: a different identity.
  nn::Sequential other(nn::Linear(4, 4), nn::Dropout(0.5));
  other->eval();
  corpus::expect_bitwise(f(other, x), other->forward(x), "another module");
  EXPECT_EQ(traces, 4);
  EXPECT_HAS(f.report().recompile_reasons.back(), "different module");
}

TEST(CompileGuards, LiftedTensorMetadataIsGuarded) {
  manual_seed(0);
  nn::Linear lin(3, 2);
  int traces = 0;
  auto f = compile([&, lin](const Tensor& x) mutable {  // the module reached through the capture
    traces++;
    return lin->forward(x);
  });
  Tensor x = random_tensor({4, 3}, kFloat32);
  EXPECT_TRUE(f(x).requires_grad());
  lin->weight.requires_grad_(false);  // freezing, in place
  lin->bias.requires_grad_(false);
  Tensor y = f(x);
  EXPECT_EQ(traces, 2);
  EXPECT_HAS(f.report().recompile_reasons.back(), "lifted tensor 0");
  EXPECT_FALSE(y.requires_grad());
  corpus::expect_bitwise(y, lin->forward(x), "frozen");
  f(x);
  EXPECT_EQ(traces, 2);
}

TEST(CompileGuards, DynamicSizesDoNotRecompile) {
  Counted k;
  k.call(random_tensor({4, 6}, kFloat32));
  k.call(random_tensor({5, 6}, kFloat32));  // dim 0 changed: symbolic from now on
  EXPECT_EQ(k.traces, 2);
  for (int64_t n : {2, 7, 30, 5}) k.call(random_tensor({n, 6}, kFloat32));
  EXPECT_EQ(k.traces, 2);
  k.call(random_tensor({5, 7}, kFloat32));  // dim 1 was static
  EXPECT_EQ(k.traces, 3);
  EXPECT_HAS(k.last_reason(), "size 1 is 7, expected 6");
}

TEST(CompileGuards, SizesZeroAndOneStaySpecialized) {
  CompileOptions o;
  o.dynamic = true;  // every size symbolic from the start, except 0 and 1
  Counted k(o);
  k.call(random_tensor({1, 3}, kFloat32));
  k.call(random_tensor({4, 3}, kFloat32));  // 1 was specialized
  EXPECT_EQ(k.traces, 2);
  k.call(random_tensor({9, 5}, kFloat32));  // both dims symbolic in the second graph
  EXPECT_EQ(k.traces, 2);
  k.call(random_tensor({1, 3}, kFloat32));  // the first graph again
  EXPECT_EQ(k.traces, 2);
  k.call(random_tensor({0, 3}, kFloat32));  // 0: specialized, a new graph
  EXPECT_EQ(k.traces, 3);
  k.call(random_tensor({6, 1}, kFloat32));  // 1 in dim 1
  EXPECT_EQ(k.traces, 4);
  ExplainReport r = k.f.report();
  EXPECT_EQ(r.graph_count, 4);
}

TEST(CompileGuards, MarkDynamicRangeIsGuarded) {
  Counted k;
  Tensor a = random_tensor({5, 3}, kFloat32);
  mark_dynamic(a, 0, 2, 8);
  k.call(a);
  Tensor b = random_tensor({8, 3}, kFloat32);
  k.call(b);  // within [2, 8]: the symbolic graph serves it
  EXPECT_EQ(k.traces, 1);
  k.call(random_tensor({9, 3}, kFloat32));  // outside: the guard fails
  EXPECT_EQ(k.traces, 2);
  EXPECT_HAS(k.last_reason(), "outside [2, 8]");
  // A tensor marked with a range its own size is outside of is the caller's mistake.
  Tensor c = random_tensor({12, 3}, kFloat32);
  mark_dynamic(c, 0, 2, 8);
  Counted fresh;
  EXPECT_THROW(fresh.f(c), Error);
}

TEST(CompileGuards, SymbolicRelationFlipRecompiles) {
  int traces = 0;
  auto fn = [&](const Tensor& x, const Tensor& y) {
    traces++;
    return x.sym_size(0) > y.sym_size(0) ? x.sum() - y.sum() : y.mean() * 2;
  };
  CompileOptions o;
  o.dynamic = true;
  o.backend = "eager";  // compared bitwise
  auto f = compile(fn, o);
  auto run = [&](int64_t n, int64_t m) {
    Tensor x = random_tensor({n}, kFloat32), y = random_tensor({m}, kFloat32);
    corpus::expect_bitwise(f(x, y), fn(x, y), "result");
  };
  run(5, 3);
  run(9, 4);  // still x longer: the same graph
  EXPECT_EQ(traces, 1 + 2);  // (fn itself ran twice eagerly for the references)
  run(3, 5);  // flipped
  EXPECT_EQ(traces, 2 + 3);
  EXPECT_HAS(f.report().recompile_reasons.back(), "size relation");
  run(2, 7);
  run(8, 2);
  EXPECT_EQ(traces, 2 + 5);
  EXPECT_EQ(f.report().graph_count, 2);
}

TEST(CompileGuards, RecompileLimitFallsBackOnceWithOneWarning) {
  CompileOptions o;
  o.recompile_limit = 3;
  o.dynamic = false;
  o.name = "limited";
  Counted k(o);
  testing::internal::CaptureStderr();
  for (int64_t n : {2, 3, 4, 5, 6, 7}) k.call(random_tensor({n}, kFloat32));
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(k.f.report().graph_count, 3);
  EXPECT_TRUE(k.f.report().eager_fallback);
  // Traces 3, then three eager runs of the function itself (they count as "traces" here).
  EXPECT_EQ(k.traces, 6);
  size_t first = err.find("recompile limit");
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("recompile limit", first + 1), std::string::npos) << "warned more than once:\n" << err;
  EXPECT_HAS(err, "limited");

  o.error_on_recompile_limit = true;
  Counted strict(o);
  strict.call(zeros({2}));
  strict.call(zeros({3}));
  strict.call(zeros({4}));
  try {
    strict.f(zeros({5}));
    ADD_FAILURE() << "no error at the recompile limit";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "recompile limit");
    EXPECT_HAS(e.what(), "size 0 is 5");
  }
}

TEST(CompileGuards, RecompileLogNamesTheGuard) {
  set_logs("recompiles");
  Counted k;
  k.call(random_tensor({3, 2}, kFloat32));
  testing::internal::CaptureStderr();
  k.call(random_tensor({3, 2}, kFloat64));
  std::string err = testing::internal::GetCapturedStderr();
  set_logs("");
  EXPECT_HAS(err, "[kiln:recompiles]");
  EXPECT_HAS(err, "input 0: dtype float64, expected float32");
  // Off: nothing is printed.
  testing::internal::CaptureStderr();
  k.call(random_tensor({3, 2, 1}, kFloat32));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(CompileGuards, ExplainListsGuards) {
  auto r = explain([](const Tensor& x, double s) { return x * s; }, random_tensor({2, 3}, kFloat32), 1.5);
  std::string all;
  for (const auto& g : r.guards) all += g + "\n";
  EXPECT_HAS(all, "grad mode on");
  EXPECT_HAS(all, "autocast off");
  EXPECT_HAS(all, "input 0: float32[2, 3]");
  EXPECT_HAS(all, "argument 1 == 1.5");
}

}  // namespace
}  // namespace kiln
