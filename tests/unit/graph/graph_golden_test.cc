// Golden pass tests: each tests/golden/graph/*.kir names a pipeline, holds the input IR and the IR
// the pipeline must print (support/golden.h; KILN_UPDATE_GOLDENS=1 rewrites them). The pass
// manager verifies the graph after every pass (kiln_tests turns verification on), and the
// expected text must round-trip through the parser unchanged.
#include <gtest/gtest.h>

#include "graph/graph.h"
#include "graph/pass_manager.h"
#include "support/golden.h"
#include "support/test_util.h"

namespace kiln::graph {
namespace {

TEST(GraphGolden, EveryFilePasses) {
  const auto goldens = test::check_goldens("graph", run_pipeline);
  EXPECT_GE(goldens.size(), 12u);
  for (const test::Golden& g : goldens) {
    SCOPED_TRACE(g.path.filename().string());
    try {
      EXPECT_EQ(print(parse(g.expected)), g.expected);
    } catch (const Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

bool has_random_op(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n->kind == NodeKind::Call && (ops::op_info(n->op).flags & ops::RANDOM)) return true;
  return false;
}

// Random data for a graph input; nullopt when its sizes are symbolic.
std::optional<Tensor> random_input(const Value* v) {
  Shape sizes;
  for (const SymInt& s : v->spec.sizes) {
    if (s.is_symbolic()) return std::nullopt;
    sizes.push_back(s.hint());
  }
  return test::random_tensor(sizes, v->spec.dtype);
}

// The passes must not change what a graph computes: run the input and the optimized graph on
// the same random inputs (golden files without random ops and with concrete sizes).
TEST(GraphGolden, PassesPreserveResults) {
  int checked = 0;
  for (const auto& path : test::golden_files("graph")) {
    SCOPED_TRACE(path.filename().string());
    const test::Golden gold = test::read_golden(path);
    Graph before = parse(gold.input), after = parse(gold.input);
    PassManager::parse(gold.pipeline).run(after);
    if (has_random_op(before)) continue;
    std::vector<Tensor> a, b;
    bool concrete = true;
    for (const Value* v : before.inputs()) {
      auto t = random_input(v);
      if (!t) concrete = false;
      else a.push_back(*t), b.push_back(t->clone());  // clones: copy_ writes its input
    }
    if (!concrete) continue;
    const std::vector<Tensor> ra = interpret(before, a), rb = interpret(after, b);
    ASSERT_EQ(ra.size(), rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
      ASSERT_EQ(ra[i].dtype(), rb[i].dtype());
      ASSERT_EQ(ra[i].sizes(), rb[i].sizes());
      EXPECT_EQ(ra[i].to(kFloat64).to_vector<double>(), rb[i].to(kFloat64).to_vector<double>()) << "output " << i;
    }
    for (size_t i = 0; i < a.size(); ++i)  // and the same inputs afterwards (mutations kept)
      EXPECT_EQ(a[i].to(kFloat64).to_vector<double>(), b[i].to(kFloat64).to_vector<double>());
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

}  // namespace
}  // namespace kiln::graph
