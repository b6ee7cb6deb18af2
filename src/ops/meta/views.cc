// Meta functions of the view prims: each computes the output's sizes, strides and offset
// into the input's storage (the dispatcher makes the view from them).
#include <algorithm>

#include "core/tensor_impl.h"
#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {

namespace {
// infer_size and view_strides are written once for SymInt and for plain int64_t: views of
// concrete tensors (nearly all eager calls) skip SymInt's out-of-line arithmetic.
// a * b for the element count of shape `requested`; an overflow of int64 is an error.
inline int64_t times_checked(int64_t a, int64_t b, const std::vector<int64_t>& requested) {
  int64_t r = 0;
  KILN_CHECK(!__builtin_mul_overflow(a, b, &r), "shape ", shape_str(requested),
             " has more elements than int64 can count (size overflow)");
  return r;
}
inline SymInt times_checked(const SymInt& a, const SymInt& b, const std::vector<SymInt>& requested) {
  if (a.is_symbolic() || b.is_symbolic()) return a * b;
  int64_t r = 0;
  KILN_CHECK(!__builtin_mul_overflow(a.value(), b.value(), &r), "shape ", shape_str(requested),
             " has more elements than int64 can count (size overflow)");
  return SymInt(r);
}

template <class I>
std::vector<I> infer_size_t(const std::vector<I>& requested, const I& numel) {
  std::vector<I> out = requested;
  I known = 1;
  int infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      KILN_CHECK(infer < 0, "only one dimension can be inferred (-1) in shape ", shape_str(requested));
      infer = int(i);
    } else {
      KILN_CHECK(out[i] >= 0, "invalid size ", out[i], " in shape ", shape_str(requested));
      known = times_checked(known, out[i], requested);
    }
  }
  if (infer >= 0) {
    KILN_CHECK(known != 0 && numel % known == 0, "shape ", shape_str(requested), " is invalid for input of size ",
               numel);
    if constexpr (std::is_same_v<I, int64_t>) out[size_t(infer)] = numel / known;  // both >= 0
    else out[size_t(infer)] = floordiv(numel, known);
  } else {
    KILN_CHECK_HINT(known == numel, "the new shape must hold the same number of elements",
                    "shape ", shape_str(requested), " is invalid for input of size ", numel);
  }
  return out;
}

template <class I>
std::optional<std::vector<I>> view_strides_t(const std::vector<I>& sizes, const std::vector<I>& strides,
                                             const std::vector<I>& new_sizes) {
  I numel = 1;
  for (auto& s : sizes) numel = numel * s;
  if (numel == 0 || sizes.empty()) return contiguous_strides(new_sizes);
  // Walk old dims in chunks that are contiguous with each other; each chunk must map onto a
  // run of new dims with the same element count.
  std::vector<I> out(new_sizes.size());
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  I chunk_base_stride = strides.back();
  I tensor_numel = 1, view_numel = 1;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel = tensor_numel * sizes[size_t(d)];
    if (d == 0 || (sizes[size_t(d - 1)] != 1 && strides[size_t(d - 1)] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[size_t(view_d)] == 1)) {
        out[size_t(view_d)] = view_numel * chunk_base_stride;
        view_numel = view_numel * new_sizes[size_t(view_d)];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[size_t(d - 1)];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}
}  // namespace

SymShape infer_size(const SymShape& requested, const SymInt& numel) { return infer_size_t(requested, numel); }

std::optional<SymShape> view_strides(const SymShape& sizes, const SymShape& strides, const SymShape& new_sizes) {
  return view_strides_t(sizes, strides, new_sizes);
}

namespace {

TensorSpec view_of(const Tensor& t, SymShape sizes, SymShape strides, SymInt offset) {
  return TensorSpec{std::move(sizes), std::move(strides), offset, t.dtype(), t.device()};
}

KILN_META(view) {
  const Tensor& x = a.tensor(0);
  const SymShape& req = a.symints(1);
  const TensorImpl* t = x.impl();
  if (!t->sym && std::none_of(req.begin(), req.end(), [](const SymInt& s) { return s.is_symbolic(); })) {
    Shape r(req.size());
    for (size_t i = 0; i < req.size(); ++i) r[i] = req[i].hint();
    const Shape sizes = infer_size_t(r, numel_of(t->sizes));
    if (auto st = view_strides_t(t->sizes, t->strides, sizes))
      return {TensorSpec{SymShape(sizes.begin(), sizes.end()), SymShape(st->begin(), st->end()), t->offset,
                         t->dtype, t->device()}};
    // Not viewable: the general path below reports it.
  }
  SymShape sizes = infer_size(a.symints(1), x.sym_numel());
  auto st = view_strides(x.sym_sizes(), x.sym_strides(), sizes);
  KILN_CHECK_HINT(st, "use reshape(), which copies when it must (or call contiguous() first)",
                  "view size ", shape_str(sizes), " is not compatible with the input's sizes ",
                  shape_str(x.sym_sizes()), " and strides ", shape_str(x.sym_strides()));
  return {view_of(x, sizes, *st, x.sym_storage_offset())};
}

KILN_META(broadcast_in_dim) {
  const Tensor& x = a.tensor(0);
  const SymShape& shape = a.symints(1);
  const std::vector<int64_t>& bdims = a.ints(2);
  KILN_CHECK(int64_t(bdims.size()) == x.dim(), "broadcast_in_dim: ", bdims.size(), " broadcast dimensions for a ",
             x.dim(), "-d input");
  for (const SymInt& s : shape) KILN_CHECK(s >= 0, "broadcast_in_dim: negative size in shape ", shape_str(shape));
  SymShape strides(shape.size(), SymInt(0));
  const SymShape xs = x.sym_sizes(), xst = x.sym_strides();
  int64_t prev = -1;
  for (size_t i = 0; i < bdims.size(); ++i) {
    const int64_t d = bdims[i];
    KILN_CHECK(d > prev && d < int64_t(shape.size()), "broadcast_in_dim: broadcast dimensions must be increasing and < ",
               shape.size());
    prev = d;
    KILN_CHECK(xs[i] == shape[size_t(d)] || xs[i] == 1, "broadcast_in_dim: input dim ", i, " of size ", xs[i].str(),
               " cannot broadcast to ", shape[size_t(d)].str());
    strides[size_t(d)] = xs[i] == 1 && shape[size_t(d)] != 1 ? SymInt(0) : xst[i];
  }
  return {view_of(x, shape, strides, x.sym_storage_offset())};
}

KILN_META(expand) {
  const Tensor& x = a.tensor(0);
  const SymShape& req = a.symints(1);
  const SymShape xs = x.sym_sizes(), xst = x.sym_strides();
  KILN_CHECK_HINT(req.size() >= xs.size(), "the target must have at least as many dims as the input",
                  "expand: target shape ", shape_str(req), " has fewer dims than the input ", shape_str(xs));
  const size_t lead = req.size() - xs.size();
  SymShape sizes(req.size()), strides(req.size());
  for (size_t i = 0; i < req.size(); ++i) {
    if (i < lead) {
      KILN_CHECK(req[i] >= 0, "expand: size -1 is not allowed in a leading, non-existing dimension");
      sizes[i] = req[i];
      strides[i] = 0;
      continue;
    }
    const SymInt& in = xs[i - lead];
    SymInt want = req[i] == -1 ? in : req[i];
    KILN_CHECK(want >= 0, "expand: invalid size ", req[i].str(), " for dimension ", i, " (only -1 keeps a size)");
    KILN_CHECK_HINT(in == want || in == 1, "only dims of size 1 can be expanded",
                    "expand: the size of dimension ", i, " (", in.str(), ") must match the target ", want.str());
    sizes[i] = want;
    strides[i] = (in == 1 && want != 1) ? SymInt(0) : xst[i - lead];
  }
  return {view_of(x, sizes, strides, x.sym_storage_offset())};
}

KILN_META(permute) {
  const Tensor& x = a.tensor(0);
  const std::vector<int64_t>& dims = a.ints(1);
  KILN_CHECK(int64_t(dims.size()) == x.dim(), "permute: ", dims.size(), " dims given for a ", x.dim(), "-d tensor");
  const SymShape xs = x.sym_sizes(), xst = x.sym_strides();
  SymShape sizes, strides;
  std::vector<bool> seen(dims.size());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, x.dim());
    KILN_CHECK(!seen[size_t(w)], "permute: dimension ", d, " repeats");
    seen[size_t(w)] = true;
    sizes.push_back(xs[size_t(w)]);
    strides.push_back(xst[size_t(w)]);
  }
  return {view_of(x, sizes, strides, x.sym_storage_offset())};
}

KILN_META(slice) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "slice: cannot slice a 0-d tensor");
  const int64_t d = wrap_dim(a.i64(1), x.dim());
  const SymInt step = a.symint(4);
  KILN_CHECK(step > 0, "slice: step must be positive, got ", step.str());
  const TensorImpl* t = x.impl();
  auto concrete = [](const std::optional<SymInt>& v) { return !v || !v->is_symbolic(); };
  if (!t->sym && !step.is_symbolic() && concrete(a.opt_symint(2)) && concrete(a.opt_symint(3))) {
    // Concrete tensor and bounds (nearly every eager call, x[i] included): plain int64 arithmetic.
    const int64_t n = t->sizes[size_t(d)], st = step.hint();
    auto clamp_int = [&](const std::optional<SymInt>& v, int64_t dflt) {
      if (!v) return dflt;
      const int64_t i = v->hint();
      return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n);
    };
    const int64_t start = clamp_int(a.opt_symint(2), 0), end = std::max(start, clamp_int(a.opt_symint(3), n));
    TensorSpec spec{SymShape(t->sizes.begin(), t->sizes.end()), SymShape(t->strides.begin(), t->strides.end()),
                    t->offset + start * t->strides[size_t(d)], t->dtype, t->device()};
    spec.sizes[size_t(d)] = (end - start + st - 1) / st;
    spec.strides[size_t(d)] = t->strides[size_t(d)] * st;
    return {std::move(spec)};
  }
  SymShape sizes = x.sym_sizes(), strides = x.sym_strides();
  const SymInt n = sizes[size_t(d)];
  auto clampi = [&](std::optional<SymInt> v, SymInt dflt) {
    if (!v) return dflt;
    SymInt s = *v;
    if (s < 0) s = s + n;
    if (s < 0) s = 0;
    if (s > n) s = n;
    return s;
  };
  SymInt start = clampi(a.opt_symint(2), 0), end = clampi(a.opt_symint(3), n);
  if (end < start) end = start;
  sizes[size_t(d)] = floordiv(end - start + step - 1, step);
  SymInt offset = x.sym_storage_offset() + start * strides[size_t(d)];
  strides[size_t(d)] = strides[size_t(d)] * step;
  return {view_of(x, sizes, strides, offset)};
}

KILN_META(squeeze) {
  const Tensor& x = a.tensor(0);
  std::vector<int64_t> dims = wrap_dims(a.opt_ints(1), x.dim());
  const SymShape xs = x.sym_sizes(), xst = x.sym_strides();
  SymShape sizes, strides;
  for (size_t i = 0; i < xs.size(); ++i) {
    bool listed = std::find(dims.begin(), dims.end(), int64_t(i)) != dims.end();
    if (listed && xs[i] == 1) continue;
    sizes.push_back(xs[i]);
    strides.push_back(xst[i]);
  }
  return {view_of(x, sizes, strides, x.sym_storage_offset())};
}

KILN_META(unsqueeze) {
  const Tensor& x = a.tensor(0);
  const int64_t d = wrap_dim(a.i64(1), x.dim() + 1);
  SymShape sizes = x.sym_sizes(), strides = x.sym_strides();
  SymInt st = size_t(d) < sizes.size() ? sizes[size_t(d)] * strides[size_t(d)] : SymInt(1);
  sizes.insert(sizes.begin() + d, SymInt(1));
  strides.insert(strides.begin() + d, st);
  return {view_of(x, sizes, strides, x.sym_storage_offset())};
}

KILN_META(as_strided) {
  const Tensor& x = a.tensor(0);
  const SymShape& sizes = a.symints(1);
  const SymShape& strides = a.symints(2);
  KILN_CHECK(sizes.size() == strides.size(), "as_strided: ", sizes.size(), " sizes but ", strides.size(), " strides");
  SymInt offset = a.opt_symint(3).value_or(x.sym_storage_offset());
  KILN_CHECK(offset >= 0, "as_strided: negative storage offset");
  for (size_t i = 0; i < sizes.size(); ++i)
    KILN_CHECK(sizes[i] >= 0 && strides[i] >= 0, "as_strided: negative size or stride in sizes ", shape_str(sizes),
               ", strides ", shape_str(strides));
  // make_view checks that the view stays inside the storage (every view is checked there).
  return {view_of(x, sizes, strides, offset)};
}

KILN_META(diagonal) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() >= 2, "diagonal: needs at least 2 dims, got ", x.dim());
  const int64_t offset = a.i64(1);
  const int64_t d1 = wrap_dim(a.i64(2), x.dim()), d2 = wrap_dim(a.i64(3), x.dim());
  KILN_CHECK(d1 != d2, "diagonal: dim1 and dim2 cannot be the same (", d1, ")");
  const SymShape xs = x.sym_sizes(), xst = x.sym_strides();
  SymInt len, off = x.sym_storage_offset();
  if (offset >= 0) {
    len = max(min(xs[size_t(d1)], xs[size_t(d2)] - offset), SymInt(0));
    off = off + SymInt(offset) * xst[size_t(d2)];
  } else {
    len = max(min(xs[size_t(d1)] + offset, xs[size_t(d2)]), SymInt(0));
    off = off - SymInt(offset) * xst[size_t(d1)];
  }
  if (len == 0) off = x.sym_storage_offset();
  SymShape sizes, strides;
  for (size_t i = 0; i < xs.size(); ++i)
    if (int64_t(i) != d1 && int64_t(i) != d2) {
      sizes.push_back(xs[i]);
      strides.push_back(xst[i]);
    }
  sizes.push_back(len);
  strides.push_back(xst[size_t(d1)] + xst[size_t(d2)]);
  return {view_of(x, sizes, strides, off)};
}

}  // namespace
}  // namespace kiln::ops
