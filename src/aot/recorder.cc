// Recording prims on fake tensors (see recorder.h).
#include "aot/recorder.h"

#include <kiln/autograd.h>

#include "core/tensor_impl.h"
#include "ops/custom.h"

namespace kiln::aot {

std::vector<graph::NodeArg> node_args(const std::vector<ops::Arg>& args,
                                      const std::function<graph::Value*(const Tensor&)>& value_of) {
  std::vector<graph::NodeArg> out;
  out.reserve(args.size());
  for (const ops::Arg& x : args) {
    if (auto* t = std::get_if<Tensor>(&x)) {
      out.push_back(t->defined() ? graph::NodeArg(value_of(*t)) : graph::NodeArg(std::monostate{}));
    } else if (auto* l = std::get_if<TensorList>(&x)) {
      graph::ValueList vl;
      for (const Tensor& e : *l) vl.push_back(e.defined() ? value_of(e) : nullptr);
      out.push_back(vl);
    } else {
      out.push_back(std::visit([](const auto& v) -> graph::NodeArg {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, Tensor> || std::is_same_v<V, TensorList>) return std::monostate{};
        else return v;
      }, x));
    }
  }
  return out;
}

const std::string& stop_gradient_op() {
  static const std::string name = [] {
    auto op = std::make_shared<ops::CustomOp>();
    op->name = "aot::stop_gradient";
    op->meta = [](const TensorList& in, const std::vector<double>&) { return std::vector<TensorSpec>{in.at(0).spec()}; };
    op->kernel = [](const TensorList& in, const std::vector<double>&, const std::vector<TensorSpec>&) {
      return TensorList{in.at(0).detach()};
    };
    op->derivative = [](const ops::GradCtx&) { return TensorList{Tensor()}; };
    ops::register_custom_op(std::move(op));
    return std::string("aot::stop_gradient");
  }();
  return name;
}

bool is_stop_gradient(const graph::Node& n) {
  if (n.kind != graph::NodeKind::Call || n.op != ops::OpId::custom) return false;
  auto* name = std::get_if<std::string>(&n.args.at(0));
  return name && *name == stop_gradient_op();
}

Tensor Recorder::bind(graph::Value* v) {
  Tensor f = make_fake(v->spec);
  values_[f.impl()] = v;
  keep_.push_back(f);
  return f;
}

graph::Value* Recorder::value_of(const Tensor& t) {
  auto it = values_.find(t.impl());
  if (it != values_.end()) return it->second;
  if (t.is_fake()) {
    // detach() makes a new tensor on the same fake storage, not through the dispatcher: it
    // stands for the value with the same storage and layout (or for that value's stop_gradient).
    for (const Tensor& k : keep_)
      if (k.impl()->storage == t.impl()->storage && graph::same_spec(k.spec(), t.spec())) {
        graph::Value* v = values_.at(k.impl());
        if (mark_stop_gradients)
          v = g_.add_call(ops::OpId::custom, {stop_gradient_op(), graph::ValueList{v}, std::monostate{}}).at(0);
        values_[t.impl()] = v;
        keep_.push_back(t);
        return v;
      }
    detail::fail("internal: aot: a fake tensor from outside this trace was used");
  }
  // A real tensor made by a decomposition or derivative formula (a number, a small table).
  graph::Value* v = g_.add_constant(t, t.is_wrapped_number());
  values_[t.impl()] = v;
  keep_.push_back(t);
  return v;
}

std::vector<Tensor> Recorder::call(ops::OpId op, std::vector<ops::Arg> args) { return ops::call(op, std::move(args)); }

std::optional<std::vector<Tensor>> Recorder::intercept(const ops::Args& a) {
  const ops::OpInfo& info = ops::op_info(a.op);
  KILN_CHECK_HINT(!(info.flags & ops::DATADEP), "compile the function with the \"eager\" backend",
                  "aot: ", info.name, "() has a data-dependent output shape");
  // Random creation ops stay whole: decomposed, they would fix the generator's seed at trace time.
  const bool keep_random = (info.flags & ops::RANDOM) && !info.differentiable();
  if (info.kind == ops::OpKind::COMPOSITE && info.decomp && !keep_random && !(keep && keep(a.op))) return info.decomp(a);
  std::vector<graph::Value*> outs = g_.add_call(a.op, node_args(a.v, [&](const Tensor& t) { return value_of(t); }));
  std::vector<Tensor> result;
  if (info.flags & ops::MUTATES) {  // copy_ returns its destination, now standing for the new value
    const Tensor& self = a.tensor(0);
    values_[self.impl()] = outs.at(0);
    result.push_back(self);
  } else {
    for (graph::Value* v : outs) result.push_back(bind(v));
  }
  if (on_prim) on_prim(a, result);
  return result;
}

RecordScope::RecordScope(Recorder& r) : prev_(ops::set_dispatch_mode(&r)), grad_(is_grad_enabled()) {
  set_grad_enabled(false);
}
RecordScope::~RecordScope() {
  set_grad_enabled(grad_);
  ops::set_dispatch_mode(prev_);
}

}  // namespace kiln::aot
