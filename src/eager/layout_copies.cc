#include "eager/layout_copies.h"

#include <kiln/ops.h>

#include "core/tensor_impl.h"
#include "ops/meta/layout.h"
#include "ops/meta/meta_util.h"

namespace kiln::eager {
namespace {

Tensor strided_view(const Tensor& base, const Shape& sizes, const Shape& strides, int64_t offset) {
  TensorSpec s;
  s.sizes.assign(sizes.begin(), sizes.end());
  s.strides.assign(strides.begin(), strides.end());
  s.offset = offset;
  s.dtype = base.dtype();
  s.device = base.device();
  return make_view(base, s);
}

}  // namespace

std::vector<Tensor> cat_by_copies(const ops::Args& a, const std::vector<TensorSpec>& specs, const CopyInto& copy) {
  Tensor out = make_tensor(specs[0]);
  const TensorList& ts = a.tensors(0);
  if (out.numel() == 0) return {out};
  const int64_t dim = ops::wrap_dim(a.i64(1), out.dim());
  int64_t at = 0;
  for (const Tensor& t : ts) {
    if (ops::cat_skips(t)) continue;
    copy(strided_view(out, t.sizes(), out.strides(), at * out.stride(dim)), t);
    at += t.size(dim);
  }
  return {out};
}

std::vector<Tensor> constant_pad_by_copies(const ops::Args& a, const std::vector<TensorSpec>& specs, const CopyInto& copy) {
  const Tensor& x = a.tensor(0);
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  const SymShape& pad = a.symints(1);
  // The part of x that survives (negative pads crop) and where it lands in out.
  Shape in_sz = x.sizes();
  int64_t in_off = x.storage_offset(), out_off = 0;
  bool full = true;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = x.dim() - 1 - int64_t(i);
    const int64_t l = pad[2 * i].value(), r = pad[2 * i + 1].value();
    if (l > 0 || r > 0) full = false;
    in_off += std::max<int64_t>(0, -l) * x.stride(d);
    out_off += std::max<int64_t>(0, l) * out.stride(d);
    in_sz[size_t(d)] = std::max<int64_t>(0, x.size(d) + std::min<int64_t>(0, l) + std::min<int64_t>(0, r));
  }
  if (!full) copy(out, scalar_tensor(a.scalar(2), out.dtype()));  // (a 0-d CPU tensor joins any device)
  if (numel_of(in_sz) > 0)
    copy(strided_view(out, in_sz, out.strides(), out_off), strided_view(x, in_sz, x.strides(), in_off));
  return {out};
}

std::vector<Tensor> flip_by_copies(const ops::Args& a, const std::vector<TensorSpec>& specs, const CopyInto& copy) {
  const Tensor& x = a.tensor(0);
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  Shape st = x.strides();
  int64_t off = x.storage_offset();
  for (int64_t d : ops::wrap_dims(a.ints(1), x.dim())) {
    off += (x.size(d) - 1) * st[size_t(d)];
    st[size_t(d)] = -st[size_t(d)];
  }
  copy(out, strided_view(x, x.sizes(), st, off));
  return {out};
}

}  // namespace kiln::eager
