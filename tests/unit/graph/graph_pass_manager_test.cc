// The pass manager: pipelines by name, the verifier after every pass catching a broken pass,
// KILN_LOGS=passes, modules split by partition; and hashed CSE under forced collisions.
#include <gtest/gtest.h>

#include <kiln/log.h>

#include "graph/pass_manager.h"
#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

using ops::OpId;

const char* kDuplicates =
    "graph(%x: f32[3], %y: f32[3]):\n"
    "  %0: f32[3] = exp(%x)\n"
    "  %1: f32[3] = exp(%y)\n"
    "  %2: f32[3] = exp(%x)\n"
    "  %3: f32[] = constant(2.0)\n"
    "  %4: f32[] = constant(-0.0)\n"
    "  %5: f32[] = constant(0.0)\n"
    "  %6: f32[] = constant(2.0)\n"
    "  %7: f32[3] = mul(%0, %3)\n"
    "  %8: f32[3] = mul(%2, %6)\n"
    "  %9: f32[3] = mul(%1, %4)\n"
    "  %10: f32[3] = mul(%1, %5)\n"
    "  %11: f32[3] = leaky_relu(%x, negative_slope=0.5)\n"
    "  %12: f32[3] = leaky_relu(%x, negative_slope=0.25)\n"
    "  return (%7, %8, %9, %10, %11, %12)\n";

// What cse must make of kDuplicates: exp(x) and 2.0 merged (so the two products are one);
// exp(y), -0.0 vs 0.0 and the two slopes kept apart.
const char* kMerged =
    "graph(%x: f32[3], %y: f32[3]):\n"
    "  %0: f32[3] = exp(%x)\n"
    "  %1: f32[3] = exp(%y)\n"
    "  %2: f32[] = constant(2.0)\n"
    "  %3: f32[] = constant(-0.0)\n"
    "  %4: f32[] = constant(0.0)\n"
    "  %5: f32[3] = mul(%0, %2)\n"
    "  %6: f32[3] = mul(%1, %3)\n"
    "  %7: f32[3] = mul(%1, %4)\n"
    "  %8: f32[3] = leaky_relu(%x, negative_slope=0.5)\n"
    "  %9: f32[3] = leaky_relu(%x, negative_slope=0.25)\n"
    "  return (%5, %5, %6, %7, %8, %9)\n";

TEST(GraphCse, HashedMatchesByExactComparison) {
  Graph g = parse(kDuplicates);
  cse(g);
  dce(g);
  verify(g);
  EXPECT_EQ(print(g), kMerged);
}

// Every node hashes alike: each lookup sees every earlier candidate, and only the exact
// comparison tells them apart. The result must be the same.
TEST(GraphCse, CollisionsDoNotMerge) {
  Graph g = parse(kDuplicates);
  cse(g, [](const Node&) -> uint64_t { return 42; });
  dce(g);
  verify(g);
  EXPECT_EQ(print(g), kMerged);
}

TEST(GraphCse, HashFollowsEquality) {
  Graph g = parse(kDuplicates);
  std::vector<Node*> n(g.nodes().begin(), g.nodes().end());
  EXPECT_EQ(cse_hash(*n[0]), cse_hash(*n[2]));   // exp(x) twice
  EXPECT_NE(cse_hash(*n[0]), cse_hash(*n[1]));   // exp(x), exp(y)
  EXPECT_EQ(cse_hash(*n[3]), cse_hash(*n[6]));   // constant 2.0 twice
  EXPECT_NE(cse_hash(*n[4]), cse_hash(*n[5]));   // -0.0, 0.0
  EXPECT_NE(cse_hash(*n[11]), cse_hash(*n[12]));  // slopes 0.5, 0.25
}

TEST(GraphCse, EmptyConstantsMerge) {
  Graph g = parse("graph(%x: f32[0]):\n  %0: f32[0] = constant([])\n  %1: f32[0] = constant([])\n"
                  "  %2: f32[0] = add(%x, %0)\n  %3: f32[0] = add(%x, %1)\n  return (%2, %3)\n");
  cse(g);
  verify(g);
  EXPECT_EQ(print(g), "graph(%x: f32[0]):\n  %0: f32[0] = constant([])\n  %1: f32[0] = add(%x, %0)\n  return (%1, %1)\n");
}

// A pass that gives a node a wrong output type: the verifier after it names it.
void break_specs(Graph& g) {
  for (Node* n : g.nodes())
    if (n->kind == NodeKind::Call) n->outputs[0]->spec.dtype = kFloat64;
}
[[maybe_unused]] const bool registered = [] {
  register_pass({"test_break_specs", "(test) corrupts output types", break_specs, nullptr});
  return true;
}();

TEST(GraphPassManager, VerifierCatchesABrokenPass) {
  ASSERT_TRUE(verify_passes());  // kiln_tests turns it on (support/test_env.cc)
  Graph g = parse(kDuplicates);
  try {
    PassManager::parse("cse | test_break_specs | dce").run(g);
    FAIL() << "the broken pass went unnoticed";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("pass 'test_break_specs' left an invalid graph"), std::string::npos) << m;
    EXPECT_NE(m.find("output 0 has type f64[3]"), std::string::npos) << m;
  }
  Graph h = parse(kDuplicates);
  PassManager pm = PassManager::parse("test_break_specs");
  pm.verify = false;  // without the verifier nothing notices
  EXPECT_NO_THROW(pm.run(h));
  EXPECT_THROW(verify(h), Error);
}

TEST(GraphPassManager, PipelinesByName) {
  Graph g = parse(kDuplicates), h = parse(kDuplicates);
  PassManager::parse(" cse|dce ").run(g);
  run_passes(h, {"cse", "dce"});
  EXPECT_EQ(print(g), kMerged);
  EXPECT_EQ(print(h), kMerged);
  try {
    PassManager::parse("cse | nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown graph pass 'nope'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("partition"), std::string::npos) << e.what();  // lists the aot passes too
  }
  EXPECT_THROW(run_pipeline("--nope cse", kDuplicates), Error);
  EXPECT_EQ(run_pipeline("", kDuplicates), print(parse(kDuplicates)));
}

TEST(GraphPassManager, LogsTheIrAfterEachPass) {
  set_logs("passes");
  testing::internal::CaptureStderr();
  Graph g = parse(
      "graph(%x: f32[3]):\n  %0: f32[3] = exp(%x)  # softmax @ m.py:4\n  %1: f32[3] = exp(%x)\n  return (%1)\n");
  PassManager::parse("cse | dce").run(g);
  const std::string err = testing::internal::GetCapturedStderr();
  set_logs("");
  EXPECT_NE(err.find("[kiln:passes] after cse (2 -> 1 nodes"), std::string::npos) << err;
  EXPECT_NE(err.find("[kiln:passes] after dce (1 -> 1 nodes"), std::string::npos) << err;
  EXPECT_NE(err.find("  %0: f32[3] = exp(%x)  # softmax @ m.py:4\n  return (%0)\n"), std::string::npos) << err;
  EXPECT_LT(err.find("after cse"), err.find("after dce"));
  testing::internal::CaptureStderr();
  PassManager::parse("cse").run(g);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");  // off again
}

TEST(GraphPassManager, PartitionSplitsTheModule) {
  const char* text =
      "graph(%x: f32[4], %w: f32[4]):\n"
      "  %0: f32[4] = mul(%x, %w)\n"
      "  %1: f32[] = sum(%0)\n"
      "  return (%1)\n";
  Module m(parse(text));
  PassManager::parse("joint | partition").run(m);
  ASSERT_EQ(m.graphs.size(), 2u);
  EXPECT_EQ(m.graphs[0].name, "forward");
  EXPECT_EQ(m.graphs[1].name, "backward");
  EXPECT_EQ(m.graphs[1].graph->outputs().size(), 2u);  // the gradients of x and w
  const std::string s = print(m);
  EXPECT_EQ(s.rfind("// forward\ngraph(", 0), 0u) << s;
  EXPECT_NE(s.find("// backward\ngraph("), std::string::npos) << s;
  // One graph in, two out: the Graph overload refuses.
  Graph g = parse(text);
  EXPECT_THROW(PassManager::parse("joint | partition").run(g), Error);
  // partition needs joint's metadata.
  Graph h = parse(text);
  try {
    PassManager::parse("partition").run(h);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run joint before it"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::graph
