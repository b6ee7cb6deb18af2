// Pointwise prims, constants and the creation prims full / iota, as functions of the index.
#include <kiln/ops.h>

#include "inductor/lower/lower.h"
#include "tile/prims.h"

namespace kiln::inductor {
namespace {

// The dtype a prim computes in: its output's, but for predicates (bool results), whose operands
// meet in their promoted dtype (wrapped numbers weakly, as eager).
DType compute_dtype(const graph::Node& n, const std::vector<graph::Value*>& ins) {
  const DType out = n.outputs[0]->spec.dtype;
  if (n.op == ops::OpId::where) return out;
  if (out != kBool || ins.empty()) return out;
  std::vector<Tensor> fakes;
  for (const graph::Value* v : ins) fakes.push_back(graph::fake_of(v));
  return result_type(fakes);
}

tile::Rounding rounding_of(const graph::Node& n) {
  if (n.op != ops::OpId::div) return tile::Rounding::None;
  const auto* mode = std::get_if<std::string>(&n.args.at(2));
  if (!mode) return tile::Rounding::None;
  return *mode == "trunc" ? tile::Rounding::Trunc : tile::Rounding::Floor;
}

bool lower_constant(Lowering& L, const graph::Node& n) {
  const Tensor& lit = n.literal;
  Def d;
  d.dtype = lit.dtype();
  d.sizes = lit.sym_sizes();
  if (lit.dim() == 0) {
    const Value* c = L.prog().constant(lit.item_scalar(), lit.dtype());
    d.fn = [c](const Index&) { return c; };
  } else {
    Buffer b;
    b.kind = BufferKind::Constant;
    b.dtype = lit.dtype();
    b.sizes = lit.sym_sizes();
    b.strides = contiguous_strides(b.sizes);
    b.literal = lit;
    d.buffer = L.prog().add_buffer(std::move(b));
  }
  L.set(n.outputs[0], std::move(d));
  return true;
}

bool lower_creation(Lowering& L, const graph::Node& n) {
  const graph::Value* out = n.outputs[0];
  Program& P = L.prog();
  Def d;
  d.dtype = out->spec.dtype;
  d.sizes = out->spec.sizes;
  if (n.op == ops::OpId::full) {
    const Value* c = P.constant(std::get<kiln::Scalar>(n.args.at(1)), d.dtype);
    d.fn = [c](const Index&) { return c; };
  } else if (n.op == ops::OpId::iota) {
    // start + i * step, in f64 for float dtypes (then rounded once), in i64 for integers.
    const kiln::Scalar start = std::get<kiln::Scalar>(n.args.at(1)), step = std::get<kiln::Scalar>(n.args.at(2));
    const DType dt = d.dtype, wide = is_floating(dt) ? kFloat64 : kInt64;
    if (!is_floating(dt) && (start.is_float() || step.is_float())) return false;
    d.ops = 3;
    d.fn = [&P, start, step, dt, wide](const Index& idx) {
      Value iv;
      iv.kind = ValueKind::Index;
      iv.dtype = kInt64;
      iv.index = idx.at(0);
      const Value* i = P.cast(P.make(std::move(iv)), wide);
      const Value* v = P.call(ops::OpId::add, {P.call(ops::OpId::mul, {i, P.constant(step, wide)}, wide), P.constant(start, wide)}, wide);
      return P.cast(v, dt);
    };
  } else {
    return false;  // empty: an extern (its contents are whatever the allocator gives)
  }
  L.set(out, std::move(d));
  return true;
}

}  // namespace

bool lower_pointwise(Lowering& L, const graph::Node& n) {
  if (n.kind == graph::NodeKind::Constant) return lower_constant(L, n);
  if (ops::op_info(n.op).family == ops::OpFamily::CREATION) return lower_creation(L, n);
  if (ops::op_info(n.op).kind != ops::OpKind::PRIM || n.outputs.size() != 1) return false;
  const graph::Value* out = n.outputs[0];
  for (const graph::Value* v : n.inputs())
    if (!v->spec.device.is_cpu()) return false;
  if (!out->spec.device.is_cpu()) return false;
  const std::vector<graph::Value*> ins = n.inputs();
  const DType od = out->spec.dtype, cd = compute_dtype(n, ins);
  const tile::Rounding r = rounding_of(n);
  const bool is_cast = n.op == ops::OpId::convert_element_type;
  if (!is_cast && (!tile::is_prim(n.op) || !tile::prim_supports(n.op, cd, r))) return false;

  Def d;
  d.dtype = od;
  d.sizes = out->spec.sizes;
  d.ops = 1;
  std::vector<Loader> loads;
  std::vector<SymShape> shapes;
  for (const graph::Value* v : ins) {
    loads.push_back(L.loader(v));  // (may realize v)
    shapes.push_back(v->spec.sizes);
    d.reads_operand(L.def(v));
  }
  Program& P = L.prog();
  const ops::OpId op = n.op;
  d.fn = [&P, loads, shapes, op, od, cd, r, is_cast](const Index& idx) {
    std::vector<const Value*> args;
    for (size_t i = 0; i < loads.size(); ++i) {
      const Value* a = loads[i](broadcast_index(idx, shapes[i]));
      // where's condition stays bool; every other operand meets in the compute dtype.
      if (!(op == ops::OpId::where && i == 0) && !is_cast) a = P.cast(a, cd);
      args.push_back(a);
    }
    if (is_cast) return P.cast(args.at(0), od);
    return P.cast(P.call(op, std::move(args), tile::prim_result_dtype(op, cd), r), od);
  };
  L.set(out, std::move(d));
  return true;
}

}  // namespace kiln::inductor
