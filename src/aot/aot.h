// AOT autograd: turns a captured graph into a functional, prim-level joint forward+backward
// graph and splits it into a forward and a backward graph (docs/aot.md). One pass per file:
//   decompose.cc     composite ops -> prims (re-traced through their decompositions)
//   functionalize.cc copy_ and writes through views -> functional ops; input writes at the end
//   joint.cc         forward + derivative formulas traced on fake tensors into one graph
//   partition.cc     min-cut split of the joint graph into forward and backward graphs
//   backend.cc       the "aot_eager" backend and the autograd node that runs the backward
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "graph/graph.h"

namespace kiln::aot {

// A prim-only copy of g: every composite call is replaced by the prims its decomposition
// calls (on fake tensors). Throws kiln::Error for data-dependent ops. Composites for which
// `keep` answers true stay whole (an exporter that maps them directly: kiln.onnx).
graph::Graph decompose(const graph::Graph& g, const std::function<bool(ops::OpId)>& keep = {});
// decompose for build_joint: a detach() inside a decomposition (log_softmax's row max) becomes an
// aot::stop_gradient node (recorder.h), which build_joint gives no derivative and drops.
graph::Graph decompose_for_joint(const graph::Graph& g);

// A copy of g without copy_ into intermediates and without writes through views: the written
// value replaces later uses, and a write into a view becomes an index_put into its base.
// Writes into graph inputs are applied by copy_ nodes at the end of the graph; an output that
// is a view of an input is taken from the input after those writes (so it still aliases it).
graph::Graph functionalize(const graph::Graph& g);

// The joint forward+backward graph of a functional prim graph.
//   inputs:  the forward's inputs (primals), then one tangent per differentiable output
//   outputs: forward outputs, new values of mutated inputs, gradients of the primals
struct Joint {
  std::shared_ptr<graph::Graph> graph;
  size_t num_primals = 0;
  size_t num_outputs = 0;               // the forward's own outputs
  std::vector<size_t> mutated_inputs;   // primal index per new-value output (applied by copy_)
  std::vector<size_t> grad_inputs;      // primal index per gradient output
  std::vector<int> output_tangent;      // per forward output: its tangent's index, -1 if none
  size_t num_tangents() const { return graph->inputs().size() - num_primals; }
};
// needs_grad: per input of g, whether it wants a gradient. g must be functional (copy_ only
// into inputs, after every other node). Its aot::stop_gradient nodes (decompose_for_joint) stop
// the gradient and are not in the joint graph.
Joint build_joint(const graph::Graph& g, const std::vector<bool>& needs_grad);

// The forward and backward graphs of a joint graph.
//   forward  inputs: primals; outputs: forward outputs, mutated-input values, then saved values
//   backward inputs: saved values, then tangents; outputs: the gradients (Joint::grad_inputs)
struct Partition {
  std::shared_ptr<graph::Graph> forward, backward;
  size_t num_saved = 0;
  int64_t saved_bytes = 0;             // every saved value
  int64_t saved_activation_bytes = 0;  // saved values that are not (views of) primals, which the caller holds anyway
  std::vector<std::string> recomputed;  // names of the nodes the backward recomputes
};
struct PartitionOptions {
  // 0: recompute everything allowed (least memory); 1: save every value the backward reads
  // (no recomputation, fastest); in between: save more until this fraction of the gap is used.
  double activation_memory_budget = 0.0;
};
Partition partition(const Joint& j, const PartitionOptions& options = {});
// Bytes of a value (sizes taken at their hints).
int64_t value_bytes(const graph::Value* v);
// Whether the backward may recompute this node instead of loading its saved output.
bool recomputable(const graph::Node& n);

// Maximum flow / minimum cut on a small directed graph (Dinic).
class FlowNetwork {
 public:
  static constexpr int64_t kInf = int64_t(1) << 60;
  explicit FlowNetwork(int nodes);
  void add_edge(int from, int to, int64_t capacity);
  int64_t max_flow(int source, int sink);
  // After max_flow: whether v is on the source side of a minimum cut.
  bool source_side(int v) const;

 private:
  struct Edge {
    int to;
    int64_t cap;
  };
  bool levels(int s, int t);
  int64_t push(int v, int t, int64_t f);
  std::vector<Edge> edges_;
  std::vector<std::vector<int>> adj_;
  std::vector<int> level_, it_;
};

// The "aot_eager" backend: joint graph, partition, both graphs run by graph::interpret; the
// forward becomes one autograd node whose backward runs the backward graph.
using GraphFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
// What a call of a compiled graph needs of its joint graph, the graphs aside (Joint's fields of
// the same names): what a whole-graph cache keeps per requires-grad pattern.
struct Signature {
  size_t num_outputs = 0, num_tangents = 0;
  std::vector<size_t> mutated_inputs, grad_inputs;
  std::vector<int> output_tangent;
};
Signature signature(const Joint& j);
template <class A>
void fields(A& a, Signature& s) { a(s.num_outputs, s.num_tangents, s.mutated_inputs, s.grad_inputs, s.output_tangent); }
// The compiled graphs of one requires-grad pattern: forward and backward (all false, inference:
// the functional graph as `forward`, no backward, an empty signature).
struct CompiledPlan {
  Signature sig;
  GraphFn forward, backward;
};
struct AotOptions {
  PartitionOptions partition;
  // Compiles the functional, forward and backward graphs (a backend's code generator); unset:
  // graph::interpret runs them.
  std::function<GraphFn(std::shared_ptr<const graph::Graph>)> compile_graph;
  // Take the budget from aot::activation_memory_budget() when a plan is built instead (the
  // "aot_eager" backend, registered by src/compile/backends.cc).
  bool use_global_budget = false;
  // Whole compiled graphs (the "inductor" backend's disk cache, src/compile/backends.cc): asked
  // first for a requires-grad pattern's plan; null: AOT builds it (decomposing the graph only
  // then) and tells `built_plan` which graphs it compiled (backward null for inference).
  std::function<std::shared_ptr<const CompiledPlan>(const std::vector<bool>& needs)> load_plan;
  std::function<void(const std::vector<bool>& needs, const Signature&, const graph::Graph* forward,
                     const graph::Graph* backward)> built_plan;
};
GraphFn compile_aot(std::shared_ptr<const graph::Graph> g, const AotOptions& options = {});

}  // namespace kiln::aot
