// The loop IR pipeline: lower (vertical fusion happens there: fusion.cc decides what readers
// inline), fuse sibling kernels horizontally and reductions with the nodes over their rows
// (fusion.cc), then name each kernel after the ops it computes, verify, and log the IR
// (KILN_LOGS=ir) and what each kernel fused (KILN_LOGS=fusion).
#include <kiln/log.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "inductor/emit_tile.h"
#include "inductor/inductor.h"
#include "graph/pass_manager.h"
#include "inductor/lower/lower.h"
#include "tile/cpu/emit_c.h"
#include "tile/passes/passes.h"

namespace kiln::inductor {
namespace {

// k<index>_<up to three op names>: an identifier that says what the kernel computes.
void name_nodes(Program& p) {
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    Node& n = p.nodes[i];
    std::vector<graph::Origin> unique;  // each origin once, in order
    for (const graph::Origin& o : n.origins)
      if (std::find(unique.begin(), unique.end(), o) == unique.end()) unique.push_back(o);
    n.origins = std::move(unique);
    std::string name = (n.kind == NodeKind::Extern ? "e" : "k") + std::to_string(i);
    std::set<std::string> seen;
    int shown = 0;
    for (const graph::Origin& o : n.origins) {
      if (!o.known()) continue;
      std::string op = ops::op_info(o.op).name;
      if (o.backward) op += "_bwd";
      if (!seen.insert(op).second) continue;
      if (shown++ == 3) break;
      name += "_" + op;
    }
    if (n.kind == NodeKind::Extern && shown == 0) name += std::string("_") + n.call->name();
    n.name = name;
  }
}

std::string fusion_report(const Program& p) {
  std::ostringstream os;
  for (const Node& n : p.nodes) {
    os << n.name << " (" << node_kind_name(n.kind) << "): ";
    bool first = true;
    for (const graph::Origin& o : n.origins)
      if (o.known()) os << (first ? "" : ", ") << graph::origin_str(o), first = false;
    os << "\n";
  }
  return os.str();
}

}  // namespace

Program lower_and_schedule(std::shared_ptr<const graph::Graph> g) {
  sym::NoImplicitGuards no_guards;  // size questions go through statically_known_*
  Program p = lower(std::move(g));
  fuse_horizontal(p);
  fuse_rows(p);
  name_nodes(p);
  verify(p);
  KILN_LOG(ir) << "inductor loop IR:\n" << print(p);
  KILN_LOG(fusion) << "inductor kernels and the graph nodes fused into each:\n" << fusion_report(p);
  return p;
}

std::string run_stage(const std::string& stage, std::shared_ptr<const graph::Graph> g) {
  KILN_CHECK(stage == "lower" || stage == "kernels" || stage == "c", "inductor pipeline: unknown stage '", stage,
             "' (the last stage is lower, kernels or c; graph passes may come before it)");
  Program p = lower_and_schedule(std::move(g));
  if (stage == "lower") return print(p);
  std::string out;
  for (const Node& n : p.nodes) {
    if (n.kind == NodeKind::Extern) continue;
    GeneratedKernel k = emit_tile(p, n);
    tile::run_passes(k.program, tile::default_passes());  // what the CPU backend compiles
    out += stage == "kernels" ? tile::print(k.program) : tile::cpu::emit_kernel(k.program);
    out += "\n";
  }
  return out;
}

std::string run_pipeline(const std::string& pipeline, const std::string& graph_text) {
  auto trim = [](std::string s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    return s;
  };
  std::string stages = trim(pipeline);
  if (stages.rfind("inductor:", 0) == 0) stages = stages.substr(9);  // (the kernels folder mixes IRs)
  const size_t bar = stages.rfind('|');
  std::string text = graph_text;
  if (bar != std::string::npos) text = graph::run_pipeline(trim(stages.substr(0, bar)), graph_text);
  const std::string last = trim(bar == std::string::npos ? stages : stages.substr(bar + 1));
  return run_stage(last, std::make_shared<graph::Graph>(graph::parse(text)));
}

}  // namespace kiln::inductor
