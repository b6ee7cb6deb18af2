// The C-like emitter: the shared base of the tile IR's C++ (tile/cpu/) and CUDA backends. It
// walks a program and writes its body: scalar ops as statements, block ops as loops over their
// elements, for/if as C loops and branches. A derived emitter supplies what differs between
// targets through the hooks below: types, intrinsics (program ids, atomics), the per-element
// loop (indexing: a loop nest on the CPU, a thread's share of the elements on a GPU), barriers,
// block storage, and the per-program entry point; reduce/scan/dot have loop defaults it may
// replace (warp shuffles, tensor cores).
//
// Fusion: consecutive elementwise ops (pointwise, cast, addptr, load, store, atomic_add) over
// the same shape form one loop whose values stay in registers; a value is written to a block
// (an array) only when something outside the loop reads it: a reduction, dot, scan, a view of
// it, a later loop, a region. Views (broadcast, expand_dims, reshape, permute), splats, aranges
// and constants cost no code: they are index arithmetic on what they read. A load after a
// store (or atomic) in program order starts a new loop, so a program sees its own writes.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tile/ir.h"

namespace kiln::tile {

// Text with indentation, written line by line.
class CodeWriter {
 public:
  void line(const std::string& s = "");
  void open(const std::string& s);   // `s {` and indent
  void close(const std::string& s = "}");  // dedent and `}`
  void middle(const std::string& s);       // `} else {`: dedented, then indent again
  void raw(const std::string& s) { text_ += s; }
  const std::string& text() const { return text_; }
  void clear(int depth = 0) { text_.clear(), depth_ = depth; }
  int depth() const { return depth_; }

 private:
  std::string text_;
  int depth_ = 0;
};

class CLikeEmitter {
 public:
  virtual ~CLikeEmitter() = default;
  // The kernel's code: its program function and entry point (no prelude).
  std::string emit(const Program& p);

 protected:
  // How an element of a value is read. Strides map the value's multi-index to the linear index
  // of what is read: an array (a block written by a loop) or an arange (start + that index). An
  // Expr is recomputed where it is read: index arithmetic (index_like), too cheap to store.
  struct Access {
    enum class Kind { Uniform, Register, Array, Arange, Expr } kind = Kind::Uniform;
    std::string name;              // Uniform: a C expression; Register: the loop variable; Array: the array
    int64_t start = 0;             // Arange
    std::vector<int64_t> strides;  // Array, Arange: one per dim of the value
    const Op* op = nullptr;        // Expr: the op to recompute,
    std::vector<int> dims;         //   its operands' dim d read at the value's index dims[d] (-1: at 0)

    static Access uniform(std::string expr) { return {Kind::Uniform, std::move(expr), 0, {}, nullptr, {}}; }
    static Access reg(std::string name) { return {Kind::Register, std::move(name), 0, {}, nullptr, {}}; }
    static Access array(std::string name, std::vector<int64_t> strides) {
      return {Kind::Array, std::move(name), 0, std::move(strides), nullptr, {}};
    }
    static Access arange(int64_t start) { return {Kind::Arange, "", start, {1}, nullptr, {}}; }
  };

  // --- hooks
  // The type values of `d` have in registers and blocks (16-bit floats compute in float).
  virtual std::string compute_type(DType d) const;
  // The type a pointer to `d` points to.
  virtual std::string memory_type(DType d) const;
  virtual std::string pointer_type(DType d) const { return memory_type(d) + "*"; }
  // *ptr as a compute value; a compute value as what is stored.
  virtual std::string load_value(const std::string& ptr, DType d) const;
  virtual std::string store_value(const std::string& value, DType d) const;
  virtual std::string atomic_add(const std::string& ptr, const std::string& value, DType d) const = 0;
  virtual std::string program_id(int axis) const = 0;
  virtual std::string num_programs(int axis) const = 0;
  // Opens the loop over a block's elements; returns the per-dim indices and the linear
  // (row-major) index as C expressions. end_elements closes it.
  struct ElementIndex {
    std::vector<std::string> dims;
    std::string linear;
  };
  virtual ElementIndex begin_elements(const std::vector<int64_t>& shape);
  virtual void end_elements(const std::vector<int64_t>& shape);
  // Declares a block (array) of `numel` elements of type `type`.
  virtual void declare_block(const std::string& name, const std::string& type, int64_t numel);
  // After a block is written and before others read it (a GPU's __syncthreads; nothing on a CPU).
  virtual void barrier() {}
  // Wraps the body in the per-program function and the entry point that runs the grid.
  virtual void emit_program(const std::string& body) = 0;
  virtual void emit_reduce(const Op& op);
  virtual void emit_scan(const Op& op);
  virtual void emit_dot(const Op& op);
  virtual std::string fma(const std::string& a, const std::string& b, const std::string& c, DType d) const;
  // Streaming stores: an unmasked store whose rows are contiguous along the block's last dim
  // (at least kStreamRowBytes each) is staged in a block and written row by row with the
  // statement stream_row returns (dst, src: pointers; bytes: the row's size), which may bypass
  // the caches when the launch writes far more than they hold. The default has no such stores.
  virtual bool streams_stores() const { return false; }
  virtual std::string stream_row(const std::string& dst, const std::string& src, int64_t bytes) const;
  static constexpr int64_t kStreamRowBytes = 4096;
  // Prefetching: a load whose rows are contiguous along the block's last dim (at least
  // kPrefetchRowBytes each) gets, before the elements' loop, per row the statement prefetch_row
  // returns (src: the row's first element's pointer; bytes: its size; in_loop: the load is in a
  // for loop's body), which may ask for the memory a distance ahead: the next iterations' rows,
  // or outside a loop what comes after this program's start (a page ahead on the CPU: the next
  // program's rows where a program reads less than a page, later in its own row where it reads
  // more), which the hardware prefetcher (it stops at page ends) fetches late. The default: none.
  virtual std::string prefetch_row(const std::string& src, int64_t bytes, bool in_loop) const;
  static constexpr int64_t kPrefetchRowBytes = 1024;
  // Whether a division by a loop-invariant divisor may multiply by its reciprocal (within 1 ulp
  // of the division; the CPU's vector divide costs as much as an exp).
  virtual bool divides_by_reciprocal() const { return false; }
  // The bytes one program instance stores through stream_row (each store counted once), and
  // those it prefetches ahead of loads outside for loops.
  int64_t streamed_bytes() const { return streamed_bytes_; }
  int64_t prefetched_bytes() const { return prefetched_bytes_; }

  // --- for the hooks and derived emitters
  const Program& program() const { return *prog_; }
  CodeWriter& out() { return out_; }
  const Op* emitting() const { return emitting_; }  // the op whose statement is being written
  // How v (an index, a pointer) changes along dim `dim` of its block: the constant step per
  // index, 0 when it does not depend on it, nullopt when it is not affine with a known step.
  std::optional<int64_t> step_along(const Value* v, int dim) const;
  std::string cname(const Value* v) const;       // the C name of a value (its register / scalar)
  std::string array_name(const Value* v) const;  // the C name of its block
  std::string origin_comment(const Op& op) const;  // "  // add @ file:line"
  std::string origin_suffix(const Op& op) const;   // " @ file:line", or nothing
  std::string literal(const Scalar& v, DType d) const;
  // An element of `v` at the per-dim indices `idx` (C expressions); `linear`, when given, is the
  // row-major linear index of idx, used for a block read in that order.
  std::string element(const Value* v, const std::vector<std::string>& idx, const std::string& linear = "") const;
  std::string storage_type(const Value* v) const;  // compute_type, or pointer_type for pointers
  // Declares a block for `v` named `name` (counted against the per-program stack budget).
  void declare(const Value* v, const std::string& name);
  // Writes nested loops over `shape` with index names prefix0, prefix1, ...; returns them.
  std::vector<std::string> open_loops(const std::vector<int64_t>& shape, const std::string& prefix);
  void close_loops(size_t n);
  static size_t loop_count(const std::vector<int64_t>& shape);  // the loops open_loops opens (size-1 dims get none)
  std::string storage_name(const Value* v) const;  // a for's carried value / an if's result: array or scalar
  std::string reduce_identity(ReduceKind k, DType d) const;
  std::string round_16(const std::string& expr, DType d) const;  // expr rounded to f16/bf16 (else expr)
  void set_access(const Value* v, Access a) { access_[v] = std::move(a); }
  // A block copy of `v` (row-major), for readers that need an array.
  std::string materialize(const Value* v);

 private:
  struct Group {
    bool open = false;
    std::vector<int64_t> shape;
    std::vector<const Op*> ops;
    std::set<const Op*> members;
    bool writes = false;  // a store or atomic in it
  };
  // The storage a region's yield writes: the carried variables of a for, the results of an if.
  struct Targets {
    std::vector<const Value*> values;  // whose storage (cname / array_name) receives the yield
  };

  void emit_region(const Region& r, const Targets* targets);
  void emit_ops(const Region& r);  // the region's ops (emit_region: with region_ / targets_ set)
  // The carried block a loop's leaving value v may be written into directly, or null.
  const Value* carried_in_place(const Value* v, const Group& g) const;
  void close_group(Group& g);
  void add_to_group(Group& g, const Op& op);
  void emit_view(const Op& op, Group& g);
  void emit_scalar(const Op& op);
  void emit_for(const Op& op);
  void emit_if(const Op& op);
  void emit_yield(const Op& op, const Targets& t);
  void declare_storage(const Value* v);  // a for's carried value, an if's result: cname(v)
  void copy_into(const std::string& name, const Value* v);
  std::string expression(const Op& op, const std::vector<std::string>& args) const;
  // pow(x, exponent) for a constant exponent as multiplies (2, 3, 4, -1) or a sqrt (0.5); ""
  // for other exponents (libm's pow).
  std::string constant_power(const std::string& x, const Value* exponent, DType d) const;
  static std::optional<double> constant_exponent(const Value* exponent);  // a constant's value, or nullopt
  // Whether a float block division's divisor is the same along the innermost loop (a scalar, a
  // row's sum broadcast): where the target asks for it (divides_by_reciprocal),
  // ks::div_by_invariant then multiplies by its reciprocal.
  bool divisor_invariant(const Op& div) const;
  std::string statement(const Op& op, const std::vector<std::string>& args, const std::string& result) const;
  bool elementwise(OpCode c) const;
  // Whether a block is index arithmetic: computed elementwise (no loads) from program ids,
  // aranges, scalars and constants, in a few ops. Such values are recomputed where they are read
  // rather than stored, and their integer arithmetic may assume it does not overflow (so the
  // compiler sees affine addresses and vectorizes the loads and stores they feed).
  bool index_like(const Value* v) const;
  int index_cost(const Value* v) const;
  Access expr_access(const Op& op) const;  // op recomputed at the value's own index
  bool streamed(const Op& store, const Group& g) const;  // see streams_stores
  bool contiguous_rows(const Op& access, const Group& g, int64_t min_row_bytes) const;  // (streamed, prefetch_row)
  // Whether v moves on with the program id: it depends on one other than through a remainder
  // (a broadcast operand's index, pid % k * XBLOCK, comes back to the same rows: in the caches).
  static bool advances_with_program(const Value* v);

  const Program* prog_ = nullptr;
  CodeWriter out_;
  std::map<const Value*, std::string> names_;
  std::map<const Value*, std::vector<const Op*>> users_;
  std::map<const Value*, Access> access_;
  mutable std::map<const Value*, int> index_cost_;
  int64_t stack_bytes_ = 0;
  int64_t streamed_bytes_ = 0;
  int64_t prefetched_bytes_ = 0;
  int for_depth_ = 0;  // the for loops around the ops being emitted
  mutable const Op* emitting_ = nullptr;  // the op statement() is writing (for load_value / store_value)
  const Region* region_ = nullptr;    // the region being emitted
  const Targets* targets_ = nullptr;  // and what its yield writes
};

}  // namespace kiln::tile
