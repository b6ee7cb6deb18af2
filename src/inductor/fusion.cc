// Fusion decisions.
//
// Vertical fusion: when a reader inlines a value's function (recomputing it in its own kernel)
// and when it loads the value from a buffer instead. The cost model counts what realizing saves:
// a buffer costs a write and a read per element and saves recomputing the function for every
// reader but one; inlining is free for a single reader and for index arithmetic (views,
// constants). A maximum fusion size keeps kernels (and compile times) bounded. Inlining never
// allocates, so it never raises peak memory.
#include <algorithm>
#include <functional>
#include <set>

#include "inductor/lower/lower.h"
#include "inductor/memory_plan.h"

namespace kiln::inductor {
namespace {
constexpr int kMaxFusionOps = 64;      // prims in one inlined function
constexpr int kRecomputeBudget = 4;    // prims recomputed across extra readers rather than stored
}  // namespace

bool should_realize(const Def& d, int readers) {
  if (d.buffer >= 0 || d.ops == 0) return false;
  if (d.ops > kMaxFusionOps) return true;
  return readers > 1 && (readers - 1) * d.ops > kRecomputeBudget;
}

}  // namespace kiln::inductor

namespace kiln::inductor {
namespace {

constexpr size_t kMaxOutputs = 8;  // stores in one horizontally fused kernel

std::set<int> loads_of(const Node& n) {
  std::set<int> out;
  std::set<const Value*> seen;
  std::function<void(const Value*)> go = [&](const Value* v) {
    if (!seen.insert(v).second) return;
    if (v->kind == ValueKind::Load) out.insert(v->buffer);
    for (const Value* a : v->args) go(a);
  };
  for (const Value* b : n.bodies) go(b);
  return out;
}

// Siblings: two pointwise nodes over the same index space (the same variables), the second not
// reading the first, both reading a buffer in common (read once instead of twice).
bool siblings(const Node& a, const Node& b) {
  if (a.kind != NodeKind::Pointwise || b.kind != NodeKind::Pointwise || a.vars != b.vars) return false;
  if (a.outputs.size() + b.outputs.size() > kMaxOutputs) return false;
  const std::set<int> la = loads_of(a), lb = loads_of(b);
  for (int o : a.outputs)
    if (lb.count(o)) return false;
  for (int x : lb)
    if (la.count(x)) return true;
  return false;
}

}  // namespace

// Horizontal fusion: a pointwise node joins an earlier sibling (up to kLookBack kernels back)
// when everything it reads is computed before that sibling and the merged program's peak memory
// (temporaries at their hints) is no higher than before.
void fuse_horizontal(Program& p) {
  constexpr size_t kLookBack = 8;
  std::vector<Node> nodes = std::move(p.nodes);
  std::vector<int> producer(p.buffers.size(), -1);  // node index (in `nodes`) writing each buffer
  auto reindex = [&] {
    std::fill(producer.begin(), producer.end(), -1);
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int o : nodes[i].outputs) producer[size_t(o)] = int(i);
  };
  reindex();
  for (size_t bi = 1; bi < nodes.size(); ++bi) {
    if (nodes[bi].kind != NodeKind::Pointwise) continue;
    const std::set<int> lb = loads_of(nodes[bi]);
    for (size_t back = 1; back <= kLookBack && back <= bi; ++back) {
      const size_t ai = bi - back;
      if (!siblings(nodes[ai], nodes[bi])) continue;
      bool ready = true;  // what B reads exists at A's place
      for (int x : lb) ready &= producer[size_t(x)] < int(ai);
      if (!ready) continue;
      std::vector<Node> trial;
      trial.reserve(nodes.size());
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (i == bi) continue;
        trial.push_back(nodes[i]);
        if (i == ai) {
          Node& a = trial.back();
          const Node& b = nodes[bi];
          a.outputs.insert(a.outputs.end(), b.outputs.begin(), b.outputs.end());
          a.bodies.insert(a.bodies.end(), b.bodies.begin(), b.bodies.end());
          a.origins.insert(a.origins.end(), b.origins.begin(), b.origins.end());
        }
      }
      if (peak_bytes(p, trial) > peak_bytes(p, nodes)) continue;
      nodes = std::move(trial);
      reindex();
      --bi;  // (the next node moved into this slot)
      break;
    }
  }
  p.nodes = std::move(nodes);
  for (size_t i = 0; i < p.nodes.size(); ++i)
    for (int o : p.nodes[i].outputs) p.buffers[size_t(o)].producer = int(i);
}

}  // namespace kiln::inductor
