// Golden pass tests: each tests/golden/graph/*.kir holds "// passes: a,b", the input IR,
// "// expected:" and the IR the passes must print. Both graphs must verify, and the expected
// text must round-trip through the parser unchanged.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/graph.h"
#include "graph/passes/passes.h"

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

}  // namespace
}  // namespace kiln::graph
