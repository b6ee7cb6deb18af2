// The small public pieces of compile.h that capture implements (mark_dynamic, cond, ExplainReport's
// text, module arguments), and compiling a graph with a backend found through the lookup the
// layer above installs (src/compile/backends.cc holds the registry).
#include <kiln/compile/capture.h>
#include <kiln/ops.h>

#include <cstdio>
#include <sstream>

#include "capture/guards.h"
#include "capture/hooks.h"
#include "capture/lazy.h"
#include "capture/tracer.h"
#include "core/tensor_impl.h"
#include "graph/graph.h"
#include "ops/fake_mode.h"

namespace kiln {

namespace capture {
namespace {
BackendLookup g_backend_lookup = nullptr;
}  // namespace

void set_backend_lookup(BackendLookup lookup) { g_backend_lookup = lookup; }

CompiledGraph compile_graph(const std::string& backend, std::shared_ptr<const graph::Graph> g, const std::string& mode) {
  KILN_CHECK(g_backend_lookup, "internal: no backend lookup is installed (src/compile/ is not linked)");
  Backend b = g_backend_lookup(backend, mode);
  return g ? b(std::move(g)) : CompiledGraph();
}

std::vector<std::string> graph_constants(const graph::Graph& g) {
  std::vector<std::string> out;
  auto where = [](const graph::Node& n) {
    graph::Origin o = graph::origin_of(n);
    std::string s = o.known() ? std::string(", in ") + ops::op_info(o.op).name : "";
    return s + (o.file ? std::string(" at ") + o.file + ":" + std::to_string(o.line) : "");
  };
  for (const graph::Node* n : g.nodes()) {
    if (n->kind == graph::NodeKind::Constant) {
      const Tensor& t = n->literal;
      std::string value = t.numel() == 1 ? t.item_scalar().str() : "a tensor of shape " + shape_str(t.sizes());
      out.push_back(value + " (" + (n->wrapped ? "a number" : "a constant tensor") + ", " + name(t.dtype()) + ")" + where(*n));
      continue;
    }
    for (const graph::NodeArg& a : n->args) {
      if (const Scalar* s = std::get_if<Scalar>(&a)) out.push_back(s->str() + " (a number argument)" + where(*n));
      else if (const double* d = std::get_if<double>(&a)) out.push_back(Scalar(*d).str() + " (a number argument)" + where(*n));
    }
  }
  return out;
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
  auto check_same = [](const Tensor& a, const Tensor& b) {
    KILN_CHECK_HINT(a.dtype() == b.dtype(), "make both branches return the same dtype", "cond: the branches return ",
                    name(a.dtype()), " and ", name(b.dtype()));
    KILN_CHECK_HINT(a.sym_sizes() == b.sym_sizes(), "make both branches return tensors of one shape",
                    "cond: the branches return shapes ", shape_str(a.sym_sizes()), " and ", shape_str(b.sym_sizes()));
  };
  if (!pred.is_fake() || !capture::active_tracer()) {
    bool taken = pred.item_scalar().to_bool();
    Tensor r = taken ? true_fn() : false_fn();
    // The same program compiled runs both branches, so eagerly too the other one must agree in
    // shape and dtype: it runs on fake tensors (metadata only). A branch that cannot run fake
    // (it reads data) is not checked here; under compile it is a graph break anyway.
    Tensor other;
    try {
      ops::FakeModeScope fake;
      other = taken ? false_fn() : true_fn();
    } catch (...) {  // (from Python: any exception the branch raised on fake tensors)
      return r;
    }
    check_same(taken ? r : other, taken ? other : r);
    return r;
  }
  Tensor a = true_fn(), b = false_fn();
  check_same(a, b);
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
  if (!constants.empty()) os << "constants baked into the graphs:\n";
  for (const auto& c : constants) os << "  " << c << "\n";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const ExplainReport& r) { return os << r.str(); }

}  // namespace kiln
