// The indexing prims as one tile program: a walk over positions P in which every operand is a
// strided view over P, and K int64 index tensors pick where along some dims of one side:
//   gather  (load side indexed):  out[p] = src[base(p) + sum_k idx_k(p) * mul_k]
//   scatter (store side indexed): out[base(p) + sum_k idx_k(p) * mul_k] = / += src[p]
// gather and index_select are the first (index_select's index seen over the output with stride 0
// off its dim); scatter, scatter_add and index_put the second (index_put with one index per
// indexed dim, negative indices wrapped). A += is an atomic add (duplicates accumulate, in an
// order the GPU picks); an = with duplicate indices keeps one of the values, as in PyTorch on
// CUDA. Every index is range-checked before the launch (its min and max, on the device).
#include <kiln/ops.h>

#include <limits>

#include "core/tensor_impl.h"
#include "eager/tile/tiled.h"
#include "ops/args_gen.h"
#include "ops/meta/indexing.h"
#include "ops/meta/meta_util.h"
#include "tile/builder.h"

namespace kiln::eager::tiled {
namespace {

using ops::OpId;
constexpr int64_t kBlock = 1024;

struct IndexedKernel {
  bool scatter;     // the store side is indexed (else the load side)
  bool accumulate;  // += (scatter only)
  DType dtype;
  int nidx, rank;
  bool wide;
  std::string key() const {
    return std::string(scatter ? (accumulate ? "scatter_add." : "scatter.") : "gather.") + tile::short_name(dtype) + ".k" +
           std::to_string(nidx) + ".r" + std::to_string(rank) + (wide ? ".i64" : ".i32");
  }
};

// Parameters: out, src, idx_0..K-1, n, sizes[1..rank), then the strides over every dim of the
// direct view (out for gather, src for scatter), of the based view (the other), of each index;
// then per index its multiplier (the indexed dim's stride) and the dim's size (for wrapping).
tile::Program build(const IndexedKernel& k) {
  tile::Builder b(std::string("eager_") + (k.scatter ? "scatter" : "gather"));
  const DType index = k.wide ? kInt64 : kInt32;
  tile::Val out = b.arg_ptr("out", k.dtype), src = b.arg_ptr("src", k.dtype);
  std::vector<tile::Val> idx;
  for (int i = 0; i < k.nidx; ++i) idx.push_back(b.arg_ptr("idx" + std::to_string(i), kInt64));
  tile::Val n = b.arg_int("n", index);
  const std::vector<tile::Val> sizes = int_args(b, "size", 1, k.rank, index);
  auto strides_of = [&](const std::string& view) { return int_args(b, view + "_stride", 0, k.rank, index); };
  const std::vector<tile::Val> direct = strides_of("direct"), based = strides_of("based");
  std::vector<std::vector<tile::Val>> idx_strides;
  for (int i = 0; i < k.nidx; ++i) idx_strides.push_back(strides_of("idx" + std::to_string(i)));
  std::vector<tile::Val> mul, dim_size;
  for (int i = 0; i < k.nidx; ++i) {
    mul.push_back(b.arg_int("mul" + std::to_string(i), index));
    dim_size.push_back(b.arg_int("dim_size" + std::to_string(i), index));
  }
  tile::Val lin = flat_block(b, kBlock, k.wide);
  tile::Val mask = lin < n;
  const std::vector<tile::Val> coord = coordinates(b, lin, sizes);
  auto offset = [&](const std::vector<tile::Val>& strides) { return offset_of(coord, strides); };
  tile::Val at = offset(based);
  for (int i = 0; i < k.nidx; ++i) {
    tile::Val v = b.load(idx[size_t(i)] + offset(idx_strides[size_t(i)]), mask, 0);
    v = b.cast(v, index);
    v = b.where(v < 0, v + dim_size[size_t(i)], v);  // (negatives only where the op allows them: checked before)
    at = at + v * mul[size_t(i)];
  }
  if (!k.scatter) {
    b.store(out + offset(direct), b.load(src + at, mask), mask);
  } else {
    tile::Val v = b.load(src + offset(direct), mask);
    if (!k.accumulate) b.store(out + at, v, mask);
    else if (k.dtype == kBool) b.store(out + at, v, mask & v);  // || : a true sets it
    else b.atomic_add(out + at, v, mask);
  }
  return b.finish();
}

bool fits_i32(int64_t v) { return v >= -std::numeric_limits<int32_t>::max() && v <= std::numeric_limits<int32_t>::max(); }

// Raises unless every value of `index` (int64, on the device) lies in [lo, size).
void check_range(const Tensor& index, int64_t size, bool allow_negative, const char* what) {
  if (index.numel() == 0) return;
  const int64_t lo = allow_negative ? -size : 0;
  const int64_t mn = amin(index).item<int64_t>(), mx = amax(index).item<int64_t>();
  const int64_t bad = mn < lo ? mn : mx;
  KILN_CHECK_HINT(mn >= lo && mx < size, "indices must be in [" + std::to_string(lo) + ", " + std::to_string(size) + ")", what,
                  ": index ", bad, " is out of bounds for dimension of size ", size);
}

// One indexed index tensor: its strides over P, the indexed dim's stride and size.
struct Index {
  Tensor t;
  Shape strides;
  int64_t mul, size;
};

// Launches the program over positions `p` (every stride list over p's dims).
void run_indexed(bool scatter, bool accumulate, const Tensor& out, const Tensor& src, const Shape& p, const Shape& direct,
                 const Shape& based, const std::vector<Index>& idx, const Runner& run) {
  const int64_t n = numel_of(p);
  if (n == 0) return;
  std::vector<Shape> views{direct, based};
  for (const Index& i : idx) views.push_back(i.strides);
  const Collapsed c = collapse(p, views);
  IndexedKernel k{scatter, accumulate, out.dtype(), int(idx.size()), int(c.sizes.size()), false};
  k.wide = !fits_i32(n) || !fits_i32(out.numel()) || !fits_i32(src.numel());
  for (const Shape& s : c.strides) k.wide = k.wide || !fits_i32(reach(c.sizes, s));
  for (const Index& i : idx) k.wide = k.wide || !fits_i32(i.mul * i.size);
  Launch l;
  l.args = {out, src};
  for (const Index& i : idx) l.args.emplace_back(i.t);
  l.args.emplace_back(n);
  for (size_t d = 1; d < c.sizes.size(); ++d) l.args.emplace_back(c.sizes[d]);
  for (const Shape& s : c.strides)
    for (int64_t x : s) l.args.emplace_back(x);
  for (const Index& i : idx) l.args.insert(l.args.end(), {KernelArg(i.mul), KernelArg(i.size)});
  l.key = k.key();
  l.build = [k] { return build(k); };
  l.grid = (n + kBlock - 1) / kBlock;
  run(l);
}

Shape nonempty_sizes(const Tensor& t) { return t.dim() == 0 ? Shape{1} : t.sizes(); }
Shape nonempty_strides(const Tensor& t) { return t.dim() == 0 ? Shape{1} : t.strides(); }

Tensor fresh_copy(const Tensor& x, const TensorSpec& spec, const Runner& run) {
  Tensor out = make_tensor(spec);
  copy_into(out, x, run);
  return out;
}

std::vector<Tensor> gather(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  const ops::args::gather g{a};
  const Tensor &self = g.self(), &index = g.index();
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  const int64_t dim = ops::wrap_dim(g.dim(), self.dim());
  const int64_t size = nonempty_sizes(self)[size_t(dim)];
  check_range(index, size, false, "gather");
  Shape based = nonempty_strides(self);
  const int64_t mul = based[size_t(dim)];
  based[size_t(dim)] = 0;  // the index gives the position along dim
  const Shape p = nonempty_sizes(index);
  run_indexed(false, false, out, self, p, contiguous_strides(p), based, {{index, nonempty_strides(index), mul, size}}, run);
  return {out};
}

std::vector<Tensor> index_select(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  const ops::args::index_select s{a};
  const Tensor &self = s.self(), &index = s.index();
  Tensor out = make_tensor(specs[0]);
  const int64_t dim = ops::wrap_dim(s.dim(), self.dim());
  const int64_t size = nonempty_sizes(self)[size_t(dim)];
  check_range(index, size, false, "index_select");
  if (out.numel() == 0) return {out};
  const Shape p = nonempty_sizes(out);
  Shape based = nonempty_strides(self), istr(p.size(), 0);
  const int64_t mul = based[size_t(dim)];
  based[size_t(dim)] = 0;
  istr[size_t(dim)] = index.dim() == 0 ? 0 : index.stride(0);  // the index walks out's dim
  run_indexed(false, false, out, self, p, contiguous_strides(p), based, {{index, istr, mul, size}}, run);
  return {out};
}

// scatter and scatter_add (scatter_reduce has no CUDA kernel yet).
std::vector<Tensor> scatter(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  const ops::args::scatter s{a};
  const Tensor &self = s.self(), &index = s.index(), &src = s.src();
  Tensor out = fresh_copy(self, specs[0], run);
  if (index.numel() == 0) return {out};
  const int64_t dim = ops::wrap_dim(s.dim(), self.dim());
  const int64_t size = nonempty_sizes(self)[size_t(dim)];
  check_range(index, size, false, ops::op_info(a.op).name);
  Shape based = nonempty_strides(out);
  const int64_t mul = based[size_t(dim)];
  based[size_t(dim)] = 0;
  run_indexed(true, a.op == OpId::scatter_add, out, src, nonempty_sizes(index), nonempty_strides(src), based,
              {{index, nonempty_strides(index), mul, size}}, run);
  return {out};
}

std::vector<Tensor> index_put(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  const ops::args::index_put ip{a};
  const Tensor &self = ip.self(), &values = ip.values();
  std::vector<Tensor> indices = ops::expand_bool_indices(self, ip.indices());
  Tensor out = fresh_copy(self, specs[0], run);
  const int64_t nd = self.dim();
  const SymShape rs = ops::advanced_index_shape(self.sym_sizes(), indices);
  KILN_CHECK(ops::broadcast_shapes(values.sym_sizes(), rs) == rs, "index_put: values of shape ", shape_str(values.sym_sizes()),
             " cannot be broadcast to the indexing result of shape ", shape_str(rs));
  std::vector<int64_t> pos;  // the indexed dims
  std::vector<Tensor> defined;
  for (int64_t d = 0; d < nd; ++d)
    if (indices[size_t(d)].defined()) pos.push_back(d), defined.push_back(indices[size_t(d)]);
  Shape bshape;  // the index tensors' broadcast shape
  if (!defined.empty())
    for (const SymInt& s : ops::broadcast_shapes(defined)) bshape.push_back(s.value());
  // Positions: [broadcast index dims..., self's other dims...]; values permuted to match (the
  // broadcast dims sit where the indexed dims were when those are adjacent, else first).
  Shape rshape;
  for (const SymInt& s : rs) rshape.push_back(s.value());
  Tensor vals = expand(values, rshape);
  const int64_t nbd = int64_t(bshape.size());
  vals = permute(vals, ops::advanced_index_dims_first(pos, nbd, int64_t(rshape.size())));
  Shape p = bshape, based(size_t(nbd), 0);
  for (int64_t d = 0; d < nd; ++d)
    if (!indices[size_t(d)].defined()) p.push_back(out.size(d)), based.push_back(out.stride(d));
  if (p.empty()) p = {1}, based = {0};
  std::vector<Index> idx;
  for (size_t k = 0; k < pos.size(); ++k) {
    const int64_t d = pos[k];
    check_range(defined[k], out.size(d), true, "index_put");
    const Tensor e = expand(defined[k], bshape);
    Shape st(e.strides());
    st.resize(p.size(), 0);  // (0 over self's other dims)
    idx.push_back({e, st, out.stride(d), out.size(d)});
  }
  Shape vst = vals.strides();
  if (vst.empty()) vst = {0};
  run_indexed(true, ip.accumulate(), out, vals, p, vst, based, idx, run);
  return {out};
}

}  // namespace

std::vector<Tensor> indexing(const ops::Args& a, const std::vector<TensorSpec>& specs, const Runner& run) {
  switch (a.op) {
    case OpId::gather: return gather(a, specs, run);
    case OpId::index_select: return index_select(a, specs, run);
    case OpId::scatter: case OpId::scatter_add: return scatter(a, specs, run);
    case OpId::index_put: return index_put(a, specs, run);
    default: detail::fail(std::string("internal: ") + ops::op_info(a.op).name + " is not a tiled indexing op");
  }
}

}  // namespace kiln::eager::tiled
