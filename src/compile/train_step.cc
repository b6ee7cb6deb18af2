// Training steps: what a backward() inside a compiled function becomes. Capture records the graph
// up to the backward and asks for its joint forward+backward graph through the builder installed
// here; it is AOT's (decompose_for_joint -> functionalize -> build_joint), which capture may not call
// itself. capture/train_step.cc splices the result into the trace (docs/compile.md).
#include <string>

#include "aot/aot.h"
#include "capture/hooks.h"
#include "capture/tracer.h"

namespace kiln {  // (not kiln::compile: that is the name of compile())
namespace {

capture::JointGraph joint_of(capture::Tracer& tracer, const graph::Graph& prefix, const std::vector<bool>& needs_grad) {
  graph::Graph prims = aot::decompose_for_joint(prefix);
  // The joint graph recomputes the forward: a random draw there would differ from the trace's.
  for (const auto& n : prims.nodes())
    if (n->kind == graph::NodeKind::Call && (ops::op_info(n->op).flags & ops::RANDOM))
      tracer.graph_break("backward() after a random op (" + std::string(n->name()) +
                         "): the traced backward would redraw it");
  aot::Joint j = aot::build_joint(aot::functionalize(prims), needs_grad);
  capture::JointGraph out{j.graph, j.num_primals, j.output_tangent, {}};
  // The gradients follow the forward's outputs and the new values of the inputs it writes.
  const size_t first_grad = j.num_outputs + j.mutated_inputs.size();
  for (size_t k = 0; k < j.grad_inputs.size(); ++k) out.grads.push_back({first_grad + k, j.grad_inputs[k]});
  return out;
}

[[maybe_unused]] const bool installed = (capture::set_joint_builder(&joint_of), true);

}  // namespace
}  // namespace kiln
