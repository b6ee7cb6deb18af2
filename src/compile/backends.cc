// The backend registry: "eager" runs a captured graph with the graph interpreter (the eager
// kernels), "aot_eager" through AOT autograd (src/aot/), "inductor" through AOT autograd with
// generated kernels (src/inductor/), and programs add their own
// (register_backend). Capture compiles its graphs with the backends found here, through the
// lookup installed below (capture/hooks.h).
#include <kiln/aot.h>
#include <kiln/compile.h>
#include <kiln/log.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "aot/aot.h"
#include "capture/hooks.h"
#include "graph/graph.h"
#include "inductor/inductor.h"
#include "inductor/plan_cache.h"
#include "runtime/cache.h"
#include "runtime/timer.h"

namespace kiln {  // (not kiln::compile: that is the name of compile())
namespace {

// The "inductor" backend's whole compiled graphs on disk (docs/cache.md): per captured graph and
// requires-grad pattern an entry "inductor-graph/<key>.graph" holding the joint's signature and
// the plan keys (inductor-plan entries) of the graphs AOT compiled for it. A warm process loads
// those plans: no decomposition, functionalization, joint graph, partition, lowering or emission.
struct GraphEntry {
  aot::Signature sig;
  std::string forward, backward;  // plan keys (backward empty: inference)
};
template <class A>
void fields(A& a, GraphEntry& e) { a(e.sig, e.forward, e.backward); }

constexpr const char* kGraphNamespace = "inductor-graph";

aot::GraphFn compile_inductor(std::shared_ptr<const graph::Graph> g, const inductor::Options& options) {
  aot::AotOptions o;
  o.compile_graph = [options](std::shared_ptr<const graph::Graph> part) { return inductor::compile_graph(std::move(part), options); };
  o.use_global_budget = true;
  if (!runtime::cache::enabled()) return aot::compile_aot(std::move(g), o);
  struct State {
    std::string graph_key;  // the captured graph's plan key: its text, hints, this build, the compiler
    std::mutex mu;
    std::map<const graph::Graph*, std::string> plan_keys;  // of the graphs compiled for it
  };
  auto st = std::make_shared<State>();
  const runtime::Timer timer;
  st->graph_key = inductor::plan_key(*g, options);  // (the mode too: a tuned plan is another entry)
  KILN_LOG(perf) << "inductor: keyed the captured graph (" << g->nodes().size() << " nodes) in " << timer.ms();
  // The entry of a requires-grad pattern (and the partition's budget, which shapes the graphs).
  auto entry = [st](const std::vector<bool>& needs) {
    std::string bits;
    for (bool b : needs) bits += b ? '1' : '0';
    return runtime::cache::hash({"inductor-graph 1", st->graph_key, bits, std::to_string(aot::activation_memory_budget())}) +
           ".graph";
  };
  o.compile_graph = [st, options](std::shared_ptr<const graph::Graph> part) {
    std::string key;
    const graph::Graph* at = part.get();
    aot::GraphFn f = inductor::compile_graph_keyed(std::move(part), &key, options);
    std::lock_guard<std::mutex> lock(st->mu);
    st->plan_keys[at] = key;
    return f;
  };
  o.load_plan = [entry](const std::vector<bool>& needs) -> std::shared_ptr<const aot::CompiledPlan> {
    const runtime::Timer timer;
    GraphEntry e;
    if (!inductor::plan_cache::load(kGraphNamespace, entry(needs), [&](inductor::plan_cache::Reader& r) { r(e); })) return nullptr;
    auto plan = std::make_shared<aot::CompiledPlan>();
    plan->sig = e.sig;
    plan->forward = inductor::load_graph(e.forward);
    if (!e.backward.empty()) plan->backward = inductor::load_graph(e.backward);
    if (!plan->forward || (!e.backward.empty() && !plan->backward)) return nullptr;  // a plan gone: AOT rebuilds
    KILN_LOG(perf) << "aot: compiled graphs loaded from the cache in " << timer.ms();
    return plan;
  };
  o.built_plan = [st, entry](const std::vector<bool>& needs, const aot::Signature& sig, const graph::Graph* forward,
                             const graph::Graph* backward) {
    GraphEntry e;
    e.sig = sig;
    {
      std::lock_guard<std::mutex> lock(st->mu);
      e.forward = st->plan_keys[forward];
      if (backward) e.backward = st->plan_keys[backward];
    }
    if (e.forward.empty() || (backward && e.backward.empty())) return;  // (the cache went off meanwhile)
    inductor::plan_cache::store(kGraphNamespace, entry(needs), [&](inductor::plan_cache::Writer& w) { w(e); });
  };
  return aot::compile_aot(std::move(g), o);
}

// torch.compile's modes (CompileOptions::mode). On the CPU "reduce-overhead" (CUDA graphs) is
// "default", and "max-autotune-no-cudagraphs" is "max-autotune".
constexpr const char* kModes[] = {"default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"};

// A registered backend: a function of the graph and the mode; `modal`: whether it takes a mode
// other than "default" (inductor only, as in torch, where the modes are inductor's options).
struct Registered {
  std::function<CompiledGraph(std::shared_ptr<const graph::Graph>, const std::string& mode)> compile;
  bool modal = false;
};

std::mutex g_backends_mutex;
std::map<std::string, Registered>& backends() {
  static std::map<std::string, Registered> b = {
      {"eager", {[](std::shared_ptr<const graph::Graph> g, const std::string&) -> CompiledGraph {
         return [g](const std::vector<Tensor>& inputs) { return graph::interpret(*g, inputs); };
       }}},
      // The partition's memory budget is read from aot::set_activation_memory_budget per plan.
      {"aot_eager", {[](std::shared_ptr<const graph::Graph> g, const std::string&) -> CompiledGraph {
         aot::AotOptions o;
         o.use_global_budget = true;
         return aot::compile_aot(std::move(g), o);
       }}},
      // AOT autograd with every graph it runs compiled by inductor (docs/compiler.md), through
      // the disk cache of whole compiled graphs.
      {"inductor", {[](std::shared_ptr<const graph::Graph> g, const std::string& mode) -> CompiledGraph {
         return compile_inductor(std::move(g), inductor::Options{.max_autotune = mode.starts_with("max-autotune")});
       }, true}}};
  return b;
}

Backend find_backend(const std::string& name, const std::string& mode) {
  std::string modes;
  for (const char* m : kModes) modes += (modes.empty() ? "" : ", ") + std::string(m);
  KILN_CHECK_HINT(std::find(std::begin(kModes), std::end(kModes), mode) != std::end(kModes), "the modes are " + modes,
                  "compile: unrecognized mode '", mode, "'");
  std::lock_guard<std::mutex> lock(g_backends_mutex);
  auto it = backends().find(name);
  if (it == backends().end()) {
    std::string names;
    for (auto& [n, _] : backends()) names += (names.empty() ? "" : ", ") + n;
    detail::fail("unknown compile backend '" + name + "'", "registered backends: " + names);
  }
  KILN_CHECK_HINT(mode == "default" || it->second.modal, "compile with mode \"default\" or backend \"inductor\"",
                  "compile: mode '", mode, "' is an option of backend 'inductor', not of '", name, "'");
  return [compile = it->second.compile, mode](std::shared_ptr<const graph::Graph> g) { return compile(std::move(g), mode); };
}

[[maybe_unused]] const bool installed = (capture::set_backend_lookup(&find_backend), true);

}  // namespace

void register_backend(const std::string& name, Backend backend) {
  KILN_CHECK(!name.empty() && backend, "register_backend: a backend needs a name and a function");
  std::lock_guard<std::mutex> lock(g_backends_mutex);
  backends()[name] = {[backend = std::move(backend)](std::shared_ptr<const graph::Graph> g, const std::string&) {
    return backend(std::move(g));
  }};
}

std::vector<std::string> list_backends() {
  std::lock_guard<std::mutex> lock(g_backends_mutex);
  std::vector<std::string> out;
  for (auto& [n, _] : backends()) out.push_back(n);
  return out;
}

}  // namespace kiln
