// Lowering a prims graph into the loop IR (docs/compiler.md). The driver (lower.cc) walks the
// graph in order and hands each node to its family's file; a family that can't lower a node
// returns false and the node becomes an Extern (fallback.cc):
//   pointwise.cc  pointwise prims, constants, full / iota
//   reduction.cc  sum / prod / amax / amin
//   arg_reduction.cc  argmax / argmin
//   scan.cc       cumsum / cumprod / cummax / cummin
//   pad.cc        constant_pad (a condition on the index, a clamped load)
//   gather.cc     gather / index_select as indirect loads (the index's value picks the position);
//                 scatter_add of a few positions per row as a where on the position
//   views.cc      view prims as index arithmetic (view, broadcast_in_dim, permute, slice, ...)
//   custom.cc     custom tile ops whose kernel is pointwise-shaped (the seed's vector_add)
//   fallback.cc   everything else: an Extern running the node through the eager dispatcher
// A graph value lowers to a Def: a buffer, or a function from an index to a scalar value that
// is not computed yet. Readers inline such functions into their own bodies (vertical fusion)
// unless fusion.cc says to realize the value into a buffer first.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>

#include "inductor/loop_ir.h"

namespace kiln::inductor {

using Index = std::vector<ExprPtr>;
using Loader = std::function<const Value*(const Index&)>;

struct Def {
  DType dtype = kFloat32;
  SymShape sizes;
  int buffer = -1;  // realized: its buffer
  Loader fn;        // not realized: the value at an index
  int ops = 0;      // prims and casts fn computes (counted along its tree: an upper bound)
  int reads = 0;    // loads fn makes
  // A view node (fn is index arithmetic over `base`): realized as an eager view of base's buffer,
  // so it aliases it as the graph says.
  const graph::Node* view = nullptr;
  const graph::Value* base = nullptr;
  std::vector<graph::Origin> origins;  // of the nodes folded into fn

  // Accounts an operand this def's fn reads: one load of a realized operand, or, inlined, its
  // work, loads and origins.
  void reads_operand(const Def& a) {
    if (a.buffer >= 0) {
      reads += 1;
    } else {
      ops += a.ops, reads += a.reads;
      origins.insert(origins.end(), a.origins.begin(), a.origins.end());
    }
  }
};

class Lowering {
 public:
  explicit Lowering(std::shared_ptr<const graph::Graph> g);
  Program run();  // lowers every node and realizes the outputs

  Program& prog() { return prog_; }
  const graph::Graph& graph() const { return *g_; }
  // The def of a value lowered before.
  const Def& def(const graph::Value* v) const;
  void set(const graph::Value* v, Def d);
  // A loader of v for one more reader: v's function inlined, or a load of its buffer (realizing
  // it first when fusion.cc says so).
  Loader loader(const graph::Value* v);
  // Whether d's function loads nothing that varies along its innermost (non-1) dim.
  bool reads_only_broadcasts(const Def& d);
  // Loads of v's buffer (realizing it).
  Loader buffer_loader(int buffer);
  // v's buffer, computing it with a Pointwise node first if it has none.
  int realize(const graph::Value* v);
  // A Pointwise or Reduction node writing a new contiguous buffer.
  int add_kernel_node(Node n, DType dtype, const SymShape& sizes);
  // Realizes every unrealized value still needed after node `n` (before a node that writes an input).
  void realize_live_after(const graph::Node& n);
  const graph::Node* current() const { return current_; }

 private:
  std::shared_ptr<const graph::Graph> g_;
  Program prog_;
  std::unordered_map<const graph::Value*, Def> defs_;
  std::unordered_map<const graph::Value*, int> readers_left_;  // readers not yet served
  const graph::Node* current_ = nullptr;
};

// The family lowerings: each returns false for a node it does not handle.
bool lower_pointwise(Lowering& L, const graph::Node& n);
bool lower_reduction(Lowering& L, const graph::Node& n);
// reduction.cc: the Reduction node of n (one input, one output) along its input's `reduced` dims.
void add_reduction_node(Lowering& L, const graph::Node& n, tile::ReduceKind kind, const std::vector<bool>& reduced,
                        bool keepdim, DType body_dtype);
bool lower_view(Lowering& L, const graph::Node& n);
bool lower_custom(Lowering& L, const graph::Node& n);  // custom.cc: pointwise-shaped tile ops
bool lower_arg_reduction(Lowering& L, const graph::Node& n);
bool lower_scan(Lowering& L, const graph::Node& n);
bool lower_pad(Lowering& L, const graph::Node& n);  // pad.cc: constant_pad as index math
bool lower_gather(Lowering& L, const graph::Node& n);  // gather.cc: gather / index_select
bool lower_scatter_add(Lowering& L, const graph::Node& n);  // gather.cc: scatter_add of a few positions per row
void lower_extern(Lowering& L, const graph::Node& n);

// fusion.cc: whether a reader should load v from a buffer instead of recomputing its function;
// and horizontal fusion of sibling pointwise nodes (a pass over the lowered program).
bool should_realize(const Def& d, int readers);
void fuse_horizontal(Program& p);
// Row groups: a reduction joined by the reductions and pointwise nodes after it over the same
// rows (Node::stages), so softmax, layer_norm and rmsnorm are one kernel each.
void fuse_rows(Program& p);
// The index of a buffer of `sizes` in a reduction node's variables when its dims that are not
// 1 are the node's output dims that are not 1 followed by its reduction dims that are not 1
// (a value per element of a row) or the output dims alone (a value per row); else nullopt.
std::optional<Index> row_index(const Node& reduction, const SymShape& sizes);
// Where row group g stores body i (and a later stage reads it): its output's offset at the
// row_index, the variables of size-1 dims at 0.
ExprPtr row_offset(const Program& p, const Node& g, int buffer);
// Whether g's body i is one value per row (a reduction, or an epilogue over the rows alone).
bool per_row(const Program& p, const Node& g, size_t body);

// lower.cc: a prims graph (decomposed, functional) as a loop IR program.
Program lower(std::shared_ptr<const graph::Graph> g);

// Helpers the family files share.
// The index into an input of sizes `in` broadcast to an output index (numpy's rules).
Index broadcast_index(const Index& out, const SymShape& in);
bool known_one(const SymInt& s);
// e with the symbols of `with` replaced (rebuilt through sym's constructors, so it simplifies).
ExprPtr substitute(const ExprPtr& e, const std::map<ExprPtr, ExprPtr>& with);

}  // namespace kiln::inductor
