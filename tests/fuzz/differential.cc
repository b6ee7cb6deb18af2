// Inputs from specs, the comparison at dtype tolerances, and one differential check.
#include "fuzz/differential.h"

#include <kiln/grad_mode.h>
#include <kiln/ops.h>

#include <cmath>
#include <random>
#include <sstream>

#include "capture/lazy.h"
#include "sym/expr.h"

namespace kiln::fuzz {
namespace {

int64_t concrete(const SymInt& s, const SymEnv& env) {
  return s.is_symbolic() ? sym::evaluate(s.expr(), env) : s.value();
}

std::string shape_of(const Tensor& t) { return shape_str(t.sizes()); }

}  // namespace

std::vector<Tensor> make_inputs(const graph::Graph& g, uint64_t seed, const SymEnv& env) {
  NoGradGuard no_grad;
  std::vector<Tensor> out;
  const bool quarters = seed % 2 == 0;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const TensorSpec spec = graph::normalized(g.inputs()[i]->spec);
    std::mt19937_64 rng(seed * 1000003 + i * 7919 + 17);
    Shape sizes, strides;
    int64_t extent = 1, numel = 1;  // the buffer holds offset + sum((size - 1) * stride) + 1 elements
    for (size_t d = 0; d < spec.sizes.size(); ++d) {
      sizes.push_back(concrete(spec.sizes[d], env));
      strides.push_back(concrete(spec.strides[d], env));
      extent += (sizes.back() - 1) * strides.back();
      numel *= sizes.back();
    }
    const int64_t offset = concrete(spec.offset, env);
    const int64_t n = numel == 0 ? offset : offset + extent;
    std::vector<double> v(static_cast<size_t>(n));
    for (double& x : v) {
      if (spec.dtype == kBool) x = double(rng() % 2);
      else if (!is_floating(spec.dtype)) x = double(int64_t(rng() % 9) - 4);
      else if (quarters) x = double(int64_t(rng() % 25) - 12) / 4;
      else x = std::uniform_real_distribution<double>(-3, 3)(rng);
    }
    Tensor buffer = tensor(v, Shape{n}, spec.dtype);
    out.push_back(buffer.as_strided(SymShape(sizes.begin(), sizes.end()), SymShape(strides.begin(), strides.end()),
                                    SymInt(offset)));
  }
  return out;
}

SymEnv hint_env(const graph::Graph& g) {
  SymEnv env;
  for (const graph::Value* v : g.inputs())
    for (const SymInt& s : v->spec.sizes)
      if (s.is_symbolic() && s.expr()->kind == sym::Kind::Symbol) env[s.expr()->name] = s.hint();
  return env;
}

Tolerance tolerance(DType t) {
  switch (t) {
    case kFloat64: return {1e-9, 1e-9};
    case kFloat32: return {1e-4, 1e-4};
    case kFloat16: return {1e-2, 1e-2};
    case kBFloat16: return {5e-2, 5e-2};
    default: return {0, 0};
  }
}

std::string compare(const Tensor& got, const Tensor& expected, ErrorBound allowed) {
  std::ostringstream os;
  if (!got.defined() || !expected.defined()) return got.defined() == expected.defined() ? "" : "one result is undefined";
  if (got.dtype() != expected.dtype() || got.sizes() != expected.sizes()) {
    os << "got " << name(got.dtype()) << shape_of(got) << ", eager gives " << name(expected.dtype()) << shape_of(expected);
    return os.str();
  }
  const std::vector<double> a = got.detach().to(kFloat64).contiguous().to_vector<double>();
  const std::vector<double> b = expected.detach().to(kFloat64).contiguous().to_vector<double>();
  const Tolerance tol = tolerance(expected.dtype());
  double scale = 1;
  for (double x : b)
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    const bool same = (std::isnan(x) && std::isnan(y)) || x == y ||
                      (std::isfinite(x) && std::isfinite(y) &&
                       std::abs(x - y) <= tol.atol * scale + allowed.abs + (tol.rtol + allowed.rel) * std::abs(y));
    if (!same && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  os.precision(9);
  os << bad << " of " << a.size() << " elements differ (" << name(expected.dtype()) << shape_of(expected) << ", rtol "
     << tol.rtol << ", atol " << tol.atol << " x " << scale;
  if (allowed.abs > 0 || allowed.rel > 0) os << ", error bound " << allowed.abs << " + " << allowed.rel << " x |eager|";
  os << "); first at flat index " << first << ": got " << a[first]
     << ", eager " << b[first];
  return os.str();
}

const char* kind_name(Outcome::Kind k) {
  switch (k) {
    case Outcome::Pass: return "pass";
    case Outcome::Mismatch: return "mismatch";
    case Outcome::BackendError: return "backend error";
    case Outcome::ReferenceError: return "eager error";
  }
  return "?";
}

Compiled compile_with(const Backend& backend, std::shared_ptr<const graph::Graph> g) {
  NoGradGuard no_grad;
  try {
    return {backend(std::move(g)), {}};
  } catch (const std::exception& e) {
    return {nullptr, {Outcome::BackendError, std::string("compiling: ") + e.what()}};
  }
}

Outcome check(const Backend& backend, std::shared_ptr<const graph::Graph> g, uint64_t seed,
              const std::vector<SymEnv>& calls, const std::vector<ErrorBound>& allowed) {
  return check(compile_with(backend, g), *g, seed, calls, allowed);
}

Outcome check(const Compiled& compiled, const graph::Graph& g, uint64_t seed, const std::vector<SymEnv>& calls,
              const std::vector<ErrorBound>& allowed) {
  NoGradGuard no_grad;
  if (!compiled.error.ok()) return compiled.error;
  const CompiledGraph& run = compiled.run;
  const std::vector<SymEnv> envs = calls.empty() ? std::vector<SymEnv>{hint_env(g)} : calls;
  for (size_t c = 0; c < envs.size(); ++c) {
    const std::string call = envs.size() > 1 ? "call " + std::to_string(c) + " (" + calls_str({envs[c]}) + "): " : "";
    std::vector<Tensor> expected, got;
    try {
      expected = graph::interpret(g, make_inputs(g, seed, envs[c]));
    } catch (const std::exception& e) {
      return {Outcome::ReferenceError, call + e.what()};
    }
    try {
      got = run(make_inputs(g, seed, envs[c]));
    } catch (const std::exception& e) {
      return {Outcome::BackendError, call + e.what()};
    }
    if (got.size() != expected.size())
      return {Outcome::Mismatch, call + std::to_string(got.size()) + " outputs, eager gives " + std::to_string(expected.size())};
    for (size_t i = 0; i < got.size(); ++i) {
      std::string diff = compare(got[i], expected[i], i < allowed.size() ? allowed[i] : ErrorBound{});
      if (!diff.empty()) return {Outcome::Mismatch, call + "output " + std::to_string(i) + ": " + diff};
    }
  }
  return {};
}

Backend backend_named(const std::string& name) {
  capture::compile_graph(name, nullptr);  // throws, naming the registered backends, for an unknown name
  return [name](std::shared_ptr<const graph::Graph> g) { return capture::compile_graph(name, std::move(g)); };
}

std::string calls_str(const std::vector<SymEnv>& calls) {
  std::string s;
  for (const SymEnv& env : calls) {
    if (!s.empty()) s += ";";
    std::string one;
    for (const auto& [k, v] : env) one += (one.empty() ? "" : ",") + k + "=" + std::to_string(v);
    s += one;
  }
  return s;
}

std::vector<SymEnv> parse_calls(const std::string& text) {
  std::vector<SymEnv> calls;
  std::stringstream all(text);
  std::string call;
  while (std::getline(all, call, ';')) {
    SymEnv env;
    std::stringstream one(call);
    std::string kv;
    while (std::getline(one, kv, ',')) {
      const size_t eq = kv.find('=');
      KILN_CHECK_HINT(eq != std::string::npos && eq > 0, "write calls as s0=5,s1=3;s0=2,s1=7",
                      "fuzz: bad symbol binding '", kv, "'");
      try {
        env[kv.substr(0, eq)] = std::stoll(kv.substr(eq + 1));
      } catch (const std::exception&) {
        KILN_CHECK_HINT(false, "write calls as s0=5,s1=3;s0=2,s1=7", "fuzz: bad size in '", kv, "'");
      }
    }
    calls.push_back(env);
  }
  return calls;
}

}  // namespace kiln::fuzz
