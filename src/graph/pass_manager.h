// The pass manager: runs a pipeline (a named list of passes, "decompose | cse | dce") over
// graphs, runs the verifier after every pass when asked (debug builds, tests,
// KILN_VERIFY_PASSES=1) and logs the IR after each pass under KILN_LOGS=passes. The pass table
// is src/graph/passes/registry.cc: dce, cse and fold are graph passes; upper layers register
// theirs (src/aot/passes.cc adds decompose, functionalize, joint and partition), so the graph
// layer never includes them. docs/graph-ir.md describes the pipelines and kiln-opt.
#pragma once
#include <any>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// What a pipeline works on: one graph, or several named ones once a pass splits it (partition
// makes "forward" and "backward"). `state` is what a pass leaves for a later one (joint leaves
// the joint graph's metadata for partition).
struct Module {
  struct Entry {
    std::string name;
    std::shared_ptr<Graph> graph;
  };
  std::vector<Entry> graphs;
  std::any state;

  Module() = default;
  explicit Module(Graph g);
};

struct Pass {
  std::string name;
  std::string summary;                      // one line, for kiln-opt --help
  std::function<void(Graph&)> run;          // a graph pass: runs on every graph of the module,
  std::function<void(Module&)> run_module;  // or a pass over the whole module (joint, partition)
};
// Adds a pass to the table (replacing one of the same name). Call it from a static initializer.
void register_pass(Pass pass);
const Pass* find_pass(const std::string& name);  // null when unknown
std::vector<const Pass*> registered_passes();    // in registration order

// Whether pass managers verify after every pass by default: in debug builds, when
// KILN_VERIFY_PASSES=1, or after set_verify_passes(true) (kiln_tests turns it on).
bool verify_passes();
void set_verify_passes(bool on);

class PassManager {
 public:
  // Throws kiln::Error for an unknown pass name, listing the known ones.
  explicit PassManager(const std::vector<std::string>& names);
  // "a | b" or "a,b"; blanks around names are ignored.
  static PassManager parse(const std::string& pipeline);

  // Runs the passes in order. After each: the verifier on every graph (when `verify`; an
  // invalid graph is a kiln::Error naming the pass) and the IR to the "passes" log. The input
  // is not verified (callers that want it call verify()).
  void run(Module& m) const;
  // The same on one graph; a pass that splits it (partition) is an error here.
  void run(Graph& g) const;

  bool verify = verify_passes();

 private:
  std::vector<const Pass*> passes_;
};

// A module's text: one graph prints as itself, several as "// <name>" then the graph, each.
std::string print(const Module& m, const PrintOptions& options = {});

// Parses `input` (one graph), runs `pipeline` and prints the result: what kiln-opt and the
// graph-IR golden tests do. The pipeline may start with "--origins" (print each node's origin).
std::string run_pipeline(const std::string& pipeline, const std::string& input);

}  // namespace kiln::graph
