// The tile IR's C++ backend: TileProgram -> C++ source, compiled by the system compiler
// (cpu/cc.h) and launched on the CPU (cpu/kernel.h). Each program instance is a function; the
// entry point runs the grid's instances over OpenMP threads.
#pragma once
#include <string>
#include <vector>

#include "tile/ir.h"

namespace kiln::tile::cpu {

// The C++ of one kernel: its program function and its extern "C" entry point (no prelude).
std::string emit_kernel(const Program& p);
// A translation unit: the scalar prelude, the CPU support code, then the kernels.
std::string translation_unit(const std::vector<const Program*>& kernels);
// The entry point's symbol: void kiln_tile_<name>(const kiln_tile_arg* args, const int64_t* grid).
std::string entry_name(const Program& p);

}  // namespace kiln::tile::cpu
