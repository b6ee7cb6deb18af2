// Common subexpression elimination over one forward sweep. A later node equal to an earlier one
// (same op, same arguments after earlier merges) takes over the earlier node's outputs.
#include <map>

#include "graph/literal.h"
#include "graph/passes/passes.h"
#include "graph/schema.h"

namespace kiln::graph {
namespace {

bool same_call(const Node& a, const Node& b) {
  if (a.op != b.op || a.args.size() != b.args.size() || a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!arg_equal(a.args[i], b.args[i])) return false;
  return true;
}

bool same_constant(const Node& a, const Node& b) {
  if (a.wrapped != b.wrapped || !same_spec(a.outputs[0]->spec, b.outputs[0]->spec)) return false;
  const auto x = literal_elements(a.literal), y = literal_elements(b.literal);
  for (size_t i = 0; i < x.size(); ++i)
    if (!arg_equal(NodeArg(x[i]), NodeArg(y[i]))) return false;
  return true;
}

}  // namespace

void cse(Graph& g) {
  std::map<int, std::vector<Node*>> seen;  // by op id (constants under -1)
  std::vector<Node*> order;
  for (const auto& n : g.nodes()) order.push_back(n.get());
  for (Node* n : order) {
    const bool constant = n->kind == NodeKind::Constant;
    if (!constant) {
      const uint32_t flags = ops::op_info(n->op).flags;
      if (flags & ops::MUTATES) {
        seen.clear();  // what earlier nodes read may have changed
        continue;
      }
      if (flags & ops::RANDOM) continue;
    }
    std::vector<Node*>& bucket = seen[constant ? -1 : int(n->op)];
    Node* match = nullptr;
    for (Node* m : bucket)
      if (constant ? same_constant(*m, *n) : same_call(*m, *n)) match = m;
    if (!match) {
      bucket.push_back(n);
      continue;
    }
    for (size_t k = 0; k < n->outputs.size(); ++k) g.replace_all_uses(n->outputs[k], match->outputs[k]);
    g.erase_node(n);
  }
}

}  // namespace kiln::graph
