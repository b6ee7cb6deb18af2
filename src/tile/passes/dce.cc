// Dead-code elimination: an op without side effects (no store or atomic, in it or its regions)
// whose results are all unused is removed, and with it whatever only it used. Loads are pure.
#include "tile/passes/passes.h"

namespace kiln::tile {
namespace {

void drop_uses(const Op& op, std::map<const Value*, int>& uses) {
  for (const Value* v : op.operands) --uses[v];
  for (const Region& r : op.regions)
    for (const auto& inner : r.ops) drop_uses(*inner, uses);
}

// Later ops first, so a chain of dead ops goes in one sweep.
void sweep(Region& r, std::map<const Value*, int>& uses) {
  for (size_t i = r.ops.size(); i-- > 0;) {
    Op& op = *r.ops[i];
    bool dead = op.code != OpCode::Yield && !op.has_side_effects();
    for (const Value* v : op.results) dead = dead && uses[v] == 0;
    if (dead) {
      drop_uses(op, uses);
      r.ops.erase(r.ops.begin() + std::ptrdiff_t(i));
      continue;
    }
    for (Region& sub : op.regions) sweep(sub, uses);
  }
}

}  // namespace

void dce(Program& p) {
  std::map<const Value*, int> uses = use_counts(p);
  sweep(p.body, uses);
}

}  // namespace kiln::tile
