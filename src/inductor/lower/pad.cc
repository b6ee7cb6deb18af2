// constant_pad as index math: out[j] = x[j - lo] where 0 <= j - lo < size, else the fill value, per
// padded dim (negative pads crop). Its reader fuses it (split's backward sums three padded
// gradients in one kernel instead of filling and copying three buffers first). x's loads are
// masked by that condition (Program::under_mask), not clamped into x: the index stays affine in
// j, so a kernel's block of j reads x contiguously (a clamped index is a gather per lane).
#include "inductor/lower/lower.h"

namespace kiln::inductor {

bool lower_pad(Lowering& L, const graph::Node& n) {
  if (n.op != ops::OpId::constant_pad || n.outputs.size() != 1 || n.args.size() < 3) return false;
  const graph::Value* in = n.inputs().at(0);
  const graph::Value* out = n.outputs[0];
  if (!in->spec.device.is_cpu() || !out->spec.device.is_cpu()) return false;
  SymShape pad;
  if (const auto* s = std::get_if<SymShape>(&n.args[1])) pad = *s;
  else if (const auto* v = std::get_if<std::vector<int64_t>>(&n.args[1])) pad.assign(v->begin(), v->end());
  else return false;
  const auto* fill = std::get_if<kiln::Scalar>(&n.args[2]);
  const DType dt = out->spec.dtype;
  // (A float fill into an integer tensor converts as eager's fill does: left to the extern.)
  if (!fill || (!is_floating(dt) && fill->is_float()) || pad.size() % 2 || pad.size() / 2 > in->spec.sizes.size())
    return false;
  for (const SymInt& s : in->spec.sizes)  // (an empty x: the extern fills)
    if (!sym::statically_known_leq(sym::constant(1), s.as_expr())) return false;

  const Def& src = L.def(in);
  Def d;
  d.dtype = dt;
  d.sizes = out->spec.sizes;
  d.ops = 1 + (src.buffer < 0 ? src.ops : 0);
  d.reads = src.buffer < 0 ? src.reads : 1;
  if (src.buffer < 0) d.origins = src.origins;
  const Loader x = L.loader(in);
  Program& P = L.prog();
  const SymShape sizes = in->spec.sizes;
  const kiln::Scalar value = *fill;
  d.fn = [&P, x, pad, sizes, dt, value](const Index& idx) {
    Index at = idx;
    std::map<ExprPtr, ExprPtr> position;  // per padded dim: its variable in [0, size) -> idx - lo
    const Value* inside = nullptr;
    auto index_value = [&](const ExprPtr& e) {
      Value v;
      v.kind = ValueKind::Index;
      v.dtype = kInt64;
      v.index = e;
      return P.make(std::move(v));
    };
    for (size_t i = 0; i < pad.size() / 2; ++i) {
      const size_t dim = sizes.size() - 1 - i;  // pads list the last dim first
      const SymInt &lo = pad[2 * i], &hi = pad[2 * i + 1];
      const ExprPtr j = sym::sub(idx[dim], lo.as_expr());  // the position in x
      // x is read at a variable known to be in [0, size) (what the mask guarantees), so a view
      // of x divides it as it would its own index; then the variable becomes j again.
      at[dim] = sym::index("pad" + std::to_string(i), sizes[dim].as_expr());
      position[at[dim]] = j;
      const Value* pos = index_value(j);
      std::vector<const Value*> conds;
      if (!sym::statically_known_leq(lo.as_expr(), sym::constant(0)))
        conds.push_back(P.call(ops::OpId::ge, {pos, P.constant(kiln::Scalar(int64_t(0)), kInt64)}, kBool));
      if (!sym::statically_known_leq(hi.as_expr(), sym::constant(0)))
        conds.push_back(P.call(ops::OpId::lt, {pos, index_value(sizes[dim].as_expr())}, kBool));
      for (const Value* c : conds) inside = inside ? P.call(ops::OpId::logical_and, {inside, c}, kBool) : c;
    }
    if (!inside) return P.under_mask(x(at), P.constant(kiln::Scalar(true), kBool), position);  // (a crop)
    return P.call(ops::OpId::where, {inside, P.under_mask(x(at), inside, position), P.constant(value, dt)}, dt);
  };
  L.set(out, std::move(d));
  return true;
}

}  // namespace kiln::inductor
