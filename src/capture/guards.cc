// Building and checking GuardSets.
#include "capture/guards.h"

#include <kiln/autocast.h>
#include <kiln/autograd.h>

#include "core/tensor_impl.h"

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

TensorGuard guard_of(const Tensor& t, size_t index) {
  TensorGuard g{};
  g.input = index;
  g.defined = t.defined();
  if (!g.defined) return g;
  g.dtype = t.dtype();
  g.device = t.device();
  g.requires_grad = t.requires_grad();
  g.sizes = t.sizes();
  g.strides = t.strides();
  g.contiguous = t.is_contiguous();
  g.all_static = true;
  return g;
}

// The hot path: every check reads the TensorImpl directly, and words are built only for the
// guard that fails (a cached call runs all of them). `label` names the tensor in those words.
template <class Label>
std::optional<std::string> mismatch(const TensorGuard& g, const Tensor& t, const Label& label) {
  if (t.defined() != g.defined) return label() + (g.defined ? "None, traced with a tensor" : "a tensor, traced with None");
  if (!g.defined) return std::nullopt;
  const TensorImpl& impl = *t.impl();
  if (impl.dtype != g.dtype) return label() + "dtype " + name(impl.dtype) + ", expected " + name(g.dtype);
  const Shape& sz = impl.sizes;
  if (sz.size() != g.sizes.size())
    return label() + "rank " + std::to_string(sz.size()) + ", expected " + std::to_string(g.sizes.size());
  for (size_t d = 0; d < sz.size(); d++)
    if (g.sizes[d] >= 0 && sz[d] != g.sizes[d])
      return label() + "size " + std::to_string(d) + " is " + std::to_string(sz[d]) + ", expected " + std::to_string(g.sizes[d]) +
             " (shape " + shape_str(sz) + ", traced with " + str_vec(g.sizes) + ")";
  if (!(impl.device() == g.device)) return label() + "device " + impl.device().str() + ", expected " + g.device.str();
  if (t.requires_grad() != g.requires_grad)
    return label() + "requires_grad is " + (t.requires_grad() ? "True" : "False") + ", traced with " + (g.requires_grad ? "True" : "False");
  if (g.all_static ? impl.strides != g.strides : impl.is_contiguous() != g.contiguous)
    return label() + "strides " + shape_str(impl.strides) + ", traced with " + shape_str(g.strides);
  return std::nullopt;
}

}  // namespace

void GuardSet::lift(const std::vector<Tensor>& ts) {
  lifted.clear();
  for (size_t k = 0; k < ts.size(); k++) lifted.push_back(guard_of(ts[k], k));
}

std::optional<std::string> GuardSet::check_lifted(const std::vector<Tensor>& ts) const {
  for (const TensorGuard& g : lifted)
    if (auto m = mismatch(g, ts[g.input], [&] {
          return "lifted tensor " + std::to_string(g.input) + " (a parameter or captured tensor, changed in place): ";
        }))
      return m;
  return std::nullopt;
}

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
      TensorGuard t = guard_of(a.tensor, i);
      for (const SymbolSource& s : symbols)
        if (s.input == i) t.sizes[size_t(s.dim)] = -1, t.all_static = false;
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
  for (const TensorGuard& g : tensors)
    if (auto m = mismatch(g, args[g.input].tensor, [&] { return "input " + std::to_string(g.input) + ": "; })) return m;
  for (const auto& [i, v] : scalars)
    if (!(args[i].scalar == v) || args[i].scalar.kind() != v.kind())
      return "argument " + std::to_string(i) + " is " + args[i].scalar.str() + ", traced with " + v.str();
  for (const auto& [i, m] : modules) {
    if (args[i].module != m.module) return "argument " + std::to_string(i) + " is a different module";
    if (args[i].module_state != m.module_state)
      return "argument " + std::to_string(i) +
             ": the module changed (a parameter or buffer replaced or added, or, from Python, an attribute assigned)";
    // (From Python, train()/eval() is an attribute too: the attributes' state says it first.)
    if (args[i].module_attrs != m.module_attrs)
      return "argument " + std::to_string(i) +
             ": the module changed (a parameter or buffer replaced or added, or, from Python, an attribute assigned)";
    if (args[i].module_training != m.module_training)
      return "argument " + std::to_string(i) + ": the module (or a submodule) switched between train() and eval()";
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
    const bool all_static = g.all_static;
    out.push_back("input " + std::to_string(g.input) + ": " + name(g.dtype) + str_vec(g.sizes) + " on " + g.device.str() +
                  ", requires_grad=" + (g.requires_grad ? "True" : "False") +
                  (all_static ? ", strides " + shape_str(g.strides) : std::string(g.contiguous ? ", contiguous" : ", non-contiguous")));
  }
  for (const auto& [i, v] : scalars) out.push_back("argument " + std::to_string(i) + " == " + v.str());
  for (const auto& [i, m] : modules)
    out.push_back("argument " + std::to_string(i) + ": the same module, with the same " +
                  std::to_string(m.module_state.size()) + " parameters and buffers, in " +
                  (m.module_training.empty() || m.module_training[0] ? "train" : "eval") + " mode (and its submodules' modes)");
  for (const SymbolSource& s : symbols)
    out.push_back(s.name + " = input " + std::to_string(s.input) + " size " + std::to_string(s.dim) + ", in [" +
                  std::to_string(s.min) + ", " + (s.max == INT64_MAX ? std::string("inf") : std::to_string(s.max)) + "]");
  if (!lifted.empty())
    out.push_back(std::to_string(lifted.size()) + " lifted tensors (parameters, captured tensors): each with its traced dtype, "
                  "sizes, strides, device and requires_grad");
  for (const RelationGuard& r : relations)
    out.push_back(std::string(r.result ? "" : "not ") + sym::str(r.a) + " " + r.rel + " " + sym::str(r.b));
  return out;
}

}  // namespace kiln::capture
