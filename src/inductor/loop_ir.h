// The loop IR: what inductor lowers a prims graph into (docs/compiler.md). A program is a list of
// buffers (sizes and strides over symbolic sizes) and of nodes that each define one buffer:
//
//   Pointwise  out[i0, ..., ik] = body(i0, ..., ik)             over `ranges` (one body per
//              output: siblings over the same ranges fuse into one node)
//   Reduction  out[i0, ..., ik] = reduce over r0..rm of body(i, r)  (`reduction_ranges`, `reduce`)
//   Scan       out[i0, ..., ik] = scan (cumsum, cumprod, cummax, cummin) of body along one
//              variable i_a: the running combination of body(..., j, ...) for j <= i_a (`scan`,
//              `scan_axis`); sequential along i_a, parallel across the other variables. cummax /
//              cummin write two buffers, storing the same body: the running best, its position
//   Extern     an op of the graph run through the eager dispatcher (matmul, convolution, sort,
//              anything not lowered); its tensor arguments are buffers
//
// A body is a hash-consed DAG of scalar values (Value): loads of a buffer at an index
// expression, pointwise prims by OpId, casts, constants and index expressions. Index
// expressions are sym expressions (src/sym/) over the node's index variables (sym::index, i0...
// and r0...) and the graph's size symbols, so one program serves every value of a dynamic dim.
//
// An indirect load (gather, index_select, embedding) reads at an offset that depends on another
// value: its index expression mentions gather variables g0, g1, ..., index variables whose
// values are the load's args (g<k> = args[k], an integer value already in [0, extent)).
//
// A masked load (constant_pad) reads only where its last arg, a bool, is true, and is 0 elsewhere:
// its index may be out of the buffer there (it is not clamped, so it stays affine in the index
// variables and the kernel's loads stay contiguous).
#pragma once
#include <kiln/tensor.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "sym/expr.h"
#include "tile/ir.h"

namespace kiln::inductor {

using sym::ExprPtr;

enum class ValueKind : uint8_t {
  Load,      // buffer[index]; indirect: index over g<k> = args[k] (gather_var); masked: where args.back()
  Constant,  // a number of `dtype`
  Index,     // the index expression `index` as a number of `dtype` (iota); may use g<k> too
  Call,      // the pointwise prim `op` on args (`rounding` for div)
  Cast,      // args[0] converted to `dtype` (convert_element_type)
  // An index range check: the bool args[0] ("the index is in range"), which also reports, where
  // it is false, the index args[1] and the size args[2] (i64) of the op `op` the user called
  // (cross_entropy, embedding, gather, ...): the plan raises that op's kiln::Error after the
  // kernel (index_error.h). Its users (the clamp, the poison where) make it part of the kernel.
  Check,
};

// One scalar value of a body. Built only through Program::make (interned: equal values are one).
struct Value {
  ValueKind kind = ValueKind::Constant;
  DType dtype = kFloat32;
  ops::OpId op = ops::OpId::NumOps;  // Call: the prim; Check: the op whose index it checks
  tile::Rounding rounding = tile::Rounding::None;
  std::vector<const Value*> args;
  int buffer = -1;     // Load
  bool masked = false;  // Load: reads where args.back() is true, 0 elsewhere
  ExprPtr index;       // Load: element offset from the buffer's data pointer; Index: the value
  kiln::Scalar number;  // Constant
};

enum class BufferKind : uint8_t {
  Input,     // graph input `input`
  Constant,  // a literal of the graph (`literal`)
  Temp,      // written by a node
};

struct Buffer {
  std::string name;
  BufferKind kind = BufferKind::Temp;
  DType dtype = kFloat32;
  SymShape sizes, strides;  // strides in elements
  SymInt offset = 0;        // storage offset (as_strided of it counts from the storage's start)
  int input = -1;           // Input: its index among the graph's inputs
  Tensor literal;           // Constant
  int producer = -1;        // Temp: the node writing it
};

enum class NodeKind : uint8_t { Pointwise, Reduction, Scan, Extern };
const char* node_kind_name(NodeKind k);

struct Node {
  NodeKind kind = NodeKind::Pointwise;
  std::string name;                  // the kernel's name: ops it computes (set by naming.cc)
  std::vector<int> outputs;          // buffers it writes (Reduction: one)
  SymShape ranges;                   // Pointwise / Reduction: the output's iteration space
  std::vector<ExprPtr> vars;         // one index variable per range (i0, i1, ...)
  SymShape reduction_ranges;         // Reduction
  std::vector<ExprPtr> reduction_vars;  // r0, r1, ...
  tile::ReduceKind reduce = tile::ReduceKind::Sum;
  tile::ScanKind scan = tile::ScanKind::Cumsum;  // Scan
  int scan_axis = 0;                             // Scan: the variable (of vars) it runs along
  // Pointwise / Reduction: per output, the value stored into it (a pointwise node that fused
  // its siblings horizontally stores several).
  std::vector<const Value*> bodies;
  // Reduction: a row group (fusion.cc) computes several bodies per row, in order. Per body, how
  // it is combined over the reduction variables, or nullopt for an epilogue: a pointwise value
  // stored per element at its output's row index (row_index in lower.h). Empty: one body
  // reduced with `reduce`. Later bodies read earlier reductions' outputs at the row's offset.
  std::vector<std::optional<tile::ReduceKind>> stages;
  // Extern: the graph node it runs, and per tensor argument (Node::inputs() order) its buffer.
  // An extern parsed from text has no graph node, only its op's name: it prints and its
  // neighbours compile, but it can't run.
  const graph::Node* call = nullptr;
  std::string extern_op;
  std::vector<int> inputs;
  std::vector<graph::Origin> origins;  // the graph nodes folded into it (deduplicated, in order)
};

class Program {
 public:
  Program() = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  Program(Program&&) = default;
  Program& operator=(Program&&) = default;

  std::vector<Buffer> buffers;
  std::vector<Node> nodes;
  std::vector<int> outputs;  // per graph output: its buffer
  std::shared_ptr<const graph::Graph> graph;  // what externs' nodes point into

  // The interned value equal to v.
  const Value* make(Value v);
  const Value* constant(kiln::Scalar x, DType d);
  const Value* load(int buffer, ExprPtr index);
  // v with every load in it masked by `mask` (a bool value: and-ed with a load's own mask): v
  // where mask is true; where it is false, what v computes from zeros (its user discards it).
  // `with` replaces symbols in its index expressions (constant_pad: the position in x, built
  // as a variable in [0, size) so the views' index math simplifies, back to index - pad).
  const Value* under_mask(const Value* v, const Value* mask, const std::map<ExprPtr, ExprPtr>& with = {});
  const Value* call(ops::OpId op, std::vector<const Value*> args, DType d, tile::Rounding r = tile::Rounding::None);
  const Value* cast(const Value* x, DType d);
  int add_buffer(Buffer b);
  // A variable in [0, extent) standing for the integer value `at` (already clamped into range)
  // in index expressions built by lowering; make() turns it into the gather variable g<k> of
  // each Load or Index value whose index mentions it, with `at` as that value's args[k].
  ExprPtr gather_symbol(const Value* at, const SymInt& extent);

 private:
  struct Key {
    const Value* v;
    bool operator==(const Key& o) const;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<Key, const Value*, KeyHash> interned_;
  std::map<ExprPtr, const Value*> gathered_;  // gather_symbol's variables and their values
};

// The number of gather values of a Load / Index (its args, less a masked load's mask).
inline size_t gather_count(const Value& v) { return v.args.size() - (v.masked ? 1 : 0); }
// The gather variable g<k> of an indirect Load / Index (args[k]) over [0, extent).
ExprPtr gather_var(size_t k, const ExprPtr& extent);
// Whether e is a gather variable; its k.
bool is_gather_var(const ExprPtr& e, size_t* k = nullptr);

// Contiguous strides for sizes (row-major; size-1 and 0 dims still get the product stride).
SymShape contiguous_strides(const SymShape& sizes);
// The flat element offset of index `idx` in a layout: sum idx[d] * strides[d].
ExprPtr offset_of(const std::vector<ExprPtr>& idx, const SymShape& strides);
// Index variables named prefix0, prefix1, ... with the given extents.
std::vector<ExprPtr> index_vars(const std::string& prefix, const SymShape& extents);
ExprPtr product(const SymShape& sizes);

// The text form (docs/compiler.md): one line per buffer, one block per node.
std::string print(const Program& p);
// Reads the text form back (loop_ir_parse.cc): print(parse(print(p))) == print(p). Constant
// buffers come back without their contents and externs without their graph node (extern_op), so
// a parsed program prints, fuses and compiles kernels but does not run. A kiln::Error
// "line:col: message" on bad text.
Program parse(const std::string& text);
// The dtype a constant operand of `user` (operand `i`; i == -1: a stored body of a buffer of
// dtype `stored`) is printed without: the text names a constant's dtype only when it differs.
DType implied_constant_dtype(const Value* user, int i, DType stored);
// Throws kiln::Error naming the first bad node: buffer ids in range, loads of buffers defined
// before, index expressions only over the node's variables and size symbols, dtypes.
void verify(const Program& p);

}  // namespace kiln::inductor
