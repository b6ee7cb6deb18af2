// The tracer: runs a function on fake tensors and records every op it calls into a Graph.
// Installed as the dispatcher's mode for the duration of a trace (TraceScope); it also turns
// host syncs on fake tensors into graph breaks and collects the guards symbolic sizes imply.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/guards.h"
#include "core/tensor_impl.h"
#include "graph/graph.h"

namespace kiln::capture {

// Why a trace stopped before the function returned, and where (the user's line, if known).
struct BreakInfo {
  std::string reason;
  std::string file;
  unsigned line = 0;
};

// Thrown by the tracer at a graph break (also recorded in Tracer::brk, which is what callers
// check: the exception may be translated on its way through Python).
struct GraphBreak : Error {
  explicit GraphBreak(Error::Info info) : Error(std::move(info)) {}
};

class Tracer : public ops::DispatchMode {
 public:
  graph::Graph graph;
  std::vector<Tensor> lifted;        // real tensors the function read (parameters, captured tensors)
  std::vector<RelationGuard> relations;
  std::vector<std::string> specializations;  // symbols fixed to their hint, with the reason
  std::optional<BreakInfo> brk;
  bool grad_enabled = true;  // grad mode when the trace began: the graph runs in this one mode

  // A fake stand-in for argument tensor `real`; the given dims get the given symbols.
  Tensor add_input(const Tensor& real, const std::vector<SymbolSource>& symbols, const std::string& name);
  // Marks the function's results as the graph's outputs.
  void set_outputs(const std::vector<Tensor>& outs);

  std::optional<std::vector<Tensor>> intercept(const ops::Args& a) override;

  // Records a break and throws GraphBreak.
  [[noreturn]] void graph_break(const std::string& reason);
  void on_fake_data(const TensorImpl* t);
  void on_real_data(const TensorImpl* t);
  void on_concretize(const TensorImpl* t);

 private:
  graph::Value* value_of(const Tensor& t);
  std::unordered_map<const TensorImpl*, graph::Value*> values_;
  std::unordered_map<const Storage*, graph::Value*> by_storage_;  // detach() shares a fake's storage
  std::unordered_set<const graph::Value*> needs_grad_;  // values autograd would track
  std::vector<Tensor> keep_;  // every fake made, so no TensorImpl address is reused mid-trace
};

// Installs a tracer (dispatch mode, tensor hooks, symbolic guard recorder) for its lifetime.
class TraceScope {
 public:
  explicit TraceScope(Tracer& t);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};

// The tracer active on this thread (null outside a trace).
Tracer* active_tracer();

}  // namespace kiln::capture
