// Shape ops, decomposed into the view prims (and a copy where a view cannot express them).
#include <kiln/ops.h>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;

KILN_DECOMP(clone) {
  const Tensor& x = a.tensor(0);
  return {convert_element_type(x, x.dtype())};  // always a fresh contiguous buffer
}

KILN_DECOMP(contiguous) {
  const Tensor& x = a.tensor(0);
  return {x.is_contiguous() ? x : clone(x)};
}

KILN_DECOMP(reshape) {
  const Tensor& x = a.tensor(0);
  SymShape sizes = ops::infer_size(a.symints(1), x.sym_numel());
  if (ops::view_strides(x.sym_sizes(), x.sym_strides(), sizes)) return {view(x, sizes)};
  return {view(clone(x), sizes)};
}

KILN_DECOMP(transpose) {
  const Tensor& x = a.tensor(0);
  const int64_t n = x.dim();
  if (n == 0) {
    ops::wrap_dim(a.i64(1), 0);
    ops::wrap_dim(a.i64(2), 0);
    return {view(x, SymShape{})};
  }
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
  std::swap(perm[size_t(ops::wrap_dim(a.i64(1), n))], perm[size_t(ops::wrap_dim(a.i64(2), n))]);
  return {permute(x, perm)};
}

KILN_DECOMP(t) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK_HINT(x.dim() <= 2, "use transpose(d0, d1) or mT for batches of matrices",
                  "t() expects a tensor with <= 2 dims, got ", x.dim());
  return {x.dim() < 2 ? view(x, x.sym_sizes()) : transpose(x, 0, 1)};
}

KILN_DECOMP(mT) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() >= 2, "mT expects a tensor with at least 2 dims, got ", x.dim());
  return {transpose(x, -2, -1)};
}

KILN_DECOMP(select) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "select: cannot select from a 0-d tensor");
  const int64_t dim = ops::wrap_dim(a.i64(1), x.dim());
  const SymInt n = x.sym_size(dim);
  SymInt i = a.symint(2);
  KILN_CHECK_HINT(i >= SymInt(0) - n && i < n, "valid indices are -size .. size-1", "select: index ", i.str(),
                  " is out of range for dimension ", dim, " of size ", n.str());
  if (i < 0) i = i + n;
  return {squeeze(slice(x, dim, i, i + 1), std::vector<int64_t>{dim})};
}

KILN_DECOMP(flatten) {
  const Tensor& x = a.tensor(0);
  const int64_t s = ops::wrap_dim(a.i64(1), x.dim()), e = ops::wrap_dim(a.i64(2), x.dim());  // 0-d: dims 0, -1
  if (x.dim() == 0) return {reshape(x, {1})};
  KILN_CHECK(s <= e, "flatten: start_dim (", s, ") cannot come after end_dim (", e, ")");
  const SymShape xs = x.sym_sizes();
  SymShape sizes(xs.begin(), xs.begin() + s);
  SymInt n = 1;
  for (int64_t d = s; d <= e; ++d) n = n * xs[size_t(d)];
  sizes.push_back(n);
  sizes.insert(sizes.end(), xs.begin() + e + 1, xs.end());
  return {reshape(x, sizes)};
}

KILN_DECOMP(unflatten) {
  const Tensor& x = a.tensor(0);
  const int64_t d = ops::wrap_dim(a.i64(1), x.dim());
  const SymShape& req = a.symints(2);
  KILN_CHECK(!req.empty(), "unflatten: sizes must be non-empty");
  const SymShape xs = x.sym_sizes();
  SymShape inner = ops::infer_size(req, x.sym_size(d));  // sym_size checks d: a 0-d x has no dim 0
  SymShape sizes(xs.begin(), xs.begin() + d);
  sizes.insert(sizes.end(), inner.begin(), inner.end());
  sizes.insert(sizes.end(), xs.begin() + d + 1, xs.end());
  return {reshape(x, sizes)};
}

KILN_DECOMP(expand_as) { return {expand(a.tensor(0), a.tensor(1).sym_sizes())}; }

KILN_DECOMP(repeat) {
  const Tensor& x = a.tensor(0);
  const SymShape& reps = a.symints(1);
  KILN_CHECK_HINT(int64_t(reps.size()) >= x.dim(), "give one repeat count per dim (leading extra dims are allowed)",
                  "repeat: ", reps.size(), " repeat counts for a ", x.dim(), "-d tensor");
  const size_t lead = reps.size() - size_t(x.dim());
  const SymShape xs = x.sym_sizes();
  // View x as [1, s0, 1, s1, ...], broadcast to [r0, s0, r1, s1, ...], then merge pairs.
  SymShape paired, expanded, out;
  for (size_t i = 0; i < reps.size(); ++i) {
    KILN_CHECK(reps[i] >= 0, "repeat: negative repeat count ", reps[i].str());
    const SymInt s = i < lead ? SymInt(1) : xs[i - lead];
    paired.insert(paired.end(), {SymInt(1), s});
    expanded.insert(expanded.end(), {reps[i], s});
    out.push_back(reps[i] * s);
  }
  return {reshape(expand(reshape(x, paired), expanded), out)};
}

KILN_DECOMP(narrow) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "narrow: cannot narrow a 0-d tensor");
  const int64_t d = ops::wrap_dim(a.i64(1), x.dim());
  const SymInt n = x.sym_size(d);
  SymInt start = a.symint(2);
  const SymInt len = a.symint(3);
  KILN_CHECK(start >= SymInt(0) - n && start <= n, "narrow: start ", start.str(), " is out of range for dimension ", d,
             " of size ", n.str());
  if (start < 0) start = start + n;
  KILN_CHECK(len >= 0 && start + len <= n, "narrow: start (", start.str(), ") + length (", len.str(),
             ") exceeds dimension size (", n.str(), ")");
  return {slice(x, d, start, start + len)};
}

std::vector<Tensor> split_sizes(const Tensor& x, int64_t d, const SymShape& sizes) {
  std::vector<Tensor> out;
  SymInt at = 0;
  for (const SymInt& s : sizes) {
    out.push_back(slice(x, d, at, at + s));
    at = at + s;
  }
  return out;
}

KILN_DECOMP(split_with_sizes) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "split_with_sizes: cannot split a 0-d tensor");
  const int64_t d = ops::wrap_dim(a.i64(2), x.dim());
  const SymShape& sizes = a.symints(1);
  SymInt total = 0;
  for (const SymInt& s : sizes) {
    KILN_CHECK(s >= 0, "split_with_sizes: negative split size ", s.str());
    total = total + s;
  }
  KILN_CHECK_HINT(total == x.sym_size(d), "the sizes must add up to the dimension's size",
                  "split_with_sizes: sizes ", shape_str(sizes), " sum to ", total.str(), " but dimension ", d,
                  " has size ", x.sym_size(d).str());
  return split_sizes(x, d, sizes);
}

KILN_DECOMP(split) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "split: cannot split a 0-d tensor");
  const int64_t d = ops::wrap_dim(a.i64(2), x.dim());
  const SymInt n = x.sym_size(d), step = a.symint(1);
  KILN_CHECK(step > 0 || (step == 0 && n == 0), "split: split_size must be positive, got ", step.str());
  if (n == 0) return {slice(x, d, 0, 0)};
  SymShape sizes;
  for (SymInt at = 0; at < n; at = at + step) sizes.push_back(min(step, n - at));
  return split_sizes(x, d, sizes);
}

KILN_DECOMP(chunk) {
  const Tensor& x = a.tensor(0);
  const int64_t chunks = a.i64(1);
  KILN_CHECK(chunks > 0, "chunk: the number of chunks must be positive, got ", chunks);
  KILN_CHECK(x.dim() > 0, "chunk: cannot chunk a 0-d tensor");
  const int64_t d = ops::wrap_dim(a.i64(2), x.dim());
  const SymInt n = x.sym_size(d);
  const SymInt step = floordiv(n + chunks - 1, SymInt(chunks));
  if (step == 0) {  // an empty dim: `chunks` empty pieces, as PyTorch
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; ++i) out.push_back(slice(x, d, 0, 0));
    return out;
  }
  return split(x, step, d);
}

KILN_DECOMP(unbind) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "unbind: cannot unbind a 0-d tensor");
  const int64_t d = ops::wrap_dim(a.i64(1), x.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < x.sym_size(d).value(); ++i) out.push_back(select(x, d, i));
  return out;
}

KILN_DECOMP(stack) {
  const TensorList& ts = a.tensors(0);
  KILN_CHECK(!ts.empty(), "stack: expected a non-empty list of tensors");
  const int64_t d = ops::wrap_dim(a.i64(1), ts[0].dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < ts.size(); ++i) {
    KILN_CHECK(ts[i].sym_sizes() == ts[0].sym_sizes(), "stack: expects each tensor to be equal size, but got ",
               shape_str(ts[0].sym_sizes()), " at entry 0 and ", shape_str(ts[i].sym_sizes()), " at entry ", i);
    parts.push_back(unsqueeze(ts[i], d));
  }
  return {cat(parts, d)};
}

Tensor roll_dim(const Tensor& x, int64_t shift, int64_t d) {
  const int64_t n = x.sym_size(d).value();
  if (n == 0) return x;
  const int64_t s = ((shift % n) + n) % n;
  if (s == 0) return x;
  return cat({slice(x, d, n - s, n), slice(x, d, 0, n - s)}, d);
}

KILN_DECOMP(roll) {
  const Tensor& x = a.tensor(0);
  const std::vector<int64_t>& shifts = a.ints(1);
  const std::vector<int64_t> dims = a.opt_ints(2).value_or(std::vector<int64_t>{});  // None: [], as PyTorch
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1, "roll: without dims, exactly one shift is expected, got ", shifts.size());
    return {reshape(roll_dim(reshape(x, {-1}), shifts[0], 0), x.sym_sizes())};
  }
  KILN_CHECK(shifts.size() == dims.size(), "roll: shifts (", shifts.size(), ") and dims (", dims.size(),
             ") must have the same length");
  Tensor r = x;
  for (size_t i = 0; i < dims.size(); ++i) r = roll_dim(r, shifts[i], ops::wrap_dim(dims[i], x.dim()));
  return {r.is_same(x) ? view(x, x.sym_sizes()) : r};
}

KILN_DECOMP(movedim) {
  const Tensor& x = a.tensor(0);
  const std::vector<int64_t>& src = a.ints(1);
  const std::vector<int64_t>& dst = a.ints(2);
  KILN_CHECK(src.size() == dst.size(), "movedim: source (", src.size(), " dims) and destination (", dst.size(),
             " dims) must have the same number of dims");
  const int64_t n = x.dim();
  ops::wrap_dims(src, n);  // checks range and repeats
  ops::wrap_dims(dst, n);
  std::vector<int64_t> s, t;
  for (int64_t v : src) s.push_back(ops::wrap_dim(v, n));
  for (int64_t v : dst) t.push_back(ops::wrap_dim(v, n));
  // perm[t[i]] = s[i]; the other dims keep their relative order in the free slots.
  std::vector<int64_t> perm(size_t(std::max<int64_t>(n, 0)), -1);
  std::vector<bool> used(perm.size(), false);
  for (size_t i = 0; i < s.size(); ++i) {
    perm[size_t(t[i])] = s[i];
    used[size_t(s[i])] = true;
  }
  int64_t next = 0;
  for (auto& p : perm) {
    if (p >= 0) continue;
    while (used[size_t(next)]) ++next;
    p = next++;
  }
  if (n == 0) return {view(x, x.sym_sizes())};
  return {permute(x, perm)};
}

}  // namespace
}  // namespace kiln::decomp
