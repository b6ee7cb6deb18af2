// Lazy recording, segment compilation and materialization.
#include "capture/lazy.h"

#include <kiln/autograd.h>
#include <kiln/log.h>

#include <chrono>

#include "autograd/engine.h"
#include "capture/tracer.h"
#include "core/tensor_impl.h"

namespace kiln::capture {
namespace {

thread_local LazyRecorder* g_recorder = nullptr;
LocationProvider g_location = nullptr;

// A pending tensor becomes the real one: same TensorImpl (every handle sees it), real data.
void adopt(TensorImpl* lazy, TensorImpl* real) {
  lazy->adopt_data(*real);
  lazy->autograd = std::move(real->autograd);  // the history the segment recorded
}

}  // namespace

void set_location_provider(LocationProvider p) { g_location = p; }

bool lazy_recording() { return g_recorder != nullptr && ops::dispatch_mode() == g_recorder; }

ExplainReport::Break user_location(const std::string& reason) {
  ExplainReport::Break b{reason, "", 0};
  if (g_location) {
    auto [file, line] = g_location();
    b.file = file, b.line = line;
  }
  if (b.file.empty())
    if (const SourceLoc* loc = ops::current_call_site()) b.file = source_file(*loc), b.line = loc->line();
  return b;
}

void SegmentCache::note_sync(const std::string& reason) {
  ExplainReport::Break b = user_location(reason);
  for (const auto& s : syncs)
    if (s.reason == b.reason && s.file == b.file && s.line == b.line) return;
  KILN_LOG(graph_breaks) << b.reason << (b.file.empty() ? "" : " at " + b.file + ":" + std::to_string(b.line));
  syncs.push_back(b);
}

LazyRecorder::LazyRecorder(SegmentCache& cache) : cache_(cache), pending_(new graph::Graph) {}
LazyRecorder::~LazyRecorder() = default;

graph::Value* LazyRecorder::value_of(const Tensor& t) {
  auto it = values_.find(t.impl());
  if (it != values_.end()) return it->second;
  KILN_CHECK(!t.is_fake(), "a fake tensor reached lazy mode");
  if (t.is_wrapped_number()) return pending_->add_constant(t, true);
  graph::Value* v = pending_->add_input(t.spec(), "in" + std::to_string(inputs_.size()));
  inputs_.push_back(t);
  values_[t.impl()] = v;
  return v;
}

// An op that cannot be recorded runs for real, with the recorder off: its implementation's own
// ops (nonzero's comparisons, index's decomposition) are part of it, not a pending segment.
static std::vector<Tensor> run_eagerly(const ops::Args& a) {
  ops::SuspendDispatchMode eager;
  return ops::call(a.op, a.v);
}

std::optional<std::vector<Tensor>> LazyRecorder::intercept(const ops::Args& a) {
  const ops::OpInfo& info = ops::op_info(a.op);
  if (info.flags & ops::DATADEP) {  // its output shape needs data: run what is pending, then this op eagerly
    cache_.note_sync(std::string(info.name) + "() has a data-dependent output shape");
    flush();
    return run_eagerly(a);
  }
  // A pending graph runs in one grad mode: a switch (entering or leaving no_grad) ends it.
  if (!pending_->nodes().empty() && is_grad_enabled() != grad_enabled_) flush();
  grad_enabled_ = is_grad_enabled();
  std::vector<graph::NodeArg> args;
  for (const ops::Arg& x : a.v) args.push_back(graph::unbox_arg(x, [&](const Tensor& t) { return value_of(t); }));
  std::vector<graph::Value*> outs;
  try {
    outs = pending_->add_call(a.op, std::move(args));
  } catch (const Error&) {  // shapes need data (boolean masks): run what is pending, then this op eagerly
    sync(std::string(info.name) + "(): its output shape depends on data");
    return run_eagerly(a);
  }
  if (info.flags & ops::MUTATES) {
    // The destination may be a real tensor the caller reads directly: write it now.
    const Tensor& self = a.tensor(0);
    values_[self.impl()] = outs.at(0);
    lazies_.push_back({outs.at(0), self.impl_ptr()});
    flush();
    return std::vector<Tensor>{self};
  }
  std::vector<Tensor> result;
  for (graph::Value* v : outs) {
    Tensor f = make_fake(v->spec);
    values_[f.impl()] = v;
    lazies_.push_back({v, f.impl_ptr()});
    result.push_back(f);
  }
  return result;
}

void LazyRecorder::flush() {
  if (pending_->nodes().empty()) return;
  ops::SuspendDispatchMode eager;  // printing, compiling and running the segment are real work
  std::vector<graph::Value*> outs;
  std::vector<std::shared_ptr<TensorImpl>> targets;
  for (auto& [v, weak] : lazies_)
    if (auto impl = weak.lock()) {
      outs.push_back(v);
      targets.push_back(impl);
    }
  pending_->set_outputs(outs);
  std::unique_ptr<graph::Graph> g = std::move(pending_);
  std::vector<Tensor> inputs = std::move(inputs_);
  pending_.reset(new graph::Graph);
  inputs_.clear();
  values_.clear();
  lazies_.clear();
  std::string key = graph::print(*g);
  auto it = cache_.compiled.find(key);
  if (it == cache_.compiled.end()) {
    auto t0 = std::chrono::steady_clock::now();
    std::shared_ptr<const graph::Graph> shared(std::move(g));
    KILN_LOG(graph) << "lazy segment " << cache_.graphs.size() << ":\n" << key;
    CompiledGraph c = compile_graph(cache_.backend, shared);
    cache_.graphs.push_back(shared);
    cache_.compile_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    it = cache_.compiled.emplace(key, std::move(c)).first;
  }
  bool mode = is_grad_enabled();
  set_grad_enabled(grad_enabled_);
  std::vector<Tensor> results;
  try {
    results = it->second(inputs);
  } catch (...) {
    set_grad_enabled(mode);
    throw;
  }
  set_grad_enabled(mode);
  for (size_t i = 0; i < targets.size(); i++)
    if (targets[i]->storage->fake) adopt(targets[i].get(), results.at(i).impl());
}

LazyInstall::LazyInstall(LazyRecorder& r) : prev_recorder_(g_recorder) {
  g_recorder = &r;
  prev_mode_ = ops::set_dispatch_mode(&r);
  prev_hooks_ = tensor_hooks();
  tensor_hooks().fake_data = [](const TensorImpl* t) {
    if (g_recorder && g_recorder->owns(t)) g_recorder->sync("a tensor's data was read (item(), printing, data_ptr(), to_vector())");  // as the tracer says
  };
}

LazyInstall::~LazyInstall() {
  tensor_hooks() = prev_hooks_;
  ops::set_dispatch_mode(prev_mode_);
  g_recorder = prev_recorder_;
}

struct OpaqueScope::Saved {
  ops::DispatchMode* mode;
  TensorHooks hooks;
  LazyRecorder* recorder;
};

OpaqueScope::OpaqueScope(const std::string& what) {
  if (Tracer* t = active_tracer()) t->graph_break("a call to " + what + " (kiln::opaque)");
  if (g_recorder) g_recorder->sync("a call to " + what + " (kiln::opaque)");
  saved_.reset(new Saved{ops::set_dispatch_mode(nullptr), tensor_hooks(), g_recorder});
  tensor_hooks() = TensorHooks{};
  g_recorder = nullptr;
}

OpaqueScope::~OpaqueScope() {
  g_recorder = saved_->recorder;
  tensor_hooks() = saved_->hooks;
  ops::set_dispatch_mode(saved_->mode);
}

}  // namespace kiln::capture

namespace kiln {
using namespace capture;

// --- the public LazyScope
struct LazyScope::State {
  SegmentCache cache;
  LazyRecorder recorder{cache};
  std::unique_ptr<LazyInstall> install;
};

LazyScope::LazyScope(const std::string& backend) : state_(new State) {
  state_->cache.backend = backend;
  compile_graph(backend, nullptr);  // checks the backend exists
  state_->install.reset(new LazyInstall(state_->recorder));
}

void LazyScope::sync() { state_->recorder.flush(); }

LazyScope::~LazyScope() noexcept(false) {
  state_->install.reset();
  if (std::uncaught_exceptions()) return;
  state_->recorder.flush();
}

}  // namespace kiln
