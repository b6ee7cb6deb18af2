// argmax / argmin: a Reduction node (reduce argmax / argmin) whose body is its input's value at
// the output index and the reduction variables, and whose result is the position of the best
// value along the reduced elements (row-major over them: dim=None flattens every dim, as eager).
// emit_tile.cc carries (best value, its position) per lane: the first maximum (minimum) wins and
// a NaN beats every number, as eager.
#include "inductor/lower/lower.h"
#include "ops/meta/meta_util.h"

namespace kiln::inductor {

bool lower_arg_reduction(Lowering& L, const graph::Node& n) {
  if (n.kind != graph::NodeKind::Call || (n.op != ops::OpId::argmax && n.op != ops::OpId::argmin)) return false;
  const graph::Value* in = n.inputs().at(0);
  const graph::Value* out = n.outputs.at(0);
  if (!in->spec.device.is_cpu() || out->spec.dtype != kInt64 || in->spec.dtype == kBool) return false;
  const SymShape& isz = in->spec.sizes;
  const int64_t rank = int64_t(isz.size());
  const int64_t* dim = std::get_if<int64_t>(&n.args.at(1));
  const bool keepdim = std::get<bool>(n.args.at(2));
  std::vector<bool> reduced(size_t(rank), dim == nullptr);  // dim=None: every dim
  if (dim && rank > 0) reduced[size_t(ops::wrap_dim(*dim, rank))] = true;

  // 16-bit floats compare in f32 (exactly: the conversion keeps order and NaN).
  const DType vd = in->spec.dtype == kFloat16 || in->spec.dtype == kBFloat16 ? kFloat32 : in->spec.dtype;
  add_reduction_node(L, n, n.op == ops::OpId::argmax ? tile::ReduceKind::Argmax : tile::ReduceKind::Argmin, reduced,
                     keepdim, vd);
  return true;
}

}  // namespace kiln::inductor
