// kiln::compile with the eager backend: results equal eager; guards recompile when they must.
#include <kiln/compile.h>
#include <kiln/nn.h>

#include "support/test_util.h"

namespace kiln {
namespace {

using test::random_tensor;

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.sizes(), b.sizes());
  ASSERT_EQ(a.dtype(), b.dtype());
  auto x = a.to_vector<double>(), y = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); i++) EXPECT_DOUBLE_EQ(x[i], y[i]) << i;
}

Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& w2) { return relu(x.matmul(w1)).matmul(w2).softmax(-1); }

// The backend these tests compare bitwise with eager (the default, "inductor", is compared
// within float rounding by the corpus tests).
CompileOptions eager_backend() {
  CompileOptions o;
  o.backend = "eager";
  return o;
}

TEST(Compile, MlpEqualsEager) {
  auto f = compile(mlp, eager_backend());
  Tensor x = random_tensor({4, 8}, kFloat32), w1 = random_tensor({8, 16}, kFloat32), w2 = random_tensor({16, 3}, kFloat32);
  expect_equal(f(x, w1, w2), mlp(x, w1, w2));
  expect_equal(f(x, w1, w2), mlp(x, w1, w2));
  ExplainReport r = f.report();
  EXPECT_EQ(r.graph_count, 1);
  EXPECT_TRUE(r.breaks.empty());
  EXPECT_EQ(r.ops_per_graph.at(0), 4);  // matmul, relu, matmul, softmax
}

TEST(Compile, RecompilesOnDtypeRankAndStaticSize) {
  int traces = 0;
  auto f = compile([&](const Tensor& x) {
    traces++;
    return x * 2 + 1;
  });
  Tensor a = random_tensor({3, 4}, kFloat32);
  f(a);
  f(random_tensor({3, 4}, kFloat32));
  EXPECT_EQ(traces, 1);
  f(random_tensor({3, 4}, kFloat64));  // dtype
  EXPECT_EQ(traces, 2);
  f(random_tensor({3, 4, 2}, kFloat32));  // rank
  EXPECT_EQ(traces, 3);
  expect_equal(f(random_tensor({5, 4}, kFloat32) * 0), zeros({5, 4}) + 1);  // size: recompile, now dynamic
  EXPECT_EQ(traces, 4);
  f(random_tensor({7, 4}, kFloat32));  // dim 0 is dynamic now: no recompile
  f(random_tensor({9, 4}, kFloat32));
  EXPECT_EQ(traces, 4);
  ExplainReport r = f.report();
  EXPECT_EQ(r.recompile_reasons.size(), 3u);
  EXPECT_NE(r.recompile_reasons[0].find("dtype float64"), std::string::npos) << r.recompile_reasons[0];
}

TEST(Compile, DynamicSizeGivesEagerResults) {
  auto fn = [](const Tensor& x) { return x.reshape(SymShape{x.sym_size(0), SymInt(-1)}).sum(1) / 3.0; };
  auto f = compile(fn, eager_backend());
  for (int64_t n : {4, 6, 9, 2}) {
    Tensor x = random_tensor({n, 3, 2}, kFloat64);
    expect_equal(f(x), fn(x));
  }
  EXPECT_EQ(f.report().graph_count, 2);  // static at 4, then symbolic
}

TEST(Compile, MarkDynamicAvoidsTheFirstRecompile) {
  int traces = 0;
  auto f = compile([&](const Tensor& x) {
    traces++;
    return x.sum(0);
  });
  for (int64_t n : {5, 8, 13}) {
    Tensor x = random_tensor({n, 2}, kFloat32);
    mark_dynamic(x, 0);
    f(x);
  }
  EXPECT_EQ(traces, 1);
}

TEST(Compile, RecompileLimitFallsBackToEager) {
  int traces = 0;
  CompileOptions o;
  o.recompile_limit = 2;
  o.dynamic = false;
  auto f = compile([&](const Tensor& x) {
    traces++;
    return x + 1;
  }, o);
  for (int64_t n : {2, 3, 4, 5}) expect_equal(f(zeros({n})), ones({n}));
  EXPECT_TRUE(f.report().eager_fallback);
  EXPECT_EQ(f.report().graph_count, 2);
  o.error_on_recompile_limit = true;
  auto g = compile([](const Tensor& x) { return x + 1; }, o);
  g(zeros({2}));
  g(zeros({3}));
  EXPECT_THROW(g(zeros({4})), Error);
}

TEST(Compile, ScalarArgumentsAreGuarded) {
  int traces = 0;
  auto f = compile([&](const Tensor& x, double s) {
    traces++;
    return x * s;
  });
  Tensor x = ones({3});
  expect_equal(f(x, 2.0), ones({3}) * 2.0);
  expect_equal(f(x, 3.0), ones({3}) * 3.0);
  EXPECT_EQ(traces, 2);
}

TEST(Compile, GraphBreakOnItemRunsInSegments) {
  auto fn = [](const Tensor& x) {
    Tensor y = x.exp();
    if (y.sum().item<double>() > 10) return y * 2;
    return y - 1;
  };
  auto f = compile(fn);
  Tensor small = zeros({3}), big = ones({3}) * 5;
  expect_equal(f(small), fn(small));
  expect_equal(f(big), fn(big));
  expect_equal(f(small), fn(small));
  ExplainReport r = f.report();
  ASSERT_EQ(r.breaks.size(), 1u) << r.str();
  EXPECT_NE(r.breaks[0].reason.find("data was read"), std::string::npos);
  EXPECT_EQ(r.graph_count, 3);  // exp+sum, then each branch's segment
  CompileOptions full;
  full.fullgraph = true;
  auto g = compile(fn, full);
  EXPECT_THROW(g(small), Error);
}

TEST(Compile, SegmentsThatBakeValuesHitTheRecompileLimit) {
  auto fn = [](const Tensor& x) {
    double s = x.sum().item<double>();  // a break; the value is baked into the next segment
    return x * s;
  };
  CompileOptions o;
  o.recompile_limit = 2;
  auto f = compile(fn, o);
  testing::internal::CaptureStderr();
  for (int i = 1; i <= 8; i++) {
    Tensor x = ones({2}) * double(i);
    expect_equal(f(x), fn(x));
  }
  EXPECT_NE(testing::internal::GetCapturedStderr().find("recompile limit"), std::string::npos);
  EXPECT_TRUE(f.report().eager_fallback);
}

TEST(Compile, DataDependentShapeBreaks) {
  auto fn = [](const Tensor& x) { return x.index({x > 0}) * 2; };
  auto f = compile(fn);
  Tensor x = tensor({-1.0, 2.0, 3.0, -4.0});
  expect_equal(f(x), fn(x));
  EXPECT_EQ(f.report().breaks.size(), 1u);
}

TEST(Compile, CondCapturesBothBranchesWithoutABreak) {
  auto fn = [](const Tensor& x) { return cond(x.sum() > 0, [&] { return x * 2; }, [&] { return x - 1; }); };
  auto f = compile(fn);
  Tensor a = tensor({1.0, 2.0}), b = tensor({-1.0, -2.0});
  expect_equal(f(a), a * 2);
  expect_equal(f(b), b - 1);
  ExplainReport r = f.report();
  EXPECT_EQ(r.graph_count, 1);
  EXPECT_TRUE(r.breaks.empty());
}

TEST(Compile, InPlaceOpsMutateInputs) {
  auto f = compile([](const Tensor& x) {
    Tensor y = x;
    y.add_(1);
    return y.mul(2);
  });
  Tensor x = zeros({3});
  expect_equal(f(x), ones({3}) * 2);
  expect_equal(x, ones({3}));
}

TEST(Compile, ModuleParametersAreInputs) {
  manual_seed(0);
  nn::Linear lin(4, 2);
  int traces = 0;
  auto f = compile([&](nn::Linear& m, const Tensor& x) {
    traces++;
    return m->forward(x);
  });
  Tensor x = random_tensor({3, 4}, kFloat32);
  expect_equal(f(lin, x), lin->forward(x));
  {
    NoGradGuard ng;
    lin->weight.add_(1.0);  // an optimizer-style in-place update
  }
  expect_equal(f(lin, x), lin->forward(x));
  EXPECT_EQ(traces, 1);
}

TEST(Compile, GradientsFlowThroughTheEagerBackend) {
  auto f = compile([](const Tensor& x, const Tensor& w) { return (x.matmul(w)).tanh().sum(); });
  Tensor x = random_tensor({2, 3}, kFloat64), w = random_tensor({3, 2}, kFloat64).requires_grad_();
  f(x, w).backward();
  Tensor g1 = w.grad().clone();
  w.set_grad(Tensor());
  (x.matmul(w)).tanh().sum().backward();
  expect_equal(g1, w.grad());
}

TEST(Compile, GuardsOnGradMode) {
  int traces = 0;
  auto f = compile([&](const Tensor& x) {
    traces++;
    return x * 2;
  });
  Tensor x = ones({2});
  f(x);
  {
    NoGradGuard ng;
    f(x);
  }
  EXPECT_EQ(traces, 2);
}

TEST(Compile, UnknownBackendIsAnError) {
  CompileOptions o;
  o.backend = "nope";
  EXPECT_THROW(compile([](const Tensor& x) { return x; }, o), Error);
}

TEST(Compile, LazyScopeComputesOnSync) {
  Tensor x = random_tensor({4}, kFloat64);
  Tensor y;
  {
    LazyScope lazy;
    y = (x.exp() + 1).log();
    EXPECT_TRUE(y.is_fake());
    double first = y.sum().item<double>();  // a sync point
    EXPECT_FALSE(y.is_fake());
    EXPECT_NEAR(first, ((x.exp() + 1).log()).sum().item<double>(), 1e-12);
  }
  expect_equal(y, (x.exp() + 1).log());
}

TEST(Compile, DetachInsideTheFunction) {
  auto fn = [](const Tensor& x) { return x.detach() * 2 + x; };
  auto f = compile(fn);
  Tensor x = random_tensor({3}, kFloat32);
  expect_equal(f(x), fn(x));
  EXPECT_TRUE(f.report().breaks.empty());
}

TEST(Compile, NoGradAroundTensorsThatRequireGradIsTraced) {
  for (const char* backend : {"eager", "aot_eager"}) {
    Tensor w = ones({3}).requires_grad_();
    auto fn = [&](const Tensor& x) {
      Tensor y = (x * w).sum();
      Tensor z;
      {
        NoGradGuard ng;
        z = (w * 2).sum();  // no history: contributes nothing to w's gradient
      }
      return y + z;
    };
    CompileOptions o;
    o.backend = backend;
    o.fullgraph = true;
    auto f = compile(fn, o);
    Tensor x = tensor({1.0f, 2.0f, 3.0f});
    Tensor y = f(x);
    EXPECT_EQ(y.item<float>(), 12.0f);
    y.backward();
    expect_equal(w.grad(), x);
    EXPECT_EQ(f.report().graph_count, 1) << backend;
  }
}

TEST(Compile, NoGradAroundAValueComputedWithGradRunsApart) {
  Tensor w = ones({3}).requires_grad_();
  auto fn = [&](const Tensor& x) {
    Tensor h = x * w;
    Tensor z;
    {
      NoGradGuard ng;
      z = (h * 2).sum();  // h has history in the graph: a segment of its own
    }
    return h.sum() + z;
  };
  auto f = compile(fn);
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  Tensor y = f(x);
  EXPECT_EQ(y.item<float>(), 18.0f);
  y.backward();
  expect_equal(w.grad(), x);
  EXPECT_EQ(f.report().breaks.size(), 1u) << f.report().str();
}

TEST(Compile, ReadingACapturedTensorBreaks) {
  Tensor counter = tensor({3.0});
  auto fn = [&](const Tensor& x) { return x * counter.item<double>(); };
  auto f = compile(fn);
  expect_equal(f(ones({2})), ones({2}) * 3.0);
  counter.fill_(5.0);
  expect_equal(f(ones({2})), ones({2}) * 5.0);  // not baked into the graph
  EXPECT_EQ(f.report().breaks.size(), 1u);
}

TEST(Compile, BatchNormCountsBatchesWhenCompiled) {
  nn::BatchNorm2d bn(2);
  auto f = compile([](nn::BatchNorm2d& m, const Tensor& x) { return m->forward(x); });
  for (int i = 0; i < 3; i++) f(bn, random_tensor({2, 2, 3, 3}, kFloat32));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 3);
  EXPECT_EQ(f.report().graph_count, 1);
}

TEST(Compile, OpaqueCallsBreakAndRunEagerly) {
  std::vector<double> seen;
  auto log_sum = opaque([&](const Tensor& t) {
    seen.push_back(t.sum().item<double>());  // real data: it runs eagerly
    return t;
  });
  auto fn = [&](const Tensor& x) { return log_sum(x * 2) + 1; };
  auto f = compile(fn);
  Tensor x = ones({3});
  expect_equal(f(x), ones({3}) * 3);
  EXPECT_EQ(seen, std::vector<double>{6.0});
  ExplainReport r = f.report();
  ASSERT_EQ(r.breaks.size(), 1u);
  EXPECT_NE(r.breaks[0].reason.find("opaque"), std::string::npos);
}

}  // namespace
}  // namespace kiln
