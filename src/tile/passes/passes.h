// Passes over the tile IR, one per file, and the small pass list that runs them by name. With
// verification on (tests, debug builds, KILN_TILE_VERIFY=1) the program is verified after each
// pass, so a pass that breaks it is named.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "tile/ir.h"

namespace kiln::tile {

void dce(Program& p);             // passes/dce.cc: ops without side effects whose results are unused
void fold_constants(Program& p);  // passes/fold_constants.cc: pointwise ops and casts of constants
void canonicalize(Program& p);    // passes/canonicalize.cc: identity views and casts, views of splats

struct PassInfo {
  const char* name;
  void (*run)(Program&);
  const char* what;
};
const std::vector<PassInfo>& pass_table();
// Runs the passes of a comma-separated list ("canonicalize,fold,dce"; "default" is the list
// the CPU backend runs before emitting). An unknown name is a kiln::Error listing the known ones.
void run_passes(Program& p, const std::string& list);
const char* default_passes();
void set_verify_each(bool on);
bool verify_each();

// The golden files' and kiln-opt's pipeline over tile IR text: stages separated by '|', each a
// pass list (run_passes) or `c` (the CPU backend's C++ for the kernel, the last stage); a
// leading "tile:" is ignored (the kernels folder mixes IRs). Parses and verifies the input
// first; prints the program unless the last stage is `c`. "print" alone is a round trip.
std::string run_pipeline(const std::string& pipeline, const std::string& text);

// Helpers the passes share.
// How many times each value is used (as an operand anywhere, yields included).
std::map<const Value*, int> use_counts(const Program& p);
// Every use of a key is replaced by its value (chains resolved).
void replace_uses(Program& p, const std::map<Value*, Value*>& with);

}  // namespace kiln::tile
