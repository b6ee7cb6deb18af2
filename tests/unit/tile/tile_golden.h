// Golden files for the tile IR, in the one golden format of kiln's IRs (docs/graph-ir.md,
// "Golden files"): a `// pipeline: <pipeline>` line, the input text, `// expected:` and the
// output the pipeline must print; KILN_UPDATE_GOLDENS=1 rewrites the expected sections.
//
// This is a small stand-in with the API of tests/unit/support/golden.h (the graph IR's runner,
// on its way to main): once that is merged, tile's tests include it instead and this file goes.
#pragma once
#include <gtest/gtest.h>

#include <kiln/error.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace kiln::tile::test {

struct Golden {
  std::filesystem::path path;
  std::string pipeline, input, expected;
  bool has_expected = false;
};
using GoldenRunner = std::function<std::string(const std::string& pipeline, const std::string& input)>;

inline std::vector<std::filesystem::path> golden_files(const std::string& folder) {
  const std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "tests/golden" / folder;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".kir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

inline bool updating_goldens() {
  const char* env = std::getenv("KILN_UPDATE_GOLDENS");
  return env && *env && std::string(env) != "0";
}

inline Golden read_golden(const std::filesystem::path& path) {
  static const std::string header = "// pipeline:", mark = "// expected:\n";
  Golden g;
  g.path = path;
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  if (text.rfind(header, 0) != 0) {
    ADD_FAILURE() << path << " must start with '" << header << " <pipeline>'";
    return g;
  }
  const size_t eol = std::min(text.find('\n'), text.size());
  g.pipeline = text.substr(header.size(), eol - header.size());
  g.pipeline.erase(0, g.pipeline.find_first_not_of(' '));
  const size_t body = std::min(eol + 1, text.size());
  const size_t m = text.find(mark, body);
  g.has_expected = m != std::string::npos;
  g.input = text.substr(body, (g.has_expected ? m : text.size()) - body);
  if (g.has_expected) g.expected = text.substr(m + mark.size());
  return g;
}

inline std::string check_golden(const Golden& g, const GoldenRunner& run) {
  SCOPED_TRACE(g.path.filename().string() + " (pipeline: " + g.pipeline + ")");
  if (g.pipeline.empty()) return "";
  std::string got;
  try {
    got = run(g.pipeline, g.input);
  } catch (const Error& e) {
    ADD_FAILURE() << e.what();
    return "";
  }
  if (updating_goldens()) {
    if (!g.has_expected || got != g.expected)
      std::ofstream(g.path) << "// pipeline: " << g.pipeline << "\n" << g.input << "// expected:\n" << got;
    return got;
  }
  EXPECT_TRUE(g.has_expected) << g.path << " has no '// expected:' section (KILN_UPDATE_GOLDENS=1 writes it)";
  EXPECT_EQ(got, g.expected) << "the output of " << g.path.filename() << " changed";
  return got;
}

inline std::vector<Golden> check_goldens(const std::string& folder, const GoldenRunner& run) {
  std::vector<Golden> goldens;
  for (const auto& p : golden_files(folder)) {
    goldens.push_back(read_golden(p));
    check_golden(goldens.back(), run);
  }
  return goldens;
}

}  // namespace kiln::tile::test
