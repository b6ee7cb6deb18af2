// Every node no family lowers (matmul, convolution, sort, indexing, random, copy_ ...) runs
// through the eager dispatcher as an Extern: its tensor arguments are realized into buffers, and
// its outputs are buffers laid out as their specs say (what the op's meta promises).
#include "inductor/lower/lower.h"

namespace kiln::inductor {

void lower_extern(Lowering& L, const graph::Node& n) {
  // A write into an input (copy_ at the end of a functional graph): values that read the old
  // contents are computed first.
  if (n.kind == graph::NodeKind::Call && (ops::op_info(n.op).flags & ops::MUTATES)) L.realize_live_after(n);
  Node node;
  node.kind = NodeKind::Extern;
  node.call = &n;
  for (const graph::Value* v : n.inputs()) node.inputs.push_back(L.realize(v));
  node.origins = {graph::origin_of(n)};
  Program& P = L.prog();
  const int index = int(P.nodes.size());
  for (const graph::Value* v : n.outputs) {
    Buffer b;
    b.dtype = v->spec.dtype;
    b.sizes = v->spec.sizes;
    b.strides = v->spec.strides;
    b.offset = v->spec.offset;
    b.producer = index;
    const int buf = P.add_buffer(std::move(b));
    node.outputs.push_back(buf);
    Def d;
    d.dtype = v->spec.dtype;
    d.sizes = v->spec.sizes;
    d.buffer = buf;
    L.set(v, std::move(d));
  }
  P.nodes.push_back(std::move(node));
}

}  // namespace kiln::inductor
