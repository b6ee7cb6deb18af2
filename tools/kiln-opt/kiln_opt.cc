// kiln-opt: runs a pipeline of passes on an IR file and prints the result.
//   kiln-opt --passes=decompose,cse [--verify] [--origins] [file.kir]     (stdin without a file)
//   kiln-opt --pipeline='decompose | functionalize | joint | partition' file.kir
//   kiln-opt --list
// The passes are the pass manager's table: the graph passes (dce, cse, fold) and the aot ones
// (decompose, functionalize, joint, partition) that src/aot/passes.cc registers.
#include <kiln/error.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "graph/pass_manager.h"

namespace {

int usage() {
  std::cerr << "usage: kiln-opt [--passes=a,b | --pipeline='a | b'] [--verify] [--origins] [file.kir]\n"
               "       kiln-opt --list\n"
               "  Parses the graph IR (stdin without a file), runs the passes in order and prints the result.\n"
               "  --verify   checks the graph before the passes and after each one\n"
               "  --origins  prints each node's origin (# <op> [backward] [@ file:line])\n"
               "  --list     lists the passes\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string pipeline, path;
  bool origins = false, verify = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) pipeline = a.substr(9);
    else if (a.rfind("--pipeline=", 0) == 0) pipeline = a.substr(11);
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
    if (verify) {  // the input, then (the pass manager) the graph after each pass
      kiln::graph::verify(kiln::graph::parse(text.str()));
      kiln::graph::set_verify_passes(true);
    }
    std::cout << kiln::graph::run_pipeline((origins ? "--origins " : "") + pipeline, text.str());
  } catch (const kiln::Error& e) {
    std::cerr << "kiln-opt: " << (path.empty() ? "<stdin>" : path) << ":" << e.what() << "\n";
    return 1;
  }
  return 0;
}
