// Smaller NN functional ops: normalize, glu, cosine_similarity, pairwise_distance, embedding,
// embedding_bag.
#include <cmath>

#include "decomp/index_error.h"
#include "ops/meta/nn_util.h"

namespace kiln::decomp {
namespace {
using ops::Args;
using ops::cast_to;
using ops::num;

// The p-norm over dims: kiln's norm (16-bit inputs accumulate in float32, as PyTorch's vector_norm:
// the squares of float16 values above 256 would overflow; the gradient is 0 where the norm is 0).
Tensor vector_norm(const Tensor& x, double p, const std::vector<int64_t>& dims, bool keepdim) {
  return norm(x, Scalar(p), dims, keepdim);
}

// clamp_min(x, lo): NaN stays NaN, the gradient flows where x >= lo.
Tensor clamp_below(const Tensor& x, double lo) { return where(lt(x, num(lo)), num(lo), x); }

KILN_DECOMP(normalize) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(is_floating(x.dtype()), "normalize: expected a floating point input, got ", name(x.dtype()));
  const int64_t dim = ops::wrap_dim(a.i64(2), x.dim());
  Tensor n = clamp_below(vector_norm(x, a.f64(1), {dim}, true), a.f64(3));
  return {div(x, n)};
}

KILN_DECOMP(glu) {
  const Tensor& x = a.tensor(0);
  KILN_CHECK(x.dim() > 0, "glu does not support scalars because halving size must be even");
  KILN_CHECK(is_floating(x.dtype()), "glu: expected a floating point input, got ", name(x.dtype()));
  const int64_t dim = ops::wrap_dim(a.i64(1), x.dim());
  const int64_t n = x.size(dim);
  KILN_CHECK(n % 2 == 0, "glu: halving dimension must be even, but dimension ", dim, " is size ", n);
  return {mul(slice(x, dim, 0, n / 2), sigmoid(slice(x, dim, n / 2, n)))};
}

KILN_DECOMP(cosine_similarity) {
  const DType common = result_type({a.tensor(0), a.tensor(1)});
  KILN_CHECK(is_floating(common), "cosine_similarity: expected common dtype to be floating point, yet common dtype is ",
             name(common));
  const SymShape shape = ops::broadcast_shapes(a.tensor(0).sym_sizes(), a.tensor(1).sym_sizes());
  // As PyTorch: integer inputs convert to the common dtype, float inputs are normalized in their
  // own (a bfloat16 input's unit vector rounds to bfloat16 before the product promotes).
  auto prepare = [&](const Tensor& x) { return expand(is_floating(x.dtype()) ? x : cast_to(x, common), shape); };
  Tensor x1 = prepare(a.tensor(0)), x2 = prepare(a.tensor(1));
  const int64_t dim = ops::wrap_dim(a.i64(2), int64_t(shape.size()));
  const double eps = a.f64(3);
  // As PyTorch: each input divided by its norm clamped at eps, the clamp invisible to autograd.
  auto unit = [&](const Tensor& x) {
    Tensor n = vector_norm(x, 2, {dim}, true);
    return div(x, add(n, sub(clamp_below(n, eps), n).detach()));
  };
  return {sum(mul(unit(x1), unit(x2)), {dim})};
}

KILN_DECOMP(pairwise_distance) {
  const Tensor &x1 = a.tensor(0), &x2 = a.tensor(1);
  const int64_t nd = std::max(x1.dim(), x2.dim());
  Tensor d = add(sub(x1, x2), num(a.f64(3)));
  KILN_CHECK(is_floating(d.dtype()), "pairwise_distance: expected floating point inputs, got ", name(x1.dtype()));
  return {vector_norm(d, a.f64(2), {nd == 0 ? 0 : nd - 1}, a.b(4))};
}

// Every index in [0, n): a kiln::Error naming the table size otherwise (negative indices do not wrap).
void check_indices(const char* op, const Tensor& idx, int64_t n) {
  if (idx.is_fake() || idx.numel() == 0) return;
  if (any(logical_or(lt(idx, num(0)), ge(idx, num(double(n))))).item<bool>()) {
    const IndexErrorText e = index_error_text(op, 0, n);
    detail::fail(e.message, e.hint);
  }
}

KILN_DECOMP(embedding) {
  const Tensor &idx = a.tensor(0), &w = a.tensor(1);
  KILN_CHECK(is_integral(idx.dtype()), "embedding: expected indices of an integral dtype, got ", name(idx.dtype()));
  KILN_CHECK(w.dim() == 2, "embedding: expected a 2-D weight (num_embeddings, embedding_dim), got ", w.dim(), " dims");
  check_indices("embedding", idx, w.sym_size(0).hint());
  SymShape out = idx.sym_sizes();
  out.push_back(w.sym_size(1));
  Tensor rows = reshape(index_select(w, 0, reshape(idx, {-1})), out);
  if (auto pad = a.opt_i64(2)) {
    const int64_t n = w.size(0);
    KILN_CHECK(*pad >= -n && *pad < n, "embedding: padding_idx must be within num_embeddings (", n, "), got ", *pad);
    const int64_t p = *pad < 0 ? *pad + n : *pad;
    // Same values; rows looked up at padding_idx pass no gradient to the weight.
    rows = where(unsqueeze(eq(idx, num(double(p))), -1), rows.detach(), rows);
  }
  return {rows};
}

KILN_DECOMP(embedding_bag) {
  const Tensor &idx = a.tensor(0), &w = a.tensor(1), &off = a.tensor(2);
  const std::string& mode = a.str(3);
  KILN_CHECK(mode == "sum" || mode == "mean" || mode == "max",
             "embedding_bag: mode must be \"sum\", \"mean\" or \"max\", got ", mode);
  KILN_CHECK(idx.dim() == 1 && off.dim() == 1, "embedding_bag: expected 1-D input and 1-D offsets, got ", idx.dim(),
             " and ", off.dim(), " dims");
  KILN_CHECK(is_integral(idx.dtype()) && is_integral(off.dtype()), "embedding_bag: expected integral input and offsets");
  KILN_CHECK(w.dim() == 2, "embedding_bag: expected a 2-D weight, got ", w.dim(), " dims");
  const int64_t n = idx.size(0), bags = off.size(0);
  if (!off.is_fake() && bags > 0)
    KILN_CHECK(off.to_vector<int64_t>()[0] == 0, "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0");
  check_indices("embedding_bag", idx, w.sym_size(0).hint());
  Tensor rows = index_select(w, 0, idx);  // (n, D)
  // Bag of element j: the number of offsets <= j, minus one; as a (bags, n) membership matrix.
  Tensor pos = unsqueeze(iota(n, 0, 1, kInt64, w.device()), 0);
  Tensor bag = sub(sum(ge(pos, unsqueeze(cast_to(off, kInt64), 1)), {0}), num(1));  // (n)
  if (mode == "max") {  // per-bag elementwise max; an empty bag keeps its 0 (include_self=false)
    Tensor index = expand(unsqueeze(convert_element_type(bag, kInt64), 1), rows.sym_sizes());
    Tensor base = zeros(SymShape{SymInt(bags), w.sym_size(1)}, w.dtype(), w.device());
    return {scatter_reduce(base, 0, index, rows, "amax", false)};
  }
  Tensor member = convert_element_type(eq(unsqueeze(bag, 0), unsqueeze(iota(bags, 0, 1, kInt64, w.device()), 1)), w.dtype());
  Tensor out = matmul(member, rows);
  if (mode == "mean") out = div(out, maximum(sum(member, {1}, true), num(1)));  // empty bags give 0
  return {out};
}

}  // namespace
}  // namespace kiln::decomp
