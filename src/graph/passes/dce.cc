// Dead code elimination: one backward sweep, since erasing a node frees its inputs' uses.
#include "graph/passes/passes.h"

namespace kiln::graph {

void dce(Graph& g) {
  const NodeRange nodes = g.nodes();
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {  // erasing *it keeps `it` valid
    Node* n = *it;
    if (n->kind == NodeKind::Call && (ops::op_info(n->op).flags & ops::MUTATES)) continue;
    bool used = false;
    for (const Value* o : n->outputs) used = used || g.has_uses(o);
    if (!used) g.erase_node(n);
  }
}

}  // namespace kiln::graph
