// The loop IR's passes over its text form: kiln-opt --pipeline='loop: fuse | name | c' and the
// goldens whose input is loop IR (tests/golden/inductor/loop_*.kir).
#include "inductor/inductor.h"
#include "inductor/lower/lower.h"

namespace kiln::inductor {

std::string run_loop_pipeline(const std::string& pipeline, const std::string& loop_ir_text) {
  std::vector<std::string> steps;
  for (size_t start = 0; start <= pipeline.size();) {
    size_t bar = pipeline.find('|', start);
    if (bar == std::string::npos) bar = pipeline.size();
    std::string s = pipeline.substr(start, bar - start);
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    if (!s.empty()) steps.push_back(s);
    start = bar + 1;
  }
  Program p = parse(loop_ir_text);
  verify(p);
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string& s = steps[i];
    const bool last = i + 1 == steps.size();
    if (s == "fuse") fuse_horizontal(p);
    else if (s == "name") name_nodes(p);
    else if (s == "verify") verify(p);
    else if (last && s == "print") break;
    else if (last && (s == "kernels" || s == "c")) return print_kernels(p, s == "c");
    else
      KILN_CHECK_HINT(false,
                      "the loop IR passes are fuse, name and verify; the last step may be print, kernels or c",
                      "loop IR pipeline: unknown or misplaced step '", s, "'");
    verify(p);
  }
  return print(p);
}

}  // namespace kiln::inductor
