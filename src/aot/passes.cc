// The aot passes in the pass manager's table (graph/pass_manager.h), for kiln-opt and the golden
// tests. The graph layer can't include aot, so aot registers them:
//   decompose      composite ops -> prims
//   functionalize  copy_ and writes through views -> functional ops
//   joint          the joint forward+backward graph (every floating input needs a gradient)
//   partition      the joint graph -> "forward" and "backward" graphs (after joint)
#include "aot/aot.h"
#include "graph/pass_manager.h"

namespace kiln::aot {
namespace {

void joint_pass(graph::Module& m) {
  KILN_CHECK(m.graphs.size() == 1, "joint: needs one graph, the pipeline has ", m.graphs.size());
  const graph::Graph& g = *m.graphs[0].graph;
  std::vector<bool> needs_grad;
  for (const graph::Value* v : g.inputs()) needs_grad.push_back(is_floating(v->spec.dtype));
  Joint j = build_joint(g, needs_grad);
  m.graphs = {{"joint", j.graph}};
  m.state = std::move(j);
}

void partition_pass(graph::Module& m) {
  const Joint* j = std::any_cast<Joint>(&m.state);
  KILN_CHECK_HINT(j && m.graphs.size() == 1 && m.graphs[0].graph == j->graph,
                  "run joint before it, e.g. 'decompose | functionalize | joint | partition'",
                  "partition: needs the joint graph that the joint pass made");
  Partition p = partition(*j);
  m.graphs = {{"forward", p.forward}, {"backward", p.backward}};
  m.state.reset();
}

[[maybe_unused]] const bool registered = [] {
  graph::register_pass({"decompose", "composite ops -> the prims of their decompositions",
                        [](graph::Graph& g) { g = decompose(g); }, nullptr});
  graph::register_pass({"functionalize", "copy_ and writes through views -> functional ops (input writes at the end)",
                        [](graph::Graph& g) { g = functionalize(g); }, nullptr});
  graph::register_pass({"joint", "the joint forward+backward graph; every floating input needs a gradient", nullptr,
                        joint_pass});
  graph::register_pass({"partition", "splits the joint graph into forward and backward graphs (after joint)", nullptr,
                        partition_pass});
  return true;
}();

}  // namespace
}  // namespace kiln::aot
