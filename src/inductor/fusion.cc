// Vertical fusion: when a reader inlines a value's function (recomputing it in its own kernel)
// and when it loads the value from a buffer instead. The cost model counts what realizing saves:
// a buffer costs a write and a read per element and saves recomputing the function for every
// reader but one; inlining is free for a single reader and for index arithmetic (views,
// constants). A maximum fusion size keeps kernels (and compile times) bounded. Inlining never
// allocates, so it never raises peak memory.
#include "inductor/lower/lower.h"

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
