// What capture needs from the layers above it, which install it at static initialization
// (src/compile/: the backend registry and the training-step stitching). Capture never includes
// aot or compile; they include this and register.
#pragma once
#include <kiln/compile/capture.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace kiln::capture {

class Tracer;

// The backend registered under `name`, in compile mode `mode` (CompileOptions::mode); throws
// kiln::Error naming the registered ones if none is, or for a mode it does not take.
using BackendLookup = Backend (*)(const std::string& name, const std::string& mode);
void set_backend_lookup(BackendLookup lookup);

// The joint forward+backward graph of the graph a trace recorded up to a backward() (the
// prefix: the trace's inputs, the backward's roots as outputs), which the tracer splices into
// the trace (train_step.cc).
struct JointGraph {
  std::shared_ptr<const graph::Graph> graph;  // inputs: the prefix's inputs, then tangents
  size_t num_primals = 0;                      // the prefix's inputs
  std::vector<int> output_tangent;  // per root (graph output k is root k's value): its tangent, -1 if none
  std::vector<std::pair<size_t, size_t>> grads;  // per gradient: (graph output, prefix input)
};
// Builds it, or throws: kiln::Error (the tracer turns it into a graph break) or, through
// tracer.graph_break, a break with its own reason.
using JointBuilder = JointGraph (*)(Tracer& tracer, const graph::Graph& prefix, const std::vector<bool>& needs_grad);
void set_joint_builder(JointBuilder builder);

}  // namespace kiln::capture
