// The optimizer base: parameter groups, per-parameter state, zero_grad and the flat state_dict.
#include <kiln/optim.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "ops/dispatch.h"

namespace kiln::optim {

namespace {

const std::string kState = "state.";
const std::string kGroups = "param_groups.";

// Splits "<prefix><n>.<rest>" into n and rest; false if the key does not have that form.
bool split_key(const std::string& key, const std::string& prefix, size_t* n, std::string* rest) {
  if (key.rfind(prefix, 0) != 0) return false;
  const size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size() || dot + 1 == key.size()) return false;
  const char* b = key.data() + prefix.size();
  const char* e = key.data() + dot;
  auto [ptr, ec] = std::from_chars(b, e, *n);
  if (ec != std::errc() || ptr != e) return false;
  *rest = key.substr(dot + 1);
  return true;
}

double number_of(const std::string& key, const Tensor& t) {
  KILN_CHECK(t.dim() == 0 && t.dtype() != kBool, "load_state_dict: '", key,
             "' must be a 0-d number, got a ", kiln::name(t.dtype()), " tensor of ", t.dim(), " dims");
  return t.item<double>();
}

}  // namespace

void Optimizer::add_group(std::vector<Tensor> params, const std::function<void()>& check_options, SourceLoc loc) {
  ops::CallSite site(loc);
  check_options();
  KILN_CHECK_HINT(!params.empty() || !groups_.empty(), "pass the parameters to optimize, e.g. model.parameters()",
                  name_, ": got an empty parameter list");
  std::set<const TensorImpl*> seen;
  for (const Group& g : groups_)
    for (const Tensor& p : g.params) seen.insert(p.impl());
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    KILN_CHECK(p.defined(), name_, ": parameter ", i, " is an undefined tensor");
    KILN_CHECK_HINT(p.is_leaf(), "optimize the leaf tensors (e.g. x.detach().requires_grad_())", name_,
                    ": can't optimize a non-leaf tensor (parameter ", i, ")");
    KILN_CHECK(p.is_floating_point(), name_, ": parameter ", i, " must be floating point, not ", kiln::name(p.dtype()));
    KILN_CHECK_HINT(seen.insert(p.impl()).second, "put each tensor in one parameter group, once", name_,
                    ": parameter ", i, " appears more than once in the parameter groups");
  }
  state_.resize(state_.size() + params.size());
  groups_.push_back(Group{std::move(params), std::nullopt});
}

void Optimizer::step(SourceLoc loc) {
  ops::CallSite site(loc);
  NoGradGuard no_grad;
  step_impl();
}

Tensor Optimizer::step(const std::function<Tensor()>& closure, SourceLoc loc) {
  Tensor loss;
  {
    EnableGradGuard enable;
    loss = closure();
  }
  step(loc);
  return loss;
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (Group& g : groups_)
    for (Tensor& p : g.params) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        grad.detach_();  // a gradient made with create_graph drops its history, as in PyTorch
        grad.zero_();
      }
    }
}

const std::vector<Tensor>& Optimizer::params(size_t group) const {
  KILN_CHECK(group < groups_.size(), name_, ": no parameter group ", group, " (it has ", groups_.size(), ")");
  return groups_[group].params;
}

std::vector<Tensor> Optimizer::all_params() const {
  std::vector<Tensor> out;
  for (const Group& g : groups_) out.insert(out.end(), g.params.begin(), g.params.end());
  return out;
}

double Optimizer::lr(size_t group) const {
  params(group);  // range check
  return const_cast<Optimizer*>(this)->group_lr(group);
}

void Optimizer::set_lr(size_t group, double lr) {
  params(group);
  group_lr(group) = lr;
  if (groups_[group].lr_value.defined()) lr_tensor(group);
}

const Tensor& Optimizer::lr_tensor(size_t group) {
  // Real even inside a compile() trace: the traced step reads it as an input, and set_lr (called
  // outside the compiled step, by a scheduler) writes the new value into the same tensor.
  ops::SuspendDispatchMode real;
  Tensor& t = groups_.at(group).lr_value;
  const double lr = group_lr(group);
  if (!t.defined()) t = scalar_tensor(lr, kFloat64);
  else if (t.item<double>() != lr) t.fill_(lr);
  return t;
}

std::optional<double> Optimizer::initial_lr(size_t group) const { return groups_.at(group).initial_lr; }
void Optimizer::set_initial_lr(size_t group, double lr) {
  params(group);
  groups_[group].initial_lr = lr;
}

size_t Optimizer::first_index(size_t group) const {
  size_t n = 0;
  for (size_t g = 0; g < group; ++g) n += groups_[g].params.size();
  return n;
}

const ParamState& Optimizer::state(size_t i) const {
  KILN_CHECK(i < state_.size(), name_, ": no parameter ", i, " (it has ", state_.size(), ")");
  return state_[i];
}
ParamState& Optimizer::state(size_t i) {
  KILN_CHECK(i < state_.size(), name_, ": no parameter ", i, " (it has ", state_.size(), ")");
  return state_[i];
}
ParamState& Optimizer::state(const Tensor& param) {
  size_t i = 0;
  for (const Group& g : groups_)
    for (const Tensor& p : g.params) {
      if (p.is_same(param)) return state_[i];
      ++i;
    }
  detail::fail(name_ + ": the tensor is not one of this optimizer's parameters");
}

TensorMap Optimizer::state_dict() const {
  TensorMap out;
  for (size_t i = 0; i < state_.size(); ++i)
    for (const auto& [k, t] : state_[i]) out[kState + std::to_string(i) + "." + k] = t;
  auto* self = const_cast<Optimizer*>(this);
  size_t next = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const std::string pre = kGroups + std::to_string(g) + ".";
    std::vector<int64_t> ids(groups_[g].params.size());
    for (int64_t& id : ids) id = int64_t(next++);
    out[pre + "params"] = tensor(ids, Shape{int64_t(ids.size())}, kInt64);
    for (const OptionRef& o : self->group_options(g)) {
      if (o.number) out[pre + o.name] = scalar_tensor(*o.number, kFloat64);
      else if (o.flag) out[pre + o.name] = scalar_tensor(*o.flag, kBool);
      else out[pre + o.name] = tensor(std::vector<double>{(*o.pair)[0], (*o.pair)[1]}, Shape{2}, kFloat64);
    }
    if (groups_[g].initial_lr) out[pre + "initial_lr"] = scalar_tensor(*groups_[g].initial_lr, kFloat64);
  }
  return out;
}

void Optimizer::load_state_dict(const TensorMap& sd, SourceLoc loc) {
  ops::CallSite site(loc);
  const std::string who = name_ + ".load_state_dict: ";
  // Sort the keys into groups and per-parameter state.
  std::map<size_t, std::map<std::string, Tensor>> group_keys, state_keys;
  for (const auto& [key, t] : sd) {
    size_t n = 0;
    std::string rest;
    KILN_CHECK(t.defined(), who, "'", key, "' is an undefined tensor");
    if (split_key(key, kGroups, &n, &rest)) group_keys[n][rest] = t;
    else if (split_key(key, kState, &n, &rest)) state_keys[n][rest] = t;
    else
      detail::fail(who + "unexpected key '" + key + "'",
                   "keys are 'state.<param>.<name>' and 'param_groups.<group>.<option>', as state_dict() makes");
  }
  KILN_CHECK_HINT(group_keys.size() == groups_.size() && (group_keys.empty() || group_keys.rbegin()->first + 1 == groups_.size()),
                  "load a state_dict of an optimizer built over the same parameter groups", who,
                  "the state dict has ", group_keys.size(), " parameter groups, the optimizer has ", groups_.size());

  // Saved parameter ids -> our parameter indices, pairing the groups' lists in order.
  std::map<int64_t, size_t> id_to_index;
  struct Pending {
    OptionRef ref;
    double number = 0;
    bool flag = false;
    std::array<double, 2> pair{};
  };
  std::vector<Pending> pending;
  std::vector<std::optional<double>> initial_lrs(groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    auto& keys = group_keys[g];
    const std::string pre = kGroups + std::to_string(g) + ".";
    auto pit = keys.find("params");
    KILN_CHECK(pit != keys.end(), who, "missing '", pre, "params'");
    const Tensor& ids = pit->second;
    KILN_CHECK(ids.dim() == 1 && !is_floating(ids.dtype()) && ids.dtype() != kBool, who, "'", pre,
               "params' must be a 1-d integer tensor");
    KILN_CHECK_HINT(size_t(ids.numel()) == groups_[g].params.size(),
                    "load a state_dict of an optimizer built over the same parameters", who, "parameter group ", g,
                    " has ", ids.numel(), " parameters in the state dict but ", groups_[g].params.size(),
                    " in the optimizer");
    const size_t base = first_index(g);
    std::vector<int64_t> idv = ids.to_vector<int64_t>();
    for (size_t j = 0; j < idv.size(); ++j)
      KILN_CHECK(id_to_index.emplace(idv[j], base + j).second, who, "parameter id ", idv[j], " appears twice");
    std::set<std::string> known = {"params", "initial_lr"};
    for (const OptionRef& o : group_options(g)) {
      known.insert(o.name);
      auto it = keys.find(o.name);
      KILN_CHECK_HINT(it != keys.end(), "load a state_dict saved from the same kind of optimizer", who, "missing '",
                      pre, o.name, "' (an option of ", name_, ")");
      const Tensor& t = it->second;
      Pending p{.ref = o};
      if (o.number) {
        p.number = number_of(pre + o.name, t);
      } else if (o.flag) {
        KILN_CHECK(t.dim() == 0, who, "'", pre, o.name, "' must be a 0-d flag");
        p.flag = t.item<double>() != 0;
      } else {
        KILN_CHECK(t.dim() == 1 && t.numel() == 2 && t.dtype() != kBool, who, "'", pre, o.name,
                   "' must hold 2 numbers");
        std::vector<double> v = t.to_vector<double>();
        p.pair = {v[0], v[1]};
      }
      pending.push_back(p);
    }
    for (const auto& [k, t] : keys)
      KILN_CHECK_HINT(known.count(k), "load a state_dict saved from the same kind of optimizer", who, "'", pre, k,
                      "' is not an option of ", name_);
    if (auto it = keys.find("initial_lr"); it != keys.end()) initial_lrs[g] = number_of(pre + "initial_lr", it->second);
  }

  // The state, cast and copied so that it owns its memory.
  std::vector<ParamState> new_state(state_.size());
  const std::vector<Tensor> ps = all_params();
  for (const auto& [id, entries] : state_keys) {
    auto it = id_to_index.find(int64_t(id));
    KILN_CHECK(it != id_to_index.end(), who, "state of parameter ", id, " but no parameter group lists it");
    const Tensor& p = ps[it->second];
    for (const auto& [k, t] : entries) {
      KILN_CHECK_HINT(std::find(state_names_.begin(), state_names_.end(), k) != state_names_.end(),
                      "load a state_dict saved from the same kind of optimizer", who, "'state.", id, ".", k,
                      "' is not state of ", name_);
      if (k == "step" || k == "mu_product") {  // 0-d float32 numbers (NAdam's running product too)
        number_of("state." + std::to_string(id) + "." + k, t);
        new_state[it->second][k] = t.to(kFloat32).clone();
      } else {
        KILN_CHECK_HINT(t.sizes() == p.sizes(), "load a state_dict of an optimizer over parameters of the same shapes",
                        who, "'state.", id, ".", k, "' has shape ", shape_str(t.sym_sizes()), " but its parameter has ",
                        shape_str(p.sym_sizes()));
        KILN_CHECK(t.is_floating_point(), who, "'state.", id, ".", k, "' must be floating point");
        new_state[it->second][k] = t.to(p.dtype()).clone();
      }
    }
  }

  // Apply the options, validate them, restore on failure; then commit the rest.
  std::vector<Pending> old = pending;
  for (Pending& p : old) {
    if (p.ref.number) p.number = *p.ref.number;
    else if (p.ref.flag) p.flag = *p.ref.flag;
    else p.pair = *p.ref.pair;
  }
  auto write = [](const std::vector<Pending>& v) {
    for (const Pending& p : v) {
      if (p.ref.number) *p.ref.number = p.number;
      else if (p.ref.flag) *p.ref.flag = p.flag;
      else *p.ref.pair = p.pair;
    }
  };
  write(pending);
  try {
    for (size_t g = 0; g < groups_.size(); ++g) check_options(g);
  } catch (...) {
    write(old);
    throw;
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].initial_lr = initial_lrs[g];
    if (groups_[g].lr_value.defined()) lr_tensor(g);  // a compiled step reads the loaded lr
  }
  state_ = std::move(new_state);
}

}  // namespace kiln::optim
