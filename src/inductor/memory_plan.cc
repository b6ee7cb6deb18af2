// Buffers live from their producer to their last reader; the plan drops its reference there, so
// the allocator hands the memory to the next buffer of that size (peak memory follows the live
// set, as the graph interpreter's).
#include "inductor/memory_plan.h"

#include <functional>
#include <set>

namespace kiln::inductor {

std::map<int, std::vector<int>> release_points(const Program& p) {
  std::vector<int> last(p.buffers.size(), -1);
  std::set<int> keep(p.outputs.begin(), p.outputs.end());
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node& n = p.nodes[i];
    for (int o : n.outputs) last[size_t(o)] = std::max(last[size_t(o)], int(i));
    for (int b : n.inputs) last[size_t(b)] = int(i);
    if (!n.body) continue;
    std::set<const Value*> seen;
    std::function<void(const Value*)> go = [&](const Value* v) {
      if (!seen.insert(v).second) return;
      if (v->kind == ValueKind::Load) last[size_t(v->buffer)] = int(i);
      for (const Value* a : v->args) go(a);
    };
    go(n.body);
  }
  std::map<int, std::vector<int>> out;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == BufferKind::Temp && !keep.count(int(b)) && last[b] >= 0) out[last[b]].push_back(int(b));
  return out;
}

}  // namespace kiln::inductor
