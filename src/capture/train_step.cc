// Training steps in one graph: backward() or grad() called inside a compiled function. The
// graph recorded so far is copied with the roots as its outputs, made into a joint
// forward+backward graph by the builder the layer above installs (src/compile/train_step.cc:
// AOT's joint graph, the derivative formulas traced on fakes), and the joint graph's nodes are
// appended to the trace, its primals bound to the trace's inputs. The gradients of lifted leaves
// (parameters) go to their .grad as fakes; Tracer::set_outputs makes them extra outputs the
// compiled call assigns to the real leaves (docs/compile.md).
#include <kiln/autograd.h>

#include <algorithm>
#include <unordered_map>

#include "capture/hooks.h"
#include "capture/tracer.h"

namespace kiln::capture {
namespace {

JointBuilder g_joint_builder = nullptr;

using ValueMap = std::unordered_map<const graph::Value*, graph::Value*>;

graph::NodeArg mapped(const graph::NodeArg& a, const ValueMap& m) {
  if (auto* v = std::get_if<graph::Value*>(&a)) return m.at(*v);
  if (auto* l = std::get_if<graph::ValueList>(&a)) {
    graph::ValueList out;
    for (graph::Value* v : *l) out.push_back(v ? m.at(v) : nullptr);
    return out;
  }
  return a;
}

// Appends src's nodes to dst, each keeping its origin (the user's op and line; backward marks);
// m must map src's inputs and gets every other value added.
void append_nodes(const graph::Graph& src, graph::Graph& dst, ValueMap& m) {
  for (const auto& n : src.nodes()) {
    graph::Graph::OriginScope origin(dst, n->origin);
    if (n->kind == graph::NodeKind::Constant) {
      m[n->outputs[0]] = dst.add_constant(n->literal, n->wrapped);
      continue;
    }
    std::vector<graph::NodeArg> args;
    for (const graph::NodeArg& a : n->args) args.push_back(mapped(a, m));
    std::vector<TensorSpec> specs;
    for (const graph::Value* v : n->outputs) specs.push_back(v->spec);
    graph::Node* copy = dst.add_node(n->op, std::move(args), std::move(specs));
    for (size_t k = 0; k < n->outputs.size(); ++k) m[n->outputs[k]] = copy->outputs[k];
  }
}

}  // namespace

void set_joint_builder(JointBuilder builder) { g_joint_builder = builder; }

void Tracer::note_set_grad(const Tensor& leaf) {
  if (restoring_) return;
  for (const auto& [l, g] : grad_originals)
    if (l.is_same(leaf)) return;
  grad_originals.push_back({leaf, leaf.grad()});
}

void Tracer::restore_grads() {
  restoring_ = true;
  for (auto& [leaf, g] : grad_originals) Tensor(leaf).set_grad(g);
  restoring_ = false;
}

void Tracer::trace_backward(const TensorList& roots, const TensorList& grad_roots, bool create_graph,
                            const TensorList* inputs, TensorList* input_grads, bool allow_unused) {
  if (create_graph) graph_break("backward with create_graph=true (double backward) inside a compiled function");
  KILN_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), "backward: ", roots.size(), " outputs but ",
             grad_roots.size(), " gradients");
  // The graph so far, with the roots as outputs.
  graph::Graph prefix;
  ValueMap to_prefix;
  std::vector<bool> needs;
  for (graph::Value* v : graph.inputs()) {
    to_prefix[v] = prefix.add_input(v->spec, v->name);
    needs.push_back(needs_grad_.count(v) > 0);
  }
  append_nodes(graph, prefix, to_prefix);
  std::vector<graph::Value*> root_values;
  for (const Tensor& r : roots) {
    graph::Value* v = value_of(r);
    KILN_CHECK_HINT(needs_grad_.count(v), "call requires_grad_() on the inputs you differentiate with respect to",
                    "element of the tensors passed to backward does not require grad and does not have a grad_fn");
    root_values.push_back(v);
  }
  std::vector<graph::Value*> prefix_outs;
  for (graph::Value* v : root_values) prefix_outs.push_back(to_prefix.at(v));
  prefix.set_outputs(prefix_outs);
  JointGraph joint;
  try {
    KILN_CHECK(g_joint_builder, "internal: no joint graph builder is installed (src/compile/ is not linked)");
    joint = g_joint_builder(*this, prefix, needs);
  } catch (const GraphBreak&) {
    throw;
  } catch (const Error& e) {
    graph_break("backward() inside the compiled function: " + e.message());
  }
  // Bind the joint graph's primals to the trace's inputs, its tangents to the root gradients.
  ValueMap to_trace;
  const auto& jin = joint.graph->inputs();
  for (size_t i = 0; i < joint.num_primals; ++i) to_trace[jin[i]] = graph.inputs()[i];
  for (size_t k = 0; k < roots.size(); ++k) {
    int t = joint.output_tangent.at(k);
    if (t < 0 || to_trace.count(jin[joint.num_primals + size_t(t)])) continue;
    // ones(), not ones_like(root): the recorded root stays unread (dead, see below).
    Tensor g = grad_roots.empty() || !grad_roots[k].defined()
                   ? ones(roots[k].sym_sizes(), roots[k].dtype(), roots[k].device())
                   : grad_roots[k];
    to_trace[jin[joint.num_primals + size_t(t)]] = value_of(g);
  }
  append_nodes(*joint.graph, graph, to_trace);
  // Later uses of a root (returning the loss) read the joint graph's copy, so the recorded
  // forward, if nothing else reads it, is dead code (Tracer::set_outputs removes it).
  for (size_t k = 0; k < roots.size(); ++k) {
    graph::Value* v = to_trace.at(joint.graph->outputs().at(k));
    if (!graph::same_spec(v->spec, root_values[k]->spec)) continue;
    values_[roots[k].impl()] = v;
    by_storage_[roots[k].impl()->storage.get()] = v;
  }
  std::unordered_map<size_t, Tensor> grads;  // trace input index -> gradient fake
  for (const auto& [output, input] : joint.grads) grads[input] = bind_fake(to_trace.at(joint.graph->outputs()[output]));
  train_step = true;

  if (inputs) {  // grad(): the gradients are returned, no .grad changes
    for (const Tensor& in : *inputs) {
      graph::Value* v = value_of(in);
      auto pos = std::find(graph.inputs().begin(), graph.inputs().end(), v);
      if (pos == graph.inputs().end())
        graph_break("grad() with respect to a tensor computed inside the compiled function");
      auto it = grads.find(size_t(pos - graph.inputs().begin()));
      KILN_CHECK_HINT(it != grads.end() || allow_unused, "pass allow_unused=true",
                      "grad: one of the differentiated tensors appears to not have been used in the graph");
      input_grads->push_back(it != grads.end() ? it->second : Tensor());
    }
    return;
  }
  // backward(): accumulate into the leaves' .grad, as AccumulateGrad does.
  for (auto& [index, g] : grads) {
    if (index < num_args_)
      graph_break("backward() into an argument of the compiled function that requires grad");
    Tensor leaf = lifted.at(index - num_args_);
    if (!leaf.is_leaf()) graph_break("backward() through a tensor with history from outside the compiled function");
    note_set_grad(leaf);
    Tensor old = leaf.grad();
    if (!old.defined()) {
      leaf.set_grad(g);
    } else if (!old.is_fake()) {
      NoGradGuard no_grad;
      old.add_(g);  // the real .grad is a lifted input, written in place
    } else {
      leaf.set_grad(add(old, g));
    }
  }
}

}  // namespace kiln::capture
