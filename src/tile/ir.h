// The tile IR (TileProgram): kiln's block-level SPMD kernel language, its Triton. A kernel is run
// as a grid of program instances; each instance computes on blocks (arrays of static shape) of
// scalars or pointers. The IR is what the code generator emits for every fused group and what
// users write custom kernels in (C++: tile/builder.h; Python: kiln.tile). Backends lower it:
// tile/cpu/ to C++ compiled by the system compiler, the CUDA backend next (docs/tile.md).
//
// Values are SSA: defined once, by a kernel parameter, a region argument (a for-loop's induction
// variable and carried values) or an op result. An op's elementwise math is a pointwise prim of
// ops.def, named by its OpId, so what it computes is the kiln::scalar function of that name
// (src/scalar/), the same one eager runs.
#pragma once
#include <kiln/dtype.h>
#include <kiln/error.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ops/dispatch.h"

namespace kiln::tile {

// A value's type: a scalar of a dtype, or a pointer to one, alone or as a block of static shape.
// Text: f32, ptr<f16>, i32[128], ptr<f32>[64, 64].
struct Type {
  DType dtype = kFloat32;      // the element type; for pointers, what they point to
  bool ptr = false;
  std::vector<int64_t> shape;  // empty: a scalar (or a single pointer)

  static Type scalar(DType d) { return {d, false, {}}; }
  static Type pointer(DType d) { return {d, true, {}}; }
  static Type block(DType d, std::vector<int64_t> shape) { return {d, false, std::move(shape)}; }
  bool is_block() const { return !shape.empty(); }
  int rank() const { return int(shape.size()); }
  int64_t numel() const;
  Type element() const { return {dtype, ptr, {}}; }
  Type with_shape(std::vector<int64_t> s) const { return {dtype, ptr, std::move(s)}; }
  Type with_dtype(DType d) const { return {d, ptr, shape}; }
  bool operator==(const Type&) const = default;
  std::string str() const;
};

// The short dtype names of the text form (b8 u8 i8 i16 i32 i64 f16 bf16 f32 f64), as the graph IR's.
const char* short_name(DType d);
std::string shape_text(const std::vector<int64_t>& shape);  // "[64, 64]"

// Where an op came from: the line of the user's kernel (C++ or Python) that built it, or the graph
// node it was lowered from (`op` is then that node's op name). Printed as `# file:line` or
// `# op @ file:line` after the op.
struct Origin {
  std::string file;
  int line = 0;
  std::string op;
  static Origin at(const SourceLoc& loc) { return {source_file(loc), int(loc.line()), {}}; }
  bool known() const { return !file.empty(); }
  std::string str() const;
  bool operator==(const Origin&) const = default;
};

enum class OpCode : uint8_t {
  ProgramId,    // program_id(axis): this instance's index along a grid axis (i32)
  NumPrograms,  // num_programs(axis): the grid's size along an axis (i32)
  Constant,     // a number, as a scalar or a block filled with it
  Arange,       // arange(start, end): i32[end - start], start, start + 1, ...
  Splat,        // a scalar to a block of it
  Broadcast,    // a block's size-1 dims stretched to the result shape (same rank)
  ExpandDims,   // a size-1 dim inserted at `axis`
  Reshape,      // the same elements (row-major order) in a new shape
  Permute,      // dims reordered by `order` (trans is permute [1, 0])
  AddPtr,       // pointer + integer offsets (in elements), elementwise
  Load,         // load(ptr, mask?, other?): masked-off elements read `other` (0 if none)
  Store,        // store(ptr, value, mask?)
  AtomicAdd,    // atomic_add(ptr, value, mask?): adds atomically, returns the old values
  Cast,         // convert_element_type's semantics (scalar/cast.h) to the result dtype
  Pointwise,    // a pointwise prim of ops.def (`prim`), elementwise
  Reduce,       // a reduction along `axis` (`reduce`); the axis is removed from the shape
  Scan,         // a running reduction along `axis` (`scan`); same shape
  Dot,          // dot(a[M, K], b[K, N], acc[M, N]): acc + a @ b, accumulated in acc's dtype
  For,          // for iv = lo; iv < hi; iv += step, with carried values (one region)
  If,           // if cond then-region else-region, each yielding the results (two regions)
  Yield,        // ends a region of For / If: the values it hands on
};
const char* opcode_name(OpCode c);  // the text form's name ("program_id", "addptr", ...)

enum class ReduceKind : uint8_t { Sum, Prod, Max, Min, Argmax, Argmin };
enum class ScanKind : uint8_t { Cumsum, Cumprod, Cummax, Cummin };
// div's rounding mode (ops.def's div(..., rounding_mode)); other prims have None.
enum class Rounding : uint8_t { None, Trunc, Floor };
const char* reduce_name(ReduceKind k);  // "sum", ..., "argmin"
const char* scan_name(ScanKind k);      // "cumsum", ...

struct Op;
struct Region;

struct Value {
  int id = 0;             // unique within its program (creation order)
  Type type;
  std::string name;       // optional: parameters and region arguments have one
  Op* def = nullptr;      // the op defining it; null for parameters and region arguments
  int index = 0;          // which result of `def`
};

// A list of ops with arguments: the kernel body (no terminator), a for-loop body (arguments: the
// induction variable, then the carried values; ends with a yield of the carried values), or a
// branch of an if (no arguments; ends with a yield of the results).
struct Region {
  std::vector<Value*> args;
  std::vector<std::unique_ptr<Op>> ops;
};

struct Op {
  OpCode code;
  std::vector<Value*> operands;
  std::vector<Value*> results;
  std::vector<Region> regions;
  // Attributes (which apply depends on the code).
  int64_t axis = 0;                    // program_id, num_programs, expand_dims, reduce, scan
  int64_t start = 0, end = 0;          // arange
  std::vector<int64_t> order;          // permute
  Scalar value;                        // constant
  ops::OpId prim = ops::OpId::NumOps;  // pointwise
  Rounding rounding = Rounding::None;  // pointwise div
  ReduceKind reduce = ReduceKind::Sum;
  ScanKind scan = ScanKind::Cumsum;
  Origin origin;

  // The text name: opcode_name, or the prim's / reduction's / scan's name.
  std::string name() const;
  bool has_side_effects() const;  // store, atomic_add, or a region holding one
  Value* result() const { return results.at(0); }
};

enum class ParamKind : uint8_t {
  Pointer,  // ptr<dtype>: a tensor's data
  Int,      // i32 or i64
  Float,    // f32 or f64
  Sym,      // a symbolic size (named like sym's symbols, s0, s1...), i64
};

struct Param {
  std::string name;
  ParamKind kind;
  Value* value;  // the parameter as a value of the body (value->type is its type)
};

// The meta-parameters a kernel is specialized on: the user's constexprs (block sizes...), and
// the GPU's num_warps / num_stages (the CPU backend ignores these two).
struct Meta {
  std::vector<std::pair<std::string, Scalar>> constexprs;  // in declaration order
  int num_warps = 4;
  int num_stages = 3;
  const Scalar* find(const std::string& name) const;
};

class Program {
 public:
  explicit Program(std::string name = "kernel");
  Program(Program&&) noexcept = default;
  Program& operator=(Program&&) noexcept = default;
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  std::string name;
  std::vector<Param> params;
  Meta meta;
  Region body;

  // A new value owned by the program.
  Value* new_value(Type t, std::string name = "");
  Value* add_param(std::string name, ParamKind kind, Type t);

 private:
  std::vector<std::unique_ptr<Value>> values_;
};

// Every op of `r` and of the regions nested in it, in program order (an op before its regions).
void walk(const Region& r, const std::function<void(const Op&)>& fn);
void walk_mutable(Region& r, const std::function<void(Op&)>& fn);

// kiln::Error for a problem with op `op` (its name, `message`, the origin's file and line).
[[noreturn]] void fail_at(const Op& op, const std::string& message, const std::string& hint = {});
[[noreturn]] void fail_at(const std::string& op_name, const Origin& origin, const std::string& message,
                          const std::string& hint = {});

// The verifier: types, shapes, masks, pointer/offset types, region arguments and yields, and
// that every operand is defined before its use in an enclosing scope. Throws kiln::Error naming
// the op and its origin.
void verify(const Program& p);
// One op's own rules (operands and results), without the scope check: what the builder runs on
// each op it adds, so a user's mistake is reported at the line that made it.
void verify_op(const Op& op);

// The text form (docs/tile.md). print(parse(text)) == text for printed text.
struct PrintOptions {
  bool origins = true;  // the `# file:line` comments
};
std::string print(const Program& p, const PrintOptions& o = {});
// The names print() gives the values (0, 1, ... and the named ones): generated code uses them.
std::map<const Value*, std::string> value_names(const Program& p);
Program parse(const std::string& text);

}  // namespace kiln::tile
