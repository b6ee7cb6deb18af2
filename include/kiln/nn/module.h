// kiln::nn::Module: the base of every layer and model. A module owns named parameters, buffers
// and child modules, registered in its constructor; the recursive views (named_parameters,
// state_dict, ...) walk them in registration order with dotted names ("blocks.0.attn.qkv.weight").
#pragma once
#include <kiln/autograd.h>
#include <kiln/ops.h>
#include <kiln/tensor.h>

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln::nn {

class Module;
template <class Impl>
class ModuleHolder;

namespace traits {
template <class T>
struct is_holder : std::false_type {};
template <class T>
  requires std::is_base_of_v<ModuleHolder<typename T::ImplType>, T>
struct is_holder<T> : std::true_type {};
template <class T>
struct is_shared_ptr : std::false_type {};
template <class T>
struct is_shared_ptr<std::shared_ptr<T>> : std::true_type {};
}  // namespace traits

// Anything register_module accepts: a std::shared_ptr to a Module subclass or a holder (nn::Linear).
template <class M>
concept ModuleRef = traits::is_holder<std::decay_t<M>>::value ||
                    (traits::is_shared_ptr<std::decay_t<M>>::value &&
                     std::is_base_of_v<Module, typename std::decay_t<M>::element_type>);

template <class M>
std::shared_ptr<Module> module_ptr(const M& m) {
  if constexpr (traits::is_holder<M>::value)
    return m.ptr();
  else
    return m;
}

class Module : public std::enable_shared_from_this<Module> {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // --- registration (in the constructor). Each returns a reference to the registered slot, which
  // stays valid as long as the module lives: layers keep `Tensor& weight` members bound to it, so
  // assigning `head->weight = wte->weight` re-points the registered parameter (weight tying).
  // An undefined tensor registers an empty slot (like PyTorch's None): skipped by every view.
  // Registering an existing name replaces its value.
  Tensor& register_parameter(const std::string& name, Tensor t, bool requires_grad = true,
                             SourceLoc loc = SourceLoc::current());
  // persistent = false keeps the buffer out of state_dict().
  Tensor& register_buffer(const std::string& name, Tensor t, bool persistent = true,
                          SourceLoc loc = SourceLoc::current());
  template <ModuleRef M>
  std::decay_t<M> register_module(const std::string& name, M&& module, SourceLoc loc = SourceLoc::current()) {
    add_child(name, module_ptr(module), loc);
    return std::forward<M>(module);
  }

  // --- recursive views, in registration order; a tensor or module reachable under several names
  // (tied weights) is listed once, under its first name.
  std::vector<std::pair<std::string, Tensor>> named_parameters(bool recurse = true) const;
  TensorList parameters(bool recurse = true) const;
  std::vector<std::pair<std::string, Tensor>> named_buffers(bool recurse = true) const;
  TensorList buffers(bool recurse = true) const;
  // This module (named "") and all its descendants.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules() const;
  std::vector<std::shared_ptr<Module>> modules() const;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  // Direct lookups (dotted names allowed); throw kiln::Error when absent.
  Tensor& parameter(const std::string& dotted_name);
  Tensor& buffer(const std::string& dotted_name);
  std::shared_ptr<Module> submodule(const std::string& dotted_name) const;

  // --- mode, dtype/device, gradients
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Converts the floating point parameters (and their gradients) in place: every Tensor handle to
  // them (an optimizer's, a tied module's) sees the new dtype, and they stay leaves. Buffers are
  // replaced in their slots (layer members such as running_mean follow). Integer tensors stay.
  Module& to(DType dtype, SourceLoc loc = SourceLoc::current());
  Module& to(Device device, SourceLoc loc = SourceLoc::current());
  void zero_grad();  // sets every parameter's grad to undefined (PyTorch's set_to_none=True)
  void apply(const std::function<void(Module&)>& fn);  // on every module, children first

  // --- checkpoints: parameters and persistent buffers by dotted name (tied tensors appear under
  // every name). The values share memory with the module's tensors.
  std::map<std::string, Tensor> state_dict() const;
  // Copies the values into the existing tensors (no-grad). strict: missing or unexpected keys are
  // an error. Shape and dtype must match exactly. Everything is checked before anything is copied.
  void load_state_dict(const std::map<std::string, Tensor>& state, bool strict = true,
                       SourceLoc loc = SourceLoc::current());

  // --- printing (like PyTorch's repr): "Name(extra)" or a tree of "(child): ..." lines.
  std::string type_name() const;             // the class name, namespaces and an "Impl" suffix removed
  virtual std::string extra_repr() const { return ""; }  // "in_features=4, out_features=8, bias=true"
  std::string str() const;

  // This module as a T (a Module subclass or a holder type); throws kiln::Error on a mismatch.
  template <class T>
  auto as() {
    if constexpr (traits::is_holder<T>::value) {
      return T(as_impl<typename T::ImplType>());
    } else {
      return as_impl<T>();
    }
  }

 private:
  struct Slot {
    std::string name;
    Tensor value;
    bool persistent = true;
  };
  template <class T>
  std::shared_ptr<T> as_impl() {
    auto self = weak_from_this().lock();
    if (!self) not_shared();
    auto p = std::dynamic_pointer_cast<T>(self);
    if (!p) bad_cast(typeid(T).name());
    return p;
  }
  [[noreturn]] void bad_cast(const char* target) const;
  [[noreturn]] void not_shared() const;
  void add_child(const std::string& name, std::shared_ptr<Module> m, SourceLoc loc);
  void check_new_name(const std::string& name, const char* kind, int skip) const;
  void print(std::ostream& os, int indent) const;
  void convert(const std::function<Tensor(const Tensor&)>& fn);
  template <class F>
  void walk(const std::string& prefix, bool recurse, F&& f) const;

  std::vector<std::unique_ptr<Slot>> params_, buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

// A shared_ptr to a module implementation with call syntax: nn::Linear(4, 8) builds a LinearImpl;
// fc->weight reaches its members; fc(x) calls its forward. Copies share the module.
template <class Impl>
class ModuleHolder {
 public:
  using ImplType = Impl;
  // Builds a default Impl when there is one; otherwise an empty holder to assign later.
  ModuleHolder() {
    if constexpr (std::is_default_constructible_v<Impl>) impl_ = std::make_shared<Impl>();
  }
  ModuleHolder(std::nullptr_t) {}
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  template <class A, class... Rest>
    requires(!std::is_same_v<std::decay_t<A>, std::nullptr_t> &&
             !std::is_base_of_v<ModuleHolder, std::decay_t<A>> &&
             !std::is_same_v<std::decay_t<A>, std::shared_ptr<Impl>> && std::is_constructible_v<Impl, A, Rest...>)
  ModuleHolder(A&& a, Rest&&... rest) : impl_(std::make_shared<Impl>(std::forward<A>(a), std::forward<Rest>(rest)...)) {}

  Impl* operator->() const { return get(); }
  Impl& operator*() const { return *get(); }
  Impl* get() const {
    if (!impl_) null_access();
    return impl_.get();
  }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  explicit operator bool() const { return impl_ != nullptr; }
  operator std::shared_ptr<Module>() const { return impl_; }
  template <class Arg>
  decltype(auto) operator[](Arg&& arg) const {
    return (*get())[std::forward<Arg>(arg)];
  }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }

 private:
  [[noreturn]] static void null_access();
  std::shared_ptr<Impl> impl_;
};

[[noreturn]] void null_holder_access(const char* type);
template <class Impl>
void ModuleHolder<Impl>::null_access() {
  null_holder_access(typeid(Impl).name());
}

template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& m) {
  return os << *m;
}

}  // namespace kiln::nn

// Declares the holder `Name` for a module class `NameImpl`, as libtorch's TORCH_MODULE does.
#define KILN_MODULE(Name)                                          \
  class Name : public ::kiln::nn::ModuleHolder<Name##Impl> {       \
   public:                                                         \
    using ::kiln::nn::ModuleHolder<Name##Impl>::ModuleHolder;      \
  }
