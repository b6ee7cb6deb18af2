// Guards: what a compiled graph assumed about its inputs and the global state when it was traced.
// A cached graph is reused only while every guard holds. Checks run in C++, cheapest and
// likeliest-to-fail first: global modes, then per-tensor dtype/rank/sizes, then scalars, then
// relations between symbolic sizes.
#pragma once
#include <kiln/compile/capture.h>
#include <kiln/tensor.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sym/expr.h"

namespace kiln::graph {
class Graph;
}

namespace kiln::capture {

// Where a size symbol's value comes from: input `input`, dim `dim`.
struct SymbolSource {
  std::string name;
  size_t input;
  int64_t dim;
  int64_t min = 2, max = INT64_MAX;
};

struct TensorGuard {
  size_t input;
  bool defined = true;
  DType dtype;
  Device device;
  bool requires_grad;
  std::vector<int64_t> sizes;    // -1: symbolic (checked through the symbol's source)
  std::vector<int64_t> strides;  // checked where every size is static; else contiguity
  bool contiguous;
  bool all_static;  // no size is symbolic
};

struct RelationGuard {
  std::string rel;  // "==", "<", "<="
  sym::ExprPtr a, b;
  bool result;
};

class GuardSet {
 public:
  bool grad_enabled = true;
  std::optional<DType> autocast;
  size_t num_args = 0;
  std::vector<ArgValue::Kind> kinds;
  std::vector<TensorGuard> tensors;
  std::vector<std::pair<size_t, Scalar>> scalars;
  std::vector<std::pair<size_t, ArgValue>> modules;  // identity and parameter identities
  std::vector<SymbolSource> symbols;
  std::vector<RelationGuard> relations;
  std::vector<TensorGuard> lifted;  // the lifted tensors' metadata (input = their index)

  // The guards of a trace of `args` in which the given dims are symbolic.
  static GuardSet from_args(const std::vector<ArgValue>& args, const std::vector<SymbolSource>& symbols);
  // Null if every guard holds for `args`; otherwise the first failing guard, described with the
  // value it saw ("input 0: size 1 is 9, expected 8").
  std::optional<std::string> check(const std::vector<ArgValue>& args) const;
  // Guards on the tensors a trace lifted (bound by identity): a change of their metadata in place
  // (Module::to(dtype), requires_grad_(false)) needs a new graph.
  void lift(const std::vector<Tensor>& ts);
  std::optional<std::string> check_lifted(const std::vector<Tensor>& ts) const;
  // The guards in words, one per line.
  std::vector<std::string> describe() const;
};

// The cached part of run(): the outputs of a cached graph whose guards hold for `args`, or
// nullopt where run() would trace, run segments or run eagerly (the caller then calls run()).
// The Python binding's fast call path tries it before building a Body.
std::optional<std::vector<Tensor>> run_cached(Engine& e, const std::vector<ArgValue>& args);

// Calls f on the external guards of every graph of e (the Python binding's GC traversal).
void for_each_external_guards(const Engine& e, const std::function<void(const ExternalGuards&)>& f);

// Every value a graph bakes in, in words, for explain(): its constant nodes (wrapped numbers,
// literal tensors) and the numbers passed to its ops, each with the op and the user's line it came
// from. What a compiled call never re-reads: pass a value that changes as an argument instead.
std::vector<std::string> graph_constants(const graph::Graph& g);

}  // namespace kiln::capture
