// Golden capture tests: tests/golden/capture/<name>.kir holds the graphs compile() captured from
// a corpus function (graph::print of each graph explain() reports, in order). A change in what
// capture records shows up here as a diff. KILN_UPDATE_GOLDEN=1 rewrites the files (read every
// change before committing it: the file must say what the function does).
#include <kiln/autocast.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "examples/gpt/model.h"
#include "support/compile_corpus.h"
#include "graph/graph.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string joined(const ExplainReport& r) {
  std::string s;
  for (size_t i = 0; i < r.graphs.size(); i++) s += "// graph " + std::to_string(i) + "\n" + r.graphs[i];
  return s;
}

void check_golden(const std::string& name, const ExplainReport& r) {
  SCOPED_TRACE(name);
  const fs::path p = fs::path(KILN_SOURCE_DIR) / "tests/golden/capture" / (name + ".kir");
  const std::string got = joined(r);
  if (std::getenv("KILN_UPDATE_GOLDEN")) {
    std::ofstream(p) << got;
    return;
  }
  std::ifstream f(p);
  ASSERT_TRUE(f.good()) << p << " is missing (KILN_UPDATE_GOLDEN=1 writes it)";
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(got, ss.str()) << "the captured graphs changed";
  // Each pinned graph is valid IR that round-trips through the parser.
  for (const std::string& g : r.graphs) {
    graph::Graph parsed = graph::parse(g);
    graph::verify(parsed);
    EXPECT_EQ(graph::print(parsed), g);
  }
}

Tensor ones_f(const Shape& s) { return ones(s); }

TEST(CompileGolden, Mlp) {
  auto fn = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2) {
    return (x.matmul(w1) + b1).relu().matmul(w2).softmax(-1);
  };
  check_golden("mlp", explain(fn, ones_f({4, 8}), ones_f({8, 16}), ones_f({16}), ones_f({16, 3})));
}

TEST(CompileGolden, LinearModuleLiftsParameters) {
  manual_seed(0);
  nn::Linear lin(3, 2);
  auto fn = [](nn::Linear& m, const Tensor& x) { return m->forward(x).tanh(); };
  check_golden("linear_module", explain(fn, lin, ones_f({5, 3})));
}

TEST(CompileGolden, GptBlock) {
  manual_seed(0);
  gpt::Block block(gpt::Config{.vocab = 16, .ctx = 8, .d = 8, .heads = 2, .layers = 1});
  auto fn = [](gpt::Block& b, const Tensor& x) { return b->forward(x); };
  check_golden("gpt_block", explain(fn, block, ones_f({2, 4, 8})));
}

TEST(CompileGolden, ConvNetEval) {
  manual_seed(0);
  nn::Sequential net(nn::Conv2d(nn::Conv2dOptions{.in_channels = 1, .out_channels = 2, .kernel_size = 3, .padding = 1}),
                     nn::BatchNorm2d(2), nn::ReLU(), nn::MaxPool2d(2));
  net->eval();
  auto fn = [](nn::Sequential& m, const Tensor& x) { return m->forward(x).flatten(1); };
  check_golden("conv_net_eval", explain(fn, net, ones_f({1, 1, 4, 4})));
}

TEST(CompileGolden, Cond) {
  auto fn = [](const Tensor& x) { return cond(x.sum() > 0, [&] { return x * 2; }, [&] { return x.neg(); }); };
  check_golden("cond", explain(fn, ones_f({3})));
}

TEST(CompileGolden, InPlaceAndCopyIntoSlice) {
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2;
    y.add_(1);
    Tensor out = zeros({4, 2});
    out.slice(0, 1, 3).copy_from(y);
    return out;
  };
  check_golden("inplace_copy_slice", explain(fn, ones_f({2, 2})));
}

TEST(CompileGolden, DynamicSizes) {
  auto fn = [](const Tensor& x) { return x.transpose(0, 1).reshape(SymShape{SymInt(-1)}).cumsum(0) * 0.5; };
  CompileOptions o;
  o.dynamic = true;
  auto f = compile(fn, o);
  f(ones_f({3, 5}));
  check_golden("dynamic_sizes", f.report());
}

TEST(CompileGolden, BreakOnItemSegments) {
  auto fn = [](const Tensor& x) {
    Tensor y = x.exp();
    double s = y.sum().item<double>();
    return y / s;
  };
  check_golden("break_item_segments", explain(fn, ones_f({3})));
}

TEST(CompileGolden, AutocastInside) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    AutocastGuard ac(kBFloat16);
    return x.matmul(w).log_softmax(-1);
  };
  check_golden("autocast_inside", explain(fn, ones_f({2, 3}), ones_f({3, 4})));
}

}  // namespace
}  // namespace kiln
