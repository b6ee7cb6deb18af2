// Runs a graph with eager kernels. Each value is dropped after its last use, so peak memory
// follows the graph's live set rather than its size.
#include <kiln/autograd.h>

#include <map>
#include <unordered_map>

#include "autograd/engine.h"
#include "graph/graph.h"
#include "sym/expr.h"

namespace kiln::graph {
namespace {

using SymEnv = std::map<std::string, int64_t>;

SymInt concrete(const SymInt& s, const SymEnv& env) {
  return s.is_symbolic() ? SymInt(sym::evaluate(s.expr(), env)) : s;
}

// Size arguments with symbols (view(%x, [s0, 4])) get the values the inputs bind them to.
ops::Arg concrete(ops::Arg a, const SymEnv& env) {
  if (auto* s = std::get_if<SymInt>(&a)) return concrete(*s, env);
  if (auto* l = std::get_if<SymShape>(&a)) {
    for (SymInt& s : *l) s = concrete(s, env);
  }
  return a;
}

}  // namespace

std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs) {
  KILN_CHECK(inputs.size() == g.inputs().size(), "graph interpret: the graph takes ", g.inputs().size(),
             " inputs, got ", inputs.size());
  std::unordered_map<const Value*, const Node*> last_use;
  for (const Node* n : g.nodes()) each_input(*n, [&](const Value* v) { last_use[v] = n; });
  std::unordered_map<const Value*, Tensor> env;
  SymEnv symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value* v = g.inputs()[i];
    const Tensor& t = inputs[i];
    KILN_CHECK(t.defined(), "graph interpret: input ", i, " is undefined");
    KILN_CHECK(t.dtype() == v->spec.dtype && t.dim() == int64_t(v->spec.sizes.size()), "graph interpret: input ", i,
               " is ", name(t.dtype()), shape_str(t.sym_sizes()), " but the graph expects ", spec_str(v->spec));
    env[v] = t;
    for (size_t d = 0; d < v->spec.sizes.size(); ++d) {  // a symbol is bound by the input dim that is it
      const SymInt& s = v->spec.sizes[d];
      if (s.is_symbolic() && s.expr()->kind == sym::Kind::Symbol) symbols[s.expr()->name] = t.size(int64_t(d));
    }
  }
  auto get = [&](const Value* v) -> Tensor {
    auto it = env.find(v);
    KILN_CHECK(it != env.end(), "graph interpret: value #", v->id, " is used before it is computed");
    return it->second;
  };
  size_t i = 0;
  for (const Node* np : g.nodes()) {
    const Node& n = *np;
    std::vector<Tensor> outs;
    if (n.kind == NodeKind::Constant) {
      outs = {n.literal};
    } else {
      std::vector<ops::Arg> args;
      for (const NodeArg& a : n.args) args.push_back(symbols.empty() ? box_arg(a, get) : concrete(box_arg(a, get), symbols));
      // An in-place method (x.add_(y)) is captured as its out-of-place op and a copy_ into x. The
      // eager method keeps x's old value for the op's backward before the copy overwrites it, and
      // so must this copy_, or that backward finds x modified.
      if (n.op == ops::OpId::copy_ && is_grad_enabled())
        autograd::save_before_overwrite(std::get<Tensor>(args.at(0)), std::get<Tensor>(args.at(1)));
      outs = ops::call(n.op, std::move(args));
    }
    KILN_CHECK(outs.size() == n.outputs.size(), "graph interpret: node ", i, " (", n.name(), ") returned ",
               outs.size(), " tensors; the graph has ", n.outputs.size(), " outputs for it");
    for (size_t k = 0; k < outs.size(); ++k)
      if (g.has_uses(n.outputs[k])) env[n.outputs[k]] = std::move(outs[k]);
    for (const Value* v : n.inputs())
      if (last_use[v] == np && !g.is_output(v)) env.erase(v);
    ++i;
  }
  std::vector<Tensor> result;
  for (const Value* v : g.outputs()) result.push_back(get(v));
  return result;
}

}  // namespace kiln::graph
