// Recording ops into a Graph while running on fake tensors.
#include "capture/tracer.h"

#include <algorithm>

#include <kiln/autograd.h>

#include "autograd/engine.h"
#include "capture/lazy.h"
#include "core/tensor_impl.h"
#include "graph/passes/passes.h"

namespace kiln::capture {
namespace {

thread_local Tracer* g_tracer = nullptr;

struct Recorder : sym::GuardRecorder {
  Tracer* t;
  void record(const char* rel, const sym::ExprPtr& a, const sym::ExprPtr& b, bool result) override {
    if (sym::equal(a, b)) return;  // s0 == s0 holds whatever s0 is
    t->relations.push_back(RelationGuard{rel, a, b, result});
  }
};

}  // namespace

Tracer* active_tracer() { return g_tracer; }

bool tracing() { return g_tracer != nullptr; }

void add_external_guards(std::shared_ptr<const ExternalGuards> g) {
  KILN_CHECK(g_tracer, "internal: add_external_guards outside a trace");
  g_tracer->external.push_back(std::move(g));
}

void graph_break(const std::string& reason) {
  KILN_CHECK(g_tracer, "internal: graph_break outside a trace");
  g_tracer->graph_break(reason);
}

struct TraceScope::Saved {
  Tracer* prev_tracer;
  ops::DispatchMode* prev_mode;
  TensorHooks prev_hooks;
  autograd::TraceHooks prev_autograd;
  Recorder recorder;
  sym::GuardRecorder* prev_recorder;
};

TraceScope::TraceScope(Tracer& t) : saved_(new Saved{}) {
  saved_->prev_tracer = g_tracer;
  g_tracer = &t;
  saved_->prev_mode = ops::set_dispatch_mode(&t);
  saved_->prev_hooks = tensor_hooks();
  tensor_hooks().fake_data = [](const TensorImpl* i) { g_tracer->on_fake_data(i); };
  tensor_hooks().concretize = [](const TensorImpl* i) { g_tracer->on_concretize(i); };
  tensor_hooks().real_data = [](const TensorImpl* i) { g_tracer->on_real_data(i); };
  saved_->prev_autograd = autograd::trace_hooks();
  autograd::trace_hooks().backward = [](const TensorList& r, const TensorList& g, bool cg, const TensorList* in,
                                        TensorList* out, bool unused) { g_tracer->trace_backward(r, g, cg, in, out, unused); };
  autograd::trace_hooks().before_set_grad = [](const Tensor& t) { g_tracer->note_set_grad(t); };
  t.grad_enabled = is_grad_enabled();
  saved_->recorder.t = &t;
  saved_->prev_recorder = sym::set_guard_recorder(&saved_->recorder);
}

TraceScope::~TraceScope() {
  sym::set_guard_recorder(saved_->prev_recorder);
  autograd::trace_hooks() = saved_->prev_autograd;
  g_tracer->restore_grads();  // a trace that stopped early leaves no fake in a real .grad
  tensor_hooks() = saved_->prev_hooks;
  ops::set_dispatch_mode(saved_->prev_mode);
  g_tracer = saved_->prev_tracer;
}

Tensor Tracer::add_input(const Tensor& real, const std::vector<SymbolSource>& symbols, const std::string& name) {
  TensorSpec spec = real.spec();
  if (!symbols.empty()) {
    for (const SymbolSource& s : symbols)
      spec.sizes[size_t(s.dim)] = SymInt(sym::symbol(s.name, {s.min, s.max}), real.size(s.dim));  // carries its range
    spec.strides.clear();  // symbolic inputs are contiguous (the caller only makes those symbolic)
    spec.offset = 0;
  }
  graph::Value* v = graph.add_input(spec, name);
  num_args_++;
  Tensor fake = make_fake(v->spec);
  if (real.requires_grad()) fake.requires_grad_(true);  // the function may look (ops record no history here)
  values_[fake.impl()] = v;
  by_storage_[fake.impl()->storage.get()] = v;
  if (real.requires_grad()) needs_grad_.insert(v);
  keep_.push_back(fake);
  return fake;
}

graph::Value* Tracer::value_of(const Tensor& t) {
  auto it = values_.find(t.impl());
  if (it != values_.end()) return it->second;
  if (t.is_fake()) {
    // A tensor made from a traced one without an op (detach(), a copy of the handle's impl)
    // shares its storage and layout: the same value.
    auto s = by_storage_.find(t.impl()->storage.get());
    if (s != by_storage_.end() && graph::same_spec(graph::normalized(t.spec()), s->second->spec)) {
      // detach() of an argument that needs grad: the argument without its history, as eagerly
      // (a graph traced without grad records none anyway).
      if (grad_enabled && !t.requires_grad() && needs_grad_.count(s->second)) {
        if (graph::Value* detached = no_grad_alias(s->second)) return detached;
        // detach() of a value computed with grad inside the function: a graph has no
        // stop-gradient, so using the same value would differentiate through it, and lazy
        // segments cannot detach a pending value either: the function runs eagerly.
        brk_runs_eagerly = true;
        graph_break("detach() of a value computed with grad inside the function (a graph has no stop-gradient)");
      }
      return s->second;
    }
    // Otherwise it is a stand-in built in fake mode (a model constructed under ops::FakeModeScope),
    // lifted like a parameter; a symbolic one can only have leaked from another trace.
    KILN_CHECK(!t.impl()->sym, "internal: a symbolic fake tensor from outside this trace reached the tracer");
  }
  if (t.is_wrapped_number()) return graph.add_constant(t, true);
  // A tensor the function reads (a module parameter, a tensor it captured): a graph input bound
  // to that tensor, so in-place updates (optimizer steps) need no recompile.
  graph::Value* v = graph.add_input(t.spec(), "lifted" + std::to_string(lifted.size()));
  lifted.push_back(t);
  values_[t.impl()] = v;
  if (t.requires_grad()) needs_grad_.insert(v);
  return v;
}

std::optional<std::vector<Tensor>> Tracer::intercept(const ops::Args& a) {
  const ops::OpInfo& info = ops::op_info(a.op);
  // The node's origin: the op the user called, at the user's line (the Python frame, or the
  // outermost C++ call).
  const ExplainReport::Break at = user_location("");
  graph::Graph::OriginScope origin(graph, {a.op, at.file.empty() ? nullptr : graph::intern_file(at.file), int(at.line)});
  if (info.flags & ops::DATADEP)
    graph_break(std::string(info.name) + "() has a data-dependent output shape");
  std::vector<graph::NodeArg> args;
  args.reserve(a.v.size());
  bool tracked = false;  // does autograd see this call (an input that needs grad)?
  // The graph runs in one grad mode. Under no_grad in a graph that runs with grad, an op reads
  // the graph inputs that need grad detached (no_grad_alias); an op whose history depends on
  // another mode otherwise (no_grad around values computed with grad, in-place writes to tensors
  // that need grad, enable_grad in a graph without grad) runs in its own segment.
  const bool no_grad_region = grad_enabled && !is_grad_enabled() && !train_step;
  const Tensor* destination = (info.flags & ops::MUTATES) ? &a.tensor(0) : nullptr;
  for (const ops::Arg& x : a.v)
    args.push_back(graph::unbox_arg(x, [&](const Tensor& t) {
      graph::Value* v = value_of(t);
      if (!needs_grad_.count(v)) return v;
      if (no_grad_region && !(destination && destination->impl() == t.impl()))
        if (graph::Value* detached = no_grad_alias(v)) return detached;
      tracked = true;
      return v;
    }));
  if (tracked && is_grad_enabled() != grad_enabled && !train_step)
    graph_break(std::string("grad mode switched ") + (grad_enabled ? "off (no_grad)" : "on") +
                " around tensors that require grad");
  tracked &= is_grad_enabled() && (info.flags & ops::DIFF);
  std::vector<graph::Value*> outs;
  try {
    outs = graph.add_call(a.op, std::move(args));
  } catch (const Error& e) {
    // Shapes that need data (boolean-mask indexing decomposes through nonzero) break the graph;
    // any other error is the user's, and re-raises when the segment runs eagerly.
    bool datadep = e.message().find("data-dependent") != std::string::npos;
    graph_break(std::string(info.name) + "(): " + (datadep ? "its output shape depends on data" : e.message()));
  }
  std::vector<Tensor> result;
  if (info.flags & ops::MUTATES) {
    // copy_ returns its destination: the same tensor, now standing for the new value.
    const Tensor& self = a.tensor(0);
    values_[self.impl()] = outs.at(0);
    return std::vector<Tensor>{self};
  }
  for (graph::Value* v : outs) {
    if (tracked && is_floating(v->spec.dtype)) needs_grad_.insert(v);
    result.push_back(bind_fake(v));
  }
  return result;
}

// The graph input bound to input v detached (made on first use); null if v is not a graph input.
graph::Value* Tracer::no_grad_alias(graph::Value* v) {
  auto it = no_grad_aliases_.find(v);
  if (it != no_grad_aliases_.end()) return it->second;
  const auto& ins = graph.inputs();
  const size_t source = size_t(std::find(ins.begin(), ins.end(), v) - ins.begin());
  if (source == ins.size()) return nullptr;
  graph::Value* alias = graph.add_input(v->spec, v->name + "_nograd");
  // Its slot among the lifted tensors: the lifted source itself (so guards see what they see for
  // it), none for an argument (run_entry binds both on each call).
  lifted.push_back(source >= num_args_ ? lifted.at(source - num_args_) : Tensor());
  no_grad_inputs.emplace_back(ins.size() - 1, source);
  return no_grad_aliases_[v] = alias;
}

Tensor Tracer::bind_fake(graph::Value* v) {
  Tensor f = make_fake(v->spec);
  values_[f.impl()] = v;
  by_storage_[f.impl()->storage.get()] = v;
  keep_.push_back(f);
  return f;
}

void Tracer::set_outputs(const std::vector<Tensor>& outs) {
  std::vector<graph::Value*> vs;
  for (const Tensor& t : outs) {
    KILN_CHECK(t.defined(), "a compiled function returned an undefined tensor");
    vs.push_back(value_of(t));
  }
  // Gradients the function left in real leaves' .grad: extra outputs the compiled call assigns.
  for (const auto& [leaf, original] : grad_originals) {
    Tensor g = leaf.grad();
    GradResult r{leaf, -1, g};
    if (g.defined() && g.is_fake()) r.output = int(vs.size()), r.value = Tensor(), vs.push_back(value_of(g));
    grad_results.push_back(r);
  }
  restore_grads();
  graph.set_outputs(vs);
  if (train_step) graph::dce(graph);  // the forward the joint graph recomputes (train_step.cc)
}

void Tracer::graph_break(const std::string& reason) {
  brk = user_location(reason);
  Error::Info info;
  info.message = "graph break: " + reason;
  info.file = brk->file;
  info.line = brk->line;
  throw GraphBreak(info);
}

void Tracer::on_fake_data(const TensorImpl*) {
  graph_break("a tensor's data was read (item(), printing, data_ptr(), to_vector())");
}

void Tracer::on_real_data(const TensorImpl*) {
  if (ops::dispatch_mode() != this) return;  // kiln's own side work (constants, printing the graph)
  graph_break("the data of a tensor the function captured (a parameter, a buffer, a closure) was read");
}

void Tracer::on_concretize(const TensorImpl* t) {
  if (!t->sym) return;
  for (size_t d = 0; d < t->sym->sizes.size(); d++) {
    const SymInt& s = t->sym->sizes[d];
    if (!s.is_symbolic()) continue;
    relations.push_back(RelationGuard{"==", s.expr(), sym::constant(s.hint()), true});
    specializations.push_back(sym::str(s.expr()) + " = " + std::to_string(s.hint()) +
                              " (a concrete size was read, e.g. sizes() or size(d))");
  }
}

}  // namespace kiln::capture
