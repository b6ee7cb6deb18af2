// The pass table of the pass manager (graph/pass_manager.h): the graph passes, and whatever
// upper layers register (src/aot/passes.cc). Registration happens in static initializers, so
// the table is built on first use.
#include <memory>

#include "graph/pass_manager.h"
#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

std::vector<std::unique_ptr<Pass>>& table() {
  static std::vector<std::unique_ptr<Pass>> t = [] {
    std::vector<std::unique_ptr<Pass>> r;
    auto graph_pass = [&](const char* name, const char* summary, void (*fn)(Graph&)) {
      r.push_back(std::make_unique<Pass>(Pass{name, summary, fn, nullptr}));
    };
    graph_pass("dce", "removes nodes whose outputs are unused", dce);
    graph_pass("cse", "merges nodes with the same op and arguments, and equal constants", cse);
    graph_pass("fold", "evaluates small all-constant nodes; drops x*1, x+0, x-0, x/1", fold);
    return r;
  }();
  return t;
}

}  // namespace

void register_pass(Pass pass) {
  KILN_CHECK(!pass.name.empty() && (pass.run != nullptr) != (pass.run_module != nullptr),
             "internal: pass '", pass.name, "' needs a name and exactly one of run / run_module");
  for (auto& p : table())
    if (p->name == pass.name) {
      *p = std::move(pass);
      return;
    }
  table().push_back(std::make_unique<Pass>(std::move(pass)));
}

const Pass* find_pass(const std::string& name) {
  for (const auto& p : table())
    if (p->name == name) return p.get();
  return nullptr;
}

std::vector<const Pass*> registered_passes() {
  std::vector<const Pass*> r;
  for (const auto& p : table()) r.push_back(p.get());
  return r;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> r;
  for (const Pass* p : registered_passes()) r.push_back(p->name);
  return r;
}

void run_passes(Graph& g, const std::vector<std::string>& names) { PassManager(names).run(g); }

}  // namespace kiln::graph
