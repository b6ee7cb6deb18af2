// Buffers live from their producer to their last reader; the plan drops its reference there, so
// the allocator hands the memory to the next buffer of that size (peak memory follows the live
// set, as the graph interpreter's). Write-backs into inputs become stores of their kernel
// (in_place_writes, at the end).
#include "inductor/memory_plan.h"

#include <algorithm>
#include <functional>
#include <set>

#include "ops/family.h"

namespace kiln::inductor {
namespace {

// The loads a node's bodies make.
std::vector<const Value*> loads_in(const std::vector<const Value*>& bodies) {
  std::vector<const Value*> out;
  std::set<const Value*> seen;
  std::function<void(const Value*)> go = [&](const Value* v) {
    if (!seen.insert(v).second) return;
    if (v->kind == ValueKind::Load) out.push_back(v);
    for (const Value* a : v->args) go(a);
  };
  for (const Value* b : bodies) go(b);
  return out;
}

}  // namespace

std::map<int, std::vector<int>> release_points(const Program& p) { return release_points(p, p.nodes); }

std::map<int, std::vector<int>> release_points(const Program& p, const std::vector<Node>& nodes) {
  std::vector<int> last(p.buffers.size(), -1);
  std::set<int> keep(p.outputs.begin(), p.outputs.end());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    for (int o : n.outputs) last[size_t(o)] = std::max(last[size_t(o)], int(i));
    for (int b : n.inputs) last[size_t(b)] = int(i);
    for (const Value* l : loads_in(n.bodies)) last[size_t(l->buffer)] = int(i);
  }
  std::map<int, std::vector<int>> out;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == BufferKind::Temp && !keep.count(int(b)) && last[b] >= 0) out[last[b]].push_back(int(b));
  return out;
}

int64_t peak_bytes(const Program& p, const std::vector<Node>& nodes) {
  auto bytes = [&](int b) {
    int64_t n = int64_t(itemsize(p.buffers[size_t(b)].dtype));
    for (const SymInt& s : p.buffers[size_t(b)].sizes) n *= std::max<int64_t>(s.hint(), 0);
    return n;
  };
  const auto released = release_points(p, nodes);
  int64_t live = 0, peak = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int o : nodes[i].outputs)
      if (p.buffers[size_t(o)].kind == BufferKind::Temp) live += bytes(o);
    peak = std::max(peak, live);
    auto it = released.find(int(i));
    if (it != released.end())
      for (int b : it->second) live -= bytes(b);
  }
  return peak;
}

namespace {

bool same_layout(const Buffer& a, const Buffer& b) {
  if (a.dtype != b.dtype || a.sizes.size() != b.sizes.size()) return false;
  for (size_t d = 0; d < a.sizes.size(); ++d) {
    if (!sym::statically_known_equal(a.sizes[d], b.sizes[d])) return false;
    if (!sym::statically_known_equal(a.sizes[d], SymInt(1)) && !sym::statically_known_equal(a.strides[d], b.strides[d])) return false;
  }
  return true;
}

// Whether an extern's outputs are new memory (else they may alias its inputs: views, layout ops
// that can return their input, copy_, composites).
bool fresh_outputs(const Node& n) {
  if (!n.call || n.call->kind != graph::NodeKind::Call) return n.call != nullptr;
  switch (ops::kOpFamily[size_t(n.call->op)]) {
    case ops::OpFamily::VIEW:
    case ops::OpFamily::LAYOUT:
    case ops::OpFamily::MUTATION:
    case ops::OpFamily::NN: return false;
    default: return true;
  }
}

bool is_copy(const Node& n) {
  return n.kind == NodeKind::Extern && n.call && n.call->kind == graph::NodeKind::Call && n.call->op == ops::OpId::copy_ &&
         !n.inputs.empty();
}

bool mentions(const ExprPtr& e, const ExprPtr& var) {
  if (e == var) return true;
  for (const ExprPtr& a : e->args)
    if (mentions(a, var)) return true;
  return false;
}

// Whether every variable of `vars` that e mentions is one of n's (the same variable: same extent).
bool uses_only(const ExprPtr& e, const std::vector<ExprPtr>& vars, const Node& n) {
  for (const ExprPtr& v : vars)
    if (mentions(e, v) && std::find(n.vars.begin(), n.vars.end(), v) == n.vars.end() &&
        std::find(n.reduction_vars.begin(), n.reduction_vars.end(), v) == n.reduction_vars.end())
      return false;
  return true;
}

// v with the values of `done` replaced (rebuilt through Program::make, so still interned).
const Value* replaced(Program& p, const Value* v, std::map<const Value*, const Value*>& done) {
  auto it = done.find(v);
  if (it != done.end()) return it->second;
  Value copy = *v;
  bool changed = false;
  for (const Value*& a : copy.args) {
    const Value* b = replaced(p, a, done);
    changed |= b != a;
    a = b;
  }
  const Value* out = changed ? p.make(std::move(copy)) : v;
  done[v] = out;
  return out;
}

}  // namespace

InPlace in_place_writes(Program& p) {
  InPlace r;
  r.into.assign(p.buffers.size(), -1);
  r.skip.assign(p.nodes.size(), -1);
  // Per buffer, the graph inputs whose memory it may share (itself, for an input).
  std::vector<std::set<int>> roots(p.buffers.size());
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == BufferKind::Input) roots[b] = {int(b)};
  std::vector<int> writes(p.buffers.size(), 0);  // copies into each input
  for (const Node& n : p.nodes) {
    if (n.kind != NodeKind::Extern) continue;
    if (!fresh_outputs(n))
      for (int o : n.outputs)
        for (int in : n.inputs) roots[size_t(o)].insert(roots[size_t(in)].begin(), roots[size_t(in)].end());
    if (is_copy(n))
      for (int x : roots[size_t(n.inputs[0])]) ++writes[size_t(x)];
  }
  auto reads = [&](const Node& n, const std::vector<const Value*>& bodies, int x) {
    for (int b : n.inputs)
      if (roots[size_t(b)].count(x)) return true;
    for (const Value* l : loads_in(bodies))
      if (roots[size_t(l->buffer)].count(x)) return true;
    return false;
  };
  const std::set<int> outputs(p.outputs.begin(), p.outputs.end());
  for (size_t c = 0; c < p.nodes.size(); ++c) {
    if (!is_copy(p.nodes[c]) || p.nodes[c].inputs.size() != 2) continue;
    const int x = p.nodes[c].inputs[0], t = p.nodes[c].inputs[1];
    const Buffer &dst = p.buffers[size_t(x)], &src = p.buffers[size_t(t)];
    if (dst.kind != BufferKind::Input || writes[size_t(x)] != 1 || src.kind != BufferKind::Temp || src.producer < 0 ||
        size_t(src.producer) >= c || outputs.count(t) || r.into[size_t(t)] >= 0 || !same_layout(dst, src))
      continue;
    const size_t k = size_t(src.producer);
    const Node& kernel = p.nodes[k];
    if (kernel.kind != NodeKind::Pointwise) continue;
    // The kernel reads the old contents only at the element it overwrites, before it stores there
    // (a load in a body stored earlier or in the same body; the kernel evaluates each value once).
    const size_t j = size_t(std::find(kernel.outputs.begin(), kernel.outputs.end(), t) - kernel.outputs.begin());
    const ExprPtr at = offset_of(kernel.vars, src.strides);
    const std::vector<const Value*> before = loads_in({kernel.bodies.begin(), kernel.bodies.begin() + long(j) + 1});
    bool ok = true;
    for (const Value* l : loads_in(kernel.bodies)) {
      if (!ok || !roots[size_t(l->buffer)].count(x)) continue;
      ok = l->buffer == x && sym::statically_known_equal(l->index, at) &&
           std::find(before.begin(), before.end(), l) != before.end();
    }
    // Nothing between the kernel and the copy reads the old contents. A kernel there that
    // recomputes the new value from them (vertical fusion inlined it) loads it from the
    // kernel's output instead, where its index variables are the kernel's.
    std::map<size_t, std::vector<const Value*>> rewritten;
    for (size_t i = k + 1; i < c && ok; ++i) {
      const Node& n = p.nodes[i];
      if (!reads(n, n.bodies, x)) continue;
      ok = n.kind != NodeKind::Extern && uses_only(at, kernel.vars, n);
      if (!ok) break;
      std::map<const Value*, const Value*> done = {{kernel.bodies[j], p.load(t, at)}};
      std::vector<const Value*> bodies;
      for (const Value* b : n.bodies) bodies.push_back(replaced(p, b, done));
      ok = !reads(n, bodies, x);
      rewritten[i] = std::move(bodies);
    }
    if (!ok) continue;
    for (auto& [i, bodies] : rewritten) p.nodes[i].bodies = std::move(bodies);
    r.into[size_t(t)] = x;
    r.skip[c] = x;
    ++r.count;
  }
  return r;
}

}  // namespace kiln::inductor
