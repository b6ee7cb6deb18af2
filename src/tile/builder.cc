// The C++ DSL (builder.h): ops with implicit broadcasting and PyTorch's promotion.
#include "tile/builder.h"

#include <limits>

#include "tile/prims.h"

namespace kiln::tile {
namespace {

using ops::OpId;

// bool < int < float: the kinds promotion orders numbers by.
int kind_rank(DType d) { return d == kBool ? 0 : is_floating(d) ? 2 : 1; }
int kind_rank(const Scalar& s) { return s.is_bool() ? 0 : s.is_float() ? 2 : 1; }

bool fits_i32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

// The dtype a number has on its own: b8, i32 (i64 if it does not fit), f32.
DType natural_dtype(const Scalar& s) {
  if (s.is_bool()) return kBool;
  if (s.is_float()) return kFloat32;
  return fits_i32(s.to_int()) ? kInt32 : kInt64;
}

bool int_fits(int64_t v, DType d) {
  switch (d) {
    case kUInt8: return v >= 0 && v <= 255;
    case kInt8: return v >= -128 && v <= 127;
    case kInt16: return v >= -32768 && v <= 32767;
    case kInt32: return fits_i32(v);
    default: return true;
  }
}

// Restores the builder's insertion region when a region's body returns or throws.
struct RegionScope {
  Region*& slot;
  Region* saved;
  RegionScope(Region*& s, Region* r) : slot(s), saved(s) { slot = r; }
  ~RegionScope() { slot = saved; }
};

}  // namespace

Builder& Val::builder() const {
  KILN_CHECK(b_, "tile: an empty value handle (default-constructed Val)");
  return *b_;
}
const Type& Val::type() const {
  KILN_CHECK(v_, "tile: an empty value handle (default-constructed Val)");
  return v_->type;
}
Val Val::to(DType d, SourceLoc loc) const { return builder().cast(*this, d, loc); }
Val Val::expand_dims(int64_t axis, SourceLoc loc) const { return builder().expand_dims(*this, axis, loc); }
Val Val::broadcast_to(std::vector<int64_t> shape, SourceLoc loc) const {
  return builder().broadcast_to(*this, std::move(shape), loc);
}
Val Val::reshape(std::vector<int64_t> shape, SourceLoc loc) const { return builder().reshape(*this, std::move(shape), loc); }
Val Val::permute(std::vector<int64_t> order, SourceLoc loc) const { return builder().permute(*this, std::move(order), loc); }
Val Val::trans(SourceLoc loc) const { return builder().permute(*this, {1, 0}, loc); }

Builder::Builder(std::string name) : prog_(std::move(name)), region_(&prog_.body) {}

void Builder::fail(const char* op, SourceLoc loc, const std::string& message, const std::string& hint) const {
  fail_at(op, origin(loc), message, hint);
}

// --- parameters

Val Builder::arg_ptr(const std::string& name, DType pointee) {
  for (const Param& p : prog_.params)
    KILN_CHECK(p.name != name, "tile: kernel ", prog_.name, " has two parameters named ", name);
  return {this, prog_.add_param(name, ParamKind::Pointer, Type::pointer(pointee))};
}
Val Builder::arg_int(const std::string& name, DType d) {
  KILN_CHECK(d == kInt32 || d == kInt64, "tile: an int parameter is i32 or i64, not ", short_name(d));
  for (const Param& p : prog_.params)
    KILN_CHECK(p.name != name, "tile: kernel ", prog_.name, " has two parameters named ", name);
  return {this, prog_.add_param(name, ParamKind::Int, Type::scalar(d))};
}
Val Builder::arg_float(const std::string& name, DType d) {
  KILN_CHECK(d == kFloat32 || d == kFloat64, "tile: a float parameter is f32 or f64, not ", short_name(d));
  for (const Param& p : prog_.params)
    KILN_CHECK(p.name != name, "tile: kernel ", prog_.name, " has two parameters named ", name);
  return {this, prog_.add_param(name, ParamKind::Float, Type::scalar(d))};
}
Val Builder::arg_sym(const std::string& name) {
  for (const Param& p : prog_.params)
    KILN_CHECK(p.name != name, "tile: kernel ", prog_.name, " has two parameters named ", name);
  return {this, prog_.add_param(name, ParamKind::Sym, Type::scalar(kInt64))};
}
int64_t Builder::constexpr_int(const std::string& name, int64_t value) {
  return constexpr_value(name, Scalar(value)).to_int();
}
Scalar Builder::constexpr_value(const std::string& name, Scalar value) {
  KILN_CHECK(!prog_.meta.find(name), "tile: kernel ", prog_.name, " has two meta-parameters named ", name);
  prog_.meta.constexprs.push_back({name, value});
  return value;
}

// --- op plumbing

std::unique_ptr<Op> Builder::make(OpCode c, std::vector<Value*> operands, SourceLoc loc) {
  auto op = std::make_unique<Op>();
  op->code = c;
  op->operands = std::move(operands);
  op->origin = origin(loc);
  return op;
}

Op* Builder::add(std::unique_ptr<Op> op) {
  verify_op(*op);
  Op* raw = op.get();
  region_->ops.push_back(std::move(op));
  return raw;
}

Val Builder::add1(std::unique_ptr<Op> op, Type result) {
  Value* v = prog_.new_value(std::move(result));
  v->def = op.get();
  op->results.push_back(v);
  add(std::move(op));
  return {this, v};
}

Val Builder::value_of(const Operand& x, SourceLoc loc) {
  if (x.is_lit) return lit(x, natural_dtype(x.lit), loc);
  KILN_CHECK(x.val.defined(), "tile: an empty value handle (default-constructed Val)");
  KILN_CHECK(&x.val.builder() == this, "tile: a value of another kernel's builder was used in ", prog_.name);
  return x.val;
}

Val Builder::lit(const Operand& x, DType d, SourceLoc loc) {
  if (!x.is_lit) return to_dtype(value_of(x, loc), d, loc);
  if (is_integral(d) && x.lit.is_int() && !int_fits(x.lit.to_int(), d))
    fail("constant", loc, detail::cat("the number ", x.lit.to_int(), " does not fit in ", short_name(d)),
         "cast the value to a wider dtype first");
  auto op = make(OpCode::Constant, {}, loc);
  op->value = x.lit;
  return add1(std::move(op), Type::scalar(d));
}

Val Builder::to_dtype(Val v, DType d, SourceLoc loc) {
  if (v.dtype() == d && !v.type().ptr) return v;
  if (v.type().ptr) fail("cast", loc, "cannot cast the pointer " + v.type().str() + " to " + short_name(d));
  return add1(make(OpCode::Cast, {v.value()}, loc), v.type().with_dtype(d));
}

std::vector<int64_t> Builder::broadcast_shape(const std::vector<std::vector<int64_t>>& shapes, const char* what,
                                              SourceLoc loc) const {
  std::vector<int64_t> out;
  for (const auto& s : shapes) {
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[out.size() - s.size() + i];
      const int64_t d = s[i];
      if (o == d || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const auto& t : shapes) all += (all.empty() ? "" : " and ") + shape_text(t);
      fail(what, loc, "cannot broadcast the shapes " + all + " together",
           "a dim must be equal or 1 in every operand (expand_dims to add one)");
    }
  }
  return out;
}

Val Builder::to_shape(Val v, const std::vector<int64_t>& shape, SourceLoc loc) {
  if (v.shape() == shape) return v;
  if (!v.type().is_block()) {
    auto op = make(OpCode::Splat, {v.value()}, loc);
    return add1(std::move(op), v.type().with_shape(shape));
  }
  while (v.type().rank() < int(shape.size())) v = expand_dims(v, 0, loc);
  if (v.shape() == shape) return v;
  return add1(make(OpCode::Broadcast, {v.value()}, loc), v.type().with_shape(shape));
}

DType Builder::promoted(const std::vector<const Operand*>& xs) const {
  std::optional<DType> d;
  int lit_rank = -1;
  std::optional<DType> lit_natural;
  for (const Operand* x : xs) {
    if (x->is_lit) {
      if (kind_rank(x->lit) > lit_rank) lit_rank = kind_rank(x->lit), lit_natural = natural_dtype(x->lit);
    } else {
      d = d ? promote_types(*d, x->val.dtype()) : x->val.dtype();
    }
  }
  if (!d) return *lit_natural;
  if (lit_rank > kind_rank(*d)) return lit_rank == 2 ? kFloat32 : kInt64;  // as PyTorch's default dtypes
  return *d;
}

// --- ops

Val Builder::program_id(int axis, SourceLoc loc) {
  auto op = make(OpCode::ProgramId, {}, loc);
  op->axis = axis;
  return add1(std::move(op), Type::scalar(kInt32));
}

Val Builder::num_programs(int axis, SourceLoc loc) {
  auto op = make(OpCode::NumPrograms, {}, loc);
  op->axis = axis;
  return add1(std::move(op), Type::scalar(kInt32));
}

Val Builder::arange(int64_t start, int64_t end, SourceLoc loc) {
  if (end <= start) fail("arange", loc, detail::cat("arange(", start, ", ", end, ") is empty"), "end must be greater than start");
  if (!fits_i32(start) || !fits_i32(end)) fail("arange", loc, "arange's bounds must fit in i32");
  auto op = make(OpCode::Arange, {}, loc);
  op->start = start;
  op->end = end;
  return add1(std::move(op), Type::block(kInt32, {end - start}));
}

Val Builder::constant(Scalar v, std::optional<DType> d, SourceLoc loc) {
  return lit(Operand(v, loc), d ? *d : natural_dtype(v), loc);
}

Val Builder::full(std::vector<int64_t> shape, Scalar v, DType d, SourceLoc loc) {
  for (int64_t s : shape)
    if (s <= 0) fail("constant", loc, "block dims must be positive, got " + shape_text(shape));
  auto op = make(OpCode::Constant, {}, loc);
  op->value = v;
  return add1(std::move(op), Type::block(d, std::move(shape)));
}

Val Builder::zeros(std::vector<int64_t> shape, DType d, SourceLoc loc) {
  return full(std::move(shape), d == kBool ? Scalar(false) : is_floating(d) ? Scalar(0.0) : Scalar(int64_t(0)), d, loc);
}

Val Builder::pointer_operand(const Operand& p, const char* what, SourceLoc loc) {
  if (p.is_lit || !p.val.defined() || !p.val.type().ptr)
    fail(what, loc, std::string("the first operand must be a pointer") +
                        (p.is_lit || !p.val.defined() ? "" : ", not " + p.val.type().str()),
         "pass a pointer parameter plus offsets (x + offs)");
  return value_of(p, loc);
}

Val Builder::memory_op(OpCode c, const Operand& ptr, const Operand* value, const Operand* mask, const Operand* other,
                       SourceLoc loc) {
  const char* what = opcode_name(c);
  Val p = pointer_operand(ptr, what, loc);
  const DType pointee = p.dtype();
  std::optional<Val> m, v;
  if (mask) {
    m = value_of(*mask, loc);
    if (m->type().ptr || m->dtype() != kBool)
      fail(what, loc, "the mask must be b8, not " + m->type().str(), "compare to get a mask (offs < n)");
  }
  if (const Operand* data = value ? value : other) {
    if (!data->is_lit && data->val.defined() && data->val.type().ptr)
      fail(what, loc, std::string(value ? "the value" : "other") + " must be data, not the pointer " + data->val.type().str());
    v = lit(*data, pointee, loc);  // numbers become the pointee's dtype; values are cast to it
  }
  std::vector<std::vector<int64_t>> shapes = {p.shape()};
  if (m) shapes.push_back(m->shape());
  if (v) shapes.push_back(v->shape());
  const std::vector<int64_t> shape = broadcast_shape(shapes, what, loc);
  p = to_shape(p, shape, loc);
  if (m) m = to_shape(*m, shape, loc);
  if (v) v = to_shape(*v, shape, loc);
  std::vector<Value*> operands = {p.value()};
  if (c == OpCode::Load) {
    if (m) operands.push_back(m->value());
    if (v) operands.push_back(v->value());
  } else {
    operands.push_back(v->value());
    if (m) operands.push_back(m->value());
  }
  auto op = make(c, std::move(operands), loc);
  if (c == OpCode::Store) {
    add(std::move(op));
    return {};
  }
  return add1(std::move(op), Type::block(pointee, shape));
}

Val Builder::load(const Operand& ptr, SourceLoc loc) { return memory_op(OpCode::Load, ptr, nullptr, nullptr, nullptr, loc); }
Val Builder::load(const Operand& ptr, const Operand& mask, SourceLoc loc) {
  return memory_op(OpCode::Load, ptr, nullptr, &mask, nullptr, loc);
}
Val Builder::load(const Operand& ptr, const Operand& mask, const Operand& other, SourceLoc loc) {
  return memory_op(OpCode::Load, ptr, nullptr, &mask, &other, loc);
}
void Builder::store(const Operand& ptr, const Operand& value, SourceLoc loc) {
  memory_op(OpCode::Store, ptr, &value, nullptr, nullptr, loc);
}
void Builder::store(const Operand& ptr, const Operand& value, const Operand& mask, SourceLoc loc) {
  memory_op(OpCode::Store, ptr, &value, &mask, nullptr, loc);
}
Val Builder::atomic_add(const Operand& ptr, const Operand& value, SourceLoc loc) {
  return memory_op(OpCode::AtomicAdd, ptr, &value, nullptr, nullptr, loc);
}
Val Builder::atomic_add(const Operand& ptr, const Operand& value, const Operand& mask, SourceLoc loc) {
  return memory_op(OpCode::AtomicAdd, ptr, &value, &mask, nullptr, loc);
}

Val Builder::cast(const Operand& x, DType d, SourceLoc loc) {
  if (x.is_lit) return lit(x, d, loc);
  return to_dtype(value_of(x, loc), d, loc);
}

Val Builder::add_ptr(const Operand& ptr, const Operand& offsets, bool negate, SourceLoc loc) {
  Val p = pointer_operand(ptr, "addptr", loc);
  Val off;
  if (offsets.is_lit) {
    if (!offsets.lit.is_int()) fail("addptr", loc, "pointer offsets must be integers, not " + offsets.lit.str());
    Operand o(negate ? -offsets.lit.to_int() : offsets.lit.to_int(), loc);
    off = value_of(o, loc);
  } else {
    off = value_of(offsets, loc);
    if (off.type().ptr || !is_integral(off.dtype()))
      fail("addptr", loc, "pointer offsets must be integers, not " + off.type().str(), "cast the offsets to i32 or i64");
    if (negate) off = unary(OpId::neg, off, loc);
  }
  const std::vector<int64_t> shape = broadcast_shape({p.shape(), off.shape()}, "addptr", loc);
  p = to_shape(p, shape, loc);
  off = to_shape(off, shape, loc);
  return add1(make(OpCode::AddPtr, {p.value(), off.value()}, loc), p.type());
}

Val Builder::unary(OpId prim, const Operand& x, SourceLoc loc) {
  Val v = value_of(x, loc);
  if (v.type().ptr) fail(ops::op_info(prim).name, loc, "takes data, not the pointer " + v.type().str());
  if (ops::op_info(prim).dtype_rule == ops::DTypeRule::INT_TO_FLOAT && !is_floating(v.dtype())) v = to_dtype(v, kFloat32, loc);
  auto op = make(OpCode::Pointwise, {v.value()}, loc);
  op->prim = prim;
  return add1(std::move(op), v.type().with_dtype(prim_result_dtype(prim, v.dtype())));
}

Val Builder::binary(OpId prim, const Operand& a, const Operand& b, SourceLoc loc) {
  const bool pa = !a.is_lit && a.val.defined() && a.val.type().ptr;
  const bool pb = !b.is_lit && b.val.defined() && b.val.type().ptr;
  if (pa || pb) {
    if (prim == OpId::add && !(pa && pb)) return pa ? add_ptr(a, b, false, loc) : add_ptr(b, a, false, loc);
    if (prim == OpId::sub && pa && !pb) return add_ptr(a, b, true, loc);
    fail(ops::op_info(prim).name, loc, "pointers only take + and - of integer offsets");
  }
  DType d = promoted({&a, &b});
  if (ops::op_info(prim).dtype_rule == ops::DTypeRule::INT_TO_FLOAT && !is_floating(d)) d = kFloat32;
  Val x = lit(a, d, loc), y = lit(b, d, loc);
  const std::vector<int64_t> shape = broadcast_shape({x.shape(), y.shape()}, ops::op_info(prim).name, loc);
  x = to_shape(x, shape, loc);
  y = to_shape(y, shape, loc);
  auto op = make(OpCode::Pointwise, {x.value(), y.value()}, loc);
  op->prim = prim;
  return add1(std::move(op), Type::block(prim_result_dtype(prim, d), shape));
}

Val Builder::call(OpId prim, std::vector<Operand> args, Rounding r, SourceLoc loc) {
  const int arity = prim_arity(prim);
  const char* name = prim == OpId::NumOps ? "?" : ops::op_info(prim).name;
  if (arity == 0) fail(name, loc, std::string(name) + " is not a pointwise prim", "see ops.def's POINTWISE prims");
  if (int(args.size()) != arity) fail(name, loc, detail::cat("takes ", arity, " operand(s), got ", args.size()));
  if (r != Rounding::None && prim != OpId::div) fail(name, loc, "only div takes a rounding mode");
  if (arity == 1) return unary(prim, args[0], loc);
  if (arity == 3) return where(args[0], args[1], args[2], loc);
  if (r == Rounding::None) return binary(prim, args[0], args[1], loc);
  // div with a rounding mode keeps integers integers (trunc / floor of the quotient).
  DType d = promoted({&args[0], &args[1]});
  Val x = lit(args[0], d, loc), y = lit(args[1], d, loc);
  const std::vector<int64_t> shape = broadcast_shape({x.shape(), y.shape()}, "div", loc);
  x = to_shape(x, shape, loc);
  y = to_shape(y, shape, loc);
  auto op = make(OpCode::Pointwise, {x.value(), y.value()}, loc);
  op->prim = prim;
  op->rounding = r;
  return add1(std::move(op), Type::block(d, shape));
}

Val Builder::where(const Operand& cond, const Operand& a, const Operand& b, SourceLoc loc) {
  Val c = value_of(cond, loc);
  if (c.type().ptr || c.dtype() != kBool)
    fail("where", loc, "the condition must be b8, not " + c.type().str(), "compare to get a condition (x > 0)");
  const DType d = promoted({&a, &b});
  Val x = lit(a, d, loc), y = lit(b, d, loc);
  const std::vector<int64_t> shape = broadcast_shape({c.shape(), x.shape(), y.shape()}, "where", loc);
  c = to_shape(c, shape, loc);
  x = to_shape(x, shape, loc);
  y = to_shape(y, shape, loc);
  auto op = make(OpCode::Pointwise, {c.value(), x.value(), y.value()}, loc);
  op->prim = OpId::where;
  return add1(std::move(op), Type::block(d, shape));
}

Val Builder::floor_divide(const Operand& a, const Operand& b, SourceLoc loc) { return binary(OpId::floor_divide, a, b, loc); }

Val Builder::cdiv(const Operand& a, const Operand& b, SourceLoc loc) {
  // (a + b - 1) // b, in the operands' promoted integer dtype.
  Val num = binary(OpId::sub, binary(OpId::add, a, b, loc), Operand(int64_t(1), loc), loc);
  return binary(OpId::floor_divide, num, b, loc);
}

Val Builder::reduce(ReduceKind k, const Operand& x, std::optional<int64_t> axis, SourceLoc loc) {
  const char* name = reduce_name(k);
  Val v = value_of(x, loc);
  if (!v.type().is_block() || v.type().ptr) fail(name, loc, "reduces a block of data, not " + v.type().str());
  if (!axis) {
    if (v.type().rank() > 1) v = reshape(v, {v.type().numel()}, loc);
    axis = 0;
  }
  const int64_t rank = v.type().rank();
  if (*axis < -rank || *axis >= rank) fail(name, loc, detail::cat("axis ", *axis, " is out of range for ", v.type().str()));
  if (*axis < 0) *axis += rank;
  if ((k == ReduceKind::Sum || k == ReduceKind::Prod) && is_integral(v.dtype(), true) && kind_rank(v.dtype()) <= 1 &&
      itemsize(v.dtype()) < 4)
    v = to_dtype(v, kInt32, loc);
  Type out = v.type();
  out.shape.erase(out.shape.begin() + *axis);
  if (k == ReduceKind::Argmax || k == ReduceKind::Argmin) out.dtype = kInt32;
  auto op = make(OpCode::Reduce, {v.value()}, loc);
  op->reduce = k;
  op->axis = *axis;
  return add1(std::move(op), out);
}
Val Builder::sum(const Operand& x, std::optional<int64_t> axis, SourceLoc loc) { return reduce(ReduceKind::Sum, x, axis, loc); }
Val Builder::prod(const Operand& x, std::optional<int64_t> axis, SourceLoc loc) { return reduce(ReduceKind::Prod, x, axis, loc); }
Val Builder::max(const Operand& x, std::optional<int64_t> axis, SourceLoc loc) { return reduce(ReduceKind::Max, x, axis, loc); }
Val Builder::min(const Operand& x, std::optional<int64_t> axis, SourceLoc loc) { return reduce(ReduceKind::Min, x, axis, loc); }
Val Builder::argmax(const Operand& x, int64_t axis, SourceLoc loc) { return reduce(ReduceKind::Argmax, x, axis, loc); }
Val Builder::argmin(const Operand& x, int64_t axis, SourceLoc loc) { return reduce(ReduceKind::Argmin, x, axis, loc); }

Val Builder::scan(ScanKind k, const Operand& x, int64_t axis, SourceLoc loc) {
  const char* name = scan_name(k);
  Val v = value_of(x, loc);
  if (!v.type().is_block() || v.type().ptr) fail(name, loc, "scans a block of data, not " + v.type().str());
  const int64_t rank = v.type().rank();
  if (axis < -rank || axis >= rank) fail(name, loc, detail::cat("axis ", axis, " is out of range for ", v.type().str()));
  if (axis < 0) axis += rank;
  if ((k == ScanKind::Cumsum || k == ScanKind::Cumprod) && is_integral(v.dtype(), true) && itemsize(v.dtype()) < 4)
    v = to_dtype(v, kInt32, loc);
  auto op = make(OpCode::Scan, {v.value()}, loc);
  op->scan = k;
  op->axis = axis;
  return add1(std::move(op), v.type());
}
Val Builder::cumsum(const Operand& x, int64_t axis, SourceLoc loc) { return scan(ScanKind::Cumsum, x, axis, loc); }

Val Builder::dot(const Operand& a, const Operand& b, SourceLoc loc) {
  Val va = value_of(a, loc), vb = value_of(b, loc);
  const DType acc = promote_types(va.dtype(), vb.dtype()) == kFloat64 ? kFloat64 : kFloat32;
  if (va.type().rank() != 2 || vb.type().rank() != 2)
    fail("dot", loc, "takes 2-d blocks a[M, K] and b[K, N], got " + va.type().str() + " and " + vb.type().str());
  return dot(va, vb, zeros({va.shape()[0], vb.shape()[1]}, acc, loc), loc);
}

Val Builder::dot(const Operand& a, const Operand& b, const Operand& acc, SourceLoc loc) {
  Val va = value_of(a, loc), vb = value_of(b, loc);
  if (va.type().ptr || vb.type().ptr || va.type().rank() != 2 || vb.type().rank() != 2)
    fail("dot", loc, "takes 2-d blocks a[M, K] and b[K, N], got " + va.type().str() + " and " + vb.type().str());
  if (va.shape()[1] != vb.shape()[0])
    fail("dot", loc, "the inner dims differ: " + va.type().str() + " @ " + vb.type().str());
  const DType d = promote_types(va.dtype(), vb.dtype());
  if (!is_floating(d))
    fail("dot", loc, "takes float blocks, not " + va.type().str() + " and " + vb.type().str(), "cast them to f32 (or f16/bf16)");
  va = to_dtype(va, d, loc);
  vb = to_dtype(vb, d, loc);
  const DType accd = d == kFloat64 ? kFloat64 : kFloat32;
  const std::vector<int64_t> shape = {va.shape()[0], vb.shape()[1]};
  Val vc;
  if (acc.is_lit || !acc.val.type().is_block()) {
    vc = to_shape(lit(acc, accd, loc), shape, loc);
  } else {
    vc = value_of(acc, loc);
    if (vc.dtype() != accd)
      fail("dot", loc, std::string("the accumulator must be ") + short_name(accd) + ", not " + vc.type().str());
    if (vc.shape() != shape) fail("dot", loc, "the accumulator must be " + Type::block(accd, shape).str() + ", not " + vc.type().str());
  }
  return add1(make(OpCode::Dot, {va.value(), vb.value(), vc.value()}, loc), vc.type());
}

Val Builder::splat(const Operand& x, std::vector<int64_t> shape, SourceLoc loc) {
  Val v = value_of(x, loc);
  if (v.type().is_block()) fail("splat", loc, "splats a scalar, not " + v.type().str(), "use broadcast_to for blocks");
  return to_shape(v, shape, loc);
}

Val Builder::broadcast_to(const Operand& x, std::vector<int64_t> shape, SourceLoc loc) {
  Val v = value_of(x, loc);
  const std::vector<int64_t> b = broadcast_shape({v.shape(), shape}, "broadcast", loc);
  if (b != shape) fail("broadcast", loc, "cannot broadcast " + v.type().str() + " to " + shape_text(shape));
  return to_shape(v, shape, loc);
}

Val Builder::expand_dims(const Operand& x, int64_t axis, SourceLoc loc) {
  Val v = value_of(x, loc);
  const int64_t rank = v.type().rank();
  if (axis < -(rank + 1) || axis > rank) fail("expand_dims", loc, detail::cat("axis ", axis, " is out of range for ", v.type().str()));
  if (axis < 0) axis += rank + 1;
  std::vector<int64_t> shape = v.shape();
  shape.insert(shape.begin() + axis, 1);
  auto op = make(OpCode::ExpandDims, {v.value()}, loc);
  op->axis = axis;
  return add1(std::move(op), v.type().with_shape(shape));
}

Val Builder::reshape(const Operand& x, std::vector<int64_t> shape, SourceLoc loc) {
  Val v = value_of(x, loc);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && infer < 0) infer = int64_t(i);
    else known *= shape[i];
  }
  if (infer >= 0 && known > 0) shape[size_t(infer)] = v.type().numel() / known;
  if (v.shape() == shape) return v;
  return add1(make(OpCode::Reshape, {v.value()}, loc), v.type().with_shape(std::move(shape)));
}

Val Builder::permute(const Operand& x, std::vector<int64_t> order, SourceLoc loc) {
  Val v = value_of(x, loc);
  std::vector<int64_t> shape;
  for (int64_t d : order) {
    if (d < 0 || d >= v.type().rank()) fail("permute", loc, "order " + shape_text(order) + " is not a permutation of " + v.type().str() + "'s dims");
    shape.push_back(v.shape()[size_t(d)]);
  }
  auto op = make(OpCode::Permute, {v.value()}, loc);
  op->order = std::move(order);
  return add1(std::move(op), v.type().with_shape(std::move(shape)));
}

std::vector<Val> Builder::for_loop(const Operand& lo, const Operand& hi, const Operand& step, std::vector<Val> init,
                                   const LoopBody& body, SourceLoc loc) {
  DType d = promoted({&lo, &hi, &step});
  if (!is_integral(d)) fail("for", loc, std::string("the bounds must be integers, not ") + short_name(d));
  Val l = lit(lo, d, loc), h = lit(hi, d, loc), s = lit(step, d, loc);
  for (const Val& v : {l, h, s})
    if (v.type().is_block()) fail("for", loc, "the bounds must be scalars, not " + v.type().str());
  std::vector<Value*> operands = {l.value(), h.value(), s.value()};
  for (const Val& v : init) operands.push_back(value_of(v, loc).value());
  auto op = make(OpCode::For, std::move(operands), loc);
  op->regions.resize(1);
  Region& r = op->regions[0];
  r.args.push_back(prog_.new_value(Type::scalar(d)));
  std::vector<Val> carried;
  for (const Val& v : init) {
    r.args.push_back(prog_.new_value(v.type()));
    carried.push_back({this, r.args.back()});
  }
  {
    RegionScope scope(region_, &r);
    std::vector<Val> next = body({this, r.args[0]}, carried);
    if (next.size() != init.size())
      fail("for", loc, detail::cat("the body returns ", next.size(), " value(s) for ", init.size(), " carried value(s)"));
    std::vector<Value*> yields;
    for (size_t i = 0; i < next.size(); ++i) {
      Val y = value_of(next[i], loc);
      if (y.dtype() != init[i].dtype() || y.type().ptr != init[i].type().ptr)
        fail("for", loc, detail::cat("carried value ", i, " starts as ", init[i].type().str(), " but the body returns ",
                                     y.type().str()), "cast it in the body");
      yields.push_back(to_shape(y, init[i].shape(), loc).value());
    }
    add(make(OpCode::Yield, std::move(yields), loc));
  }
  std::vector<Val> out;
  for (const Val& v : init) {
    Value* res = prog_.new_value(v.type());
    res->def = op.get();
    res->index = int(op->results.size());
    op->results.push_back(res);
    out.push_back({this, res});
  }
  add(std::move(op));
  return out;
}

std::vector<Val> Builder::if_else(const Operand& cond, const Branch& then_fn, const Branch& else_fn, SourceLoc loc) {
  Val c = value_of(cond, loc);
  if (c.type() != Type::scalar(kBool))
    fail("if", loc, "the condition must be a b8 scalar, not " + c.type().str(), "compare to get one (pid == 0)");
  auto op = make(OpCode::If, {c.value()}, loc);
  op->regions.resize(2);
  std::vector<Type> types;
  for (int b = 0; b < 2; ++b) {
    RegionScope scope(region_, &op->regions[size_t(b)]);
    std::vector<Val> ys = b == 0 ? then_fn() : (else_fn ? else_fn() : std::vector<Val>{});
    std::vector<Value*> yields;
    for (size_t i = 0; i < ys.size(); ++i) {
      Val y = value_of(ys[i], loc);
      if (b == 0) types.push_back(y.type());
      else if (i >= types.size() || y.type() != types[i])
        fail("if", loc, detail::cat("the branches yield different values: ", i < types.size() ? types[i].str() : "nothing",
                                    " and ", y.type().str(), " (value ", i, ")"));
      yields.push_back(y.value());
    }
    if (b == 1 && ys.size() != types.size())
      fail("if", loc, detail::cat("the then branch yields ", types.size(), " value(s), the else branch ", ys.size()));
    add(make(OpCode::Yield, std::move(yields), loc));
  }
  std::vector<Val> out;
  for (const Type& t : types) {
    Value* res = prog_.new_value(t);
    res->def = op.get();
    res->index = int(op->results.size());
    op->results.push_back(res);
    out.push_back({this, res});
  }
  add(std::move(op));
  return out;
}

Program Builder::finish() {
  verify(prog_);
  Program out = std::move(prog_);
  prog_ = Program(out.name);
  region_ = &prog_.body;
  return out;
}

// --- operators

namespace {
Builder& builder_of(const Operand& a, const Operand& b) {
  if (!a.is_lit) return a.val.builder();
  KILN_CHECK(!b.is_lit, "tile: an operator on two numbers has no kernel to build in");
  return b.val.builder();
}
}  // namespace

#define KILN_TILE_BINARY_OP(sym, prim) \
  Val operator sym(const Operand& a, const Operand& b) { return builder_of(a, b).binary(OpId::prim, a, b, a.loc); }
KILN_TILE_BINARY_OP(+, add)
KILN_TILE_BINARY_OP(-, sub)
KILN_TILE_BINARY_OP(*, mul)
KILN_TILE_BINARY_OP(/, div)
KILN_TILE_BINARY_OP(%, remainder)
KILN_TILE_BINARY_OP(<, lt)
KILN_TILE_BINARY_OP(<=, le)
KILN_TILE_BINARY_OP(>, gt)
KILN_TILE_BINARY_OP(>=, ge)
KILN_TILE_BINARY_OP(==, eq)
KILN_TILE_BINARY_OP(!=, ne)
KILN_TILE_BINARY_OP(&, bitwise_and)
KILN_TILE_BINARY_OP(|, bitwise_or)
KILN_TILE_BINARY_OP(^, bitwise_xor)
KILN_TILE_BINARY_OP(<<, shift_left)
KILN_TILE_BINARY_OP(>>, shift_right_arithmetic)
#undef KILN_TILE_BINARY_OP

Val operator-(const Operand& a) { return a.val.builder().unary(OpId::neg, a, a.loc); }
Val operator~(const Operand& a) { return a.val.builder().unary(OpId::bitwise_not, a, a.loc); }
Val operator!(const Operand& a) { return a.val.builder().unary(OpId::logical_not, a, a.loc); }
Val& operator+=(Val& a, const Operand& b) { return a = a.builder().binary(OpId::add, Operand(a, b.loc), b, b.loc); }
Val& operator-=(Val& a, const Operand& b) { return a = a.builder().binary(OpId::sub, Operand(a, b.loc), b, b.loc); }
Val& operator*=(Val& a, const Operand& b) { return a = a.builder().binary(OpId::mul, Operand(a, b.loc), b, b.loc); }

}  // namespace kiln::tile
