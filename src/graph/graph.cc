#include "graph/graph.h"

#include <kiln/autocast.h>
#include <kiln/autograd.h>

#include <algorithm>
#include <cctype>

#include "core/tensor_impl.h"
#include "ops/fake_mode.h"
#include "graph/schema.h"
#include "sym/expr.h"

namespace kiln::graph {
namespace {

template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

// Names are identifiers (they print as %name); anything else becomes '_'.
std::string sanitize(std::string n) {
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  if (!n.empty() && std::isdigit(static_cast<unsigned char>(n[0]))) n = "_" + n;
  return n;
}

}  // namespace

ops::Arg box_arg(const NodeArg& a, const std::function<Tensor(const Value*)>& tensor_of) {
  return std::visit(Overload{[&](Value* v) -> ops::Arg { return tensor_of(v); },
                             [&](const ValueList& l) -> ops::Arg {
                               TensorList t;
                               for (Value* v : l) t.push_back(v ? tensor_of(v) : Tensor());
                               return t;
                             },
                             [](const auto& x) -> ops::Arg { return x; }},
                    a);
}

NodeArg unbox_arg(const ops::Arg& a, const std::function<Value*(const Tensor&)>& value_of) {
  return std::visit(Overload{[&](const Tensor& t) -> NodeArg {
                               if (!t.defined()) return std::monostate{};
                               return value_of(t);
                             },
                             [&](const TensorList& l) -> NodeArg {
                               ValueList vl;
                               for (const Tensor& t : l) vl.push_back(t.defined() ? value_of(t) : nullptr);
                               return vl;
                             },
                             [](const auto& x) -> NodeArg { return x; }},
                    a);
}

const char* Node::name() const { return kind == NodeKind::Constant ? "constant" : ops::op_info(op).name; }

std::vector<Value*> Node::inputs() const {
  std::vector<Value*> r;
  for (const NodeArg& a : args) {
    if (auto* v = std::get_if<Value*>(&a)) r.push_back(*v);
    if (auto* l = std::get_if<ValueList>(&a))
      for (Value* v : *l)
        if (v) r.push_back(v);
  }
  return r;
}

TensorSpec normalized(TensorSpec spec) {
  if (spec.strides.empty() && !spec.sizes.empty()) spec.strides = contiguous_strides(spec.sizes);
  return spec;
}

static bool same_sym(const SymInt& a, const SymInt& b) {
  if (!a.is_symbolic() && !b.is_symbolic()) return a.hint() == b.hint();
  return sym::equal(a.as_expr(), b.as_expr());
}
static bool same_syms(const SymShape& a, const SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_sym(a[i], b[i])) return false;
  return true;
}

bool same_spec(const TensorSpec& x, const TensorSpec& y) {
  const TensorSpec a = normalized(x), b = normalized(y);
  return a.dtype == b.dtype && a.device == b.device && same_syms(a.sizes, b.sizes) &&
         same_syms(a.strides, b.strides) && same_sym(a.offset, b.offset);
}

bool is_contiguous_spec(const TensorSpec& s) {
  const TensorSpec n = normalized(s);
  return same_syms(n.strides, contiguous_strides(n.sizes));
}

Tensor fake_of(const Value* v) {
  Tensor t = make_fake(v->spec);
  if (v->producer && v->producer->kind == NodeKind::Constant && v->producer->wrapped) t.impl()->wrapped_number = true;
  return t;
}

void canonicalize_args(ops::OpId op, std::vector<NodeArg>& args) {
  const Schema& s = schema_of(op);
  for (size_t i = 0; i < args.size() && i < s.args.size(); ++i) {
    NodeArg& a = args[i];
    const ArgBase b = s.args[i].base;
    if (b == ArgBase::Scalar) {
      if (auto* p = std::get_if<int64_t>(&a)) a = Scalar(*p);
      else if (auto* p = std::get_if<double>(&a)) a = Scalar(*p);
      else if (auto* p = std::get_if<bool>(&a)) a = Scalar(*p);
    } else if (b == ArgBase::SymInt) {
      if (auto* p = std::get_if<int64_t>(&a)) a = SymInt(*p);
    } else if (b == ArgBase::Int) {
      if (auto* p = std::get_if<SymInt>(&a); p && !p->is_symbolic()) a = p->hint();
    } else if (b == ArgBase::Float) {
      if (auto* p = std::get_if<int64_t>(&a)) a = double(*p);
    } else if (b == ArgBase::SymIntList) {
      if (auto* p = std::get_if<std::vector<int64_t>>(&a)) a = SymShape(p->begin(), p->end());
    }
  }
}

std::vector<TensorSpec> infer_specs(ops::OpId op, const std::vector<NodeArg>& args) {
  NoGradGuard no_grad;
  AutocastGuard no_autocast(kBFloat16, false);
  // Random ops draw their (seed, offset) when they run; inferring their shapes must not draw.
  struct KeepGenerator {
    GeneratorState saved = generator_state();
    ~KeepGenerator() { set_generator_state(saved); }
  } keep_generator;
  ops::FakeModeScope fake;  // every op answers with fakes: nothing allocates, capture records nothing
  std::vector<ops::Arg> boxed;
  for (const NodeArg& a : args) boxed.push_back(box_arg(a, fake_of));
  std::vector<TensorSpec> specs;
  for (const Tensor& t : ops::call(op, std::move(boxed))) specs.push_back(normalized(t.spec()));
  return specs;
}

// ----------------------------------------------------------------------------- Graph
Value* Graph::make_value(TensorSpec spec, std::string name) {
  auto v = std::make_unique<Value>();
  v->id = next_id_++;
  v->spec = normalized(std::move(spec));
  values_.push_back(std::move(v));
  rename(values_.back().get(), std::move(name));
  return values_.back().get();
}

void Graph::rename(Value* v, std::string name) {
  name = sanitize(std::move(name));
  if (!name.empty()) {
    std::string base = name;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
  }
  v->name = std::move(name);
}

Value* Graph::add_input(TensorSpec spec, std::string name) {
  Value* v = make_value(std::move(spec), std::move(name));
  inputs_.push_back(v);
  return v;
}

void Graph::add_uses(Node* n) {
  for (Value* v : n->inputs()) v->users.push_back(n);
}

Node* Graph::append(std::unique_ptr<Node> n, const Node* before) {
  Node* raw = n.get();
  if (before) {
    auto pos = std::find_if(nodes_.begin(), nodes_.end(), [&](auto& p) { return p.get() == before; });
    nodes_.insert(pos, std::move(n));
  } else {
    nodes_.push_back(std::move(n));  // the builder's case: no search
  }
  add_uses(raw);
  return raw;
}

Node* Graph::add_node(ops::OpId op, std::vector<NodeArg> args, std::vector<TensorSpec> specs) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->args = std::move(args);
  for (size_t i = 0; i < specs.size(); ++i) {
    Value* v = make_value(std::move(specs[i]));
    v->producer = n.get();
    v->output_index = int(i);
    n->outputs.push_back(v);
  }
  return append(std::move(n), nullptr);
}

std::vector<Value*> Graph::add_call(ops::OpId op, std::vector<NodeArg> args) {
  canonicalize_args(op, args);
  std::vector<TensorSpec> specs = infer_specs(op, args);
  return add_node(op, std::move(args), std::move(specs))->outputs;
}

Value* Graph::add_constant(const Tensor& literal, bool wrapped, const Node* before) {
  KILN_CHECK(literal.defined() && !literal.is_fake(), "graph: a constant needs a tensor with data");
  NoGradGuard no_grad;
  ops::SuspendDispatchMode eager;  // the copy is not part of any graph being recorded
  Tensor c = literal.cpu().contiguous();
  if (c.shares_storage(literal) || c.storage_offset() != 0) c = c.clone().contiguous();
  c = c.detach();
  c.impl()->wrapped_number = wrapped;
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Constant;
  n->literal = c;
  n->wrapped = wrapped;
  Value* v = make_value(c.spec());
  v->producer = n.get();
  n->outputs.push_back(v);
  return append(std::move(n), before)->outputs[0];
}

void Graph::set_outputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }

bool Graph::is_output(const Value* v) const { return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end(); }

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  for (Node* n : from->users) {
    for (NodeArg& a : n->args) {
      if (auto* v = std::get_if<Value*>(&a); v && *v == from) *v = to;
      if (auto* l = std::get_if<ValueList>(&a)) std::replace(l->begin(), l->end(), from, to);
    }
    to->users.push_back(n);
  }
  from->users.clear();
  std::replace(outputs_.begin(), outputs_.end(), from, to);
}

void Graph::erase_node(Node* n) {
  for (Value* o : n->outputs)
    KILN_CHECK(!has_uses(o), "graph: can't erase ", n->name(), ": its output is still used");
  for (Value* v : n->inputs()) {
    auto it = std::find(v->users.begin(), v->users.end(), n);
    if (it != v->users.end()) v->users.erase(it);
  }
  for (Value* o : n->outputs)
    values_.erase(std::find_if(values_.begin(), values_.end(), [&](auto& p) { return p.get() == o; }));
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(), [&](auto& p) { return p.get() == n; }));
}

}  // namespace kiln::graph
