// Reverse-mode autograd: the graph of Nodes recorded as differentiable ops run, and the engine
// that walks it backward. Derivative formulas themselves live in derivatives/*.cc, written with
// kiln ops (so AOT autograd can trace them later).
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <memory>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::autograd {

struct Node;

// Where a gradient goes: input slot `input_nr` of `fn`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
};

struct Node : std::enable_shared_from_this<Node> {
  virtual ~Node();  // frees the graph behind it iteratively (see release_node)
  // grads: one per output of the forward op (the node's inputs in the backward direction).
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grads) = 0;
  virtual std::string name() const = 0;
  virtual void release() {}  // drop saved tensors (retain_graph=false)

  std::vector<Edge> next;                      // one per differentiable input of the forward op
  std::vector<std::vector<Hook>> pre_hooks;    // per output: hooks on that output's gradient
  uint64_t seq = 0;                            // creation order; later nodes run first
  size_t num_outputs = 1;
};

// Accumulates into a leaf tensor's .grad().
struct AccumulateGrad : Node {
  std::shared_ptr<TensorImpl> var;
  std::vector<Hook> hooks;
  explicit AccumulateGrad(std::shared_ptr<TensorImpl> v) : var(std::move(v)) {}
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override { return "AccumulateGrad"; }
};

// The backward of one op call, through the op's derivative formula.
struct OpNode : Node {
  ops::Args saved;                   // the forward call's arguments
  std::vector<Tensor> inputs;        // saved.tensor_inputs()
  std::vector<Tensor> outputs;       // detached aliases of the forward outputs
  std::vector<bool> input_needs_grad;
  std::vector<uint64_t> saved_versions;  // storage versions of the inputs when saved
  std::vector<uint64_t> output_versions;  // and of the outputs
  bool released = false;
  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override;
  std::string name() const override;
  void release() override;
};

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<Node> grad_fn;
  uint32_t output_nr = 0;
  std::weak_ptr<AccumulateGrad> accumulator;
  std::vector<Hook> leaf_hooks;  // hooks registered before an accumulator existed
  Tensor view_base;  // a view's base (the start of its chain of views): in-place writes into the view rebase it
  uint64_t view_version = 0;  // the storage version its history is up to date with (a view's history goes stale
                              // when the storage is written through the base or another view)
};

// Drops one reference to a node. A graph is a chain of nodes (node -> edge -> node, or node ->
// saved tensor -> its grad_fn): freeing it by recursion would overflow the C stack on a chain of
// 1e5 ops, so nodes freed while another is being freed wait in a list that the outermost call empties.
void release_node(std::shared_ptr<Node>&& n);

bool any_requires_grad(const ops::Args& a);
bool requires_grad(const Tensor& t);
// Runs a differentiable op and records its node (or differentiates through its decomposition).
std::vector<Tensor> call_with_grad(const ops::Args& a);
// The edge a gradient for t should flow into (its grad_fn, or its leaf accumulator).
Edge gradient_edge(const Tensor& t);

void run_backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph,
                  const TensorList* inputs, TensorList* input_grads, bool allow_unused);

// Before self is overwritten in place with `result` (an in-place method), makes the node that
// computed result keep its own copy of self if it saved it.
void save_before_overwrite(const Tensor& self, const Tensor& result);
// Before self is written in place: the node that produced self keeps a copy of its saved output.
void before_inplace_write(const Tensor& self);
// Records that `view` (the output of a view op, made with grad mode on) is a view of `base`.
void note_view(const Tensor& base, const Tensor& view);

// Set by compile()'s tracer while it runs (capture/train_step.cc): backward()/grad() on traced
// (fake) tensors are traced into the graph instead of run, and a real tensor's .grad being
// replaced mid-trace is noted (the trace undoes it; the compiled call redoes it).
struct TraceHooks {
  std::function<void(const TensorList& roots, const TensorList& grad_roots, bool create_graph,
                     const TensorList* inputs, TensorList* input_grads, bool allow_unused)>
      backward;
  std::function<void(const Tensor& t)> before_set_grad;
};
TraceHooks& trace_hooks();  // this thread's

// A fresh creation-order number for a Node made outside this file (aot's compiled-graph node).
uint64_t next_sequence_nr();

// Reduces a gradient of a broadcast result back to the shape of the operand that was broadcast.
Tensor sum_to(const Tensor& grad, const SymShape& shape);

}  // namespace kiln::autograd
