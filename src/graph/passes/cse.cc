// Common subexpression elimination over one forward sweep. A later node equal to an earlier one
// (same op, same arguments after earlier merges) takes over the earlier node's outputs. Nodes are
// found by a hash of (op, arguments) or (literal bytes, spec); equal hashes are compared exactly,
// so a collision costs a comparison, never a wrong merge.
#include <cstring>
#include <functional>
#include <vector>

#include "graph/passes/passes.h"
#include "graph/schema.h"

namespace kiln::graph {
namespace {

struct Hasher {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  void add(uint64_t x) {  // splitmix64 of (h + x): every input bit reaches every output bit
    uint64_t z = h + x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  }
  // Doubles by bits (so 0.0 and -0.0 differ, as arg_equal says), every NaN alike.
  void add_double(double d) {
    uint64_t bits = 0;
    if (d == d) std::memcpy(&bits, &d, sizeof d);
    else bits = 0x7ff8000000000000ull;
    add(bits);
  }
  void add_symint(const SymInt& s) {  // arg_equal compares SymInts by their text
    if (s.is_symbolic()) add(std::hash<std::string>{}(s.str()));
    else add(uint64_t(s.hint()));
  }
  void add_bytes(const void* p, size_t n) {
    if (n == 0) return;  // an empty literal may have no data pointer
    const auto* b = static_cast<const unsigned char*>(p);
    for (; n >= 8; n -= 8, b += 8) {
      uint64_t w;
      std::memcpy(&w, b, 8);
      add(w);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, b, n);
    add(tail ^ n);
  }

  void add_arg(const NodeArg& a) {
    add(a.index());
    struct {
      Hasher* s;
      void operator()(std::monostate) const {}
      void operator()(Value* v) const { s->add(reinterpret_cast<uintptr_t>(v)); }
      void operator()(const ValueList& l) const {
        s->add(l.size());
        for (Value* v : l) s->add(reinterpret_cast<uintptr_t>(v));
      }
      void operator()(const Scalar& x) const {
        s->add(uint64_t(x.kind()));
        if (x.is_float()) s->add_double(x.to_double());
        else s->add(uint64_t(x.to_int()));
      }
      void operator()(int64_t i) const { s->add(uint64_t(i)); }
      void operator()(double d) const { s->add_double(d); }
      void operator()(bool b) const { s->add(b); }
      void operator()(const std::vector<int64_t>& l) const {
        s->add(l.size());
        for (int64_t i : l) s->add(uint64_t(i));
      }
      void operator()(const SymInt& x) const { s->add_symint(x); }
      void operator()(const SymShape& l) const {
        s->add(l.size());
        for (const SymInt& x : l) s->add_symint(x);
      }
      void operator()(DType t) const { s->add(uint64_t(t)); }
      void operator()(const Device& d) const { s->add(std::hash<std::string>{}(d.str())); }
      void operator()(const std::string& x) const { s->add(std::hash<std::string>{}(x)); }
      void operator()(const std::vector<double>& l) const {
        s->add(l.size());
        for (double d : l) s->add_double(d);
      }
    } visitor{this};
    std::visit(visitor, a);
  }
};

size_t literal_bytes(const Node& n) { return size_t(n.literal.numel()) * n.literal.element_size(); }

bool same_call(const Node& a, const Node& b) {
  if (a.op != b.op || a.args.size() != b.args.size() || a.outputs.size() != b.outputs.size()) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!arg_equal(a.args[i], b.args[i])) return false;
  return true;
}

// Constants are equal when their bytes are (so 0.0 and -0.0 stay apart).
bool same_constant(const Node& a, const Node& b) {
  if (a.wrapped != b.wrapped || !same_spec(a.outputs[0]->spec, b.outputs[0]->spec)) return false;
  const size_t n = literal_bytes(a);
  return n == 0 || std::memcmp(a.literal.data_ptr(), b.literal.data_ptr(), n) == 0;
}

}  // namespace

uint64_t cse_hash(const Node& n) {
  Hasher h;
  h.add(uint64_t(n.kind));
  if (n.kind == NodeKind::Constant) {
    const TensorSpec& s = n.outputs.at(0)->spec;
    h.add(uint64_t(s.dtype));
    h.add(n.wrapped);
    h.add(s.sizes.size());
    for (const SymInt& d : s.sizes) h.add_symint(d);
    h.add_bytes(n.literal.data_ptr(), literal_bytes(n));
  } else {
    h.add(uint64_t(n.op));
    for (const NodeArg& a : n.args) h.add_arg(a);
  }
  return h.h;
}

namespace {

// The nodes seen so far, by hash: open addressing in one array sized for every node (no
// allocation per entry, no growth). Entries of equal hash sit in successive slots; an entry
// from before the latest mutation (an older epoch) is skipped.
class SeenTable {
 public:
  explicit SeenTable(size_t nodes) {
    size_t n = 16;
    while (n < 2 * nodes) n *= 2;
    slots_.resize(n);
  }
  template <class Same>
  Node* find(uint64_t h, uint32_t epoch, Same same) const {
    for (size_t i = h & mask(); slots_[i].node; i = (i + 1) & mask())
      if (slots_[i].hash == h && slots_[i].epoch == epoch && same(*slots_[i].node)) return slots_[i].node;
    return nullptr;
  }
  void insert(uint64_t h, uint32_t epoch, Node* n) {
    size_t i = h & mask();
    while (slots_[i].node) i = (i + 1) & mask();
    slots_[i] = {h, n, epoch};
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    Node* node = nullptr;
    uint32_t epoch = 0;
  };
  size_t mask() const { return slots_.size() - 1; }
  std::vector<Slot> slots_;
};

}  // namespace

void cse(Graph& g, uint64_t (*hash)(const Node&)) {
  SeenTable seen(g.nodes().size());  // at most one entry per node: never more than half full
  uint32_t epoch = 0;
  for (Node* n : g.nodes()) {  // erasing the current node keeps the iteration valid
    const bool constant = n->kind == NodeKind::Constant;
    if (!constant) {
      const uint32_t flags = ops::op_info(n->op).flags;
      if (flags & ops::MUTATES) {
        ++epoch;  // what earlier nodes read may have changed
        continue;
      }
      if (flags & ops::RANDOM) continue;
    }
    const uint64_t h = hash(*n);
    Node* match = seen.find(h, epoch, [&](const Node& m) {
      return constant ? m.kind == NodeKind::Constant && same_constant(m, *n) : m.kind == NodeKind::Call && same_call(m, *n);
    });
    if (!match) {
      seen.insert(h, epoch, n);
      continue;
    }
    for (size_t k = 0; k < n->outputs.size(); ++k) g.replace_all_uses(n->outputs[k], match->outputs[k]);
    g.erase_node(n);
  }
}

void cse(Graph& g) { cse(g, cse_hash); }

}  // namespace kiln::graph
