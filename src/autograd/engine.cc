#include "autograd/engine.h"

#include <kiln/autograd.h>
#include <kiln/ops.h>

#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "core/tensor_impl.h"
#include "ops/applies.h"

namespace kiln {
namespace {
std::atomic<uint64_t> g_seq{0};
}  // namespace

namespace autograd {

namespace {
// A view whose storage was written since its history was set (through its base or another view).
bool stale_view(const AutogradMeta& m, const Tensor& t) {
  return m.view_base.defined() && m.view_version != t.impl()->storage->version && !m.requires_grad;
}
}  // namespace

void release_node(std::shared_ptr<Node>&& n) {
  thread_local std::vector<std::shared_ptr<Node>>* pending = nullptr;
  if (!n) return;
  if (pending) {  // inside a release: the outermost call frees it
    pending->push_back(std::move(n));
    return;
  }
  std::vector<std::shared_ptr<Node>> list;
  list.push_back(std::move(n));
  pending = &list;
  while (!list.empty()) {
    std::shared_ptr<Node> last = std::move(list.back());
    list.pop_back();
    last.reset();  // its destructor hands the nodes behind it to `list`
  }
  pending = nullptr;
}

Node::~Node() {
  for (Edge& e : next) release_node(std::move(e.fn));
}

bool requires_grad(const Tensor& t) {
  if (!t.defined()) return false;
  const auto& m = t.impl()->autograd;
  if (!m) return false;
  if (m->requires_grad || m->grad_fn) return true;
  return stale_view(*m, t) && requires_grad(m->view_base);  // it will read the base's new history
}

bool any_requires_grad(const ops::Args& a) {
  for (const ops::Arg& x : a.v) {
    if (auto* t = std::get_if<Tensor>(&x)) {
      if (requires_grad(*t)) return true;
    } else if (auto* l = std::get_if<TensorList>(&x)) {
      for (const Tensor& e : *l)
        if (requires_grad(e)) return true;
    }
  }
  return false;
}

Edge gradient_edge(const Tensor& t) {
  AutogradMeta& m = t.impl()->autograd_meta();
  if (m.grad_fn) return Edge{m.grad_fn, m.output_nr};
  std::shared_ptr<AccumulateGrad> acc = m.accumulator.lock();
  if (!acc) {
    acc = std::make_shared<AccumulateGrad>(t.impl_ptr());
    acc->seq = g_seq++;
    m.accumulator = acc;
  }
  return Edge{acc, 0};
}

namespace {

Tensor view_base_of(const Tensor& t) {
  const auto& m = t.impl()->autograd;
  return m ? m->view_base : Tensor();
}

// The base of a view written in place (PyTorch's CopySlices): the base's new history takes the
// gradient of the written elements to the write's source and the rest to the base's old history.
// Elements are matched through their storage positions, so any view geometry works.
struct CopySlices : Node {
  Shape base_sizes, base_strides, view_sizes, view_strides, src_sizes;
  int64_t base_offset = 0, view_offset = 0;
  DType src_dtype = kFloat32;

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    const Tensor& g = grads.at(0);
    if (!g.defined()) return {Tensor(), Tensor()};
    const int64_t n = numel_of(view_sizes);
    if (n == 0) return {g, zeros(SymShape(src_sizes.begin(), src_sizes.end()), g.dtype(), g.device())};
    auto last = [](const Shape& sz, const Shape& st, int64_t off) {
      for (size_t d = 0; d < sz.size(); ++d) off += (sz[d] - 1) * st[d];
      return off;
    };
    const int64_t extent = std::max(last(base_sizes, base_strides, base_offset), last(view_sizes, view_strides, view_offset)) + 1;
    auto sym = [](const Shape& s) { return SymShape(s.begin(), s.end()); };
    Tensor pos = iota(extent, 0, 1, kInt64, g.device());
    Tensor base_pos = reshape(as_strided(pos, sym(base_sizes), sym(base_strides), SymInt(base_offset)), {-1});
    Tensor view_pos = reshape(as_strided(pos, sym(view_sizes), sym(view_strides), SymInt(view_offset)), {-1});
    // element number in the base of each storage position, then of each element of the view
    Tensor elem_of = index_put(zeros({extent}, kInt64, g.device()), {base_pos},
                               iota(numel_of(base_sizes), 0, 1, kInt64, g.device()), false);
    Tensor elem = index(elem_of, {view_pos});
    Tensor flat = reshape(g, {-1});
    Tensor g_src = sum_to(reshape(index(flat, {elem}), sym(view_sizes)), sym(src_sizes));
    if (is_floating(src_dtype) && g_src.dtype() != src_dtype) g_src = convert_element_type(g_src, src_dtype);
    Tensor g_base = reshape(index_put(flat, {elem}, zeros({}, g.dtype(), g.device()), false), sym(base_sizes));
    return {g_base, g_src};
  }
  std::string name() const override { return "CopySlicesBackward"; }
};

// After copy_(self, src) ran with grad mode on: if self is a view, its base gets the new history.
void rebase_view_base(const Tensor& self, const Tensor& src) {
  Tensor base = view_base_of(self);
  if (!base.defined() || self.impl()->sym || base.impl()->sym) return;
  if (!requires_grad(base) && !requires_grad(src)) return;  // nothing to differentiate through
  auto node = std::make_shared<CopySlices>();
  node->base_sizes = base.sizes(), node->base_strides = base.strides(), node->base_offset = base.impl()->offset;
  node->view_sizes = self.sizes(), node->view_strides = self.strides(), node->view_offset = self.impl()->offset;
  node->src_sizes = src.sizes(), node->src_dtype = src.dtype();
  node->next = {requires_grad(base) ? gradient_edge(base) : Edge{}, requires_grad(src) ? gradient_edge(src) : Edge{}};
  node->seq = g_seq++;
  node->pre_hooks.resize(1);
  AutogradMeta& m = base.impl()->autograd_meta();
  m.grad_fn = node;
  m.output_nr = 0;
}

// Before a stale view is used by a recorded op: its history becomes that of its elements in the
// base's current history (an as_strided of the base), as PyTorch regenerates it.
void refresh_view_history(const Tensor& t) {
  const auto& mp = t.impl()->autograd;
  if (!mp || !stale_view(*mp, t)) return;
  mp->view_version = t.impl()->storage->version;
  const Tensor base = mp->view_base;
  if (!requires_grad(base) || t.impl()->sym || base.impl()->sym) return;
  Tensor fresh = as_strided(base, SymShape(t.sizes().begin(), t.sizes().end()),
                            SymShape(t.strides().begin(), t.strides().end()), SymInt(t.impl()->offset));
  mp->grad_fn = fresh.impl()->autograd_meta().grad_fn;
  mp->output_nr = 0;
}

}  // namespace

void note_view(const Tensor& base, const Tensor& view) {
  if (view.impl() == base.impl()) return;
  Tensor root = view_base_of(base);
  AutogradMeta& m = view.impl()->autograd_meta();
  m.view_base = root.defined() ? root : base;
  m.view_version = view.impl()->storage->version;
}

namespace {
// After a recorded op set t's history: a view's history is now up to date with its storage.
void note_history_set(const Tensor& t) {
  const auto& m = t.impl()->autograd;
  if (m && m->view_base.defined()) m->view_version = t.impl()->storage->version;
}
}  // namespace

std::vector<Tensor> call_with_grad(const ops::Args& a) {
  const ops::OpInfo& info = ops::op_info(a.op);
  if (!info.derivative || (info.decomp && !ops::kernel_applies(a))) {
    KILN_CHECK(info.kind == ops::OpKind::COMPOSITE && info.decomp, "internal: differentiable op ", info.name,
               " has neither a derivative formula nor a decomposition");
    return info.decomp(a);  // the prims it decomposes into record their own nodes
  }
  std::vector<Tensor> inputs = a.tensor_inputs();
  if (info.flags & ops::MUTATES) {
    const Tensor& self = inputs.at(0);
    KILN_CHECK_HINT(!(requires_grad(self) && self.is_leaf()),
                    "do the update under kiln::NoGradGuard, or work on a clone()",
                    "a leaf tensor that requires grad is being used in an in-place operation");
    const Tensor base = view_base_of(self);
    KILN_CHECK_HINT(!(base.defined() && requires_grad(base) && base.is_leaf()),
                    "do the update under kiln::NoGradGuard, or work on a clone()",
                    "a view of a leaf tensor that requires grad is being used in an in-place operation");
  }
  auto node = std::make_shared<OpNode>();
  for (const Tensor& t : inputs) {
    if (!(info.flags & ops::MUTATES) || !t.is_same(inputs[0])) refresh_view_history(t);
    const bool needs = requires_grad(t);
    node->input_needs_grad.push_back(needs);
    node->next.push_back(needs ? gradient_edge(t) : Edge{});
  }
  std::vector<Tensor> outs;
  {
    NoGradGuard no_grad;
    outs = ops::call_backend(a);
  }
  node->saved = a;
  node->inputs = std::move(inputs);
  if (info.flags & ops::MUTATES) {
    // self's grad_fn becomes this node: saving self itself would make a cycle that is never freed
    // when this node never runs (a write into a view whose base carries on the history).
    Tensor alias = node->inputs[0].detach();
    for (ops::Arg& arg : node->saved.v)
      if (auto* t = std::get_if<Tensor>(&arg); t && t->is_same(node->inputs[0])) *t = alias;
    node->inputs[0] = alias;
  }
  for (const Tensor& t : node->inputs) node->saved_versions.push_back(t.impl()->storage->version);
  node->seq = g_seq++;
  node->num_outputs = outs.size();
  node->pre_hooks.resize(outs.size());
  for (size_t i = 0; i < outs.size(); ++i) {
    node->outputs.push_back(outs[i].detach());
    node->output_versions.push_back(outs[i].impl()->storage->version);
    if (!is_floating(outs[i].dtype())) continue;
    AutogradMeta& m = outs[i].impl()->autograd_meta();
    m.grad_fn = node;
    m.output_nr = uint32_t(i);
  }
  if (info.family == ops::OpFamily::VIEW)  // split's pieces are views too: each one's writes reach the base
    for (const Tensor& o : outs) note_view(a.tensor(0), o);
  if (info.flags & ops::MUTATES) {
    rebase_view_base(a.tensor(0), a.tensor(1));
    note_history_set(a.tensor(0));
  }
  return outs;
}

uint64_t next_sequence_nr() { return g_seq++; }

std::string OpNode::name() const { return std::string(ops::op_info(saved.op).name) + "Backward"; }

void OpNode::release() {
  saved.v.clear();
  inputs.clear();
  outputs.clear();
  released = true;
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grads) {
  KILN_CHECK_HINT(!released, "pass retain_graph=true to the first backward() if you need to call it twice",
                  "trying to backward through the graph a second time (", name(),
                  "): its saved tensors were freed after the first backward");
  // A view's derivative reads only its input's geometry, which in-place writes keep.
  const bool values_used = !(ops::op_info(saved.op).flags & ops::MUTATES) && ops::op_info(saved.op).family != ops::OpFamily::VIEW;
  for (size_t i = 0; i < saved_versions.size() && values_used; ++i) {
    const Tensor& t = inputs[i];
    KILN_CHECK_HINT(t.impl()->storage->version == saved_versions[i],
                    "clone() the tensor before modifying it in place, or modify it after backward()",
                    "one of the tensors needed to compute the gradient of ", name(),
                    " has been modified by an in-place operation");
  }
  bool any = false;
  for (auto& g : grads) any = any || g.defined();
  if (!any) return std::vector<Tensor>(next.size());
  for (size_t i = 0; i < grads.size(); ++i)
    if (!grads[i].defined() && is_floating(outputs[i].dtype())) grads[i] = zeros_like(outputs[i]);
  const ops::OpInfo& info = ops::op_info(saved.op);
  // Outputs are saved detached (no cycle node -> output -> node). When building a graph of the
  // backward (create_graph), formulas that use them must see them as this node's outputs again.
  std::vector<Tensor> outs = outputs;
  if (is_grad_enabled())
    for (size_t i = 0; i < outs.size(); ++i) {
      if (!is_floating(outs[i].dtype())) continue;
      outs[i] = outs[i].detach();
      AutogradMeta& m = outs[i].impl()->autograd_meta();
      m.grad_fn = shared_from_this();
      m.output_nr = uint32_t(i);
    }
  ops::GradCtx ctx{saved, inputs, ops::SavedOutputs(outs, values_used ? &output_versions : nullptr, saved.op), grads,
                   input_needs_grad};
  std::vector<Tensor> result = info.derivative(ctx);
  result.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!input_needs_grad[i] || !result[i].defined()) {
      result[i] = Tensor();
      continue;
    }
    KILN_CHECK(result[i].sym_sizes() == inputs[i].sym_sizes(), "internal: the derivative of ", info.name,
               " gave a gradient of shape ", shape_str(result[i].sym_sizes()), " for input ", i, " of shape ",
               shape_str(inputs[i].sym_sizes()));
    if (result[i].dtype() != inputs[i].dtype()) result[i] = convert_element_type(result[i], inputs[i].dtype());
  }
  return result;
}

namespace {
// Runs a gradient hook: what it returns replaces the gradient, and must be a gradient of the same
// shape, dtype and device (PyTorch checks the same); nothing (undefined) keeps the gradient.
Tensor run_hook(const Hook& h, const Tensor& g) {
  Tensor r = h(g);
  if (!r.defined()) return g;
  const char* hint = "a hook returns nothing or a gradient like the one it was given";
  KILN_CHECK_HINT(r.sym_sizes() == g.sym_sizes(), hint, "a gradient hook changed the shape of the gradient: it got ",
                  shape_str(g.sym_sizes()), " and returned ", shape_str(r.sym_sizes()));
  KILN_CHECK_HINT(r.dtype() == g.dtype(), hint, "a gradient hook changed the dtype of the gradient: it got ",
                  name(g.dtype()), " and returned ", name(r.dtype()));
  KILN_CHECK_HINT(r.device() == g.device(), hint, "a gradient hook moved the gradient from ", g.device().str(),
                  " to ", r.device().str());
  return r;
}
}  // namespace

namespace {
// Whether nothing but `g` holds this gradient or its memory, which it covers exactly (contiguous,
// its own allocation): then it can become a leaf's .grad without the copy (as PyTorch steals it),
// since no later in-place update of .grad (an optimizer's) can reach another tensor through it.
bool sole_owner(const Tensor& g) {
  const TensorImpl& t = *g.impl();
  return g.impl_ptr().use_count() == 1 && t.storage.use_count() == 1 && t.storage->owned && !t.storage->fake &&
         !t.wrapped_number &&
         g.is_contiguous() && g.storage_offset() == 0 && t.storage->nbytes == size_t(g.numel()) * g.element_size();
}
}  // namespace

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grads) {
  Tensor g = std::move(grads.at(0));
  AutogradMeta& m = var->autograd_meta();
  for (const Hook& h : m.leaf_hooks)
    if (g.defined()) g = run_hook(h, g);
  if (!g.defined()) return {};
  if (!m.grad.defined()) {
    m.grad = is_grad_enabled() ? g : sole_owner(g) ? g.detach() : clone(g.detach());
  } else {
    m.grad = is_grad_enabled() ? add(m.grad, g) : add(m.grad, g.detach());
  }
  return {};
}

namespace {
// Replaces every saved tensor of `node` that shares storage with t by a private copy.
void keep_private_copy(OpNode* node, const Tensor& t) {
  for (size_t i = 0; i < node->inputs.size(); ++i) {
    if (!node->inputs[i].shares_storage(t)) continue;
    Tensor copy = clone(node->inputs[i].detach());
    for (ops::Arg& arg : node->saved.v)
      if (auto* s = std::get_if<Tensor>(&arg); s && s->is_same(node->inputs[i])) *s = copy;
    node->inputs[i] = copy;
    node->saved_versions[i] = copy.impl()->storage->version;
  }
  for (size_t i = 0; i < node->outputs.size(); ++i)
    if (node->outputs[i].shares_storage(t)) {
      node->outputs[i] = clone(node->outputs[i]);
      node->output_versions[i] = node->outputs[i].impl()->storage->version;
    }
}
OpNode* op_node_of(const Tensor& t) {
  const auto& m = t.impl()->autograd;
  return m ? dynamic_cast<OpNode*>(m->grad_fn.get()) : nullptr;
}
}  // namespace

void save_before_overwrite(const Tensor& self, const Tensor& result) {
  if (OpNode* n = op_node_of(result)) keep_private_copy(n, self);
}

void before_inplace_write(const Tensor& self) {
  if (OpNode* n = op_node_of(self)) keep_private_copy(n, self);
}

Tensor sum_to(const Tensor& grad, const SymShape& shape) {
  SymShape gs = grad.sym_sizes();
  if (gs == shape) return grad;
  const size_t lead = gs.size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < gs.size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && gs[i] != 1)) dims.push_back(int64_t(i));
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return view(r, shape);
}

void run_backward(const TensorList& roots, const TensorList& grad_roots, bool retain_graph, bool create_graph,
                  const TensorList* inputs, TensorList* input_grads, bool allow_unused) {
  KILN_CHECK(grad_roots.empty() || grad_roots.size() == roots.size(), "backward: ", roots.size(), " outputs but ",
             grad_roots.size(), " gradients");
  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, int> deps;
  std::vector<std::shared_ptr<Node>> root_nodes;
  auto add_to = [&](const Edge& e, const Tensor& g) {
    auto& buf = buffers[e.fn.get()];
    buf.resize(e.fn->num_outputs);
    Tensor& slot = buf[e.input_nr];
    slot = slot.defined() ? add(slot, g) : g;
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    KILN_CHECK_HINT(requires_grad(r), "call requires_grad_() on the inputs you differentiate with respect to",
                    "element ", i, " of the tensors does not require grad and has no grad_fn");
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      KILN_CHECK_HINT(r.numel() == 1, "pass a gradient tensor of the output's shape",
                      "grad can be implicitly created only for scalar outputs (this output has shape ",
                      shape_str(r.sizes()), ")");
      g = ones_like(r);
    }
    KILN_CHECK(g.sym_sizes() == r.sym_sizes(), "backward: gradient of shape ", shape_str(g.sym_sizes()),
               " for an output of shape ", shape_str(r.sym_sizes()));
    Edge e = gradient_edge(r);
    add_to(e, g);
    root_nodes.push_back(e.fn);
  }
  // Count, for every node reachable from the roots, how many edges lead into it.
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (auto& n : root_nodes)
    if (seen.insert(n.get()).second) stack.push_back(n.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next) {
      if (!e.fn) continue;
      ++deps[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  // Where autograd.grad() wants its results: the edges of the requested inputs.
  std::vector<Edge> capture;
  if (inputs) {
    for (const Tensor& t : *inputs) {
      KILN_CHECK(requires_grad(t), "grad: one of the inputs does not require grad");
      capture.push_back(gradient_edge(t));
    }
    input_grads->assign(inputs->size(), Tensor());
  }
  auto cmp = [](Node* a, Node* b) { return a->seq < b->seq; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(cmp)> ready(cmp);
  for (auto& n : root_nodes)
    if (deps[n.get()] == 0 && seen.erase(n.get())) ready.push(n.get());

  std::optional<NoGradGuard> no_grad;
  std::optional<EnableGradGuard> with_grad;
  if (create_graph) with_grad.emplace(); else no_grad.emplace();

  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->num_outputs);
    for (size_t i = 0; i < grads.size() && i < n->pre_hooks.size(); ++i)
      for (const Hook& h : n->pre_hooks[i])
        if (grads[i].defined()) grads[i] = run_hook(h, grads[i]);
    for (size_t k = 0; k < capture.size(); ++k)
      if (capture[k].fn.get() == n && grads[capture[k].input_nr].defined()) (*input_grads)[k] = grads[capture[k].input_nr];
    std::vector<Tensor> out;
    const bool is_leaf_acc = dynamic_cast<AccumulateGrad*>(n) != nullptr;
    if (!(inputs && is_leaf_acc)) out = n->apply(std::move(grads));
    if (!retain_graph) n->release();
    for (size_t i = 0; i < n->next.size(); ++i) {
      const Edge& e = n->next[i];
      if (!e.fn) continue;
      if (i < out.size() && out[i].defined()) add_to(e, out[i]);
      if (--deps[e.fn.get()] == 0) ready.push(e.fn.get());
    }
  }
  if (inputs && !allow_unused)
    for (size_t k = 0; k < input_grads->size(); ++k)
      KILN_CHECK_HINT((*input_grads)[k].defined(), "pass allow_unused=true if this is expected",
                      "grad: input ", k, " was not used in computing the outputs");
}

}  // namespace autograd

autograd::TraceHooks& autograd::trace_hooks() {
  thread_local TraceHooks hooks;
  return hooks;
}

namespace {
bool traced(const TensorList& roots) {
  if (!autograd::trace_hooks().backward) return false;
  for (const Tensor& t : roots)
    if (t.defined() && t.is_fake()) return true;
  return false;
}
}  // namespace

// ------------------------------------------------------------------------------ public API
void backward(const TensorList& outputs, const TensorList& grad_outputs, bool retain_graph, bool create_graph,
              SourceLoc loc) {
  ops::CallSite site(loc);
  if (traced(outputs))
    return autograd::trace_hooks().backward(outputs, grad_outputs, create_graph, nullptr, nullptr, false);
  autograd::run_backward(outputs, grad_outputs, retain_graph, create_graph, nullptr, nullptr, false);
}

TensorList grad(const TensorList& outputs, const TensorList& inputs, const TensorList& grad_outputs,
                bool retain_graph, bool create_graph, bool allow_unused, SourceLoc loc) {
  ops::CallSite site(loc);
  TensorList result;
  if (traced(outputs)) {
    autograd::trace_hooks().backward(outputs, grad_outputs, create_graph, &inputs, &result, allow_unused);
    return result;
  }
  autograd::run_backward(outputs, grad_outputs, retain_graph, create_graph, &inputs, &result, allow_unused);
  return result;
}

bool Tensor::requires_grad() const { return autograd::requires_grad(*this); }

Tensor& Tensor::requires_grad_(bool r, SourceLoc loc) {
  ops::CallSite site(loc);
  KILN_CHECK_HINT(is_leaf() || r, "use detach() to get a tensor without history",
                  "requires_grad_(false) on a non-leaf tensor");
  KILN_CHECK_HINT(!r || is_floating(dtype()), "convert it first, e.g. x.to(kFloat32)",
                  "only floating point tensors can require gradients, not ", name(dtype()));
  impl()->autograd_meta().requires_grad = r;
  return *this;
}

Tensor Tensor::grad() const {
  const auto& m = impl()->autograd;
  return m ? m->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) {
  if (autograd::trace_hooks().before_set_grad && !is_fake()) autograd::trace_hooks().before_set_grad(*this);
  if (g.defined()) {
    KILN_CHECK(g.sym_sizes() == sym_sizes(), "set_grad: gradient of shape ", shape_str(g.sym_sizes()),
               " for a tensor of shape ", shape_str(sym_sizes()));
    KILN_CHECK_HINT(g.dtype() == dtype(), "convert the gradient first, e.g. g.to(param.dtype)",
                    "set_grad: a gradient of dtype ", name(g.dtype()), " for a tensor of dtype ", name(dtype()),
                    " (a gradient has its tensor's dtype)");
    KILN_CHECK_HINT(g.device() == device(), "move the gradient first, e.g. g.to(param.device)",
                    "set_grad: a gradient on ", g.device().str(), " for a tensor on ", device().str());
  }
  impl()->autograd_meta().grad = g;
}

bool Tensor::is_leaf() const {
  const auto& m = impl()->autograd;
  return !m || !m->grad_fn;
}

std::string Tensor::grad_fn_name() const {
  const auto& m = impl()->autograd;
  return m && m->grad_fn ? m->grad_fn->name() : "";
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph, SourceLoc loc) const {
  kiln::backward({*this}, gradient.defined() ? TensorList{gradient} : TensorList{}, retain_graph, create_graph, loc);
}

void Tensor::retain_grad() const {
  if (is_leaf()) return;
  auto& m = impl()->autograd_meta();
  if (m.retains_grad) return;
  m.retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_ptr();
  m.grad_fn->pre_hooks[m.output_nr].push_back([weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      auto& meta = impl->autograd_meta();
      meta.grad = meta.grad.defined() ? kiln::add(meta.grad, g.detach()) : kiln::clone(g.detach());
    }
    return Tensor();
  });
}

void Tensor::register_hook(Hook hook) const {
  KILN_CHECK(requires_grad(), "register_hook on a tensor that does not require grad");
  auto& m = impl()->autograd_meta();
  if (m.grad_fn)
    m.grad_fn->pre_hooks[m.output_nr].push_back(std::move(hook));
  else
    m.leaf_hooks.push_back(std::move(hook));
}

Tensor Tensor::detach() const {
  auto d = std::make_shared<TensorImpl>();
  const TensorImpl* s = impl();
  d->storage = s->storage;
  d->sizes = s->sizes;
  d->strides = s->strides;
  d->offset = s->offset;
  if (s->sym) d->sym = std::make_unique<SymLayout>(*s->sym);
  d->dtype = s->dtype;
  d->wrapped_number = s->wrapped_number;
  return Tensor(std::move(d));
}

Tensor& Tensor::detach_() {
  impl()->autograd.reset();
  return *this;
}

}  // namespace kiln
