// Meta functions of the indexing prims: gather, scatter(_add, _reduce), index_select, index_put.
// Shape rules follow PyTorch (0-d tensors count as 1-d for gather/scatter).
#include "ops/meta/indexing.h"

#include <kiln/ops.h>

#include "ops/family.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {

void check_index_dtype(const Tensor& index, const char* what, bool allow_int32) {
  const DType t = index.dtype();
  KILN_CHECK_HINT(t == kInt64 || (allow_int32 && t == kInt32), "convert the index with .to(kInt64)", what,
                  ": expected an int64 index tensor", allow_int32 ? " (or int32)" : "", ", got ", name(t));
}

bool has_bool_index(const std::vector<Tensor>& indices) {
  for (const Tensor& t : indices)
    if (t.defined() && (t.dtype() == kBool || t.dtype() == kUInt8)) return true;
  return false;
}

std::vector<int64_t> advanced_index_dims_first(const std::vector<int64_t>& indexed, int64_t index_dims, int64_t result_rank) {
  const bool adjacent = indexed.empty() || indexed.back() - indexed.front() + 1 == int64_t(indexed.size());
  const int64_t first = adjacent && !indexed.empty() ? indexed.front() : 0;
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < index_dims; ++i) perm.push_back(first + i);
  for (int64_t i = 0; i < result_rank; ++i)
    if (i < first || i >= first + index_dims) perm.push_back(i);
  return perm;
}

SymShape advanced_index_shape(const SymShape& self, const std::vector<Tensor>& indices) {
  KILN_CHECK(indices.size() <= self.size(), "too many indices for a tensor of dimension ", self.size(), " (got ",
             indices.size(), ")");
  std::vector<size_t> pos;
  std::vector<Tensor> defined;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (!indices[i].defined()) continue;
    const DType t = indices[i].dtype();
    KILN_CHECK_HINT(t == kInt64 || t == kInt32, "index with int64 tensors or bool masks",
                    "tensors used as indices must be int64, int32 or bool, got ", name(t));
    pos.push_back(i);
    defined.push_back(indices[i]);
  }
  if (pos.empty()) return self;
  SymShape b = defined[0].sym_sizes();
  for (size_t i = 1; i < defined.size(); ++i) {
    try {
      b = broadcast_shapes(b, defined[i].sym_sizes());
    } catch (const Error&) {
      std::string shapes;
      for (const Tensor& t : defined) shapes += shape_str(t.sym_sizes()) + " ";
      KILN_CHECK(false, "shape mismatch: index tensors could not be broadcast together with shapes ", shapes);
    }
  }
  const bool adjacent = pos.back() - pos.front() + 1 == pos.size();
  SymShape out;
  if (adjacent) {
    out.assign(self.begin(), self.begin() + int64_t(pos.front()));
    out.insert(out.end(), b.begin(), b.end());
    out.insert(out.end(), self.begin() + int64_t(pos.back()) + 1, self.end());
  } else {
    out = b;
    for (size_t d = 0; d < self.size(); ++d)
      if (d >= indices.size() || !indices[d].defined()) out.push_back(self[d]);
  }
  return out;
}

std::vector<Tensor> expand_bool_indices(const Tensor& self, const std::vector<Tensor>& indices) {
  std::vector<Tensor> out;
  int64_t d = 0;
  for (const Tensor& t : indices) {
    if (t.defined() && (t.dtype() == kBool || t.dtype() == kUInt8)) {
      KILN_CHECK(t.dim() > 0, "0-d boolean masks are not supported as indices");
      KILN_CHECK(d + t.dim() <= self.dim(), "too many indices for a tensor of dimension ", self.dim());
      for (int64_t k = 0; k < t.dim(); ++k)
        KILN_CHECK(t.size(k) == self.size(d + k), "the shape of the mask ", shape_str(t.sizes()), " at index ", k,
                   " does not match the shape of the indexed tensor ", shape_str(self.sizes()), " at index ", d + k);
      Tensor nz = nonzero(t);  // [n, mask.dim()]
      for (int64_t k = 0; k < t.dim(); ++k) out.push_back(select(nz, 1, k));
      d += t.dim();
    } else {
      out.push_back(t);
      ++d;
    }
  }
  KILN_CHECK(d <= self.dim(), "too many indices for a tensor of dimension ", self.dim(), " (got ", d, ")");
  while (int64_t(out.size()) < self.dim()) out.emplace_back();
  return out;
}

namespace {

int64_t nonempty_dim(const Tensor& t) { return t.dim() == 0 ? 1 : t.dim(); }
SymInt nonempty_size(const Tensor& t, int64_t d) { return t.dim() == 0 ? SymInt(1) : t.sym_size(d); }

// The shape rules shared by gather and the scatters (src undefined for gather).
int64_t check_gather_scatter(const char* what, const Tensor& self, int64_t dim_arg, const Tensor& index,
                             const Tensor* src) {
  check_index_dtype(index, what, false);
  const int64_t dim = wrap_dim(dim_arg, self.dim());
  KILN_CHECK(nonempty_dim(index) == nonempty_dim(self), what, ": index tensor must have the same number of dims (",
             index.dim(), ") as the input (", self.dim(), ")");
  if (src) {
    KILN_CHECK(nonempty_dim(*src) == nonempty_dim(self), what, ": src must have the same number of dims (",
               src->dim(), ") as the input (", self.dim(), ")");
    KILN_CHECK_HINT(src->dtype() == self.dtype(), "convert src with .to(self.dtype())", what,
                    ": expected src of dtype ", name(self.dtype()), ", got ", name(src->dtype()));
  }
  for (int64_t d = 0; d < nonempty_dim(self); ++d) {
    const SymInt is = nonempty_size(index, d);
    if (d != dim)
      KILN_CHECK(is <= nonempty_size(self, d), what, ": index size ", is.str(), " at dim ", d,
                 " exceeds the input's size ", nonempty_size(self, d).str());
    if (src)
      KILN_CHECK(is <= nonempty_size(*src, d), what, ": index size ", is.str(), " at dim ", d,
                 " exceeds src's size ", nonempty_size(*src, d).str());
  }
  return dim;
}

KILN_META(gather) {
  const args::gather g{a};
  check_gather_scatter("gather", g.self(), g.dim(), g.index(), nullptr);
  return {spec_like(g.self(), g.index().sym_sizes(), g.self().dtype())};
}

// scatter, scatter_add and scatter_reduce: one meta (and one kernel) over scatter's arguments,
// which begin scatter_reduce's.
static_assert(args_prefix<args::scatter, args::scatter_add>() && args_prefix<args::scatter, args::scatter_reduce>());
std::vector<TensorSpec> scatter_meta(const Args& a) {
  const args::scatter s{a};
  const char* what = op_info(a.op).name;
  check_gather_scatter(what, s.self(), s.dim(), s.index(), &s.src());
  if (a.op == OpId::scatter_reduce) {
    const std::string& r = args::scatter_reduce{a}.reduce();
    KILN_CHECK_HINT(r == "sum" || r == "prod" || r == "mean" || r == "amax" || r == "amin",
                    "reduce must be one of sum, prod, mean, amax, amin", "scatter_reduce: unknown reduce \"", r, "\"");
  }
  return {spec_like(s.self(), s.self().dtype())};
}
KILN_REGISTER(meta, scatter, scatter_meta);
KILN_REGISTER(meta, scatter_add, scatter_meta);
KILN_REGISTER(meta, scatter_reduce, scatter_meta);

KILN_META(index_select) {
  const args::index_select s{a};
  const Tensor& self = s.self();
  const Tensor& index = s.index();
  check_index_dtype(index, "index_select", true);
  KILN_CHECK(index.dim() <= 1, "index_select: the index must be 0-d or 1-d, got ", index.dim(), " dims");
  const int64_t dim = wrap_dim(s.dim(), self.dim());
  if (self.dim() == 0) {
    KILN_CHECK(index.sym_numel() == 1, "index_select: an index into a 0-d tensor must have one element");
    return {spec_like(self, self.dtype())};
  }
  SymShape sizes = self.sym_sizes();
  sizes[size_t(dim)] = index.sym_numel();
  return {spec_like(self, sizes, self.dtype())};
}

KILN_META(index_put) {
  const args::index_put p{a};
  const Tensor& self = p.self();
  const TensorList& indices = p.indices();
  const Tensor& values = p.values();
  KILN_CHECK_HINT(values.dtype() == self.dtype(), "convert the values with .to(self.dtype())",
                  "index_put: values of dtype ", name(values.dtype()), " do not match the tensor's dtype ",
                  name(self.dtype()));
  if (!has_bool_index(indices)) {  // with masks the shape depends on the data: the kernel checks
    SymShape r = advanced_index_shape(self.sym_sizes(), indices);
    SymShape b = broadcast_shapes(values.sym_sizes(), r);
    KILN_CHECK(b == r, "index_put: values of shape ", shape_str(values.sym_sizes()),
               " cannot be broadcast to the indexing result of shape ", shape_str(r));
  }
  return {spec_like(self, self.dtype())};
}

}  // namespace
}  // namespace kiln::ops
