// The backend registry ("eager" runs a captured graph with eager kernels; later issues add
// "aot_eager" and "inductor"), and the small public pieces of compile.h.
#include <kiln/compile.h>
#include <kiln/ops.h>

#include <cstdio>
#include <map>
#include <mutex>
#include <sstream>

#include "capture/lazy.h"
#include "capture/tracer.h"
#include "core/tensor_impl.h"
#include "graph/graph.h"

namespace kiln {
namespace {

std::mutex g_backends_mutex;
std::map<std::string, Backend>& backends() {
  static std::map<std::string, Backend> b = {
      {"eager", [](std::shared_ptr<const graph::Graph> g) -> CompiledGraph {
         return [g](const std::vector<Tensor>& inputs) { return graph::interpret(*g, inputs); };
       }}};
  return b;
}

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

namespace capture {
CompiledGraph compile_graph(const std::string& backend, std::shared_ptr<const graph::Graph> g) {
  Backend b;
  {
    std::lock_guard<std::mutex> lock(g_backends_mutex);
    auto it = backends().find(backend);
    if (it == backends().end()) {
      std::string names;
      for (auto& [n, _] : backends()) names += (names.empty() ? "" : ", ") + n;
      detail::fail("unknown compile backend '" + backend + "'", "registered backends: " + names);
    }
    b = it->second;
  }
  return g ? b(std::move(g)) : CompiledGraph();
}

ArgValue module_arg(const nn::Module& m) {
  ArgValue a;
  a.kind = ArgValue::Kind::Module;
  a.module = &m;
  // Runs on every call: one walk over the modules without building dotted names (the recursive
  // named_parameters() would build one per parameter). A tensor tied into several modules is
  // listed under each; the list only has to come out the same while nothing changed.
  const_cast<nn::Module&>(m).apply([&](nn::Module& sub) {  // apply() only reads here
    for (auto& [_, t] : sub.named_parameters(false)) a.module_state.push_back(t.impl());
    for (auto& [_, t] : sub.named_buffers(false)) a.module_state.push_back(t.defined() ? t.impl() : nullptr);
    a.module_training.push_back(sub.is_training());  // train()/eval() change forward
  });
  return a;
}
}  // namespace capture

void mark_dynamic(const Tensor& t, int64_t dim, int64_t min, int64_t max, SourceLoc loc) {
  ops::CallSite site(loc);
  int64_t n = t.dim();
  KILN_CHECK_HINT(dim >= -n && dim < n, "a dim is in [-ndim, ndim)", "mark_dynamic: dim ", dim, " of a ", n, "-d tensor");
  if (dim < 0) dim += n;
  KILN_CHECK(min <= max, "mark_dynamic: min ", min, " > max ", max);
  auto& dims = t.impl()->dynamic_dims;
  for (auto& d : dims)
    if (d.dim == dim) {
      d.min = min, d.max = max;
      return;
    }
  dims.push_back({dim, min, max});
}

Tensor cond(const Tensor& pred, const std::function<Tensor()>& true_fn, const std::function<Tensor()>& false_fn,
            SourceLoc loc) {
  ops::CallSite site(loc);
  KILN_CHECK(pred.numel() == 1, "cond: the predicate must have one element, got shape ", shape_str(pred.sym_sizes()));
  if (!pred.is_fake() || !capture::active_tracer()) return pred.item_scalar().to_bool() ? true_fn() : false_fn();
  Tensor a = true_fn(), b = false_fn();
  KILN_CHECK_HINT(a.dtype() == b.dtype(), "make both branches return the same dtype", "cond: the branches return ",
                  name(a.dtype()), " and ", name(b.dtype()));
  return where(pred.to(kBool).reshape({}), a, b);
}

static std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, ms < 1 ? "%.3f ms" : "%.1f ms", ms);
  return buf;
}

std::string ExplainReport::str() const {
  std::ostringstream os;
  os << "graphs: " << graph_count << ", graph breaks: " << breaks.size() << "\n";
  for (size_t i = 0; i < ops_per_graph.size(); i++)
    os << "  graph " << i << ": " << ops_per_graph[i] << " ops"
       << (i < compile_ms.size() ? ", compiled in " + ms_text(compile_ms[i]) : "") << "\n";
  for (const Break& b : breaks)
    os << "  break: " << b.reason << (b.file.empty() ? "" : " at " + b.file + ":" + std::to_string(b.line)) << "\n";
  if (!recompile_reasons.empty()) os << "recompiles: " << recompile_reasons.size() << "\n";
  for (const auto& r : recompile_reasons) os << "  " << r << "\n";
  if (eager_fallback) os << "recompile limit reached: running eagerly\n";
  if (!guards.empty()) os << "guards (latest graph):\n";
  for (const auto& g : guards) os << "  " << g << "\n";
  for (const auto& s : specializations) os << "  specialized " << s << "\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const ExplainReport& r) { return os << r.str(); }

}  // namespace kiln
