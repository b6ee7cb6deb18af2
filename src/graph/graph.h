// kiln's graph IR: SSA values carrying tensor metadata, nodes calling ops from ops.def (or
// holding a small constant tensor), and a graph with ordered inputs, nodes and outputs.
// Capture builds graphs through add_input/add_call/set_outputs; passes edit them in place.
// The text form (print/parse) is described in docs/graph-ir.md.
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_set>
#include <variant>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::graph {

struct Node;

// One SSA value: defined once, by a graph input or by one node output.
struct Value {
  int id = 0;          // unique within its graph (creation order)
  TensorSpec spec;     // strides always filled in
  std::string name;    // optional; printed as %name, otherwise %<number>
  Node* producer = nullptr;  // null for graph inputs
  int output_index = 0;      // which output of the producer
  std::vector<Node*> users;  // one entry per use (a node using it twice appears twice)
};

// A Tensor[] / Tensor?[] argument; nullptr elements are None holes (Tensor?[] only).
using ValueList = std::vector<Value*>;

// One node argument: ops::Arg with tensors replaced by values (same alternatives, same order).
// nullptr Value* is never stored; None is std::monostate.
using NodeArg = std::variant<std::monostate, Value*, ValueList, Scalar, int64_t, double, bool,
                             std::vector<int64_t>, SymInt, SymShape, DType, Device, std::string,
                             std::vector<double>>;

enum class NodeKind : uint8_t { Call, Constant };

struct Node {
  NodeKind kind = NodeKind::Call;
  ops::OpId op = ops::OpId::NumOps;  // Call only
  std::vector<NodeArg> args;         // Call only: one per schema argument, defaults filled in
  std::vector<Value*> outputs;
  Tensor literal;                    // Constant only: contiguous CPU data
  bool wrapped = false;              // Constant only: a wrapped number (promotes like a Python number)

  const char* name() const;          // the op's name, or "constant"
  std::vector<Value*> inputs() const;  // every Value argument, lists flattened, holes skipped
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // --- building (capture, parser, tests)
  Value* add_input(TensorSpec spec, std::string name = "");
  // Appends a call; its output specs come from running the op on fake tensors.
  std::vector<Value*> add_call(ops::OpId op, std::vector<NodeArg> args);
  // Appends a call with the given output specs (no inference; the verifier checks them).
  Node* add_node(ops::OpId op, std::vector<NodeArg> args, std::vector<TensorSpec> specs);
  // A constant node before `before` (appended when null). The literal is copied to a
  // contiguous CPU tensor.
  Value* add_constant(const Tensor& literal, bool wrapped = false, const Node* before = nullptr);
  void set_outputs(std::vector<Value*> outputs);

  // --- reading
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  bool is_output(const Value* v) const;
  bool has_uses(const Value* v) const { return !v->users.empty() || is_output(v); }

  // --- editing (passes)
  void replace_all_uses(Value* from, Value* to);  // args of every user and graph outputs
  void erase_node(Node* n);  // its outputs must be unused
  Value* make_value(TensorSpec spec, std::string name = "");  // an unattached value
  // Names are identifiers (other characters become '_') and unique (a suffix _1, _2... is added).
  void rename(Value* v, std::string name);

 private:
  Node* append(std::unique_ptr<Node> n, const Node* before);
  void add_uses(Node* n);
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> outputs_;
  std::unordered_set<std::string> names_;  // every name given out (names stay unique)
  int next_id_ = 0;
};

// The output specs op computes for these arguments, from fake tensors: every op with a meta
// function answers with fakes, so no data is allocated (autocast off, no grad; capture's
// dispatch mode is replaced meanwhile, so the ops inside a decomposition aren't recorded).
std::vector<TensorSpec> infer_specs(ops::OpId op, const std::vector<NodeArg>& args);
// The ops::Arg for a node argument, with each value replaced by tensor_of(value) (None holes
// in lists become undefined tensors).
ops::Arg box_arg(const NodeArg& a, const std::function<Tensor(const Value*)>& tensor_of);
// The node argument for an op argument, with each defined tensor replaced by value_of(tensor)
// (undefined tensors become None, or holes in lists): what recorders (capture, lazy mode) store.
NodeArg unbox_arg(const ops::Arg& a, const std::function<Value*(const Tensor&)>& value_of);
// A fake tensor with v's metadata (wrapped-number flag kept for constants).
Tensor fake_of(const Value* v);
// The spec with strides filled in (contiguous when empty).
TensorSpec normalized(TensorSpec spec);
bool same_spec(const TensorSpec& a, const TensorSpec& b);
bool is_contiguous_spec(const TensorSpec& s);
// A spec as the IR prints it: f32[4, s0], with {strides=..., offset=..., device=...} when needed.
std::string spec_str(const TensorSpec& spec);
// Converts the arguments' numeric forms to the one each schema type uses (int for a Scalar
// becomes a Scalar, int for a SymInt becomes a SymInt...), so equal calls have equal args.
void canonicalize_args(ops::OpId op, std::vector<NodeArg>& args);

// --- text form (print.cc / parse.cc)
std::string print(const Graph& g);
// Throws kiln::Error "line:col: message" on bad text. Symbols in sizes get hint `symbol_hint`.
Graph parse(const std::string& text, int64_t symbol_hint = 64);
// Same inputs, nodes, args, specs and outputs, value for value (names ignored).
bool structurally_equal(const Graph& a, const Graph& b);

// --- verify.cc: throws kiln::Error naming the first bad node
void verify(const Graph& g);

// --- interpret.cc: runs g with eager kernels on real inputs
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs);

}  // namespace kiln::graph
