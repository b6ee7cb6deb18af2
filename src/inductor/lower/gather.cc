// gather and index_select (embedding, nll_loss and cross_entropy's target pick decompose to
// them) as indirect loads: out[i] = self[i with `dim` replaced by the index's value there], a
// function of the index like any pointwise value, so a reader inlines it and the gathered
// operand is never materialized (cross_entropy reads its log-softmax at one column per row).
// The index value is checked in the kernel (a Check value): in [0, size) it is the position;
// outside it the load reads position 0 (memory stays safe), the kernel records the index and the
// plan raises the error eager gives for the op the user called (index_error.h); the value there
// (NaN for floating dtypes, else 0) is never returned.
// scatter_add with a few positions per row (gather's derivative: cross_entropy's backward adds the
// gradient at the target column) is the reverse, a where on the position: out[i] = self[i] plus
// src[i with dim = j] for each j whose index there equals i[dim], in j's order (as eager adds).
#include "inductor/lower/lower.h"
#include "ops/meta/meta_util.h"
#include "tile/prims.h"

#include <limits>

namespace kiln::inductor {

bool lower_gather(Lowering& L, const graph::Node& n) {
  const bool is_gather = n.op == ops::OpId::gather;
  if ((!is_gather && n.op != ops::OpId::index_select) || n.outputs.size() != 1) return false;
  const std::vector<graph::Value*> ins = n.inputs();
  if (ins.size() != 2) return false;
  const graph::Value *self = ins[0], *index = ins[1], *out = n.outputs[0];
  for (const graph::Value* v : {self, index, out})
    if (!v->spec.device.is_cpu()) return false;
  const DType dt = out->spec.dtype;
  const int64_t rank = int64_t(self->spec.sizes.size());
  if (rank == 0 || !is_integral(index->spec.dtype) || !tile::prim_supports(ops::OpId::where, dt)) return false;
  if (is_gather ? index->spec.sizes.size() != size_t(rank) : index->spec.sizes.size() > 1) return false;
  const size_t dim = size_t(ops::wrap_dim(std::get<int64_t>(n.args.at(1)), rank));
  const SymInt size = self->spec.sizes[dim];
  if (sym::statically_known_equal(size, SymInt(0))) return false;  // (nothing to read: eager's error)

  Def d;
  d.dtype = dt;
  d.sizes = out->spec.sizes;
  d.ops = 6;
  Loader at = L.loader(index), src = L.loader(self);  // (may realize them)
  for (const graph::Value* v : {index, self}) {
    d.reads_operand(L.def(v));
  }
  Program& P = L.prog();
  const bool one_index = index->spec.sizes.empty();
  const kiln::Scalar poison = is_floating(dt) ? kiln::Scalar(std::numeric_limits<double>::quiet_NaN())
                             : dt == kBool    ? kiln::Scalar(false)
                                              : kiln::Scalar(int64_t(0));
  const graph::Origin origin = graph::origin_of(n);  // the op the user called, whose error an index out of range raises
  const ops::OpId user_op = origin.known() ? origin.op : n.op;
  d.fn = [&P, at, src, is_gather, one_index, dim, size, dt, poison, user_op](const Index& i) {
    const Value* t = P.cast(at(is_gather ? i : one_index ? Index{} : Index{i.at(dim)}), kInt64);
    const Value* zero = P.constant(kiln::Scalar(int64_t(0)), kInt64);
    const Value* n = P.constant(kiln::Scalar(size.hint()), kInt64);
    if (size.is_symbolic()) {  // the size symbol's value
      Value v;
      v.kind = ValueKind::Index;
      v.dtype = kInt64;
      v.index = size.as_expr();
      n = P.make(std::move(v));
    }
    Value check;  // in range, else the op's error
    check.kind = ValueKind::Check;
    check.dtype = kBool;
    check.op = user_op;
    check.args = {P.call(ops::OpId::logical_and, {P.call(ops::OpId::ge, {t, zero}, kBool), P.call(ops::OpId::lt, {t, n}, kBool)}, kBool), t, n};
    const Value* in_range = P.make(std::move(check));
    Index s = i;  // one position along dim: no gather variable
    s[dim] = known_one(size) ? sym::constant(0) : P.gather_symbol(P.call(ops::OpId::where, {in_range, t, zero}, kInt64), size);
    return P.call(ops::OpId::where, {in_range, src(s), P.constant(poison, dt)}, dt);
  };
  L.set(out, std::move(d));
  return true;
}

bool lower_scatter_add(Lowering& L, const graph::Node& n) {
  constexpr int64_t kMostPositions = 4;  // index.size(dim): the where chain's length
  if (n.op != ops::OpId::scatter_add || n.outputs.size() != 1) return false;
  const std::vector<graph::Value*> ins = n.inputs();
  if (ins.size() != 3) return false;
  const graph::Value *self = ins[0], *index = ins[1], *src = ins[2], *out = n.outputs[0];
  for (const graph::Value* v : {self, index, src, out})
    if (!v->spec.device.is_cpu()) return false;
  const DType dt = out->spec.dtype;
  const SymShape &ss = self->spec.sizes, &is = index->spec.sizes;
  const int64_t rank = int64_t(ss.size());
  if (rank == 0 || is.size() != ss.size() || src->spec.sizes.size() != ss.size() || src->spec.dtype != dt ||
      !is_integral(index->spec.dtype) || !tile::prim_supports(ops::OpId::add, dt) || !tile::prim_supports(ops::OpId::where, dt))
    return false;
  const size_t dim = size_t(ops::wrap_dim(std::get<int64_t>(n.args.at(1)), rank));
  int64_t k = 0;
  if (!sym::is_const(is[dim].as_expr(), &k) || k < 1 || k > kMostPositions) return false;
  for (size_t d = 0; d < ss.size(); ++d)  // every element of self has its row of positions
    if (d != dim && !sym::statically_known_equal(is[d], ss[d])) return false;

  Def d;
  d.dtype = dt;
  d.sizes = out->spec.sizes;
  d.ops = 3 * int(k);
  Loader base = L.loader(self), at = L.loader(index), add = L.loader(src);
  for (const graph::Value* v : {self, index, src}) {
    d.reads_operand(L.def(v));
  }
  Program& P = L.prog();
  d.fn = [&P, base, at, add, dim, k, dt](const Index& i) {
    Value pos;  // i[dim] as a number
    pos.kind = ValueKind::Index;
    pos.dtype = kInt64;
    pos.index = i.at(dim);
    const Value* here = P.make(std::move(pos));
    const Value* v = base(i);
    for (int64_t j = 0; j < k; ++j) {
      Index ij = i;
      ij[dim] = sym::constant(j);
      const Value* hit = P.call(ops::OpId::eq, {P.cast(at(ij), kInt64), here}, kBool);
      v = P.call(ops::OpId::where, {hit, P.call(ops::OpId::add, {v, add(ij)}, dt), v}, dt);
    }
    return v;
  };
  L.set(out, std::move(d));
  return true;
}

}  // namespace kiln::inductor
