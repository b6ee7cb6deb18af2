// Custom ops: a kernel and a meta function registered at run time under a name ("mylib::vector_add"),
// callable like any op. Every call is the one ops.def op `custom(name, inputs, scalars)`: eager
// dispatch, autograd, capture (a graph node naming the op, no graph break) and the backends treat
// it as a prim whose meta, kernel and derivative are the registered functions. The tile layer
// registers tile kernels as ops through this (tile/op.h, kiln.tile.op); a layer that knows more
// about an op derives from CustomOp and finds it again with dynamic_cast (the compiler reads a
// tile op's program that way).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::ops {

struct CustomOp {
  virtual ~CustomOp() = default;
  std::string name;  // "namespace::name"
  // The outputs' specs for these inputs (which may be fake: it never reads data). A kiln::Error
  // it throws (wrong dtypes or shapes) reaches the caller with the op's name in front.
  std::function<std::vector<TensorSpec>(const TensorList& inputs, const std::vector<double>& scalars)> meta;
  // The outputs on real tensors; `specs` are what meta said (the results are checked against them).
  std::function<TensorList(const TensorList& inputs, const std::vector<double>& scalars,
                           const std::vector<TensorSpec>& specs)> kernel;
  // Optional: the gradients of the inputs (g.inputs), one per input, undefined where none.
  // Without it, backward through the op is an error naming it.
  std::function<TensorList(const GradCtx& g)> derivative;
};

// Registers (or replaces: a name registered again is the new op from then on) a custom op. The
// name must be "namespace::name" and the op must have a meta and a kernel.
void register_custom_op(std::shared_ptr<const CustomOp> op);
// The op registered under `name`, or null. It stays alive while the returned pointer does.
std::shared_ptr<const CustomOp> find_custom_op(const std::string& name);
// Calls it (through the dispatcher: autograd, capture and fake mode see the call).
TensorList call_custom_op(const std::string& name, const TensorList& inputs, const std::vector<double>& scalars = {});

}  // namespace kiln::ops
