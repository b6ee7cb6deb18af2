// One tile kernel per Pointwise / Reduction node of the loop IR (docs/compiler.md).
#pragma once
#include <map>
#include <string>

#include "inductor/loop_ir.h"
#include "tile/ir.h"

namespace kiln::inductor {

// One parameter of a generated kernel: a buffer's data, a size expression's value, or (buffer
// kIndexErrorArg) the plan's error record for index range checks (index_error.h).
struct KernelArg {
  int buffer = -1;
  ExprPtr size;
};

struct GeneratedKernel {
  tile::Program program;
  std::vector<KernelArg> args;  // per parameter, in order
  ExprPtr grid;                 // how many program instances (one grid axis)
};

// The kernel computing node n of p: programs over blocks of its flattened index space (and, for
// a reduction, a loop over blocks of the reduced elements). Every size symbol the node uses is a
// kernel parameter, so one compiled kernel serves every value of a dynamic dim.
// `blocks` sets block sizes (XBLOCK, YBLOCK, RBLOCK) instead of the emitter's own choice:
// max-autotune's candidates (autotune.cc). A persistent reduction's RBLOCK stays its row's.
using BlockSizes = std::map<std::string, int64_t>;
GeneratedKernel emit_tile(const Program& p, const Node& n, const BlockSizes& blocks = {});

}  // namespace kiln::inductor
