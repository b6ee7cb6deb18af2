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
  std::optional<ExplainReport::Break> brk;  // why the trace stopped early, and the user's line
  bool brk_runs_eagerly = false;  // the break is one lazy segments cannot follow either: run eagerly
  bool grad_enabled = true;  // grad mode when the trace began: the graph runs in this one mode
  // Inside no_grad (in a trace begun with grad on), ops read an input that needs grad through a
  // graph input of its own, bound on each call to that input detached (alias, source: indices
  // of graph inputs): the region records no history, as eagerly, while the graph runs with grad.
  // detach() of such an input is that alias too.
  std::vector<std::pair<size_t, size_t>> no_grad_inputs;
  std::vector<std::shared_ptr<const ExternalGuards>> external;  // add_external_guards during the trace

  // A fake stand-in for argument tensor `real`; the given dims get the given symbols.
  Tensor add_input(const Tensor& real, const std::vector<SymbolSource>& symbols, const std::string& name);
  // Marks the function's results as the graph's outputs.
  void set_outputs(const std::vector<Tensor>& outs);

  std::optional<std::vector<Tensor>> intercept(const ops::Args& a) override;

  // --- training steps (train_step.cc): backward() inside the function
  // A real leaf whose .grad the compiled call sets: to graph output `output` (-1: to `value`).
  struct GradResult {
    Tensor leaf;
    int output = -1;
    Tensor value;
  };
  std::vector<GradResult> grad_results;  // filled by set_outputs
  // Real leaves whose .grad the trace changed, with the .grad they had (the trace restores it;
  // the compiled graph is valid only while each leaf's .grad is still that tensor).
  std::vector<std::pair<Tensor, Tensor>> grad_originals;
  bool train_step = false;  // a backward was traced: the graph runs with grad mode off
  void trace_backward(const TensorList& roots, const TensorList& grad_roots, bool create_graph,
                      const TensorList* inputs, TensorList* input_grads, bool allow_unused);
  void note_set_grad(const Tensor& leaf);
  // Puts back the .grad of every leaf the trace changed (idempotent).
  void restore_grads();

  // Records a break and throws GraphBreak.
  [[noreturn]] void graph_break(const std::string& reason);
  void on_fake_data(const TensorImpl* t);
  void on_real_data(const TensorImpl* t);
  void on_concretize(const TensorImpl* t);

 private:
  graph::Value* value_of(const Tensor& t);
  graph::Value* no_grad_alias(graph::Value* v);
  Tensor bind_fake(graph::Value* v);
  bool restoring_ = false;
  size_t num_args_ = 0;  // graph inputs made by add_input (the lifted ones follow)
  std::unordered_map<const TensorImpl*, graph::Value*> values_;
  std::unordered_map<const Storage*, graph::Value*> by_storage_;  // detach() shares a fake's storage
  std::unordered_set<const graph::Value*> needs_grad_;  // values autograd would track
  std::unordered_map<const graph::Value*, graph::Value*> no_grad_aliases_;  // by their source
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
