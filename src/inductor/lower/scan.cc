// cumsum / cumprod: a Scan node along the scanned dim, whose body is the input's value (inlined:
// its pointwise prologue) at the output index. As eager (src/eager/cpu/scan.cc) the input is
// first converted to the output dtype, then floats accumulate in f64 and integers in i64
// (wrapping), each running value rounded to the output dtype when stored. cummax / cummin (two
// outputs) stay externs.
#include "inductor/lower/lower.h"
#include "ops/meta/meta_util.h"
#include "tile/prims.h"

namespace kiln::inductor {

bool lower_scan(Lowering& L, const graph::Node& n) {
  if (n.kind != graph::NodeKind::Call || (n.op != ops::OpId::cumsum && n.op != ops::OpId::cumprod)) return false;
  const graph::Value* in = n.inputs().at(0);
  const graph::Value* out = n.outputs.at(0);
  if (!in->spec.device.is_cpu()) return false;
  const DType od = out->spec.dtype;
  if (od == kBool) return false;  // (eager refuses it too)
  const DType acc = is_floating(od) ? kFloat64 : kInt64;
  const ops::OpId combine = n.op == ops::OpId::cumsum ? ops::OpId::add : ops::OpId::mul;
  if (!tile::prim_supports(combine, acc)) return false;
  const SymShape& sizes = out->spec.sizes;
  if (sizes.empty()) return false;  // a 0-d scan is a copy: left to eager

  Node node;
  node.kind = NodeKind::Scan;
  node.scan = n.op == ops::OpId::cumsum ? tile::ScanKind::Cumsum : tile::ScanKind::Cumprod;
  node.ranges = sizes;
  node.vars = index_vars("i", sizes);
  node.scan_axis = int(ops::wrap_dim(std::get<int64_t>(n.args.at(1)), int64_t(sizes.size())));
  Loader load = L.loader(in);
  const Def& a = L.def(in);
  if (a.buffer < 0) node.origins = a.origins;
  node.origins.push_back(graph::origin_of(n));
  Program& P = L.prog();
  node.bodies = {P.cast(P.cast(load(node.vars), od), acc)};
  Def d;
  d.dtype = od;
  d.sizes = sizes;
  d.buffer = L.add_kernel_node(std::move(node), od, sizes);
  L.set(out, std::move(d));
  return true;
}

}  // namespace kiln::inductor
