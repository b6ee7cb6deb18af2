// Sequential, ModuleList, ModuleDict.
#include <kiln/nn/container.h>

namespace kiln::nn {

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (auto& step : steps_) x = step(x);
  return x;
}

std::shared_ptr<Module> SequentialImpl::operator[](size_t i) const {
  KILN_CHECK(i < steps_.size(), "Sequential: index ", i, " is out of range for ", steps_.size(), " modules");
  return named_children()[i].second;
}

std::shared_ptr<Module> ModuleListImpl::ptr(size_t i) const {
  KILN_CHECK(i < items_.size(), "ModuleList: index ", i, " is out of range for ", items_.size(), " modules");
  return items_[i];
}

bool ModuleDictImpl::contains(const std::string& key) const {
  for (const auto& [n, m] : named_children())
    if (n == key) return true;
  return false;
}

std::vector<std::string> ModuleDictImpl::keys() const {
  std::vector<std::string> out;
  for (const auto& [n, m] : named_children()) out.push_back(n);
  return out;
}

std::shared_ptr<Module> ModuleDictImpl::ptr(const std::string& key) const {
  for (const auto& [n, m] : named_children())
    if (n == key) return m;
  detail::fail("ModuleDict: no module under the key \"" + key + "\"");
}

}  // namespace kiln::nn
