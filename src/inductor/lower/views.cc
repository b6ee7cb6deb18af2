// View prims as index arithmetic. A view's spec (sizes, strides, storage offset) says where each
// of its elements lies in the storage of the value that owns it (its root: views of views share
// it), so one rule serves every view op (view, broadcast_in_dim, expand, permute, slice,
// squeeze, unsqueeze, as_strided, diagonal): element idx lies at position
// p = offset + sum idx[d] * strides[d] of the root's storage, which is
//   - a load at p - root offset when the root is a buffer laid out as its spec says, or
//   - the root's element at the row-major index of p when the root is contiguous and not
//     computed yet (the index math folds into the root's function: nothing is copied), or
//     computed into a buffer of another layout (a load through that buffer's strides).
#include "inductor/lower/lower.h"

namespace kiln::inductor {
namespace {

bool same_strides(const SymShape& sizes, const SymShape& a, const SymShape& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!known_one(sizes[d]) && !sym::statically_known_equal(a[d], b[d])) return false;
  return true;
}

// The row-major index of flat position q in sizes.
Index unflatten(const ExprPtr& q, const SymShape& sizes) {
  Index idx(sizes.size());
  // A root with a size-0 dim has no elements: no index is ever read (and its strides and sizes
  // would divide by zero).
  for (const SymInt& s : sizes)
    if (sym::statically_known_equal(s, SymInt(0))) {
      for (ExprPtr& e : idx) e = SymInt(0).as_expr();
      return idx;
    }
  const SymShape st = contiguous_strides(sizes);
  for (size_t d = 0; d < sizes.size(); ++d) {
    ExprPtr e = sym::floordiv(q, st[d].as_expr());
    if (d > 0) e = sym::mod(e, sizes[d].as_expr());
    idx[d] = e;
  }
  return idx;
}

}  // namespace

bool lower_view(Lowering& L, const graph::Node& n) {
  if (ops::op_info(n.op).kind != ops::OpKind::VIEW || n.outputs.size() != 1) return false;
  const graph::Value* in = n.inputs().at(0);
  const graph::Value* out = n.outputs[0];
  const Def& src = L.def(in);
  const graph::Value* root = src.view ? src.base : in;
  const Def& rd = L.def(root);
  const TensorSpec& rs = root->spec;
  const TensorSpec& vs = out->spec;
  // Where the root's element 0 lies, and positions relative to it.
  const ExprPtr rel_offset = sym::sub(vs.offset.as_expr(), rs.offset.as_expr());
  auto position = [rel_offset, strides = vs.strides](const Index& idx) {
    return sym::add(rel_offset, offset_of(idx, strides));
  };

  Def d;
  d.dtype = vs.dtype;
  d.sizes = vs.sizes;
  d.view = &n;
  d.base = root;
  d.reads = 1;
  Program& P = L.prog();
  if (rd.buffer >= 0 && same_strides(rs.sizes, P.buffers[size_t(rd.buffer)].strides, rs.strides)) {
    const int buf = rd.buffer;
    d.fn = [&P, buf, position](const Index& idx) { return P.load(buf, position(idx)); };
  } else if (same_strides(rs.sizes, contiguous_strides(rs.sizes), rs.strides)) {
    // A contiguous root not computed yet, or computed into a buffer laid out otherwise (a product
    // stored transposed: fallback.cc): its element at the row-major index of the position.
    if (rd.buffer < 0) {
      d.ops = rd.ops;
      d.reads = rd.reads;
      d.origins = rd.origins;
    } else {
      d.view = nullptr;  // (realized, a copy: an eager view of the buffer would not be laid out as the graph says)
    }
    Loader root_fn = L.loader(root);
    const SymShape rsizes = rs.sizes;
    d.fn = [root_fn, rsizes, position](const Index& idx) { return root_fn(unflatten(position(idx), rsizes)); };
  } else {
    return false;  // an eager view (fallback)
  }
  L.set(out, std::move(d));
  return true;
}

}  // namespace kiln::inductor
