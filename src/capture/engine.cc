// A compiled function: its cache of traced graphs (each with its guards), recompiles with
// automatic dynamic sizes, the recompile limit, and the segmented (lazy) mode after a break.
#include <kiln/autograd.h>
#include <kiln/log.h>
#include <kiln/ops.h>

#include <algorithm>
#include <iostream>
#include <set>

#include "capture/guards.h"
#include "capture/lazy.h"
#include "capture/tracer.h"
#include "core/tensor_impl.h"
#include "runtime/timer.h"

namespace kiln::capture {

class Engine {
 public:
  explicit Engine(const CompileOptions& o) : options(o) {
    if (options.name.empty()) options.name = "compiled function";
    segments.backend = options.backend;
    compile_graph(options.backend, nullptr, options.mode);  // an unknown backend or mode fails at compile(), not at the first call
  }

  struct Entry {
    GuardSet guards;
    std::shared_ptr<const graph::Graph> graph;
    CompiledGraph run;
    std::vector<Tensor> lifted;
    std::vector<std::string> specializations;
    // Training steps: run with grad mode off; the trailing outputs go to real leaves' .grad,
    // and the graph holds only while each such leaf's .grad is the tensor it had when traced.
    bool train_step = false;
    std::vector<Tracer::GradResult> grad_results;
    std::vector<std::pair<Tensor, Tensor>> grad_guards;
    std::vector<std::shared_ptr<const ExternalGuards>> external;  // what the traced code read (Python values)
    std::vector<std::pair<size_t, size_t>> no_grad_inputs;  // Tracer::no_grad_inputs
    std::optional<std::string> check_external() const {
      for (const auto& x : external)
        if (auto m = x->check()) return m;
      return std::nullopt;
    }
    // Null if every guard of this graph holds for a call with `args`, else the first failure.
    std::optional<std::string> check(const std::vector<ArgValue>& args) const {
      if (auto m = guards.check(args)) return m;
      if (auto m = guards.check_lifted(lifted)) return m;
      if (auto m = check_external()) return m;
      return check_grads();
    }
    std::optional<std::string> check_grads() const {
      for (const auto& [leaf, g] : grad_guards)
        if (!leaf.grad().is_same(g))
          return std::string("the .grad of a parameter the compiled training step writes was ") +
                 (g.defined() ? "replaced or cleared" : "set") + " since the trace (zero_grad(set_to_none) before each call keeps one graph)";
      return std::nullopt;
    }
  };

  CompileOptions options;
  std::vector<Entry> entries;
  std::set<std::pair<size_t, int64_t>> dynamic;  // (argument, dim) made symbolic by recompiles
  std::vector<std::string> recompile_reasons;
  std::vector<double> compile_ms;
  std::vector<ExplainReport::Break> breaks;
  bool segmented = false;  // a graph break was seen: run lazily, segment by segment
  bool fallback = false;   // the recompile limit was reached: run eagerly
  SegmentCache segments;

  std::vector<Tensor> call(const std::vector<ArgValue>& args, const Body& body);
  std::optional<std::vector<Tensor>> call_cached(const std::vector<ArgValue>& args);

 private:
  std::vector<Tensor> run_entry(const Entry& e, const std::vector<ArgValue>& args);
  std::vector<SymbolSource> symbols_for(const std::vector<ArgValue>& args);
  std::vector<Tensor> trace(const std::vector<ArgValue>& args, const Body& body);
  std::vector<Tensor> run_segmented(const std::vector<ArgValue>& args, const Body& body);
};

std::vector<Tensor> Engine::run_entry(const Entry& e, const std::vector<ArgValue>& args) {
  std::vector<Tensor> inputs;
  inputs.reserve(args.size() + e.lifted.size());
  for (const ArgValue& a : args)
    if (a.kind == ArgValue::Kind::Tensor && a.tensor.defined()) inputs.push_back(a.tensor);
  inputs.insert(inputs.end(), e.lifted.begin(), e.lifted.end());
  for (const auto& [alias, source] : e.no_grad_inputs) inputs.at(alias) = inputs.at(source).detach();
  if (!e.train_step) return e.run(inputs);
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;  // the backward is in the graph
    outs = e.run(inputs);
  }
  for (const Tracer::GradResult& r : e.grad_results)
    Tensor(r.leaf).set_grad(r.output >= 0 ? outs.at(size_t(r.output)) : r.value);
  outs.resize(outs.size() - size_t(std::count_if(e.grad_results.begin(), e.grad_results.end(),
                                                 [](const Tracer::GradResult& r) { return r.output >= 0; })));
  return outs;
}

std::vector<SymbolSource> Engine::symbols_for(const std::vector<ArgValue>& args) {
  std::vector<SymbolSource> out;
  for (size_t i = 0; i < args.size(); i++) {
    const Tensor& t = args[i].tensor;
    if (args[i].kind != ArgValue::Kind::Tensor || !t.defined() || !t.is_contiguous()) continue;
    for (int64_t d = 0; d < t.dim(); d++) {
      SymbolSource s{std::string("s").append(std::to_string(out.size())), i, d};  // (GCC 12 -Wrestrict misfires on "s" + ...)
      bool marked = false;
      for (const DynamicDim& m : t.impl()->dynamic_dims) {
        if (m.dim != d) continue;
        // A guard could never hold for this very call: every call would recompile.
        KILN_CHECK_HINT(t.size(d) >= m.min && t.size(d) <= m.max, "widen the range given to mark_dynamic",
                        options.name, ": argument ", i, " has size ", t.size(d), " in dim ", d,
                        ", outside the range [", m.min, ", ", m.max, "] it was marked dynamic with");
        marked = true, s.min = std::max<int64_t>(m.min, 2), s.max = m.max;
      }
      bool automatic = options.dynamic != false && dynamic.count({i, d});
      bool all = options.dynamic == true;
      if ((marked || automatic || all) && t.size(d) >= 2) out.push_back(s);  // 0 and 1 stay specialized
    }
  }
  return out;
}

std::vector<Tensor> Engine::trace(const std::vector<ArgValue>& args, const Body& body) {
  const runtime::Timer timer;
  Tracer tracer;
  std::vector<SymbolSource> symbols = symbols_for(args);
  std::vector<ArgValue> fake_args = args;
  for (size_t i = 0; i < args.size(); i++) {
    if (args[i].kind != ArgValue::Kind::Tensor || !args[i].tensor.defined()) continue;
    std::vector<SymbolSource> mine;
    for (const SymbolSource& s : symbols)
      if (s.input == i) mine.push_back(s);
    fake_args[i].tensor = tracer.add_input(args[i].tensor, mine, "arg" + std::to_string(i));
  }
  std::vector<Tensor> outs;
  // (The trace draws no random numbers: graph::infer_specs leaves the generator as it found it,
  // so a compiled call draws what an eager call would.)
  try {
    TraceScope scope(tracer);
    outs = body(fake_args);
    tracer.set_outputs(outs);
  } catch (...) {
    if (!tracer.brk) throw;  // an error in the function itself: the user's to see
    ExplainReport::Break b = *tracer.brk;
    breaks.push_back(b);
    KILN_LOG(graph_breaks) << options.name << ": " << b.reason << (b.file.empty() ? "" : " at " + b.file + ":" + std::to_string(b.line));
    KILN_CHECK_HINT(!options.fullgraph, "remove the host sync (item(), printing, data-dependent shapes) or use kiln::cond / kiln::where, "
                                        "or compile without fullgraph",
                    "graph break in a fullgraph compile: ", b.reason,
                    b.file.empty() ? "" : " (at " + b.file + ":" + std::to_string(b.line) + ")");
    if (tracer.train_step || tracer.brk_runs_eagerly) {
      // Lazy segments cannot hold a backward() (lazy tensors have no autograd history) nor
      // detach a pending value: such a function runs eagerly from now on.
      KILN_LOG(graph_breaks) << options.name << ": " << (tracer.train_step ? "the break follows a backward()" : b.reason)
                             << ": running eagerly from now on";
      fallback = true;
      return body(args);
    }
    segmented = true;
    return run_segmented(args, body);
  }
  const std::string traced = timer.ms();
  const runtime::Timer guards;
  Entry e;
  e.graph = std::make_shared<graph::Graph>(std::move(tracer.graph));
  e.lifted = std::move(tracer.lifted);
  e.specializations = std::move(tracer.specializations);
  e.train_step = tracer.train_step;
  e.grad_results = std::move(tracer.grad_results);
  e.grad_guards = std::move(tracer.grad_originals);
  e.guards = GuardSet::from_args(args, symbols);
  e.guards.relations = std::move(tracer.relations);
  e.guards.lift(e.lifted);
  e.external = std::move(tracer.external);
  e.no_grad_inputs = std::move(tracer.no_grad_inputs);
  KILN_LOG(graph) << options.name << ": graph " << entries.size() << ":\n" << graph::print(*e.graph);
  if (log_enabled(LogComponent::guards)) {
    for (const std::string& g : e.guards.describe()) KILN_LOG(guards) << options.name << ": " << g;
    for (const auto& x : e.external)
      for (const std::string& g : x->describe()) KILN_LOG(guards) << options.name << ": " << g;
  }
  for (const SymbolSource& s : symbols) {
    KILN_LOG(dynamic) << options.name << ": " << s.name << " = size " << s.dim << " of argument " << s.input;
  }
  KILN_LOG(perf) << options.name << ": traced " << e.graph->nodes().size() << " node(s) in " << traced << ", guards in "
                 << guards.ms();
  e.run = compile_graph(options.backend, e.graph, options.mode);
  compile_ms.push_back(timer.wall_ms());
  entries.push_back(std::move(e));
  return run_entry(entries.back(), args);
}

std::vector<Tensor> Engine::run_segmented(const std::vector<ArgValue>& args, const Body& body) {
  LazyRecorder recorder(segments);
  std::vector<Tensor> outs;
  {
    LazyInstall install(recorder);
    outs = body(args);
    recorder.flush();
  }
  // Segments that bake values from the eager code between them (a number from item()) compile
  // anew for each value: the recompile limit applies per place a segment can end.
  size_t limit = size_t(std::max(options.recompile_limit, 1)) * (segments.syncs.size() + 1);
  if (segments.compiled.size() > limit) {
    std::string why = std::to_string(segments.compiled.size()) + " distinct segments (limit " + std::to_string(limit) +
                      ": recompile_limit x (graph breaks + 1)); segments that bake values read between breaks "
                      "recompile for every new value";
    KILN_CHECK_HINT(!options.error_on_recompile_limit, "avoid the host sync (kiln::cond, kiln::where) or raise the limit",
                    options.name, " hit the recompile limit: ", why);
    std::cerr << "kiln: " << options.name << " hit the recompile limit: " << why << "; it runs eagerly from now on\n";
    fallback = true;
  }
  return outs;
}

// A compiled function called while another one is traced or recorded in segments (its
// arguments are fake or pending): its body runs inline, so the outer capture records its ops, as
// if it were not compiled (torch.compile inlines nested compiled functions too).
static bool nested() { return tracing() || lazy_recording(); }

std::optional<std::vector<Tensor>> Engine::call_cached(const std::vector<ArgValue>& args) {
  if (fallback || segmented || nested()) return std::nullopt;
  for (const Entry& e : entries)
    if (!e.check(args)) return run_entry(e, args);
  return std::nullopt;
}

std::vector<Tensor> Engine::call(const std::vector<ArgValue>& args, const Body& body) {
  if (auto outs = call_cached(args)) return std::move(*outs);
  if (fallback || nested()) return body(args);
  if (segmented) return run_segmented(args, body);
  if (!entries.empty()) {
    std::string why = *entries.back().check(args);
    recompile_reasons.push_back(why);
    KILN_LOG(recompiles) << options.name << ": recompiling (graph " << entries.size() << "): " << why;
    if (int(entries.size()) >= options.recompile_limit) {
      KILN_CHECK_HINT(!options.error_on_recompile_limit,
                      "mark the varying sizes dynamic (kiln::mark_dynamic) or raise CompileOptions::recompile_limit",
                      options.name, " hit the recompile limit (", options.recompile_limit, "); last guard failure: ", why);
      std::cerr << "kiln: " << options.name << " hit the recompile limit (" << options.recompile_limit
                << "); it runs eagerly from now on. Last guard failure: " << why << "\n";
      fallback = true;
      return body(args);
    }
    // Automatic dynamic: a size that differs from the one an earlier trace saw for the same
    // argument (at the same rank) becomes symbolic.
    for (const Entry& e : entries)
      for (const TensorGuard& g : e.guards.tensors) {
        if (g.input >= args.size() || args[g.input].kind != ArgValue::Kind::Tensor) continue;  // another call shape
        const Tensor& t = args[g.input].tensor;
        if (!g.defined || !t.defined() || t.dim() != int64_t(g.sizes.size())) continue;
        for (size_t d = 0; d < g.sizes.size(); d++)
          if (g.sizes[d] >= 0 && t.size(int64_t(d)) != g.sizes[d] && !dynamic.count({g.input, int64_t(d)})) {
            dynamic.insert({g.input, int64_t(d)});
            KILN_LOG(dynamic) << options.name << ": size " << d << " of argument " << g.input << " changed ("
                              << g.sizes[d] << " -> " << t.size(int64_t(d)) << "): symbolic from now on";
          }
      }
  }
  return trace(args, body);
}

std::shared_ptr<Engine> make_engine(const CompileOptions& options) { return std::make_shared<Engine>(options); }

std::vector<Tensor> run(Engine& e, const std::vector<ArgValue>& args, const Body& body) { return e.call(args, body); }

std::optional<std::vector<Tensor>> run_cached(Engine& e, const std::vector<ArgValue>& args) { return e.call_cached(args); }

void for_each_external_guards(const Engine& e, const std::function<void(const ExternalGuards&)>& f) {
  for (const auto& entry : e.entries)
    for (const auto& x : entry.external) f(*x);
}

ExplainReport report(const Engine& e) {
  ExplainReport r;
  for (const auto& entry : e.entries) {
    r.ops_per_graph.push_back(int(entry.graph->nodes().size()));
    r.graphs.push_back(graph::print(*entry.graph));
    r.specializations.insert(r.specializations.end(), entry.specializations.begin(), entry.specializations.end());
  }
  r.compile_ms = e.compile_ms;
  for (size_t i = 0; i < e.segments.graphs.size(); i++) {
    r.ops_per_graph.push_back(int(e.segments.graphs[i]->nodes().size()));
    r.graphs.push_back(graph::print(*e.segments.graphs[i]));
    r.compile_ms.push_back(e.segments.compile_ms[i]);
  }
  r.graph_count = int(r.graphs.size());
  r.breaks = e.breaks;
  for (const auto& s : e.segments.syncs) {
    bool seen = false;
    for (const auto& b : r.breaks) seen |= b.reason == s.reason && b.file == s.file && b.line == s.line;
    if (!seen) r.breaks.push_back(s);
  }
  if (!e.entries.empty()) {
    r.guards = e.entries.back().guards.describe();
    for (const auto& x : e.entries.back().external)
      for (std::string& g : x->describe()) r.guards.push_back(std::move(g));
  }
  for (size_t i = 0; i < e.entries.size(); i++) {
    std::string graph = "graph " + std::to_string(i) + ": ";
    for (const std::string& c : graph_constants(*e.entries[i].graph)) r.constants.push_back(graph + c);
    for (const auto& x : e.entries[i].external)
      for (const std::string& c : x->constants()) r.constants.push_back(graph + c);
  }
  for (size_t i = 0; i < e.segments.graphs.size(); i++)  // segments bake what the eager code between them produced
    for (const std::string& c : graph_constants(*e.segments.graphs[i]))
      r.constants.push_back("graph " + std::to_string(e.entries.size() + i) + ": " + c);
  r.recompile_reasons = e.recompile_reasons;
  r.eager_fallback = e.fallback;
  return r;
}

}  // namespace kiln::capture
