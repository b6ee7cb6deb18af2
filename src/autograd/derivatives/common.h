// Shared helpers for derivative formulas.
#pragma once
#include <kiln/grad_mode.h>
#include <kiln/ops.h>

#include <functional>
#include <initializer_list>

#include "autograd/engine.h"
#include "ops/dispatch.h"

namespace kiln::autograd {

using ops::num;
// Whether this backward runs now on real CPU tensors, unrecorded (no create_graph, no capture,
// no fake tensors): then a derivative may compute its gradients with a fused eager CPU kernel
// (eager/cpu/nn/backward.h) instead of its formula's kiln ops, which graphs and other devices get.
inline bool fused_cpu_backward(std::initializer_list<std::reference_wrapper<const Tensor>> tensors) {
  if (is_grad_enabled() || ops::dispatch_mode()) return false;
  for (const Tensor& t : tensors)
    if (!t.defined() || t.is_fake() || !t.device().is_cpu()) return false;
  return true;
}

// grad reduced to the shape of input i (undoing broadcasting).
inline Tensor to_input(const ops::GradCtx& g, size_t i, const Tensor& grad) {
  return sum_to(grad, g.inputs[i].sym_sizes());
}

}  // namespace kiln::autograd
