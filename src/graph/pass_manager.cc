// The pass manager (pass_manager.h).
#include "graph/pass_manager.h"

#include <kiln/log.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace kiln::graph {
namespace {

std::atomic<bool>& verify_flag() {
  static std::atomic<bool> on = [] {
#ifndef NDEBUG
    return true;
#else
    const char* env = std::getenv("KILN_VERIFY_PASSES");
    return env && *env && std::strcmp(env, "0") != 0;
#endif
  }();
  return on;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

// Verifies every graph; a failure names the pass that made it.
void verify_module(const Module& m, const std::string& what, const char* hint) {
  for (const auto& e : m.graphs) {
    try {
      verify(*e.graph);
    } catch (const Error& err) {
      detail::fail(what + " left an invalid graph" + (e.name.empty() ? "" : " (" + e.name + ")") + ": " + err.message(),
                   hint);
    }
  }
}

size_t node_count(const Module& m) {
  size_t n = 0;
  for (const auto& e : m.graphs) n += e.graph->nodes().size();
  return n;
}

}  // namespace

Module::Module(Graph g) { graphs.push_back({"", std::make_shared<Graph>(std::move(g))}); }

bool verify_passes() { return verify_flag().load(); }
void set_verify_passes(bool on) { verify_flag() = on; }

PassManager::PassManager(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const Pass* p = find_pass(name);
    if (!p) {
      std::string known;
      for (const Pass* q : registered_passes()) known += (known.empty() ? "" : ", ") + q->name;
      detail::fail("unknown graph pass '" + name + "'", "available passes: " + known);
    }
    passes_.push_back(p);
  }
}

PassManager PassManager::parse(const std::string& pipeline) {
  std::vector<std::string> names;
  std::string cur;
  for (char c : pipeline + "|") {
    if (c == '|' || c == ',') {
      if (!trim(cur).empty()) names.push_back(trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  return PassManager(names);
}

void PassManager::run(Module& m) const {
  for (const Pass* p : passes_) {
    const size_t before = node_count(m);
    const auto start = std::chrono::steady_clock::now();
    if (p->run_module) {
      p->run_module(m);
    } else {
      for (auto& e : m.graphs) p->run(*e.graph);
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (verify) verify_module(m, "pass '" + p->name + "'", "a pass must leave a valid graph (verify() its input to rule that out)");
    KILN_LOG(passes) << "after " << p->name << " (" << before << " -> " << node_count(m) << " nodes, " << ms
                     << " ms):\n"
                     << print(m, PrintOptions{.origins = true});
  }
}

void PassManager::run(Graph& g) const {
  Module m(std::move(g));
  run(m);
  KILN_CHECK(m.graphs.size() == 1, "this pipeline splits the graph into ", m.graphs.size(),
             " graphs; run it on a graph::Module");
  g = std::move(*m.graphs[0].graph);
}

std::string print(const Module& m, const PrintOptions& options) {
  if (m.graphs.size() == 1) return print(*m.graphs[0].graph, options);
  std::string s;
  for (const auto& e : m.graphs) s += "// " + e.name + "\n" + print(*e.graph, options);
  return s;
}

std::string run_pipeline(const std::string& pipeline, const std::string& input) {
  PrintOptions options;
  std::string rest = trim(pipeline);
  while (rest.rfind("--", 0) == 0) {
    const size_t end = rest.find_first_of(" \t");
    const std::string flag = rest.substr(0, end);
    KILN_CHECK_HINT(flag == "--origins", "the only pipeline option is --origins", "unknown pipeline option '", flag, "'");
    options.origins = true;
    rest = end == std::string::npos ? "" : trim(rest.substr(end));
  }
  const PassManager pm = PassManager::parse(rest);
  Module m(parse(input));
  pm.run(m);
  return print(m, options);
}

}  // namespace kiln::graph
