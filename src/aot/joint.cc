// joint: the forward and backward of a functional graph as one graph. The forward's nodes are
// re-run on fake tensors under a Recorder, which keeps a tape of the differentiable prims that
// touch a value needing a gradient; the tape is then walked backward calling each op's
// derivative formula (ordinary kiln-op code) on fakes, so the formulas' ops (decomposed to
// prims) land in the same graph.
#include <unordered_map>
#include <unordered_set>

#include "aot/aot.h"
#include "aot/recorder.h"
#include "graph/passes/passes.h"

namespace kiln::aot {
namespace {

struct TapeEntry {
  ops::Args args;
  std::vector<Tensor> inputs, outputs;
  std::vector<bool> needs;
  graph::Origin origin;  // of the forward node that called the prim: its derivative's nodes get it
};

}  // namespace

Joint build_joint(const graph::Graph& g, const std::vector<bool>& needs_grad) {
  KILN_CHECK(needs_grad.size() == g.inputs().size(), "internal: aot joint: ", needs_grad.size(), " flags for ",
             g.inputs().size(), " inputs");
  Joint j;
  j.graph = std::make_shared<graph::Graph>();
  graph::Graph& out = *j.graph;
  Recorder rec(out);
  std::unordered_map<const graph::Value*, Tensor> env;
  std::unordered_set<const TensorImpl*> grad_needed;
  std::vector<Tensor> primals;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const graph::Value* v = g.inputs()[i];
    Tensor f = rec.bind(out.add_input(v->spec, v->name));
    env[v] = f;
    primals.push_back(f);
    if (needs_grad[i]) {
      KILN_CHECK(is_floating(v->spec.dtype), "aot: input ", i, " needs a gradient but is not floating point");
      grad_needed.insert(f.impl());
    }
  }
  j.num_primals = primals.size();
  std::vector<TapeEntry> tape;
  bool taping = true;
  rec.on_prim = [&](const ops::Args& a, const std::vector<Tensor>& outs) {
    const ops::OpInfo& info = ops::op_info(a.op);
    if (!taping || !info.differentiable()) return;
    TapeEntry e{a, a.tensor_inputs(), outs, {}, out.current_origin()};
    bool any = false;
    for (const Tensor& t : e.inputs) e.needs.push_back(grad_needed.count(t.impl()) > 0), any |= e.needs.back();
    if (!any) return;
    for (const Tensor& t : outs)
      if (is_floating(t.dtype())) grad_needed.insert(t.impl());
    tape.push_back(std::move(e));
  };
  RecordScope scope(rec);
  // --- forward
  std::vector<std::pair<size_t, Tensor>> writes;  // input index, new value
  auto get = [&](const graph::Value* v) { return env.at(v); };
  for (const auto& n : g.nodes()) {
    graph::Graph::OriginScope origin(out, graph::origin_of(*n));
    if (n->kind == graph::NodeKind::Constant) {
      ops::SuspendDispatchMode real;
      env[n->outputs[0]] = rec.bind(out.add_constant(n->literal, n->wrapped));
      continue;
    }
    if (n->op == ops::OpId::copy_) {  // a write into an input (functional graphs have no other)
      const graph::Value* dst = std::get<graph::Value*>(n->args.at(0));
      KILN_CHECK(!dst->producer, "internal: aot joint: the graph is not functional (copy_ into ", n->name(), ")");
      size_t idx = size_t(std::find(g.inputs().begin(), g.inputs().end(), dst) - g.inputs().begin());
      KILN_CHECK_HINT(!needs_grad[idx], "write to a clone, or compile with the \"eager\" backend",
                      "aot: input ", idx, " needs a gradient and is written in place");
      Tensor val = env.at(std::get<graph::Value*>(n->args.at(1)));
      writes.push_back({idx, val});
      env[n->outputs[0]] = val;
      continue;
    }
    if (is_stop_gradient(*n)) {  // the same value, but a fresh fake: the tape never sees it need a gradient
      env[n->outputs[0]] = env.at(n->inputs().at(0)).detach();
      continue;
    }
    std::vector<ops::Arg> args;
    for (const graph::NodeArg& a : n->args) args.push_back(graph::box_arg(a, get));
    std::vector<Tensor> outs = rec.call(n->op, std::move(args));
    for (size_t k = 0; k < outs.size(); ++k) env[n->outputs[k]] = outs[k];
  }
  std::vector<graph::Value*> outputs;
  std::vector<Tensor> fwd_outs;
  for (const graph::Value* v : g.outputs()) fwd_outs.push_back(env.at(v));
  j.num_outputs = fwd_outs.size();
  for (const Tensor& t : fwd_outs) outputs.push_back(rec.value_of(t));
  for (auto& [idx, val] : writes) {
    j.mutated_inputs.push_back(idx);
    outputs.push_back(rec.value_of(val));
  }
  // --- backward: one tangent per distinct output that carries a gradient (not an input itself)
  taping = false;
  std::unordered_map<const TensorImpl*, Tensor> grads;
  auto accumulate = [&](const Tensor& t, const Tensor& gr) {
    auto [it, fresh] = grads.emplace(t.impl(), gr);
    if (!fresh) it->second = add(it->second, gr);
  };
  std::unordered_map<const TensorImpl*, int> tangent_of;
  std::vector<graph::Value*> tangent_values;
  for (const Tensor& t : fwd_outs) {
    const bool is_primal = std::any_of(primals.begin(), primals.end(), [&](const Tensor& p) { return p.is_same(t); });
    if (!grad_needed.count(t.impl()) || is_primal) {
      j.output_tangent.push_back(-1);
      continue;
    }
    auto [it, fresh] = tangent_of.emplace(t.impl(), int(tangent_values.size()));
    if (fresh) {
      TensorSpec spec = graph::normalized(t.spec());
      spec.strides.clear();
      spec.offset = 0;
      graph::Value* tv = out.add_input(graph::normalized(spec), "tangent" + std::to_string(it->second));
      tangent_values.push_back(tv);
      accumulate(t, rec.bind(tv));
    }
    j.output_tangent.push_back(it->second);
  }
  for (auto e = tape.rbegin(); e != tape.rend(); ++e) {
    graph::Origin backward = e->origin;  // the derivative's nodes: the forward node's origin, marked backward
    backward.backward = true;
    graph::Graph::OriginScope origin(out, backward);
    std::vector<Tensor> gs;
    bool any = false;
    for (const Tensor& o : e->outputs) {
      auto it = grads.find(o.impl());
      any |= it != grads.end();
      gs.push_back(it != grads.end() ? it->second : is_floating(o.dtype()) ? zeros_like(o) : Tensor());
    }
    if (!any) continue;
    const ops::OpInfo& info = ops::op_info(e->args.op);
    KILN_CHECK(info.derivative, "internal: aot joint: ", info.name, " has no derivative formula");
    ops::GradCtx ctx{e->args, e->inputs, e->outputs, gs, e->needs};
    std::vector<Tensor> in_grads = info.derivative(ctx);
    for (size_t i = 0; i < e->inputs.size() && i < in_grads.size(); ++i)
      if (e->needs[i] && in_grads[i].defined()) accumulate(e->inputs[i], in_grads[i]);
  }
  for (size_t i = 0; i < primals.size(); ++i) {
    if (!needs_grad[i]) continue;
    auto it = grads.find(primals[i].impl());
    if (it == grads.end()) continue;  // unused: no gradient (as eager's None)
    j.grad_inputs.push_back(i);
    outputs.push_back(rec.value_of(it->second));
  }
  out.set_outputs(outputs);
  graph::dce(out);
  // A decomposition inside a derivative formula may write a fresh buffer in place.
  for (const auto& n : out.nodes())
    if (n->kind == graph::NodeKind::Call && n->op == ops::OpId::copy_) {
      j.graph = std::make_shared<graph::Graph>(functionalize(out));
      break;
    }
  return j;
}

}  // namespace kiln::aot
