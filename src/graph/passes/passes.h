// Graph passes, one per file. Each edits the graph in place and keeps it valid (verify()).
#pragma once
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// Removes nodes whose outputs are unused (never ops that mutate their inputs).
void dce(Graph& g);
// Merges nodes with the same op and arguments, and equal constants (never random or mutating
// ops; a mutating op ends every earlier match, since it may change what they read).
void cse(Graph& g);
// CSE's hash of a node: (op, arguments: values by identity, numbers by bits) or, for a
// constant, (dtype, sizes, wrapped, literal bytes). Equal nodes hash equal.
uint64_t cse_hash(const Node& n);
// cse with another hash (tests force collisions with a constant one).
void cse(Graph& g, uint64_t (*hash)(const Node&));
// Evaluates small nodes whose tensor inputs are all constants, and drops x*1, x+0, x-0, x/1.
void fold(Graph& g);

// Runs the named passes in order with a PassManager (graph/pass_manager.h); throws kiln::Error
// for an unknown name.
void run_passes(Graph& g, const std::vector<std::string>& names);
std::vector<std::string> pass_names();  // every registered pass

}  // namespace kiln::graph
