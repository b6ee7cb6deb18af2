// The C++ DSL for writing tile kernels by hand (docs/tile.md):
//
//   tile::Builder b("vector_add");
//   auto x = b.arg_ptr("x", kFloat32), y = b.arg_ptr("y", kFloat32), out = b.arg_ptr("out", kFloat32);
//   auto n = b.arg_int("n");
//   const int64_t BLOCK = b.constexpr_int("BLOCK", 1024);
//   auto pid = b.program_id(0);
//   auto offs = pid * BLOCK + b.arange(0, BLOCK);
//   auto m = offs < n;
//   b.store(out + offs, b.load(x + offs, m) + b.load(y + offs, m), m);
//   tile::Program p = b.finish();
//
// Operators work on value handles (Val) and C++ numbers. Scalars and size-1 dims broadcast
// implicitly (numpy's rules: ranks align on the right). Mixed dtypes promote as PyTorch's
// tensors do: two values by promote_types; a C++ number is weak, like a Python number meeting
// a tensor (it takes the value's dtype when its kind, bool < int < float, is not higher; an int
// value meeting a float number becomes f32); ops that need floats (exp, div, ...) cast integer
// operands to f32. Casts are inserted as explicit cast ops. Each op records the C++ line that
// built it (std::source_location), and a mistake (a shape or dtype error) throws kiln::Error
// naming that line.
#pragma once
#include <kiln/error.h>

#include <functional>
#include <optional>
#include <type_traits>

#include "tile/ir.h"

namespace kiln::tile {

class Builder;

// A handle to a value being built.
class Val {
 public:
  Val() = default;
  Val(Builder* b, Value* v) : b_(b), v_(v) {}
  bool defined() const { return v_ != nullptr; }
  Value* value() const { return v_; }
  Builder& builder() const;
  const Type& type() const;
  DType dtype() const { return type().dtype; }
  const std::vector<int64_t>& shape() const { return type().shape; }

  Val to(DType d, SourceLoc loc = SourceLoc::current()) const;
  Val expand_dims(int64_t axis, SourceLoc loc = SourceLoc::current()) const;
  Val broadcast_to(std::vector<int64_t> shape, SourceLoc loc = SourceLoc::current()) const;
  Val reshape(std::vector<int64_t> shape, SourceLoc loc = SourceLoc::current()) const;
  Val permute(std::vector<int64_t> order, SourceLoc loc = SourceLoc::current()) const;
  Val trans(SourceLoc loc = SourceLoc::current()) const;

 private:
  Builder* b_ = nullptr;
  Value* v_ = nullptr;
};

// An operand of an operator or builder call: a value, or a C++ number (a weak literal). It
// carries the location of the expression it appears in (its default argument is evaluated there).
struct Operand {
  Val val;
  Scalar lit;
  bool is_lit = false;
  SourceLoc loc;
  Operand(const Val& v, SourceLoc l = SourceLoc::current()) : val(v), loc(l) {}
  template <class T, std::enable_if_t<std::is_arithmetic_v<T>, int> = 0>
  Operand(T x, SourceLoc l = SourceLoc::current()) : is_lit(true), loc(l) {
    if constexpr (std::is_same_v<T, bool>) lit = Scalar(x);
    else if constexpr (std::is_floating_point_v<T>) lit = Scalar(double(x));
    else lit = Scalar(int64_t(x));
  }
  explicit Operand(const Scalar& s, SourceLoc l = SourceLoc::current()) : lit(s), is_lit(true), loc(l) {}
};

class Builder {
 public:
  explicit Builder(std::string name);
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // --- parameters (in call order) and meta-parameters
  Val arg_ptr(const std::string& name, DType pointee);
  Val arg_int(const std::string& name, DType d = kInt32);  // i32 or i64
  Val arg_float(const std::string& name, DType d = kFloat32);  // f32 or f64
  Val arg_sym(const std::string& name);  // a symbolic size (i64), named like sym's symbols
  // A constexpr meta-parameter: recorded in the kernel's meta, returned as the number it is
  // (it specializes the kernel: a block size, a flag).
  int64_t constexpr_int(const std::string& name, int64_t value);
  Scalar constexpr_value(const std::string& name, Scalar value);
  void set_num_warps(int n) { prog_.meta.num_warps = n; }
  void set_num_stages(int n) { prog_.meta.num_stages = n; }

  // --- ops
  Val program_id(int axis, SourceLoc loc = SourceLoc::current());
  Val num_programs(int axis, SourceLoc loc = SourceLoc::current());
  Val arange(int64_t start, int64_t end, SourceLoc loc = SourceLoc::current());
  // A scalar constant (dtype: of the number's kind, i32/i64/f32/b8, unless given).
  Val constant(Scalar v, std::optional<DType> d = std::nullopt, SourceLoc loc = SourceLoc::current());
  Val full(std::vector<int64_t> shape, Scalar v, DType d, SourceLoc loc = SourceLoc::current());
  Val zeros(std::vector<int64_t> shape, DType d = kFloat32, SourceLoc loc = SourceLoc::current());

  Val load(const Operand& ptr, SourceLoc loc = SourceLoc::current());
  Val load(const Operand& ptr, const Operand& mask, SourceLoc loc = SourceLoc::current());
  Val load(const Operand& ptr, const Operand& mask, const Operand& other, SourceLoc loc = SourceLoc::current());
  void store(const Operand& ptr, const Operand& value, SourceLoc loc = SourceLoc::current());
  void store(const Operand& ptr, const Operand& value, const Operand& mask, SourceLoc loc = SourceLoc::current());
  Val atomic_add(const Operand& ptr, const Operand& value, SourceLoc loc = SourceLoc::current());
  Val atomic_add(const Operand& ptr, const Operand& value, const Operand& mask, SourceLoc loc = SourceLoc::current());

  Val cast(const Operand& x, DType d, SourceLoc loc = SourceLoc::current());
  // Any pointwise prim of ops.def, with broadcasting and promotion (div: its rounding mode).
  Val call(ops::OpId prim, std::vector<Operand> args, Rounding r = Rounding::None,
           SourceLoc loc = SourceLoc::current());
  Val where(const Operand& cond, const Operand& a, const Operand& b, SourceLoc loc = SourceLoc::current());
  Val floor_divide(const Operand& a, const Operand& b, SourceLoc loc = SourceLoc::current());
  Val cdiv(const Operand& a, const Operand& b, SourceLoc loc = SourceLoc::current());  // ceil(a / b), integers
#define KILN_TILE_UNARY_METHOD(fn) \
  Val fn(const Operand& x, SourceLoc loc = SourceLoc::current()) { return call(ops::OpId::fn, {x}, Rounding::None, loc); }
#define KILN_TILE_BINARY_METHOD(fn)                                                             \
  Val fn(const Operand& a, const Operand& b, SourceLoc loc = SourceLoc::current()) {            \
    return call(ops::OpId::fn, {a, b}, Rounding::None, loc);                                    \
  }
  KILN_TILE_UNARY_METHOD(exp) KILN_TILE_UNARY_METHOD(exp2) KILN_TILE_UNARY_METHOD(log) KILN_TILE_UNARY_METHOD(log2)
  KILN_TILE_UNARY_METHOD(sqrt) KILN_TILE_UNARY_METHOD(rsqrt) KILN_TILE_UNARY_METHOD(abs) KILN_TILE_UNARY_METHOD(sin)
  KILN_TILE_UNARY_METHOD(cos) KILN_TILE_UNARY_METHOD(tanh) KILN_TILE_UNARY_METHOD(sigmoid) KILN_TILE_UNARY_METHOD(erf)
  KILN_TILE_UNARY_METHOD(floor) KILN_TILE_UNARY_METHOD(ceil) KILN_TILE_UNARY_METHOD(isnan)
  KILN_TILE_BINARY_METHOD(maximum) KILN_TILE_BINARY_METHOD(minimum) KILN_TILE_BINARY_METHOD(pow)
  KILN_TILE_BINARY_METHOD(atan2)
#undef KILN_TILE_UNARY_METHOD
#undef KILN_TILE_BINARY_METHOD

  // Reductions along `axis` (negative counts from the end; none: all dims, giving a scalar).
  // sum and prod of b8 and integers narrower than 32 bits accumulate in i32; argmax/argmin give
  // i32 indices (the first one on ties; NaN counts as the largest).
  Val reduce(ReduceKind k, const Operand& x, std::optional<int64_t> axis, SourceLoc loc = SourceLoc::current());
  Val sum(const Operand& x, std::optional<int64_t> axis = std::nullopt, SourceLoc loc = SourceLoc::current());
  Val prod(const Operand& x, std::optional<int64_t> axis = std::nullopt, SourceLoc loc = SourceLoc::current());
  Val max(const Operand& x, std::optional<int64_t> axis = std::nullopt, SourceLoc loc = SourceLoc::current());
  Val min(const Operand& x, std::optional<int64_t> axis = std::nullopt, SourceLoc loc = SourceLoc::current());
  Val argmax(const Operand& x, int64_t axis, SourceLoc loc = SourceLoc::current());
  Val argmin(const Operand& x, int64_t axis, SourceLoc loc = SourceLoc::current());
  Val scan(ScanKind k, const Operand& x, int64_t axis, SourceLoc loc = SourceLoc::current());
  Val cumsum(const Operand& x, int64_t axis = 0, SourceLoc loc = SourceLoc::current());
  // a[M, K] @ b[K, N] (+ acc[M, N]), accumulated in f32 (f64 for f64 inputs).
  Val dot(const Operand& a, const Operand& b, SourceLoc loc = SourceLoc::current());
  Val dot(const Operand& a, const Operand& b, const Operand& acc, SourceLoc loc = SourceLoc::current());

  Val splat(const Operand& x, std::vector<int64_t> shape, SourceLoc loc = SourceLoc::current());
  Val broadcast_to(const Operand& x, std::vector<int64_t> shape, SourceLoc loc = SourceLoc::current());
  Val expand_dims(const Operand& x, int64_t axis, SourceLoc loc = SourceLoc::current());
  Val reshape(const Operand& x, std::vector<int64_t> shape, SourceLoc loc = SourceLoc::current());
  Val permute(const Operand& x, std::vector<int64_t> order, SourceLoc loc = SourceLoc::current());

  // for iv = lo; iv < hi; iv += step (step > 0), carrying values: body(iv, carried) returns the
  // next carried values (one per initial value, of its type; numbers and scalars broadcast).
  // Returns the carried values after the loop.
  using LoopBody = std::function<std::vector<Val>(Val iv, const std::vector<Val>& carried)>;
  std::vector<Val> for_loop(const Operand& lo, const Operand& hi, const Operand& step, std::vector<Val> init,
                            const LoopBody& body, SourceLoc loc = SourceLoc::current());
  // if cond (a b8 scalar) then_fn() else else_fn(), both returning values of the same types.
  using Branch = std::function<std::vector<Val>()>;
  std::vector<Val> if_else(const Operand& cond, const Branch& then_fn, const Branch& else_fn,
                           SourceLoc loc = SourceLoc::current());

  // Verifies the kernel and hands it over (the builder is empty after).
  Program finish();
  const Program& program() const { return prog_; }

  // Front ends that are not C++ (kiln.tile in Python) give each op's origin themselves: while
  // set, it replaces the C++ location.
  void set_origin(std::optional<Origin> o) { origin_override_ = std::move(o); }

  // --- used by the operators
  Val binary(ops::OpId prim, const Operand& a, const Operand& b, SourceLoc loc);
  Val add_ptr(const Operand& ptr, const Operand& offsets, bool negate, SourceLoc loc);
  Val unary(ops::OpId prim, const Operand& x, SourceLoc loc);
  Val lit(const Operand& x, DType d, SourceLoc loc);  // a number as a scalar constant of dtype d

 private:
  Origin origin(SourceLoc loc) const { return origin_override_ ? *origin_override_ : Origin::at(loc); }
  Op* add(std::unique_ptr<Op> op);  // verifies, then appends to the current region
  Val add1(std::unique_ptr<Op> op, Type result);
  std::unique_ptr<Op> make(OpCode c, std::vector<Value*> operands, SourceLoc loc);
  Val value_of(const Operand& x, SourceLoc loc);  // a literal becomes a constant of its own kind
  Val to_dtype(Val v, DType d, SourceLoc loc);
  Val to_shape(Val v, const std::vector<int64_t>& shape, SourceLoc loc);  // splat / expand / broadcast
  std::vector<int64_t> broadcast_shape(const std::vector<std::vector<int64_t>>& shapes, const char* what, SourceLoc loc) const;
  DType promoted(const std::vector<const Operand*>& xs) const;
  Val pointer_operand(const Operand& p, const char* what, SourceLoc loc);
  Val memory_op(OpCode c, const Operand& ptr, const Operand* value, const Operand* mask, const Operand* other, SourceLoc loc);
  [[noreturn]] void fail(const char* op, SourceLoc loc, const std::string& message, const std::string& hint = {}) const;

  Program prog_;
  Region* region_;
  std::optional<Origin> origin_override_;
};

// ceil(a / b) for C++ ints (grid sizes).
inline int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Operators on values (and a value with a C++ number).
Val operator+(const Operand& a, const Operand& b);
Val operator-(const Operand& a, const Operand& b);
Val operator*(const Operand& a, const Operand& b);
Val operator/(const Operand& a, const Operand& b);  // true division (ints become f32)
Val operator%(const Operand& a, const Operand& b);  // Python's remainder (sign of the divisor)
Val operator<(const Operand& a, const Operand& b);
Val operator<=(const Operand& a, const Operand& b);
Val operator>(const Operand& a, const Operand& b);
Val operator>=(const Operand& a, const Operand& b);
Val operator==(const Operand& a, const Operand& b);
Val operator!=(const Operand& a, const Operand& b);
Val operator&(const Operand& a, const Operand& b);
Val operator|(const Operand& a, const Operand& b);
Val operator^(const Operand& a, const Operand& b);
Val operator<<(const Operand& a, const Operand& b);
Val operator>>(const Operand& a, const Operand& b);
Val operator-(const Operand& a);
Val operator~(const Operand& a);
Val operator!(const Operand& a);
Val& operator+=(Val& a, const Operand& b);
Val& operator-=(Val& a, const Operand& b);
Val& operator*=(Val& a, const Operand& b);

}  // namespace kiln::tile
