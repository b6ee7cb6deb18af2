// Golden pass tests: each tests/golden/graph/*.kir holds "// passes: a,b", the input IR,
// "// expected:" and the IR the passes must print. Both graphs must verify, and the expected
// text must round-trip through the parser unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "support/test_util.h"

namespace kiln::graph {
namespace {

struct Golden {
  std::vector<std::string> passes;
  std::string input, expected;
};

Golden read_golden(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  Golden g;
  const std::string head = "// passes:";
  EXPECT_EQ(text.rfind(head, 0), 0u) << p << " must start with " << head;
  const size_t eol = text.find('\n');
  std::stringstream names(text.substr(head.size(), eol - head.size()));
  for (std::string n; std::getline(names, n, ',');) {
    n.erase(0, n.find_first_not_of(' '));
    n.erase(n.find_last_not_of(' ') + 1);
    if (!n.empty()) g.passes.push_back(n);
  }
  const std::string mark = "// expected:\n";
  const size_t m = text.find(mark);
  EXPECT_NE(m, std::string::npos) << p << " has no '// expected:' line";
  g.input = text.substr(eol + 1, m - eol - 1);
  g.expected = text.substr(m + mark.size());
  return g;
}

TEST(GraphGolden, EveryFilePasses) {
  const std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "tests/golden/graph";
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".kir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  EXPECT_GE(files.size(), 12u);
  for (const auto& p : files) {
    SCOPED_TRACE(p.filename().string());
    const Golden gold = read_golden(p);
    try {
      Graph g = parse(gold.input);
      verify(g);
      run_passes(g, gold.passes);
      verify(g);
      EXPECT_EQ(print(g), gold.expected);
      EXPECT_EQ(print(parse(gold.expected)), gold.expected);
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
  const std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "tests/golden/graph";
  int checked = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".kir") continue;
    SCOPED_TRACE(e.path().filename().string());
    const Golden gold = read_golden(e.path());
    Graph before = parse(gold.input), after = parse(gold.input);
    run_passes(after, gold.passes);
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
