// The tile IR verifier: each op's operand and result types (verify_op), and for a whole program
// the parameters, region structure and that every operand is defined before it is used.
#include <set>

#include "tile/ir.h"
#include "tile/prims.h"

namespace kiln::tile {
namespace {

std::string ts(const Value* v) { return v->type.str(); }

// fail_at(op, message[, hint]) unless cond. A macro, so that the message (strings, type and shape
// texts) is built only when the check fails: the verifier runs on every kernel a compile emits.
#define KILN_TILE_CHECK(op, cond, ...) ((cond) ? void() : fail_at(op, __VA_ARGS__))

void operands(const Op& op, size_t lo, size_t hi, const char* what) {
  KILN_TILE_CHECK(op, op.operands.size() >= lo && op.operands.size() <= hi,
        detail::cat("takes ", what, ", got ", op.operands.size(), " operand(s)"));
  for (const Value* v : op.operands) KILN_TILE_CHECK(op, v != nullptr, "has a null operand");
}

void results(const Op& op, size_t n) {
  KILN_TILE_CHECK(op, op.results.size() == n, detail::cat("has ", op.results.size(), " result(s), expected ", n));
  for (size_t i = 0; i < n; ++i)
    KILN_TILE_CHECK(op, op.results[i] && op.results[i]->def == &op && op.results[i]->index == int(i),
          detail::cat("result ", i, " does not name this op as its definition"));
}

bool is_int(DType d) { return is_integral(d); }  // integers, not bool

void check_data(const Op& op, const Value* v, const char* what) {
  KILN_TILE_CHECK(op, !v->type.ptr, detail::cat(what, " must be data, not a pointer (", ts(v), ")"),
        "load through the pointer first");
}

void check_same_shape(const Op& op, const Value* a, const Value* b, const char* what_a, const char* what_b) {
  KILN_TILE_CHECK(op, a->type.shape == b->type.shape,
        detail::cat("the shape of ", what_b, " ", shape_text(b->type.shape), " differs from ", what_a, "'s ",
                    shape_text(a->type.shape)),
        "broadcast both to one shape (the builder does this for scalars and size-1 dims)");
}

void verify_region_yield(const Op& op, const Region& r, const std::vector<Value*>& expect, const char* which) {
  KILN_TILE_CHECK(op, !r.ops.empty() && r.ops.back()->code == OpCode::Yield, detail::cat("the ", which, " must end with yield"));
  const Op& y = *r.ops.back();
  KILN_TILE_CHECK(op, y.operands.size() == expect.size(),
        detail::cat("the ", which, " yields ", y.operands.size(), " value(s), expected ", expect.size()));
  for (size_t i = 0; i < expect.size(); ++i)
    KILN_TILE_CHECK(op, y.operands[i] && y.operands[i]->type == expect[i]->type,
          detail::cat("the ", which, " yields ", y.operands[i] ? ts(y.operands[i]) : "null", " as value ", i,
                      ", expected ", ts(expect[i])));
}

}  // namespace

void verify_op(const Op& op) {
  switch (op.code) {
    case OpCode::ProgramId:
    case OpCode::NumPrograms:
      operands(op, 0, 0, "no operands");
      results(op, 1);
      KILN_TILE_CHECK(op, op.axis >= 0 && op.axis < 3, detail::cat("axis ", op.axis, " is not a grid axis (0, 1 or 2)"));
      KILN_TILE_CHECK(op, op.result()->type == Type::scalar(kInt32), "result must be i32, not " + ts(op.result()));
      break;
    case OpCode::Constant:
      operands(op, 0, 0, "no operands");
      results(op, 1);
      check_data(op, op.result(), "a constant");
      break;
    case OpCode::Arange: {
      operands(op, 0, 0, "no operands");
      results(op, 1);
      KILN_TILE_CHECK(op, op.end > op.start, detail::cat("arange(", op.start, ", ", op.end, ") is empty"),
            "end must be greater than start");
      const Type want = Type::block(kInt32, {op.end - op.start});
      KILN_TILE_CHECK(op, op.result()->type == want, "result must be " + want.str() + ", not " + ts(op.result()));
      break;
    }
    case OpCode::Splat: {
      operands(op, 1, 1, "one scalar");
      results(op, 1);
      const Type& in = op.operands[0]->type;
      const Type& out = op.result()->type;
      KILN_TILE_CHECK(op, !in.is_block(), "the operand must be a scalar, not " + in.str(), "use broadcast for blocks");
      KILN_TILE_CHECK(op, out.is_block() && out.element() == in, "result must be a block of " + in.str() + ", not " + out.str());
      break;
    }
    case OpCode::Broadcast: {
      operands(op, 1, 1, "one block");
      results(op, 1);
      const Type& in = op.operands[0]->type;
      const Type& out = op.result()->type;
      KILN_TILE_CHECK(op, in.is_block() && out.is_block() && in.rank() == out.rank() && in.element() == out.element(),
            "broadcasts a block to a block of the same element type and rank, not " + in.str() + " to " + out.str(),
            "expand_dims first to match ranks");
      for (int d = 0; d < in.rank(); ++d)
        KILN_TILE_CHECK(op, in.shape[d] == out.shape[d] || in.shape[d] == 1,
              detail::cat("cannot broadcast ", shape_text(in.shape), " to ", shape_text(out.shape), " (dim ", d,
                          ": ", in.shape[d], " is neither ", out.shape[d], " nor 1)"));
      break;
    }
    case OpCode::ExpandDims: {
      operands(op, 1, 1, "one value");
      results(op, 1);
      const Type& in = op.operands[0]->type;
      KILN_TILE_CHECK(op, op.axis >= 0 && op.axis <= in.rank(), detail::cat("axis ", op.axis, " is out of range for ", in.str()));
      std::vector<int64_t> shape = in.shape;
      shape.insert(shape.begin() + op.axis, 1);
      KILN_TILE_CHECK(op, op.result()->type == in.with_shape(shape),
            "result must be " + in.with_shape(shape).str() + ", not " + ts(op.result()));
      break;
    }
    case OpCode::Reshape: {
      operands(op, 1, 1, "one block");
      results(op, 1);
      const Type& in = op.operands[0]->type;
      const Type& out = op.result()->type;
      KILN_TILE_CHECK(op, in.is_block() && out.is_block() && in.element() == out.element(),
            "reshapes a block to a block of the same element type, not " + in.str() + " to " + out.str());
      KILN_TILE_CHECK(op, in.numel() == out.numel(),
            detail::cat("cannot reshape ", shape_text(in.shape), " (", in.numel(), " elements) to ",
                        shape_text(out.shape), " (", out.numel(), ")"));
      break;
    }
    case OpCode::Permute: {
      operands(op, 1, 1, "one block");
      results(op, 1);
      const Type& in = op.operands[0]->type;
      KILN_TILE_CHECK(op, in.is_block() && int(op.order.size()) == in.rank(),
            detail::cat("order has ", op.order.size(), " entries for a block of rank ", in.rank()));
      std::vector<int64_t> shape;
      std::set<int64_t> seen;
      for (int64_t d : op.order) {
        KILN_TILE_CHECK(op, d >= 0 && d < in.rank() && seen.insert(d).second,
              "order " + shape_text(op.order) + " is not a permutation of the dims");
        shape.push_back(in.shape[d]);
      }
      KILN_TILE_CHECK(op, op.result()->type == in.with_shape(shape),
            "result must be " + in.with_shape(shape).str() + ", not " + ts(op.result()));
      break;
    }
    case OpCode::AddPtr: {
      operands(op, 2, 2, "a pointer and offsets");
      results(op, 1);
      const Value *p = op.operands[0], *off = op.operands[1];
      KILN_TILE_CHECK(op, p->type.ptr, "the first operand must be a pointer, not " + ts(p));
      KILN_TILE_CHECK(op, !off->type.ptr && is_int(off->type.dtype), "offsets must be integers, not " + ts(off),
            "cast the offsets to i32 or i64");
      check_same_shape(op, p, off, "the pointer", "the offsets");
      KILN_TILE_CHECK(op, op.result()->type == p->type, "result must be " + ts(p) + ", not " + ts(op.result()));
      break;
    }
    case OpCode::Load:
    case OpCode::Store:
    case OpCode::AtomicAdd: {
      const bool load = op.code == OpCode::Load;
      if (load) operands(op, 1, 3, "a pointer, a mask and a value for masked-off elements");
      else operands(op, 2, 3, "a pointer, a value and a mask");
      results(op, op.code == OpCode::Store ? 0 : 1);
      const Value* p = op.operands[0];
      KILN_TILE_CHECK(op, p->type.ptr, "the first operand must be a pointer, not " + ts(p));
      const Type data = Type::block(p->type.dtype, p->type.shape);
      const Value* mask = load ? (op.operands.size() > 1 ? op.operands[1] : nullptr)
                               : (op.operands.size() > 2 ? op.operands[2] : nullptr);
      if (mask) {
        KILN_TILE_CHECK(op, !mask->type.ptr && mask->type.dtype == kBool, "the mask must be b8, not " + ts(mask),
              "compare to get a mask (offs < n)");
        check_same_shape(op, p, mask, "the pointer", "the mask");
      }
      const Value* v = load ? (op.operands.size() > 2 ? op.operands[2] : nullptr) : op.operands[1];
      if (v) {
        const char* what = load ? "other" : "the value";
        KILN_TILE_CHECK(op, v->type == data, detail::cat(what, " must be ", data.str(), " (the pointer's element type and shape), not ", ts(v)),
              "cast the value to the pointer's dtype");
      }
      if (op.code == OpCode::AtomicAdd)
        KILN_TILE_CHECK(op, p->type.dtype != kBool, "atomic_add is not defined for b8");
      if (!op.results.empty())
        KILN_TILE_CHECK(op, op.result()->type == data, "result must be " + data.str() + ", not " + ts(op.result()));
      break;
    }
    case OpCode::Cast: {
      operands(op, 1, 1, "one value");
      results(op, 1);
      check_data(op, op.operands[0], "the operand");
      check_data(op, op.result(), "the result");
      KILN_TILE_CHECK(op, op.result()->type.shape == op.operands[0]->type.shape, "a cast keeps the shape");
      break;
    }
    case OpCode::Pointwise: {
      const int arity = prim_arity(op.prim);
      KILN_TILE_CHECK(op, arity > 0, std::string(op.prim == ops::OpId::NumOps ? "?" : ops::op_info(op.prim).name) +
                               " is not a pointwise prim of ops.def");
      operands(op, arity, arity, arity == 1 ? "one operand" : arity == 2 ? "two operands" : "three operands");
      results(op, 1);
      KILN_TILE_CHECK(op, op.rounding == Rounding::None || op.prim == ops::OpId::div, "only div has a rounding mode");
      for (const Value* v : op.operands) {
        check_data(op, v, "an operand");
        check_same_shape(op, op.operands[0], v, "the first operand", "an operand");
      }
      const bool select = op.prim == ops::OpId::where;
      if (select) KILN_TILE_CHECK(op, op.operands[0]->type.dtype == kBool, "the condition must be b8, not " + ts(op.operands[0]));
      const Value* first = op.operands[select ? 1 : 0];
      for (size_t i = select ? 1 : 0; i < op.operands.size(); ++i)
        KILN_TILE_CHECK(op, op.operands[i]->type.dtype == first->type.dtype,
              "operands must have one dtype, got " + ts(first) + " and " + ts(op.operands[i]),
              "cast first (the builder promotes mixed dtypes as PyTorch does)");
      const DType d = first->type.dtype;
      KILN_TILE_CHECK(op, prim_supports(op.prim, d, op.rounding), op.name() + " is not defined for " + short_name(d),
            "cast the operands to a dtype it takes (e.g. f32)");
      const Type want = Type::block(prim_result_dtype(op.prim, d), first->type.shape);
      KILN_TILE_CHECK(op, op.result()->type == want, "result must be " + want.str() + ", not " + ts(op.result()));
      break;
    }
    case OpCode::Reduce:
    case OpCode::Scan: {
      operands(op, 1, 1, "one block");
      results(op, 1);
      const Type& in = op.operands[0]->type;
      KILN_TILE_CHECK(op, in.is_block() && !in.ptr, "the operand must be a block of data, not " + in.str());
      KILN_TILE_CHECK(op, op.axis >= 0 && op.axis < in.rank(), detail::cat("axis ", op.axis, " is out of range for ", in.str()));
      const bool arithmetic = op.code == OpCode::Reduce ? (op.reduce == ReduceKind::Sum || op.reduce == ReduceKind::Prod)
                                                        : (op.scan == ScanKind::Cumsum || op.scan == ScanKind::Cumprod);
      KILN_TILE_CHECK(op, !(arithmetic && in.dtype == kBool), op.name() + " is not defined for b8", "cast to i32 first");
      Type want = in;
      if (op.code == OpCode::Reduce) {
        want.shape.erase(want.shape.begin() + op.axis);
        if (op.reduce == ReduceKind::Argmax || op.reduce == ReduceKind::Argmin) want.dtype = kInt32;
      }
      KILN_TILE_CHECK(op, op.result()->type == want, "result must be " + want.str() + ", not " + ts(op.result()));
      break;
    }
    case OpCode::Dot: {
      operands(op, 3, 3, "a, b and the accumulator");
      results(op, 1);
      const Type &a = op.operands[0]->type, &b = op.operands[1]->type, &acc = op.operands[2]->type;
      KILN_TILE_CHECK(op, a.rank() == 2 && b.rank() == 2 && acc.rank() == 2 && !a.ptr && !b.ptr && !acc.ptr,
            "takes 2-d blocks a[M, K], b[K, N], acc[M, N], got " + a.str() + ", " + b.str() + ", " + acc.str());
      KILN_TILE_CHECK(op, a.shape[1] == b.shape[0] && acc.shape[0] == a.shape[0] && acc.shape[1] == b.shape[1],
            "shapes do not chain: " + a.str() + " @ " + b.str() + " into " + acc.str());
      KILN_TILE_CHECK(op, a.dtype == b.dtype && is_floating(a.dtype), "a and b must be of one float dtype, got " + a.str() + " and " + b.str());
      const DType want = a.dtype == kFloat64 ? kFloat64 : kFloat32;
      KILN_TILE_CHECK(op, acc.dtype == want, std::string("the accumulator must be ") + short_name(want) + ", not " + acc.str());
      KILN_TILE_CHECK(op, op.result()->type == acc, "result must be " + acc.str() + ", not " + ts(op.result()));
      break;
    }
    case OpCode::For: {
      KILN_TILE_CHECK(op, op.operands.size() >= 3, "takes lo, hi, step and the initial carried values");
      for (const Value* v : op.operands) KILN_TILE_CHECK(op, v != nullptr, "has a null operand");
      const Value* lo = op.operands[0];
      KILN_TILE_CHECK(op, !lo->type.is_block() && !lo->type.ptr && is_int(lo->type.dtype), "lo must be an integer scalar, not " + ts(lo));
      for (int i = 1; i < 3; ++i)
        KILN_TILE_CHECK(op, op.operands[i]->type == lo->type, "lo, hi and step must have one type, got " + ts(lo) + " and " + ts(op.operands[i]));
      const size_t n = op.operands.size() - 3;
      results(op, n);
      KILN_TILE_CHECK(op, op.regions.size() == 1, "has one region (the body)");
      const Region& body = op.regions[0];
      KILN_TILE_CHECK(op, body.args.size() == n + 1, detail::cat("the body takes the induction variable and ", n,
                                                       " carried value(s), has ", body.args.size(), " argument(s)"));
      KILN_TILE_CHECK(op, body.args[0]->type == lo->type, "the induction variable must be " + ts(lo));
      for (size_t i = 0; i < n; ++i) {
        KILN_TILE_CHECK(op, op.operands[3 + i]->type == op.results[i]->type && body.args[1 + i]->type == op.results[i]->type,
              detail::cat("carried value ", i, " is ", ts(op.operands[3 + i]), " initially, ", ts(body.args[1 + i]),
                          " in the body and ", ts(op.results[i]), " after"));
      }
      verify_region_yield(op, body, op.results, "body");
      break;
    }
    case OpCode::If: {
      operands(op, 1, 1, "a condition");
      KILN_TILE_CHECK(op, op.operands[0]->type == Type::scalar(kBool), "the condition must be a b8 scalar, not " + ts(op.operands[0]));
      for (size_t i = 0; i < op.results.size(); ++i)
        KILN_TILE_CHECK(op, op.results[i] && op.results[i]->def == &op && op.results[i]->index == int(i), "a result does not name this op");
      KILN_TILE_CHECK(op, op.regions.size() == 2, "has two regions (then, else)");
      for (int i = 0; i < 2; ++i) {
        KILN_TILE_CHECK(op, op.regions[i].args.empty(), "its branches take no arguments");
        verify_region_yield(op, op.regions[i], op.results, i == 0 ? "then branch" : "else branch");
      }
      break;
    }
    case OpCode::Yield:
      results(op, 0);
      break;
  }
}

namespace {

struct ScopeCheck {
  std::vector<std::set<const Value*>> scopes;

  bool defined(const Value* v) const {
    for (const auto& s : scopes)
      if (s.count(v)) return true;
    return false;
  }

  // `terminated`: the region is a For/If region, which ends with (and only there has) a yield.
  void region(const Region& r, bool terminated) {
    scopes.emplace_back(r.args.begin(), r.args.end());
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const Op& op = *r.ops[i];
      if (op.code == OpCode::Yield)
        KILN_TILE_CHECK(op, terminated && i + 1 == r.ops.size(),
              terminated ? "yield must be the last op of its region" : "yield outside a for or if region");
      verify_op(op);
      for (size_t k = 0; k < op.operands.size(); ++k)
        KILN_TILE_CHECK(op, defined(op.operands[k]),
              detail::cat("operand ", k, " (%", op.operands[k]->name.empty() ? std::to_string(op.operands[k]->id) : op.operands[k]->name,
                          ") is used before it is defined, or outside its region"));
      for (const Region& sub : op.regions) region(sub, true);
      for (const Value* v : op.results) KILN_TILE_CHECK(op, scopes.back().insert(v).second, "defines a value twice");
    }
    scopes.pop_back();
  }
};

}  // namespace

void verify(const Program& p) {
  const Origin none;
  auto bad = [&](const std::string& msg) { fail_at("kernel", none, "kernel " + p.name + ": " + msg); };
  if (p.params.size() > 64) bad(detail::cat(p.params.size(), " parameters; at most 64 are supported"));
  std::set<std::string> names;
  ScopeCheck sc;
  sc.scopes.emplace_back();
  for (const Param& prm : p.params) {
    if (!names.insert(prm.name).second) bad("two parameters are named " + prm.name);
    const Type& t = prm.value->type;
    bool ok = !t.is_block();
    switch (prm.kind) {
      case ParamKind::Pointer: ok = ok && t.ptr; break;
      case ParamKind::Int: ok = ok && !t.ptr && (t.dtype == kInt32 || t.dtype == kInt64); break;
      case ParamKind::Float: ok = ok && !t.ptr && (t.dtype == kFloat32 || t.dtype == kFloat64); break;
      case ParamKind::Sym: ok = ok && t == Type::scalar(kInt64); break;
    }
    if (!ok) bad("parameter " + prm.name + " has type " + t.str() + ", which its kind does not allow");
    sc.scopes.back().insert(prm.value);
  }
  for (const auto& [n, v] : p.meta.constexprs)
    if (!names.insert(n).second) bad("the meta-parameter " + n + " shares its name with another");
  sc.region(p.body, false);
}

}  // namespace kiln::tile
