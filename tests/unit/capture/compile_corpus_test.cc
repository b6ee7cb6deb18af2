// issue 5 acceptance: a corpus of functions and modules compiled with the "eager" backend. Each
// compiled result equals eager bitwise (the eager backend runs the same kernels on the same
// inputs), and the graph and break counts equal explain()'s and the ones worked out here.
#include <kiln/autocast.h>

#include <sstream>

#include "examples/gpt/model.h"
#include "support/compile_corpus.h"

namespace kiln {
namespace {

using corpus::check;
using corpus::check_grads;
using corpus::Expect;
using corpus::Fixed;

// ---------------------------------------------------------------- models

Tensor mlp(const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2, const Tensor& b2) {
  return (x.matmul(w1) + b1).relu().matmul(w2) + b2;
}

TEST(CompileCorpus, MlpFunctional) {
  Fixed x({4, 8}), w1({8, 16}), b1({16}), w2({16, 3}), b2({3});
  check("mlp", mlp, [&](int) { return std::tuple{x(), w1(), b1(), w2(), b2()}; }, Expect{1, 0});
  check_grads("mlp", mlp, [&](int) {
    return std::tuple{x(), w1().requires_grad_(), b1().requires_grad_(), w2().requires_grad_(), b2().requires_grad_()};
  });
}

TEST(CompileCorpus, MlpSequentialModule) {
  manual_seed(1);
  nn::Sequential net(nn::Linear(8, 16), nn::ReLU(), nn::Linear(16, 16), nn::Tanh(), nn::Linear(16, 4));
  Fixed x({5, 8});
  auto fn = [](nn::Sequential& m, const Tensor& x) { return m->forward(x); };
  check("sequential", fn, [&](int) { return std::tuple<nn::Sequential&, Tensor>{net, x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, GptBlock) {
  manual_seed(2);
  gpt::Config c{.vocab = 64, .ctx = 16, .d = 32, .heads = 4, .layers = 1};
  gpt::Block block(c);
  Fixed x({2, 8, 32});
  auto fn = [](gpt::Block& b, const Tensor& x) { return b->forward(x); };
  check("gpt block", fn, [&](int) { return std::tuple<gpt::Block&, Tensor>{block, x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, GptModelLoss) {
  manual_seed(3);
  gpt::Config c{.vocab = 64, .ctx = 16, .d = 32, .heads = 4, .layers = 2};
  gpt::GPT model(c);
  model->init_gpt2_weights();
  Fixed idx({2, 8}, kInt64, 0, 63), tgt({2, 8}, kInt64, 0, 63);
  auto fn = [](gpt::GPT& m, const Tensor& idx, const Tensor& tgt) { return m->loss(idx, tgt); };
  check("gpt loss", fn, [&](int) { return std::tuple<gpt::GPT&, Tensor, Tensor>{model, idx(), tgt()}; }, Expect{1, 0});
  // The parameters' gradients through the compiled loss equal eager's (the eager backend:
  // bitwise; check_grads covers the others within rounding).
  CompileOptions eager_backend;
  eager_backend.backend = "eager";
  auto compiled = compile(fn, eager_backend);
  compiled(model, idx(), tgt()).backward();
  std::vector<Tensor> got;
  for (auto& [n, p] : model->named_parameters()) got.push_back(p.grad().clone()), p.set_grad(Tensor());
  fn(model, idx(), tgt()).backward();
  size_t k = 0;
  for (auto& [n, p] : model->named_parameters()) corpus::expect_bitwise(got.at(k++), p.grad(), "grad of " + n);
}

TEST(CompileCorpus, ConvNet) {
  manual_seed(4);
  nn::BatchNorm2d bn(6);
  {
    NoGradGuard ng;  // running statistics that are not the defaults, so eval mode uses them visibly
    bn->running_mean.copy_from(test::random_tensor({6}, kFloat32));
    bn->running_var.copy_from(test::random_tensor({6}, kFloat32, nullptr, "contiguous", 0.5, 2));
  }
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions{.in_channels = 3, .out_channels = 6, .kernel_size = 3, .padding = 1}),
                     bn, nn::ReLU(), nn::MaxPool2d(2));
  nn::Linear head(6 * 4 * 4, 5);
  net->eval();
  Fixed x({2, 3, 8, 8});
  auto fn = [](nn::Sequential& m, nn::Linear& h, const Tensor& x) { return h->forward(m->forward(x).flatten(1)); };
  check("conv net", fn, [&](int) { return std::tuple<nn::Sequential&, nn::Linear&, Tensor>{net, head, x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, ModuleCapturedByClosure) {
  manual_seed(5);
  nn::Linear lin(6, 3);
  auto fn = [lin](const Tensor& x) mutable { return lin->forward(x).sigmoid(); };  // parameters lifted
  Fixed x({4, 6});
  check("closure module", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

// ---------------------------------------------------------------- control flow on shapes

TEST(CompileCorpus, BranchOnConcreteSize) {
  // size(0) is a plain int: once dim 0 turns symbolic, reading it specializes the symbol, so
  // each new size is a new graph (3, then 6, then 8).
  auto fn = [](const Tensor& x) { return x.size(0) > 4 ? x.relu() * 2 : x.sigmoid(); };
  Fixed a({3, 2}), b({6, 2}), c({8, 2});
  check("branch on size()", fn, [&](int i) { return std::tuple{i == 0 ? a() : i == 1 ? b() : c()}; }, Expect{1, 0, 3}, 3);
}

TEST(CompileCorpus, BranchOnSymbolicSize) {
  // sym_size(0) > 4 is a guard on the symbol: 6 and 8 share a graph; 3 took the other branch.
  auto fn = [](const Tensor& x) { return x.sym_size(0) > 4 ? x.relu() * 2 : x.sigmoid(); };
  Fixed a({3, 2}), b({6, 2}), c({8, 2});
  check("branch on sym_size()", fn, [&](int i) { return std::tuple{i == 0 ? a() : i == 1 ? b() : c()}; }, Expect{1, 0, 2}, 3);
}

TEST(CompileCorpus, LoopOverShape) {
  auto fn = [](const Tensor& x) {
    Tensor acc = zeros_like(x.select(0, 0));
    for (int64_t i = 0; i < x.size(0); i++) acc = acc * 0.5 + x.select(0, i);
    return acc;
  };
  Fixed x({4, 3});
  check("loop over rows", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, LoopOverTensorList) {
  auto fn = [](const std::vector<Tensor>& ts) {
    Tensor acc = ts.at(0);
    for (size_t i = 1; i < ts.size(); i++) acc = acc + ts[i] * double(i);
    return acc;
  };
  Fixed a({3}), b({3}), c({3});
  // A list's length is guarded: three tensors, then two, is a second graph.
  check("tensor list", fn, [&](int i) { return std::tuple{i == 0 ? std::vector<Tensor>{a(), b(), c()} : std::vector<Tensor>{a(), b()}}; },
        Expect{1, 0, 2});
}

// ---------------------------------------------------------------- graph breaks

TEST(CompileCorpus, BreakOnItem) {
  auto fn = [](const Tensor& x) {
    Tensor y = x.exp();
    if (y.sum().item<double>() > 10) return y * 2;
    return y - 1;
  };
  Fixed small({3}, kFloat32, -1, 0), big({3}, kFloat32, 2, 3);
  // One call: [exp, sum] up to item(), then [mul]. The second call takes the other branch: [sub].
  check("item", fn, [&](int i) { return std::tuple{i == 0 ? big() : small()}; }, Expect{2, 1, 3});
}

TEST(CompileCorpus, BreakOnNonzero) {
  auto fn = [](const Tensor& x) {
    Tensor idx = nonzero(x > 0);
    return idx.to(kFloat32) * 2 + 1;
  };
  Fixed x({6}, kFloat32);
  check("nonzero", fn, [&](int) { return std::tuple{x()}; }, Expect{2, 1});  // [gt] | nonzero | [to, mul, add]
}

TEST(CompileCorpus, BreakOnBooleanMask) {
  auto fn = [](const Tensor& x) { return x.index({x > 0}).exp() * 2; };
  Fixed x({7}, kFloat64);
  check("boolean mask", fn, [&](int) { return std::tuple{x()}; }, Expect{2, 1});  // [gt] | index | [exp, mul]
}

TEST(CompileCorpus, BreakOnPrinting) {
  auto fn = [](const Tensor& x) {
    Tensor y = x * 3;
    std::ostringstream os;
    os << y;  // reads the data
    return y + double(os.str().size() > 0);
  };
  Fixed x({2, 2});
  check("printing", fn, [&](int) { return std::tuple{x()}; }, Expect{2, 1});
}

TEST(CompileCorpus, TwoBreaks) {
  auto fn = [](const Tensor& x) {
    Tensor a = x.abs() + 1;
    double s = a.sum().item<double>();
    Tensor b = a * s;
    double m = b.max().item<double>();
    return b / m;
  };
  Fixed x({5}, kFloat64);
  ExplainReport r = check("two breaks", fn, [&](int) { return std::tuple{x()}; }, Expect{3, 2});
  // Each break names the user's line (the item() calls here), not a line inside kiln.
  ASSERT_EQ(r.breaks.size(), 2u);
  for (const auto& b : r.breaks) EXPECT_NE(b.file.find("compile_corpus_test.cc"), std::string::npos) << b.file;
  EXPECT_NE(r.breaks[0].line, r.breaks[1].line);
}

// ---------------------------------------------------------------- cond / where

TEST(CompileCorpus, Cond) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    return cond((x * y).sum() > 0, [&] { return x.matmul(y.t()); }, [&] { return x.matmul(y.t()).neg().exp(); });
  };
  Fixed x({3, 4}), y({3, 4});
  check("cond", fn, [&](int i) { return std::tuple{x(), i == 0 ? y() : y().neg()}; }, Expect{1, 0});
}

TEST(CompileCorpus, WhereInsteadOfBranch) {
  auto fn = [](const Tensor& x) { return where(x > 0, x.sqrt(), -x).log1p(); };
  Fixed x({10}, kFloat64);
  check("where", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
  check_grads("where", fn, [&](int) { return std::tuple{x().requires_grad_()}; });
}

// ---------------------------------------------------------------- in-place ops

TEST(CompileCorpus, InPlaceOnIntermediates) {
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2;
    y.add_(1);
    y.mul_(x);
    y.sub_(x);
    return y;
  };
  Fixed x({3, 3});
  check("in-place intermediates", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
  check_grads("in-place intermediates", fn, [&](int) { return std::tuple{x().requires_grad_()}; });
}

TEST(CompileCorpus, InPlaceOnInputs) {
  auto fn = [](const Tensor& x, const Tensor& y) {
    Tensor a = x;
    a.mul_(2);
    Tensor b = y;
    b.add_(x);
    return a - b;
  };
  Fixed x({4}), y({4});
  check("in-place inputs", fn, [&](int) { return std::tuple{x(), y()}; }, Expect{1, 0});
}

TEST(CompileCorpus, CopyIntoSlice) {
  auto fn = [](const Tensor& x, const Tensor& v) {
    Tensor out = zeros({6, 3}, x.dtype());
    out.slice(0, 1, 3).copy_from(v);         // index_put through a view
    out.select(0, 5).copy_from(x.sum(0));
    return out * x.mean();
  };
  Fixed x({4, 3}), v({2, 3});
  check("copy into slice", fn, [&](int) { return std::tuple{x(), v()}; }, Expect{1, 0});
}

TEST(CompileCorpus, WriteIntoInputSlice) {
  auto fn = [](const Tensor& x) {
    x.slice(1, 0, 2).mul_(-1);
    Tensor y = x;
    y.masked_fill_(y > 1, 1.0);
    return y.sum(1);
  };
  Fixed x({3, 4});
  check("in-place into an input's slice", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

// ---------------------------------------------------------------- views and layouts

TEST(CompileCorpus, ViewsReshapesTransposes) {
  auto fn = [](const Tensor& x) {
    Tensor a = x.view({2, 3, 4}).transpose(0, 2);  // [4, 3, 2]
    Tensor b = a.reshape({4, 6}).permute({1, 0}).contiguous();
    return b.unsqueeze(0).expand({2, 6, 4}) + a.flatten(0, 1).t().reshape({6, 4}).sum(1, true);
  };
  Fixed x({6, 4});
  check("views", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
  check_grads("views", fn, [&](int) { return std::tuple{x().requires_grad_()}; });
}

TEST(CompileCorpus, NonContiguousInput) {
  auto fn = [](const Tensor& x) { return x.matmul(x.t()).tril() + x.sum(); };
  Tensor base = test::random_tensor({5, 3}, kFloat32, nullptr, "transposed");
  check("transposed input", fn, [&](int) { return std::tuple{base.clone().t().contiguous().t()}; }, Expect{1, 0});
}

// ---------------------------------------------------------------- outputs and arguments

TEST(CompileCorpus, TupleOutputs) {
  auto fn = [](const Tensor& x) {
    auto [vals, idx] = max(x, 1, true);
    return std::tuple{vals, idx, x - vals};
  };
  Fixed x({3, 5});
  check("tuple outputs", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, VectorOutputs) {
  auto fn = [](const Tensor& x) {
    std::vector<Tensor> parts = x.chunk(3, 0);
    for (Tensor& p : parts) p = p.cumsum(0);
    parts.push_back(cat(parts, 1));
    return parts;
  };
  Fixed x({6, 2});
  check("vector outputs", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, ScalarArguments) {
  auto fn = [](const Tensor& x, double alpha, int64_t k, bool flip) {
    Tensor y = x.pow(k) * alpha;
    return flip ? y.flip({0}) : y;
  };
  Fixed x({4});
  // Scalars are guarded: (0.5, 2, false) then (0.5, 3, true) are two graphs; a repeat is cached.
  check("scalars", fn, [&](int i) { return std::tuple{x(), 0.5, int64_t(i == 1 ? 3 : 2), i == 1}; }, Expect{1, 0, 2}, 3);
}

TEST(CompileCorpus, IntegerAndBoolOps) {
  auto fn = [](const Tensor& a, const Tensor& b) {
    Tensor m = (a > b) | (a == 0);
    return std::tuple{(a * b + 7).remainder(5), m, m.sum(), argmax(a.to(kFloat32), 0)};
  };
  Fixed a({8}, kInt64, -5, 5), b({8}, kInt64, -5, 5);
  check("ints and bools", fn, [&](int) { return std::tuple{a(), b()}; }, Expect{1, 0});
}

// ---------------------------------------------------------------- random ops

TEST(CompileCorpus, RandomOpsUnderManualSeed) {
  auto fn = [](const Tensor& x) {
    Tensor noise = randn_like(x);
    Tensor u = rand({x.size(0)}, x.dtype());
    return std::tuple{dropout(x + noise, 0.3, true), u, randint(0, 10, {3})};
  };
  Fixed x({4, 5});
  check("random", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0}, 3);
}

TEST(CompileCorpus, RandomDrawsAdvanceLikeEager) {
  // Two compiled calls in a row after one seed draw what two eager calls draw.
  auto fn = [](const Tensor& x) { return x + rand_like(x); };
  auto f = compile(fn);
  Tensor x = zeros({6});
  manual_seed(9);
  Tensor e1 = fn(x), e2 = fn(x);
  manual_seed(9);
  Tensor c1 = f(x), c2 = f(x);
  corpus::expect_bitwise(c1, e1, "first draw");
  corpus::expect_bitwise(c2, e2, "second draw");
}

// ---------------------------------------------------------------- reductions and nn functions

TEST(CompileCorpus, ReductionsKeepdim) {
  auto fn = [](const Tensor& x) {
    Tensor m = x.mean({1}, true);
    Tensor v = var(x, {1}, 1.0, true);
    return std::tuple{(x - m) / (v + 1e-5).sqrt(), amax(x, {0, 2}, true), x.sum({0}), x.prod(2, false)};
  };
  Fixed x({3, 4, 2}, kFloat64);
  check("reductions", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, SoftmaxLayerNormCrossEntropy) {
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& tgt) {
    Tensor h = layer_norm(x, {x.size(-1)}, w, b);
    return std::tuple{softmax(h, -1), log_softmax(h, 0), cross_entropy(h, tgt)};
  };
  Fixed x({6, 5}), w({5}), b({5}), tgt({6}, kInt64, 0, 4);
  check("softmax/layer_norm/cross_entropy", fn, [&](int) { return std::tuple{x(), w(), b(), tgt()}; }, Expect{1, 0});
  check_grads("softmax/layer_norm/cross_entropy", fn,
              [&](int) { return std::tuple{x().requires_grad_(), w().requires_grad_(), b().requires_grad_(), tgt()}; });
}

TEST(CompileCorpus, AttentionAndActivations) {
  auto fn = [](const Tensor& q, const Tensor& k, const Tensor& v) {
    Tensor a = scaled_dot_product_attention(q, k, v, {}, 0.0, true);
    return gelu(a, "tanh") + silu(a) + a.sigmoid() * a.tanh();
  };
  Fixed q({2, 2, 5, 4}), k({2, 2, 5, 4}), v({2, 2, 5, 4});
  check("attention", fn, [&](int) { return std::tuple{q(), k(), v()}; }, Expect{1, 0});
}

TEST(CompileCorpus, AutocastInside) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor y;
    {
      AutocastGuard ac(kBFloat16);
      y = x.matmul(w).softmax(-1);  // matmul in bfloat16, softmax in float32
    }
    return y * 2;
  };
  Fixed x({4, 8}), w({8, 8});
  check("autocast inside", fn, [&](int) { return std::tuple{x(), w()}; }, Expect{1, 0});
}

TEST(CompileCorpus, AutocastOutside) {
  auto fn = [](const Tensor& x, const Tensor& w) { return x.matmul(w).relu(); };
  Fixed x({4, 8}), w({8, 8});
  AutocastGuard ac(kBFloat16);
  check("autocast outside", fn, [&](int) { return std::tuple{x(), w()}; }, Expect{1, 0});
}

TEST(CompileCorpus, EmbeddingCatStackSplit) {
  auto fn = [](const Tensor& idx, const Tensor& table) {
    Tensor e = embedding(idx, table);  // [3, 4, 6]
    TensorList halves = e.split(3, 2);
    return stack({halves[0], halves[1].flip({2})}, 0).sum(-1) + cat({e, e}, 0).mean();
  };
  Fixed idx({3, 4}, kInt64, 0, 9), table({10, 6});
  check("embedding/split/stack/cat", fn, [&](int) { return std::tuple{idx(), table()}; }, Expect{1, 0});
}

TEST(CompileCorpus, SortTopkClamp) {
  auto fn = [](const Tensor& x) {
    auto [s, i] = sort(x, -1, true);
    auto [tv, ti] = topk(x.clamp(-1.0, 1.0), 2);
    return std::tuple{s, i, tv, ti};
  };
  Fixed x({3, 6});
  check("sort/topk/clamp", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, CreationOps) {
  auto fn = [](const Tensor& x) {
    Tensor r = arange(0, x.size(0)).to(x.dtype());
    return x + r.unsqueeze(1) * full({1, x.size(1)}, 0.25) + ones_like(x) + eye(x.size(0), x.size(1));
  };
  Fixed x({4, 4});
  check("creation", fn, [&](int) { return std::tuple{x()}; }, Expect{1, 0});
}

TEST(CompileCorpus, DynamicShapesKeepResults) {
  // Sizes 4, 7, 9: 4 is traced static; 7 recompiles with dim 0 symbolic; 9 reuses it.
  auto fn = [](const Tensor& x, const Tensor& w) { return x.matmul(w).softmax(-1).reshape(SymShape{x.sym_size(0) * 5}).cumsum(0); };
  Fixed a({4, 3}), b({7, 3}), c({9, 3}), w({3, 5});
  check("dynamic", fn, [&](int i) { return std::tuple{i == 0 ? a() : i == 1 ? b() : c(), w()}; }, Expect{1, 0, 2}, 3);
}

TEST(CompileCorpus, NoGradInside) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor scale;
    {
      NoGradGuard ng;
      scale = x.abs().amax();
    }
    return x.matmul(w) / scale;
  };
  Fixed x({3, 4}), w({4, 2});
  check("no_grad inside", fn, [&](int) { return std::tuple{x(), w()}; }, Expect{1, 0});
  check_grads("no_grad inside", fn, [&](int) { return std::tuple{x(), w().requires_grad_()}; });
}

}  // namespace
}  // namespace kiln
