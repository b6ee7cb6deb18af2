// Golden capture tests: tests/golden/capture/<case>.kir ("// pipeline: capture <case>") holds the
// graphs compile() captured from a corpus function (graph::print of each graph explain()
// reports, in order, as "// graph N" sections); the cases are the table below. A change in what
// capture records shows up here as a diff. KILN_UPDATE_GOLDENS=1 rewrites the files (read every
// change before committing it: the file must say what the function does).
#include <kiln/autocast.h>

#include <functional>
#include <map>
#include <set>

#include "examples/gpt/model.h"
#include "graph/graph.h"
#include "support/compile_corpus.h"
#include "support/golden.h"

namespace kiln {
namespace {

std::string joined(const ExplainReport& r) {
  std::string s;
  for (size_t i = 0; i < r.graphs.size(); i++) s += "// graph " + std::to_string(i) + "\n" + r.graphs[i];
  return s;
}

Tensor ones_f(const Shape& s) { return ones(s); }

// Each case: a corpus function and what capture reports for it.
const std::map<std::string, std::function<ExplainReport()>>& cases() {
  static const std::map<std::string, std::function<ExplainReport()>> c = {
      {"mlp",
       [] {
         auto fn = [](const Tensor& x, const Tensor& w1, const Tensor& b1, const Tensor& w2) {
           return (x.matmul(w1) + b1).relu().matmul(w2).softmax(-1);
         };
         return explain(fn, ones_f({4, 8}), ones_f({8, 16}), ones_f({16}), ones_f({16, 3}));
       }},
      {"linear_module",  // lifts the parameters
       [] {
         manual_seed(0);
         nn::Linear lin(3, 2);
         auto fn = [](nn::Linear& m, const Tensor& x) { return m->forward(x).tanh(); };
         return explain(fn, lin, ones_f({5, 3}));
       }},
      {"gpt_block",
       [] {
         manual_seed(0);
         gpt::Block block(gpt::Config{.vocab = 16, .ctx = 8, .d = 8, .heads = 2, .layers = 1});
         auto fn = [](gpt::Block& b, const Tensor& x) { return b->forward(x); };
         return explain(fn, block, ones_f({2, 4, 8}));
       }},
      {"conv_net_eval",
       [] {
         manual_seed(0);
         nn::Sequential net(
             nn::Conv2d(nn::Conv2dOptions{.in_channels = 1, .out_channels = 2, .kernel_size = 3, .padding = 1}),
             nn::BatchNorm2d(2), nn::ReLU(), nn::MaxPool2d(2));
         net->eval();
         auto fn = [](nn::Sequential& m, const Tensor& x) { return m->forward(x).flatten(1); };
         return explain(fn, net, ones_f({1, 1, 4, 4}));
       }},
      {"cond",
       [] {
         auto fn = [](const Tensor& x) { return cond(x.sum() > 0, [&] { return x * 2; }, [&] { return x.neg(); }); };
         return explain(fn, ones_f({3}));
       }},
      {"inplace_copy_slice",
       [] {
         auto fn = [](const Tensor& x) {
           Tensor y = x * 2;
           y.add_(1);
           Tensor out = zeros({4, 2});
           out.slice(0, 1, 3).copy_from(y);
           return out;
         };
         return explain(fn, ones_f({2, 2}));
       }},
      {"dynamic_sizes",
       [] {
         auto fn = [](const Tensor& x) { return x.transpose(0, 1).reshape(SymShape{SymInt(-1)}).cumsum(0) * 0.5; };
         CompileOptions o;
         o.dynamic = true;
         auto f = compile(fn, o);
         f(ones_f({3, 5}));
         return f.report();
       }},
      {"break_item_segments",
       [] {
         auto fn = [](const Tensor& x) {
           Tensor y = x.exp();
           double s = y.sum().item<double>();
           return y / s;
         };
         return explain(fn, ones_f({3}));
       }},
      {"autocast_inside",
       [] {
         auto fn = [](const Tensor& x, const Tensor& w) {
           AutocastGuard ac(kBFloat16);
           return x.matmul(w).log_softmax(-1);
         };
         return explain(fn, ones_f({2, 3}), ones_f({3, 4}));
       }},
  };
  return c;
}

// "capture <case>": the graphs of the case, each pinned graph checked to be valid IR that
// round-trips through the parser.
std::string run_capture(const std::string& pipeline, const std::string& input) {
  EXPECT_EQ(input, "") << "a capture golden's input is its case in compile_golden_test.cc";
  const std::string prefix = "capture ";
  KILN_CHECK(pipeline.rfind(prefix, 0) == 0, "a capture golden's pipeline is 'capture <case>'");
  auto it = cases().find(pipeline.substr(prefix.size()));
  KILN_CHECK(it != cases().end(), "no capture case '", pipeline.substr(prefix.size()), "'");
  const ExplainReport r = it->second();
  for (const std::string& g : r.graphs) {
    graph::Graph parsed = graph::parse(g);
    graph::verify(parsed);
    EXPECT_EQ(graph::print(parsed), g);
  }
  return joined(r);
}

TEST(CompileGolden, EveryCase) {
  std::set<std::string> files;
  for (const test::Golden& g : test::check_goldens("capture", run_capture)) files.insert(g.path.stem().string());
  for (const auto& [name, fn] : cases()) EXPECT_TRUE(files.count(name)) << "tests/golden/capture/" << name << ".kir is missing";
}

}  // namespace
}  // namespace kiln
