// The part of kiln/compile.h that capture (src/capture/) implements: options, explain reports,
// the engine a compiled function runs through, cond, opaque and lazy mode. Include
// <kiln/compile.h>, which includes this; the split keeps the layers one-way (capture may include
// this header, not compile.h, whose backend registry lives above it in src/compile/).
#pragma once
#include <kiln/nn/module.h>
#include <kiln/tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace kiln {

namespace graph {
class Graph;
}

struct CompileOptions {
  std::string backend = "inductor";
  // torch.compile's modes (docs/compiler.md, "Modes"): "default"; "reduce-overhead" (CUDA graphs
  // in torch: the default mode on the CPU); "max-autotune" and "max-autotune-no-cudagraphs" (the
  // same on the CPU): inductor tunes its kernels' block sizes and races BLAS against a generated
  // matmul. A mode other than "default" is an option of the "inductor" backend only.
  std::string mode = "default";
  // nullopt: automatic (a size that changed between two compilations becomes symbolic in the
  // next); true: every size is symbolic from the start; false: every size is specialized.
  // Sizes 0 and 1 are always specialized.
  std::optional<bool> dynamic;
  int recompile_limit = 8;     // graphs per function; beyond it the function runs eagerly
  bool error_on_recompile_limit = false;  // raise kiln::Error at the limit instead
  bool fullgraph = false;      // a graph break is an error instead of a split into segments
  std::string name;            // for logs and explain (default: "compiled function")
};

// A backend turns a captured graph into a function that runs it on real inputs.
using CompiledGraph = std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs)>;
using Backend = std::function<CompiledGraph(std::shared_ptr<const graph::Graph> graph)>;

// Makes dim `dim` of this tensor symbolic whenever it is passed to a compiled function (within
// [min, max], which become guards).
void mark_dynamic(const Tensor& t, int64_t dim, int64_t min = 2, int64_t max = INT64_MAX,
                  SourceLoc loc = SourceLoc::current());

// What compile() did with a function: graphs, the ops in each, graph breaks with their reasons
// and the user's source lines, guards, recompile reasons and compile times.
struct ExplainReport {
  struct Break {
    std::string reason, file;
    unsigned line = 0;
  };
  int graph_count = 0;
  std::vector<int> ops_per_graph;
  std::vector<Break> breaks;
  std::vector<std::string> guards;             // of the most recent graph
  std::vector<std::string> recompile_reasons;  // the guard that failed, per recompile
  std::vector<double> compile_ms;              // per graph: trace + backend
  std::vector<std::string> graphs;             // each graph's IR text
  std::vector<std::string> specializations;    // symbolic sizes fixed to a value, and why
  // Every value baked into a graph: "graph 0: 2.5 (a number, argument of mul) at f.cc:12", and
  // from Python the guarded values by name ("graph 0: k[0] = 2.0 (global list item, read at f.py:3)").
  std::vector<std::string> constants;
  bool eager_fallback = false;                 // the recompile limit was reached
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const ExplainReport& r);

namespace capture {

// One flattened argument of a compiled call: a tensor, a number, or a module.
struct ArgValue {
  enum class Kind : uint8_t { Tensor, Scalar, Module };
  Kind kind = Kind::Tensor;
  Tensor tensor;
  Scalar scalar;
  const void* module = nullptr;           // its identity
  std::vector<const void*> module_state;  // identities of its parameters and buffers
  std::vector<bool> module_training;      // is_training() of it and each descendant
  uint64_t module_attrs = 0;              // from Python: a number standing for its attributes' values
};

// Conditions a trace depended on beyond its arguments and the global modes, supplied by the code
// being traced (from Python: the Python values the function read, python/csrc/py_guards.cc). They
// are checked with the graph's other guards on every call; a failure recompiles (counted against
// the recompile limit) and is reported with the value that changed.
class ExternalGuards {
 public:
  virtual ~ExternalGuards() = default;
  virtual std::optional<std::string> check() const = 0;  // null if all hold, else the failing one in words
  virtual std::vector<std::string> describe() const = 0;
  virtual std::vector<std::string> constants() const { return {}; }  // values baked in, by name
};
// During a trace: the graph being traced also holds only while `g` holds. Outside one: an error.
void add_external_guards(std::shared_ptr<const ExternalGuards> g);
// Whether a trace is running on this thread (a compiled function's first call on new guards).
bool tracing();
// During a trace: stops it with a graph break for `reason` at the user's current line (throws).
[[noreturn]] void graph_break(const std::string& reason);

class Engine;
using Body = std::function<std::vector<Tensor>(const std::vector<ArgValue>& args)>;
std::shared_ptr<Engine> make_engine(const CompileOptions& options);
// Runs a call: a cached graph whose guards hold, else a new trace of `body`.
std::vector<Tensor> run(Engine& e, const std::vector<ArgValue>& args, const Body& body);
ExplainReport report(const Engine& e);

// --- flattening C++ arguments and results
ArgValue module_arg(const nn::Module& m);
inline void flatten(const Tensor& t, std::vector<ArgValue>& out) { out.push_back({ArgValue::Kind::Tensor, t, {}, nullptr, {}, {}}); }
inline void flatten(const std::vector<Tensor>& l, std::vector<ArgValue>& out) {
  out.push_back({ArgValue::Kind::Scalar, {}, Scalar(int64_t(l.size())), nullptr, {}, {}});  // the length is guarded
  for (const Tensor& t : l) flatten(t, out);
}
template <class T>
  requires(std::is_arithmetic_v<T>)
void flatten(T v, std::vector<ArgValue>& out) {
  out.push_back({ArgValue::Kind::Scalar, {}, Scalar(v), nullptr, {}, {}});
}
inline void flatten(const nn::Module& m, std::vector<ArgValue>& out) { out.push_back(module_arg(m)); }
template <class M>
  requires nn::ModuleRef<M>
void flatten(const M& m, std::vector<ArgValue>& out) {
  out.push_back(module_arg(*nn::module_ptr(m)));
}

inline const Tensor& rebuild(const Tensor&, const std::vector<ArgValue>& v, size_t& pos) { return v[pos++].tensor; }
inline std::vector<Tensor> rebuild(const std::vector<Tensor>& l, const std::vector<ArgValue>& v, size_t& pos) {
  pos++;
  std::vector<Tensor> out;
  for (size_t i = 0; i < l.size(); i++) out.push_back(v[pos++].tensor);
  return out;
}
template <class T>
  requires(!std::is_same_v<std::remove_cv_t<T>, Tensor> && !std::is_same_v<std::remove_cv_t<T>, std::vector<Tensor>>)
T& rebuild(T& orig, const std::vector<ArgValue>&, size_t& pos) {  // numbers (guarded), modules: as passed
  pos++;
  return orig;
}

inline void flatten_result(const Tensor& t, std::vector<Tensor>& out) { out.push_back(t); }
inline void flatten_result(const std::vector<Tensor>& l, std::vector<Tensor>& out) { out.insert(out.end(), l.begin(), l.end()); }
template <class... T>
void flatten_result(const std::tuple<T...>& t, std::vector<Tensor>& out) {
  std::apply([&](const auto&... e) { (flatten_result(e, out), ...); }, t);
}
template <class A, class B>
void flatten_result(const std::pair<A, B>& p, std::vector<Tensor>& out) {
  flatten_result(p.first, out), flatten_result(p.second, out);
}

template <class R>
struct Unflatten;
template <>
struct Unflatten<Tensor> {
  static Tensor get(std::vector<Tensor>& v, size_t& pos, size_t) { return v.at(pos++); }
};
template <>
struct Unflatten<std::vector<Tensor>> {
  static std::vector<Tensor> get(std::vector<Tensor>& v, size_t& pos, size_t n) {
    std::vector<Tensor> out(v.begin() + long(pos), v.begin() + long(pos + n));
    pos += n;
    return out;
  }
};
template <class... T>
struct Unflatten<std::tuple<T...>> {
  static std::tuple<T...> get(std::vector<Tensor>& v, size_t& pos, size_t) { return {Unflatten<T>::get(v, pos, 0)...}; }
};
template <class A, class B>
struct Unflatten<std::pair<A, B>> {
  static std::pair<A, B> get(std::vector<Tensor>& v, size_t& pos, size_t) {
    A a = Unflatten<A>::get(v, pos, 0);
    return {std::move(a), Unflatten<B>::get(v, pos, 0)};
  }
};

}  // namespace capture

// Data-dependent control flow without a graph break: both branches are captured (and run;
// the result of the one `pred` selects is kept, as where() does), so they must return tensors
// of the same shape and dtype and have no side effects. Eagerly, only the chosen branch runs.
Tensor cond(const Tensor& pred, const std::function<Tensor()>& true_fn, const std::function<Tensor()>& false_fn,
            SourceLoc loc = SourceLoc::current());

namespace capture {
// While alive: code runs outside capture. Under a trace it is a graph break (what follows runs
// in segments, this part eagerly); in lazy mode pending work is computed first, then ops run
// eagerly until the scope ends.
class OpaqueScope {
 public:
  explicit OpaqueScope(const std::string& what);
  ~OpaqueScope();
  OpaqueScope(const OpaqueScope&) = delete;
  OpaqueScope& operator=(const OpaqueScope&) = delete;

 private:
  struct Saved;
  std::unique_ptr<Saved> saved_;
};
}  // namespace capture

// A function compile() never looks into: calls to it are graph breaks, and it runs eagerly on
// real tensors (for code capture can't handle, or that must run as written: logging, I/O).
template <class F>
auto opaque(F fn, std::string name = "a function marked opaque") {
  return [fn = std::move(fn), name](auto&&... args) -> decltype(auto) {
    capture::OpaqueScope scope(name);
    return fn(std::forward<decltype(args)>(args)...);
  };
}

// Lazy mode (the XLA execution model): inside the scope, ops are recorded instead of run; a
// tensor's data is computed when it is read (a sync point) or when the scope ends, by compiling
// the pending graph (once per distinct graph: cached by its structure) with `backend`.
class LazyScope {
 public:
  explicit LazyScope(const std::string& backend = "eager");
  ~LazyScope() noexcept(false);
  LazyScope(const LazyScope&) = delete;
  LazyScope& operator=(const LazyScope&) = delete;
  void sync();  // runs what is pending now

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln
