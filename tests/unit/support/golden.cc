// The golden runner (golden.h).
#include "support/golden.h"

#include <kiln/error.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kiln::test {
namespace {

const std::string kHeader = "// pipeline:";
const std::string kExpected = "// expected:\n";

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<std::filesystem::path> golden_files(const std::string& folder) {
  const std::filesystem::path dir = std::filesystem::path(KILN_SOURCE_DIR) / "tests/golden" / folder;
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".kir") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

bool updating_goldens() {
  const char* env = std::getenv("KILN_UPDATE_GOLDENS");
  return env && *env && std::string(env) != "0";
}

Golden read_golden(const std::filesystem::path& path) {
  Golden g;
  g.path = path;
  const std::string text = read_text(path);
  if (text.rfind(kHeader, 0) != 0) {
    ADD_FAILURE() << path << " must start with '" << kHeader << " <pipeline>'";
    return g;
  }
  const size_t eol = std::min(text.find('\n'), text.size());
  g.pipeline = text.substr(kHeader.size(), eol - kHeader.size());
  g.pipeline.erase(0, g.pipeline.find_first_not_of(' '));
  const size_t body = std::min(eol + 1, text.size());
  const size_t m = text.find(kExpected, body);
  g.has_expected = m != std::string::npos;
  g.input = text.substr(body, (g.has_expected ? m : text.size()) - body);
  if (g.has_expected) g.expected = text.substr(m + kExpected.size());
  return g;
}

std::string check_golden(const Golden& g, const GoldenRunner& run) {
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
    if (!g.has_expected || got != g.expected) {
      std::ofstream(g.path) << kHeader << " " << g.pipeline << "\n" << g.input << kExpected << got;
    }
    return got;
  }
  EXPECT_TRUE(g.has_expected) << g.path << " has no '// expected:' section (KILN_UPDATE_GOLDENS=1 writes it)";
  EXPECT_EQ(got, g.expected) << "the output of " << g.path.filename() << " changed";
  return got;
}

std::vector<Golden> check_goldens(const std::string& folder, const GoldenRunner& run) {
  std::vector<Golden> goldens;
  for (const auto& p : golden_files(folder)) {
    goldens.push_back(read_golden(p));
    check_golden(goldens.back(), run);
  }
  return goldens;
}

}  // namespace kiln::test
