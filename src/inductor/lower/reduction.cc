// sum / prod / amax / amin along dims: a Reduction node whose body reads its input (inlined:
// the reduction's pointwise prologue) at the output index and the reduction variables.
#include "inductor/lower/lower.h"
#include "ops/meta/meta_util.h"
#include "tile/prims.h"

namespace kiln::inductor {

// The Reduction node of graph node n reducing `in` along its `reduced` dims into `out`: the body
// reads `in` (inlined: the reduction's pointwise prologue) at the output index and the reduction
// variables, cast to `body_dtype`. Shared by sum / prod / amax / amin and argmax / argmin.
void add_reduction_node(Lowering& L, const graph::Node& n, tile::ReduceKind kind, const std::vector<bool>& reduced,
                        bool keepdim, DType body_dtype) {
  const graph::Value* in = n.inputs().at(0);
  const graph::Value* out = n.outputs.at(0);
  const SymShape& isz = in->spec.sizes;
  const int64_t rank = int64_t(isz.size());
  Node node;
  node.kind = NodeKind::Reduction;
  node.reduce = kind;
  node.ranges = out->spec.sizes;
  node.vars = index_vars("i", node.ranges);
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[size_t(d)]) node.reduction_ranges.push_back(isz[size_t(d)]);
  node.reduction_vars = index_vars("r", node.reduction_ranges);
  // The input index: reduced dims from the reduction variables, the others from the output's
  // (keepdim's size-1 dims skipped).
  Index idx;
  size_t o = 0, r = 0;
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[size_t(d)]) {
      idx.push_back(node.reduction_vars[r++]);
      if (keepdim) ++o;
    } else {
      idx.push_back(node.vars.at(o++));
    }
  }
  Loader load = L.loader(in);
  const Def& a = L.def(in);
  if (a.buffer < 0) node.origins = a.origins;
  graph::Origin mine = graph::origin_of(n);
  if (node.origins.empty() || !(node.origins.back() == mine)) node.origins.push_back(mine);
  node.bodies = {L.prog().cast(load(idx), body_dtype)};
  Def d;
  d.dtype = out->spec.dtype;
  d.sizes = out->spec.sizes;
  d.buffer = L.add_kernel_node(std::move(node), d.dtype, d.sizes);
  L.set(out, std::move(d));
}

bool lower_reduction(Lowering& L, const graph::Node& n) {
  tile::ReduceKind kind;
  switch (n.op) {
    case ops::OpId::sum: kind = tile::ReduceKind::Sum; break;
    case ops::OpId::prod: kind = tile::ReduceKind::Prod; break;
    case ops::OpId::amax: kind = tile::ReduceKind::Max; break;
    case ops::OpId::amin: kind = tile::ReduceKind::Min; break;
    default: return false;  // (argmax / argmin: arg_reduction.cc)
  }
  const graph::Value* in = n.inputs().at(0);
  const graph::Value* out = n.outputs.at(0);
  if (!in->spec.device.is_cpu()) return false;
  const SymShape& isz = in->spec.sizes;
  const int64_t rank = int64_t(isz.size());
  std::optional<std::vector<int64_t>> dims;
  if (auto* l = std::get_if<std::vector<int64_t>>(&n.args.at(1))) dims = *l;
  std::vector<int64_t> wrapped = ops::wrap_dims(dims, rank);
  if (rank == 0) wrapped.clear();  // a 0-d tensor's dim 0 / -1 is itself
  if (rank > 0 && dims && dims->empty()) {  // dim=[]: every dim, as eager
    wrapped.clear();
    for (int64_t d = 0; d < rank; ++d) wrapped.push_back(d);
  }
  const bool keepdim = std::get<bool>(n.args.at(2));
  std::vector<bool> reduced(size_t(rank), false);
  for (int64_t d : wrapped) reduced[size_t(d)] = true;

  // Accumulate 16-bit floats in f32 (as eager), everything else in the output dtype.
  const DType od = out->spec.dtype;
  const DType acc = (od == kFloat16 || od == kBFloat16) ? kFloat32 : od;
  const ops::OpId combine = kind == tile::ReduceKind::Sum ? ops::OpId::add
                            : kind == tile::ReduceKind::Prod ? ops::OpId::mul
                            : kind == tile::ReduceKind::Max ? ops::OpId::maximum : ops::OpId::minimum;
  if (!tile::prim_supports(combine, acc)) return false;

  add_reduction_node(L, n, kind, reduced, keepdim, acc);
  return true;
}

}  // namespace kiln::inductor
