// cumsum / cumprod / cummax / cummin: a Scan node along the scanned dim, whose body is the
// input's value (inlined: its pointwise prologue) at the output index. As eager
// (src/eager/cpu/scan.cc): for cumsum / cumprod the input is first converted to the output
// dtype, then floats accumulate in f64 and integers in i64 (wrapping), each running value
// rounded to the output dtype when stored; cummax / cummin write two buffers, the running best
// (a NaN takes over and stays; an equal later value takes over) and its position along the dim.
#include "inductor/lower/lower.h"
#include "ops/meta/meta_util.h"
#include "tile/prims.h"

namespace kiln::inductor {

bool lower_scan(Lowering& L, const graph::Node& n) {
  if (n.kind != graph::NodeKind::Call) return false;
  tile::ScanKind kind;
  switch (n.op) {
    case ops::OpId::cumsum: kind = tile::ScanKind::Cumsum; break;
    case ops::OpId::cumprod: kind = tile::ScanKind::Cumprod; break;
    case ops::OpId::cummax: kind = tile::ScanKind::Cummax; break;
    case ops::OpId::cummin: kind = tile::ScanKind::Cummin; break;
    default: return false;
  }
  const bool extreme = kind == tile::ScanKind::Cummax || kind == tile::ScanKind::Cummin;
  const graph::Value* in = n.inputs().at(0);
  const graph::Value* out = n.outputs.at(0);
  if (!in->spec.device.is_cpu() || in->spec.dtype == kBool) return false;
  const DType od = out->spec.dtype;
  if (od == kBool) return false;  // (eager refuses it too)
  // cummax / cummin compare 16-bit floats in f32 (exactly).
  const DType acc = extreme ? (od == kFloat16 || od == kBFloat16 ? kFloat32 : od) : is_floating(od) ? kFloat64 : kInt64;
  const ops::OpId combine = kind == tile::ScanKind::Cumsum ? ops::OpId::add : kind == tile::ScanKind::Cumprod ? ops::OpId::mul : ops::OpId::maximum;
  if (!tile::prim_supports(combine, acc)) return false;
  const SymShape& sizes = out->spec.sizes;
  if (sizes.empty()) return false;  // a 0-d scan is a copy: left to eager

  Node node;
  node.kind = NodeKind::Scan;
  node.scan = kind;
  node.ranges = sizes;
  node.vars = index_vars("i", sizes);
  node.scan_axis = int(ops::wrap_dim(std::get<int64_t>(n.args.at(1)), int64_t(sizes.size())));
  Loader load = L.loader(in);
  const Def& a = L.def(in);
  if (a.buffer < 0) node.origins = a.origins;
  node.origins.push_back(graph::origin_of(n));
  Program& P = L.prog();
  node.bodies = {P.cast(extreme ? load(node.vars) : P.cast(load(node.vars), od), acc)};
  Def d;
  d.dtype = od;
  d.sizes = sizes;
  const Value* body = node.bodies[0];
  d.buffer = L.add_kernel_node(std::move(node), od, sizes);
  L.set(out, std::move(d));
  if (extreme) {  // the positions: the node's second buffer (storing the same value: its position is what lands)
    Buffer b;
    b.dtype = kInt64;
    b.sizes = sizes;
    b.strides = contiguous_strides(sizes);
    b.producer = int(P.nodes.size()) - 1;
    const int buf = P.add_buffer(std::move(b));
    P.nodes.back().outputs.push_back(buf);
    P.nodes.back().bodies.push_back(body);
    Def di;
    di.dtype = kInt64;
    di.sizes = sizes;
    di.buffer = buf;
    L.set(n.outputs.at(1), std::move(di));
  }
  return true;
}

}  // namespace kiln::inductor
