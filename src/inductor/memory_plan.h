// Memory planning: when each buffer of a plan can be dropped, and which kernel outputs are stored
// straight into the graph input they are copied into.
#pragma once
#include <map>
#include <vector>

#include "inductor/loop_ir.h"

namespace kiln::inductor {

// Per node index: the temporary buffers whose last reader it is (or, for a buffer nobody reads,
// its producer). Graph outputs and inputs are never released.
std::map<int, std::vector<int>> release_points(const Program& p);
std::map<int, std::vector<int>> release_points(const Program& p, const std::vector<Node>& nodes);
// The most bytes of temporaries live at once when `nodes` run in order (sizes at their hints).
int64_t peak_bytes(const Program& p, const std::vector<Node>& nodes);

// In-place write-backs: a functional graph ends with copy_(input, new) per mutated input (the
// optimizer's parameter and moment updates). Where the kernel computing `new` can write it into
// the input's buffer itself (same layout and dtype, nothing reads the old contents after that
// kernel, the kernel reads them only at the element it stores), the plan gives that kernel the
// input's buffer and skips the copy. A kernel between the two that recomputes the new value from
// the old contents is rewritten to load it from the kernel's output (so p changes: call it
// before the kernels are emitted).
struct InPlace {
  std::vector<int> into;   // per buffer: the Input buffer a kernel stores it into, or -1
  std::vector<int> skip;   // per node: for a copy_ made redundant, its destination buffer, or -1
  int count = 0;           // copies skipped
};
InPlace in_place_writes(Program& p);

}  // namespace kiln::inductor
