// Passes by name, for tools (kiln-opt) and tests.
#include <algorithm>
#include <utility>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {
const std::pair<const char*, void (*)(Graph&)> kPasses[] = {{"dce", dce}, {"cse", cse}, {"fold", fold}};
}

std::vector<std::string> pass_names() {
  std::vector<std::string> r;
  for (auto& p : kPasses) r.push_back(p.first);
  return r;
}

void run_passes(Graph& g, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    auto* it = std::find_if(std::begin(kPasses), std::end(kPasses), [&](auto& p) { return name == p.first; });
    KILN_CHECK_HINT(it != std::end(kPasses), "available passes: dce, cse, fold", "unknown graph pass '", name, "'");
    it->second(g);
  }
}

}  // namespace kiln::graph
