// The lowering driver: graph inputs become buffers, each node goes to its family's lowering (or
// the fallback), and the outputs are realized.
#include "inductor/lower/lower.h"

#include <algorithm>
#include <set>

#include "ops/family.h"

namespace kiln::inductor {

bool known_one(const SymInt& s) { return sym::statically_known_equal(s, SymInt(1)); }

Index broadcast_index(const Index& out, const SymShape& in) {
  Index idx(in.size());
  const size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) idx[k] = known_one(in[k]) ? sym::constant(0) : out[lead + k];
  return idx;
}

ExprPtr substitute(const ExprPtr& e, const std::map<ExprPtr, ExprPtr>& with) {
  if (e->kind == sym::Kind::Symbol) {
    auto it = with.find(e);
    return it == with.end() ? e : it->second;
  }
  if (e->args.empty()) return e;
  std::vector<ExprPtr> a;
  for (const ExprPtr& x : e->args) a.push_back(substitute(x, with));
  ExprPtr r = a[0];
  switch (e->kind) {
    case sym::Kind::Add: for (size_t i = 1; i < a.size(); ++i) r = sym::add(r, a[i]); return r;
    case sym::Kind::Mul: for (size_t i = 1; i < a.size(); ++i) r = sym::mul(r, a[i]); return r;
    case sym::Kind::FloorDiv: return sym::floordiv(a[0], a[1]);
    case sym::Kind::Mod: return sym::mod(a[0], a[1]);
    case sym::Kind::Min: return sym::min(a[0], a[1]);
    case sym::Kind::Max: return sym::max(a[0], a[1]);
    default: return e;
  }
}

Lowering::Lowering(std::shared_ptr<const graph::Graph> g) : g_(std::move(g)) { prog_.graph = g_; }

const Def& Lowering::def(const graph::Value* v) const {
  auto it = defs_.find(v);
  KILN_CHECK(it != defs_.end(), "internal: inductor lowering: value #", v->id, " read before it is lowered");
  return it->second;
}

void Lowering::set(const graph::Value* v, Def d) {
  if (current_) {
    graph::Origin o = graph::origin_of(*current_);
    if (d.origins.empty() || !(d.origins.back() == o)) d.origins.push_back(o);
  }
  readers_left_[v] = int(v->users.size()) + (g_->is_output(v) ? 1 : 0);
  defs_[v] = std::move(d);
}

Loader Lowering::buffer_loader(int buffer) {
  return [this, buffer](const Index& idx) {
    return prog_.load(buffer, offset_of(idx, prog_.buffers[size_t(buffer)].strides));
  };
}

namespace {

bool uses(const ExprPtr& e, const ExprPtr& var) {
  if (e == var) return true;
  return std::any_of(e->args.begin(), e->args.end(), [&](const ExprPtr& a) { return uses(a, var); });
}

}  // namespace

bool Lowering::reads_only_broadcasts(const Def& d) {
  size_t inner = d.sizes.size();
  while (inner > 0 && known_one(d.sizes[inner - 1])) --inner;
  if (inner == 0) return true;
  const Index vars = index_vars("i", d.sizes);
  std::vector<const Value*> todo{d.fn(vars)};
  std::set<const Value*> seen;
  while (!todo.empty()) {
    const Value* x = todo.back();
    todo.pop_back();
    if (!seen.insert(x).second) continue;
    // (an indirect load, over gather variables, counts as varying)
    if (x->kind == ValueKind::Load && (!x->args.empty() || !x->index || uses(x->index, vars[inner - 1]))) return false;
    todo.insert(todo.end(), x->args.begin(), x->args.end());
  }
  return true;
}

Loader Lowering::loader(const graph::Value* v) {
  const Def& d = def(v);
  const int readers = readers_left_[v];  // (this reader included)
  // A value that loads nothing along its innermost dim (cross_entropy's one-hot gradient: a row's
  // target and a scalar) is recomputed by each reader, whatever it computes: a buffer of it would
  // cost a write and a read per reader of its full size, where its loads are one per row.
  if (d.buffer < 0 && should_realize(d, readers) && !(!should_realize(d, 1) && reads_only_broadcasts(d))) realize(v);
  const Def& now = def(v);
  return now.buffer >= 0 ? buffer_loader(now.buffer) : now.fn;
}

int Lowering::add_kernel_node(Node n, DType dtype, const SymShape& sizes) {
  Buffer b;
  b.kind = BufferKind::Temp;
  b.dtype = dtype;
  b.sizes = sizes;
  b.strides = contiguous_strides(sizes);
  b.producer = int(prog_.nodes.size());
  const int buf = prog_.add_buffer(std::move(b));
  n.outputs = {buf};
  prog_.nodes.push_back(std::move(n));
  return buf;
}

int Lowering::realize(const graph::Value* v) {
  Def& d = defs_.at(v);
  if (d.buffer >= 0) return d.buffer;
  if (d.view) {  // an eager view of its base's buffer: it aliases the base as in the graph
    const graph::Node* view = d.view;
    const int base = realize(view->inputs().at(0));  // the view's own input (itself maybe a view)
    Buffer b;
    b.dtype = v->spec.dtype;
    b.sizes = v->spec.sizes;
    b.strides = v->spec.strides;
    b.offset = v->spec.offset;
    b.producer = int(prog_.nodes.size());
    const int buf = prog_.add_buffer(std::move(b));
    Node n;
    n.kind = NodeKind::Extern;
    n.call = view;
    n.inputs = {base};
    n.outputs = {buf};
    n.origins = {graph::origin_of(*view)};
    prog_.nodes.push_back(std::move(n));
    defs_.at(v).buffer = buf;
    return buf;
  }
  Node n;
  n.kind = NodeKind::Pointwise;
  n.ranges = d.sizes;
  n.vars = index_vars("i", d.sizes);
  n.bodies = {d.fn(n.vars)};
  n.origins = d.origins;
  const int buf = add_kernel_node(std::move(n), d.dtype, d.sizes);
  Def& again = defs_.at(v);  // (defs_ may have grown while the body was built)
  again.buffer = buf;
  return buf;
}

void Lowering::realize_live_after(const graph::Node& n) {
  std::vector<const graph::Value*> live;
  for (auto& [v, d] : defs_) {
    if (d.buffer >= 0) continue;
    bool needed = g_->is_output(v);
    for (const graph::Node* u : v->users) needed |= !u->before(n) && u != &n;
    if (needed) live.push_back(v);
  }
  std::sort(live.begin(), live.end(), [](auto* a, auto* b) { return a->id < b->id; });  // deterministic
  for (const graph::Value* v : live) realize(v);
}

Program Lowering::run() {
  for (size_t i = 0; i < g_->inputs().size(); ++i) {
    const graph::Value* v = g_->inputs()[i];
    Buffer b;
    b.name = "in" + std::to_string(i);
    b.kind = BufferKind::Input;
    b.input = int(i);
    b.dtype = v->spec.dtype;
    b.sizes = v->spec.sizes;
    b.strides = v->spec.strides;
    b.offset = v->spec.offset;
    Def d;
    d.dtype = b.dtype;
    d.sizes = b.sizes;
    d.buffer = prog_.add_buffer(std::move(b));
    set(v, std::move(d));
  }
  for (const graph::Node* n : g_->nodes()) {
    current_ = n;
    bool done = false;
    if (n->kind == graph::NodeKind::Constant) {
      done = lower_pointwise(*this, *n);
    } else if (n->op == ops::OpId::custom) {
      done = lower_custom(*this, *n);
    } else {
      switch (ops::kOpFamily[size_t(n->op)]) {
        case ops::OpFamily::POINTWISE:
        case ops::OpFamily::CREATION: done = lower_pointwise(*this, *n); break;
        case ops::OpFamily::REDUCTION: done = lower_reduction(*this, *n) || lower_arg_reduction(*this, *n); break;
        case ops::OpFamily::SCAN: done = lower_scan(*this, *n); break;
        case ops::OpFamily::VIEW: done = lower_view(*this, *n); break;
        case ops::OpFamily::LAYOUT: done = lower_pad(*this, *n); break;
        case ops::OpFamily::INDEXING: done = lower_gather(*this, *n) || lower_scatter_add(*this, *n); break;
        default: break;
      }
    }
    if (!done) lower_extern(*this, *n);
    // What the node read has one reader fewer (the fusion decision counts the readers left).
    graph::each_input(*n, [&](const graph::Value* v) { --readers_left_[v]; });
  }
  current_ = nullptr;
  for (const graph::Value* v : g_->outputs()) prog_.outputs.push_back(realize(v));
  return std::move(prog_);
}

Program lower(std::shared_ptr<const graph::Graph> g) { return Lowering(std::move(g)).run(); }

}  // namespace kiln::inductor
