// Lazy execution: ops are recorded into a pending graph instead of run; reading a pending
// tensor's data (or the end of the scope) compiles the pending graph — once per distinct graph,
// cached by its printed form — runs it, and turns the pending tensors into real ones in place.
// Serves LazyScope and compiled functions with graph breaks (each segment between two sync
// points is one pending graph).
#pragma once
#include <kiln/compile/capture.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor_impl.h"
#include "graph/graph.h"

namespace kiln::capture {

// Compiled segments by their IR text, with what explain reports about them.
struct SegmentCache {
  std::string backend = "inductor";
  std::map<std::string, CompiledGraph> compiled;
  std::vector<std::shared_ptr<const graph::Graph>> graphs;  // in compilation order
  std::vector<double> compile_ms;
  // Every distinct place a segment ended early: the reason and the user's line.
  std::vector<ExplainReport::Break> syncs;
  void note_sync(const std::string& reason);
};

class LazyRecorder : public ops::DispatchMode {
 public:
  explicit LazyRecorder(SegmentCache& cache);
  ~LazyRecorder() override;
  std::optional<std::vector<Tensor>> intercept(const ops::Args& a) override;
  // Compiles (if new) and runs the pending graph; every pending tensor still alive becomes real.
  void flush();
  bool owns(const TensorImpl* t) const { return values_.count(t) != 0; }
  // A sync point in the user's code: noted (for explain), then flushed.
  void sync(const std::string& reason) {
    cache_.note_sync(reason);
    flush();
  }

 private:
  graph::Value* value_of(const Tensor& t);
  SegmentCache& cache_;
  std::unique_ptr<graph::Graph> pending_;
  std::vector<Tensor> inputs_;  // real tensors bound to the pending graph's inputs
  std::unordered_map<const TensorImpl*, graph::Value*> values_;
  std::vector<std::pair<graph::Value*, std::weak_ptr<TensorImpl>>> lazies_;
  bool grad_enabled_ = true;  // the grad mode the pending ops were recorded under
};

// Installs a recorder (dispatch mode + the data hook that flushes) for its lifetime; flushes at
// the end.
class LazyInstall {
 public:
  explicit LazyInstall(LazyRecorder& r);
  ~LazyInstall();
  LazyInstall(const LazyInstall&) = delete;
  LazyInstall& operator=(const LazyInstall&) = delete;

 private:
  LazyRecorder* prev_recorder_;
  ops::DispatchMode* prev_mode_;
  TensorHooks prev_hooks_;
};

// Whether ops on this thread are being recorded lazily (a segment of a compiled function, a LazyScope).
bool lazy_recording();

// (A null graph only checks that the backend exists and takes the mode.)
CompiledGraph compile_graph(const std::string& backend, std::shared_ptr<const graph::Graph> g,
                            const std::string& mode = "default");
// Where the user's code is: the innermost C++ call site, or what the Python bindings report.
ExplainReport::Break user_location(const std::string& reason);
using LocationProvider = std::pair<std::string, unsigned> (*)();
void set_location_provider(LocationProvider p);

}  // namespace kiln::capture
