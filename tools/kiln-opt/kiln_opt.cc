// kiln-opt: runs graph passes on an IR file and prints the result.
//   kiln-opt --passes=dce,cse,fold [--verify] [file.kir]     (stdin without a file)
#include <kiln/error.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/passes/passes.h"

namespace {

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int usage() {
  std::cerr << "usage: kiln-opt [--passes=dce,cse,fold] [--verify] [file.kir]\n"
               "  Parses the graph IR (stdin without a file), runs the passes in order and prints the result.\n"
               "  --verify checks the graph before and after the passes.\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> passes;
  bool verify = false;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--passes=", 0) == 0) passes = split(a.substr(9));
    else if (a == "--verify") verify = true;
    else if (a == "-h" || a == "--help") return usage();
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
    kiln::graph::Graph g = kiln::graph::parse(text.str());
    if (verify) kiln::graph::verify(g);
    kiln::graph::run_passes(g, passes);
    if (verify) kiln::graph::verify(g);
    std::cout << kiln::graph::print(g);
  } catch (const kiln::Error& e) {
    std::cerr << "kiln-opt: " << (path.empty() ? "<stdin>" : path) << ":" << e.what() << "\n";
    return 1;
  }
  return 0;
}
