// Module: registration, recursive views, mode/dtype changes, state dicts.
#include <kiln/nn/module.h>

#include <cxxabi.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "core/tensor_impl.h"
#include "ops/dispatch.h"

namespace kiln::nn {
namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  char* s = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string out = status == 0 && s ? s : mangled;
  std::free(s);
  return out;
}

// Points `dst`'s TensorImpl at `src`'s data and layout (PyTorch's `param.data = src`): every
// handle to the parameter, its autograd state and gradient slot carry over.
void set_data(const Tensor& dst, const Tensor& src) { dst.impl()->adopt_data(*src.impl()); }

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

}  // namespace

void null_holder_access(const char* type) {
  detail::fail("accessing an empty " + demangle(type) + " holder",
               "assign the module first, e.g. fc = register_module(\"fc\", nn::Linear(4, 8))");
}

void Module::bad_cast(const char* target) const {
  detail::fail("module " + type_name() + " is not a " + demangle(target));
}

void Module::not_shared() const {
  detail::fail("as<T>() needs a module owned by a std::shared_ptr or a holder; this " + type_name() + " is not",
               "create it with std::make_shared or a holder such as nn::Linear(...)");
}

void Module::check_new_name(const std::string& name, const char* kind, int skip) const {
  KILN_CHECK(!name.empty(), "register_", kind, ": the name must not be empty");
  KILN_CHECK_HINT(name.find('.') == std::string::npos, "use a name without dots (dots separate nesting levels)",
                  "register_", kind, ": invalid name \"", name, "\"");
  // A name may be re-registered as the same kind (replacing it), not as another kind.
  auto taken = [&](const std::vector<std::unique_ptr<Slot>>& v) {
    for (const auto& s : v)
      if (s->name == name) return true;
    return false;
  };
  bool clash = (skip != 0 && taken(params_)) || (skip != 1 && taken(buffers_));
  if (skip != 2)
    for (const auto& [n, m] : children_) clash = clash || n == name;
  KILN_CHECK(!clash, "register_", kind, ": \"", name, "\" is already registered as another kind of member of ",
             type_name());
}

Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad, SourceLoc loc) {
  ops::CallSite site(loc);
  check_new_name(name, "parameter", 0);
  if (t.defined()) {
    KILN_CHECK_HINT(!requires_grad || is_floating(t.dtype()), "pass requires_grad=false or a floating point tensor",
                    "register_parameter(\"", name, "\"): only floating point parameters can require gradients, not ",
                    kiln::name(t.dtype()));
    // A parameter is a leaf: a tensor with history is detached (a leaf is kept as is, so a tensor
    // registered in two modules stays one parameter).
    if (!t.is_leaf()) t = t.detach();
    t.requires_grad_(requires_grad);
  }
  for (auto& s : params_)
    if (s->name == name) return s->value = t;
  params_.push_back(std::make_unique<Slot>(Slot{name, std::move(t), true}));
  return params_.back()->value;
}

Tensor& Module::register_buffer(const std::string& name, Tensor t, bool persistent, SourceLoc loc) {
  ops::CallSite site(loc);
  check_new_name(name, "buffer", 1);
  for (auto& s : buffers_)
    if (s->name == name) {
      s->persistent = persistent;
      return s->value = t;
    }
  buffers_.push_back(std::make_unique<Slot>(Slot{name, std::move(t), persistent}));
  return buffers_.back()->value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> m, SourceLoc loc) {
  ops::CallSite site(loc);
  check_new_name(name, "module", 2);
  KILN_CHECK(m != nullptr, "register_module(\"", name, "\"): the module is empty (null)");
  KILN_CHECK(m.get() != this, "register_module(\"", name, "\"): a module cannot contain itself");
  for (auto& [n, c] : children_)
    if (n == name) {
      c = std::move(m);
      return;
    }
  children_.emplace_back(name, std::move(m));
}

// Calls f(dotted_name, slot, is_param) for every defined parameter and buffer slot.
template <class F>
void Module::walk(const std::string& prefix, bool recurse, F&& f) const {
  for (const auto& s : params_)
    if (s->value.defined()) f(prefix + s->name, *s, true);
  for (const auto& s : buffers_)
    if (s->value.defined()) f(prefix + s->name, *s, false);
  if (recurse)
    for (const auto& [n, c] : children_) c->walk(prefix + n + ".", true, f);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const TensorImpl*> seen;
  walk("", recurse, [&](const std::string& n, const Slot& s, bool param) {
    if (param && seen.insert(s.value.impl()).second) out.emplace_back(n, s.value);
  });
  return out;
}

TensorList Module::parameters(bool recurse) const {
  TensorList out;
  for (auto& [n, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  std::set<const TensorImpl*> seen;
  walk("", recurse, [&](const std::string& n, const Slot& s, bool param) {
    if (!param && seen.insert(s.value.impl()).second) out.emplace_back(n, s.value);
  });
  return out;
}

TensorList Module::buffers(bool recurse) const {
  TensorList out;
  for (auto& [n, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  std::set<const Module*> seen;
  std::function<void(const std::string&, std::shared_ptr<Module>)> visit = [&](const std::string& name,
                                                                              std::shared_ptr<Module> m) {
    if (!seen.insert(m.get()).second) return;
    out.emplace_back(name, m);
    for (const auto& [n, c] : m->children_) visit(name.empty() ? n : name + "." + n, c);
  };
  // The root may not be owned by a shared_ptr (a module on the stack): alias it without ownership.
  std::shared_ptr<Module> self = std::const_pointer_cast<Module>(weak_from_this().lock());
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), const_cast<Module*>(this));
  visit("", self);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules() const {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [n, m] : named_modules()) out.push_back(m);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const { return children_; }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [n, m] : children_) out.push_back(m);
  return out;
}

std::shared_ptr<Module> Module::submodule(const std::string& dotted) const {
  const Module* m = this;
  std::shared_ptr<Module> cur;
  std::stringstream ss(dotted);
  std::string part;
  while (std::getline(ss, part, '.')) {
    std::shared_ptr<Module> next;
    for (const auto& [n, c] : m->children_)
      if (n == part) next = c;
    KILN_CHECK(next != nullptr, type_name(), " has no submodule \"", dotted, "\"");
    cur = next;
    m = next.get();
  }
  KILN_CHECK(cur != nullptr, type_name(), " has no submodule \"", dotted, "\"");
  return cur;
}

Tensor& Module::parameter(const std::string& dotted) {
  const auto dot = dotted.rfind('.');
  Module* m = dot == std::string::npos ? this : submodule(dotted.substr(0, dot)).get();
  const std::string leaf = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
  for (auto& s : m->params_)
    if (s->name == leaf) return s->value;
  detail::fail(type_name() + " has no parameter \"" + dotted + "\"");
}

Tensor& Module::buffer(const std::string& dotted) {
  const auto dot = dotted.rfind('.');
  Module* m = dot == std::string::npos ? this : submodule(dotted.substr(0, dot)).get();
  const std::string leaf = dot == std::string::npos ? dotted : dotted.substr(dot + 1);
  for (auto& s : m->buffers_)
    if (s->name == leaf) return s->value;
  detail::fail(type_name() + " has no buffer \"" + dotted + "\"");
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_) c->train(on);
}

// Parameters change in place (every handle, tied ones included, sees the result; gradients
// follow); buffers are replaced in their slots, as PyTorch does, so a tensor the user passed in
// (a loss's class weights) is left alone.
void Module::convert(const std::function<Tensor(const Tensor&)>& fn) {
  std::set<const TensorImpl*> done;
  for (auto& m : modules()) {
    for (auto& s : m->params_) {
      const Tensor& t = s->value;
      if (!t.defined() || !done.insert(t.impl()).second) continue;
      Tensor nt = fn(t);
      if (nt.is_same(t)) continue;
      Tensor g = t.grad();
      set_data(t, nt);
      if (g.defined()) set_data(g, fn(g));
    }
    for (auto& s : m->buffers_)
      if (s->value.defined()) s->value = fn(s->value);
  }
}

Module& Module::to(DType dtype, SourceLoc loc) {
  ops::CallSite site(loc);
  KILN_CHECK_HINT(is_floating(dtype), "convert to a floating point dtype (integer buffers are left as they are)",
                  "Module::to: expected a floating point dtype, got ", name(dtype));
  NoGradGuard no_grad;
  convert([&](const Tensor& t) { return is_floating(t.dtype()) ? t.to(dtype) : t; });
  return *this;
}

Module& Module::to(Device device, SourceLoc loc) {
  ops::CallSite site(loc);
  NoGradGuard no_grad;
  convert([&](const Tensor& t) { return t.to(device); });  // a kiln::Error for devices this build lacks
  return *this;
}

void Module::zero_grad() {
  for (auto& t : parameters())
    if (t.grad().defined()) t.set_grad(Tensor());
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& [n, c] : children_) c->apply(fn);
  fn(*this);
}

std::map<std::string, Tensor> Module::state_dict() const {
  std::map<std::string, Tensor> out;
  walk("", true, [&](const std::string& n, const Slot& s, bool) {
    if (s.persistent) out.emplace(n, s.value.detach());
  });
  return out;
}

void Module::load_state_dict(const std::map<std::string, Tensor>& state, bool strict, SourceLoc loc) {
  ops::CallSite site(loc);
  std::vector<std::string> missing, unexpected, bad;
  std::vector<std::pair<Tensor, Tensor>> copies;
  std::set<std::string> expected;
  walk("", true, [&](const std::string& n, const Slot& s, bool) {
    if (!s.persistent) return;
    expected.insert(n);
    auto it = state.find(n);
    if (it == state.end()) {
      missing.push_back(n);
      return;
    }
    const Tensor& v = it->second;
    if (!v.defined()) {
      bad.push_back(n + ": the value is an undefined tensor");
    } else if (v.sizes() != s.value.sizes()) {
      bad.push_back(n + ": shape " + shape_str(v.sizes()) + " in the state dict, " + shape_str(s.value.sizes()) +
                    " in the module");
    } else if (v.dtype() != s.value.dtype()) {
      bad.push_back(n + ": dtype " + name(v.dtype()) + " in the state dict, " + name(s.value.dtype()) +
                    " in the module");
    } else {
      copies.emplace_back(s.value, v);
    }
  });
  for (const auto& [n, v] : state)
    if (!expected.count(n)) unexpected.push_back(n);
  std::string msg;
  if (strict && !missing.empty()) msg += "missing keys: " + join(missing) + ". ";
  if (strict && !unexpected.empty()) msg += "unexpected keys: " + join(unexpected) + ". ";
  if (!bad.empty()) msg += "mismatched tensors: " + join(bad) + ".";
  if (!msg.empty())
    detail::fail("load_state_dict into " + type_name() + ": " + msg,
                 bad.empty() ? "pass strict=false to load a partial state dict"
                             : "convert the module (module.to(dtype)) or the tensors to match before loading");
  NoGradGuard no_grad;
  for (auto& [dst, src] : copies)
    if (!dst.is_same(src)) dst.copy_from(src);
}

std::string Module::type_name() const {
  std::string n = demangle(typeid(*this).name());
  if (auto t = n.find('<'); t != std::string::npos) n = n.substr(0, t);
  if (auto c = n.rfind("::"); c != std::string::npos) n = n.substr(c + 2);
  if (n.size() > 4 && n.ends_with("Impl")) n.resize(n.size() - 4);
  return n;
}

void Module::print(std::ostream& os, int indent) const {
  os << type_name() << "(";
  const std::string extra = extra_repr();
  if (children_.empty()) {
    os << extra << ")";
    return;
  }
  const std::string pad(indent + 2, ' ');
  if (!extra.empty()) os << "\n" << pad << extra;
  for (const auto& [n, c] : children_) {
    os << "\n" << pad << "(" << n << "): ";
    c->print(os, indent + 2);
  }
  os << "\n" << std::string(indent, ' ') << ")";
}

std::string Module::str() const {
  std::ostringstream os;
  print(os, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.str(); }

}  // namespace kiln::nn
