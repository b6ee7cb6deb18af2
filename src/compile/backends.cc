// The backend registry: "eager" runs a captured graph with the graph interpreter (the eager
// kernels), "aot_eager" through AOT autograd (src/aot/), "inductor" through AOT autograd with
// generated kernels (src/inductor/), and programs add their own
// (register_backend). Capture compiles its graphs with the backends found here, through the
// lookup installed below (capture/hooks.h).
#include <kiln/compile.h>

#include <map>
#include <mutex>

#include "aot/aot.h"
#include "capture/hooks.h"
#include "graph/graph.h"
#include "inductor/inductor.h"

namespace kiln {  // (not kiln::compile: that is the name of compile())
namespace {

std::mutex g_backends_mutex;
std::map<std::string, Backend>& backends() {
  static std::map<std::string, Backend> b = {
      {"eager", [](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
         return [g](const std::vector<Tensor>& inputs) { return graph::interpret(*g, inputs); };
       }},
      // The partition's memory budget is read from aot::set_activation_memory_budget per plan.
      {"aot_eager", [](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
         return aot::compile_aot(std::move(g), aot::AotOptions{.partition = {}, .compile_graph = {}, .use_global_budget = true});
       }},
      // AOT autograd with every graph it runs compiled by inductor (docs/compiler.md).
      {"inductor", [](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
         return aot::compile_aot(std::move(g), aot::AotOptions{
                                                   .partition = {}, .compile_graph = &inductor::compile_graph, .use_global_budget = true});
       }}};
  return b;
}

Backend find_backend(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_backends_mutex);
  auto it = backends().find(name);
  if (it == backends().end()) {
    std::string names;
    for (auto& [n, _] : backends()) names += (names.empty() ? "" : ", ") + n;
    detail::fail("unknown compile backend '" + name + "'", "registered backends: " + names);
  }
  return it->second;
}

[[maybe_unused]] const bool installed = (capture::set_backend_lookup(&find_backend), true);

}  // namespace

void register_backend(const std::string& name, Backend backend) {
  KILN_CHECK(!name.empty() && backend, "register_backend: a backend needs a name and a function");
  std::lock_guard<std::mutex> lock(g_backends_mutex);
  backends()[name] = std::move(backend);
}

std::vector<std::string> list_backends() {
  std::lock_guard<std::mutex> lock(g_backends_mutex);
  std::vector<std::string> out;
  for (auto& [n, _] : backends()) out.push_back(n);
  return out;
}

}  // namespace kiln
