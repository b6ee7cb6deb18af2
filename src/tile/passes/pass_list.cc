// The pass list (passes.h): the table of passes by name, the runner, and the shared helpers.
#include <cstdlib>

#include "tile/passes/passes.h"

#include "tile/cpu/emit_c.h"

namespace kiln::tile {
namespace {

bool initial_verify_each() {
#ifndef NDEBUG
  return true;
#else
  const char* env = std::getenv("KILN_TILE_VERIFY");
  return env && *env && std::string(env) != "0";
#endif
}
bool g_verify_each = initial_verify_each();

}  // namespace

const std::vector<PassInfo>& pass_table() {
  static const std::vector<PassInfo> table = {
      {"canonicalize", canonicalize, "identity broadcasts/reshapes/permutes/casts removed, views of splats and constants folded"},
      {"fold", fold_constants, "pointwise ops and casts of constants evaluated (with the scalar header's functions)"},
      {"dce", dce, "ops without side effects whose results are unused removed"},
  };
  return table;
}

const char* default_passes() { return "canonicalize,fold,canonicalize,dce"; }

void set_verify_each(bool on) { g_verify_each = on; }
bool verify_each() { return g_verify_each; }

void run_passes(Program& p, const std::string& list) {
  const std::string spec = list == "default" ? default_passes() : list;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find(',', pos);
    if (comma == std::string::npos) comma = spec.size();
    std::string name = spec.substr(pos, comma - pos);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    pos = comma + 1;
    if (name.empty()) continue;
    if (name == "default") {
      run_passes(p, default_passes());
      continue;
    }
    const PassInfo* pass = nullptr;
    for (const PassInfo& info : pass_table())
      if (name == info.name) pass = &info;
    if (!pass) {
      std::string known;
      for (const PassInfo& info : pass_table()) known += std::string(known.empty() ? "" : ", ") + info.name;
      Error::Info e;
      e.op = "tile.passes";
      e.message = "unknown pass " + name;
      e.hint = "the passes are " + known + " (and default: " + default_passes() + ")";
      throw Error(std::move(e));
    }
    pass->run(p);
    if (g_verify_each) {
      try {
        verify(p);
      } catch (const Error& e) {
        Error::Info info = e.info();
        info.message = "after the pass " + name + ": " + info.message;
        throw Error(std::move(info));
      }
    }
  }
}

std::string run_pipeline(const std::string& pipeline, const std::string& text) {
  std::string spec = pipeline;
  if (spec.rfind("tile:", 0) == 0) spec = spec.substr(5);
  Program p = parse(text);
  verify(p);
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t bar = spec.find('|', pos);
    if (bar == std::string::npos) bar = spec.size();
    std::string stage = spec.substr(pos, bar - pos);
    stage.erase(0, stage.find_first_not_of(' '));
    stage.erase(stage.find_last_not_of(' ') + 1);
    pos = bar + 1;
    if (stage == "c") {
      if (pos <= spec.size()) fail_at("pipeline", {}, "`c` must be the last stage of " + pipeline);
      return cpu::emit_kernel(p);
    }
    if (stage != "print" && !stage.empty()) run_passes(p, stage);
  }
  return print(p);
}

std::map<const Value*, int> use_counts(const Program& p) {
  std::map<const Value*, int> n;
  walk(p.body, [&](const Op& op) {
    for (const Value* v : op.operands) ++n[v];
  });
  return n;
}

void replace_uses(Program& p, const std::map<Value*, Value*>& with) {
  if (with.empty()) return;
  auto resolve = [&](Value* v) {
    for (auto it = with.find(v); it != with.end(); it = with.find(v)) v = it->second;
    return v;
  };
  walk_mutable(p.body, [&](Op& op) {
    for (Value*& v : op.operands) v = resolve(v);
  });
}

}  // namespace kiln::tile
