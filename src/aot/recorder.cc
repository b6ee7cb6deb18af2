// Recording prims on fake tensors (see recorder.h).
#include "aot/recorder.h"

#include <kiln/autograd.h>

#include "core/tensor_impl.h"

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
    // stands for the value with the same storage and layout.
    for (const Tensor& k : keep_)
      if (k.impl()->storage == t.impl()->storage && graph::same_spec(k.spec(), t.spec())) {
        graph::Value* v = values_.at(k.impl());
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
