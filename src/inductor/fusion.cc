// Fusion decisions.
//
// Vertical fusion: when a reader inlines a value's function (recomputing it in its own kernel)
// and when it loads the value from a buffer instead. The cost model counts what realizing saves:
// a buffer costs a write and a read per element and saves recomputing the function for every
// reader but one; inlining is free for a single reader and for index arithmetic (views,
// constants). A maximum fusion size keeps kernels (and compile times) bounded. Inlining never
// allocates, so it never raises peak memory.
#include <algorithm>
#include <functional>
#include <set>

#include "inductor/lower/lower.h"
#include "inductor/memory_plan.h"

namespace kiln::inductor {
namespace {
constexpr int kMaxFusionOps = 64;      // prims in one inlined function
constexpr int kRecomputeBudget = 4;    // prims recomputed across extra readers rather than stored
}  // namespace

bool should_realize(const Def& d, int readers) {
  if (d.buffer >= 0 || d.ops == 0) return false;
  if (d.ops > kMaxFusionOps) return true;
  return readers > 1 && (readers - 1) * d.ops > kRecomputeBudget;
}

}  // namespace kiln::inductor

namespace kiln::inductor {
namespace {

constexpr size_t kMaxOutputs = 8;  // stores in one horizontally fused kernel

std::set<int> loads_of(const Node& n) {
  std::set<int> out;
  std::set<const Value*> seen;
  std::function<void(const Value*)> go = [&](const Value* v) {
    if (!seen.insert(v).second) return;
    if (v->kind == ValueKind::Load) out.insert(v->buffer);
    for (const Value* a : v->args) go(a);
  };
  for (const Value* b : n.bodies) go(b);
  return out;
}

// Siblings: two pointwise nodes over the same index space (the same variables), the second not
// reading the first, both reading a buffer in common (read once instead of twice).
bool siblings(const Node& a, const Node& b) {
  if (a.kind != NodeKind::Pointwise || b.kind != NodeKind::Pointwise || a.vars != b.vars) return false;
  if (a.outputs.size() + b.outputs.size() > kMaxOutputs) return false;
  const std::set<int> la = loads_of(a), lb = loads_of(b);
  for (int o : a.outputs)
    if (lb.count(o)) return false;
  for (int x : lb)
    if (la.count(x)) return true;
  return false;
}

}  // namespace

// Horizontal fusion: a pointwise node joins an earlier sibling (up to kLookBack kernels back)
// when everything it reads is computed before that sibling and the merged program's peak memory
// (temporaries at their hints) is no higher than before.
void fuse_horizontal(Program& p) {
  constexpr size_t kLookBack = 8;
  std::vector<Node> nodes = std::move(p.nodes);
  std::vector<int> producer(p.buffers.size(), -1);  // node index (in `nodes`) writing each buffer
  auto reindex = [&] {
    std::fill(producer.begin(), producer.end(), -1);
    for (size_t i = 0; i < nodes.size(); ++i)
      for (int o : nodes[i].outputs) producer[size_t(o)] = int(i);
  };
  reindex();
  int64_t peak = peak_bytes(p, nodes);  // of `nodes` as they stand
  for (size_t bi = 1; bi < nodes.size(); ++bi) {
    if (nodes[bi].kind != NodeKind::Pointwise) continue;
    const std::set<int> lb = loads_of(nodes[bi]);
    for (size_t back = 1; back <= kLookBack && back <= bi; ++back) {
      const size_t ai = bi - back;
      if (!siblings(nodes[ai], nodes[bi])) continue;
      bool ready = true;  // what B reads exists at A's place
      for (int x : lb) ready &= producer[size_t(x)] < int(ai);
      if (!ready) continue;
      // B merged into A in place (no copy of the program's nodes per candidate), undone when the
      // merged program's peak is higher.
      Node b = std::move(nodes[bi]);
      nodes.erase(nodes.begin() + long(bi));
      Node& a = nodes[ai];
      const size_t outputs = a.outputs.size(), bodies = a.bodies.size(), origins = a.origins.size();
      a.outputs.insert(a.outputs.end(), b.outputs.begin(), b.outputs.end());
      a.bodies.insert(a.bodies.end(), b.bodies.begin(), b.bodies.end());
      a.origins.insert(a.origins.end(), b.origins.begin(), b.origins.end());
      const int64_t merged = peak_bytes(p, nodes);
      if (merged > peak) {
        a.outputs.resize(outputs), a.bodies.resize(bodies), a.origins.resize(origins);
        nodes.insert(nodes.begin() + long(bi), std::move(b));
        continue;
      }
      peak = merged;
      reindex();
      --bi;  // (the next node moved into this slot)
      break;
    }
  }
  p.nodes = std::move(nodes);
  for (size_t i = 0; i < p.nodes.size(); ++i)
    for (int o : p.nodes[i].outputs) p.buffers[size_t(o)].producer = int(i);
}

}  // namespace kiln::inductor

// ---------------------------------------------------------------- row groups
//
// A reduction and the nodes after it over the same rows become one node (Node::stages): the
// reductions over the same output and reduction ranges (softmax's sum after its max), and the
// pointwise nodes over the rows' elements (its exp(x - max) / sum) or over the rows alone. Their
// kernel reads each row once per stage, from cache (or once in all, when the row fits in a
// block: emit_tile.cc), and what the earlier stages reduced stays in registers: a later stage's
// load of it at the row's offset is that register. A node joins only when everything it reads
// exists at the group's place and the merged program's peak memory is no higher.
namespace kiln::inductor {

std::optional<Index> row_index(const Node& r, const SymShape& sizes) {
  std::vector<std::pair<ExprPtr, SymInt>> xs, rs;  // the dims that are not 1: variable and extent
  for (size_t d = 0; d < r.vars.size(); ++d)
    if (!known_one(r.ranges[d])) xs.emplace_back(r.vars[d], r.ranges[d]);
  for (size_t d = 0; d < r.reduction_vars.size(); ++d)
    if (!known_one(r.reduction_ranges[d])) rs.emplace_back(r.reduction_vars[d], r.reduction_ranges[d]);
  size_t wide = 0;
  for (const SymInt& s : sizes) wide += known_one(s) ? 0 : 1;
  if (wide == xs.size() + rs.size()) xs.insert(xs.end(), rs.begin(), rs.end());
  else if (wide != xs.size()) return std::nullopt;
  Index idx;
  size_t k = 0;
  for (const SymInt& s : sizes) {
    if (known_one(s)) {
      idx.push_back(sym::constant(0));
      continue;
    }
    if (!sym::statically_known_equal(s, xs[k].second)) return std::nullopt;
    idx.push_back(xs[k++].first);
  }
  return idx;
}

namespace {

constexpr size_t kMaxRowBodies = 8;  // stages of one row group
constexpr size_t kRowLookAhead = 8;  // nodes after the group's reduction that may join it

bool same_ranges(const SymShape& a, const SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!sym::statically_known_equal(a[d], b[d])) return false;
  return true;
}

// v with its index expressions' variables replaced (interned again).
const Value* rebind(Program& p, const Value* v, const std::map<ExprPtr, ExprPtr>& with, std::map<const Value*, const Value*>& memo) {
  auto it = memo.find(v);
  if (it != memo.end()) return it->second;
  Value c = *v;
  for (const Value*& a : c.args) a = rebind(p, a, with, memo);
  if (c.index) c.index = substitute(c.index, with);
  return memo[v] = p.make(std::move(c));
}

// Whether e mentions one of vars.
bool mentions(const ExprPtr& e, const std::vector<ExprPtr>& vars) {
  if (std::find(vars.begin(), vars.end(), e) != vars.end()) return true;
  for (const ExprPtr& a : e->args)
    if (mentions(a, vars)) return true;
  return false;
}

}  // namespace

ExprPtr row_offset(const Program& p, const Node& g, int buffer) {
  const Buffer& b = p.buffers[size_t(buffer)];
  std::optional<Index> idx = row_index(g, b.sizes);
  KILN_CHECK(idx, "internal: inductor: ", b.name, " is not over the rows of ", g.name);
  std::map<ExprPtr, ExprPtr> ones;  // (index variables of size-1 dims are 0)
  for (size_t d = 0; d < g.vars.size(); ++d)
    if (known_one(g.ranges[d])) ones[g.vars[d]] = sym::constant(0);
  for (size_t d = 0; d < g.reduction_vars.size(); ++d)
    if (known_one(g.reduction_ranges[d])) ones[g.reduction_vars[d]] = sym::constant(0);
  return substitute(offset_of(*idx, b.strides), ones);
}

bool per_row(const Program& p, const Node& g, size_t body) {
  return g.stages.empty() || g.stages.at(body) || !mentions(row_offset(p, g, g.outputs[body]), g.reduction_vars);
}

namespace {

// argmax / argmin carry a position beside the value: their own kernel (emit_tile.cc), no row group.
bool is_arg_reduction(const Node& n) {
  return n.kind == NodeKind::Reduction && (n.reduce == tile::ReduceKind::Argmax || n.reduce == tile::ReduceKind::Argmin);
}

// Group g with node c appended, or nullopt when c cannot join it. `between`: the nodes
// between them (c moves before them).
std::optional<Node> join_row(Program& p, const Node& g, const Node& c, const std::vector<const Node*>& between) {
  if (g.outputs.size() + c.outputs.size() > kMaxRowBodies) return std::nullopt;
  std::map<ExprPtr, ExprPtr> with;  // c's variables in g's
  std::optional<tile::ReduceKind> stage;
  if (is_arg_reduction(c)) return std::nullopt;
  if (c.kind == NodeKind::Reduction && c.stages.empty()) {
    if (!same_ranges(c.ranges, g.ranges) || !same_ranges(c.reduction_ranges, g.reduction_ranges)) return std::nullopt;
    for (size_t d = 0; d < c.vars.size(); ++d) with[c.vars[d]] = g.vars[d];
    for (size_t d = 0; d < c.reduction_vars.size(); ++d) with[c.reduction_vars[d]] = g.reduction_vars[d];
    stage = c.reduce;
  } else if (c.kind == NodeKind::Pointwise) {
    std::optional<Index> idx = row_index(g, c.ranges);
    if (!idx) return std::nullopt;
    for (size_t d = 0; d < c.vars.size(); ++d) with[c.vars[d]] = (*idx)[d];
  } else {
    return std::nullopt;
  }
  for (const Node* n : between)
    if (n->kind == NodeKind::Extern) return std::nullopt;  // (it may write what c reads)
  std::map<int, ExprPtr> reduced;  // g's values per row (in registers): where a later stage reads them
  std::set<int> written;           // by the nodes c moves before, and g's values per element
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (per_row(p, g, i)) reduced[g.outputs[i]] = row_offset(p, g, g.outputs[i]);
    else written.insert(g.outputs[i]);
  }
  for (const Node* n : between) written.insert(n->outputs.begin(), n->outputs.end());
  const std::set<int> g_reads = loads_of(g);
  std::map<const Value*, const Value*> memo;
  std::vector<const Value*> bodies;
  for (const Value* b : c.bodies) bodies.push_back(rebind(p, b, with, memo));
  bool ok = true, related = false;
  std::set<const Value*> seen;
  std::function<void(const Value*)> check = [&](const Value* v) {
    if (!ok || !seen.insert(v).second) return;
    for (const Value* a : v->args) check(a);
    if (v->kind != ValueKind::Load) return;
    auto r = reduced.find(v->buffer);
    if (r != reduced.end()) {
      ok &= sym::statically_known_equal(v->index, r->second);
      related = true;
    } else {
      ok &= !written.count(v->buffer);
      related |= g_reads.count(v->buffer) > 0;
    }
  };
  for (const Value* b : bodies) check(b);
  if (!ok || !related) return std::nullopt;
  Node m = g;
  m.outputs.insert(m.outputs.end(), c.outputs.begin(), c.outputs.end());
  m.bodies.insert(m.bodies.end(), bodies.begin(), bodies.end());
  m.stages.insert(m.stages.end(), c.outputs.size(), stage);
  m.origins.insert(m.origins.end(), c.origins.begin(), c.origins.end());
  return m;
}

}  // namespace

void fuse_rows(Program& p) {
  std::vector<Node> nodes = std::move(p.nodes);
  int64_t peak = peak_bytes(p, nodes);  // of `nodes` as they stand
  for (size_t gi = 0; gi < nodes.size(); ++gi) {
    if (nodes[gi].kind != NodeKind::Reduction || !nodes[gi].stages.empty() || is_arg_reduction(nodes[gi])) continue;
    nodes[gi].stages = {nodes[gi].reduce};
    for (size_t ci = gi + 1; ci < nodes.size() && ci <= gi + kRowLookAhead;) {
      std::vector<const Node*> between;
      for (size_t k = gi + 1; k < ci; ++k) between.push_back(&nodes[k]);
      std::optional<Node> m = join_row(p, nodes[gi], nodes[ci], between);
      if (!m) {
        ++ci;
        continue;
      }
      // The group replaced by the merged node and the candidate taken out, in place (no copy
      // of the program's nodes per candidate); both put back when the peak would rise.
      std::swap(nodes[gi], *m);
      Node c = std::move(nodes[ci]);
      nodes.erase(nodes.begin() + long(ci));
      const int64_t merged = peak_bytes(p, nodes);
      if (merged > peak) {
        nodes.insert(nodes.begin() + long(ci), std::move(c));
        std::swap(nodes[gi], *m);
        ++ci;
        continue;
      }
      peak = merged;  // (the next candidate moved into slot ci)
    }
    if (nodes[gi].stages.size() == 1) nodes[gi].stages.clear();  // nothing joined: a plain reduction
  }
  p.nodes = std::move(nodes);
  for (size_t i = 0; i < p.nodes.size(); ++i)
    for (int o : p.nodes[i].outputs) p.buffers[size_t(o)].producer = int(i);
}

}  // namespace kiln::inductor
