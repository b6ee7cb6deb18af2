#include "graph/graph.h"

#include <kiln/autocast.h>
#include <kiln/autograd.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <utility>

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
  each_input(*this, [&](Value* v) { r.push_back(v); });
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

// ----------------------------------------------------------------------------- origins
const char* intern_file(std::string_view file) {
  static std::mutex mu;
  static std::unordered_set<std::string> files;  // node-based: the strings never move
  std::lock_guard<std::mutex> lock(mu);
  return files.emplace(file).first->c_str();
}

Origin origin_of(const Node& n) {
  if (n.origin.known() || n.kind != NodeKind::Call) return n.origin;
  Origin o;
  o.op = n.op;
  return o;
}

// ----------------------------------------------------------------------------- Graph
namespace {
// Appended nodes are this far apart in order, so insertions between them rarely relabel.
constexpr uint64_t kOrderGap = uint64_t(1) << 20;
// A relabelled window keeps at least this gap between its labels.
constexpr uint64_t kMinGap = 64;
}  // namespace

Graph::Graph(Graph&& o) noexcept { *this = std::move(o); }

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this == &o) return *this;
  values_ = std::exchange(o.values_, {});
  pool_ = std::exchange(o.pool_, {});
  front_ = std::exchange(o.front_, nullptr);
  back_ = std::exchange(o.back_, nullptr);
  num_nodes_ = std::exchange(o.num_nodes_, 0);
  inputs_ = std::exchange(o.inputs_, {});
  outputs_ = std::exchange(o.outputs_, {});
  names_ = std::exchange(o.names_, {});
  next_id_ = std::exchange(o.next_id_, 0);
  origin_ = std::exchange(o.origin_, {});
  return *this;
}

Value* Graph::make_value(TensorSpec spec, std::string name) {
  auto v = std::make_unique<Value>();
  v->id = next_id_++;
  v->spec = normalized(std::move(spec));
  v->slot_ = uint32_t(values_.size());
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

// Each use records its index in its value's users list, and that entry records which use it
// is, so removing a use swaps the list's last entry into its place: O(1).
void Graph::add_uses(Node* n) {
  n->use_slot_.clear();
  uint32_t k = 0;
  each_input(*n, [&](Value* v) {
    n->use_slot_.push_back(uint32_t(v->users.size()));
    v->users.push_back(n);
    v->user_use_.push_back(k++);
  });
}

void Graph::remove_uses(Node* n) {
  size_t k = 0;
  each_input(*n, [&](Value* v) {
    const uint32_t i = n->use_slot_[k++];
    Node* last = v->users.back();
    const uint32_t last_use = v->user_use_.back();
    v->users[i] = last;
    v->user_use_[i] = last_use;
    last->use_slot_[last_use] = i;
    v->users.pop_back();
    v->user_use_.pop_back();
  });
  n->use_slot_.clear();
}

void Graph::link(Node* n, const Node* before) {
  Node* next = const_cast<Node*>(before);
  Node* prev = next ? next->prev_ : back_;
  n->prev_ = prev;
  n->next_ = next;
  (prev ? prev->next_ : front_) = n;
  (next ? next->prev_ : back_) = n;
  ++num_nodes_;
  const uint64_t low = prev ? prev->order_ : 0;
  if (!next) n->order_ = low + kOrderGap;
  else if (next->order_ - low >= 2) n->order_ = low + (next->order_ - low) / 2;
  else relabel_from(n);
}

// No label fits between n's neighbours: spread the labels of a window that starts at n over
// the room up to the next node after it, doubling the window until every gap can be at least
// kMinGap (the end of the list always has room). Amortized over insertions this stays cheap,
// as in list-labelling schemes.
void Graph::relabel_from(Node* n) {
  const uint64_t low = n->prev_ ? n->prev_->order_ : 0;
  Node* last = n;
  uint64_t count = 1;
  while (last->next_ && last->next_->order_ - low < (count + 1) * kMinGap)
    for (uint64_t k = count; k > 0 && last->next_; --k) last = last->next_, ++count;
  const uint64_t step = last->next_ ? (last->next_->order_ - low) / (count + 1) : kOrderGap;
  uint64_t label = low;
  for (Node* m = n;; m = m->next_) {
    m->order_ = label += step;
    if (m == last) break;
  }
}

void Graph::unlink(Node* n) {
  (n->prev_ ? n->prev_->next_ : front_) = n->next_;
  (n->next_ ? n->next_->prev_ : back_) = n->prev_;
  n->prev_ = n->next_ = nullptr;
  --num_nodes_;
}

Node* Graph::insert(std::unique_ptr<Node> n, const Node* before) {
  Node* raw = n.get();
  raw->slot_ = uint32_t(pool_.size());
  pool_.push_back(std::move(n));
  link(raw, before);
  add_uses(raw);
  return raw;
}

Node* Graph::add_node(ops::OpId op, std::vector<NodeArg> args, std::vector<TensorSpec> specs, const Node* before) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->args = std::move(args);
  n->origin = origin_;
  for (size_t i = 0; i < specs.size(); ++i) {
    Value* v = make_value(std::move(specs[i]));
    v->producer = n.get();
    v->output_index = int(i);
    n->outputs.push_back(v);
  }
  return insert(std::move(n), before);
}

std::vector<Value*> Graph::add_call(ops::OpId op, std::vector<NodeArg> args, const Node* before) {
  canonicalize_args(op, args);
  std::vector<TensorSpec> specs = infer_specs(op, args);
  return add_node(op, std::move(args), std::move(specs), before)->outputs;
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
  n->origin = before ? before->origin : origin_;  // a constant a pass makes for a node belongs to it
  Value* v = make_value(c.spec());
  v->producer = n.get();
  n->outputs.push_back(v);
  return insert(std::move(n), before)->outputs[0];
}

void Graph::set_outputs(std::vector<Value*> outputs) {
  for (Value* v : outputs_) --v->output_uses_;
  outputs_ = std::move(outputs);
  for (Value* v : outputs_) ++v->output_uses_;
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  for (size_t i = 0; i < from->users.size(); ++i) {
    Node* n = from->users[i];
    const uint32_t k = from->user_use_[i];
    for (NodeArg& a : n->args) {  // every use of `from` in n (again for n's later uses: a no-op)
      if (auto* v = std::get_if<Value*>(&a); v && *v == from) *v = to;
      if (auto* l = std::get_if<ValueList>(&a)) std::replace(l->begin(), l->end(), from, to);
    }
    n->use_slot_[k] = uint32_t(to->users.size());
    to->users.push_back(n);
    to->user_use_.push_back(k);
  }
  from->users.clear();
  from->user_use_.clear();
  if (from->output_uses_ > 0) {
    std::replace(outputs_.begin(), outputs_.end(), from, to);
    to->output_uses_ += std::exchange(from->output_uses_, 0);
  }
}

void Graph::set_args(Node* n, std::vector<NodeArg> args) {
  remove_uses(n);
  n->args = std::move(args);
  add_uses(n);
}

void Graph::move_before(Node* n, const Node* before) {
  if (n == before) return;
  unlink(n);
  link(n, before);
}

void Graph::erase_node(Node* n) {
  for (Value* o : n->outputs)
    KILN_CHECK(!has_uses(o), "graph: can't erase ", n->name(), ": its output is still used");
  remove_uses(n);
  unlink(n);
  auto release = [](auto& pool, auto* x) {  // swap the pool's last entry into x's slot
    const uint32_t i = x->slot_;
    pool[i] = std::move(pool.back());
    pool[i]->slot_ = i;
    pool.pop_back();
  };
  for (Value* o : n->outputs) release(values_, o);
  release(pool_, n);
}

}  // namespace kiln::graph
