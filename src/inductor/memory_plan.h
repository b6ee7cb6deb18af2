// Memory planning: when each buffer of a plan can be dropped.
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

}  // namespace kiln::inductor
