// The loop IR's values (interned), layouts, text form and verifier.
#include "inductor/loop_ir.h"

#include "tile/prims.h"

#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <sstream>

namespace kiln::inductor {
namespace {

// Constants compare by kind and bits: 0.0 and -0.0 are two values, NaN equals itself.
uint64_t number_bits(const kiln::Scalar& s) {
  if (!s.is_float()) return uint64_t(s.to_int());
  double d = s.to_double();
  uint64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
}
int number_kind(const kiln::Scalar& s) { return s.is_float() ? 2 : s.is_int() ? 1 : 0; }

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2)); }

}  // namespace

const char* node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Pointwise: return "pointwise";
    case NodeKind::Reduction: return "reduction";
    case NodeKind::Extern: return "extern";
  }
  return "?";
}

bool Program::Key::operator==(const Key& o) const {
  const Value &a = *v, &b = *o.v;
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.rounding == b.rounding && a.args == b.args &&
         a.buffer == b.buffer && a.index == b.index && number_kind(a.number) == number_kind(b.number) &&
         number_bits(a.number) == number_bits(b.number);
}

size_t Program::KeyHash::operator()(const Key& k) const {
  const Value& v = *k.v;
  size_t h = mix(size_t(v.kind), size_t(v.dtype));
  h = mix(h, size_t(v.op));
  h = mix(h, size_t(v.rounding));
  for (const Value* a : v.args) h = mix(h, std::hash<const void*>()(a));
  h = mix(h, size_t(v.buffer + 1));
  if (v.index) h = mix(h, size_t(sym::hash(v.index)));
  h = mix(h, number_bits(v.number));
  return h;
}

const Value* Program::make(Value v) {
  auto it = interned_.find(Key{&v});
  if (it != interned_.end()) return it->second;
  values_.push_back(std::make_unique<Value>(std::move(v)));
  const Value* p = values_.back().get();
  interned_.emplace(Key{p}, p);
  return p;
}

const Value* Program::constant(kiln::Scalar x, DType d) {
  Value v;
  v.kind = ValueKind::Constant;
  v.dtype = d;
  v.number = x;
  return make(std::move(v));
}

const Value* Program::load(int buffer, ExprPtr index) {
  Value v;
  v.kind = ValueKind::Load;
  v.dtype = buffers.at(size_t(buffer)).dtype;
  v.buffer = buffer;
  v.index = std::move(index);
  return make(std::move(v));
}

const Value* Program::call(ops::OpId op, std::vector<const Value*> args, DType d, tile::Rounding r) {
  Value v;
  v.kind = ValueKind::Call;
  v.dtype = d;
  v.op = op;
  v.rounding = r;
  v.args = std::move(args);
  return make(std::move(v));
}

const Value* Program::cast(const Value* x, DType d) {
  if (x->dtype == d) return x;
  if (x->kind == ValueKind::Constant) return constant(tile::eval_cast(x->number, x->dtype, d), d);
  Value v;
  v.kind = ValueKind::Cast;
  v.dtype = d;
  v.args = {x};
  return make(std::move(v));
}

int Program::add_buffer(Buffer b) {
  if (b.name.empty()) b.name = "buf" + std::to_string(buffers.size());
  buffers.push_back(std::move(b));
  return int(buffers.size()) - 1;
}

SymShape contiguous_strides(const SymShape& sizes) {
  SymShape st(sizes.size());
  SymInt s = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    st[d] = s;
    s = s * sizes[d];
  }
  return st;
}

ExprPtr offset_of(const std::vector<ExprPtr>& idx, const SymShape& strides) {
  ExprPtr e = sym::constant(0);
  for (size_t d = 0; d < idx.size(); ++d) e = sym::add(e, sym::mul(idx[d], strides[d].as_expr()));
  return e;
}

std::vector<ExprPtr> index_vars(const std::string& prefix, const SymShape& extents) {
  std::vector<ExprPtr> v;
  for (size_t d = 0; d < extents.size(); ++d) v.push_back(sym::index(prefix + std::to_string(d), extents[d].as_expr()));
  return v;
}

ExprPtr product(const SymShape& sizes) {
  ExprPtr e = sym::constant(1);
  for (const SymInt& s : sizes) e = sym::mul(e, s.as_expr());
  return e;
}

// ---------------------------------------------------------------- text form

namespace {

std::string dims_str(const SymShape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + s[i].str();
  return out + "]";
}

std::string vars_str(const std::vector<ExprPtr>& vars, const SymShape& ranges) {
  std::string out;
  for (size_t i = 0; i < vars.size(); ++i) out += (i ? ", " : "") + vars[i]->name + " < " + ranges[i].str();
  return out;
}

// Names values t0, t1, ... in the order print reaches them (operands first).
class BodyPrinter {
 public:
  BodyPrinter(const Program& p, std::ostringstream& os) : p_(p), os_(os) {}
  std::string operator()(const Value* v) {
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::vector<std::string> args;
    for (const Value* a : v->args) args.push_back((*this)(a));
    std::string rhs;
    switch (v->kind) {
      case ValueKind::Load: rhs = "load " + p_.buffers[size_t(v->buffer)].name + "[" + sym::str(v->index) + "]"; break;
      case ValueKind::Constant: return names_[v] = v->number.str();  // inline, no line of its own
      case ValueKind::Index: rhs = "index " + sym::str(v->index); break;
      case ValueKind::Cast: rhs = "cast " + args[0]; break;
      case ValueKind::Call: {
        rhs = ops::op_info(v->op).name;
        if (v->rounding == tile::Rounding::Trunc) rhs += "[trunc]";
        if (v->rounding == tile::Rounding::Floor) rhs += "[floor]";
        for (size_t i = 0; i < args.size(); ++i) rhs += (i ? ", " : " ") + args[i];
        break;
      }
    }
    std::string name = "t" + std::to_string(next_++);
    os_ << "    " << name << ": " << tile::short_name(v->dtype) << " = " << rhs << "\n";
    return names_[v] = name;
  }

 private:
  const Program& p_;
  std::ostringstream& os_;
  std::map<const Value*, std::string> names_;
  int next_ = 0;
};

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Constant: return "constant";
    case BufferKind::Temp: return "temp";
  }
  return "?";
}

}  // namespace

std::string print(const Program& p) {
  std::ostringstream os;
  for (const Buffer& b : p.buffers) {
    os << b.name << ": " << buffer_kind_name(b.kind);
    if (b.kind == BufferKind::Input) os << " " << b.input;
    os << " " << tile::short_name(b.dtype) << dims_str(b.sizes) << " strides " << dims_str(b.strides);
    if (b.offset.is_symbolic() || b.offset.value() != 0) os << " offset " << b.offset.str();
    os << "\n";
  }
  for (const Node& n : p.nodes) {
    os << n.name << ": " << node_kind_name(n.kind);
    for (size_t i = 0; i < n.outputs.size(); ++i) os << (i ? ", " : " -> ") << p.buffers[size_t(n.outputs[i])].name;
    if (n.kind == NodeKind::Extern) {
      os << " = " << n.call->name() << "(";
      for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << p.buffers[size_t(n.inputs[i])].name;
      os << ")";
    } else {
      os << " over [" << vars_str(n.vars, n.ranges) << "]";
      if (n.kind == NodeKind::Reduction)
        os << " " << tile::reduce_name(n.reduce) << " over [" << vars_str(n.reduction_vars, n.reduction_ranges) << "]";
    }
    std::string origins;
    for (const graph::Origin& o : n.origins)
      if (o.known()) origins += (origins.empty() ? "" : ", ") + graph::origin_str(o);
    if (!origins.empty()) os << "  # " << origins;
    os << "\n";
    if (n.kind != NodeKind::Extern) {
      BodyPrinter bp(p, os);
      for (size_t i = 0; i < n.bodies.size(); ++i) {
        std::string r = bp(n.bodies[i]);
        std::string stage;  // a row group's stage: how the body is reduced (an epilogue: not)
        if (!n.stages.empty()) stage = n.stages[i] ? std::string(tile::reduce_name(*n.stages[i])) + " " : "";
        os << "    store " << (n.bodies.size() > 1 ? p.buffers[size_t(n.outputs[i])].name + " " : "") << stage << r << "\n";
      }
    }
  }
  os << "outputs:";
  for (int b : p.outputs) os << " " << p.buffers[size_t(b)].name;
  os << "\n";
  return os.str();
}

// ---------------------------------------------------------------- verifier

namespace {

void collect_symbols(const ExprPtr& e, std::set<ExprPtr>& out) {
  if (e->kind == sym::Kind::Symbol) out.insert(e);
  for (const ExprPtr& a : e->args) collect_symbols(a, out);
}

}  // namespace

void verify(const Program& p) {
  const size_t nb = p.buffers.size();
  std::vector<bool> defined(nb, false);
  for (size_t b = 0; b < nb; ++b) {
    const Buffer& buf = p.buffers[b];
    KILN_CHECK(buf.sizes.size() == buf.strides.size(), "loop IR: buffer ", buf.name, " has ", buf.sizes.size(),
               " sizes but ", buf.strides.size(), " strides");
    defined[b] = buf.kind != BufferKind::Temp;
  }
  for (const Node& n : p.nodes) {
    auto bad = [&](const std::string& why) { detail::fail("loop IR: node " + n.name + ": " + why); };
    for (int in : n.inputs)
      if (in < 0 || size_t(in) >= nb || !defined[size_t(in)]) bad("reads buffer " + std::to_string(in) + " before it is written");
    if (n.kind == NodeKind::Extern) {
      if (!n.call) bad("an extern without a graph node");
    } else {
      if (n.outputs.empty() || n.outputs.size() != n.bodies.size()) bad("a kernel node stores one body per output");
      if (n.kind == NodeKind::Reduction && n.outputs.size() != 1 && n.stages.size() != n.outputs.size())
        bad("a reduction writes one buffer (a row group: one per stage)");
      if (n.vars.size() != n.ranges.size() || n.reduction_vars.size() != n.reduction_ranges.size())
        bad("one index variable per range");
      for (const Value* b : n.bodies)
        if (!b) bad("no body");
      std::set<ExprPtr> allowed(n.vars.begin(), n.vars.end());
      allowed.insert(n.reduction_vars.begin(), n.reduction_vars.end());
      std::set<const Value*> seen;
      std::function<void(const Value*)> check = [&](const Value* v) {
        if (!seen.insert(v).second) return;
        for (const Value* a : v->args) check(a);
        if (v->kind == ValueKind::Load) {
          if (v->buffer < 0 || size_t(v->buffer) >= nb || !defined[size_t(v->buffer)])
            bad("loads buffer " + std::to_string(v->buffer) + " before it is written");
          if (v->dtype != p.buffers[size_t(v->buffer)].dtype) bad("a load's dtype differs from its buffer's");
        }
        if (v->index) {
          std::set<ExprPtr> syms;
          collect_symbols(v->index, syms);
          for (const ExprPtr& s : syms)
            if (s->extent && !allowed.count(s)) bad("index " + sym::str(v->index) + " uses a variable of another node");
        }
        if (v->kind == ValueKind::Call && v->args.empty()) bad("a call without operands");
      };
      for (size_t i = 0; i < n.bodies.size(); ++i) {
        check(n.bodies[i]);
        const int o = n.outputs[i];  // a row group's later stages read its earlier ones
        if (!n.stages.empty() && o >= 0 && size_t(o) < nb) defined[size_t(o)] = true;
        if (p.buffers[size_t(n.outputs[i])].sizes.size() != n.ranges.size() && n.stages.empty())
          bad("its ranges do not match its output's rank");
      }
    }
    for (int o : n.outputs) {
      if (o < 0 || size_t(o) >= nb) bad("writes a buffer out of range");
      defined[size_t(o)] = true;
    }
  }
  for (int o : p.outputs)
    KILN_CHECK(o >= 0 && size_t(o) < nb && defined[size_t(o)], "loop IR: output buffer ", o, " is never written");
}

}  // namespace kiln::inductor
