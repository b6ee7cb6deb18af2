// Goldens of the inductor pipeline: the loop IR of small graphs (tests/golden/inductor/) and the
// generated C++ for a fixed set of graphs (tests/golden/kernels/inductor_*.kir), so a change in
// lowering, fusion or code generation shows as a diff. Graphs given as text run through
// inductor::run_pipeline; the GPT block's forward and backward graphs are built here in C++
// (capture, then AOT's decompose / functionalize / joint / partition) and named in the pipeline.
#include <gtest/gtest.h>
#include <kiln/compile.h>

#include "aot/aot.h"
#include "examples/gpt/model.h"
#include "inductor/inductor.h"
#include "support/golden.h"

namespace kiln::inductor {
namespace {

// The forward and backward graphs of a small GPT block (every input differentiable).
aot::Partition gpt_block_partition() {
  static aot::Partition part = [] {
    std::shared_ptr<const graph::Graph> captured;
    register_backend("inductor_golden_capture", [&](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
      captured = g;
      return [g](const std::vector<Tensor>& in) { return graph::interpret(*g, in); };
    });
    manual_seed(2);
    gpt::Config c{.vocab = 64, .ctx = 16, .d = 32, .heads = 4, .layers = 1};
    gpt::Block block(c);
    CompileOptions o;
    o.backend = "inductor_golden_capture";
    auto f = compile([](gpt::Block& b, const Tensor& x) { return b->forward(x); }, o);
    NoGradGuard no_grad;  // (capture only: the graph is the same)
    f(block, randn({2, 8, 32}));
    graph::Graph functional = aot::functionalize(aot::decompose(*captured));
    std::vector<bool> needs;
    for (const graph::Value* v : functional.inputs()) needs.push_back(is_floating(v->spec.dtype));
    return aot::partition(aot::build_joint(functional, needs));
  }();
  return part;
}

std::string run(const std::string& pipeline, const std::string& input) {
  for (const char* which : {"gpt_block_forward", "gpt_block_backward"}) {
    const std::string name = which;
    const size_t at = pipeline.find(name);
    if (at == std::string::npos) continue;
    const std::string stage = pipeline.substr(pipeline.rfind('|') + 1);
    const aot::Partition p = gpt_block_partition();
    return run_stage(stage.substr(stage.find_first_not_of(' ')), name == "gpt_block_forward" ? p.forward : p.backward);
  }
  return run_pipeline(pipeline, input);
}

TEST(InductorGolden, LoopIR) {
  EXPECT_GE(test::check_goldens("inductor", run).size(), 4u);
}

TEST(InductorGolden, GeneratedKernelSources) {
  int n = 0;
  for (const auto& path : test::golden_files("kernels")) {
    const test::Golden g = test::read_golden(path);
    if (g.pipeline.rfind("inductor:", 0) != 0) continue;  // another IR's golden
    test::check_golden(g, run);
    ++n;
  }
  EXPECT_GE(n, 5);
}

// The loop IR's text parses back (loop_ir_parse.cc): for the loop IR of every golden graph and of
// the GPT block's forward and backward graphs, printing the parsed program gives the same text,
// and the parsed program generates the same C as the lowered one (the parse kept what printing
// shows: dtypes, indices, constants, which values are shared).
TEST(InductorGolden, LoopIRRoundTrip) {
  int n = 0;
  for (const char* folder : {"inductor", "kernels"}) {
    for (const auto& path : test::golden_files(folder)) {
      const test::Golden g = test::read_golden(path);
      std::string stages = g.pipeline;
      if (stages.rfind("inductor:", 0) == 0) stages = stages.substr(9);
      else if (std::string(folder) == "kernels") continue;  // another IR's golden
      if (stages.find("loop:") != std::string::npos) continue;  // its input is loop IR already
      const size_t bar = stages.rfind('|');
      const std::string graph_passes = bar == std::string::npos ? "" : stages.substr(0, bar + 1);
      SCOPED_TRACE(path.string());
      const std::string lowered = run(graph_passes + " lower", g.input);
      const Program parsed = parse(lowered);
      EXPECT_EQ(print(parsed), lowered);
      EXPECT_NO_THROW(verify(parsed));
      EXPECT_EQ(run_loop_pipeline("c", lowered), run(graph_passes + " c", g.input));
      ++n;
    }
  }
  EXPECT_GE(n, 10);
}

TEST(InductorGolden, PipelineErrors) {
  const std::string g = "graph(%x: f32[2]):\n  %0: f32[2] = exp(%x)\n  return (%0)\n";
  EXPECT_THROW(run_pipeline("nonsense", g), Error);
  EXPECT_NE(run_pipeline("lower", g).find("exp"), std::string::npos);
}

}  // namespace
}  // namespace kiln::inductor
