// kiln-opt: runs a pipeline of passes on an IR file and prints the result.
//   kiln-opt --passes=decompose,cse [--verify] [--origins] [file.kir]     (stdin without a file)
//   kiln-opt --pipeline='decompose | functionalize | joint | partition' file.kir
//   kiln-opt --list
//   kiln-opt --run-backend=inductor [--seed=N] [--calls='s0=5;s0=2'] file.kir
//   kiln-opt --pipeline='inductor: decompose | lower' file.kir     (graph IR in, loop IR out)
//   kiln-opt --pipeline='loop: fuse | name | c' file.loop         (loop IR in: its passes, then
//                                                                  print, kernels or c)
// The passes are the pass manager's table: the graph passes (dce, cse, fold) and the aot ones
// (decompose, functionalize, joint, partition) that src/aot/passes.cc registers. --run-backend
// runs the graph through a backend and through eager on the same inputs (drawn from the seed and
// the input specs, as the graph fuzzer draws them: tests/fuzz/) and compares the results.
#include <kiln/error.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "fuzz/differential.h"
#include "graph/pass_manager.h"
#include "inductor/inductor.h"

namespace {

int usage() {
  std::cerr << "usage: kiln-opt [--passes=a,b | --pipeline='a | b'] [--verify] [--origins] [file.kir]\n"
               "       kiln-opt --list\n"
               "  Parses the graph IR (stdin without a file), runs the passes in order and prints the result.\n"
               "  --verify   checks the graph before the passes and after each one\n"
               "  --origins  prints each node's origin (# <op> [backward] [@ file:line])\n"
               "  --list     lists the passes\n"
               "  A pipeline starting 'inductor:' ends in an inductor stage (lower, kernels, c); one starting 'loop:'\n"
               "  reads loop IR and runs its passes (fuse, name, verify), then print, kernels or c.\n"
               "       kiln-opt --run-backend=NAME [--seed=N] [--calls='s0=5;s0=2'] [file.kir]\n"
               "  Runs the graph through backend NAME and through eager on the same inputs (from the seed and the\n"
               "  input specs; one call per ';'-separated binding of the symbols, their hints without --calls) and\n"
               "  compares the results at dtype tolerances. Exit status 1 on a difference.\n";
  return 2;
}

int run_backend(const std::string& backend, const std::string& text, uint64_t seed, const std::string& calls) {
  auto g = std::make_shared<const kiln::graph::Graph>(kiln::graph::parse(text));
  kiln::graph::verify(*g);
  const kiln::fuzz::Outcome o =
      kiln::fuzz::check(kiln::fuzz::backend_named(backend), g, seed, kiln::fuzz::parse_calls(calls));
  if (o.ok()) {
    std::cout << "pass: backend " << backend << " matches eager\n";
    return 0;
  }
  std::cout << kiln::fuzz::kind_name(o.kind) << ": backend " << backend << ": " << o.message << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string pipeline, path, backend, calls;
  uint64_t seed = 0;
  bool origins = false, verify = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) pipeline = a.substr(9);
    else if (a.rfind("--pipeline=", 0) == 0) pipeline = a.substr(11);
    else if (a.rfind("--run-backend=", 0) == 0) backend = a.substr(14);
    else if (a.rfind("--seed=", 0) == 0) seed = std::strtoull(a.c_str() + 7, nullptr, 10);
    else if (a.rfind("--calls=", 0) == 0) calls = a.substr(8);
    else if (a == "--verify") verify = true;
    else if (a == "--origins") origins = true;
    else if (a == "--list") {
      for (const kiln::graph::Pass* p : kiln::graph::registered_passes())
        std::cout << p->name << std::string(p->name.size() < 14 ? 14 - p->name.size() : 1, ' ') << p->summary << "\n";
      return 0;
    } else if (a == "-h" || a == "--help") return usage();
    else if (a.rfind("--", 0) == 0 || !path.empty()) return usage();
    else path = a;
  }
  std::stringstream text;
  if (path.empty()) {
    text << std::cin.rdbuf();
  } else {
    std::ifstream f(path);
    if (!f) {
      std::cerr << "kiln-opt: can't open " << path << "\n";
      return 1;
    }
    text << f.rdbuf();
  }
  try {
    if (!backend.empty()) return run_backend(backend, text.str(), seed, calls);
    const std::string stages = pipeline.substr(std::min(pipeline.size(), pipeline.find_first_not_of(" \t")));
    const bool loop_ir = stages.rfind("loop:", 0) == 0;  // (the loop IR is verified after each pass)
    if (verify && !loop_ir) {  // the input, then (the pass manager) the graph after each pass
      kiln::graph::verify(kiln::graph::parse(text.str()));
      kiln::graph::set_verify_passes(true);
    }
    if (loop_ir || stages.rfind("inductor:", 0) == 0)
      std::cout << kiln::inductor::run_pipeline(stages, text.str());
    else
      std::cout << kiln::graph::run_pipeline((origins ? "--origins " : "") + pipeline, text.str());
  } catch (const kiln::Error& e) {
    std::cerr << "kiln-opt: " << (path.empty() ? "<stdin>" : path) << ":" << e.what() << "\n";
    return 1;
  }
  return 0;
}
