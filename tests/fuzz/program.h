// The graph fuzzer's programs: a random recipe of prims (inputs with layouts and dynamic dims,
// then steps that each define one value), built into a graph IR with the graph's builder.
// A program is what the generator draws and what the reducer edits: every step's choices are
// raw random numbers read against the shapes and dtypes its operands have when it is built,
// so deleting a step, shrinking a size or simplifying an input still builds a valid graph.
// See tests/fuzz/README.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fuzz/differential.h"
#include "graph/graph.h"

namespace kiln::fuzz {

// A dynamic size: the graph sees the symbol; calls bind it to `values` (the first is the hint).
struct Symbol {
  std::string name;
  std::vector<int64_t> values;
};

enum class Layout : uint8_t { Contiguous, Permuted, Strided, Expanded };

struct Input {
  DType dtype = kFloat32;
  std::vector<int64_t> sizes;
  std::vector<int> symbol;  // per dim: index into Program::symbols, or -1 for a static size
  Layout layout = Layout::Contiguous;
  uint32_t layout_choice = 0;  // which permutation / strided dim / expanded dim
};

enum class StepKind : uint8_t { Unary, Binary, Compare, Where, Cast, Reduce, Scan, View, Layout };

struct Step {
  StepKind kind = StepKind::Unary;
  std::vector<int> operands;  // value indices: inputs first, then steps (each defines one value)
  uint32_t choice[4] = {0, 0, 0, 0};  // read against the operands' shapes and dtypes when built
};

struct Program {
  uint64_t seed = 0;  // also seeds the inputs' data (fuzz::make_inputs)
  std::vector<Symbol> symbols;
  std::vector<Input> inputs;
  std::vector<Step> steps;
  std::vector<int> outputs;  // value indices
  size_t num_values() const { return inputs.size() + steps.size(); }
};

// The program of one seed.
Program generate(uint64_t seed);

struct Built {
  graph::Graph graph;
  std::vector<SymEnv> calls;          // the sizes each call binds (one empty env without symbols)
  std::vector<ErrorBound> allowed;    // per output: the error a correct backend may add (check())
};
// Builds the program's graph (dead nodes removed). A step whose choice does not apply to its
// operands (a comparison of computed floats, a reduction over an empty dim...) defines its first
// operand instead. Throws kiln::Error only for a program that is not well formed.
Built build(const Program& p);

// Drops steps and inputs no output depends on (renumbering the rest).
Program prune(const Program& p);

// "seed 12: 3 inputs, 9 steps, 2 outputs"
std::string describe(const Program& p);

}  // namespace kiln::fuzz
