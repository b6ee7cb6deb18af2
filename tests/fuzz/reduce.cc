// Greedy reduction of a failing fuzz program (delta debugging, one edit at a time).
#include "fuzz/reduce.h"

#include <sstream>

namespace kiln::fuzz {
namespace {

// p with step k removed: its users read its first operand instead.
Program without_step(const Program& p, size_t k) {
  Program q = p;
  const int gone = int(p.inputs.size() + k);
  const int replacement = p.steps[k].operands.at(0);
  q.steps.erase(q.steps.begin() + long(k));
  auto remap = [&](int& i) {
    if (i == gone) i = replacement;
    else if (i > gone) --i;
  };
  for (Step& s : q.steps)
    for (int& i : s.operands) remap(i);
  for (int& o : q.outputs) remap(o);
  return q;
}

// Input edits that keep the program well formed, simplest first.
std::vector<Program> simpler_inputs(const Program& p) {
  std::vector<Program> out;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const Input& in = p.inputs[i];
    auto with = [&](auto edit) {
      Program q = p;
      edit(q.inputs[i]);
      out.push_back(q);
    };
    if (in.layout != Layout::Contiguous) with([](Input& x) { x.layout = Layout::Contiguous; });
    for (size_t d = 0; d < in.sizes.size(); ++d)
      if (in.symbol[d] >= 0) with([d](Input& x) { x.symbol[d] = -1; });
    if (in.dtype != kFloat32) with([](Input& x) { x.dtype = kFloat32; });
    if (!in.sizes.empty()) with([](Input& x) { x.sizes.erase(x.sizes.begin()), x.symbol.erase(x.symbol.begin()); });
    for (size_t d = 0; d < in.sizes.size(); ++d) {
      if (in.symbol[d] >= 0) continue;
      if (in.sizes[d] > 1) with([d](Input& x) { x.sizes[d] = 1; });
      if (in.sizes[d] > 2) with([d](Input& x) { x.sizes[d] = (x.sizes[d] + 1) / 2; });
      if (in.sizes[d] > 2) with([d](Input& x) { --x.sizes[d]; });
    }
  }
  return out;
}

size_t cost(const Program& p) {
  size_t c = p.steps.size() * 1000 + p.outputs.size() * 100 + p.inputs.size() * 10;
  for (const Input& in : p.inputs) {
    c += (in.layout != Layout::Contiguous) + (in.dtype != kFloat32);
    for (size_t d = 0; d < in.sizes.size(); ++d) c += size_t(in.sizes[d]) + (in.symbol[d] >= 0 ? 5 : 0);
  }
  return c;
}

}  // namespace

Outcome run_program(const Backend& backend, const Program& p) {
  std::shared_ptr<graph::Graph> g;
  std::vector<SymEnv> calls;
  std::vector<ErrorBound> allowed;
  try {
    Built b = build(p);
    g = std::make_shared<graph::Graph>(std::move(b.graph));
    calls = std::move(b.calls);
    allowed = std::move(b.allowed);
  } catch (const std::exception& e) {
    return {Outcome::ReferenceError, std::string("building: ") + e.what()};
  }
  return check(backend, g, p.seed, calls, allowed);
}

Program reduce(const Program& start, const std::function<bool(const Program&)>& fails, int budget) {
  Program best = prune(start);
  if (!fails(best)) best = start;
  auto accept = [&](const Program& candidate) {
    if (budget <= 0) return false;
    Program q = prune(candidate);
    if (cost(q) >= cost(best)) return false;
    --budget;
    if (!fails(q)) return false;
    best = std::move(q);
    return true;
  };
  bool progress = true;
  while (progress && budget > 0) {
    progress = false;
    for (size_t o = best.outputs.size(); o-- > 0 && best.outputs.size() > 1;) {
      Program q = best;
      q.outputs.erase(q.outputs.begin() + long(o));
      progress |= accept(q);
    }
    for (size_t k = best.steps.size(); k-- > 0;)
      if (k < best.steps.size()) progress |= accept(without_step(best, k));
    for (const Program& q : simpler_inputs(best))
      if (accept(q)) {
        progress = true;
        break;  // the candidates were made from the old program: make new ones
      }
  }
  return best;
}

Program reduce(const Backend& backend, const Program& p, int budget) {
  const Outcome::Kind kind = run_program(backend, p).kind;
  return reduce(p, [&](const Program& q) { return run_program(backend, q).kind == kind; }, budget);
}

std::string repro_text(const Program& p, const std::string& backend_name, const Outcome& outcome) {
  Built b = build(p);
  std::ostringstream os;
  os << "// kiln fuzz: " << describe(p) << "; " << kind_name(outcome.kind) << " with backend \"" << backend_name << "\"\n";
  std::istringstream msg(outcome.message);
  for (std::string line; std::getline(msg, line);) os << "//   " << line << "\n";
  os << "// replay: kiln-opt --run-backend=" << backend_name << " --seed=" << p.seed;
  if (!p.symbols.empty()) os << " --calls='" << calls_str(b.calls) << "'";
  os << " FILE.kir\n" << graph::print(b.graph);
  return os.str();
}

}  // namespace kiln::fuzz
