// Building and checking GuardSets.
#include "capture/guards.h"

#include <kiln/autocast.h>
#include <kiln/autograd.h>

namespace kiln::capture {
namespace {

std::string str_vec(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); i++) s += (i ? ", " : "") + (v[i] < 0 ? std::string("?") : std::to_string(v[i]));
  return s + "]";
}

bool holds(const std::string& rel, int64_t a, int64_t b) {
  return rel == "==" ? a == b : rel == "<" ? a < b : a <= b;
}

}  // namespace

GuardSet GuardSet::from_args(const std::vector<ArgValue>& args, const std::vector<SymbolSource>& symbols) {
  GuardSet g;
  g.grad_enabled = is_grad_enabled();
  g.autocast = autocast_dtype();
  g.num_args = args.size();
  g.symbols = symbols;
  for (size_t i = 0; i < args.size(); i++) {
    const ArgValue& a = args[i];
    g.kinds.push_back(a.kind);
    if (a.kind == ArgValue::Kind::Scalar) {
      g.scalars.push_back({i, a.scalar});
    } else if (a.kind == ArgValue::Kind::Module) {
      g.modules.push_back({i, a});
    } else {
      TensorGuard t{};
      t.input = i;
      t.defined = a.tensor.defined();
      if (t.defined) {
        t.dtype = a.tensor.dtype();
        t.device = a.tensor.device();
        t.requires_grad = a.tensor.requires_grad();
        t.sizes = a.tensor.sizes();
        t.strides = a.tensor.strides();
        t.contiguous = a.tensor.is_contiguous();
        for (const SymbolSource& s : symbols)
          if (s.input == i) t.sizes[size_t(s.dim)] = -1;
      }
      g.tensors.push_back(std::move(t));
    }
  }
  return g;
}

std::optional<std::string> GuardSet::check(const std::vector<ArgValue>& args) const {
  if (is_grad_enabled() != grad_enabled)
    return std::string("grad mode is ") + (grad_enabled ? "off" : "on") + ", traced with it " + (grad_enabled ? "on" : "off");
  if (autocast_dtype() != autocast) return std::string("autocast state changed since tracing");
  if (args.size() != num_args) return "called with " + std::to_string(args.size()) + " arguments, traced with " + std::to_string(num_args);
  for (size_t i = 0; i < args.size(); i++)
    if (args[i].kind != kinds[i]) return "argument " + std::to_string(i) + " changed kind";
  for (const TensorGuard& g : tensors) {
    const Tensor& t = args[g.input].tensor;
    std::string in = "input " + std::to_string(g.input) + ": ";
    if (t.defined() != g.defined) return in + (g.defined ? "None, traced with a tensor" : "a tensor, traced with None");
    if (!g.defined) continue;
    if (t.dtype() != g.dtype) return in + "dtype " + name(t.dtype()) + ", expected " + name(g.dtype);
    if (t.dim() != int64_t(g.sizes.size()))
      return in + "rank " + std::to_string(t.dim()) + ", expected " + std::to_string(g.sizes.size());
    const Shape& sz = t.sizes();
    for (size_t d = 0; d < sz.size(); d++)
      if (g.sizes[d] >= 0 && sz[d] != g.sizes[d])
        return in + "size " + std::to_string(d) + " is " + std::to_string(sz[d]) + ", expected " + std::to_string(g.sizes[d]) +
               " (shape " + shape_str(sz) + ", traced with " + str_vec(g.sizes) + ")";
    if (!(t.device() == g.device)) return in + "device " + t.device().str() + ", expected " + g.device.str();
    if (t.requires_grad() != g.requires_grad)
      return in + "requires_grad is " + (t.requires_grad() ? "True" : "False") + ", traced with " + (g.requires_grad ? "True" : "False");
    bool all_static = true;
    for (int64_t s : g.sizes) all_static &= s >= 0;
    if (all_static ? t.strides() != g.strides : t.is_contiguous() != g.contiguous)
      return in + "strides " + shape_str(t.strides()) + ", traced with " + shape_str(g.strides);
  }
  for (const auto& [i, v] : scalars)
    if (!(args[i].scalar == v) || args[i].scalar.kind() != v.kind())
      return "argument " + std::to_string(i) + " is " + args[i].scalar.str() + ", traced with " + v.str();
  for (const auto& [i, m] : modules) {
    if (args[i].module != m.module) return "argument " + std::to_string(i) + " is a different module";
    if (args[i].module_state != m.module_state)
      return "argument " + std::to_string(i) +
             ": the module changed (a parameter or buffer replaced or added, or an attribute such as training assigned)";
  }
  if (symbols.empty()) return std::nullopt;
  std::map<std::string, int64_t> env;
  for (const SymbolSource& s : symbols) {
    int64_t v = args[s.input].tensor.size(s.dim);
    if (v < s.min || v > s.max)
      return "input " + std::to_string(s.input) + ": size " + std::to_string(s.dim) + " (" + s.name + ") is " +
             std::to_string(v) + ", outside [" + std::to_string(s.min) + ", " +
             (s.max == INT64_MAX ? std::string("inf") : std::to_string(s.max)) + "]";
    env[s.name] = v;
  }
  for (const RelationGuard& r : relations) {
    int64_t a = sym::evaluate(r.a, env), b = sym::evaluate(r.b, env);
    if (holds(r.rel, a, b) != r.result)
      return "size relation " + sym::str(r.a) + " " + r.rel + " " + sym::str(r.b) + " was " + (r.result ? "true" : "false") +
             " when traced, now " + std::to_string(a) + " " + r.rel + " " + std::to_string(b) + " is not";
  }
  return std::nullopt;
}

std::vector<std::string> GuardSet::describe() const {
  std::vector<std::string> out;
  out.push_back(std::string("grad mode ") + (grad_enabled ? "on" : "off"));
  out.push_back(std::string("autocast ") + (autocast ? name(*autocast) : "off"));
  for (const TensorGuard& g : tensors) {
    if (!g.defined) {
      out.push_back("input " + std::to_string(g.input) + ": None");
      continue;
    }
    bool all_static = true;
    for (int64_t s : g.sizes) all_static &= s >= 0;
    out.push_back("input " + std::to_string(g.input) + ": " + name(g.dtype) + str_vec(g.sizes) + " on " + g.device.str() +
                  ", requires_grad=" + (g.requires_grad ? "True" : "False") +
                  (all_static ? ", strides " + shape_str(g.strides) : std::string(g.contiguous ? ", contiguous" : ", non-contiguous")));
  }
  for (const auto& [i, v] : scalars) out.push_back("argument " + std::to_string(i) + " == " + v.str());
  for (const auto& [i, m] : modules)
    out.push_back("argument " + std::to_string(i) + ": the same module, with the same " +
                  std::to_string(m.module_state.size()) + " parameters and buffers");
  for (const SymbolSource& s : symbols)
    out.push_back(s.name + " = input " + std::to_string(s.input) + " size " + std::to_string(s.dim) + ", in [" +
                  std::to_string(s.min) + ", " + (s.max == INT64_MAX ? std::string("inf") : std::to_string(s.max)) + "]");
  for (const RelationGuard& r : relations)
    out.push_back(std::string(r.result ? "" : "not ") + sym::str(r.a) + " " + r.rel + " " + sym::str(r.b));
  return out;
}

}  // namespace kiln::capture
