// decompose: composite calls -> the prims their decompositions call, by re-running every node
// on fake tensors under a Recorder (composites decompose there; prims are recorded as they are).
#include "aot/aot.h"
#include "aot/recorder.h"

namespace kiln::aot {

namespace {

graph::Graph decompose_with(const graph::Graph& g, const std::function<bool(ops::OpId)>& keep, bool mark_stop_gradients) {
  graph::Graph out;
  Recorder rec(out);
  rec.keep = keep;
  rec.mark_stop_gradients = mark_stop_gradients;
  std::unordered_map<const graph::Value*, Tensor> env;
  for (graph::Value* v : g.inputs()) env[v] = rec.bind(out.add_input(v->spec, v->name));
  auto get = [&](const graph::Value* v) { return env.at(v); };
  {
    RecordScope scope(rec);
    for (const auto& n : g.nodes()) {
      graph::Graph::OriginScope origin(out, graph::origin_of(*n));  // a composite's prims get its origin
      std::vector<Tensor> outs;
      if (n->kind == graph::NodeKind::Constant) {
        ops::SuspendDispatchMode real;
        outs = {rec.bind(out.add_constant(n->literal, n->wrapped))};
      } else {
        std::vector<ops::Arg> args;
        for (const graph::NodeArg& a : n->args) args.push_back(graph::box_arg(a, get));
        outs = rec.call(n->op, std::move(args));
      }
      KILN_CHECK(outs.size() == n->outputs.size(), "internal: aot decompose: ", n->name(), " gave ", outs.size(),
                 " outputs, the graph has ", n->outputs.size());
      for (size_t k = 0; k < outs.size(); ++k) env[n->outputs[k]] = outs[k];
    }
  }
  std::vector<graph::Value*> outputs;
  for (const graph::Value* v : g.outputs()) outputs.push_back(rec.value_of(env.at(v)));
  out.set_outputs(outputs);
  return out;
}

}  // namespace

graph::Graph decompose(const graph::Graph& g, const std::function<bool(ops::OpId)>& keep) {
  return decompose_with(g, keep, false);
}

graph::Graph decompose_for_joint(const graph::Graph& g) { return decompose_with(g, {}, true); }

}  // namespace kiln::aot
