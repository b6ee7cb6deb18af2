// Buffers live from their producer to their last reader; the plan drops its reference there, so
// the allocator hands the memory to the next buffer of that size (peak memory follows the live
// set, as the graph interpreter's).
#include "inductor/memory_plan.h"

#include <functional>
#include <set>

namespace kiln::inductor {

std::map<int, std::vector<int>> release_points(const Program& p) { return release_points(p, p.nodes); }

std::map<int, std::vector<int>> release_points(const Program& p, const std::vector<Node>& nodes) {
  std::vector<int> last(p.buffers.size(), -1);
  std::set<int> keep(p.outputs.begin(), p.outputs.end());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    for (int o : n.outputs) last[size_t(o)] = std::max(last[size_t(o)], int(i));
    for (int b : n.inputs) last[size_t(b)] = int(i);
    std::set<const Value*> seen;
    std::function<void(const Value*)> go = [&](const Value* v) {
      if (!seen.insert(v).second) return;
      if (v->kind == ValueKind::Load) last[size_t(v->buffer)] = int(i);
      for (const Value* a : v->args) go(a);
    };
    for (const Value* b : n.bodies) go(b);
  }
  std::map<int, std::vector<int>> out;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == BufferKind::Temp && !keep.count(int(b)) && last[b] >= 0) out[last[b]].push_back(int(b));
  return out;
}

int64_t peak_bytes(const Program& p, const std::vector<Node>& nodes) {
  auto bytes = [&](int b) {
    int64_t n = int64_t(itemsize(p.buffers[size_t(b)].dtype));
    for (const SymInt& s : p.buffers[size_t(b)].sizes) n *= std::max<int64_t>(s.hint(), 0);
    return n;
  };
  const auto released = release_points(p, nodes);
  int64_t live = 0, peak = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int o : nodes[i].outputs)
      if (p.buffers[size_t(o)].kind == BufferKind::Temp) live += bytes(o);
    peak = std::max(peak, live);
    auto it = released.find(int(i));
    if (it != released.end())
      for (int b : it->second) live -= bytes(b);
  }
  return peak;
}

}  // namespace kiln::inductor
