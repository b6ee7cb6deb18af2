// inductor: kiln's code generator (docs/compiler.md). A prims graph (decomposed and functional:
// what aot hands its graph compilers) is lowered to the loop IR (lower/), scheduled and fused
// (scheduler.cc, fusion.cc), each kernel node emitted as a tile kernel (emit_tile.cc), all of them
// compiled in one translation unit by the tile CPU backend, and run by an executable plan
// (plan.cc): a flat list of launches and extern calls over planned buffers.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "inductor/loop_ir.h"

namespace kiln::inductor {

using GraphFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// How a graph is compiled: the "inductor" backend's mode (CompileOptions::mode).
struct Options {
  // max-autotune: every kernel's block sizes timed among candidates and matmuls raced between
  // BLAS and a generated tile matmul (autotune.h), the choices cached on disk.
  bool max_autotune = false;
};

// Compiles a prims graph into a function of its inputs. Logs (KILN_LOGS): ir (the loop IR),
// fusion (what was fused into each kernel), output_code (the generated kernels).
GraphFn compile_graph(std::shared_ptr<const graph::Graph> g, const Options& options = {});
// The same through the plan cache (docs/cache.md), naming the entry that holds the graph's plan
// (empty when the cache is off), and a later process's way back to it: the compiled graph the
// cache holds under plan_key, or an empty function (a miss).
GraphFn compile_graph_keyed(std::shared_ptr<const graph::Graph> g, std::string* plan_key, const Options& options = {});
GraphFn load_graph(const std::string& plan_key);
// The plan cache's key of a graph compiled with `options` (plan.cc).
std::string plan_key(const graph::Graph& g, const Options& options = {});

// What compile_graph made, for tests, tools and the kernels goldens (always built: no plan cache).
struct Compiled {
  std::vector<std::string> kernels;  // each kernel's tile IR, in launch order
  std::string source;           // the C++ translation unit
  GraphFn run;
};
Compiled compile_graph_verbose(std::shared_ptr<const graph::Graph> g, const Options& options = {});

// The loop IR pipeline: lowering then scheduling (names, fusion), verified.
Program lower_and_schedule(std::shared_ptr<const graph::Graph> g);

// The golden runner over graph IR text: "[inductor:] [graph passes |] stage", where the graph
// passes (graph::run_pipeline: decompose, functionalize, cse...) run first and the stage is
// "lower" (prints the loop IR), "kernels" (the tile IR of every kernel, after the tile passes)
// or "c" (the generated C++ of every kernel, without the prelude).
std::string run_pipeline(const std::string& pipeline, const std::string& graph_text);
// A pipeline starting "loop:" reads loop IR text instead (run_loop_pipeline).
// The same stage on a graph built in C++.
std::string run_stage(const std::string& stage, std::shared_ptr<const graph::Graph> g);
// The tile IR (c: the generated C++) of every kernel node of p, after the tile passes.
std::string print_kernels(const Program& p, bool c);
// Names each node after the ops it computes (k<index>_<ops>, e<index>_<op> for externs).
void name_nodes(Program& p);

// The loop IR pipeline over loop IR text (loop_pipeline.cc): "[loop:] [pass | ...] [stage]",
// passes fuse (horizontal fusion), name (name_nodes) and verify, then the stage print (the
// default), kernels or c. What kiln-opt --pipeline='loop: fuse | c' runs.
std::string run_loop_pipeline(const std::string& pipeline, const std::string& loop_ir_text);

}  // namespace kiln::inductor
