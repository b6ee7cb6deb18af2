// functionalize: removes mutation from a prim-level graph. Every value is tracked as a view
// chain on a base (a graph input or a non-view node output); each base has a latest value.
// copy_ into a base replaces its latest value; copy_ into a view scatters the written value into
// the base with index_put (at the flat positions the view chain picks out of an iota), and a
// view read after its base changed is regenerated from the latest base value. Writes into graph
// inputs become copy_ nodes at the end.
#include <unordered_map>

#include "aot/aot.h"
#include "graph/passes/passes.h"

namespace kiln::aot {
namespace {

using graph::Graph;
using graph::Node;
using graph::NodeArg;
using graph::Value;

struct Alias {
  const Value* base = nullptr;
  std::vector<const Node*> chain;  // view nodes from base to the value
};

class Functionalizer {
 public:
  explicit Functionalizer(const Graph& g) : g_(g) {}
  Graph run();

 private:
  Value* read(const Value* v);
  Value* replay(Value* start, const std::vector<const Node*>& chain);
  Value* one(ops::OpId op, std::vector<NodeArg> args) { return out_.add_call(op, std::move(args)).at(0); }
  Value* contiguous(Value* v);
  Value* scatter(Value* base, const std::vector<const Node*>& chain, Value* written);
  void write(const Node& n);

  const Graph& g_;
  Graph out_;
  std::unordered_map<const Value*, Alias> alias_;
  std::unordered_map<const Value*, Value*> latest_;  // per base
  std::unordered_map<const Value*, int> version_;    // per base: writes so far
  struct Cached {
    Value* value;
    int version;
  };
  std::unordered_map<const Value*, Cached> cur_;  // per view: its value at a base version
  std::unordered_map<const Value*, graph::Origin> write_origin_;  // per base: the origin of its latest write
};

Value* Functionalizer::contiguous(Value* v) {
  if (graph::is_contiguous_spec(v->spec)) return v;
  return one(ops::OpId::convert_element_type, {v, v->spec.dtype});
}

Value* Functionalizer::replay(Value* start, const std::vector<const Node*>& chain) {
  Value* x = start;
  for (const Node* n : chain) {
    Graph::OriginScope origin(out_, graph::origin_of(*n));
    // view and as_strided read strides: start them from a plain layout.
    if (n->op == ops::OpId::view || n->op == ops::OpId::as_strided) x = contiguous(x);
    std::vector<NodeArg> args = n->args;
    args.at(0) = x;
    x = one(n->op, std::move(args));
  }
  return x;
}

Value* Functionalizer::read(const Value* v) {
  const Alias& a = alias_.at(v);
  if (a.chain.empty()) return latest_.at(a.base);
  auto it = cur_.find(v);
  const int ver = version_[a.base];
  if (it != cur_.end() && it->second.version == ver) return it->second.value;
  Value* x = replay(latest_.at(a.base), a.chain);
  cur_[v] = {x, ver};
  return x;
}

Value* Functionalizer::scatter(Value* base, const std::vector<const Node*>& chain, Value* written) {
  const TensorSpec& bs = base->spec;
  SymInt n = 1;
  for (const SymInt& s : bs.sizes) n = n * s;
  SymInt m = 1;
  for (const SymInt& s : written->spec.sizes) m = m * s;
  // positions[i] = the flat index into base of the view's i-th element
  Value* iota = one(ops::OpId::iota, {n, Scalar(int64_t(0)), Scalar(int64_t(1)), DType::Int64, bs.device});
  Value* positions = replay(one(ops::OpId::view, {iota, SymShape(bs.sizes)}), chain);
  auto flatten = [&](Value* v, const SymInt& len) {
    v = contiguous(v);
    return v->spec.sizes.size() == 1 ? v : one(ops::OpId::view, {v, SymShape{len}});
  };
  positions = flatten(positions, m);
  Value* flat = flatten(base, n);
  Value* src = flatten(written, m);
  Value* updated = one(ops::OpId::index_put, {flat, graph::ValueList{positions}, src, false});
  return bs.sizes.size() == 1 ? updated : one(ops::OpId::view, {updated, SymShape(bs.sizes)});
}

void Functionalizer::write(const Node& n) {
  const Value* dst = n.args.at(0).index() == 1 ? std::get<Value*>(n.args[0]) : nullptr;
  KILN_CHECK(dst, "internal: aot functionalize: copy_ without a destination");
  Value* src = read(std::get<Value*>(n.args.at(1)));
  const TensorSpec& ds = dst->spec;
  if (src->spec.dtype != ds.dtype) src = one(ops::OpId::convert_element_type, {src, ds.dtype});
  if (src->spec.sizes != ds.sizes) src = one(ops::OpId::expand, {src, SymShape(ds.sizes)});
  const Alias a = alias_.at(dst);
  Value*& base = latest_.at(a.base);
  base = a.chain.empty() ? src : scatter(base, a.chain, src);
  const int ver = ++version_[a.base];
  write_origin_[a.base] = graph::origin_of(n);
  alias_[n.outputs.at(0)] = a;
  if (!a.chain.empty()) cur_[n.outputs[0]] = {src, ver};
}

// Whether v is (a view of) a graph input, so reading it after writing the input would see the write.
bool aliases_input(const Value* v) {
  while (v->producer && ops::op_info(v->producer->op).kind == ops::OpKind::VIEW)
    v = std::get<Value*>(v->producer->args.at(0));
  return v->producer == nullptr;
}

Graph Functionalizer::run() {
  std::vector<Value*> new_inputs;
  for (const Value* v : g_.inputs()) {
    Value* nv = out_.add_input(v->spec, v->name);
    new_inputs.push_back(nv);
    alias_[v] = {v, {}};
    latest_[v] = nv;
  }
  for (const auto& np : g_.nodes()) {
    const Node& n = *np;
    Graph::OriginScope origin(out_, graph::origin_of(n));
    if (n.kind == graph::NodeKind::Constant) {
      alias_[n.outputs[0]] = {n.outputs[0], {}};
      latest_[n.outputs[0]] = out_.add_constant(n.literal, n.wrapped);
      continue;
    }
    const ops::OpInfo& info = ops::op_info(n.op);
    if (info.flags & ops::MUTATES) {
      write(n);
      continue;
    }
    std::vector<NodeArg> args = n.args;
    for (NodeArg& a : args) {
      if (auto* v = std::get_if<Value*>(&a)) *v = read(*v);
      if (auto* l = std::get_if<graph::ValueList>(&a))
        for (Value*& e : *l)
          if (e) e = read(e);
    }
    std::vector<Value*> outs = out_.add_call(n.op, std::move(args));
    if (info.kind == ops::OpKind::VIEW) {
      Alias a = alias_.at(std::get<Value*>(n.args.at(0)));
      a.chain.push_back(&n);
      alias_[n.outputs[0]] = a;
      cur_[n.outputs[0]] = {outs[0], version_[a.base]};
      continue;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      alias_[n.outputs[k]] = {n.outputs[k], {}};
      latest_[n.outputs[k]] = outs[k];
    }
  }
  // Writes into inputs land at the end, after every read of the old contents.
  std::unordered_map<const Value*, Value*> final_input;
  for (size_t i = 0; i < g_.inputs().size(); ++i) {
    const Value* in = g_.inputs()[i];
    Value* v = new_inputs[i];
    if (version_[in] > 0) {
      Graph::OriginScope origin(out_, write_origin_.at(in));
      Value* val = latest_.at(in);
      if (aliases_input(val)) val = out_.add_call(ops::OpId::convert_element_type, {val, val->spec.dtype}).at(0);
      v = out_.add_call(ops::OpId::copy_, {v, val}).at(0);
    }
    final_input[in] = v;
  }
  std::vector<Value*> outputs;
  for (const Value* v : g_.outputs()) {
    const Alias& a = alias_.at(v);
    auto it = final_input.find(a.base);
    // An output that is (a view of) an input is taken from the written input: it aliases it, as in eager.
    outputs.push_back(it != final_input.end() ? replay(it->second, a.chain) : read(v));
  }
  out_.set_outputs(outputs);
  graph::dce(out_);
  return std::move(out_);
}

}  // namespace

Graph functionalize(const Graph& g) { return Functionalizer(g).run(); }

}  // namespace kiln::aot
