// Every node no family lowers (matmul, convolution, sort, indexing, random, copy_ ...) runs
// through the eager dispatcher as an Extern: its tensor arguments are realized into buffers, and
// its outputs are buffers laid out as their specs say (what the op's meta promises), but for a
// matmul read only through transposes, which is stored transposed.
#include "inductor/lower/lower.h"
#include "ops/family.h"

namespace kiln::inductor {
namespace {

bool same(const SymShape& a, const SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!sym::statically_known_equal(a[d], b[d])) return false;
  return true;
}

// Whether every reader of v (a matmul's product, or a view of it with its sizes and strides) is
// a transpose of the last two dims that kernels read (externs would need the transpose copied
// into the layout its spec says).
bool read_through_transposes(const graph::Graph& g, const graph::Value* v) {
  const size_t rank = v->spec.sizes.size();
  if (g.is_output(v) || v->users.empty()) return false;
  for (const graph::Node* u : v->users) {
    if (u->kind != graph::NodeKind::Call || u->inputs().size() != 1 || u->outputs.size() != 1) return false;
    const graph::Value* out = u->outputs[0];
    if (u->op != ops::OpId::permute) {  // a view that changes nothing (a reshape to the same shape)
      if (ops::kOpFamily[size_t(u->op)] != ops::OpFamily::VIEW || !same(out->spec.sizes, v->spec.sizes) ||
          !same(out->spec.strides, v->spec.strides) || !sym::statically_known_equal(out->spec.offset, v->spec.offset) ||
          !read_through_transposes(g, out))
        return false;
      continue;
    }
    const auto* perm = std::get_if<std::vector<int64_t>>(&u->args.at(1));
    if (!perm || perm->size() != rank || g.is_output(out)) return false;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t want = d + 2 < rank ? int64_t(d) : int64_t(d + 2 == rank ? rank - 1 : rank - 2);
      if ((*perm)[d] != want && (*perm)[d] != want - int64_t(rank)) return false;
    }
    for (const graph::Node* r : out->users) {
      const ops::OpFamily f = r->kind == graph::NodeKind::Call ? ops::kOpFamily[size_t(r->op)] : ops::OpFamily::VIEW;
      if (f != ops::OpFamily::POINTWISE && f != ops::OpFamily::REDUCTION) return false;
    }
  }
  return true;
}

// Whether a matmul's product is read only through transposes of its last two dims (a linear
// layer's weight gradient x^T g, transposed into the weight's shape): its buffer is then laid out
// transposed, so that the transposes read it in order. The plan computes such a product as
// (y^T x^T)^T (plan.cc: an extern matmul whose buffer's strides are not its value's).
bool read_transposed(const Lowering& L, const graph::Node& n) {
  if (n.op != ops::OpId::matmul || n.outputs.size() != 1) return false;
  const graph::Value* out = n.outputs[0];
  const size_t rank = out->spec.sizes.size();
  if (rank < 2 || !is_floating(out->spec.dtype)) return false;
  for (const graph::Value* v : n.inputs())
    if (v->spec.sizes.size() < 2) return false;
  for (size_t d = rank - 2; d < rank; ++d)  // (a row or a column is laid out the same either way)
    if (sym::statically_known_equal(out->spec.sizes[d], SymInt(1))) return false;
  return read_through_transposes(L.graph(), out);
}

// The strides of sizes [..., m, n] stored as the contiguous [..., n, m] transposed back.
SymShape transposed_strides(const SymShape& sizes) {
  SymShape swapped = sizes;
  std::swap(swapped[sizes.size() - 1], swapped[sizes.size() - 2]);
  SymShape st = contiguous_strides(swapped);
  std::swap(st[sizes.size() - 1], st[sizes.size() - 2]);
  return st;
}

}  // namespace

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
  const bool transposed = read_transposed(L, n);
  for (const graph::Value* v : n.outputs) {
    Buffer b;
    b.dtype = v->spec.dtype;
    b.sizes = v->spec.sizes;
    b.strides = transposed ? transposed_strides(v->spec.sizes) : v->spec.strides;
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
