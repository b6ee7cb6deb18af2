// kiln's graph IR: SSA values carrying tensor metadata, nodes calling ops from ops.def (or
// holding a small constant tensor), and a graph with ordered inputs, nodes and outputs.
// Capture builds graphs through add_input/add_call/set_outputs; passes edit them in place.
// Nodes are a linked list with an order index, values and nodes live in pools with their slot,
// and each use knows its place in its value's users list, so erasing, inserting, is_output and
// "which comes first" cost O(1) in the graph's size.
// The text form (print/parse) is described in docs/graph-ir.md.
#pragma once
#include <kiln/tensor.h>

#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <variant>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::graph {

struct Node;
class Graph;

// Where a node came from: the op of the user's program (gelu for the prims its decomposition
// made), the user's file:line it was traced from, and whether the node is part of that op's
// backward (the joint graph's derivative nodes). Carried through decompose, functionalize, the
// joint graph and the partition, so a fused kernel can be named after the user's code.
struct Origin {
  ops::OpId op = ops::OpId::NumOps;  // NumOps: unknown
  const char* file = nullptr;        // interned (intern_file); null: unknown
  int line = 0;
  bool backward = false;
  bool known() const { return op != ops::OpId::NumOps; }
  bool operator==(const Origin&) const = default;  // files compare by pointer: they are interned
};
// A stable, interned copy of a file name: origins keep a pointer, not a string per node, and
// equal names give equal pointers.
const char* intern_file(std::string_view file);
// n's origin, or n's own op when it has none: what nodes made from n inherit.
Origin origin_of(const Node& n);

// One SSA value: defined once, by a graph input or by one node output.
struct Value {
  int id = 0;          // unique within its graph (creation order)
  TensorSpec spec;     // strides always filled in
  std::string name;    // optional; printed as %name, otherwise %<number>
  Node* producer = nullptr;  // null for graph inputs
  int output_index = 0;      // which output of the producer
  // One entry per use (a node using it twice appears twice), in no particular order. Kept by
  // the graph (add_*, replace_all_uses, set_args, erase_node); read it, don't edit it.
  std::vector<Node*> users;

 private:
  friend class Graph;
  friend struct UseCheck;
  std::vector<uint32_t> user_use_;  // per users[i]: which use of that user (Node::use_slot_) it is
  uint32_t output_uses_ = 0;        // how often it is a graph output
  uint32_t slot_ = 0;               // its index in the graph's value pool
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
  std::vector<NodeArg> args;         // Call only: one per schema argument, defaults filled in (edit with Graph::set_args)
  std::vector<Value*> outputs;
  Tensor literal;                    // Constant only: contiguous CPU data
  bool wrapped = false;              // Constant only: a wrapped number (promotes like a Python number)
  Origin origin;

  const char* name() const;          // the op's name, or "constant"
  std::vector<Value*> inputs() const;  // every Value argument, lists flattened, holes skipped (its "uses", in order)
  // Program order, in O(1): whether this node comes before `other` in the same graph.
  bool before(const Node& other) const { return order_ < other.order_; }

 private:
  friend class Graph;
  friend class NodeRange;
  friend struct UseCheck;
  uint64_t order_ = 0;                 // increasing along the list, with gaps (Graph::link)
  Node* prev_ = nullptr;
  Node* next_ = nullptr;
  std::vector<uint32_t> use_slot_;     // per use (inputs() order): its index in that value's users
  uint32_t slot_ = 0;                  // its index in the graph's node pool
};

// Calls f(Value*) for every use of n, in inputs() order, without building a vector.
template <class F>
void each_input(const Node& n, F&& f) {
  for (const NodeArg& a : n.args) {
    if (auto* v = std::get_if<Value*>(&a)) {
      f(*v);
    } else if (auto* l = std::get_if<ValueList>(&a)) {
      for (Value* v : *l)
        if (v) f(v);
    }
  }
}

// The nodes of a graph in program order: a range of Node*, forward or reverse. Iterating stays
// valid when the body erases the current node or inserts nodes before it (forward) or after it
// (reverse): the next node is read before the body runs.
class NodeRange {
 public:
  template <bool kForward>
  class basic_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Node*;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Node*;  // yields Node* by value
    basic_iterator() = default;
    explicit basic_iterator(Node* n) : cur_(n), next_(step(n)) {}
    Node* operator*() const { return cur_; }
    basic_iterator& operator++() {
      cur_ = next_;
      next_ = step(cur_);
      return *this;
    }
    basic_iterator operator++(int) {
      basic_iterator t = *this;
      ++*this;
      return t;
    }
    bool operator==(const basic_iterator& o) const { return cur_ == o.cur_; }

   private:
    static Node* step(const Node* n) { return n ? (kForward ? next_of(n) : prev_of(n)) : nullptr; }
    Node* cur_ = nullptr;
    Node* next_ = nullptr;
  };
  using iterator = basic_iterator<true>;
  using reverse_iterator = basic_iterator<false>;

  explicit NodeRange(const Graph* g) : g_(g) {}
  iterator begin() const { return iterator(front()); }
  iterator end() const { return iterator(); }
  reverse_iterator rbegin() const { return reverse_iterator(back()); }
  reverse_iterator rend() const { return reverse_iterator(); }
  size_t size() const;
  bool empty() const { return size() == 0; }
  Node* front() const;
  Node* back() const;

 private:
  static Node* next_of(const Node* n) { return n->next_; }
  static Node* prev_of(const Node* n) { return n->prev_; }
  const Graph* g_;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&& o) noexcept;
  Graph& operator=(Graph&& o) noexcept;

  // --- building (capture, parser, tests). New nodes get the current origin (OriginScope).
  Value* add_input(TensorSpec spec, std::string name = "");
  // A call before `before` (appended when null); its output specs come from running the op on
  // fake tensors.
  std::vector<Value*> add_call(ops::OpId op, std::vector<NodeArg> args, const Node* before = nullptr);
  // A call with the given output specs (no inference; the verifier checks them).
  Node* add_node(ops::OpId op, std::vector<NodeArg> args, std::vector<TensorSpec> specs, const Node* before = nullptr);
  // A constant node before `before` (appended when null; it takes before's origin). The
  // literal is copied to a contiguous CPU tensor.
  Value* add_constant(const Tensor& literal, bool wrapped = false, const Node* before = nullptr);
  void set_outputs(std::vector<Value*> outputs);

  // Sets the origin of the nodes added while it lives (restores the previous one after).
  class OriginScope {
   public:
    OriginScope(Graph& g, const Origin& o) : g_(g), prev_(g.origin_) { g.origin_ = o; }
    ~OriginScope() { g_.origin_ = prev_; }
    OriginScope(const OriginScope&) = delete;
    OriginScope& operator=(const OriginScope&) = delete;

   private:
    Graph& g_;
    Origin prev_;
  };
  const Origin& current_origin() const { return origin_; }

  // --- reading
  const std::vector<Value*>& inputs() const { return inputs_; }
  NodeRange nodes() const { return NodeRange(this); }
  const std::vector<Value*>& outputs() const { return outputs_; }
  bool is_output(const Value* v) const { return v->output_uses_ > 0; }  // O(1)
  bool has_uses(const Value* v) const { return !v->users.empty() || is_output(v); }

  // --- editing (passes); each is O(1) in the graph's size (O(its arguments and users))
  void replace_all_uses(Value* from, Value* to);  // args of every user and graph outputs
  void set_args(Node* n, std::vector<NodeArg> args);  // replaces n's arguments, keeping the users lists
  void erase_node(Node* n);  // its outputs must be unused
  void move_before(Node* n, const Node* before);  // moves n to just before `before` (to the end when null)
  Value* make_value(TensorSpec spec, std::string name = "");  // an unattached value
  // Names are identifiers (other characters become '_') and unique (a suffix _1, _2... is added).
  void rename(Value* v, std::string name);

 private:
  friend class NodeRange;
  Node* insert(std::unique_ptr<Node> n, const Node* before);
  void link(Node* n, const Node* before);
  void unlink(Node* n);
  void relabel_from(Node* n);
  void add_uses(Node* n);
  void remove_uses(Node* n);
  std::vector<std::unique_ptr<Value>> values_;  // every value (swap-removed on erase: Value::slot_)
  std::vector<std::unique_ptr<Node>> pool_;     // every node, in no order (Node::slot_)
  Node* front_ = nullptr;                       // program order: a doubly linked list
  Node* back_ = nullptr;
  size_t num_nodes_ = 0;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::unordered_set<std::string> names_;  // every name given out (names stay unique)
  int next_id_ = 0;
  Origin origin_;  // given to new nodes (OriginScope)
};

inline size_t NodeRange::size() const { return g_->num_nodes_; }
inline Node* NodeRange::front() const { return g_->front_; }
inline Node* NodeRange::back() const { return g_->back_; }

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
struct PrintOptions {
  bool origins = false;  // each node's origin as a trailing "# gelu @ model.py:12" (docs/graph-ir.md)
};
std::string print(const Graph& g, const PrintOptions& options = {});
// An origin as the text form writes it after '#': "gelu", "gelu backward @ model.py:12".
std::string origin_str(const Origin& o);
// Throws kiln::Error "line:col: message" on bad text. Symbols in sizes get hint `symbol_hint`.
Graph parse(const std::string& text, int64_t symbol_hint = 64);
// Same inputs, nodes, args, specs and outputs, value for value (names and origins ignored).
bool structurally_equal(const Graph& a, const Graph& b);

// --- verify.cc: throws kiln::Error naming the first bad node
void verify(const Graph& g);

// --- interpret.cc: runs g with eager kernels on real inputs
std::vector<Tensor> interpret(const Graph& g, const std::vector<Tensor>& inputs);

}  // namespace kiln::graph
