// CPU kernels of the indexing prims: gather, scatter, scatter_add, scatter_reduce, index_select,
// index_put. Every index is range-checked before any (parallel) loop touches memory.
#include <kiln/ops.h>

#include <limits>

#include "eager/cpu/loops.h"
#include "ops/family.h"
#include "ops/meta/indexing.h"
#include "ops/meta/meta_util.h"

namespace kiln::eager::cpu {
namespace {
using ops::Args;
using ops::OpId;

constexpr int64_t kGrain = 16384;

// Element offsets of every position of a (sizes, strides) layout, in row-major order.
std::vector<int64_t> all_offsets(const Shape& sizes, const Shape& strides) {
  const int64_t n = numel_of(sizes);
  std::vector<int64_t> out(size_t(std::max<int64_t>(n, 0)));
  if (n == 0) return out;
  const size_t nd = sizes.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t p = 0; p < n; ++p) {
    out[size_t(p)] = off;
    for (size_t d = nd; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
  }
  return out;
}

// Reads an index tensor (any layout) as int64 and checks every value lies in [lo, size);
// lo = -size allows Python-style negative indices, which are then wrapped.
std::vector<int64_t> checked_indices(const Tensor& index, int64_t size, bool allow_negative, const char* what) {
  std::vector<int64_t> v = index.to_vector<int64_t>();
  const int64_t lo = allow_negative ? -size : 0;
  for (int64_t& i : v) {
    KILN_CHECK_HINT(i >= lo && i < size, "indices must be in [" + std::to_string(lo) + ", " + std::to_string(size) + ")",
                    what, ": index ", i, " is out of bounds for dimension of size ", size);
    if (i < 0) i += size;
  }
  return v;
}

Shape nonempty_sizes(const Tensor& t) { return t.dim() == 0 ? Shape{1} : t.sizes(); }
Shape nonempty_strides(const Tensor& t) { return t.dim() == 0 ? Shape{1} : t.strides(); }

// A fresh contiguous copy of x (the output of the scatter family).
Tensor fresh_copy(const Tensor& x, const TensorSpec& spec) {
  Tensor out = make_tensor(spec);
  copy_into(out, x);
  return out;
}

// A shape walked as rows along its last dim: the element offset of each row's start per
// operand, and each operand's stride along the row.
struct Rows {
  int64_t nrows = 0, len = 0;
  std::vector<std::vector<int64_t>> base;
  std::vector<int64_t> step;
};

Rows make_rows(const Shape& shape, const std::vector<Shape>& strides) {
  Rows r;
  r.len = shape.back();
  const Shape outer(shape.begin(), shape.end() - 1);
  r.nrows = numel_of(outer);
  for (const Shape& st : strides) {
    r.base.push_back(all_offsets(outer, Shape(st.begin(), st.end() - 1)));
    r.step.push_back(st.back());
  }
  return r;
}

// Checks every value of an int64 index walked as operand k of `rows` lies in [0, size).
void check_rows(const Rows& rows, size_t k, const int64_t* ip, int64_t size, const char* what) {
  bool bad = false;
#pragma omp parallel for reduction(|| : bad) if (rows.nrows * rows.len > kGrain)
  for (int64_t r = 0; r < rows.nrows; ++r) {
    const int64_t* p = ip + rows.base[k][size_t(r)];
    for (int64_t j = 0; j < rows.len; ++j) bad = bad || p[j * rows.step[k]] < 0 || p[j * rows.step[k]] >= size;
  }
  if (!bad) return;
  for (int64_t r = 0; r < rows.nrows; ++r)  // find the culprit for the message
    for (int64_t j = 0; j < rows.len; ++j) {
      const int64_t v = ip[rows.base[k][size_t(r)] + j * rows.step[k]];
      KILN_CHECK_HINT(v >= 0 && v < size, "indices must be in [0, " + std::to_string(size) + ")", what, ": index ", v,
                      " is out of bounds for dimension of size ", size);
    }
}

// ------------------------------------------------------------------------------ gather
KILN_KERNEL(gather) {
  const ops::args::gather g{a};
  const Tensor& self = g.self();
  const Tensor& index = g.index();
  Tensor out = make_tensor(specs[0]);
  if (out.numel() == 0) return {out};
  const int64_t dim = ops::wrap_dim(g.dim(), self.dim());
  Shape sst = nonempty_strides(self);
  const int64_t dstride = sst[size_t(dim)];
  sst[size_t(dim)] = 0;  // the index supplies the position along dim
  const Shape isz = nonempty_sizes(index);
  const Rows rows = make_rows(isz, {nonempty_strides(index), sst, contiguous_strides(isz)});
  const int64_t* ip = index.data<int64_t>();
  check_rows(rows, 0, ip, nonempty_sizes(self)[size_t(dim)], "gather");
  visit_all(self.dtype(), [&]<class T>(type_tag<T>) {
    const T* in = self.data<T>();
    T* o = out.data<T>();
#pragma omp parallel for if (out.numel() > kGrain)
    for (int64_t r = 0; r < rows.nrows; ++r) {
      const int64_t* pi = ip + rows.base[0][size_t(r)];
      const T* ps = in + rows.base[1][size_t(r)];
      T* po = o + rows.base[2][size_t(r)];
      for (int64_t j = 0; j < rows.len; ++j) po[j] = ps[j * rows.step[1] + pi[j * rows.step[0]] * dstride];
    }
  });
  return {out};
}

// ------------------------------------------------------------------------------ scatter family
template <class A>
bool is_nan_v(A v) {
  if constexpr (std::is_floating_point_v<A>) return std::isnan(v);
  else return false;
}

enum class Reduce { Assign, Sum, Prod, Mean, Max, Min };

Reduce reduce_of(const Args& a) {
  if (a.op == OpId::scatter) return Reduce::Assign;
  if (a.op == OpId::scatter_add) return Reduce::Sum;
  const std::string& r = ops::args::scatter_reduce{a}.reduce();
  if (r == "sum") return Reduce::Sum;
  if (r == "prod") return Reduce::Prod;
  if (r == "mean") return Reduce::Mean;
  if (r == "amax") return Reduce::Max;
  return Reduce::Min;
}

template <class A>
A reduce_identity(Reduce r) {
  switch (r) {
    case Reduce::Prod: return A(1);
    case Reduce::Max:
      if constexpr (std::is_floating_point_v<A>) return -std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::lowest();
    case Reduce::Min:
      if constexpr (std::is_floating_point_v<A>) return std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::max();
    default: return A(0);
  }
}

template <class A>
A reduce_step(Reduce r, A acc, A v) {
  switch (r) {
    case Reduce::Assign: return v;
    case Reduce::Sum: case Reduce::Mean:
      if constexpr (std::is_same_v<A, bool>) return acc || v; else return A(acc + v);
    case Reduce::Prod:
      if constexpr (std::is_same_v<A, bool>) return acc && v; else return A(acc * v);
    case Reduce::Max:
      if (is_nan_v(acc) || is_nan_v(v)) return is_nan_v(acc) ? acc : v;
      return v > acc ? v : acc;
    case Reduce::Min:
      if (is_nan_v(acc) || is_nan_v(v)) return is_nan_v(acc) ? acc : v;
      return v < acc ? v : acc;
  }
  return v;
}

// One kernel for scatter, scatter_add and scatter_reduce, over scatter's arguments (which begin
// the others').
static_assert(ops::args_prefix<ops::args::scatter, ops::args::scatter_add>() &&
              ops::args_prefix<ops::args::scatter, ops::args::scatter_reduce>());
std::vector<Tensor> scatter_kernel(const Args& a, const std::vector<TensorSpec>& specs) {
  const ops::args::scatter s{a};
  const Tensor& self = s.self();
  const Tensor& index = s.index();
  const Tensor& src = s.src();
  Tensor out = fresh_copy(self, specs[0]);
  if (index.numel() == 0) return {out};
  const Reduce red = reduce_of(a);
  const bool include_self = a.op != OpId::scatter_reduce || ops::args::scatter_reduce{a}.include_self();
  const int64_t dim = ops::wrap_dim(s.dim(), self.dim());
  const Shape isz = nonempty_sizes(index);
  Shape ost = nonempty_strides(out);
  const int64_t dstride = ost[size_t(dim)];
  ost[size_t(dim)] = 0;
  const Rows rows = make_rows(isz, {nonempty_strides(index), ost, nonempty_strides(src)});
  const int64_t* ip = index.data<int64_t>();
  check_rows(rows, 0, ip, nonempty_sizes(self)[size_t(dim)], ops::op_info(a.op).name);
  // Positions that differ only along `dim` may hit the same output element. Each thread owns
  // outputs no other thread touches (whole rows when dim is the row dim, else a range of
  // columns) and walks its positions in order: duplicates reduce deterministically.
  const bool dim_is_row = dim == int64_t(isz.size()) - 1;
  const int threads = index.numel() > kGrain ? omp_get_max_threads() : 1;
  auto for_each = [&](auto&& f) {
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t r0 = dim_is_row ? rows.nrows * t / nt : 0, r1 = dim_is_row ? rows.nrows * (t + 1) / nt : rows.nrows;
      const int64_t j0 = dim_is_row ? 0 : rows.len * t / nt, j1 = dim_is_row ? rows.len : rows.len * (t + 1) / nt;
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t* pi = ip + rows.base[0][size_t(r)];
        const int64_t ob = rows.base[1][size_t(r)], sb = rows.base[2][size_t(r)];
        for (int64_t j = j0; j < j1; ++j) f(ob + j * rows.step[1] + pi[j * rows.step[0]] * dstride, sb + j * rows.step[2]);
      }
    }
  };
  std::vector<int64_t> count;
  if (red == Reduce::Mean) count.assign(size_t(out.numel()), include_self ? 1 : 0);
  visit_all(self.dtype(), [&]<class T>(type_tag<T>) {
    using A = acc_t<T>;
    T* o = out.data<T>();
    const T* s = src.data<T>();
    if (!include_self) {
      const T init = T(reduce_identity<A>(red));
      for_each([&](int64_t oi, int64_t) { o[oi] = init; });
    }
    if (red == Reduce::Assign) {
      for_each([&](int64_t oi, int64_t si) { o[oi] = s[si]; });
    } else {
      for_each([&](int64_t oi, int64_t si) { o[oi] = T(reduce_step<A>(red, A(o[oi]), A(s[si]))); });
    }
    if (red == Reduce::Mean) {
      for_each([&](int64_t oi, int64_t) { ++count[size_t(oi)]; });
      const int64_t n = out.numel();
#pragma omp parallel for if (n > kGrain)
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = count[size_t(i)];
        if (c <= 1) continue;
        if constexpr (std::is_floating_point_v<A>) {
          o[i] = T(A(o[i]) / A(c));
        } else if constexpr (!std::is_same_v<A, bool>) {
          const int64_t v = int64_t(o[i]);  // floor division, as PyTorch's integer mean
          o[i] = T(v / c - (v % c != 0 && v < 0 ? 1 : 0));
        }
      }
    }
  });
  return {out};
}
KILN_REGISTER(kernel, scatter, scatter_kernel);
KILN_REGISTER(kernel, scatter_add, scatter_kernel);
KILN_REGISTER(kernel, scatter_reduce, scatter_kernel);

// ------------------------------------------------------------------------------ index_select
KILN_KERNEL(index_select) {
  const ops::args::index_select s{a};
  const Tensor& self = s.self();
  const Tensor& index = s.index();
  Tensor out = make_tensor(specs[0]);
  const int64_t dim = ops::wrap_dim(s.dim(), self.dim());
  const Shape ssz = nonempty_sizes(self), sst = nonempty_strides(self);
  std::vector<int64_t> idx = checked_indices(index, ssz[size_t(dim)], false, "index_select");
  if (out.numel() == 0) return {out};
  const Shape pre_sz(ssz.begin(), ssz.begin() + dim), pre_st(sst.begin(), sst.begin() + dim);
  const Shape post_sz(ssz.begin() + dim + 1, ssz.end()), post_st(sst.begin() + dim + 1, sst.end());
  std::vector<int64_t> pre = all_offsets(pre_sz, pre_st), post = all_offsets(post_sz, post_st);
  const int64_t n = int64_t(idx.size()), npost = int64_t(post.size()), rows = int64_t(pre.size()) * n;
  const bool post_contig = npost == 1 || contiguous_strides(post_sz) == post_st;
  const int64_t dstride = sst[size_t(dim)];
  visit_all(self.dtype(), [&]<class T>(type_tag<T>) {
    const T* in = self.data<T>();
    T* o = out.data<T>();
#pragma omp parallel for if (rows * npost > kGrain)
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = in + pre[size_t(r / n)] + idx[size_t(r % n)] * dstride;
      T* dst = o + r * npost;
      if (post_contig) std::memcpy(dst, row, size_t(npost) * sizeof(T));
      else for (int64_t j = 0; j < npost; ++j) dst[j] = row[post[size_t(j)]];
    }
  });
  return {out};
}

// ------------------------------------------------------------------------------ index_put
KILN_KERNEL(index_put) {
  const ops::args::index_put p{a};
  const Tensor& self = p.self();
  const Tensor& values = p.values();
  const bool accumulate = p.accumulate();
  std::vector<Tensor> indices = ops::expand_bool_indices(self, p.indices());
  Tensor out = fresh_copy(self, specs[0]);
  const int64_t nd = self.dim();
  // The indexing result's shape, and the values broadcast to it.
  const SymShape rs = ops::advanced_index_shape(self.sym_sizes(), indices);
  KILN_CHECK(ops::broadcast_shapes(values.sym_sizes(), rs) == rs, "index_put: values of shape ",
             shape_str(values.sym_sizes()), " cannot be broadcast to the indexing result of shape ", shape_str(rs));
  std::vector<int64_t> pos;  // indexed dims
  std::vector<Tensor> defined;
  for (int64_t d = 0; d < nd; ++d)
    if (indices[size_t(d)].defined()) {
      pos.push_back(d);
      defined.push_back(indices[size_t(d)]);
    }
  Shape bshape;  // the broadcast index shape
  if (!defined.empty()) {
    SymShape b = ops::broadcast_shapes(defined);
    for (auto& s : b) bshape.push_back(s.value());
  }
  const int64_t nb = numel_of(bshape);
  // Offset into `out` of each broadcast index position (validated, negatives wrapped).
  std::vector<int64_t> boff(size_t(nb), 0);
  for (size_t k = 0; k < pos.size(); ++k) {
    const int64_t d = pos[k];
    std::vector<int64_t> v = checked_indices(expand(defined[k], bshape), out.size(d), true, "index_put");
    for (int64_t b = 0; b < nb; ++b) boff[size_t(b)] += v[size_t(b)] * out.stride(d);
  }
  // Values viewed as [broadcast dims..., remaining dims of self...].
  Shape rshape;
  for (auto& s : rs) rshape.push_back(s.value());
  Tensor vals = expand(values, rshape);
  const int64_t nbd = int64_t(bshape.size());
  vals = permute(vals, ops::advanced_index_dims_first(pos, nbd, int64_t(rshape.size())));
  Shape rest_sz, rest_st;
  for (int64_t d = 0; d < nd; ++d)
    if (!indices[size_t(d)].defined()) {
      rest_sz.push_back(out.size(d));
      rest_st.push_back(out.stride(d));
    }
  const Shape& vst = vals.strides();
  std::vector<int64_t> rest = all_offsets(rest_sz, rest_st);
  std::vector<int64_t> vrest = all_offsets(rest_sz, Shape(vst.begin() + nbd, vst.end()));
  std::vector<int64_t> vb = all_offsets(bshape, Shape(vst.begin(), vst.begin() + nbd));
  const int64_t nrest = int64_t(rest.size());
  if (nb == 0 || nrest == 0) return {out};
  // Threads split the remaining dims (disjoint outputs); each walks the index positions in
  // order, so duplicates accumulate exactly and the last write wins, deterministically.
  const int threads = nrest > 1 && nb * nrest > kGrain ? omp_get_max_threads() : 1;
  visit_all(self.dtype(), [&]<class T>(type_tag<T>) {
    using A = acc_t<T>;
    T* o = out.data<T>();
    const T* v = vals.data<T>();
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t r0 = nrest * t / nt, r1 = nrest * (t + 1) / nt;
      for (int64_t b = 0; b < nb; ++b) {
        T* ob = o + boff[size_t(b)];
        const T* vbp = v + vb[size_t(b)];
        for (int64_t r = r0; r < r1; ++r) {
          T& dst = ob[rest[size_t(r)]];
          const T src = vbp[vrest[size_t(r)]];
          if (!accumulate) dst = src;
          else if constexpr (std::is_same_v<T, bool>) dst = dst || src;
          else dst = T(A(dst) + A(src));
        }
      }
    }
  });
  return {out};
}

}  // namespace
}  // namespace kiln::eager::cpu
