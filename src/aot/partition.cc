// partition: splits a joint graph into forward and backward graphs. The values the backward
// reads that don't depend on tangents are a region P; saving a set of values is a vertex cut
// between the primals (and every node the backward must not recompute) and the backward's
// uses. Each value is split into in -> out with capacity = its bytes, so a minimum s-t cut is
// the cheapest set to save; everything between the cut and the backward is recomputed there.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <kiln/log.h>

#include "aot/aot.h"

namespace kiln::aot {
namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

// Values reachable backward from `roots`, not crossing `stop`.
std::unordered_set<const Value*> ancestors(const std::vector<Value*>& roots, const std::unordered_set<const Value*>& stop) {
  std::unordered_set<const Value*> seen;
  std::vector<const Value*> stack(roots.begin(), roots.end());
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (!seen.insert(v).second || stop.count(v) || !v->producer) continue;
    for (const Value* u : v->producer->inputs()) stack.push_back(u);
  }
  return seen;
}

// A graph of the nodes of `src` whose outputs are in `keep`, in order; `inputs` become its inputs.
std::shared_ptr<Graph> extract(const Graph& src, const std::vector<Value*>& inputs, const std::vector<Value*>& outputs,
                               const std::unordered_set<const Value*>& keep) {
  auto g = std::make_shared<Graph>();
  std::unordered_map<const Value*, Value*> map;
  for (Value* v : inputs) map[v] = g->add_input(v->spec, v->name);
  for (const auto& n : src.nodes()) {
    if (std::none_of(n->outputs.begin(), n->outputs.end(), [&](Value* o) { return keep.count(o) && !map.count(o); }))
      continue;
    graph::Graph::OriginScope origin(*g, n->origin);
    if (n->kind == graph::NodeKind::Constant) {
      map[n->outputs[0]] = g->add_constant(n->literal, n->wrapped);
      continue;
    }
    std::vector<graph::NodeArg> args = n->args;
    for (graph::NodeArg& a : args) {
      if (auto* v = std::get_if<Value*>(&a)) *v = map.at(*v);
      if (auto* l = std::get_if<graph::ValueList>(&a))
        for (Value*& e : *l)
          if (e) e = map.at(e);
    }
    std::vector<TensorSpec> specs;
    for (const Value* o : n->outputs) specs.push_back(o->spec);
    Node* m = g->add_node(n->op, std::move(args), specs);
    for (size_t k = 0; k < m->outputs.size(); ++k) map[n->outputs[k]] = m->outputs[k];
  }
  std::vector<Value*> outs;
  for (Value* v : outputs) outs.push_back(map.at(v));
  g->set_outputs(outs);
  return g;
}

// A primal or a view of one: saving it costs no memory (the caller holds the primal anyway).
bool aliases_primal(const Value* v) {
  while (v->producer && v->producer->kind == graph::NodeKind::Call &&
         ops::op_info(v->producer->op).kind == ops::OpKind::VIEW)
    v = std::get<Value*>(v->producer->args.at(0));
  return v->producer == nullptr;
}

int64_t total_bytes(const std::vector<Value*>& vs, bool count_primals = true) {
  int64_t b = 0;
  for (const Value* v : vs)
    if (count_primals || !aliases_primal(v)) b += value_bytes(v);
  return b;
}

}  // namespace

int64_t value_bytes(const Value* v) {
  int64_t n = 1;
  for (const SymInt& s : v->spec.sizes) n *= s.hint();
  return n * int64_t(itemsize(v->spec.dtype));
}

bool recomputable(const Node& n) {
  if (n.kind == graph::NodeKind::Constant) return true;
  const ops::OpInfo& info = ops::op_info(n.op);
  if (info.flags & (ops::RANDOM | ops::MUTATES)) return false;
  if (info.kind == ops::OpKind::VIEW) return true;
  // A composite left in the graph runs its own kernel: its cost is unknown here, so it is saved.
  if (info.kind == ops::OpKind::COMPOSITE) return false;
  switch (info.family) {
    case ops::OpFamily::POINTWISE: case ops::OpFamily::LAYOUT: case ops::OpFamily::CREATION:
      return true;  // one cheap pass over the output
    case ops::OpFamily::REDUCTION: {  // cheap to redo only when the input is not much bigger
      const Value* in = n.inputs().at(0);
      return value_bytes(in) <= 4 * value_bytes(n.outputs.at(0));
    }
    default:
      return false;  // linalg, sort, scans, indexing, data-dependent: never recomputed
  }
}

Partition partition(const Joint& j, const PartitionOptions& options) {
  const Graph& g = *j.graph;
  const double budget = options.activation_memory_budget;
  KILN_CHECK(budget >= 0 && budget <= 1, "aot: activation_memory_budget must be in [0, 1], got ", budget);
  const size_t num_fwd = j.num_outputs + j.mutated_inputs.size();
  std::vector<Value*> fwd_roots(g.outputs().begin(), g.outputs().begin() + long(num_fwd));
  std::vector<Value*> grad_roots(g.outputs().begin() + long(num_fwd), g.outputs().end());
  std::vector<Value*> primals(g.inputs().begin(), g.inputs().begin() + long(j.num_primals));
  std::vector<Value*> tangents(g.inputs().begin() + long(j.num_primals), g.inputs().end());
  // Tangent-dependent values: only the backward can compute them.
  std::unordered_set<const Value*> backward_only(tangents.begin(), tangents.end());
  for (const auto& n : g.nodes()) {
    const auto ins = n->inputs();
    if (std::any_of(ins.begin(), ins.end(), [&](const Value* u) { return backward_only.count(u); }))
      for (const Value* o : n->outputs) backward_only.insert(o);
  }
  // P: values the backward reads (directly or through recomputation) that the forward can compute.
  std::vector<const Value*> region;
  std::unordered_map<const Value*, int> index;
  for (const Value* v : ancestors(grad_roots, {}))
    if (!backward_only.count(v)) index[v] = 0;
  for (Value* v : g.inputs())
    if (index.count(v)) region.push_back(v);
  for (const auto& n : g.nodes())
    for (const Value* o : n->outputs)
      if (index.count(o)) region.push_back(o);
  for (size_t i = 0; i < region.size(); ++i) index[region[i]] = int(i);

  auto cut = [&](bool ban_all, const std::unordered_set<const Node*>& banned) {
    const int src = int(2 * region.size()), snk = src + 1;
    FlowNetwork net(snk + 1);
    for (size_t i = 0; i < region.size(); ++i) {
      const Value* v = region[i];
      const int vin = int(2 * i), vout = vin + 1;
      // Saving (a view of) a primal costs no memory: weight 1, a tie-breaker.
      net.add_edge(vin, vout, aliases_primal(v) ? 1 : std::max<int64_t>(value_bytes(v), 1));
      const Node* p = v->producer;
      if (!p || (p->kind == graph::NodeKind::Call && (ban_all || banned.count(p) || !recomputable(*p))))
        net.add_edge(src, vin, FlowNetwork::kInf);
      if (p)
        for (const Value* u : p->inputs()) net.add_edge(2 * index.at(u) + 1, vin, FlowNetwork::kInf);
    }
    for (const auto& n : g.nodes()) {
      if (!std::any_of(n->outputs.begin(), n->outputs.end(), [&](const Value* o) { return backward_only.count(o); }))
        continue;
      for (const Value* u : n->inputs())
        if (index.count(u)) net.add_edge(2 * index.at(u) + 1, snk, FlowNetwork::kInf);
    }
    for (const Value* v : grad_roots)
      if (index.count(v)) net.add_edge(2 * index.at(v) + 1, snk, FlowNetwork::kInf);
    net.max_flow(src, snk);
    std::vector<Value*> saved;
    for (size_t i = 0; i < region.size(); ++i)
      if (net.source_side(int(2 * i)) && !net.source_side(int(2 * i + 1))) saved.push_back(const_cast<Value*>(region[i]));
    return saved;
  };

  std::vector<Value*> saved = cut(budget >= 1, {});
  if (budget > 0 && budget < 1) {
    // Save more, most expensive recomputation first, while within the budget's share of the gap.
    const int64_t least = total_bytes(saved, false), most = total_bytes(cut(true, {}), false);
    const int64_t target = least + int64_t(budget * double(most - least));
    std::unordered_set<const Value*> saved_set(saved.begin(), saved.end());
    std::vector<const Node*> candidates;
    for (const auto& n : g.nodes())
      if (n->kind == graph::NodeKind::Call && index.count(n->outputs[0]) && !saved_set.count(n->outputs[0]) &&
          recomputable(*n))
        candidates.push_back(n);
    std::stable_sort(candidates.begin(), candidates.end(), [](const Node* a, const Node* b) {
      return value_bytes(a->outputs[0]) > value_bytes(b->outputs[0]);
    });
    std::unordered_set<const Node*> banned;
    for (size_t i = 0; i < candidates.size() && i < 64; ++i) {
      banned.insert(candidates[i]);
      std::vector<Value*> trial = cut(false, banned);
      if (total_bytes(trial, false) <= target) saved = std::move(trial);
      else banned.erase(candidates[i]);
    }
  }

  Partition p;
  p.num_saved = saved.size();
  p.saved_bytes = total_bytes(saved);
  p.saved_activation_bytes = total_bytes(saved, false);
  std::vector<Value*> fwd_outputs = fwd_roots;
  fwd_outputs.insert(fwd_outputs.end(), saved.begin(), saved.end());
  p.forward = extract(g, primals, fwd_outputs, ancestors(fwd_outputs, {}));
  std::unordered_set<const Value*> stop(saved.begin(), saved.end());
  stop.insert(tangents.begin(), tangents.end());
  const auto bwd = ancestors(grad_roots, stop);
  for (const Value* v : primals)
    KILN_CHECK(!bwd.count(v) || stop.count(v), "internal: aot partition: the backward reads an unsaved primal");
  std::vector<Value*> bwd_inputs = saved;
  bwd_inputs.insert(bwd_inputs.end(), tangents.begin(), tangents.end());
  p.backward = extract(g, bwd_inputs, grad_roots, bwd);
  for (const auto& n : g.nodes())
    if (n->kind == graph::NodeKind::Call && bwd.count(n->outputs[0]) && !stop.count(n->outputs[0]) &&
        !backward_only.count(n->outputs[0]))
      p.recomputed.push_back(n->name());
  return p;
}

}  // namespace kiln::aot
