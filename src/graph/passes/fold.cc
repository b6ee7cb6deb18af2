// Constant folding and algebraic identities, in one forward sweep (folded results are
// constants by the time later nodes are looked at).
#include <kiln/autograd.h>

#include <algorithm>

#include "graph/literal.h"
#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

constexpr int64_t kMaxFoldElements = 64;  // larger results stay computed: constants live in the graph

bool is_constant(const Value* v) { return v->producer && v->producer->kind == NodeKind::Constant; }

// A result that can become a constant with exactly the node's spec.
bool foldable_output(const Value* v) {
  int64_t n = 1;
  for (const SymInt& s : v->spec.sizes) {
    if (s.is_symbolic()) return false;
    n *= s.hint();
  }
  return n <= kMaxFoldElements && v->spec.device.is_cpu() && is_contiguous_spec(v->spec) &&
         !v->spec.offset.is_symbolic() && v->spec.offset.hint() == 0;
}

bool try_evaluate(Graph& g, Node* n) {
  const uint32_t flags = ops::op_info(n->op).flags;
  if (flags & (ops::RANDOM | ops::MUTATES | ops::DATADEP)) return false;
  const std::vector<Value*> ins = n->inputs();
  if (ins.empty()) return false;
  for (const Value* v : ins)
    if (!is_constant(v)) return false;
  for (const Value* o : n->outputs)
    if (!foldable_output(o)) return false;
  std::vector<ops::Arg> args;
  for (const NodeArg& a : n->args) args.push_back(box_arg(a, [](const Value* v) { return v->producer->literal; }));
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;
    outs = ops::call(n->op, std::move(args));
  }
  if (outs.size() != n->outputs.size()) return false;
  for (size_t k = 0; k < outs.size(); ++k)
    if (!same_spec(outs[k].spec(), n->outputs[k]->spec)) return false;
  for (size_t k = 0; k < outs.size(); ++k) g.replace_all_uses(n->outputs[k], g.add_constant(outs[k], false, n));
  return true;
}

// Whether v is a constant whose every element equals `x`.
bool constant_equal_to(const Value* v, double x) {
  if (!is_constant(v)) return false;
  for (const Scalar& s : literal_elements(v->producer->literal))
    if (s.to_double() != x) return false;
  return true;
}

// The identity rewrite table: (op, which operand is the identity element, its value).
struct Identity {
  ops::OpId op;
  int constant_arg;  // the other tensor argument (0 or 1) is the one that survives
  double value;
};
const Identity kIdentities[] = {
    {ops::OpId::mul, 1, 1.0}, {ops::OpId::mul, 0, 1.0}, {ops::OpId::add, 1, 0.0},
    {ops::OpId::add, 0, 0.0}, {ops::OpId::sub, 1, 0.0}, {ops::OpId::div, 1, 1.0},
};

bool try_identity(Graph& g, Node* n) {
  if (n->outputs.size() != 1 || g.is_output(n->outputs[0])) return false;  // outputs stay fresh tensors
  if (n->op == ops::OpId::div && !std::holds_alternative<std::monostate>(n->args.at(2))) return false;  // rounding
  for (const Identity& id : kIdentities) {
    if (id.op != n->op) continue;
    Value* c = std::get<Value*>(n->args.at(id.constant_arg));
    Value* x = std::get<Value*>(n->args.at(1 - id.constant_arg));
    // The result must be x itself: same dtype, shape and layout (no promotion or broadcast).
    if (constant_equal_to(c, id.value) && same_spec(x->spec, n->outputs[0]->spec)) {
      g.replace_all_uses(n->outputs[0], x);
      return true;
    }
  }
  return false;
}

}  // namespace

void fold(Graph& g) {
  for (Node* n : g.nodes()) {  // erasing n, and the constants before it, keeps the iteration valid
    if (n->kind != NodeKind::Call) continue;
    if (!try_evaluate(g, n) && !try_identity(g, n)) continue;
    std::vector<Value*> ins = n->inputs();
    std::sort(ins.begin(), ins.end());
    ins.erase(std::unique(ins.begin(), ins.end()), ins.end());
    g.erase_node(n);
    for (Value* v : ins)  // constants only this node read are dead now
      if (is_constant(v) && !g.has_uses(v)) g.erase_node(v->producer);
  }
}

}  // namespace kiln::graph
