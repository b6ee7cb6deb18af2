// Differential testing of a backend against eager: the same graph, the same inputs (drawn from
// the input specs and a seed, so a graph text plus its seed replays a failure: kiln-opt
// --run-backend), results compared at the output dtype's tolerance. Used by the fuzzer and by
// kiln-opt. See tests/fuzz/README.md.
#pragma once
#include <kiln/compile.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::fuzz {

using SymEnv = std::map<std::string, int64_t>;

// Fresh inputs for one call of g: each with its spec's sizes (symbols bound by `env`), strides
// and offset, over a buffer of random values: floats in [-3, 3] (multiples of 1/4 for half the
// seeds, so comparisons meet ties), integers in [-4, 4], bools. The same (g, seed, env) gives
// the same values.
std::vector<Tensor> make_inputs(const graph::Graph& g, uint64_t seed, const SymEnv& env = {});

// Each symbol of g's input sizes bound to its hint.
SymEnv hint_env(const graph::Graph& g);

// How far a correct backend may legitimately be from eager on one output, beyond the dtype's
// tolerance: |got - eager| <= abs + rel * |eager| (from the fuzzer's error analysis of the graph:
// rounding, reordered sums and library functions accumulated along the computation).
struct ErrorBound {
  double abs = 0, rel = 0;
};

// Relative and absolute tolerance of a dtype (the absolute one scaled by the output's largest
// finite magnitude, at least 1); integers and bools compare exactly.
struct Tolerance {
  double rtol = 0, atol = 0;
};
Tolerance tolerance(DType t);

// "" when `got` matches `expected` (same dtype and sizes; values within tolerance, NaN equal
// to NaN, infinities of the same sign equal), otherwise what differs and where.
std::string compare(const Tensor& got, const Tensor& expected, ErrorBound allowed = {});

struct Outcome {
  enum Kind { Pass, Mismatch, BackendError, ReferenceError };
  Kind kind = Pass;
  std::string message;  // empty on Pass
  bool ok() const { return kind == Pass; }
};
const char* kind_name(Outcome::Kind k);

// A backend's compiled graph, or the BackendError compiling it threw.
struct Compiled {
  CompiledGraph run;
  Outcome error;
};
Compiled compile_with(const Backend& backend, std::shared_ptr<const graph::Graph> g);

// check() below, with the compiling done (compile_with: a caller compiles many graphs, then checks them).
Outcome check(const Compiled& compiled, const graph::Graph& g, uint64_t seed, const std::vector<SymEnv>& calls,
              const std::vector<ErrorBound>& allowed = {});

// Compiles g with `backend` once and calls it once per env in `calls` (one empty env for a
// graph without symbols; its symbols' hints without `calls`), comparing each call with graph::interpret on the same inputs.
// ReferenceError: eager itself rejected the inputs (the graph is not a valid test).
// `allowed`: per output, what compare() may allow beyond the dtype tolerance (none when empty).
Outcome check(const Backend& backend, std::shared_ptr<const graph::Graph> g, uint64_t seed,
              const std::vector<SymEnv>& calls, const std::vector<ErrorBound>& allowed = {});

// The backend registered under `name` (kiln::Error listing the registered ones otherwise).
Backend backend_named(const std::string& name);

// "s0=5,s1=3;s0=2,s1=7" <-> calls (kiln-opt --calls=...).
std::string calls_str(const std::vector<SymEnv>& calls);
std::vector<SymEnv> parse_calls(const std::string& text);

}  // namespace kiln::fuzz
