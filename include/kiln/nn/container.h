// Sequential, ModuleList, ModuleDict.
#pragma once
#include <kiln/nn/module.h>

#include <functional>
#include <string>
#include <vector>

namespace kiln::nn {

// Chains modules whose forward maps a Tensor to a Tensor; children are named "0", "1", ...
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  template <ModuleRef... M>
    requires(sizeof...(M) > 0)
  explicit SequentialImpl(M&&... modules) {
    (push_back(std::forward<M>(modules)), ...);
  }
  template <ModuleRef M>
  void push_back(M&& module, SourceLoc loc = SourceLoc::current()) {
    push_back(std::to_string(steps_.size()), std::forward<M>(module), loc);
  }
  template <ModuleRef M>
  void push_back(const std::string& name, M&& module, SourceLoc loc = SourceLoc::current()) {
    auto p = module_ptr(module);
    register_module(name, p, loc);
    steps_.push_back(unary_forward(module));
  }
  Tensor forward(const Tensor& input);
  size_t size() const { return steps_.size(); }
  bool empty() const { return steps_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const;

 private:
  template <class M>
  static std::function<Tensor(const Tensor&)> unary_forward(const M& module) {
    auto impl = [&] {
      if constexpr (traits::is_holder<std::decay_t<M>>::value)
        return module.ptr();
      else
        return module;
    }();
    using Impl = typename std::decay_t<decltype(impl)>::element_type;
    static_assert(requires(Impl& m, const Tensor& t) {
      { m.forward(t) } -> std::convertible_to<Tensor>;
    }, "Sequential holds modules with a forward(const Tensor&) -> Tensor");
    return [impl](const Tensor& t) -> Tensor { return impl->forward(t); };
  }
  std::vector<std::function<Tensor(const Tensor&)>> steps_;
};
KILN_MODULE(Sequential);

// A list of child modules named "0", "1", ...; element access returns the base pointer, or the
// concrete type with at<T>(i) (T a Module subclass or a holder such as nn::Linear).
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() = default;
  template <ModuleRef... M>
    requires(sizeof...(M) > 0)
  explicit ModuleListImpl(M&&... modules) {
    (push_back(std::forward<M>(modules)), ...);
  }
  template <ModuleRef M>
  void push_back(M&& module, SourceLoc loc = SourceLoc::current()) {
    auto p = module_ptr(module);
    register_module(std::to_string(items_.size()), p, loc);
    items_.push_back(std::move(p));
  }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const { return ptr(i); }
  std::shared_ptr<Module> ptr(size_t i) const;
  template <class T>
  auto at(size_t i) const {
    return ptr(i)->template as<T>();
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  std::string extra_repr() const override { return ""; }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};
KILN_MODULE(ModuleList);

// Child modules by key, in insertion order.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() = default;
  template <ModuleRef M>
  void insert(const std::string& key, M&& module, SourceLoc loc = SourceLoc::current()) {
    register_module(key, module_ptr(module), loc);
  }
  bool contains(const std::string& key) const;
  size_t size() const { return named_children().size(); }
  std::vector<std::string> keys() const;
  std::shared_ptr<Module> operator[](const std::string& key) const { return ptr(key); }
  std::shared_ptr<Module> ptr(const std::string& key) const;
  template <class T>
  auto at(const std::string& key) const {
    return ptr(key)->template as<T>();
  }
};
KILN_MODULE(ModuleDict);

}  // namespace kiln::nn
