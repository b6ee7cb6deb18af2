// The loop IR's values (interned), layouts, text form and verifier.
#include "inductor/loop_ir.h"

#include "inductor/lower/lower.h"
#include "tile/prims.h"

#include <algorithm>
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

// The symbols of e that are keys of `of`, each once, in sym's order (deterministic).
std::vector<ExprPtr> symbols_in(const ExprPtr& e, const std::map<ExprPtr, const Value*>& of) {
  std::set<ExprPtr> found;
  std::function<void(const ExprPtr&)> go = [&](const ExprPtr& x) {
    if (x->kind == sym::Kind::Symbol && of.count(x)) found.insert(x);
    for (const ExprPtr& a : x->args) go(a);
  };
  go(e);
  std::vector<ExprPtr> out(found.begin(), found.end());
  std::sort(out.begin(), out.end(), [](const ExprPtr& a, const ExprPtr& b) { return sym::compare(a, b) < 0; });
  return out;
}

}  // namespace

ExprPtr gather_var(size_t k, const ExprPtr& extent) { return sym::index("g" + std::to_string(k), extent); }

bool is_gather_var(const ExprPtr& e, size_t* k) {
  if (e->kind != sym::Kind::Symbol || !e->extent || e->name.size() < 2 || e->name[0] != 'g') return false;
  for (size_t i = 1; i < e->name.size(); ++i)
    if (e->name[i] < '0' || e->name[i] > '9') return false;
  if (k) *k = size_t(std::stoull(e->name.substr(1)));
  return true;
}

ExprPtr Program::gather_symbol(const Value* at, const SymInt& extent) {
  KILN_CHECK(is_integral(at->dtype), "internal: inductor: a gather index of dtype ", name(at->dtype));
  ExprPtr s = sym::index("gather" + std::to_string(gathered_.size()), extent.as_expr());
  gathered_[s] = at;
  return s;
}

const char* node_kind_name(NodeKind k) {
  switch (k) {
    case NodeKind::Pointwise: return "pointwise";
    case NodeKind::Reduction: return "reduction";
    case NodeKind::Scan: return "scan";
    case NodeKind::Extern: return "extern";
  }
  return "?";
}

bool Program::Key::operator==(const Key& o) const {
  const Value &a = *v, &b = *o.v;
  return a.kind == b.kind && a.dtype == b.dtype && a.op == b.op && a.rounding == b.rounding && a.args == b.args &&
         a.buffer == b.buffer && a.masked == b.masked && a.index == b.index && number_kind(a.number) == number_kind(b.number) &&
         number_bits(a.number) == number_bits(b.number);
}

size_t Program::KeyHash::operator()(const Key& k) const {
  const Value& v = *k.v;
  size_t h = mix(size_t(v.kind), size_t(v.dtype));
  h = mix(h, size_t(v.op));
  h = mix(h, size_t(v.rounding));
  for (const Value* a : v.args) h = mix(h, std::hash<const void*>()(a));
  h = mix(h, size_t(v.buffer + 1) * 2 + v.masked);
  if (v.index) h = mix(h, size_t(sym::hash(v.index)));
  h = mix(h, number_bits(v.number));
  return h;
}

const Value* Program::make(Value v) {
  if (v.index && !gathered_.empty() && (v.kind == ValueKind::Load || v.kind == ValueKind::Index)) {
    std::map<ExprPtr, ExprPtr> local;  // gather_symbol's variables -> this value's g<k>
    const Value* mask = v.masked ? v.args.back() : nullptr;  // (stays the last arg)
    if (mask) v.args.pop_back();
    for (const ExprPtr& s : symbols_in(v.index, gathered_)) {
      local[s] = gather_var(v.args.size(), s->extent);
      v.args.push_back(gathered_.at(s));
    }
    if (mask) v.args.push_back(mask);
    if (!local.empty()) v.index = substitute(v.index, local);
  }
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

const Value* Program::under_mask(const Value* v, const Value* mask, const std::map<ExprPtr, ExprPtr>& with) {
  if (mask->kind == ValueKind::Constant && !mask->number.to_bool()) return constant(kiln::Scalar(int64_t(0)), v->dtype);
  std::map<const Value*, const Value*> done;
  std::function<const Value*(const Value*)> go = [&](const Value* x) -> const Value* {
    if (x->kind == ValueKind::Constant) return x;
    auto it = done.find(x);
    if (it != done.end()) return it->second;
    Value y = *x;
    for (const Value*& a : y.args) a = go(a);
    if (y.index && !with.empty()) y.index = substitute(y.index, with);
    if (y.kind == ValueKind::Load && mask->kind != ValueKind::Constant) {
      if (y.masked) y.args.back() = call(ops::OpId::logical_and, {y.args.back(), mask}, kBool);
      else y.args.push_back(mask), y.masked = true;
    }
    return done[x] = make(std::move(y));
  };
  return go(v);
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
  KILN_CHECK(idx.size() == strides.size(), "internal: inductor: an index of rank ", idx.size(), " into a buffer of rank ",
             strides.size());
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

DType implied_constant_dtype(const Value* user, int i, DType stored) {
  if (!user) return stored;
  if (user->kind == ValueKind::Check) return i == 0 ? kBool : kInt64;
  if (user->kind == ValueKind::Call) {
    if (user->op == ops::OpId::where && i == 0) return kBool;
    // Every other operand meets the others in their compute dtype (lower/pointwise.cc).
    for (size_t a = user->op == ops::OpId::where ? 1 : 0; a < user->args.size(); ++a)
      if (user->args[a] && user->args[a]->kind != ValueKind::Constant) return user->args[a]->dtype;  // (null: a constant being parsed)
  }
  return user->dtype;
}

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
  // v's name as an operand of `user` (a constant inline, its dtype when not the implied one).
  std::string operator()(const Value* v, const Value* user, int i, DType stored) {
    if (v->kind == ValueKind::Constant) {
      std::string s = v->number.str();
      if (v->dtype != implied_constant_dtype(user, i, stored)) s += std::string(":") + tile::short_name(v->dtype);
      return s;
    }
    auto it = names_.find(v);
    if (it != names_.end()) return it->second;
    std::vector<std::string> args;
    for (size_t a = 0; a < v->args.size(); ++a) args.push_back((*this)(v->args[a], v, int(a), v->dtype));
    std::string rhs;
    switch (v->kind) {
      case ValueKind::Load:
        rhs = "load" + gather_vars(v, args) + " " + p_.buffers[size_t(v->buffer)].name + "[" + sym::str(v->index) + "]";
        if (v->masked) rhs += " if " + args.back();
        break;
      case ValueKind::Constant: break;  // (above)
      case ValueKind::Index: rhs = "index" + gather_vars(v, args) + " " + sym::str(v->index); break;
      case ValueKind::Cast: rhs = "cast " + args[0]; break;
      case ValueKind::Check: rhs = std::string("check ") + ops::op_info(v->op).name + " " + args[0] + ", " + args[1] + ", " + args[2]; break;
      case ValueKind::Call: {
        rhs = ops::op_info(v->op).name;
        if (v->rounding == tile::Rounding::Trunc) rhs += "[trunc]";
        if (v->rounding == tile::Rounding::Floor) rhs += "[floor]";
        for (size_t i = 0; i < args.size(); ++i) rhs += (i ? ", " : " ") + args[i];
        break;
      }
    }
    std::string name = "t";
    name += std::to_string(next_++);
    os_ << "    " << name << ": " << tile::short_name(v->dtype) << " = " << rhs << "\n";
    return names_[v] = name;
  }

 private:
  // An indirect load's gather variables: "(g0 < extent = t3, ...)" (nothing for a plain one).
  static std::string gather_vars(const Value* v, const std::vector<std::string>& args) {
    if (gather_count(*v) == 0) return "";
    std::vector<ExprPtr> vars(gather_count(*v));
    std::function<void(const ExprPtr&)> go = [&](const ExprPtr& e) {
      size_t k;
      if (is_gather_var(e, &k) && k < vars.size()) vars[k] = e;
      for (const ExprPtr& a : e->args) go(a);
    };
    go(v->index);
    std::string out = "(";
    for (size_t k = 0; k < vars.size(); ++k) {
      KILN_CHECK(vars[k], "internal: loop IR: gather variable g", k, " of a ", v->kind == ValueKind::Load ? "load" : "index",
                 " is not in its index ", sym::str(v->index));
      out += (k ? ", " : "") + vars[k]->name + " < " + sym::str(vars[k]->extent) + " = " + args[k];
    }
    return out + ")";
  }

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
      os << " = " << (n.call ? n.call->name() : n.extern_op.c_str()) << "(";
      for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << p.buffers[size_t(n.inputs[i])].name;
      os << ")";
    } else {
      os << " over [" << vars_str(n.vars, n.ranges) << "]";
      if (n.kind == NodeKind::Reduction)
        os << " " << tile::reduce_name(n.reduce) << " over [" << vars_str(n.reduction_vars, n.reduction_ranges) << "]";
      if (n.kind == NodeKind::Scan) os << " " << tile::scan_name(n.scan) << " along " << n.vars.at(size_t(n.scan_axis))->name;
    }
    std::string origins;
    for (const graph::Origin& o : n.origins)
      if (o.known()) origins += (origins.empty() ? "" : ", ") + graph::origin_str(o);
    if (!origins.empty()) os << "  # " << origins;
    os << "\n";
    if (n.kind != NodeKind::Extern) {
      BodyPrinter bp(p, os);
      for (size_t i = 0; i < n.bodies.size(); ++i) {
        const DType stored = p.buffers[size_t(n.outputs[i])].dtype;
        std::string r = bp(n.bodies[i], nullptr, -1, stored);
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
      if (!n.call && n.extern_op.empty()) bad("an extern without a graph node");
    } else {
      if (n.outputs.empty() || n.outputs.size() != n.bodies.size()) bad("a kernel node stores one body per output");
      if (n.kind == NodeKind::Reduction && n.outputs.size() != 1 && n.stages.size() != n.outputs.size())
        bad("a reduction writes one buffer (a row group: one per stage)");
      const bool extreme = n.kind == NodeKind::Scan && (n.scan == tile::ScanKind::Cummax || n.scan == tile::ScanKind::Cummin);
      if (n.kind == NodeKind::Scan && n.outputs.size() != (extreme ? 2u : 1u))
        bad("a scan writes one buffer (cummax / cummin: the values and their positions)");
      if (extreme && (n.bodies[0] != n.bodies[1] || p.buffers[size_t(n.outputs[1])].dtype != kInt64))
        bad("a cummax / cummin stores its value into its first buffer and the value's position (i64) into its second");
      if (n.kind == NodeKind::Scan && (n.scan_axis < 0 || size_t(n.scan_axis) >= n.vars.size() || !n.reduction_vars.empty()))
        bad("a scan runs along one of its variables");
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
          if (v->masked && (v->args.empty() || v->args.back()->dtype != kBool)) bad("a masked load's mask is not a bool");
        }
        if (v->index) {
          std::set<ExprPtr> syms;
          collect_symbols(v->index, syms);
          const bool indirect = v->kind == ValueKind::Load || v->kind == ValueKind::Index;
          for (const ExprPtr& s : syms) {
            size_t k;
            if (indirect && is_gather_var(s, &k)) {
              if (k >= gather_count(*v)) bad("index " + sym::str(v->index) + " uses " + s->name + " without its value");
              else if (!is_integral(v->args[k]->dtype)) bad("gather variable " + s->name + " is not an integer");
            } else if (s->extent && !allowed.count(s)) {
              bad("index " + sym::str(v->index) + " uses a variable of another node");
            }
          }
        }
        if (v->kind == ValueKind::Call && v->args.empty()) bad("a call without operands");
        if (v->kind == ValueKind::Check &&
            (v->args.size() != 3 || v->dtype != kBool || v->args[0]->dtype != kBool || v->args[1]->dtype != kInt64 ||
             v->args[2]->dtype != kInt64 || v->op == ops::OpId::NumOps))
          bad("a check takes (b8 in range, i64 index, i64 size) and names its op");
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
