// Helpers of the NN ops shared by their meta functions (ops/meta/nn.cc), decompositions
// (decomp/), fast CPU kernels (eager/cpu/nn/) and derivatives (autograd/derivatives/): kept
// here, below all of them, so none includes another.
#pragma once
#include <kiln/ops.h>

#include <optional>
#include <string>
#include <vector>

#include "ops/dispatch.h"
#include "ops/meta/meta_util.h"

namespace kiln::ops {

// The dtype NN ops compute in: 16-bit floats go through float32 as PyTorch's CPU kernels do.
inline DType compute_dtype(DType t) { return t == kFloat16 || t == kBFloat16 ? kFloat32 : t; }
inline Tensor upcast(const Tensor& x) {
  const DType c = compute_dtype(x.dtype());
  return c == x.dtype() ? x : convert_element_type(x, c);
}
inline Tensor cast_to(const Tensor& x, DType t) { return x.dtype() == t ? x : convert_element_type(x, t); }

// Repeats each head `rep` times along dim -3 (repeat_interleave), for grouped-query attention.
inline Tensor repeat_heads(const Tensor& t, int64_t rep) {
  if (rep == 1) return t;
  SymShape s = t.sym_sizes();
  Tensor u = unsqueeze(t, t.dim() - 2);
  SymShape e = u.sym_sizes();
  e[size_t(t.dim() - 2)] = SymInt(rep);
  s[size_t(t.dim() - 3)] = s[size_t(t.dim() - 3)] * SymInt(rep);
  return reshape(expand(u, e), s);
}

// Argument checks of scaled_dot_product_attention shared by its decomposition and fast kernel.
inline void check_attention_args(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double p,
                                  bool causal) {
  const char* op = "scaled_dot_product_attention";
  KILN_CHECK(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, op, ": expected query, key and value with at least 2 dims");
  KILN_CHECK(is_floating(q.dtype()) && k.dtype() == q.dtype() && v.dtype() == q.dtype(), op,
             ": expected query, key and value to have the same floating dtype, got ", name(q.dtype()), ", ",
             name(k.dtype()), " and ", name(v.dtype()));
  KILN_CHECK(q.sym_size(-1) == k.sym_size(-1), op, ": query and key must have the same embedding size, got ",
             q.sym_size(-1), " and ", k.sym_size(-1));
  KILN_CHECK(k.sym_size(-2) == v.sym_size(-2), op, ": key and value must have the same sequence length, got ",
             k.sym_size(-2), " and ", v.sym_size(-2));
  KILN_CHECK_HINT(!(causal && mask.defined()), "pass either attn_mask or is_causal=true, not both", op,
                  ": explicit attn_mask should not be set when is_causal=true");
  KILN_CHECK(p >= 0 && p <= 1, op, ": dropout probability has to be between 0 and 1, but got ", p);
  KILN_CHECK(!mask.defined() || mask.dtype() == kBool || is_floating(mask.dtype()), op,
             ": expected attn_mask of dtype bool or floating point, got ", name(mask.dtype()));
}

// The last k dims of an n-dim tensor.
inline std::vector<int64_t> trailing_dims(int64_t n, int64_t k) {
  std::vector<int64_t> d;
  for (int64_t i = n - k; i < n; ++i) d.push_back(i);
  return d;
}

// The class dim of a classification input: 0 for an unbatched (C) input, else 1.
inline int64_t class_dim(const Tensor& x) { return x.dim() == 1 ? 0 : 1; }

// Applies a loss reduction: "none", "mean" or "sum".
inline Tensor reduce_loss(const Tensor& loss, const std::string& reduction, const char* op) {
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  KILN_CHECK_HINT(reduction == "mean", "use reduction=\"none\", \"mean\" or \"sum\"", op, ": ", reduction,
                  " is not a valid value for reduction");
  return mean(loss);
}

// Checks the shape of a layer_norm / rms_norm input against normalized_shape (and a weight).
inline void check_normalized_shape(const char* op, const Tensor& x, const SymShape& ns, const Tensor& w,
                                   const Tensor& b) {
  KILN_CHECK(!ns.empty(), op, ": expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element");
  const SymShape xs = x.sym_sizes();
  bool ok = int64_t(ns.size()) <= x.dim();
  for (size_t i = 0; ok && i < ns.size(); ++i) ok = xs[xs.size() - ns.size() + i] == ns[i];
  KILN_CHECK_HINT(ok, "normalized_shape must equal the input's last dims", op, ": given normalized_shape=",
                  shape_str(ns), ", expected input with shape [*, ", shape_str(ns), "], but got input of size ",
                  shape_str(xs));
  KILN_CHECK(!w.defined() || w.sym_sizes() == ns, op, ": expected weight to be of same shape as normalized_shape, but got weight of shape ",
             shape_str(w.sym_sizes()), " and normalized_shape = ", shape_str(ns));
  KILN_CHECK(!b.defined() || b.sym_sizes() == ns, op, ": expected bias to be of same shape as normalized_shape, but got bias of shape ",
             shape_str(b.sym_sizes()), " and normalized_shape = ", shape_str(ns));
  KILN_CHECK(is_floating(x.dtype()), op, ": expected a floating point input, got ", name(x.dtype()));
}

// eps of rms_norm when None: the epsilon of the type it computes in, as PyTorch.
inline double rms_norm_eps(DType t, std::optional<double> eps) {
  double e = eps ? *eps : (compute_dtype(t) == kFloat64 ? 2.220446049250313e-16 : 1.1920928955078125e-07);
  // PyTorch holds eps in the input's scalar type.
  if (t == kFloat32) e = double(float(e));
  else if (t == kBFloat16) e = double(float(BFloat16(float(e))));
  else if (t == kFloat16) e = double(float(Half(float(e))));
  return e;
}

}  // namespace kiln::ops
